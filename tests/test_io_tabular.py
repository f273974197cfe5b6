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


# --------------------------------------- one parser: whole file == chunks == old reader

import os  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import reference_readers  # noqa: E402
from _dataset_digest import digest  # noqa: E402
from coreselect.io.chunks import open_chunks  # noqa: E402
from coreselect.io.tabular import read_csv, read_parquet  # noqa: E402

_KIND_CELLS = {
    "int": st.integers(-999, 999).map(str),
    "float": st.one_of(st.floats(-1e6, 1e6, allow_nan=False).map(repr), st.sampled_from(["-0.0", "1e5", "-2.5"])),
    "text": st.sampled_from(["red", "blue", '"a, b"', '"say ""hi"""', "x y"]),
    "bool": st.sampled_from(["True", "False"]),
    "empty": st.just(""),
}
_ODD = st.sampled_from(["", "NA", "nan", "inf", "x", "1.5", "-0", "True", "2020-01-01"])


def _outcome(fn):
    try:
        return "ok", fn()
    except DatasetError as exc:
        return "error", str(exc)


@st.composite
def _table(draw):
    d = draw(st.integers(1, 4))
    kinds = [draw(st.sampled_from(["int", "float", "float", "text", "text", "bool", "int", "float", "empty"]))
             for _ in range(d)]
    n = draw(st.sampled_from([0, 1, 1, *[draw(st.integers(2, 40))] * 6]))
    odd = draw(st.integers(0, 3)) == 0
    names = [f"f{j}" for j in range(d)] + ['"lab, a"', "lab_b"]
    lines = [",".join(names)]
    for _ in range(n):
        cells = [draw(_KIND_CELLS[k]) for k in kinds]
        if odd and draw(st.integers(0, 4)) == 0:
            cells[draw(st.integers(0, d - 1))] = draw(_ODD)
        cells += [draw(st.sampled_from(["0", "1"])), draw(st.sampled_from(["1", "0"] * 10 + (["2"] if odd else [])))]
        lines.append(",".join(cells))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))


@settings(max_examples=50, deadline=None)
@given(text=_table(), block=st.sampled_from([None, 1, 97, 1 << 20]), rows=st.sampled_from([None, 1, 3]),
       gz=st.booleans())
def test_csv_whole_and_chunked_equal_the_old_reader(tmp_path_factory, text, block, rows, gz):
    """Random small CSV tables (0/1/many rows, mixed signs, text, quoted fields with commas
    and quotes, boolean and empty columns, odd cells): the whole-file read (its streamed
    blocks concatenated; blocks of 1 byte, 97 bytes or more) gives the old pandas reader's
    Dataset, and the chunks concatenate to its arrays; or both fail."""
    import gzip as _gz

    p = tmp_path_factory.mktemp("c") / ("t.csv.gz" if gz else "t.csv")
    p.write_bytes(_gz.compress(text.encode()) if gz else text.encode())
    want = _outcome(lambda: reference_readers.read_csv(p, labels=2))
    got = _outcome(lambda: read_csv(p, labels=2, chunk_bytes=block))
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        return
    assert digest(got[1]) == digest(want[1])
    ds = open_chunks(str(p), labels=2)
    parts = list(ds.chunks(chunk_rows=rows, chunk_bytes=block))
    X = np.vstack([c.X for c in parts])
    assert X.tobytes() == np.asarray(want[1].X).tobytes()
    assert sp.vstack([c.Y for c in parts]).toarray().tolist() == np.asarray(want[1].Y).tolist()
    assert ds.id_columns == tuple(want[1].id_columns)
    assert (list(ds.feature_names), list(ds.label_names)) == (want[1].feature_names, want[1].label_names)


@settings(max_examples=25, deadline=None)
@given(text=_table(), rows=st.sampled_from([None, 1, 3, 1 << 16]))
def test_parquet_whole_and_chunked_equal_the_old_reader(tmp_path_factory, text, rows):
    """The same tables as Parquet: the row batches concatenated == the old ``ParquetFile.read``."""
    import io

    try:
        df = pd.read_csv(io.StringIO(text))
    except Exception:  # noqa: BLE001 - tables pandas cannot read are the CSV test's
        return
    p = tmp_path_factory.mktemp("q") / "t.parquet"
    df.to_parquet(p, index=False)
    want = _outcome(lambda: reference_readers.read_parquet(p, labels=2))
    got = _outcome(lambda: read_parquet(p, labels=2, chunk_rows=rows))
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert got == want
        return
    assert digest(got[1]) == digest(want[1])
    parts = list(open_chunks(str(p), labels=2).chunks(chunk_rows=rows))
    assert np.vstack([c.X for c in parts]).tobytes() == np.asarray(want[1].X).tobytes()


def test_a_header_that_is_not_utf8_is_one_typed_error(tmp_path):
    """Found by the readers' fuzz test: pyarrow hands the column names back decoded, so a
    Latin-1 byte in the header escaped as a bare UnicodeDecodeError (load and the streamed
    first pass alike)."""
    from coreselect.io.chunks import open_chunks

    path = tmp_path / "latin1.csv"
    path.write_bytes(b"f,g,\xb5,y,z\n1,0.5,2,0,1\n3,1.5,4,1,0\n")
    for load in (lambda: read(path, labels=2),
                 lambda: open_chunks(str(path), labels=2).scan()):
        with pytest.raises(DatasetError, match="header holds bytes that are not UTF-8") as got:
            load()
        assert got.value.line == 1
