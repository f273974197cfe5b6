"""Row shards on Dask with work spread unevenly: every tile is counted exactly once, whatever
the number of tiles per worker and the fan-in of the sum tree.

``DaskRows`` places consecutive tiles on each worker, maps one task per group of at most
``fan_in`` tiles of one worker and sums the partial results in a tree of fan-in ``fan_in``.
The dimensions that vary: tiles per worker (1, 2, 3, fan_in - 1, fan_in, fan_in + 1,
> 2 fan_in), workers holding different numbers of tiles (an odd number of tiles; a client
that reports one worker several times, so that it gets 2 or 3 times the tiles of the other),
and fan_in (2 and 3 give sum trees of several levels). Whatever they are, the map-reduce is
the plain sum over tiles and the selection is the single-process one.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from coreselect.core.discretize import discretize, discretize_labels
from coreselect.core.problem import Problem
from coreselect.engines.rowsharded import (
    InMemoryRowShards, SequentialRows, counts_task, select_row_sharded,
)

pytestmark = pytest.mark.dask

FAN_INS = (2, 3, 4, 8)


def _tiles_per_worker_cases():
    """(n_tiles, fan_in): tiles per worker 1, 2, 3, fan_in - 1, fan_in, fan_in + 1 and more
    than 2 fan_in, on each of 2 workers, with odd totals (workers differ by one tile)."""
    cases = set()
    for f in FAN_INS:
        for per in {1, 2, 3, f - 1, f, f + 1, 2 * f + 1}:
            if per >= 1:
                cases.add((2 * per, f))      # both workers hold `per`
                cases.add((2 * per - 1, f))  # one holds `per`, the other `per - 1`
    return sorted(cases)


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        _known_workers(c, 2)
        yield c


def _known_workers(client, n: int) -> list:
    """The addresses of the first ``n`` workers, once ``scheduler_info`` reports them all.

    ``wait_for_workers`` counts the scheduler's workers; ``scheduler_info`` is a separate
    call whose answer may lag behind it on a loaded machine, so this waits for what the test
    then reads (a bound of minutes: a hang guard, not a speed target)."""
    client.wait_for_workers(n, timeout=300)
    for _ in range(3000):
        names = sorted(client.scheduler_info().get("workers", {}))
        if len(names) >= n:
            return names[:n]
        client.wait_for_workers(n, timeout=300)
        time.sleep(0.1)  # polling the scheduler for what it reports, not hoping
    raise AssertionError(f"scheduler_info never reported {n} workers: {names}")


class _SkewedClient:
    """A real client that reports its first worker once and its second ``weight`` times, so
    that ``DaskRows`` puts about ``weight`` times as many tiles on the second worker."""

    def __init__(self, client, weight: int):
        self._client, self._weight = client, weight

    def scheduler_info(self, *a, **kw):
        info = dict(self._client.scheduler_info(*a, **kw))
        workers = dict(info.get("workers", {}))
        if len(workers) < 2:  # a lagging answer (loaded machine): wait until both are known
            _known_workers(self._client, 2)
            info = dict(self._client.scheduler_info(*a, **kw))
            workers = dict(info.get("workers", {}))
        names = sorted(workers)
        info["workers"] = _RepeatedKeys(workers, [names[0]] + [names[1]] * self._weight)
        return info

    def __getattr__(self, name):
        return getattr(self._client, name)


class _RepeatedKeys(dict):
    """A mapping whose iteration repeats some keys (as ``list(d)`` is all DaskRows uses)."""

    def __init__(self, base, order):
        super().__init__(base)
        self._order = order

    def __iter__(self):
        return iter(self._order)

    def __len__(self):
        return len(self._order)


# -- a provider whose tiles say who they are --------------------------------------------------
def _tagged(i: int):
    return i, None


class _TaggedShards:
    def __init__(self, n: int):
        self.n_row_shards = n

    def loader(self, i: int):
        return functools.partial(_tagged, i)


def _one_hot(tile: int, _labels, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    out[tile] = 1
    return out


@pytest.mark.parametrize("n_tiles,fan_in", _tiles_per_worker_cases())
def test_every_tile_counted_once(client, n_tiles, fan_in):
    from coreselect.engines.dask_rows import DaskRows

    with DaskRows(client, _TaggedShards(n_tiles), fan_in=fan_in) as rows:
        assert all(1 <= len(g) <= fan_in for g in rows.groups)
        total = rows.map_reduce(_one_hot, n_tiles)
        again = rows.map_reduce(_one_hot, n_tiles)  # the tiles stay where they are
    np.testing.assert_array_equal(total, np.ones(n_tiles, dtype=np.int64))
    np.testing.assert_array_equal(again, total)


class _NoWorkersYetClient:
    """A real client whose scheduler has not reported any worker yet (a cluster still starting,
    or a stale ``scheduler_info``): the tiles go wherever the scheduler puts them."""

    def __init__(self, client):
        self._client = client

    def scheduler_info(self, *a, **kw):
        return {**self._client.scheduler_info(*a, **kw), "workers": {}}

    def __getattr__(self, name):
        return getattr(self._client, name)


@pytest.mark.parametrize("n_tiles,fan_in", [(1, 2), (3, 2), (9, 8), (17, 8)])
def test_tiles_placed_when_no_worker_is_known_yet(client, n_tiles, fan_in):
    from coreselect.engines.dask_rows import DaskRows

    with DaskRows(_NoWorkersYetClient(client), _TaggedShards(n_tiles), fan_in=fan_in) as rows:
        total = rows.map_reduce(_one_hot, n_tiles)
    np.testing.assert_array_equal(total, np.ones(n_tiles, dtype=np.int64))


@settings(max_examples=20, deadline=None, derandomize=True,
          phases=(Phase.explicit, Phase.generate))
@given(n_tiles=st.integers(1, 30), fan_in=st.integers(2, 9), weight=st.integers(1, 4))
def test_every_tile_counted_once_on_skewed_workers(client, n_tiles, fan_in, weight):
    """One worker gets ``weight`` times the tiles of the other (1 and 3, 2 and 7, ...)."""
    from coreselect.engines.dask_rows import DaskRows

    with DaskRows(_SkewedClient(client, weight), _TaggedShards(n_tiles), fan_in=fan_in) as rows:
        total = rows.map_reduce(_one_hot, n_tiles)
    np.testing.assert_array_equal(total, np.ones(n_tiles, dtype=np.int64))


# -- the real map-reduce: count tables and the selection -------------------------------------
@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    n, d = 90, 14
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    Y = (rng.random((n, 3)) < 0.4).astype(int)
    X[:, 1] = Y[:, 0] * 2 + rng.integers(0, 2, n)  # a relevant column or two
    X[:, 5] = Y[:, 1] + Y[:, 2]
    F, L = discretize(X, min_bin_count=1), discretize_labels(Y)
    ref = Problem.from_discrete(F, L, k=4).run(alternate=True)
    return F, L, ref


@pytest.mark.parametrize("n_tiles,fan_in", [(1, 2), (2, 2), (3, 2), (5, 2), (6, 3), (7, 3),
                                            (9, 4), (17, 8), (19, 3), (45, 2)])
def test_counts_and_selection_equal_single_process(client, data, n_tiles, fan_in):
    from coreselect.engines.dask_rows import DaskRows

    F, L, ref = data
    shards = InMemoryRowShards.split(F, L, n_tiles)
    single = SequentialRows(shards).map_reduce(counts_task)
    with DaskRows(client, shards, fan_in=fan_in) as rows:
        counts = rows.map_reduce(counts_task)
        assert counts.n_samples == F.n_samples
        assert counts == single
        run = select_row_sharded(rows, k=4)
    assert list(run.result.selected) == list(ref.selected)
    assert run.result.objective == pytest.approx(ref.objective, abs=1e-9)


@pytest.mark.parametrize("weight", [2, 3])
@pytest.mark.parametrize("n_tiles,fan_in", [(4, 2), (7, 3), (13, 2)])
def test_counts_equal_single_process_on_skewed_workers(client, data, n_tiles, fan_in, weight):
    from coreselect.engines.dask_rows import DaskRows

    F, L, _ = data
    shards = InMemoryRowShards.split(F, L, n_tiles)
    with DaskRows(_SkewedClient(client, weight), shards, fan_in=fan_in) as rows:
        assert rows.map_reduce(counts_task) == SequentialRows(shards).map_reduce(counts_task)
