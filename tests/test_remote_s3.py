"""Column stores on a real S3 API: moto's server mode on 127.0.0.1 (a separate process per
session, plus one per failure that needs its own server).

A store built at ``s3://bucket/prefix`` selects exactly what the same store in a local
folder selects (every mode; rows with Dask workers that read their tiles from S3 themselves),
and every failure (truncated, missing or altered object, wrong credentials, no bucket, a
server that stops answering) is one line and exit 2 from the command line, a
:class:`~coreselect.errors.StoreError` / :class:`~coreselect.errors.InputError` from Python,
with no credential in either.
"""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

from coreselect import select  # noqa: E402
from coreselect.cli import main  # noqa: E402
from coreselect.errors import CoreselectError, InputError, StoreError  # noqa: E402
from coreselect.store import build_store, open_store  # noqa: E402

from _remote import KEY, SECRET, Server, s3_fixtures  # noqa: E402


s3, s3_env = s3_fixtures("data")


def _data(n=300, d=30, labels=4, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, labels)) < 0.35).astype(int)
    X = rng.normal(size=(n, d)) + Y @ rng.normal(size=(labels, d)) * 1.2
    X[:, 3] = 1.0  # a constant column
    return X, Y


_COUNTER = iter(range(10**6))


def _prefix(name: str) -> str:
    return f"s3://data/{name}-{next(_COUNTER)}"


