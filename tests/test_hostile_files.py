"""Nothing lost: a checkpoint's parts folder, ``--temp-dir`` scratch and the input store
hold user files that a run never removes nor replaces; only what coreselect made (a folder
marked with :data:`coreselect.io.files.OWNED_MARK`, a file that starts as a checkpoint's) is.
Special and oversized checkpoint files are refused at once (no hang, memory as the data)."""

from __future__ import annotations

import functools
import io
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from coreselect.selection.checkpoint import MAGIC, decode, encode
from coreselect.errors import CheckpointError
from coreselect.io.files import OWNED_MARK, is_owned
from coreselect.selection import select as _select
# The checkpointed greedy is the weighing's: on these dense random codes the default
# ("auto") takes cmim, which records no checkpoint (refused: tests/test_conditional.py).
select = functools.partial(_select, calibration="information")


def _data(seed: int = 0, n: int = 90, d: int = 12):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, 3)) < 0.4).astype(int)
    X = rng.integers(0, 4, size=(n, d)) + (Y @ rng.integers(0, 2, size=(3, d)))
    return X, Y


def _old(path: Path) -> None:
    past = time.time() - 3600
    os.utime(path, (past, past))


def test_temp_dir_keeps_user_files_named_like_scratch(tmp_path):
    from coreselect.store import build_store

    X, Y = _data()
    store = build_store(X, Y, tmp_path / "s", block_size=4, row_block_size=30, min_bin_count=1)
    scr = tmp_path / "scr"
    scr.mkdir()
    (scr / "coreselect-rows.keep.tmp").mkdir()
    (scr / "coreselect-rows.keep.tmp" / "notes.txt").write_text("mine")
    (scr / "coreselect-rows.old.tmp").write_text("mine too")
    dead = scr / "coreselect-rows.ckabc.p999999-xyz.tmp"  # a dead pid's name, no marker
    dead.mkdir()
    (dead / "notes.txt").write_text("and mine")
    for p in scr.rglob("*"):
        _old(p)
    for p in scr.iterdir():
        _old(p)
    select(store, None, k=3, mode="rows", temp_dir=scr, checkpoint=tmp_path / "c")
    select(store, None, k=3, mode="rows", temp_dir=scr)
    assert (scr / "coreselect-rows.keep.tmp" / "notes.txt").read_text() == "mine"
    assert (scr / "coreselect-rows.old.tmp").read_text() == "mine too"
    assert (dead / "notes.txt").read_text() == "and mine"
    assert sorted(p.name for p in scr.iterdir()) == sorted(
        ["coreselect-rows.keep.tmp", "coreselect-rows.old.tmp", dead.name])


def test_a_killed_runs_marked_scratch_is_still_cleaned(tmp_path):
    from coreselect.io.files import mark_owned, scratch_dir

    stale = tmp_path / "coreselect-rows.p999999-abcd.tmp"
    stale.mkdir()
    mark_owned(stale)
    _old(stale)
    mine = scratch_dir(tmp_path, "coreselect-rows")
    assert not stale.exists() and is_owned(mine)


@pytest.mark.parametrize("name", ["relevance", "statistics", "labels.xml"])
def test_a_parts_folder_of_the_user_is_never_written_into(tmp_path, name):
    X, Y = _data()
    parts = tmp_path / "c.parts"
    parts.mkdir()
    (parts / name).write_text("user data")
    mode = "rows" if name == "statistics" else "centralized"
    with pytest.raises(CheckpointError, match="did not make it"):
        select(X, Y, k=3, mode=mode, min_bin_count=1, checkpoint=tmp_path / "c")
    assert [p.name for p in parts.iterdir()] == [name]
    assert (parts / name).read_text() == "user data"
    assert not (tmp_path / "c").exists()


