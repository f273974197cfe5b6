"""Every class of store damage gives StoreError naming the block (never a raw KeyError,
IndexError, a crash, or a different selection), failed builds leave nothing, and stores
respect the umask."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as hst

from coreselect.errors import InputError
from coreselect.store import StoreError, build_store, build_store_from_chunks, open_store
from coreselect.store._format import meta_checksum


def _data(n=150, d=40, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=0.25, random_state=rng, format="csr")
    X.data = np.round(X.data * 30) + 1
    Y = (rng.rand(n, 3) < 0.4).astype(np.int8)
    return X, Y


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    X, Y = _data()
    names = [f"f{i}" for i in range(X.shape[1])]
    # 3 column blocks x 4 row blocks, with a feature_names.json
    return build_store(X, Y, tmp_path_factory.mktemp("pristine") / "s", block_size=16,
                       row_block_size=40, seed=1, feature_names=names)


@pytest.fixture
def st(pristine, tmp_path):
    path = tmp_path / "s"
    shutil.copytree(pristine.path, path)
    return path


def _meta(path):
    return json.loads((path / "store.json").read_text())


def _write_meta(path, meta, fix_checksum=True):
    if fix_checksum:
        meta["checksum"] = meta_checksum(meta)
    (path / "store.json").write_text(json.dumps(meta))


def _forge(path, rel, content):
    """Replace a file *and* its size and crc32 in store.json, as a hostile or buggy writer
    would: only the structural checks stand between this and the kernels."""
    target = path / rel
    if isinstance(content, np.ndarray):
        np.save(target, content, allow_pickle=content.dtype == object)
    else:
        target.write_bytes(content)
    data = target.read_bytes()
    meta = _meta(path)
    meta["files"][rel] = [len(data), zlib.crc32(data)]
    _write_meta(path, meta)


def _tile(path, b=1, r=2, name="data"):
    return f"blocks/b{b:06d}/r{r:06d}/{name}.npy"


def _load(path, rel):
    return np.load(path / rel)


def _read_everything(path):
    s = open_store(path, check=False)
    _ = s.order, s.n_codes, s.feature_names
    s.read_all()
    s.labels()
    for r in range(s.n_row_blocks):
        s.read_tile(r, 0, s.n_features)
        s.labels_tile(r)


def _flip_bit(path, rel, at=-1):
    data = bytearray((path / rel).read_bytes())
    data[at] ^= 0x04
    (path / rel).write_bytes(bytes(data))


def _swap(a, b):
    tmp = a.with_name(a.name + ".x")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def _set(path, key, value, fix=True):
    meta = _meta(path)
    meta[key] = value
    _write_meta(path, meta, fix)


def _forged_array(rel, change):
    def mutate(path):
        _forge(path, rel, change(_load(path, rel)))
    return mutate


def _edit(a, i, v):
    a = a.copy()
    a[i] = v
    return a


T = _tile(None)
CASES = {
    # damage that the checksums and sizes catch
    "flipped bit in codes": (lambda p: _flip_bit(p, _tile(p)), "block 1, row block 2"),
    "flipped bit in indices": (lambda p: _flip_bit(p, _tile(p, 0, 1, "indices"), -3),
                               "block 0, row block 1"),
    "flipped bit in labels": (lambda p: _flip_bit(p, "labels/r000003/indices.npy"),
                              "labels, row block 3"),
    "flipped bit in order": (lambda p: _flip_bit(p, "order.npy", -2), "column order"),
    "flipped bit in n_codes": (lambda p: _flip_bit(p, "n_codes.npy", -8), "n_codes"),
    "flipped bit in names": (lambda p: _flip_bit(p, "feature_names.json", 3), "feature names"),
    "block folders swapped": (lambda p: _swap(p / "blocks/b000000", p / "blocks/b000001"),
                              r"block [01], row block"),
    "row tiles swapped": (lambda p: _swap(p / "blocks/b000002/r000000",
                                          p / "blocks/b000002/r000001"), "block 2, row block"),
    "edited n_samples": (lambda p: _set(p, "n_samples", 149, fix=False), "store.json"),
    "zero-byte npy": (lambda p: (p / _tile(p, 2, 0, "indptr")).write_bytes(b""),
                      "block 2, row block 0"),
    "missing file": (lambda p: (p / _tile(p, 1, 3, "indices")).unlink(), "block 1, row block 3"),
    "truncated file": (lambda p: (p / _tile(p, 0, 0, "indices")).write_bytes(
        (p / _tile(p, 0, 0, "indices")).read_bytes()[:-10]), "block 0, row block 0"),
    "store.json not JSON": (lambda p: (p / "store.json").write_text("{"), "store.json"),
    "store.json a list": (lambda p: (p / "store.json").write_text("[]"), "store.json"),
    "version as string": (lambda p: _set(p, "version", "2"), "store.json"),
    "version as bool": (lambda p: _set(p, "version", True), "store.json"),
    # forged files with valid checksums: the structural checks catch them
    "forged edited n_samples": (lambda p: _set(p, "n_samples", 121), "row block 3"),
    "forged seed string": (lambda p: _set(p, "seed", "1"), "store.json"),
    "forged n_blocks": (lambda p: _set(p, "n_blocks", 7), "store.json"),
    "forged huge shape": (lambda p: (_set(p, "n_samples", 10**12), _set(p, "row_block_size", 1),
                                     _set(p, "n_row_blocks", 10**12)), "store.json"),
    "forged empty file list": (lambda p: _set(p, "files", {}), "store.json"),
    "forged file list": (lambda p: _set(p, "files", {**_meta(p)["files"], "order.npy": None}),
                         "column order"),
    "forged zero-byte npy": (lambda p: _forge(p, T, b""), "block 1, row block 2"),
    "forged truncated npy": (lambda p: _forge(p, T, (p / T).read_bytes()[:-4]),
                             "block 1, row block 2"),
    "forged wrong dtype": (_forged_array(T, lambda a: a.astype(np.float64)),
                           "block 1, row block 2"),
    "forged 2-D array": (_forged_array(T, lambda a: a.reshape(1, -1)), "block 1, row block 2"),
    "forged pickled objects": (_forged_array(T, lambda a: a.astype(object)),
                               "block 1, row block 2"),
    "forged code too large": (_forged_array(T, lambda a: _edit(a, 0, 99)),
                              "block 1, row block 2"),
    "forged code zero": (_forged_array(T, lambda a: _edit(a, 0, 0)), "block 1, row block 2"),
    "forged row out of range": (_forged_array(_tile(None, 1, 2, "indices"),
                                              lambda a: _edit(a, -1, 10**6)),
                                "block 1, row block 2"),
    "forged negative row": (_forged_array(_tile(None, 1, 2, "indices"),
                                          lambda a: _edit(a, 0, -5)), "block 1, row block 2"),
    "forged repeated row": (_forged_array(_tile(None, 1, 2, "indices"),
                                          lambda a: _edit(a, 1, a[0])), "block 1, row block 2"),
    "forged indptr not monotone": (_forged_array(_tile(None, 1, 2, "indptr"),
                                                 lambda a: _edit(a, 3, a[4] + 1)),
                                   "block 1, row block 2"),
    "forged indptr past nnz": (_forged_array(_tile(None, 1, 2, "indptr"),
                                             lambda a: _edit(a, -1, a[-1] + 1000)),
                               "block 1, row block 2"),
    "forged indptr too short": (_forged_array(_tile(None, 1, 2, "indptr"), lambda a: a[:-2]),
                                "block 1, row block 2"),
    "forged order duplicate": (_forged_array("order.npy", lambda a: _edit(a, 0, a[1])),
                               "column order"),
    "forged n_codes short": (_forged_array("n_codes.npy", lambda a: a[:-1]), "n_codes"),
    "forged n_codes huge": (_forged_array("n_codes.npy", lambda a: _edit(a, 0, 2**40)),
                            "n_codes"),
    "forged n_codes too many": (_forged_array("n_codes.npy", lambda a: a + 1), "n_codes"),
    "forged label code 2": (_forged_array("labels/r000000/data.npy",
                                          lambda a: _edit(a, 0, 2)), "labels, row block 0"),
    "forged label n_codes": (_forged_array("labels/n_codes.npy", lambda a: a[:2]), "labels"),
    "forged names": (lambda p: _forge(p, "feature_names.json", b'["a"]'), "feature names"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_corruption_class_names_the_block(st, case):
    mutate, block = CASES[case]
    mutate(st)
    with pytest.raises(StoreError, match=block) as full:
        open_store(st).verify()
    assert full.value.block is not None
    # the reading path (what engines call) fails the same way, whatever is read first
    with pytest.raises(StoreError) as read:
        _read_everything(st)
    assert read.value.block is not None


def test_pristine_store_verifies(pristine):
    assert open_store(pristine.path).verify()["files"] == len(pristine.meta["files"]) + 1
    _read_everything(pristine.path)


def test_a_damaged_block_stops_the_selection(st):
    from coreselect.selection import select

    _flip_bit(st, _tile(st, 2, 1))
    with pytest.raises(StoreError, match="block 2, row block 1"):
        select(open_store(st), k=3, mode="distributed", partitions=3)
    with pytest.raises(StoreError, match="block 2, row block 1"):
        select(open_store(st), k=3, mode="centralized")


def test_checksum_verified_once_per_file(st, monkeypatch):
    import coreselect.store.reader as reader

    calls = []
    real = reader.file_crc32
    monkeypatch.setattr(reader, "file_crc32", lambda p: calls.append(p) or real(p))
    monkeypatch.setattr(reader, "_VERIFIED", set())
    s = open_store(st)
    s.read_range(0, 10)
    first = len(calls)
    s.read_range(0, 10)
    s.read_tile(0, 0, 10)
    assert first > 0 and len(calls) == first
    # a file changed since it was verified is verified again
    _flip_bit(st, _tile(st, 0, 0))
    with pytest.raises(StoreError, match="block 0, row block 0"):
        s.read_range(0, 10)


def test_order_and_n_codes_checked_once_per_file(st, monkeypatch):
    """A streaming run opens the store once per part: the permutation check of ``order``
    (and ``n_codes``' range check) runs once per file per process, and again for a file that
    changed since."""
    import coreselect.store.reader as reader

    calls = []
    real = reader.ColumnStore._read_order
    monkeypatch.setattr(reader.ColumnStore, "_read_order",
                        lambda self: calls.append(1) or real(self))
    monkeypatch.setattr(reader, "_CHECKED", {})
    first = open_store(st).order
    assert np.array_equal(open_store(st).order, first) and len(calls) == 1
    assert np.array_equal(open_store(st).n_codes, open_store(st).n_codes)
    assert len(reader._CHECKED) == 2
    _forged_array("order.npy", lambda a: _edit(a, 0, a[1]))(st)
    with pytest.raises(StoreError, match="column order"):
        open_store(st).order
    assert len(calls) == 2


def test_store_error_survives_pickling():
    import pickle

    from coreselect.store._format import store_error

    err = pickle.loads(pickle.dumps(store_error("bad", block="block 3, row block 0", path="s")))
    assert isinstance(err, StoreError) and str(err) == "bad"
    assert (err.block, err.path) == ("block 3, row block 0", "s")


# -- the CLI --------------------------------------------------------------------------------
def _cli(args):
    from click.testing import CliRunner

    from coreselect.cli import cli

    return CliRunner().invoke(cli, args)


def test_cli_verify_and_info(st, tmp_path):
    r = _cli(["store", "verify", str(st)])
    assert r.exit_code == 0 and "ok" in r.output
    r = _cli(["store", "info", str(st), "--json"])
    info = json.loads(r.output)
    assert r.exit_code == 0 and info["integrity"].startswith("ok") and info["n_row_blocks"] == 4
    _flip_bit(st, _tile(st, 1, 1, "indices"), -2)
    for cmd in ("verify", "info"):
        r = _cli(["store", cmd, str(st)])
        assert r.exit_code == 2 and "block 1, row block 1" in r.output
        assert len(r.output.strip().splitlines()) == 1
    r = _cli(["store", "info", str(st), "--no-verify"])  # sizes are right: only crc32 differs
    assert r.exit_code == 0


def test_cli_build_row_block_size(tmp_path):
    from coreselect.io import from_arrays, write

    X, Y = _data(n=60, d=20)
    src = tmp_path / "d.arff"
    write(from_arrays(X.toarray(), Y), src)
    out = tmp_path / "st"
    r = _cli(["store", "build", str(src), str(out), "--row-block-size", "25",
              "--labels", str(tmp_path / "d.xml"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "3 row blocks of 25" in r.output and open_store(out).n_row_blocks == 3
    r = _cli(["store", "build", str(src), str(out), "--labels", str(tmp_path / "d.xml")])
    assert r.exit_code == 2 and "already exists" in r.output


# -- builds ---------------------------------------------------------------------------------
def test_failed_build_leaves_nothing(tmp_path):
    X, Y = _data()
    X = X.toarray()
    X[5, 30] = np.nan  # found only when a later column block is discretized
    with pytest.raises(InputError, match="NaN"):
        build_store(X, Y, tmp_path / "s", block_size=4, seed=0)
    assert list(tmp_path.iterdir()) == []

    def stop(stage, done, total):
        if done == 2:
            raise KeyboardInterrupt

    (tmp_path / "empty").mkdir()
    with pytest.raises(KeyboardInterrupt):
        build_store(np.nan_to_num(X), Y, tmp_path / "empty", block_size=4, progress=stop)
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize("umask,dir_mode,file_mode", [(0o022, 0o755, 0o644),
                                                      (0o002, 0o775, 0o664),
                                                      (0o077, 0o700, 0o600)])
def test_store_respects_umask(tmp_path, umask, dir_mode, file_mode):
    X, Y = _data(n=30, d=5)
    old = os.umask(umask)
    try:
        s = build_store(X, Y, tmp_path / "s", row_block_size=10)
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)  # noqa: E731
    assert mode(s.path) == dir_mode and mode(s.path / "blocks" / "b000000") == dir_mode
    assert mode(s.path / "blocks/b000000/r000002") == dir_mode
    assert mode(s.path / "store.json") == file_mode
    assert mode(s.path / "blocks/b000000/r000002/data.npy") == file_mode


def test_stale_temp_folders_of_killed_builds_are_removed(tmp_path):
    X, Y = _data(n=30, d=5)
    old = time.time() - 10 * 24 * 3600
    dead = tmp_path / ".s.p999999999-0badc0de.tmp"  # a killed build (no such pid)
    (dead / "blocks").mkdir(parents=True)
    os.utime(dead, (old, old))
    live = tmp_path / f".s.p{os.getpid()}-11111111.tmp"  # this process's: kept
    live.mkdir()
    unrelated = tmp_path / ".other.p999999999-22222222.tmp"  # another target's
    unrelated.mkdir()
    os.utime(unrelated, (old, old))
    build_store(X, Y, tmp_path / "s")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([live.name, unrelated.name, "s"])
    # a killed row-chunk build's spill folder is cleaned the same way
    spill = tmp_path / ".t.p999999999-33333333.tmp"
    spill.mkdir()
    os.utime(spill, (old, old))
    build_store_from_chunks([(X, Y)], tmp_path / "t")
    assert not spill.exists()


# -- the structural check against a slow reference -------------------------------------------
def _valid_slow(indptr, indices, data, n_rows, n_codes) -> bool:
    if any(a.ndim != 1 or a.dtype.kind not in "iu" for a in (indptr, indices, data)):
        return False
    if len(indptr) != len(n_codes) + 1 or indptr[0] != 0 or indptr[-1] != len(indices) \
            or len(data) != len(indices):
        return False
    for j in range(len(n_codes)):
        if indptr[j + 1] < indptr[j]:
            return False
        rows = list(indices[indptr[j]:indptr[j + 1]])
        if rows != sorted(set(rows)) or any(not 0 <= i < n_rows for i in rows):
            return False
        if any(not 1 <= c < n_codes[j] for c in data[indptr[j]:indptr[j + 1]]):
            return False
    return True



@settings(max_examples=150, deadline=None)
@given(seed=hst.integers(0, 10**6), n_rows=hst.integers(1, 6), w=hst.integers(0, 5),
       mutation=hst.sampled_from(["none", "ptr", "row", "code", "swap", "dtype"]),
       where=hst.integers(0, 100), value=hst.integers(-3, 8))
def test_check_csc_matches_reference(seed, n_rows, w, mutation, where, value):
    from coreselect.store._format import check_csc

    rng = np.random.RandomState(seed)
    dense = rng.randint(0, 3, size=(n_rows, w)) * (rng.rand(n_rows, w) < 0.6)
    m = sp.csc_matrix(dense)
    indptr, indices, data = m.indptr.astype(np.int64), m.indices.copy(), m.data.copy()
    n_codes = np.maximum(dense.max(axis=0, initial=0) + 1, 1) + rng.randint(0, 2, size=w)
    arrays = {"ptr": indptr, "row": indices, "code": data, "swap": indices}
    if mutation == "dtype":
        data = data.astype(np.float64)
    elif mutation == "swap" and indices.size >= 2:
        i = where % (indices.size - 1)
        indices[i], indices[i + 1] = indices[i + 1], indices[i]
    elif mutation in arrays and arrays[mutation].size:
        arrays[mutation][where % arrays[mutation].size] = value
    expected = _valid_slow(indptr, indices, data, n_rows, n_codes)
    try:
        check_csc(indptr, indices, data, n_rows, n_codes, "s", "block 0, row block 0")
        got = True
    except StoreError:
        got = False
    assert got == expected


def test_write_failure_names_the_store(tmp_path, monkeypatch):
    import errno

    import coreselect.store.build as build

    X, Y = _data(n=30, d=5)

    def full(self, rel, arr):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(build._Writer, "save", full)
    from coreselect.errors import OutputError

    with pytest.raises(OutputError, match=f"cannot write {tmp_path / 's'}: No space"):
        build_store(X, Y, tmp_path / "s")
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=25, deadline=None)
@given(which=hst.integers(0, 10**6), at=hst.integers(0, 10**9), bit=hst.integers(0, 7))
def test_any_flipped_bit_anywhere_is_caught(pristine, tmp_path_factory, which, at, bit):
    path = tmp_path_factory.mktemp("flip") / "s"
    shutil.copytree(pristine.path, path)
    files = sorted(pristine.meta["files"]) + ["store.json"]
    rel = files[which % len(files)]
    data = bytearray((path / rel).read_bytes())
    data[at % len(data)] ^= 1 << bit
    (path / rel).write_bytes(bytes(data))
    with pytest.raises(StoreError):
        open_store(path).verify()
    with pytest.raises(StoreError):
        _read_everything(path)
