"""``--temp-dir`` / ``temp_dir=``: the row copies of ``--mode rows`` on a column store go
there, and are removed when the run ends: on success, on failure and on SIGTERM. A run
killed by SIGKILL cleans nothing: the next rows run in that folder removes what it left
(``$TMPDIR`` or ``--temp-dir``), except that a checkpointed run's copies are taken over by
the run that resumes it (whole, checked copies only)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from coreselect import select as _select
# The checkpointed greedy is the weighing's: on these dense random codes the default
# ("auto") takes cmim, which records no checkpoint (refused: tests/test_conditional.py).
select = functools.partial(_select, calibration="information")
from coreselect.cli import main
from coreselect.errors import InputError
from coreselect.store import build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    Y = (rng.random((240, 3)) < 0.4).astype(int)
    X = rng.normal(size=(240, 25)) + Y @ rng.normal(size=(3, 25))
    path = tmp_path_factory.mktemp("tempdir") / "store"
    build_store(X, Y, path, block_size=9, row_block_size=80)
    return path


def test_copies_go_to_temp_dir_and_are_removed(store, tmp_path):
    seen = []

    def progress(stage, done, total):
        seen.append(sorted(p.name for p in tmp_path.iterdir()))

    a = select(store, k=5, mode="rows")
    b = select(store, k=5, mode="rows", temp_dir=tmp_path, progress=progress)
    assert list(a.selected) == list(b.selected) and a.objective == b.objective
    assert any(names and names[0].startswith(f"coreselect-rows.p{os.getpid()}-")
               for names in seen)
    assert list(tmp_path.iterdir()) == []
    assert b.engine_info["temp_dir"] == str(tmp_path)


def test_copies_are_removed_when_the_run_fails(store, tmp_path):
    def progress(stage, done, total):
        if done == 2:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError):
        select(store, k=5, mode="rows", temp_dir=tmp_path, progress=progress)
    assert list(tmp_path.iterdir()) == []


#: ``coreselect ARGV`` whose first greedy step, once done, prints READY and waits.
SLOW_STEP = """
import sys, time
import coreselect.selection.sources as sources
from coreselect.cli import main

real = sources.StoreRowShards.step_counts

def slow(self, *args, **kwargs):
    out = real(self, *args, **kwargs)
    print("READY", flush=True)
    time.sleep(120)
    return out

sources.StoreRowShards.step_counts = slow
main(sys.argv[1:])
"""


def test_copies_are_removed_on_sigterm(store, tmp_path):
    """The command is terminated while a greedy step reads the copies."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW_STEP, "select", str(store), "-k", "4",
                             "--mode", "rows", "--temp-dir", str(tmp_path), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy())
    try:
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        assert any(tmp_path.iterdir())
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode not in (0, None) and "terminated" in err, err
    assert list(tmp_path.iterdir()) == []


