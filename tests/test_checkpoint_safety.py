"""A build checkpoint is not a trusted input (store/_resume.py, checkpoint.py):

* a folder named like the checkpoint's scratch (``CK.parts.removed``) that coreselect did
  not make is refused in one line, never deleted; one it made (marked) is swept, even when
  the store is already there and the build then stops at "already exists";
* a forged manifest naming a file outside its task's folder (``../``, an absolute path, a
  symbolic link on the way) is never followed: the task is done again, nothing outside the
  store is written, the store is the uninterrupted build's;
* a large file that is not a record (a sparse checkpoint, a sparse ``store.json``) is refused
  before it is read, with memory that does not grow with the file.
"""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest

from coreselect.cli import main
from coreselect.errors import CheckpointError, StoreError
from test_store_resume import _cli, _digests  # noqa: F401 - the build tests' helpers
from test_store_resume import _shards as _resume_shards

BUILD = ["--row-block-size", "100", "--bins", "3", "-q"]


def _shards(folder: Path, n_files: int = 2, rows: int = 150, seed: int = 0) -> None:
    _resume_shards(folder, n_files, rows, seed, n_features=20, per_row=5)


class _Stop(Exception):
    pass


def _interrupted(monkeypatch, capsys, data: Path, store: Path, ck: Path) -> None:
    """A checkpointed build stopped just before the commit: every task kept."""
    import coreselect.io.files as files

    real = files.checkpoint

    def hold(stage: str) -> None:
        if stage == "build-commit":
            raise _Stop
        real(stage)

    monkeypatch.setattr(files, "checkpoint", hold)
    with pytest.raises(SystemExit):  # the CLI reports the stop as an internal error
        main(["store", "build", str(data), str(store), *BUILD, "--checkpoint", str(ck)])
    monkeypatch.setattr(files, "checkpoint", real)
    capsys.readouterr()
    assert not store.exists() and ck.exists()


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.delenv("CORESELECT_TEST_HOLD", raising=False)
    _shards(tmp_path / "d")
    return tmp_path


def test_a_user_folder_named_like_the_scratch_is_refused_not_deleted(work, capsys):
    trash = work / "c.parts.removed"
    trash.mkdir()
    (trash / "thesis.txt").write_text("precious\n")
    code, _, err = _cli(capsys, "store", "build", work / "d", work / "s", *BUILD,
                        "--checkpoint", work / "c")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "did not make" in err, err
    assert (trash / "thesis.txt").read_text() == "precious\n"
    assert not (work / "s").exists()


def test_a_removed_folder_left_by_a_kill_is_swept_even_when_the_store_exists(work, capsys):
    from coreselect.io.files import mark_owned

    code, _, err = _cli(capsys, "store", "build", work / "d", work / "s", *BUILD,
                        "--checkpoint", work / "c")
    assert code == 0, err
    trash = work / "c.parts.removed"  # as a kill during the last cleanup leaves it
    trash.mkdir()
    mark_owned(trash)
    (trash / "tiles").mkdir()
    (trash / "tiles" / "t.npy").write_bytes(b"x" * 100)
    code, _, err = _cli(capsys, "store", "build", work / "d", work / "s", *BUILD,
                        "--checkpoint", work / "c")
    assert code == 2 and "already exists" in err, err
    assert not trash.exists()


def test_removal_keeps_the_mark_to_the_last(work, capsys, monkeypatch):
    """A kill while the folder is deleted leaves it marked (so it is swept), never an
    unmarked folder that the next run would refuse as the user's."""
    from coreselect.io.files import OWNED_MARK
    from coreselect.store import _resume

    seen: list[bool] = []
    real = _resume.shutil.rmtree

    def watch(path, *args, **kwargs):
        parent = Path(path).parent
        if parent.name.endswith(".parts.removed"):
            seen.append((parent / OWNED_MARK).exists())
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_resume.shutil, "rmtree", watch)
    code, _, err = _cli(capsys, "store", "build", work / "d", work / "s", *BUILD,
                        "--checkpoint", work / "c")
    assert code == 0, err
    assert seen and all(seen)
    assert not (work / "c.parts.removed").exists() and not (work / "c").exists()


