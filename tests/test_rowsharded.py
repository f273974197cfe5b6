"""Row-sharded selection equals the unsharded core's (selection, objective to 1e-9)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import paths

from coreselect.core.discretize import discretize, discretize_labels
from coreselect.core.problem import Problem
from coreselect.errors import InputError
from coreselect.core.shards import shard_counts
from coreselect.engines.rowsharded import (
    InMemoryRowShards, SequentialRows, counts_task, select_row_sharded,
)


def _data(kind: str, seed: int = 0, n: int = 300, d: int = 40, raw: bool = False):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, 5)) < 0.3).astype(int)
    if kind == "binary":
        X = (rng.random((n, d)) < 0.2).astype(float)
        X[:, :5] = np.logical_xor(Y[:, :5], rng.random((n, 5)) < 0.2)  # relevant columns
    elif kind == "dense":
        X = rng.normal(size=(n, d)) + Y[:, rng.integers(0, 5, size=d)]
    elif kind == "sparse":
        X = sp.random(n, d, density=0.1, random_state=seed, format="csc")
    else:  # multi-valued counts with many zeros, a constant and a duplicate column
        X = rng.integers(0, 5, size=(n, d)) * (rng.random((n, d)) < 0.4)
        X[:, 0] = 0
        X[:, 1] = X[:, 2]
    if raw:
        return X, Y
    return discretize(X), discretize_labels(Y)


SHARDS = {"one": [0, 300], "two": [0, 150, 300], "uneven": [0, 1, 1, 97, 290, 300]}


@pytest.mark.parametrize("kind", ["binary", "dense", "sparse", "multi"])
@pytest.mark.parametrize("shards", sorted(SHARDS))
@pytest.mark.parametrize("alternate", [True, False])
def test_row_sharded_equals_unsharded(kind, shards, alternate):
    F, L = _data(kind)
    ref = Problem.from_discrete(F, L, k=8).run(alternate=alternate)
    run = select_row_sharded(SequentialRows(InMemoryRowShards(F, L, SHARDS[shards])), k=8,
                             alternate=alternate)
    assert list(run.result.selected) == list(ref.selected)
    assert run.result.objective == pytest.approx(ref.objective, abs=1e-9)
    assert run.result.relevance == pytest.approx(ref.relevance, abs=1e-9)
    np.testing.assert_allclose(run.result.pair_distances, ref.pair_distances, atol=1e-9)


@pytest.mark.parametrize("relevance", ["mi", "nmi"])
def test_parameters_and_numpy_backend(relevance):
    F, L = _data("multi", seed=3)
    ref = Problem.from_discrete(F, L, k=6, lam=0.3, p=2, relevance=relevance,
                                keep_constant=True).run(alternate=True, backend="numpy")
    run = select_row_sharded(SequentialRows(InMemoryRowShards.split(F, L, 3)), k=6, lam=0.3,
                             p=2, relevance=relevance, keep_constant=True, backend="numpy")
    assert list(run.result.selected) == list(ref.selected)
    assert run.result.objective == pytest.approx(ref.objective, abs=1e-9)


def test_progress_is_reported_per_step():
    F, L = _data("binary")
    steps = []
    select_row_sharded(SequentialRows(InMemoryRowShards.split(F, L, 2)), k=5,
                       callback=lambda step, total: steps.append((step, total)))
    assert steps == [(i, 5) for i in range(1, 6)]


def test_bad_input_is_a_typed_error():
    F, L = _data("binary")
    with pytest.raises(InputError):
        InMemoryRowShards(F, L, [0, 10])  # does not reach the last row
    with pytest.raises(InputError):
        select_row_sharded(SequentialRows(InMemoryRowShards.split(F, L, 2)), k=10_000)


class _DiskShards:
    """A provider that reads each tile from disk when asked (streaming, as store tiles will)."""

    def __init__(self, shards, folder):
        self.n_row_shards = shards.n_row_shards
        self.folder = folder
        self.reads = 0
        for i in range(self.n_row_shards):
            for kind in ("features", "labels"):
                m = getattr(shards, kind)(i)
                sp.save_npz(folder / f"{kind}{i}.npz", m.codes)
                np.save(folder / f"{kind}{i}_ncodes.npy", m.n_codes)

    def _read(self, kind, i):
        from coreselect.core.discretize import DiscreteMatrix

        self.reads += 1
        return DiscreteMatrix(sp.load_npz(self.folder / f"{kind}{i}.npz"),
                              np.load(self.folder / f"{kind}{i}_ncodes.npy"))

    def features(self, i):
        return self._read("features", i)

    def labels(self, i):
        return self._read("labels", i)


def test_streaming_tiles_from_disk(tmp_path):
    from coreselect.engines.rowsharded import RowShardedGreedy

    F, L = _data("sparse", seed=4)
    problem = Problem.from_discrete(F, L, k=6)
    ref = problem.run(alternate=True)
    disk = _DiskShards(InMemoryRowShards.split(F, L, 3), tmp_path)
    run = RowShardedGreedy().run(problem.params, SequentialRows(disk))
    assert list(run.result.selected) == list(ref.selected)
    assert disk.reads == 2 * 3 * (1 + 6)  # every tile once for the counts and once per step


@pytest.mark.parametrize("m", [1, 3])
def test_grid_equals_algorithm_3_without_row_sharding(m):
    from coreselect.engines.rowsharded import select_grid

    F, L = _data("multi", seed=6, d=60)
    ref = paths.run_streaming(*_data("multi", seed=6, d=60, raw=True), k=6, partitions=m,
                              seed=3)
    parts = paths.partition_of(F.n_columns, m, 3)
    run = select_grid(SequentialRows(InMemoryRowShards(F, L, SHARDS["uneven"])), parts, k=6)
    assert [list(p) for p in run.result.extra["parts"]] == [list(p.selected) for p in ref.parts]
    assert list(run.result.selected) == list(ref.selected)
    assert run.result.objective == pytest.approx(ref.objective, abs=1e-9)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shards", sorted(SHARDS))
def test_counts_pass_on_threads_is_the_unsharded_counts_in_shard_order(threads, shards):
    """Shards counted side by side (one per thread) and summed in shard order give the
    unsharded count tables exactly, empty shards included; progress is reported in order."""
    F, L = _data("multi", seed=3)
    seen = []
    rows = SequentialRows(InMemoryRowShards(F, L, SHARDS[shards]),
                          progress=lambda done, total: seen.append((done, total)),
                          threads=threads)
    total = rows.map_reduce(counts_task, "numba", "dense")
    assert total == shard_counts(F, L, "numba")
    n = len(SHARDS[shards]) - 1
    assert seen == [(i, n) for i in range(1, n + 1)]
    for u in range(0, F.n_columns, 7):
        one = SequentialRows(InMemoryRowShards(F, L, SHARDS[shards]), threads=1).step(u)
        np.testing.assert_array_equal(rows.step(u), one)
