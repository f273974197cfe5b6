"""The command line end to end on a real dataset with a quirk: genbase's first column
``protein`` is a sample ID (never a candidate), so every index the CLI reports must be mapped
back through the dropped column (``PS01031`` is column 643 of the file, 642 of the
candidates). The CLI's selections must equal the library's; ``--export`` must write exactly
the selected columns; a store built by the CLI must select like the library on its data."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import paths
from _assertions import assert_same_selection

GENBASE = "mulan/genbase/genbase.arff"
K = 10


@pytest.fixture(scope="module")
def genbase(coredata):
    from coreselect.datasets.load import load

    path = coredata / GENBASE
    ds = load(path)
    return path, ds


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def _candidates(ds):
    """Columns other than sample IDs, decided here (not by the product): a column with a
    distinct value in every sample is an ID."""
    X = _dense(ds.X)
    ids = [j for j in range(X.shape[1]) if np.unique(X[:, j]).size == X.shape[0]]
    assert ids == [0] and ds.feature_names[0] == "protein"
    return np.setdiff1d(np.arange(X.shape[1]), ids)


def _library(ds, run, **params):
    """The library's selection on the candidate columns, mapped back to file columns."""
    keep = _candidates(ds)
    sel = run(ds.X[:, keep], ds.Y, **params)
    mapped = {"selected": keep[np.asarray(sel.selected)], "objective": sel.objective,
              "relevance": sel.relevance, "diversity": sel.diversity,
              "pair_distances": sel.pair_distances, "feature_relevance": sel.feature_relevance}
    if sel.partitions is not None:  # Algorithm 3: each part's selection and the union's size
        mapped["parts"] = [keep[np.asarray(p.selected, dtype=np.int64)] for p in sel.parts]
        mapped["partitions"] = sel.partitions
        mapped["union_size"] = sel.union_size
    return mapped


def test_cli_centralized_equals_library_and_maps_through_the_id_column(genbase, tmp_path):
    path, ds = genbase
    export = tmp_path / "reduced.arff"
    report = paths.run_cli_json(path, k=K, extra=("--export", str(export)))
    assert_same_selection(report, _library(ds, paths.run_centralized, k=K), rtol=1e-9)
    assert report["names"] == [ds.feature_names[i] for i in report["selected"]]
    assert 0 not in report["selected"]  # the ID column is never a candidate
    assert report["selected"][0] == 643 and report["names"][0] == "PS01031"

    from coreselect.io import read

    back = read(export)
    assert list(back.feature_names) == report["names"]
    np.testing.assert_array_equal(_dense(back.X), _dense(ds.X)[:, report["selected"]])
    np.testing.assert_array_equal(_dense(back.Y), _dense(ds.Y))


def test_cli_distributed_equals_library(genbase):
    path, ds = genbase
    params = dict(k=K, mode="distributed", partitions=3, seed=1, relevance="nmi")
    report = paths.run_cli_json(path, **params)
    expected = _library(ds, paths.run_local, k=K, partitions=3, seed=1, relevance="nmi")
    checked = assert_same_selection(report, expected)
    assert {"parts", "union_size"} <= set(checked)
    assert report["names"] == [ds.feature_names[i] for i in report["selected"]]
    assert report["partitions"] == len(report["parts"]) == 3
    assert report["union_size"] == len({i for part in report["parts"] for i in part["selected"]})


def test_cli_distributed_parts_and_union_are_file_columns(genbase):
    path, ds = genbase
    report = paths.run_cli_json(path, k=K, mode="distributed", partitions=3, seed=1)
    expected = _library(ds, paths.run_local, k=K, partitions=3, seed=1)
    assert "parts" in assert_same_selection(report, expected)
    for part in report["parts"]:  # file columns: the ID column is never a part's pick
        assert 0 not in part["selected"]


def test_cli_centralized_report_has_no_parts(genbase):
    path, _ = genbase
    report = paths.run_cli_json(path, k=K)
    assert report["parts"] == [] and report["partitions"] is None
    assert report["union_size"] is None


@pytest.fixture(scope="module")
def genbase_store(genbase, tmp_path_factory):
    path, _ = genbase
    store = tmp_path_factory.mktemp("store") / "genbase"
    paths.store_build_cli(path, store, seed=1, block_size=100)
    return store


@pytest.mark.parametrize("relevance", ["mi", "nmi"])
def test_cli_store_equals_library_on_the_same_columns(genbase, genbase_store, relevance):
    path, ds = genbase
    report = paths.run_cli_json(genbase_store, k=K, mode="distributed", partitions=3,
                                relevance=relevance)
    # A store holds the file's candidate columns (the ID column left out) and reports file
    # columns: the library on those columns, same seed, mapped back.
    expected = _library(ds, paths.run_local, k=K, partitions=3, seed=1, relevance=relevance)
    assert {"parts", "union_size"} <= set(assert_same_selection(report, expected))
    assert report["names"] == [ds.feature_names[i] for i in report["selected"]]


@pytest.mark.parametrize("mode", ["distributed", "centralized"])
def test_cli_store_selects_like_the_file(genbase, genbase_store, mode):
    """The store holds the file's candidates (not the ID column) and reports file columns."""
    path, ds = genbase
    distributed = mode == "distributed"  # --partitions, --seed with centralized: refused
    params = dict(k=K, mode=mode, partitions=3 if distributed else None,
                  seed=1 if distributed else None)
    from_file = paths.run_cli_json(path, **params)
    from_store = paths.run_cli_json(genbase_store, **params)
    assert_same_selection(from_store, from_file)
    assert from_store["names"] == from_file["names"]
    assert from_store["names"] == [ds.feature_names[i] for i in from_store["selected"]]
    if mode == "distributed":
        assert [p["selected"] for p in from_store["parts"]] == [
            p["selected"] for p in from_file["parts"]]
