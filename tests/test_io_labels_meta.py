"""One label-spec convention for every format, and the typed dataset metadata (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

from coreselect.errors import DatasetError
from coreselect.io import read, subset_columns
from coreselect.io.dataset import Dataset, DatasetMeta, detect_id_columns
from coreselect.io.labels import resolve_label_spec

BODY = "@attribute f1 numeric\n@attribute f2 numeric\n@attribute L1 {0,1}\n@attribute L2 {0,1}\n@data\n0,1,1,0\n1,0,0,1\n"
CSV = "f1,f2,L1,L2\n0,1,1,0\n1,0,0,1\n"


@pytest.fixture
def files(tmp_path):
    a = tmp_path / "d.arff"
    a.write_text("@relation d\n" + BODY)
    c = tmp_path / "d.csv"
    c.write_text(CSV)
    return a, c


@pytest.mark.parametrize("spec, labels", [
    (2, ["L1", "L2"]), ("2", ["L1", "L2"]), (1, ["L2"]), (-1, ["f1"]), ("-2", ["f1", "f2"]),
    ("L", ["L1", "L2"]), ("L2,L1", ["L2", "L1"]), (["L1"], ["L1"]),
])
def test_same_spec_same_columns_in_every_format(files, spec, labels):
    for path in files:
        ds = read(path, labels=spec)
        assert list(ds.label_names) == labels, path


def test_xml_spec_for_csv_too(files, tmp_path):
    xml = tmp_path / "labels.xml"
    xml.write_text('<labels xmlns="http://mulan.sourceforge.net/labels"><label name="L1"/><label name="L2"/></labels>')
    for path in files:
        ds = read(path, labels=str(xml))
        assert list(ds.label_names) == ["L1", "L2"] and ds.metadata.label_source == "mulan-xml"


def test_meka_header_keeps_its_own_sign(tmp_path):
    # MEKA's -C 2 means the FIRST two attributes; the file keeps working through its header.
    p = tmp_path / "m.arff"
    p.write_text("@relation 'M: -C 2'\n@attribute L1 {0,1}\n@attribute L2 {0,1}\n@attribute f1 numeric\n"
                 "@attribute f2 numeric\n@data\n1,0,0.5,2\n0,1,1.5,3\n")
    ds = read(p)
    assert list(ds.label_names) == ["L1", "L2"] and ds.metadata.label_source == "meka"
    # A spec given by the user follows the one convention: -2 is the first two.
    assert list(read(p, labels=-2).label_names) == ["L1", "L2"]


@pytest.mark.parametrize("spec", [0, 4, -4, "", "zzz", ["nope"], ["L1", "L1"], True, 1.5, "missing.xml"])
def test_bad_specs(spec):
    with pytest.raises(DatasetError):
        resolve_label_spec(["f1", "f2", "L1", "L2"], spec, "x.csv")


def test_typed_metadata_and_dict_view(files):
    a, c = files
    ds = read(a, labels=2)
    m = ds.metadata
    assert isinstance(m, DatasetMeta) and m.format == "arff-dense" and m.relation == "d"
    assert m.feature_kinds == ("numeric", "numeric") and m.label_source == "count"
    # The dict view older code reads: same keys and list values as before.
    assert isinstance(ds.meta, dict) and ds.meta["feature_kinds"] == ["numeric", "numeric"]
    assert ds.meta["id_columns"] == [] and ds.meta["format"] == "arff-dense"
    ds.meta["registry"] = "toy"  # writes go through (datasets/load.py does this)
    assert ds.metadata.registry == "toy"
    with pytest.raises(Exception):
        m.format = "x"  # frozen
    assert read(c, labels=2).metadata.format == "csv"
    d = Dataset(np.zeros((2, 1)), np.zeros((2, 1)), ["a"], ["y"], meta={"copies": 3, "source": "s"})
    assert d.metadata.extra == {"copies": 3} and d.metadata.source == "s" and d.meta["copies"] == 3


def test_subset_columns_remaps_metadata(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text("id,x,c,y\n" + "".join(f"p{i},{i},{'ab'[i % 2]},{i % 2}\n" for i in range(4)))
    ds = read(p, labels=1)
    assert ds.id_columns == [0] and ds.metadata.feature_kinds == ("nominal", "numeric", "binary")
    sub = subset_columns(ds, ["c", "id"])
    assert sub.id_columns == [1] and sub.metadata.feature_kinds == ("binary", "nominal")
    assert set(sub.metadata.nominal_values) == {"c", "id"}


def test_one_id_rule():
    X = np.array([[0, 1, 5], [1, 1, 6], [2, 0, 7]], dtype=float)
    assert detect_id_columns(X, [0, 1]) == [0]  # numeric column 2 is never a candidate
    assert detect_id_columns(X[:1], [0]) == []
