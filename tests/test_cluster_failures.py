"""A real cluster (``dask scheduler`` and ``dask worker`` processes) losing a part of itself in
the middle of a selection over a store on a local S3 server, at a moment fixed by a hold hook
(``coreselect.io.files.checkpoint_once``: the first worker to start a task writes its pid and
waits), not by sleeps:

* a worker killed (SIGKILL) and a replacement started: the run finishes with the in-memory
  selection and objective (its tasks rerun elsewhere, its tiles re-read from the store);
* the scheduler killed: one line on stderr and exit 2, in bounded time;
* a scheduler address that accepts connections and never answers: one line and exit 2.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

from coreselect.cli import main  # noqa: E402
from coreselect.store import build_store  # noqa: E402

from _remote import KEY, SECRET, DaskCliCluster, Server  # noqa: E402

pytestmark = [pytest.mark.dask, pytest.mark.slow]

SRC = str(Path(__file__).resolve().parents[1] / "src")
MODES = {"rows": [], "distributed": ["--partitions", "4"]}


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def wait_for_file(path: Path, proc: subprocess.Popen, timeout: float = 600) -> str:
    """The content of ``path`` once a process has written it (bounded; the CLI must be alive)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before any worker held: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail("no worker reached the hold point")
        time.sleep(0.02)
    return path.read_text()


def _environment(url: str) -> dict:
    """What every process needs to reach the S3 server at ``url`` (credentials, endpoint, src)."""
    return {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": url,
            "PYTHONPATH": os.pathsep.join([SRC] + [p for p in os.environ.get(
                "PYTHONPATH", "").split(os.pathsep) if p])}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """An S3 server holding a store, and the same store built locally: one for the module (the
    runs only read them; starting the server and building cost seconds)."""
    server = Server()
    local = tmp_path_factory.mktemp("stores") / "local"
    try:
        with pytest.MonkeyPatch.context() as mp:
            for k, v in _environment(server.url).items():
                mp.setenv(k, v)
            mp.delenv("CORESELECT_STORAGE_OPTIONS", raising=False)
            server.fs().mkdir("data")
            rng = np.random.default_rng(11)
            Y = (rng.random((400, 4)) < 0.35).astype(int)
            X = rng.normal(size=(400, 40)) + Y @ rng.normal(size=(4, 40))
            kw = dict(block_size=10, row_block_size=100, seed=3)
            build_store(X, Y, local, **kw)
            build_store(X, Y, "s3://data/loss", **kw)
        yield {"server": server, "url": "s3://data/loss", "local": local}
    finally:
        server.stop()


@pytest.fixture
def setting(stores, tmp_path, monkeypatch):
    """The module's S3 store (also built locally), a fresh scheduler and two workers whose
    first task holds; the environment every process needs (credentials, endpoint, src)."""
    env = _environment(stores["server"].url)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CORESELECT_STORAGE_OPTIONS", raising=False)
    monkeypatch.delenv("CORESELECT_TEST_HOLD", raising=False)
    cluster = None
    try:
        hold = tmp_path / "hold"
        cluster = DaskCliCluster(tmp_path, 2, env=env, worker_env={
            "CORESELECT_TEST_HOLD": "dask-task", "CORESELECT_TEST_HOLD_FILE": str(hold)})
        yield {"cluster": cluster, "url": stores["url"], "local": stores["local"],
               "hold": hold, "env": {**os.environ, **env}}
    finally:
        if cluster is not None:
            cluster.stop()


