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
    from coreselect.sources import StoreSource
    from coreselect.spec import Objective
    from coreselect.store import build_store
    from coreselect.strategies import DistributedGreedy

    ds = make_sparse_multilabel(n_samples=1000, n_features=12_000, n_labels=8, density=0.01,
                                n_relevant=20, n_redundant=20, random_state=0)
    store = build_store(ds.X, ds.Y, tmp_path / "store", block_size=4096, seed=1)
    ref = DistributedGreedy(partitions=12).run(Objective(k=10), StoreSource(store))

    killed: list[int] = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
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
                          dashboard_address=None) as cluster, Client(cluster) as client:
            with DaskEngine(client=client) as engine:
                with pytest.raises(EngineError, match="out of memory"):
                    engine.map(_die, None, [0])
