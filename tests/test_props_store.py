"""Store verification over the dimensions that vary: which file, which byte, which array,
how much.

* ``verify()`` (and ``coreselect store verify``) re-reads every file: a same-size rewrite
  whose mtime was put back (``os.utime`` with the old nanoseconds) is caught in any file,
  also in a process that already read and checksummed the store (its per-process cache of
  verified files must not be trusted by a full check);
* ``check()`` (one ``stat`` per file) catches any file that grew or shrank;
* a tile whose ``indptr`` points past its ``indices`` or its ``data`` when only one of them
  is short (the file sizes and checksums forged to match) is damage, not a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import Phase, assume, given, settings
from hypothesis import strategies as st

from coreselect.store import StoreError, build_store, open_store
from coreselect.store._format import meta_checksum

# No shrinking: a failure is reported as found (shrinking store copies takes minutes).
PROPS = settings(max_examples=25, deadline=None, derandomize=True,
                 phases=(Phase.explicit, Phase.generate))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    rng = np.random.RandomState(7)
    X = sp.random(90, 30, density=0.3, random_state=rng, format="csr")
    X.data = np.round(X.data * 20) + 1
    Y = (rng.rand(90, 3) < 0.4).astype(np.int8)
    names = [f"f{i}" for i in range(30)]
    # 3 column blocks x 3 row blocks, with a feature_names.json
    return build_store(X, Y, tmp_path_factory.mktemp("pristine") / "s", block_size=12,
                       row_block_size=30, seed=2, feature_names=names).path


def _files(path: Path) -> list[str]:
    return sorted(json.loads((path / "store.json").read_text())["files"])


def _copy(pristine: Path) -> Path:
    path = Path(tempfile.mkdtemp(prefix="props-store-")) / "s"
    shutil.copytree(pristine, path)
    return path


def _read_everything(path: Path) -> None:
    """Reads (and so checksums, once per process) every file of the store."""
    s = open_store(path)
    _ = s.order, s.n_codes, s.label_n_codes, s.feature_names
    s.read_all()
    s.labels()
    for r in range(s.n_row_blocks):
        s.read_tile(r, 0, s.n_features)


def _rewrite_keeping_size_and_mtime(target: Path, at: int, xor: int) -> None:
    before = os.stat(target)
    data = bytearray(target.read_bytes())
    data[at % len(data)] ^= xor
    target.write_bytes(bytes(data))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def _cli(args):
    from click.testing import CliRunner

    from coreselect.cli import cli

    return CliRunner().invoke(cli, args)


@PROPS
@given(which=st.integers(0, 10**6), at=st.integers(0, 10**9), xor=st.integers(1, 255))
def test_verify_rereads_a_same_size_same_mtime_rewrite_of_any_file(pristine, which, at, xor):
    path = _copy(pristine)
    try:
        files = _files(path)
        rel = files[which % len(files)]
        s = open_store(path)
        s.verify()            # this process has now checksummed every file
        _read_everything(path)
        _rewrite_keeping_size_and_mtime(path / rel, at, xor)
        with pytest.raises(StoreError):
            s.verify()
        with pytest.raises(StoreError):
            open_store(path).verify()
        r = _cli(["store", "verify", str(path)])
        assert r.exit_code == 2, r.output
        assert len(r.output.strip().splitlines()) == 1
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


def _rewrite_validly(path: Path, rel: str, pick: int) -> bool:
    """A same-size rewrite of ``rel`` that keeps every structural invariant of the store (so
    that only the checksums can see it), mtime put back; False when ``rel`` has none."""
    target = path / rel
    raw = bytearray(target.read_bytes())
    if rel.endswith(".json"):  # a feature name changes a letter
        at = [i for i in range(len(raw)) if raw[i:i + 2] in (b'"f', b"'f")]
        if not at:
            return False
        raw[at[pick % len(at)] + 1] = ord("g")
    else:
        arr = np.load(target)
        new = arr.copy()
        folder = rel.rsplit("/", 1)[0]
        if rel.endswith("order.npy"):  # still a permutation
            if arr.size < 2 or arr[0] == arr[-1]:
                return False
            i = pick % (arr.size - 1) + 1
            new[0], new[i] = arr[i], arr[0]
        elif rel.endswith(("data.npy", "indices.npy")):
            ptr = np.load(path / folder / "indptr.npy")
            n_rows = None
            if rel.endswith("indices.npy"):
                meta = json.loads((path / "store.json").read_text())
                r = int(folder.rsplit("/r", 1)[1])
                n_rows = min(meta["row_block_size"], meta["n_samples"] - r * meta["row_block_size"])
            moves = []
            for c in range(ptr.size - 1):
                a, z = int(ptr[c]), int(ptr[c + 1])
                for i in range(a, z):
                    if n_rows is None:  # two different codes of one column swap places
                        j = next((j for j in range(i + 1, z) if arr[j] != arr[i]), None)
                        if j is not None:
                            moves.append((i, j))
                    else:  # a row index moves up into the gap before the next one
                        limit = arr[i + 1] if i + 1 < z else n_rows
                        if arr[i] + 1 < limit:
                            moves.append((i, None))
            if not moves:
                return False
            i, j = moves[pick % len(moves)]
            if j is None:
                new[i] = arr[i] + 1
            else:
                new[i], new[j] = arr[j], arr[i]
        else:
            return False
        assert not np.array_equal(new, arr)
        raw[len(raw) - arr.nbytes:] = new.tobytes()
    before = os.stat(target)
    target.write_bytes(bytes(raw))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    return True


@PROPS
@given(which=st.integers(0, 10**6), pick=st.integers(0, 10**6))
def test_verify_catches_a_valid_looking_rewrite_of_any_file(pristine, which, pick):
    """The rewritten file still passes every structural check (a code moved within its
    column, a row index moved into a gap, a column order swapped, a feature renamed):
    only its checksum differs, so a process that already verified the store must read it
    again."""
    path = _copy(pristine)
    try:
        files = [f for f in _files(path) if not f.endswith(("n_codes.npy", "indptr.npy"))]
        rel = files[which % len(files)]
        s = open_store(path)
        s.verify()
        _read_everything(path)
        assume(_rewrite_validly(path, rel, pick))
        s.check()
        with pytest.raises(StoreError, match="checksum"):
            s.verify()
        with pytest.raises(StoreError, match="checksum"):
            open_store(path).verify()
        r = _cli(["store", "verify", str(path)])
        assert r.exit_code == 2 and "checksum" in r.output, r.output
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


@PROPS
@given(at=st.integers(0, 10**9), xor=st.integers(1, 255))
def test_a_same_size_rewrite_of_store_json_is_caught(pristine, at, xor):
    path = _copy(pristine)
    try:
        open_store(path).verify()
        _rewrite_keeping_size_and_mtime(path / "store.json", at, xor)
        with pytest.raises(StoreError):
            open_store(path).verify()
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


@PROPS
@given(which=st.integers(0, 10**6), delta=st.integers(-64, 64).filter(bool),
       keep_mtime=st.booleans())
def test_check_catches_a_file_that_grew_or_shrank(pristine, which, delta, keep_mtime):
    path = _copy(pristine)
    try:
        files = _files(path)
        rel = files[which % len(files)]
        target = path / rel
        before = os.stat(target)
        data = target.read_bytes()
        data = data + bytes(range(delta)) if delta > 0 else data[:max(len(data) + delta, 0)]
        assume(len(data) != before.st_size)
        target.write_bytes(data)
        if keep_mtime:
            os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        with pytest.raises(StoreError):
            open_store(path, check=False).check()
        with pytest.raises(StoreError):
            open_store(path)  # check=True by default
        with pytest.raises(StoreError):
            open_store(path, check=False).verify()
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


@pytest.mark.parametrize("delta", [1, -1], ids=["grew by a byte", "shrank by a byte"])
def test_check_catches_a_one_byte_change_in_size_of_every_file(pristine, delta):
    """Every file of the store, one byte longer or shorter, its mtime put back: the examples
    above depend on which modules the run imported (hypothesis draws constants from them),
    so every file and both directions are also checked here, the same in any run."""
    for rel in _files(pristine):
        path = _copy(pristine)
        try:
            target = path / rel
            before = os.stat(target)
            data = target.read_bytes()
            target.write_bytes(data + b"\0" if delta > 0 else data[:-1])
            os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
            with pytest.raises(StoreError, match="bytes, expected"):
                open_store(path, check=False).check()
        finally:
            shutil.rmtree(path.parent, ignore_errors=True)


def _forge(path: Path, rel: str, arr: np.ndarray) -> None:
    """Replace a .npy file *and* its size and crc32 in store.json (a consistent forgery)."""
    np.save(path / rel, arr)
    data = (path / rel).read_bytes()
    meta = json.loads((path / "store.json").read_text())
    meta["files"][rel] = [len(data), zlib.crc32(data)]
    meta["checksum"] = meta_checksum(meta)
    (path / "store.json").write_text(json.dumps(meta))


@PROPS
@given(b=st.integers(0, 2), r=st.integers(0, 2), array=st.sampled_from(["indices", "data"]),
       cut=st.integers(1, 10**6))
def test_indptr_past_one_short_array_is_damage(pristine, b, r, array, cut):
    """Only one of ``indices`` and ``data`` is short (by 1 entry up to all of them): indptr
    then points past it, whatever the other one holds."""
    path = _copy(pristine)
    try:
        rel = f"blocks/b{b:06d}/r{r:06d}/{array}.npy"
        arr = np.load(path / rel)
        assume(arr.size > 0)
        _forge(path, rel, arr[:arr.size - 1 - cut % arr.size])
        # Caught when the store is opened (its shapes) or verified, and by any read of the
        # tile without the opening check: never a crash or a wrong count.
        where = f"block {b}, row block {r}"
        with pytest.raises(StoreError, match=where):
            open_store(path).verify()
        with pytest.raises(StoreError, match=where):
            s = open_store(path, check=False)
            s.read_tile(r, 0, s.n_features)
        with pytest.raises(StoreError, match=where):
            open_store(path, check=False).read_all()
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
