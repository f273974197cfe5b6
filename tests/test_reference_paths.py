"""Every selection path against the slow reference written from the paper.

The reference (tests/reference.py) discretizes one column at a time, recomputes g and D from
scratch at every greedy step, and runs Algorithm 3 as the paper states it: Greedy on each
part of the seeded partition, AltGreedy on the union. Each product path (centralized,
in-process, process pool, streaming, column store, Dask) must give the same selection order
and the same value of every field, for both relevance kinds, with and without constant
columns, for several p, lambda, partition counts and coreset sizes. Sizes are tiny: the
reference is slow by design.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import scipy.sparse as sp

import paths
import reference as ref
from _assertions import assert_same_selection
from coreselect.errors import InputError

N, D = 40, 18
MIN_BIN = 5  # small n: let the quantile bins exist


def _data(kind: str, seed: int):
    rng = np.random.default_rng(seed)
    if kind == "sparse":
        X = rng.exponential(size=(N, D)) * (rng.random((N, D)) < 0.4)
    else:
        X = rng.integers(0, 4, size=(N, D)).astype(float)
        X[:, 2] = rng.normal(size=N)  # many-valued: quantile bins
    X[:, 0] = 0.0  # constant
    X[:, 9] = X[:, 4]  # duplicate: a tie across (or within) parts
    X[:, 13] = X[:, 4]
    Y = (rng.random((N, 3)) < 0.4).astype(int)
    Y[:, 0] = np.maximum(Y[:, 0], X[:, 4] > np.median(X[:, 4]))
    return (sp.csr_matrix(X) if kind == "sparse" else X), Y


CASES = [  # (k, lam, p, partitions, coreset_size)
    (3, 0.5, 2, 3, None),
    (4, 0.2, 10, 2, 5),
    (3, 0.9, 1, 4, 2),
]


def _params(k, lam, p, relevance, keep):
    return dict(k=k, lam=lam, p=p, relevance=relevance, keep_constant=keep,
                min_bin_count=MIN_BIN)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("relevance", ["mi", "nmi"])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_distributed_paths_equal_reference(kind, relevance, keep, case, tmp_path):
    k, lam, p, m, cs = CASES[case]
    seed = zlib.crc32(f"{kind}{relevance}{keep}{case}".encode()) % 1000
    X, Y = _data(kind, seed)
    codes = ref.codes_of(X, min_bin_count=MIN_BIN)
    parts = paths.partition_of(D, m, seed)
    expected = ref.distributed(codes, Y, parts, k, lam, p, relevance, keep, coreset_size=cs)
    params = dict(_params(k, lam, p, relevance, keep), partitions=m, coreset_size=cs, seed=seed)
    for run in (paths.run_local, paths.run_streaming):
        assert_same_selection(run(X, Y, **params), expected)
    assert_same_selection(paths.run_store(X, Y, tmp_path / "store", **params), expected)
    params.pop("min_bin_count")  # fixed when the store was built
    assert_same_selection(paths.run_store_path(tmp_path / "store", mode="streaming", **params),
                          expected)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("relevance", ["mi", "nmi"])
@pytest.mark.parametrize("keep", [False, True])
def test_centralized_paths_equal_reference(kind, relevance, keep, tmp_path):
    seed = zlib.crc32(f"c{kind}{relevance}{keep}".encode()) % 1000
    X, Y = _data(kind, seed)
    codes = ref.codes_of(X, min_bin_count=MIN_BIN)
    for k, lam, p in [(4, 0.5, 2), (3, 0.1, 10)]:
        expected = ref.centralized(codes, Y, k, lam, p, relevance, keep)
        params = _params(k, lam, p, relevance, keep)
        assert_same_selection(paths.run_centralized(X, Y, **params), expected)
    store = paths.run_store(X, Y, tmp_path / "store", mode="centralized", **params)
    assert_same_selection(store, expected)


def test_auto_partitions_is_the_papers_formula():
    X, Y = _data("dense", 3)
    k = 2
    m = ref.auto_partitions(D, k)  # ceil(sqrt(18 / 2)) = 3
    assert m == 3
    codes = ref.codes_of(X, min_bin_count=MIN_BIN)
    expected = ref.distributed(codes, Y, paths.partition_of(D, m, 11), k, 0.5, 3, "mi")
    got = paths.run_local(X, Y, k=k, p=3, min_bin_count=MIN_BIN, seed=11)
    assert_same_selection(got, expected)
    assert got.partitions == m and len(got.parts) == m


def test_process_pool_equals_reference():
    X, Y = _data("sparse", 21)
    codes = ref.codes_of(X, min_bin_count=MIN_BIN)
    expected = ref.distributed(codes, Y, paths.partition_of(D, 3, 21), 3, 0.5, 2, "nmi")
    got = paths.run_process_pool(X, Y, k=3, p=2, relevance="nmi", partitions=3, seed=21,
                                 min_bin_count=MIN_BIN)
    assert_same_selection(got, expected)


@pytest.fixture(scope="module")
def dask_client():
    """One small LocalCluster for the module (starting one costs seconds)."""
    import distributed  # a declared dependency: never skipped

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("relevance", ["mi", "nmi"])
def test_dask_equals_reference(dask_client, relevance, tmp_path):
    X, Y = _data("sparse", 5)
    codes = ref.codes_of(X, min_bin_count=MIN_BIN)
    expected = ref.distributed(codes, Y, paths.partition_of(D, 3, 5), 3, 0.4, 2, relevance,
                               coreset_size=4)
    params = dict(k=3, lam=0.4, p=2, relevance=relevance, partitions=3, coreset_size=4, seed=5,
                  min_bin_count=MIN_BIN)
    assert_same_selection(paths.run_dask(X, Y, dask_client, **params), expected)
    paths.build_store(X, Y, tmp_path / "s", seed=5, min_bin_count=MIN_BIN)
    got = paths.run_store_path(tmp_path / "s", client=dask_client, engine="dask", k=3, lam=0.4,
                               p=2, relevance=relevance, partitions=3, coreset_size=4)
    assert_same_selection(got, expected)


@pytest.mark.parametrize("params", [
    dict(k=1, lam=0.0, p=1),  # every lower bound of check_parameters at once
    dict(k=2, lam=1.0, p=1, n_bins=2, min_bin_count=1),
    dict(k=3, lam=0.5, p=2, partitions=1, coreset_size=3, n_workers=1),
    dict(k=2, lam=0.5, p=2, partitions=2, coreset_size=1),
])
def test_boundary_parameters_are_accepted_and_correct(params):
    X, Y = _data("dense", 17)
    k, lam, p = params["k"], params["lam"], params["p"]
    n_bins, mbc = params.get("n_bins", "auto"), params.get("min_bin_count", MIN_BIN)
    codes = ref.codes_of(X, n_bins=n_bins, min_bin_count=mbc)
    kwargs = dict(params, min_bin_count=mbc)
    if "partitions" in params:
        m, cs = params["partitions"], params["coreset_size"]
        expected = ref.distributed(codes, Y, paths.partition_of(D, m, 4), k, lam, p,
                                   coreset_size=cs)
        assert_same_selection(paths.run_local(X, Y, seed=4, **kwargs), expected)
    else:
        expected = ref.centralized(codes, Y, k, lam, p)
        assert_same_selection(paths.run_centralized(X, Y, **kwargs), expected)


def test_a_union_smaller_than_k_is_an_input_error():
    X, Y = _data("dense", 17)
    with pytest.raises(InputError, match="k=3"):
        paths.run_local(X, Y, k=3, partitions=1, coreset_size=1, min_bin_count=MIN_BIN)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("relevance", ["mi", "nmi"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_default_calibration_paths_equal_reference(kind, relevance, case, tmp_path):
    """The weighing the default takes on sparse data (calibration "information", its own p
    from k and the number of labels) on every path against the from-scratch reference of that
    greedy; odd cases give their own p. What "auto" decides on every path:
    tests/test_conditional.py."""
    k, lam, p, m, cs = CASES[case]
    seed = zlib.crc32(f"r{kind}{relevance}{case}".encode()) % 1000
    X, Y = _data(kind, seed)
    codes = ref.codes_of(X, min_bin_count=MIN_BIN)
    given = p if case % 2 else None  # None: the calibration's p
    p = p if case % 2 else ref.information_p(k, Y.shape[1])
    params = dict(_params(k, lam, given, relevance, False), calibration="information")
    expected = ref.centralized(codes, Y, k, lam, p, relevance, calibration="information")
    assert_same_selection(paths.run_centralized(X, Y, **params), expected)
    assert_same_selection(paths.run_rows(X, Y, row_shards=3, **params), expected)
    expected = ref.distributed(codes, Y, paths.partition_of(D, m, seed), k, lam, p, relevance,
                               coreset_size=cs, calibration="information")
    params.update(partitions=m, coreset_size=cs, seed=seed)
    for run in (paths.run_local, paths.run_streaming):
        assert_same_selection(run(X, Y, **params), expected)
    assert_same_selection(paths.run_store(X, Y, tmp_path / "store", **params), expected)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_default_top_p_cut_paths_equal_reference(kind, tmp_path):
    """With more labels, the weighing's own p is below k (here 3 of 6 picks): the top-p cut
    bites, and every path still equals the reference greedy with that p."""
    k, lam, m, cs = 6, 0.5, 2, None
    seed = zlib.crc32(f"cut{kind}".encode()) % 1000
    X, Y = _data(kind, seed)
    rng = np.random.default_rng(seed)
    Y = np.hstack([Y, (rng.random((N, 5)) < 0.3).astype(int)])  # 8 labels
    p = ref.information_p(k, Y.shape[1])
    assert p == 3 < k
    codes = ref.codes_of(X, min_bin_count=MIN_BIN)
    params = dict(_params(k, lam, None, "mi", False), calibration="information")
    expected = ref.centralized(codes, Y, k, lam, p, "mi", calibration="information")
    assert_same_selection(paths.run_centralized(X, Y, **params), expected)
    assert_same_selection(paths.run_rows(X, Y, row_shards=3, **params), expected)
    expected = ref.distributed(codes, Y, paths.partition_of(D, m, seed), k, lam, p, "mi",
                               coreset_size=cs, calibration="information")
    params.update(partitions=m, coreset_size=cs, seed=seed)
    for run in (paths.run_local, paths.run_streaming):
        assert_same_selection(run(X, Y, **params), expected)
    assert_same_selection(paths.run_store(X, Y, tmp_path / "store", **params), expected)