def _forge(ck_parts: Path, stage: str, rel: str, target: Path) -> None:
    """Add ``rel`` (with ``target``'s size and SHA-256) to the first manifest of ``stage``."""
    from coreselect.store.checkpoint_file import decode, encode

    manifest = sorted((ck_parts / stage).glob("*/manifest"))[0]
    header, arrays = decode(manifest.read_bytes(), "m")
    data = target.read_bytes()
    header["files"][rel] = [len(data), hashlib.sha256(data).hexdigest()]
    for key in ("payload_bytes", "payload_sha256"):
        header.pop(key)
    manifest.write_bytes(encode(header, arrays))


@pytest.mark.parametrize("how", ["parent", "absolute", "symlink"])
def test_a_forged_manifest_never_reaches_outside(work, capsys, monkeypatch, how):
    reference = work / "ref"
    code, _, err = _cli(capsys, "store", "build", work / "d", reference, *BUILD)
    assert code == 0, err
    # the checkpoint at w/c (tasks at w/c.parts/tiles/KEY), the store at a/b/s (assembled
    # in a/b/.s.*.tmp): "../../../evil.txt" is w/evil.txt from a task's folder and
    # evil.txt beside both from the store's temporary folder
    w = work / "w"
    w.mkdir()
    (work / "a" / "b").mkdir(parents=True)
    victim = work / "evil.txt"
    victim.write_text("precious\n")
    planted = w / "evil.txt"
    planted.write_text("forged\n")
    store = work / "a" / "b" / "s"
    _interrupted(monkeypatch, capsys, work / "d", store, w / "c")
    parts = w / "c.parts"
    if how == "parent":
        rel = "../../../evil.txt"
    elif how == "absolute":
        rel = str(victim)
        planted = victim
    else:
        outside = work / "outside"
        outside.mkdir()
        (outside / "x.npy").write_text("forged\n")
        key = sorted((parts / "tiles").glob("*/manifest"))[0].parent
        (key / "link").symlink_to(outside)
        rel, planted = "link/x.npy", outside / "x.npy"
    _forge(parts, "tiles", rel, planted)
    code, _, err = _cli(capsys, "store", "build", work / "d", store, *BUILD,
                        "--checkpoint", w / "c")
    assert code == 0, err
    assert victim.read_text() == "precious\n"
    assert _digests(store) == _digests(reference)


def test_a_sparse_checkpoint_is_refused_before_it_is_read(tmp_path):
    from coreselect.store.checkpoint_file import Checkpoint, decode

    big = tmp_path / "ck"
    with open(big, "wb") as fh:
        fh.truncate(64 << 20)
    tracemalloc.start()
    try:
        data = Checkpoint(big).read()
        with pytest.raises(CheckpointError, match="not a coreselect checkpoint"):
            decode(data, "ck")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


def test_a_record_whose_header_lies_about_its_size_is_refused_unread(tmp_path):
    from coreselect.store.checkpoint_file import MAGIC, Checkpoint

    big = tmp_path / "ck"
    with open(big, "wb") as fh:
        fh.write(MAGIC + b'{"payload_bytes": 10, "payload_sha256": "0"}\n')
        fh.truncate(64 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match="truncated"):
            Checkpoint(big).read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


