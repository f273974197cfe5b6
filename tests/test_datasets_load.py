"""Every dataset in $COREDATA loads with the counts of its SOURCES.md; real-data round trips; CLI info."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from coreselect.cli import cli
from coreselect.datasets.info import dataset_info
from coreselect.datasets.load import load, stack
from coreselect.errors import DatasetError
from coreselect.io import read, write

pytestmark = pytest.mark.data

# path: (features, instances, labels, cardinality, distinct labelsets, sparse); None = not stated.
COUNTS = {
    "mulan/scene/scene-train.arff": (294, 1211, 6, None, None, False),
    "mulan/scene/scene-test.arff": (294, 1196, 6, None, None, False),
    "mulan/emotions/emotions.arff": (72, 593, 6, 1.8685, 27, False),
    "mulan/emotions/emotions-train.arff": (72, 391, 6, None, None, False),
    "mulan/emotions/emotions-test.arff": (72, 202, 6, None, None, False),
    "mulan/yeast/yeast.arff": (103, 2417, 14, 4.237, 198, False),
    "mulan/yeast/yeast-train.arff": (103, 1500, 14, None, None, False),
    "mulan/yeast/yeast-test.arff": (103, 917, 14, None, None, False),
    "mulan/cal500/cal500.arff": (68, 502, 174, 26.044, 502, False),
    "mulan/corel5k/Corel5k-sparse.arff": (499, 5000, 374, 3.522, 3175, True),
    "mulan/corel5k/Corel5k-train-sparse.arff": (499, 4500, 374, None, None, True),
    "mulan/corel5k/Corel5k-test-sparse.arff": (499, 500, 374, None, None, True),
    "mulan/corel5k/Corel5k-test.arff": (499, 500, 374, None, None, False),
    "mulan/delicious/delicious.arff": (500, 16105, 983, 19.020, 15806, True),
    "mulan/delicious/delicious-train.arff": (500, 12920, 983, None, None, True),
    "mulan/delicious/delicious-test.arff": (500, 3185, 983, None, None, True),
    "mulan/enron/enron.arff": (1001, 1702, 53, 3.378, 753, True),
    "mulan/enron/enron-train.arff": (1001, 1123, 53, None, None, True),
    "mulan/enron/enron-test.arff": (1001, 579, 53, None, None, True),
    "mulan/medical/medical.arff": (1449, 978, 45, 1.245, 94, True),
    "mulan/medical/medical-train.arff": (1449, 333, 45, None, None, True),
    "mulan/medical/medical-test.arff": (1449, 645, 45, None, None, True),
    "mulan/genbase/genbase.arff": (1186, 662, 27, 1.252, 32, False),
    "mulan/genbase/genbase-train.arff": (1186, 463, 27, None, None, False),
    "mulan/genbase/genbase-test.arff": (1186, 199, 27, None, None, False),
    "mulan/bibtex/bibtex.arff": (1836, 7395, 159, 2.402, 2856, True),
    "mulan/bibtex/bibtex-train.arff": (1836, 4880, 159, None, None, True),
    "mulan/bibtex/bibtex-test.arff": (1836, 2515, 159, None, None, True),
    "mulan/tmc2007-500/tmc2007-500.arff": (500, 28596, 22, 2.158, 1341, True),
    "mulan/tmc2007-500/tmc2007-500-train.arff": (500, 21519, 22, None, None, True),
    "mulan/tmc2007-500/tmc2007-500-test.arff": (500, 7077, 22, None, None, True),
    "rcv1v2/rcv1subset1.arff.gz": (47236, 6000, 101, 2.880, 1028, True),
    "mldr/yahoo_education.arff.gz": (27534, 12030, 33, 1.463, 511, True),
    "mldr/yahoo_health.arff.gz": (30605, 9205, 32, 1.644, 335, True),
    "mldr/yahoo_reference.arff.gz": (39679, 8027, 33, 1.174, 275, True),
    "mldr/stackex_chemistry.arff.gz": (540, 6961, 175, 2.109, 3032, True),
    "mldr/stackex_cooking.arff.gz": (577, 10491, 400, 2.225, 6386, True),
    "mldr/stackex_chess.arff.gz": (585, 1675, 227, 2.411, 1078, True),
    "mldr/langlog.arff.gz": (1004, 1460, 75, 1.180, 304, True),
    "mldr/ng20.arff.gz": (1006, 19300, 20, 1.029, 55, True),
    "mldr/slashdot.arff.gz": (1079, 3782, 22, 1.181, 156, True),
    "meka/Scene.arff.bz2": (294, 2407, 6, 1.074, 15, False),
    "meka/Yeast.arff.bz2": (103, 2417, 14, 4.237, 198, False),
    "meka/Enron.arff.bz2": (1001, 1702, 53, 3.378, 753, True),
    "meka/Music.arff": (71, 592, 6, 1.870, 27, False),
}


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def test_every_arff_in_coredata_is_listed(coredata):
    found = {str(p.relative_to(coredata)) for p in coredata.rglob("*.arff*")}
    assert found == set(COUNTS)


@pytest.mark.parametrize("rel", sorted(COUNTS))
def test_counts_match_sources(coredata, rel):
    F, N, L, card, distinct, sparse = COUNTS[rel]
    ds = load(coredata / rel)
    assert (ds.n_features, ds.n_samples, ds.n_labels) == (F, N, L)
    assert sp.issparse(ds.X) == sparse
    assert ds.Y.dtype == np.int8 and set(np.unique(ds.Y)) <= {0, 1}
    info = dataset_info(ds)
    if card is not None:
        assert info["cardinality"] == pytest.approx(card, abs=6e-4)
        assert info["distinct_labelsets"] == distinct
    if rel.startswith("mulan/genbase/"):
        assert ds.feature_names[0] == "protein" and ds.meta["id_columns"] == [0]
        assert info["feature_kinds"] == {"binary": 1185, "nominal": 1, "numeric": 0}
    else:
        assert ds.meta["id_columns"] == []


def test_medical_ignores_stale_meka_c(coredata):
    ds = load(coredata / "mulan/medical/medical.arff")
    assert "-C 45" in ds.meta["relation"] and ds.meta["label_source"] == "mulan-xml"
    assert ds.feature_names[:3] == ["-", "/", "0"]
    assert ds.label_names[0] == "Class-0-593_70"


def test_meka_scene_equals_mulan_train_plus_test(coredata):
    meka = load(coredata / "meka/Scene.arff.bz2")
    mulan = stack([load(coredata / "mulan/scene/scene-train.arff"), load(coredata / "mulan/scene/scene-test.arff")],
                  "scene")
    np.testing.assert_allclose(meka.X, mulan.X)
    np.testing.assert_array_equal(meka.Y, mulan.Y)


def test_corel5k_dense_equals_sparse(coredata):
    a = load(coredata / "mulan/corel5k/Corel5k-test.arff")
    b = load(coredata / "mulan/corel5k/Corel5k-test-sparse.arff")
    np.testing.assert_array_equal(a.X, b.X.toarray())
    np.testing.assert_array_equal(a.Y, b.Y)


ROUND_TRIPS = [
    ("mulan/emotions/emotions.arff", (".arff", ".svm", ".csv", ".parquet")),
    ("mulan/medical/medical.arff", (".arff", ".svm", ".csv", ".parquet")),
    ("mulan/genbase/genbase-test.arff", (".arff", ".arff.bz2", ".svm", ".parquet")),
    ("meka/Enron.arff.bz2", (".arff.gz", ".svm")),
    ("rcv1v2/rcv1subset1.arff.gz", (".arff.gz",)),
]


@pytest.mark.parametrize("rel, suffixes", ROUND_TRIPS, ids=[r for r, _ in ROUND_TRIPS])
def test_real_round_trips(coredata, tmp_path, rel, suffixes):
    ds = load(coredata / rel)
    for suffix in suffixes:
        out = tmp_path / f"rt{suffix}"
        write(ds, out)
        back = read(out, labels=list(ds.label_names) if suffix == ".csv" else None)
        if suffix not in (".csv", ".parquet"):  # tables are dense by nature
            assert sp.issparse(back.X) == (sp.issparse(ds.X) or suffix == ".svm"), suffix
        if sp.issparse(back.X) and sp.issparse(ds.X):  # never densify rcv1 (2 GB)
            assert back.X.shape == ds.X.shape and (back.X != ds.X).nnz == 0, suffix
        else:
            np.testing.assert_array_equal(_dense(back.X), _dense(ds.X), err_msg=suffix)
        np.testing.assert_array_equal(back.Y, ds.Y, err_msg=suffix)
        if suffix != ".svm":
            assert back.feature_names == ds.feature_names and back.label_names == ds.label_names
        if suffix.startswith(".arff") or suffix == ".parquet":
            assert back.meta["id_columns"] == ds.meta["id_columns"]


def test_load_names():
    ds = load("synthesized")
    assert ds.name == "synthesized"
    with pytest.raises(DatasetError, match="did you mean emotions"):
        load("emotins")
    with pytest.raises(DatasetError, match="no such file"):
        load("nowhere/data.arff")


def test_load_a_folder_says_so(tmp_path):
    with pytest.raises(DatasetError, match="is a folder, not a data file"):
        load(tmp_path)
    r = CliRunner().invoke(cli, ["datasets", "info", str(tmp_path)])
    assert r.exit_code == 2 and "is a folder" in r.output and len(r.output.strip().splitlines()) == 1


def test_cli_info(coredata):
    runner = CliRunner()
    r = runner.invoke(cli, ["datasets", "info", str(coredata / "mulan/genbase/genbase.arff"), "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    assert (info["instances"], info["features"], info["labels"]) == (662, 1186, 27)
    assert info["cardinality"] == pytest.approx(1.252, abs=6e-4)
    assert info["storage"] == "dense" and info["id_columns"] == ["protein"]
    r = runner.invoke(cli, ["datasets", "info", str(coredata / "mulan/medical/medical-train.arff"),
                            "--labels", str(coredata / "mulan/medical/medical.xml")])
    assert r.exit_code == 0 and "instances:           333" in r.output and "sparse" in r.output


def test_cli_info_bad_input_exit_2(tmp_path):
    bad = tmp_path / "bad.arff"
    bad.write_text("@relation r\n@attribute f numeric\n@attribute y {0,1}\n@data\n1,1\n2\n")
    r = CliRunner().invoke(cli, ["datasets", "info", str(bad), "--labels", "1"])
    assert r.exit_code == 2
    assert "bad.arff:6:" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(cli, ["datasets", "info", str(tmp_path / "none.arff")])
    assert r.exit_code == 2 and "no such file" in r.output
