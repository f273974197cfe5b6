"""Dask runs never wait forever: a scheduler address that accepts TCP but never answers, and a
cluster without any worker, each end in one EngineError within their deadlines."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from coreselect.engines import dask as dask_engine
from coreselect.errors import EngineError

pytestmark = pytest.mark.dask


def _silent_server():
    """A TCP server that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server


def test_silent_scheduler_times_out_in_one_line():
    server = _silent_server()
    try:
        start = time.monotonic()
        with pytest.raises(EngineError, match="did not answer within 2 s"):
            dask_engine.connect(f"tcp://127.0.0.1:{server.getsockname()[1]}", timeout=2)
        assert time.monotonic() - start < 60  # the 2 s deadline holds (a bound, not a speed)
    finally:
        server.close()


def test_cluster_without_workers_fails_instead_of_hanging(monkeypatch):
    from distributed import Client, LocalCluster

    monkeypatch.setattr(dask_engine, "POLL_SECONDS", 0.2)
    with LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        engine = dask_engine.DaskEngine(client=client)
        start = time.monotonic()
        with pytest.raises(EngineError, match="no worker for 1 s"):
            list(dask_engine.as_completed_watched(client, [client.submit(sum, [1, 2])],
                                                  grace=1.0))
        assert time.monotonic() - start < 60  # bounded, also on a busy machine
        monkeypatch.setattr(dask_engine, "NO_WORKERS_GRACE", 1.0)
        with pytest.raises(EngineError, match="no worker"):
            engine.map(lambda shared, task: task, None, [1, 2, 3])


def test_a_local_cluster_takes_no_fixed_port():
    """Its scheduler's HTTP server listens on a port the system gives it, not on Dask's 8787:
    with 8787 held (here, or by another test's cluster) it starts without a warning, on
    the loopback address."""
    import warnings

    held = socket.socket()
    try:
        held.bind(("127.0.0.1", 8787))
        held.listen(1)
    except OSError:
        pass  # held by someone else: taken all the same
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cluster = dask_engine.local_cluster(1, 1)
        try:
            assert not [w for w in caught if "8787" in str(w.message)], caught
            link = cluster.dashboard_link
            assert "127.0.0.1" in link and ":8787/" not in link, link
        finally:
            cluster.close()
    finally:
        held.close()
