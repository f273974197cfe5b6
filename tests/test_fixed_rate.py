"""The "fixed" calibration: one objective ``h = a g + b D`` per run, its exchange rate set by
two ranges of the whole data (``R_g``: of ``g({v})``; ``R_D``: of ``d(u0, v)``, ``u0`` the first
pick), so the paper's bounds hold for it and every mode maximizes the same ``h``.

Checked against tests/reference.py (ranges, weights, h and the greedy from the definitions),
over the modes (centralized, rows, store, Algorithm 3 in memory / streaming / process pool /
store / Dask), over partitions of every size, and against the bound itself: AltGreedy's ``h``
is at least half the best ``h`` of any k-subset (brute force on small data)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import reference as ref
from test_distributed import _data as distributed_data
from coreselect.core import Problem
from coreselect.core.entropy import DistanceOracle
from coreselect.core.greedy import first_ranges
from coreselect.selection.distributed import ProblemParts, partition
from coreselect.engines.local import LocalEngine
from coreselect.engines.fixed_rate import measure_ranges
from coreselect.selection import select
from coreselect.selection.sources import InMemorySource, StoreSource
from coreselect.selection.spec import Objective
from coreselect.store import build_store
from coreselect.selection.strategies import AltGreedy, DistributedGreedy, RowSharded


def _small(seed: int, n=70, d=10, n_labels=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, d)).astype(float)
    Y = (rng.random((n, n_labels)) < 0.4).astype(int)
    X[:, 0] = Y[:, 0] * 2 + (rng.random(n) < 0.2)
    X[:, 3] = X[:, 0]  # a copy of the most relevant column
    X[:, 8] = 1.0  # a constant column: never selectable
    return X, Y


def _wide(seed=0, n=200, d=120):
    """Sparse counts, informative columns and exact copies (ties across parts)."""
    return distributed_data(n, d, seed, density=0.1, n_informative=6)


@pytest.mark.parametrize("alternate", [True, False])
@pytest.mark.parametrize("seed,lam,p,k", [(0, 0.5, 1, 5), (1, 0.3, 2, 6), (2, 0.8, 10, 4),
                                          (3, 0.0, 2, 5), (4, 1.0, 1, 5)])
def test_ranges_weights_value_and_selection_equal_the_definitions(alternate, seed, lam, p, k):
    X, Y = _small(seed)
    problem = Problem.build(X, Y, k=k, lam=lam, p=p, min_bin_count=1, calibration="fixed")
    result = problem.run(alternate=alternate, backend="numpy")
    codes = problem.features.codes.toarray()
    labels = problem.labels.codes.toarray()
    rel = np.asarray(problem.relevance)
    ranges = ref.fixed_ranges(rel, codes, problem.selectable)
    np.testing.assert_allclose(result.extra["ranges"], ranges, rtol=1e-12, atol=1e-12)
    oracle = DistanceOracle(problem.features, backend="numpy")
    got, first = first_ranges(problem.relevance, problem.selectable, oracle.distances_from)
    np.testing.assert_allclose(got, ranges, rtol=1e-12, atol=1e-12)
    assert first == result.local[0]
    # the value reported is a g + b D of the selection, from the definitions
    chosen = [int(u) for u in result.local]
    a, b = ref.fixed_weights(lam, ranges)
    expected = a * ref.g(codes, labels, chosen, p, kind="mi") + b * ref.diversity(codes, chosen)
    assert result.objective == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert chosen == ref.greedy_calibrated(rel, codes, k, lam, p, "fixed", alternate,
                                           selectable=problem.selectable)


@pytest.mark.parametrize("seed", range(6))
def test_altgreedy_keeps_the_papers_half_bound(seed):
    """A fixed objective: AltGreedy is a 1/2-approximation of it (Borodin et al.), checked by
    brute force over every k-subset."""
    X, Y = _small(seed, d=9)
    k = 4
    problem = Problem.build(X, Y, k=k, lam=0.5, p=2, min_bin_count=1, calibration="fixed")
    result = problem.run(alternate=True, backend="numpy")
    ok = np.flatnonzero(problem.selectable)
    best = max(problem.evaluate(np.array(subset))[0] for subset in itertools.combinations(ok, k))
    assert result.objective >= 0.5 * best - 1e-12


def test_units_do_not_change_the_selection():
    X, Y = _small(5, d=10)
    problem = Problem.build(X, Y, k=5, min_bin_count=1, calibration="fixed")
    a = problem.run(alternate=True)
    scaled = Problem(problem.features, problem.labels, problem.relevance * 1.4427,
                     problem.params, problem.column_ids, problem.selectable)
    assert list(scaled.run(alternate=True).selected) == list(a.selected)


@pytest.mark.parametrize("m", [1, 2, 3, 7, 40, 119])
def test_ranges_over_any_partition_equal_the_whole_datas(m):
    X, Y = _wide()
    problem = Problem.build(X, Y, k=5, calibration="fixed")
    oracle = DistanceOracle(problem.features)
    whole, _ = first_ranges(problem.relevance, problem.selectable, oracle.distances_from)
    got = measure_ranges(LocalEngine(), ProblemParts(problem), partition(problem.n_columns, m, 3))
    np.testing.assert_allclose(got, whole, rtol=1e-12)


@pytest.fixture(scope="module")
def wide_store(tmp_path_factory):
    X, Y = _wide()
    return build_store(X, Y, tmp_path_factory.mktemp("fixed") / "s", block_size=29, seed=5)


def test_every_mode_maximizes_the_same_objective(wide_store):
    X, Y = _wide()
    obj = Objective(k=6, calibration="fixed")
    src = InMemorySource(X, Y)
    central = AltGreedy().run(obj, src)
    for other in (AltGreedy().run(obj, StoreSource(wide_store)),
                  RowSharded(row_shards=3).run(obj, src),
                  # parts that keep everything: the union is the whole data
                  DistributedGreedy(partitions=3, coreset_size=X.shape[1], random_state=5).run(obj, src)):
        assert list(other.selected) == list(central.selected), other.strategy
        assert other.objective == pytest.approx(central.objective, rel=1e-12)
    dist = DistributedGreedy(partitions=4, random_state=5).run(obj, src)
    assert "ranges" in dist.timings
    for other in (DistributedGreedy(partitions=4, random_state=5, streaming=True).run(obj, src),
                  DistributedGreedy(partitions=4, random_state=5, n_workers=2).run(obj, src),
                  DistributedGreedy(partitions=4).run(obj, StoreSource(wide_store)),
                  DistributedGreedy(partitions=4, streaming=True).run(obj, StoreSource(wide_store))):
        assert list(other.selected) == list(dist.selected)
        assert [list(p.selected) for p in other.parts] == [list(p.selected) for p in dist.parts]
        assert other.objective == pytest.approx(dist.objective, rel=1e-12)
    # Algorithm 3 from the definitions: every part's Greedy and the union's AltGreedy use the
    # whole data's ranges; the value is h of the whole data
    problem = Problem.build(X, Y, k=6, calibration="fixed")
    codes = problem.features.codes.toarray()
    rel = np.asarray(problem.relevance)
    ranges = ref.fixed_ranges(rel, codes, problem.selectable)
    picked = []
    for part in partition(X.shape[1], 4, 5):
        ids = sorted(int(i) for i in part)
        local = ref.greedy_calibrated(rel[ids], codes[:, ids], 6, 0.5, 10, "fixed", False,
                                      selectable=problem.selectable[ids], ranges=ranges)
        picked.append([ids[i] for i in local])
    assert picked == [list(p.selected) for p in dist.parts]
    union = sorted(i for part in picked for i in part)
    local = ref.greedy_calibrated(rel[union], codes[:, union], 6, 0.5, 10, "fixed", True,
                                  ranges=ranges)
    assert [union[i] for i in local] == list(dist.selected)
    a, b = ref.fixed_weights(0.5, ranges)
    labels = problem.labels.codes.toarray()
    chosen = list(dist.selected)
    assert dist.objective == pytest.approx(
        a * ref.g(codes, labels, chosen, 10, kind="mi") + b * ref.diversity(codes, chosen))


def test_select_api_and_prefix_property():
    X, Y = _wide(1)
    small = select(X, Y, k=4, calibration="fixed")
    large = select(X, Y, k=9, calibration="fixed")
    assert list(large.selected[:4]) == list(small.selected)  # no k in the objective
    assert small.spec["calibration"] == "fixed"


@pytest.mark.dask
def test_dask_parts_use_the_whole_datas_ranges(wide_store):
    from distributed import Client, LocalCluster

    X, Y = _wide()
    obj = Objective(k=6, calibration="fixed")
    ref_run = DistributedGreedy(partitions=4, random_state=5).run(obj, InMemorySource(X, Y))
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        for src in (InMemorySource(X, Y), StoreSource(wide_store)):
            got = DistributedGreedy(partitions=4, random_state=5, engine="dask",
                                    client=client).run(obj, src)
            assert list(got.selected) == list(ref_run.selected)
            assert got.objective == pytest.approx(ref_run.objective, rel=1e-12)


@pytest.mark.parametrize("alternate", [True, False])
@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_a_resumed_run_measures_the_same_ranges(alternate, backend):
    """A checkpointed run resumed after any step (the ranges are measured in steps 0 and 1 of
    the uninterrupted run) ends bit for bit as the uninterrupted one."""
    import copy

    X, Y = _small(7, d=10)
    problem = Problem.build(X, Y, k=6, min_bin_count=1, calibration="fixed")
    states = []
    whole = problem.run(alternate=alternate, backend=backend,
                        on_step=lambda s: states.append(copy.deepcopy(s)))
    for state in states:
        again = problem.run(alternate=alternate, backend=backend, start=state)
        assert again.selected.tolist() == whole.selected.tolist()
        assert again.extra["ranges"] == whole.extra["ranges"]
        assert (again.objective, again.relevance, again.diversity) == (
            whole.objective, whole.relevance, whole.diversity)
