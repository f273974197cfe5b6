"""A Dask scheduler killed in the middle of a run (SIGKILL, at several moments, under each way
the engines wait for results) is one EngineError naming the lost scheduler: never an internal
error (FuturesCancelledError ... scheduler-connection-lost) and never a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.dask


def _slow(shared, task):
    import time as _t

    _t.sleep(0.3)
    return task


@pytest.fixture
def cluster(tmp_path):
    sched_file = tmp_path / "scheduler.json"
    here = os.path.dirname(os.path.abspath(__file__))  # the scheduler unpickles _slow by module name
    path = os.pathsep.join([here, os.environ.get("PYTHONPATH", "")] + sys.path)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s", "PYTHONPATH": path}
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                              "--port", "0", "--dashboard-address", ":0", "--scheduler-file", str(sched_file)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600  # the scheduler's start-up: waited for, a hang guard
    while not (sched_file.exists() and sched_file.stat().st_size):
        if sched.poll() is not None or time.monotonic() > deadline:
            sched.kill()
            sched.wait(30)
            pytest.fail("the dask scheduler did not start")
        time.sleep(0.05)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                               str(sched_file), "--nthreads", "1", "--no-nanny", "--no-dashboard",
                               "--death-timeout", "5"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield sched, sched_file
    finally:
        for p in (worker, sched):
            if p.poll() is None:
                p.kill()
            p.wait(30)


@pytest.mark.parametrize("delay", [0.5, 1.5])
@pytest.mark.parametrize("how", ["map", "result_watched"])
def test_killed_scheduler_is_one_engine_error(cluster, delay, how):
    from distributed import Client

    from coreselect.engines.dask import DaskEngine, result_watched
    from coreselect.errors import EngineError

    sched, sched_file = cluster
    client = Client(scheduler_file=str(sched_file), timeout=20)
    try:
        try:
            client.wait_for_workers(1, timeout=180)
        except Exception as exc:  # noqa: BLE001 - the machine, not the code under test
            pytest.skip(f"no Dask worker joined within 180 s on this machine: {exc}")
        threading.Timer(delay, lambda: os.kill(sched.pid, signal.SIGKILL)).start()
        started = time.monotonic()
        with pytest.raises(EngineError, match="scheduler|cluster failed") as info:
            if how == "map":
                DaskEngine(client=client).map(_slow, None, list(range(40)))
            else:
                fut = client.submit(_slow, None, 1, pure=False)
                fut2 = client.submit(lambda x: time.sleep(30) or x, fut, pure=False)
                result_watched(client, fut2, grace=60)
        assert time.monotonic() - started < 120  # bounded: a hang guard, not a speed target
        assert "\n" not in str(info.value)
    finally:
        try:
            client.close(timeout=2)
        except Exception:  # noqa: BLE001 - the scheduler is gone
            pass