@pytest.fixture(scope="module")
def pair(tmp_path_factory, s3):
    """The same data as a local store and an S3 store (3 column blocks x 3 row blocks)."""
    X, Y = _data()
    local = tmp_path_factory.mktemp("remote") / "store"
    kw = dict(block_size=11, row_block_size=100, seed=3, name="pair")
    build_store(X, Y, local, **kw)
    url = _prefix("pair")
    build_store(X, Y, url, storage_options={
        "key": KEY, "secret": SECRET, "endpoint_url": s3.url,
        "client_kwargs": {"region_name": "us-east-1"}}, **kw)
    return local, url


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def one_line_exit_2(capsys, *args) -> str:
    code, out, err = run(capsys, *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coreselect: error: "), err
    assert "Traceback" not in err and SECRET not in err + out and KEY not in err + out
    return lines[0]


# -- the same selection ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["centralized", "distributed", "streaming", "rows"])
def test_s3_store_selects_as_the_local_store(pair, mode):
    local, url = pair
    a = select(str(local), k=5, mode=mode)
    b = select(url, k=5, mode=mode)
    assert list(a.selected) == list(b.selected)
    assert a.objective == b.objective


def test_build_verify_select_from_the_command_line(s3, tmp_path, capsys):
    X, Y = _data(seed=1)
    from coreselect.io import from_arrays, write

    path = tmp_path / "d.svm"
    write(from_arrays(X, Y, name="d"), path)
    url = _prefix("cli")
    code, out, err = run(capsys, "store", "build", path, url, "--row-block-size", 128, "-q")
    assert code == 0, err
    assert not (tmp_path / "s3:").exists() and not os.path.exists("s3:")
    code, out, err = run(capsys, "store", "verify", url)
    assert code == 0 and out.startswith(f"{url}: ok"), (out, err)
    local = tmp_path / "local"
    assert run(capsys, "store", "build", path, local, "--row-block-size", 128, "-q")[0] == 0
    for mode in ("centralized", "rows"):
        code, out, err = run(capsys, "select", url, "-k", 4, "--mode", mode, "--json")
        assert code == 0, err
        code2, out2, _ = run(capsys, "select", local, "-k", 4, "--mode", mode, "--json")
        r, r2 = json.loads(out), json.loads(out2)
        assert r["selected"] == r2["selected"] and r["objective"] == r2["objective"]


def test_build_is_all_or_nothing(s3, monkeypatch):
    """A build that fails while uploading leaves no object under the prefix, nor its
    temporary prefix; the prefix then takes a new build."""
    import s3fs

    X, Y = _data(n=50, d=8)
    url = _prefix("atomic")
    calls = {"n": 0}
    real = s3fs.S3FileSystem.copy

    def failing_copy(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("connection lost")
        return real(self, *a, **kw)

    from coreselect.store import fs as fs_module

    with monkeypatch.context() as m:
        m.setattr(s3fs.S3FileSystem, "copy", failing_copy)
        m.setattr(fs_module, "_FS", {})  # a new instance, with the failing copy
        with pytest.raises(StoreError):
            build_store(X, Y, url, block_size=3)
    fs = s3.fs()
    left = [p for p in fs.find("data") if p.startswith(url[5:])]
    assert left == []
    with pytest.raises(StoreError, match="no store.json"):
        open_store(url)
    build_store(X, Y, url, block_size=3)  # the prefix is free
    assert open_store(url).verify()["files"] > 3


def test_workers_get_the_url_not_the_data(pair):
    """A row-shard loader pickles the URL and storage options (a few hundred bytes)."""
    import pickle

    from coreselect.selection.sources import StoreSource

    _, url = pair
    shards, _ = StoreSource(url).row_shards("auto")
    blob = pickle.dumps(shards.loader(0))
    assert len(blob) < 2000 and url.encode() in blob
    features, labels = pickle.loads(blob)()
    assert features.codes.shape == (100, 30)
    ref = open_store(url, storage_options={"key": KEY, "secret": SECRET}).ref
    assert SECRET not in repr(ref)


@pytest.mark.dask
def test_dask_workers_read_tiles_from_s3(pair):
    """--mode rows on a LocalCluster of 2 worker processes: each opens the S3 store."""
    local, url = pair
    a = select(str(local), k=5, mode="rows")
    b = select(url, k=5, mode="rows", engine="dask", n_workers=2)
    assert list(a.selected) == list(b.selected) and a.objective == b.objective


# -- failures: one line, exit 2, a typed error -------------------------------------------------
def _copy_store(s3, url) -> str:
    fs = s3.fs()
    new = _prefix("damaged")
    fs.copy(url[5:], new[5:], recursive=True)
    return new


def _tile_rel(url, s3) -> str:
    return "blocks/b000001/r000001/indices.npy"


@pytest.mark.parametrize("damage", ["truncated", "missing", "checksum"])
def test_damaged_object(pair, s3, capsys, damage):
    _, url = pair
    new = _copy_store(s3, url)
    fs = s3.fs()
    rel = _tile_rel(new, s3)
    key = f"{new[5:]}/{rel}"
    body = fs.cat(key)
    if damage == "truncated":
        fs.pipe(key, body[:-4])
    elif damage == "missing":
        fs.rm(key)
    else:  # same size, one byte changed: only the checksum sees it
        fs.pipe(key, body[:-1] + bytes([body[-1] ^ 1]))
    with pytest.raises(StoreError) as exc:
        open_store(new).verify()
    assert "block 1, row block 1" in str(exc.value)
    word = {"truncated": "truncated", "missing": "missing", "checksum": "checksum"}[damage]
    assert word in str(exc.value)
    for args in (("store", "verify", new), ("select", new, "-k", 3, "--mode", "rows")):
        line = one_line_exit_2(capsys, *args)
        assert "block 1, row block 1" in line and word in line


def test_object_replaced_after_open_is_caught_on_read(pair, s3):
    """Remote reads are checksummed every time: an object changed after open (same size)."""
    _, url = pair
    new = _copy_store(s3, url)
    store = open_store(new)
    store.read_tile(1, 0, 30)
    fs = s3.fs()
    key = f"{new[5:]}/blocks/b000000/r000001/data.npy"
    body = fs.cat(key)
    fs.pipe(key, body[:-1] + bytes([body[-1] ^ 3]))
    with pytest.raises(StoreError, match="checksum"):
        store.read_tile(1, 0, 30)


def test_bucket_that_does_not_exist(s3, capsys, tmp_path):
    X, Y = _data(n=40, d=5)
    with pytest.raises(InputError, match="bucket 'nobucket' does not exist"):
        build_store(X, Y, "s3://nobucket/x")
    with pytest.raises(StoreError, match="bucket 'nobucket' does not exist"):
        open_store("s3://nobucket/x")
    assert "does not exist" in one_line_exit_2(capsys, "select", "s3://nobucket/x", "-k", 2)
    assert "does not exist" in one_line_exit_2(capsys, "store", "verify", "s3://nobucket/x")


def test_prefix_that_holds_objects_is_not_overwritten(pair, s3, capsys, tmp_path):
    _, url = pair
    X, Y = _data(n=40, d=5)
    before = s3.fs().cat(f"{url[5:]}/store.json")
    with pytest.raises(InputError, match="already holds objects"):
        build_store(X, Y, url)
    assert s3.fs().cat(f"{url[5:]}/store.json") == before


def test_wrong_credentials(tmp_path, capsys, monkeypatch):
    """A server that checks signatures and knows no key: every request is refused."""
    server = Server({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        with pytest.raises(StoreError) as exc:
            open_store("s3://data/x")
        assert "access denied" in str(exc.value) and SECRET not in str(exc.value)
        opts = {"key": "AKIDOTHERKEY", "secret": "another-secret-value"}
        with pytest.raises(CoreselectError) as exc:
            open_store("s3://data/x", storage_options=opts)
        assert "another-secret-value" not in str(exc.value)
        line = one_line_exit_2(capsys, "select", "s3://data/x", "-k", 2)
        assert "access denied" in line
        code, out, err = run(capsys, "select", "s3://data/x", "-k", 2, "--verbose")
        assert code == 2 and SECRET not in out + err and KEY not in out + err
        line = one_line_exit_2(capsys, "store", "build", "emotions", "s3://data/x")
        assert "access denied" in line
    finally:
        server.stop()


def test_server_that_stops_answering(tmp_path, capsys, monkeypatch):
    """SIGSTOP: connections are accepted, nothing answers. Small timeouts and one attempt
    (storage options) bound the wait; one line, exit 2."""
    server = Server()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        server.fs().mkdir("data")
        X, Y = _data(n=40, d=5)
        build_store(X, Y, "s3://data/s")
        os.kill(server.proc.pid, signal.SIGSTOP)
        opts = {"config_kwargs": {"connect_timeout": 1, "read_timeout": 1,
                                  "retries": {"max_attempts": 1}}, "retries": 1}
        start = time.monotonic()
        with pytest.raises(StoreError, match="no answer from the server"):
            open_store("s3://data/s", storage_options=opts)
        print("api", time.monotonic() - start)
        monkeypatch.setenv("CORESELECT_STORAGE_OPTIONS", json.dumps(opts))
        line = one_line_exit_2(capsys, "select", "s3://data/s", "-k", 2)
        assert "no answer from the server" in line
        assert time.monotonic() - start < 90  # bounded (a hang guard, not a speed target)
    finally:
        server.stop()


def test_the_server_chooses_its_own_port(monkeypatch):
    """No port is picked here by binding one and releasing it for the server to take (a test
    running in parallel could take it first): the server binds port 0 and says which."""
    import socket

    real = socket.socket.bind

    def bind(self, address):
        if isinstance(address, tuple) and address[1] == 0:
            raise AssertionError("a port picked by bind-and-release")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "bind", bind)
    server = Server()
    try:
        server.fs().mkdir("ports")
        assert server.fs().ls("") == ["ports"]
    finally:
        server.stop()
