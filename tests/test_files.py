"""Outputs appear whole or not at all: regular files, links, special files, umask, failures,
several outputs of one command, outputs that are inputs, and leftovers of killed writers."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from coreselect.io import files
from coreselect.errors import CoreselectError, InputError, OutputError
from coreselect.io.files import (
    atomic_dir,
    atomic_output,
    atomic_path,
    check_outputs,
    clean_stale,
    output_set,
)


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def umask():
    """umask(value): set the process umask for the test; restored afterwards."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda m: os.umask(m)
    os.umask(old)


# --- regular files -----------------------------------------------------------------------------

@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_new_files_and_folders_respect_the_umask(tmp_path, umask, mask):
    umask(mask)
    out = tmp_path / "new" / "out.json"
    with atomic_output(out) as fh:
        fh.write("{}")
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE(out.parent.stat().st_mode) == 0o777 & ~mask
    with atomic_path(tmp_path / "t.csv") as p:
        p.write_text("a\n")
    assert stat.S_IMODE((tmp_path / "t.csv").stat().st_mode) == 0o666 & ~mask
    with atomic_dir(tmp_path / "store") as d:
        (d / "x").write_text("1")
    assert stat.S_IMODE((tmp_path / "store").stat().st_mode) == 0o777 & ~mask
    assert _hidden(tmp_path) == []


def test_replacing_keeps_the_old_mode(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    out.chmod(0o640)
    with atomic_output(out) as fh:
        fh.write("new")
    assert out.read_text() == "new" and stat.S_IMODE(out.stat().st_mode) == 0o640


def test_failure_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_output(out) as fh:
            fh.write("half")
            raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "new.csv") as p:
            p.write_text("half")
            raise RuntimeError("boom")
    assert out.read_text() == "old" and not (tmp_path / "new.csv").exists()
    assert _hidden(tmp_path) == []


def test_temporary_keeps_every_suffix(tmp_path):
    with atomic_path(tmp_path / "data.arff.gz") as p:
        assert p.name.endswith(".arff.gz") and p.parent == tmp_path and p.name.startswith(".data.arff.gz.p")
        p.write_bytes(b"x")


# --- links and special files -------------------------------------------------------------------

