"""URLs are never taken for paths (issue 21): every ``scheme://`` goes through fsspec or is
refused in one line naming the scheme and what to install; ``memory://`` and ``file://``
stores select what a local folder selects; no message shows a credential.
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as hst

from coreselect import select
from coreselect.cli import main
from coreselect.errors import InputError, StoreError
from coreselect.store import StoreRef, build_store, open_store
from coreselect.store.fs import is_url, local_path, scheme, scrub


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _data(n=120, d=14, labels=3, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, labels)) < 0.4).astype(int)
    X = rng.normal(size=(n, d)) + Y @ rng.normal(size=(labels, d))
    return X, Y


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- never a folder named "s3:" ------------------------------------------------------------------
@pytest.mark.parametrize("url,hint", [
    ("gs://bucket/prefix", "gcsfs"), ("az://container/prefix", "adlfs"),
    ("abfs://container/prefix", "adlfs"), ("nosuchscheme://x/y", "nosuchscheme"),
])
def test_unknown_or_missing_backends_are_refused(in_tmp, capsys, url, hint):
    import importlib.util

    if hint in ("gcsfs", "adlfs") and importlib.util.find_spec(hint) is not None:
        pytest.skip(f"{hint} is installed here")
    X, Y = _data()
    for call in (lambda: open_store(url), lambda: build_store(X, Y, url),
                 lambda: select(url, k=2)):
        with pytest.raises(InputError) as exc:
            call()
        assert scheme(url) in str(exc.value) and hint in str(exc.value)
    for args in (("select", url, "-k", 2), ("store", "verify", url),
                 ("store", "info", url), ("store", "build", "emotions", url)):
        code, out, err = run(capsys, *args)
        assert code == 2 and len(err.strip().splitlines()) == 1 and hint in err, err
    assert list(in_tmp.iterdir()) == []  # nothing written here


@pytest.mark.parametrize("option", ["--out", "--export", "--coverage", "--labels"])
def test_url_outputs_of_select_are_refused(in_tmp, capsys, option):
    code, out, err = run(capsys, "select", "emotions", "-k", 2, option, "s3://bucket/out.json")
    assert code == 2 and "s3://" in err and len(err.strip().splitlines()) == 1
    assert list(in_tmp.iterdir()) == []


def test_url_data_of_store_build_is_refused(in_tmp, capsys):
    code, out, err = run(capsys, "store", "build", "memory://data.arff", in_tmp / "st")
    assert code == 2 and "memory://" in err
    assert list(in_tmp.iterdir()) == []


@given(hst.from_regex(r"[a-z][a-z0-9+.\-]{0,8}", fullmatch=True), hst.text(max_size=20))
def test_scheme_and_paths(proto, rest):
    url = f"{proto}://{rest}"
    assert scheme(url) == proto
    assert is_url(url) == (proto not in ("file", "local"))
    assert not is_url(f"./{proto}:/{rest}") and scheme(rest.replace("://", "")) is None


def test_file_urls_are_local_folders(tmp_path):
    X, Y = _data()
    target = tmp_path / "st"
    st = build_store(X, Y, f"file://{target}", block_size=5)
    assert type(st).__name__ == "ColumnStore" and (target / "store.json").is_file()
    assert local_path(f"file://{target}") == str(target)
    a, b = select(str(target), k=3), select(f"file://{target}", k=3)
    assert list(a.selected) == list(b.selected)


@pytest.mark.parametrize("mode", ["centralized", "distributed", "streaming", "rows"])
def test_memory_store_selects_as_a_local_store(tmp_path, mode):
    X, Y = _data(seed=2)
    kw = dict(block_size=4, row_block_size=50, seed=1)
    build_store(X, Y, tmp_path / "st", **kw)
    url = f"memory://coreselect-tests/{mode}-{os.getpid()}"
    build_store(X, Y, url, **kw)
    store = open_store(url)
    assert store.verify()["files"] == open_store(tmp_path / "st").verify()["files"]
    a = select(str(tmp_path / "st"), k=4, mode=mode)
    b = select(url, k=4, mode=mode, engine="local")
    assert list(a.selected) == list(b.selected) and a.objective == b.objective
    # what travels to a worker: the URL, never the data
    assert len(pickle.dumps(store.ref)) < 500
    with pytest.raises(InputError, match="already holds objects"):
        build_store(X, Y, url, **kw)


def test_memory_store_damage_is_caught_on_every_read():
    import fsspec

    X, Y = _data(seed=3)
    url = f"memory://coreselect-tests/damage-{os.getpid()}"
    build_store(X, Y, url, block_size=4, row_block_size=50)
    store = open_store(url)
    store.read_tile(0, 0, 14)
    fs = fsspec.filesystem("memory")
    key = f"/coreselect-tests/damage-{os.getpid()}/blocks/b000001/r000000/data.npy"
    body = fs.cat(key)
    fs.pipe(key, body[:-1] + bytes([body[-1] ^ 1]))
    with pytest.raises(StoreError, match="block 1, row block 0 is damaged.*checksum"):
        store.read_tile(0, 0, 14)
    fs.rm(f"/coreselect-tests/damage-{os.getpid()}/store.json")
    with pytest.raises(StoreError, match="no store.json"):
        open_store(url)


@pytest.mark.parametrize("damaged", [None, "blocks/b000002/r000001/indices.npy",
                                     "labels/r000000/data.npy", "order.npy", "n_codes.npy"])
def test_memory_store_verify_reads_each_object_once(capsys, damaged):
    """``store verify URL``: every object fetched once, no extra header reads, and every
    checksum still verified (a damaged object is one line, exit 2)."""
    import collections

    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    X, Y = _data(seed=4)
    prefix = f"coreselect-tests/verify-once-{os.getpid()}-{damaged is None}-{str(damaged)[:6]}"
    url = f"memory://{prefix}"
    build_store(X, Y, url, block_size=4, row_block_size=50)
    fs = fsspec.filesystem("memory")
    if damaged:
        key = f"/{prefix}/{damaged}"
        body = fs.cat(key)
        fs.pipe(key, body[:-1] + bytes([body[-1] ^ 1]))
    reads = collections.Counter()
    original = MemoryFileSystem.cat_file

    def counted(self, path, start=None, end=None, **kw):
        reads[(path.split(prefix + "/")[-1], start is not None or end is not None)] += 1
        return original(self, path, start=start, end=end, **kw)

    try:
        MemoryFileSystem.cat_file = counted
        code, out, err = run(capsys, "store", "verify", url)
    finally:
        MemoryFileSystem.cat_file = original
    if damaged:
        assert code == 2 and "checksum" in err and len(err.strip().splitlines()) == 1, err
        return
    assert code == 0 and "ok" in out, err
    store = open_store(url)
    full = collections.Counter({k[0]: v for k, v in reads.items() if not k[1]})
    assert full == collections.Counter({rel: 1 for rel in [*store.meta["files"], "store.json"]})
    headers = [k[0] for k in reads if k[1]]  # the open's shape check: one header each
    assert sorted(headers) == sorted(set(headers)) and len(headers) == len(store.meta["files"])
    # metadata read before verify() (cached on the store) is fetched and checked again, once
    _ = store.order, store.n_codes, store.label_n_codes
    reads.clear()
    try:
        MemoryFileSystem.cat_file = counted
        store.verify()
    finally:
        MemoryFileSystem.cat_file = original
    assert reads == collections.Counter({(rel, False): 1 for rel in store.meta["files"]})
    key = f"/{prefix}/order.npy"
    body = fs.cat(key)
    fs.pipe(key, body[:-1] + bytes([body[-1] ^ 1]))
    with pytest.raises(StoreError, match="order.npy fails its checksum"):
        store.verify()


def test_url_out_of_evaluate_is_refused(in_tmp, capsys):
    from coreselect.evaluation.report import report_paths

    code, out, err = run(capsys, "evaluate", "emotions", "--methods", "random", "--folds", 2,
                         "--out", "s3://bucket/report")
    assert code == 2 and "s3://" in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(InputError, match="gs://"):
        report_paths("gs://bucket/x", sweep=False)
    assert list(in_tmp.iterdir()) == []  # no folder named "s3:"


@pytest.mark.parametrize("var", ["COREDATA_HOME", "XDG_CACHE_HOME"])
def test_url_dataset_cache_is_refused(in_tmp, capsys, monkeypatch, var):
    monkeypatch.delenv("COREDATA_HOME", raising=False)
    monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
    monkeypatch.setenv(var, "s3://bucket/cache")
    monkeypatch.setenv("COREDATA_MIRROR", f"file://{in_tmp}/no-mirror")  # never the network
    code, out, err = run(capsys, "datasets", "fetch", "emotions")
    assert code == 2 and f"{var}=s3://" in err and len(err.strip().splitlines()) == 1, err
    assert list(in_tmp.iterdir()) == []


# -- credentials never shown ---------------------------------------------------------------------
@given(user=hst.from_regex(r"[A-Za-z0-9_]{1,12}", fullmatch=True),
       password=hst.from_regex(r"[A-Za-z0-9_%!~*]{4,20}", fullmatch=True),
       name=hst.sampled_from(["key", "secret", "token", "X-Amz-Signature", "sig",
                              "AWSAccessKeyId", "password", "sas_token"]))
def test_scrub_removes_credentials(user, password, name):
    text = (f"cannot read s3://{user}:{password}@bucket/p?{name}={password}&x=1 "
            f"and https://host/p?a=1&{name}={password}")
    out = scrub(text)
    assert password not in out and f"{user}:" not in out
    assert "x=1" in out and "a=1" in out  # other parameters are kept


def test_secret_storage_options_are_scrubbed_and_never_in_a_repr():
    ref = StoreRef("s3://b/p", {"key": "AKIDX", "secret": "very-secret-value"})
    assert "very-secret-value" not in repr(ref) and ref == StoreRef("s3://b/p")
    assert scrub("failed with very-secret-value", ["very-secret-value"]) == "failed with ***"


def test_messages_of_urls_with_passwords(capsys, in_tmp):
    url = "memory://user:hunter2secret@nowhere/store"
    with pytest.raises(StoreError) as exc:
        open_store(url)
    assert "hunter2secret" not in str(exc.value)
    code, out, err = run(capsys, "select", url, "-k", 2)
    assert code == 2 and "hunter2secret" not in out + err


def test_storage_options_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("CORESELECT_STORAGE_OPTIONS", "[1, 2]")
    with pytest.raises(InputError, match="JSON object"):
        open_store("memory://x/y")
    code, out, err = run(capsys, "select", "memory://x/y", "-k", 2)
    assert code == 2 and "CORESELECT_STORAGE_OPTIONS" in err


@pytest.mark.parametrize("error", [OSError("connection lost"), KeyboardInterrupt()])
def test_a_build_that_fails_while_publishing_leaves_nothing(monkeypatch, error):
    """Failing at the third copy (or interrupted there, as SIGTERM unwinds the command):
    no object under the prefix nor under its temporary prefix."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    from coreselect.store import fs as fs_module

    X, Y = _data(n=40, d=6)
    url = f"memory://coreselect-tests/fail-{type(error).__name__}-{os.getpid()}"
    calls = {"n": 0}
    real = MemoryFileSystem.copy

    def failing(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise error
        return real(self, *a, **kw)

    monkeypatch.setattr(MemoryFileSystem, "copy", failing)
    monkeypatch.setattr(fs_module, "_FS", {})
    with pytest.raises((StoreError, KeyboardInterrupt)):
        build_store(X, Y, url, block_size=2)
    memfs = fsspec.filesystem("memory")
    assert not [p for p in memfs.find("/coreselect-tests") if f"fail-{type(error).__name__}" in p]