def test_a_user_file_in_a_marked_parts_folder_is_kept(tmp_path):
    X, Y = _data()
    first = select(X, Y, k=3, min_bin_count=1, checkpoint=tmp_path / "c")
    parts = tmp_path / "c.parts"
    assert is_owned(parts)
    (parts / "labels.xml").write_text("<labels/>")
    (tmp_path / "c").unlink()  # start afresh: the relevance is written again
    (parts / "relevance").write_text("not a checkpoint's")
    with pytest.raises(CheckpointError, match="not a file coreselect wrote"):
        select(X, Y, k=3, min_bin_count=1, checkpoint=tmp_path / "c")
    assert (parts / "relevance").read_text() == "not a checkpoint's"
    (parts / "relevance").unlink()
    again = select(X, Y, k=3, min_bin_count=1, checkpoint=tmp_path / "c")
    assert again.selected.tolist() == first.selected.tolist()
    assert (parts / "labels.xml").read_text() == "<labels/>"
    assert sorted(p.name for p in parts.iterdir()) == [OWNED_MARK, "labels.xml", "relevance"]


@pytest.mark.parametrize("where", ["store", "inside", "parts"])
def test_a_checkpoint_inside_the_input_store_is_refused(tmp_path, where):
    from coreselect.store import build_store

    X, Y = _data()
    store = build_store(X, Y, tmp_path / "s", block_size=4, row_block_size=30, min_bin_count=1)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (tmp_path / "s").rglob("*"))
    path = {"store": tmp_path / "s", "inside": tmp_path / "s" / "c",
            "parts": tmp_path / "s" / "x" / "c"}[where]
    with pytest.raises(CheckpointError, match="inside the column store"):
        select(store, None, k=3, checkpoint=path)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (tmp_path / "s").rglob("*")) == before


def test_a_checkpoint_url_inside_the_store_prefix_is_refused():
    from coreselect.store import build_store

    X, Y = _data()
    url = "memory://ck-overlap/s"
    build_store(X, Y, url, block_size=4, min_bin_count=1)
    for ck in (url, url + "/c", url + "/deeper/c"):
        with pytest.raises(CheckpointError, match="inside the column store"):
            select(url, None, k=3, checkpoint=ck)


def test_a_fifo_or_device_checkpoint_is_refused_at_once(tmp_path):
    X, Y = _data()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero", "/dev/full"):
        with pytest.raises(CheckpointError, match="not a regular file"):
            select(X, Y, k=3, min_bin_count=1, checkpoint=path)


def test_a_compressed_member_is_refused_before_it_expands(tmp_path):
    """A record whose arrays are deflated (a bomb: a small file, gigabytes expanded), with a
    valid checksum: refused from the zip directory, nothing expanded."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("greedy_selected.npy", "w", force_zip64=True) as fh:
            fh.write(b"\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, "
                     b"'shape': (8000000,), }" + b" " * 54 + b"\n")
            chunk = bytes(1 << 20)
            for _ in range(64):
                fh.write(chunk)
    good = encode({"format": 1}, {"a": np.zeros(1)})
    header, _ = decode(good, "x")
    bomb = encode({"format": 1}, {})  # then its payload replaced, checksum fresh
    import hashlib
    import json

    payload = buffer.getvalue()
    header = {"format": 1, "payload_bytes": len(payload),
              "payload_sha256": hashlib.sha256(payload).hexdigest()}
    bomb = MAGIC + json.dumps(header).encode() + b"\n" + payload
    assert len(bomb) < 1 << 20
    with pytest.raises(CheckpointError, match="compressed"):
        decode(bomb, "bomb")


def test_a_member_declaring_more_than_it_holds_is_refused():
    """A stored member whose .npy header declares a huge shape (numpy would allocate it
    before reading): refused from the header."""
    import hashlib
    import json

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        head = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
        head += " " * (118 - len(head)) + "\n"
        zf.writestr("greedy_pair.npy", b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little")
                    + head.encode() + bytes(64))
    payload = buffer.getvalue()
    header = {"format": 1, "payload_bytes": len(payload),
              "payload_sha256": hashlib.sha256(payload).hexdigest()}
    with pytest.raises(CheckpointError, match="declares"):
        decode(MAGIC + json.dumps(header).encode() + b"\n" + payload, "x")