def start_select(setting, mode: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "coreselect", "select", setting["url"], "-k", "5", "--mode", mode,
         "--engine", "dask", "--scheduler", setting["cluster"].address, "--json",
         *MODES[mode]], env=setting["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_worker_killed_mid_run_gives_the_selection(setting, mode, capsys):
    cluster = setting["cluster"]
    proc = start_select(setting, mode)
    try:
        pid = int(wait_for_file(setting["hold"], proc))
        assert pid in {w.pid for w in cluster.workers}  # a worker process, not the client
        os.kill(pid, signal.SIGKILL)
        cluster.start_worker("replacement")
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    code, ref, err = run(capsys, "select", setting["local"], "-k", 5, "--mode", mode, "--json",
                         *MODES[mode])
    assert code == 0, err
    r, c = json.loads(out), json.loads(ref)
    assert r["selected"] == c["selected"] and r["objective"] == c["objective"]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_scheduler_killed_mid_run_is_one_line(setting, mode):
    cluster = setting["cluster"]
    proc = start_select(setting, mode)
    try:
        wait_for_file(setting["hold"], proc)
        cluster.scheduler.send_signal(signal.SIGKILL)
        cluster.scheduler.wait(30)
        started = time.monotonic()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    elapsed = time.monotonic() - started
    said = f"exit {proc.returncode} after {elapsed:.1f} s; stderr: {err[-2000:]!r}"
    assert elapsed < 180, said  # bounded (the client gives up after CONNECT_TIMEOUT)
    assert proc.returncode == 2, said
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, said
    assert "scheduler" in err and out == "", said


def test_silent_scheduler_address_is_one_line(tmp_path, monkeypatch, capsys):
    """An address that accepts TCP and never answers the Dask handshake: the connect deadline,
    then one line and exit 2 from the CLI (the API's EngineError: test_dask_deadlines.py)."""
    import socket

    from coreselect.engines import dask as dask_engine

    monkeypatch.setattr(dask_engine, "CONNECT_TIMEOUT", 1.0)
    rng = np.random.default_rng(0)
    build_store(rng.normal(size=(50, 6)), (rng.random((50, 2)) < 0.5).astype(int),
                tmp_path / "s", row_block_size=25)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # connections wait in the backlog, never accepted nor answered
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        for mode in sorted(MODES):
            started = time.monotonic()
            code, out, err = run(capsys, "select", tmp_path / "s", "-k", 2, "--mode", mode,
                                 "--engine", "dask", "--scheduler", address, *MODES[mode])
            assert time.monotonic() - started < 90  # bounded: a hang guard, not a speed
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert "did not answer within 1 s" in err and "Traceback" not in err


# -- the client closed at a chosen moment (deterministic, no luck needed) ---------------------
# A scheduler that dies makes the client reconnect for a while and then close itself; what a
# run sees depends on the moment: cancelled futures (mid-wait), ``ClosedClientError`` (a step
# submitting its tasks), ``ValueError: No clients found`` (``distributed.wait`` looking up the
# default client). Each moment is forced here by closing the run's own client there.
def _close_then(real, when):
    """``real`` wrapped so that the client it is given (or its self's) is closed first on the
    call number ``when``."""
    calls = {"n": 0}

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == when:
            from distributed import default_client

            client = getattr(args[0], "client", None) if args else None
            (client or default_client()).close()
        return real(*args, **kwargs)
    return wrapped


@pytest.mark.parametrize("mode,moment", [("rows", "wait"), ("distributed", "wait"),
                                         ("rows", "step-submit")])
def test_client_closed_at_an_unlucky_moment_is_one_line(tmp_path, capsys, monkeypatch, mode,
                                                        moment):
    import distributed
    from distributed import LocalCluster

    from coreselect.engines.dask_rows import DaskRows

    rng = np.random.default_rng(5)
    Y = (rng.random((120, 3)) < 0.4).astype(int)
    build_store(rng.normal(size=(120, 12)) + Y @ rng.normal(size=(3, 12)), Y, tmp_path / "s",
                block_size=4, row_block_size=40)
    if moment == "wait":  # the first wait of the run: the client is gone inside it
        monkeypatch.setattr(distributed, "wait", _close_then(distributed.wait, 1))
    else:  # the second greedy step (rows mode submits tasks step after step): refused
        monkeypatch.setattr(DaskRows, "map_reduce", _close_then(DaskRows.map_reduce, 2))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster:
        code, out, err = run(capsys, "select", tmp_path / "s", "-k", 3, "--mode", mode,
                             "--engine", "dask", "--scheduler", cluster.scheduler_address,
                             *MODES[mode])
    said = f"exit {code}; stderr: {err[-2000:]!r}"
    assert code == 2, said
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, said
    assert "scheduler" in err and "internal error" not in err, said