def test_symlink_is_written_through_and_kept(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with atomic_output(link) as fh:
        fh.write("new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "target.json")
    with atomic_path(dangling) as p:
        p.write_text("x")
    assert dangling.is_symlink() and (tmp_path / "target.json").read_text() == "x"
    assert _hidden(tmp_path) == []


def test_fifo_is_written_directly(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    with atomic_output(fifo) as fh:
        fh.write("through the pipe")
    reader.join(5)
    assert got == ["through the pipe"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    got.clear()
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with output_set([fifo]) as (p,):
        p.write_bytes(b"by path")
    reader.join(5)
    assert got == [b"by path"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dash_and_dev_stdout_write_to_standard_output(capfd):
    with atomic_output("-") as fh:
        fh.write("dash\n")
    with atomic_path("-") as p:
        p.write_text("by path\n")
    assert os.path.islink("/dev/stdout")
    with atomic_output("/dev/stdout") as fh:
        fh.write("devout\n")
    assert os.path.islink("/dev/stdout")  # the link is still a link
    out = capfd.readouterr().out
    assert out == "dash\nby path\ndevout\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_reports_disk_full_with_the_users_path():
    for writer in ("output", "path"):
        with pytest.raises(OutputError) as info:
            if writer == "output":
                with atomic_output("/dev/full") as fh:
                    fh.write("x" * 10)
            else:
                with atomic_path("/dev/full") as p:
                    p.write_text("x" * 10)
        assert info.value.errno == errno.ENOSPC and info.value.filename == "/dev/full"
        assert "cannot write /dev/full" in str(info.value)
        assert isinstance(info.value, OSError) and isinstance(info.value, CoreselectError)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT])
def test_write_failures_name_the_users_path(tmp_path, code):
    out = tmp_path / "result.json"
    with pytest.raises(OutputError) as info:
        with atomic_output(out) as fh:
            raise OSError(code, os.strerror(code))  # what write(2) raises: no file name
    assert str(out) in str(info.value) and ".tmp" not in str(info.value) and info.value.errno == code
    with pytest.raises(OutputError) as info:
        with atomic_path(out) as p:
            raise OSError(code, os.strerror(code), str(p))  # a writer naming the temp file
    assert str(out) in str(info.value) and ".tmp" not in str(info.value)
    with pytest.raises(OutputError) as info:
        with atomic_path(out) as p:
            raise OSError(f"pyarrow could not write {p}: {os.strerror(code)}")  # message only
    assert str(out) in str(info.value) and ".tmp" not in str(info.value)
    assert not out.exists() and _hidden(tmp_path) == []


def test_failures_of_the_helper_itself_name_the_users_path(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match=f"cannot write {blocker}/out.json"):
        with atomic_output(blocker / "out.json") as fh:
            fh.write("x")
    (tmp_path / "folder").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        with atomic_output(tmp_path / "folder") as fh:
            fh.write("x")

    def readonly(src, dst):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), src, None, dst)

    monkeypatch.setattr(files.os, "replace", readonly)
    with pytest.raises(OutputError) as info:
        with atomic_output(tmp_path / "r.json") as fh:
            fh.write("x")
    assert info.value.errno == errno.EROFS and str(tmp_path / "r.json") in str(info.value)
    assert ".tmp" not in str(info.value)
    monkeypatch.undo()
    assert _hidden(tmp_path) == []


def test_unrelated_errors_pass_unchanged(tmp_path):
    with pytest.raises(FileNotFoundError):
        with atomic_output(tmp_path / "o.txt"):
            open(tmp_path / "missing-input.txt")
    with pytest.raises(ConnectionRefusedError):
        with atomic_output(tmp_path / "o.txt"):
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused")


# --- several outputs, all or nothing -----------------------------------------------------------

def test_output_set_writes_all(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "sub" / "b.csv"
    with output_set([a, None, b]) as (pa, none, pb):
        assert none is None
        pa.write_text("A")
        pb.write_text("B")
    assert a.read_text() == "A" and b.read_text() == "B"
    assert _hidden(tmp_path) == [] and _hidden(tmp_path / "sub") == []


def test_output_set_failure_in_the_block_leaves_nothing(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.csv"
    a.write_text("old A")
    with pytest.raises(ValueError):
        with output_set([a, b]) as (pa, pb):
            pa.write_text("A")
            raise ValueError("second writer failed")
    assert a.read_text() == "old A" and not b.exists() and _hidden(tmp_path) == []


def test_output_set_failed_rename_rolls_back(tmp_path, monkeypatch):
    a, b, c = tmp_path / "a.json", tmp_path / "b.csv", tmp_path / "c.txt"
    a.write_text("old A")
    real_replace = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", flaky)
    with pytest.raises(OutputError, match="c.txt"):
        with output_set([a, b, c]) as paths:
            for p, text in zip(paths, "ABC"):
                p.write_text(text)
    monkeypatch.undo()
    assert a.read_text() == "old A" and not b.exists() and not c.exists()
    assert _hidden(tmp_path) == []


# --- outputs that are inputs ---------------------------------------------------------------------

def test_check_outputs_refuses_inputs_and_duplicates(tmp_path):
    data = tmp_path / "data.arff"
    data.write_text("x")
    (tmp_path / "link.arff").symlink_to(data)
    os.link(data, tmp_path / "hard.arff")
    (tmp_path / "sub").mkdir()
    store = tmp_path / "store"
    store.mkdir()
    same_as_data = [data, tmp_path / "link.arff", tmp_path / "hard.arff", tmp_path / "sub" / ".." / "data.arff"]
    for out in same_as_data:
        with pytest.raises(InputError, match="refusing to overwrite an input") as info:
            check_outputs({"DATA": data}, {"--out": out})
        assert "--out" in str(info.value) and "DATA" in str(info.value)
        assert isinstance(info.value, ValueError)
    with pytest.raises(InputError, match="inside the input folder"):
        check_outputs({"DATA": store}, {"--export": store / "x.csv"})
    with pytest.raises(InputError, match="same file"):
        check_outputs([data], {"--out": tmp_path / "x.json", "--export": tmp_path / "sub/../x.json"})
    with pytest.raises(InputError, match="same file"):
        check_outputs([], [tmp_path / "link2", tmp_path / "link2"])
    # allowed: distinct files, names that are not files, missing inputs, None, '-', devices
    check_outputs({"DATA": "scene", "--labels": None}, {"--out": data.with_suffix(".json"), "--export": None})
    check_outputs([data], ["-", "-", "/dev/null", "/dev/null", tmp_path / "new.csv"])
    with pytest.raises(InputError):
        with output_set([tmp_path / "o.json", tmp_path / "o.json"]):
            pass


# --- leftovers of killed writers -------------------------------------------------------------------

def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _age(path: Path, seconds: float = 3600) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


def test_clean_stale_removes_only_dead_and_old_leftovers(tmp_path):
    dead = _dead_pid()
    stale_file = tmp_path / f".out.json.p{dead}-abc123.tmp"
    stale_dir = tmp_path / f".store.p{dead}-xyz.tmp"
    stale_part = tmp_path / f".emotions.arff.p{dead}-q1.part"
    legacy = tmp_path / ".out.json.k3j4.tmp"  # no pid: judged by age only
    mine = tmp_path / f".out.json.p{os.getpid()}-mine.tmp"
    live = tmp_path / f".out.json.p{os.getppid()}-live.tmp"
    fresh = tmp_path / f".out.json.p{dead}-fresh.tmp"
    user = tmp_path / "notes.tmp"
    for p in (stale_file, stale_part, mine, live, fresh, user, legacy):
        p.write_text("x")
    stale_dir.mkdir()
    (stale_dir / "block.npy").write_text("x")
    for p in (stale_file, stale_dir, stale_part, mine, live, user, legacy):
        _age(p)
    removed = clean_stale(tmp_path, files.STALE_PATTERNS + (".*.tmp",))
    assert set(removed) == {stale_file, stale_dir, stale_part, legacy}
    assert all(p.exists() for p in (mine, live, fresh, user))
    assert clean_stale(tmp_path / "missing") == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc on this system")
def test_a_killed_writer_not_reaped_yet_counts_as_dead(tmp_path):
    """A process killed but not waited for yet (a zombie, or one still being torn down: a
    killed run with gigabytes mapped takes seconds) writes nothing more. The run that resumes
    it takes its scratch over at once instead of writing every row copy again."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert files._pid_alive(proc.pid)
        proc.kill()
        deadline = time.monotonic() + 30
        while files._pid_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Path(f"/proc/{proc.pid}").exists()  # not reaped: still in the process table
        assert not files._pid_alive(proc.pid)
        kept = tmp_path / f"coreselect-rows.ckKEY.p{proc.pid}-abc.tmp"
        (kept / "r0").mkdir(parents=True)
        files.mark_owned(kept)  # made by coreselect: only such a folder is taken over
        mine = files.scratch_dir(tmp_path, "coreselect-rows", "ckKEY")
        assert (mine / "r0").is_dir() and not kept.exists()
        assert f".p{os.getpid()}-" in mine.name
    finally:
        proc.kill()
        proc.wait()
    assert files._pid_alive(os.getppid())  # a live process stays alive


_KILLED_WRITER = """
import os, signal, sys
from coreselect.io.files import atomic_output, atomic_path, atomic_dir
target = sys.argv[1]
with atomic_output(target) as fh:
    fh.write("partial")
    fh.flush()
    with atomic_path(target + ".csv") as p:
        p.write_text("partial")
        with atomic_dir(target + ".store") as d:
            (d / "block").write_text("partial")
            os.kill(os.getpid(), signal.SIGKILL)
"""

_NEXT_WRITER = """
import sys
from coreselect.io.files import atomic_output, atomic_path, atomic_dir
target = sys.argv[1]
with atomic_output(target) as fh:
    fh.write("whole")
with atomic_path(target + ".csv") as p:
    p.write_text("whole")
with atomic_dir(target + ".store") as d:
    (d / "block").write_text("whole")
"""


def test_leftovers_of_a_killed_process_are_cleaned_by_the_next_run(tmp_path):
    target = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(target)], capture_output=True)
    assert r.returncode == -9
    left = _hidden(tmp_path)
    assert len(left) == 3 and not target.exists()  # the kill left its temporaries
    time.sleep(0.05)
    r = subprocess.run([sys.executable, "-c", _NEXT_WRITER, str(target)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _hidden(tmp_path) == []
    assert target.read_text() == "whole" and (tmp_path / "out.json.store" / "block").read_text() == "whole"


def test_atomic_dir_refuses_an_existing_folder(tmp_path):
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "keep").write_text("x")
    with pytest.raises(OutputError, match="already exists"):
        with atomic_dir(tmp_path / "st") as d:
            (d / "new").write_text("y")
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == ["keep"]
    assert _hidden(tmp_path) == []


def test_output_set_is_all_or_nothing_on_generated_failures(tmp_path, monkeypatch):
    import random

    rng = random.Random(0)
    real_replace = os.replace
    for case in range(40):
        folder = tmp_path / f"c{case}"
        folder.mkdir()
        n = rng.randint(1, 4)
        paths = [folder / f"o{i}{rng.choice(['.json', '.csv', '.arff.gz', ''])}" for i in range(n)]
        old = {}
        for p in paths:
            if rng.random() < 0.5:
                p.write_text(f"old {p.name}")
                old[p] = p.read_text()
        fail = rng.choice(["none", "body", "rename"])
        fail_at = rng.randrange(n)
        calls = []

        def flaky(src, dst, _fail_at=fail_at, _calls=calls, _fail=fail):
            _calls.append(dst)
            if _fail == "rename" and len(_calls) == _fail_at + 1:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real_replace(src, dst)

        monkeypatch.setattr(files.os, "replace", flaky)
        try:
            with output_set(paths) as tmps:
                for i, t in enumerate(tmps):
                    if fail == "body" and i == fail_at:
                        raise RuntimeError("writer failed")
                    t.write_text(f"new {paths[i].name}")
        except (RuntimeError, OutputError):
            assert fail != "none"
        finally:
            monkeypatch.setattr(files.os, "replace", real_replace)
        if fail == "none":
            assert all(p.read_text() == f"new {p.name}" for p in paths), case
        else:  # every output as it was before: old content, or absent
            assert all((p.read_text() if p.exists() else None) == old.get(p) for p in paths), case
        assert _hidden(folder) == [], case
