"""Object storage on a bad day (moto's S3 server on 127.0.0.1): a server that freezes
mid-build or mid-checkpoint (SIGSTOP: connections accepted, nothing answered) ends the run
within its deadlines in one line, as a dead one does; a build interrupted by a signal, or
whose server dies, leaves no object under its target nor its temporary prefix (a later build
removes a stale prefix it proves its own); a socket that never answers hits the default
deadlines' wording."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

from coreselect.errors import CheckpointError, OutputError, StoreError  # noqa: E402
from coreselect.store import build_store, open_store  # noqa: E402
from coreselect.store import fs as fs_module  # noqa: E402

from _remote import KEY, SECRET, Server  # noqa: E402

SMALL = {"config_kwargs": {"connect_timeout": 1, "read_timeout": 1,
                           "retries": {"max_attempts": 1}}, "deadline": 4}


@pytest.fixture
def server(monkeypatch):
    server = Server()
    server.fs().mkdir("data")
    for name, value in (("AWS_ACCESS_KEY_ID", KEY), ("AWS_SECRET_ACCESS_KEY", SECRET),
                        ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_ENDPOINT_URL", server.url)):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CORESELECT_STORAGE_OPTIONS", raising=False)
    monkeypatch.setattr(fs_module, "_FS", {})
    try:
        yield server
    finally:
        server.stop()


def _data(n=60, d=10):
    rng = np.random.default_rng(0)
    Y = (rng.random((n, 3)) < 0.4).astype(int)
    return rng.normal(size=(n, d)) + Y @ rng.normal(size=(3, d)), Y


def _left(server, name: str) -> list[str]:
    return [p for p in server.fs().find("data") if p.startswith(f"data/{name}")]


class FrozenSocket:
    """A socket on 127.0.0.1 that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                continue

    def close(self):
        self.stop.set()
        self.thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


def test_a_socket_that_never_answers_ends_within_the_deadlines(monkeypatch):
    frozen = FrozenSocket()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", frozen.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        monkeypatch.setattr(fs_module, "_FS", {})
        start = time.monotonic()
        with pytest.raises(StoreError, match="no answer from the server"):
            open_store("s3://data/s", storage_options=SMALL)
        with pytest.raises((StoreError, CheckpointError), match="no answer from the server"):
            from coreselect import select as _select
            select = functools.partial(_select, calibration="information")  # dense codes: cmim records no checkpoint

            X, Y = _data()
            select(X, Y, k=2, checkpoint="s3://data/c",
                   storage_options=SMALL) if False else _checkpoint_read("s3://data/c")
        assert time.monotonic() - start < 30
    finally:
        frozen.close()


def _checkpoint_read(url):
    from coreselect.selection.checkpoint import Checkpoint

    return Checkpoint(url, SMALL).read()


def test_the_default_deadlines_are_set():
    options, deadline = fs_module._with_defaults("s3", {})
    assert options["config_kwargs"]["read_timeout"] == fs_module.READ_TIMEOUT
    assert options["config_kwargs"]["connect_timeout"] == fs_module.CONNECT_TIMEOUT
    assert deadline == fs_module.DEADLINE
    # storage options win
    options, deadline = fs_module._with_defaults("s3", {"deadline": 7, "config_kwargs": {
        "read_timeout": 2}})
    assert options["config_kwargs"]["read_timeout"] == 2 and deadline == 7
    # a worst case under the 150 s: two tries of a read timeout, and connect
    worst = fs_module.MAX_ATTEMPTS * (fs_module.READ_TIMEOUT + fs_module.CONNECT_TIMEOUT)
    assert worst < 150


