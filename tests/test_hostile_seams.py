"""Seams the hostile campaign found: huge --bins, an HTTP server given as --scheduler,
--export .xmc, the deadlines stated in --help as the code sets them."""

from __future__ import annotations

import re
import socket
import threading

import numpy as np
import pytest
from click.testing import CliRunner

from coreselect.cli import cli
from coreselect.errors import EngineError, InputError


def _arff(tmp_path):
    from coreselect.io import from_arrays, write

    rng = np.random.default_rng(0)
    Y = (rng.random((60, 3)) < 0.4).astype(int)
    X = rng.integers(0, 4, (60, 8)) + Y @ rng.integers(0, 2, (3, 8))
    path = tmp_path / "d.arff"
    write(from_arrays(X.astype(float), Y, name="d"), path)
    return path


@pytest.mark.parametrize("bins", [2**31, 2**64, 2**70])
def test_huge_bins_are_refused_in_one_line(tmp_path, bins):
    from coreselect import select

    data = _arff(tmp_path)
    for args in (["select", str(data), "--labels", "3", "-k", "2", "--bins", str(bins)],
                 ["store", "build", str(data), str(tmp_path / "s"), "--labels", "3",
                  "--bins", str(bins)]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2 and "--bins" in r.output and "n_bins" not in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()
    with pytest.raises(InputError, match="n_bins"):
        select(np.random.rand(20, 4), np.random.randint(0, 2, (20, 2)), k=2, n_bins=bins)


def test_an_http_server_as_scheduler_is_named():
    from coreselect.engines.dask import connect

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()

    def serve():
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                                 b"Connection: close\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(EngineError, match="not a Dask scheduler: it is an HTTP server"):
            connect(f"tcp://127.0.0.1:{sock.getsockname()[1]}", 5)
    finally:
        stop.set()
        thread.join()
        sock.close()


def test_export_to_xmc(tmp_path):
    from coreselect.io import read

    data = _arff(tmp_path)
    r = CliRunner().invoke(cli, ["select", str(data), "--labels", "3", "-k", "3", "--quiet",
                                 "--export", str(tmp_path / "r.xmc")])
    assert r.exit_code == 0, r.output
    back = read(tmp_path / "r.xmc")
    assert back.X.shape == (60, 3) and back.Y.shape == (60, 3)


def test_help_states_the_default_deadlines():
    from coreselect.store import fs

    numbers = (f"{fs.CONNECT_TIMEOUT} s without a connection, {fs.READ_TIMEOUT} s without an "
               f"answer ({fs.MAX_ATTEMPTS} tries), {fs.DEADLINE} s in all")
    for command in (["store", "build", "--help"], ["select", "--help"]):
        text = " ".join(CliRunner().invoke(cli, command).output.split())
        assert numbers in text, command