def test_a_sparse_store_json_is_refused_before_it_is_read(tmp_path, monkeypatch, capsys):
    from coreselect.store import _format, open_store, opening

    folder = tmp_path / "s"
    folder.mkdir()
    with open(folder / "store.json", "wb") as fh:
        fh.truncate(64 << 20)
    monkeypatch.setattr(_format, "MAX_META_BYTES", 1 << 20, raising=False)
    monkeypatch.setattr(opening, "MAX_META_BYTES", 1 << 20, raising=False)
    tracemalloc.start()
    try:
        with pytest.raises(StoreError, match="more than a store.json holds"):
            open_store(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    code, _, err = _cli(capsys, "store", "verify", folder)
    assert code == 2 and len(err.strip().splitlines()) == 1, err


def test_link_never_copies_over_an_existing_file(tmp_path, monkeypatch):
    from coreselect.store import _resume

    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_text("new\n")
    dst.write_text("precious\n")

    def no_links(*_args):
        raise OSError(1, "Operation not permitted")  # a file system without hard links

    monkeypatch.setattr(_resume.os, "link", no_links)
    with pytest.raises(FileExistsError):
        _resume._link(src, dst)
    assert dst.read_text() == "precious\n"
    _resume._link(src, tmp_path / "fresh")
    assert (tmp_path / "fresh").read_text() == "new\n"


def test_manifest_names_outside_the_folder_are_refused():
    from coreselect.store._resume import _kept_name

    for bad in ("../x", "/etc/passwd", "a/../../x", "", ".", "a//b", "manifest", 5, None,
                "a\\..\\x", "a/./b"):
        assert _kept_name(bad) is None, bad
    assert _kept_name("tiles/r0/b1.npy") == "tiles/r0/b1.npy"


def test_an_edit_in_place_with_its_time_put_back_is_refused(work, capsys, monkeypatch):
    """Same size, same mtime, other bytes: the resumed build refuses the checkpoint (the
    file's change time moved, and its sampled bytes differ) instead of mixing two versions."""
    _interrupted(monkeypatch, capsys, work / "d", work / "s", work / "c")
    path = work / "d" / "part-01.svm"
    before = os.stat(path)
    data = bytearray(path.read_bytes())
    at = data.index(b":") + 1  # a value in the first row: 1..5 -> another digit
    data[at:at + 1] = b"9" if data[at:at + 1] != b"9" else b"8"
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    code, _, err = _cli(capsys, "store", "build", work / "d", work / "s", *BUILD,
                        "--checkpoint", work / "c")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "part-01.svm was modified" in err, err
    assert not (work / "s").exists()


def test_the_sampled_bytes_catch_a_copy_with_the_same_times(tmp_path):
    """The fingerprint's own parts: the sampled bytes differ for the same size."""
    from coreselect.store._resume import _file_identity

    a, b = tmp_path / "a.svm", tmp_path / "b.svm"
    a.write_bytes(b"1 0:1\n" * 10_000)
    b.write_bytes(b"1 0:1\n" * 5_000 + b"1 0:2\n" + b"1 0:1\n" * 4_999)
    os.utime(b, ns=(os.stat(a).st_atime_ns, os.stat(a).st_mtime_ns))
    ia, ib = _file_identity(str(a)), _file_identity(str(b))
    assert len(ia) == 6 and ia[1:3] == ib[1:3] and ia[5] != ib[5]  # size, mtime; sample
    assert _file_identity(str(a))[2:] == ia[2:]  # stable while the file is


def test_a_stage_folder_that_is_a_link_is_refused(work, capsys, monkeypatch):
    _interrupted(monkeypatch, capsys, work / "d", work / "s", work / "c")
    elsewhere = work / "elsewhere"
    (work / "c.parts" / "tiles").rename(elsewhere)
    (work / "c.parts" / "tiles").symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    code, _, err = _cli(capsys, "store", "build", work / "d", work / "s", *BUILD,
                        "--checkpoint", work / "c")
    assert code == 2 and "not a folder coreselect made" in err, err
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_a_large_object_that_is_not_a_record_is_not_fetched_whole(monkeypatch):
    import fsspec

    from coreselect.store.checkpoint_file import Checkpoint, decode

    fs = fsspec.filesystem("memory")
    fs.pipe_file("/big/ck", b"\0" * (8 << 20))
    fetched = []
    real = type(fs).cat_file

    def cat_file(self, path, start=None, end=None, **kw):
        data = real(self, path, start=start, end=end, **kw)
        fetched.append(len(data))
        return data

    monkeypatch.setattr(type(fs), "cat_file", cat_file)
    try:
        data = Checkpoint("memory://big/ck").read()
        with pytest.raises(CheckpointError, match="not a coreselect checkpoint"):
            decode(data, "ck")
    finally:
        fs.rm("/big", recursive=True)
    assert max(fetched) < 1 << 20, fetched