def test_temp_dir_must_be_a_folder(store, tmp_path, capsys):
    with pytest.raises(InputError, match="temp_dir"):
        select(store, k=3, mode="rows", temp_dir=tmp_path / "absent")
    with pytest.raises(SystemExit) as exc:
        main(["select", str(store), "-k", "3", "--mode", "rows", "--temp-dir",
              str(tmp_path / "absent")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "temp_dir" in err


def _killed(args: list, env: dict, marker: Path | None = None) -> None:
    """Run ``coreselect ARGS`` and SIGKILL it while it holds its row copies: in a greedy step
    (no ``marker``), or right after the record that ``$CORESELECT_TEST_HOLD`` names."""
    command = ([sys.executable, "-m", "coreselect"] if marker else
               [sys.executable, "-c", SLOW_STEP])
    proc = subprocess.Popen([*command, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
                            start_new_session=True)
    try:
        if marker is None:
            assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        else:
            deadline = time.monotonic() + 600  # a hang guard
            while not marker.exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _cli(args: list, env: dict) -> subprocess.CompletedProcess:
    """A fresh process (started after the killed one: its leftovers are older)."""
    done = subprocess.run([sys.executable, "-m", "coreselect", *map(str, args)],
                          capture_output=True, text=True, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("where", ["--temp-dir", "TMPDIR"])
def test_copies_of_a_killed_run_are_removed_by_the_next_run(store, tmp_path, where):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {"TMPDIR": str(scratch)} if where == "TMPDIR" else {}
    option = ["--temp-dir", scratch] if where == "--temp-dir" else []
    args = ["select", store, "-k", "4", "--mode", "rows", "-q", *option]
    _killed(args, env)
    left = [p.name for p in scratch.iterdir()]
    assert len(left) == 1 and left[0].startswith("coreselect-rows.p"), left
    # beside it: another program's folder, and a live run's copies (this process's pid)
    (scratch / "coreselect-rows-other").mkdir()
    live = scratch / f"coreselect-rows.p{os.getpid()}-live.tmp"
    live.mkdir()
    os.utime(live, (time.time() - 3600,) * 2)
    _cli(args, env)
    assert sorted(p.name for p in scratch.iterdir()) == ["coreselect-rows-other", live.name]


def _hold(tmp_path: Path, after: int) -> tuple[dict, Path]:
    marker = tmp_path / f"held-{after}"
    return {"CORESELECT_TEST_HOLD": f"checkpointed-{after}",
            "CORESELECT_TEST_HOLD_FILE": str(marker)}, marker


@pytest.mark.parametrize("damage", [None, "altered", "half-written"])
def test_a_resumed_run_takes_over_the_copies_of_the_killed_run(store, tmp_path, monkeypatch,
                                                               damage):
    """Killed (SIGKILL) after its third record (the counts pass, two steps): the run that
    resumes it reads no tile to copy it again, unless a copy is damaged (that one only is
    made again); the same result, and nothing is left."""
    import coreselect.selection.sources as sources

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ckpt = tmp_path / "run.ckpt"
    args = ["select", store, "-k", "5", "--mode", "rows", "--temp-dir", scratch, "-q",
            "--calibration", "information", "--checkpoint", ckpt]
    env, marker = _hold(tmp_path, 3)
    _killed(args, env, marker)
    (left,) = scratch.iterdir()
    assert left.name.startswith("coreselect-rows.ck")
    assert sorted(p.name for p in left.iterdir()) == [".coreselect-owned", "r0", "r1", "r2"]
    if damage == "altered":
        codes = left / "r1" / "codes.npy"
        data = bytearray(codes.read_bytes())
        data[-1] ^= 1
        codes.write_bytes(bytes(data))
    elif damage == "half-written":  # a copy being written when the run was killed
        (left / "r1").rename(left / "part-r1")
    made = []
    real = sources.StoreRowShards._save_row_major
    monkeypatch.setattr(sources.StoreRowShards, "_save_row_major",
                        lambda self, shard, features: made.append(shard) or real(
                            self, shard, features))
    resumed = select(store, k=5, mode="rows", temp_dir=scratch, checkpoint=ckpt)
    assert made == ([] if damage is None else [1])
    assert resumed.engine_info["resumed_from_step"] == 2
    plain = select(store, k=5, mode="rows")
    assert list(resumed.selected) == list(plain.selected)
    assert resumed.objective == plain.objective
    assert list(scratch.iterdir()) == []


def test_a_killed_runs_copies_are_not_taken_over_by_another_run(store, tmp_path):
    """Another checkpoint, or a run without one, does not take them: they are removed."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    base = ["select", store, "--mode", "rows", "--temp-dir", scratch, "-q"]
    env, marker = _hold(tmp_path, 2)
    _killed([*base, "-k", "5", "--calibration", "information", "--checkpoint", tmp_path / "a.ckpt"], env, marker)
    assert len(list(scratch.iterdir())) == 1
    _cli([*base, "-k", "5", "--calibration", "information", "--checkpoint", tmp_path / "b.ckpt"], {})
    assert list(scratch.iterdir()) == []


def test_a_run_killed_after_its_last_record_leaves_nothing_once_resumed(store, tmp_path):
    """Killed after its last step's record: the resumed run has no step to run (it returns
    the recorded result), and still removes the copies the killed run left."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ckpt = tmp_path / "run.ckpt"
    env, marker = _hold(tmp_path, 5)  # the counts pass, then steps 1 to 4
    _killed(["select", store, "-k", "4", "--mode", "rows", "--temp-dir", scratch, "-q",
             "--calibration", "information", "--checkpoint", ckpt], env, marker)
    assert len(list(scratch.iterdir())) == 1
    resumed = select(store, k=4, mode="rows", temp_dir=scratch, checkpoint=ckpt)
    assert resumed.engine_info["resumed_from_step"] == 4
    assert list(scratch.iterdir()) == []