def test_a_server_frozen_mid_build_ends_it_and_the_next_build_cleans(server, monkeypatch):
    import s3fs

    X, Y = _data()
    real = s3fs.S3FileSystem._copy if hasattr(s3fs.S3FileSystem, "_copy") else None
    calls = {"n": 0}

    async def freezing_copy(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            os.kill(server.proc.pid, signal.SIGSTOP)
        return await real(self, *a, **kw)

    with monkeypatch.context() as m:
        m.setattr(s3fs.S3FileSystem, "_copy", freezing_copy)
        start = time.monotonic()
        with pytest.raises(StoreError, match="no answer from the server.*next build"):
            build_store(X, Y, "s3://data/s", block_size=3, storage_options=SMALL)
        assert time.monotonic() - start < 60
    os.kill(server.proc.pid, signal.SIGCONT)
    monkeypatch.setattr(fs_module, "_FS", {})
    assert _left(server, "s")  # what the frozen server kept
    build_store(X, Y, "s3://data/s", block_size=3)  # the stale prefix is proved ours
    assert not [p for p in _left(server, "s") if "coreselect-tmp" in p]
    assert open_store("s3://data/s").verify()["files"] > 3


def test_a_stale_prefix_not_proved_ours_is_left(server):
    fs = server.fs()
    fs.pipe_file("data/s.coreselect-tmp-1-abc/notes.txt", b"user")
    fs.pipe_file("data/s.coreselect-tmp-2-abc/.coreselect-owned.json",
                 json.dumps({"target": "data/other", "host": socket.gethostname(), "pid": 1,
                             "created": 0}).encode())
    X, Y = _data()
    build_store(X, Y, "s3://data/s", block_size=3)
    left = sorted(_left(server, "s.coreselect-tmp"))
    assert left == ["data/s.coreselect-tmp-1-abc/notes.txt",
                    "data/s.coreselect-tmp-2-abc/.coreselect-owned.json"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_remote_build_leaves_nothing(server, tmp_path, signum):
    X, Y = _data()
    data = tmp_path / "d.npz"
    from coreselect.io import from_arrays, write

    write(from_arrays(X, Y, name="d"), tmp_path / "d.arff")
    hold = tmp_path / "hold"
    env = {**os.environ, "CORESELECT_TEST_HOLD": "remote-staged",
           "CORESELECT_TEST_HOLD_FILE": str(hold), "AWS_ENDPOINT_URL": server.url}
    proc = subprocess.Popen([sys.executable, "-m", "coreselect", "store", "build",
                             str(tmp_path / "d.arff"), "s3://data/sig", "--block-size", "3"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not hold.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _left(server, "sig.coreselect-tmp")  # staged
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert _left(server, "sig") == []


def test_a_server_dying_mid_build_leaves_what_the_next_build_removes(server, tmp_path):
    """SIGKILL of the server at the hold: the build fails in one line (nothing answers);
    a new server on the same storage is not possible with moto, so a dead *build* stands
    for it: its prefix, of a pid that no longer runs, is removed by the next build."""
    X, Y = _data()
    write_arff = tmp_path / "d.arff"
    from coreselect.io import from_arrays, write

    write(from_arrays(X, Y, name="d"), write_arff)
    hold = tmp_path / "hold"
    env = {**os.environ, "CORESELECT_TEST_HOLD": "remote-staged",
           "CORESELECT_TEST_HOLD_FILE": str(hold), "AWS_ENDPOINT_URL": server.url}
    proc = subprocess.Popen([sys.executable, "-m", "coreselect", "store", "build",
                             str(write_arff), "s3://data/dead", "--block-size", "3"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not hold.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.kill()  # SIGKILL: nothing cleans up
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _left(server, "dead.coreselect-tmp")
    build_store(X, Y, "s3://data/dead", block_size=3)
    assert not _left(server, "dead.coreselect-tmp")
    assert open_store("s3://data/dead").verify()["files"] > 3


def test_a_checkpoint_write_to_a_frozen_server_ends_in_one_line(server, monkeypatch):
    from coreselect import select as _select
    select = functools.partial(_select, calibration="information")  # dense codes: cmim records no checkpoint

    X, Y = _data()
    monkeypatch.setenv("CORESELECT_STORAGE_OPTIONS", json.dumps(SMALL))
    select(X, Y, k=2, checkpoint="s3://data/ck")  # a first, clean run
    os.kill(server.proc.pid, signal.SIGSTOP)
    start = time.monotonic()
    with pytest.raises((StoreError, OutputError, CheckpointError),
                       match="no answer from the server"):
        select(X, Y, k=3, checkpoint="s3://data/ck2")
    assert time.monotonic() - start < 60
