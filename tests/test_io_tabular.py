"""CSV / Parquet readers and writers, label specs, and in-memory conversion."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io import export_columns, from_arrays, read, write
from coreselect.io.tabular import resolve_labels


def _frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "x1": rng.normal(size=6),
            "x 2": rng.integers(0, 5, 6),
            "color": ["red", "blue", "red", "green", "blue", "red"],
            "lab_a": [0, 1, 1, 0, 1, 0],
            "lab_b": [1, 1, 0, 0, 0, 1],
        }
    )


@pytest.mark.parametrize(
    "spec, expected",
    [
        (["lab_a", "lab_b"], ["lab_a", "lab_b"]),
        (2, ["lab_a", "lab_b"]),
        ("2", ["lab_a", "lab_b"]),
        ("lab_", ["lab_a", "lab_b"]),
        ("lab_b", ["lab_b"]),
        ("lab_a,lab_b", ["lab_a", "lab_b"]),
        (-1, ["x1"]),
    ],
)
def test_label_specs(spec, expected):
    assert resolve_labels(list(_frame().columns), spec) == expected


@pytest.mark.parametrize("spec", [None, "zzz", ["nope"], 0, 5, "", ["lab_a", "lab_a"]])
def test_bad_label_specs(spec):
    with pytest.raises(DatasetError):
        resolve_labels(list(_frame().columns), spec)


def test_csv_read(tmp_path):
    p = tmp_path / "t.csv"
    _frame().to_csv(p, index=False)
    ds = read(p, labels="lab_")
    assert ds.feature_names == ["x1", "x 2", "color"] and ds.label_names == ["lab_a", "lab_b"]
    assert ds.meta["nominal_values"]["color"] == ["blue", "green", "red"]
    np.testing.assert_array_equal(ds.X[:, 2], [2, 0, 2, 1, 0, 2])
    assert ds.meta["feature_kinds"] == ["numeric", "numeric", "nominal"]


def test_csv_errors_name_file_and_line(tmp_path):
    df = _frame()
    df.loc[3, "lab_a"] = 2
    p = tmp_path / "bad.csv"
    df.to_csv(p, index=False)
    with pytest.raises(DatasetError, match=r"bad\.csv:5: label column 'lab_a' is not binary"):
        read(p, labels=2)
    df = _frame()
    df.loc[2, "x1"] = np.nan
    df.to_csv(p, index=False)
    with pytest.raises(DatasetError, match=r"bad\.csv:4: missing value"):
        read(p, labels=2)
    p.write_text("")
    with pytest.raises(DatasetError, match="empty file"):
        read(p, labels=2)
    with pytest.raises(DatasetError, match="say which columns are labels"):
        _frame().to_csv(p, index=False)
        read(p)


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".arff", ".svm"])
def test_round_trip_from_frame(tmp_path, suffix):
    df = _frame()
    ds = from_arrays(df.drop(columns=["lab_a", "lab_b"]), df[["lab_a", "lab_b"]])
    out = tmp_path / f"o{suffix}"
    write(ds, out)
    back = read(out, labels=["lab_a", "lab_b"] if suffix == ".csv" else None)
    np.testing.assert_array_equal(back.X.toarray() if sp.issparse(back.X) else back.X, ds.X)
    np.testing.assert_array_equal(back.Y, ds.Y)
    if suffix != ".svm":  # LIBSVM has no names
        assert back.feature_names == ds.feature_names and back.label_names == ds.label_names


def test_from_arrays_kinds():
    X = sp.random(5, 7, density=0.3, random_state=1, format="coo")
    ds = from_arrays(X, np.eye(5, 2, dtype=bool))
    assert sp.isspmatrix_csr(ds.X) or sp.issparse(ds.X)
    assert ds.Y.dtype == np.int8 and ds.feature_names[0] == "f0" and ds.label_names == ["l0", "l1"]
    ds = from_arrays(np.ones((4, 3)), [0, 1, 1, 0], feature_names=list("abc"), label_names=["y"])
    assert ds.Y.shape == (4, 1)
    with pytest.raises(DatasetError, match="not binary"):
        from_arrays(np.ones((2, 2)), [[0.5], [1]])
    with pytest.raises(DatasetError, match="rows"):
        from_arrays(np.ones((3, 2)), [[0], [1]])


def test_export_columns_every_format(tmp_path):
    df = _frame()
    ds = from_arrays(df.drop(columns=["lab_a", "lab_b"]), df[["lab_a", "lab_b"]])
    for suffix in (".arff", ".csv", ".parquet", ".svm"):
        out = tmp_path / f"red{suffix}"
        export_columns(ds, [2, "x1"], out)
        back = read(out, labels=2 if suffix == ".csv" else None)
        assert back.n_features == 2 and back.n_labels == 2
        np.testing.assert_array_equal(back.X.toarray() if sp.issparse(back.X) else back.X, ds.X[:, [2, 0]])
        if suffix != ".svm":
            assert back.feature_names == ["color", "x1"]
    with pytest.raises(DatasetError):
        export_columns(ds, ["nope"], tmp_path / "never.csv")
    assert not (tmp_path / "never.csv").exists()


def test_tables_refuse_to_densify_huge_sparse(tmp_path):
    X = sp.csr_matrix((10_000, 10_000))
    ds = from_arrays(X, np.zeros((10_000, 1)))
    with pytest.raises(DatasetError, match="densify"):
        write(ds, tmp_path / "big.csv")
    assert not list(tmp_path.iterdir())
