"""A Dask worker process killed in the middle of a run: the run finishes, result unchanged."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

pytestmark = pytest.mark.dask


def test_killed_worker_same_result(tmp_path):
    from distributed import Client, LocalCluster

    from coreselect.datasets.synthetic import make_sparse_multilabel
    from coreselect.selection.sources import StoreSource
    from coreselect.selection.spec import Objective
    from coreselect.store import build_store
    from coreselect.selection.strategies import DistributedGreedy

    ds = make_sparse_multilabel(n_samples=1000, n_features=12_000, n_labels=8, density=0.01,
                                n_relevant=20, n_redundant=20, random_state=0)
    store = build_store(ds.X, ds.Y, tmp_path / "store", block_size=4096, seed=1)
    ref = DistributedGreedy(partitions=12).run(Objective(k=10), StoreSource(store))

    killed: list[int] = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        pids = [int(p) for p in client.run(os.getpid).values()]

        def progress(stage: str, done: int, total: int) -> None:
            # Kill one worker process (SIGKILL, no clean-up) once the run is under way: its
            # running and queued parts must be recomputed elsewhere.
            if stage == "parts" and done == 2 and not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        res = DistributedGreedy(partitions=12, engine="dask", client=client).run(
            Objective(k=10), StoreSource(store), progress=progress)
    assert killed, "the run finished before a worker could be killed"
    assert np.array_equal(res.selected, ref.selected)
    assert res.objective == ref.objective
    assert [list(p.selected) for p in res.parts] == [list(p.selected) for p in ref.parts]


def _die(shared, task):
    os._exit(1)  # what the OS's OOM killer does to a worker, as seen by the scheduler


def test_worker_that_keeps_dying_is_one_engine_error():
    import dask
    from distributed import Client, LocalCluster

    from coreselect.engines.dask import DaskEngine
    from coreselect.errors import EngineError

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
            with DaskEngine(client=client) as engine:
                with pytest.raises(EngineError, match="out of memory"):
                    engine.map(_die, None, [0])


def test_local_cluster_sets_thread_limits_in_its_workers_only(monkeypatch):
    """The workers start with one thread per pool (NUMBA_NUM_THREADS, OMP_NUM_THREADS, ...);
    this process keeps its own settings: Dask's nanny writes its pre-spawn variables into the
    parent's os.environ, and numba would read NUMBA_NUM_THREADS=1 there at its next compile."""
    from distributed import Client

    from coreselect.engines.dask import _THREAD_VARS, local_cluster

    names = (*_THREAD_VARS, "MALLOC_MMAP_THRESHOLD_")
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    before = {name: os.environ.get(name) for name in names}
    cluster = local_cluster(1, 1)
    try:
        after = {name: os.environ.get(name) for name in names}
        with Client(cluster) as client:
            seen = next(iter(client.run(lambda: {n: os.environ.get(n) for n in names})
                             .values()))
    finally:
        cluster.close()
    assert after == before
    # Dask keeps a value the user set (OMP_NUM_THREADS=7 here); the others are one thread.
    assert seen["OMP_NUM_THREADS"] == "7", seen
    assert all(seen[var] == "1" for var in _THREAD_VARS if var != "OMP_NUM_THREADS"), seen
