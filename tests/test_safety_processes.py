"""Nothing left running, nothing left behind:

* the workers of a local process pool (``--workers``: store build, select --mode distributed)
  and of ``evaluate --jobs`` die with their parent when it is SIGKILLed (Linux: a
  parent-death signal set in the pool's initializer);
* a build killed while it deletes its finished checkpoint leaves ``CK.parts.removed``, which
  the same command sweeps even though it then stops at "already exists";
* ``evaluate --jobs 2`` stopped by SIGTERM (mid-run, or while its report is committed) exits
  non-zero, prints no worker traceback and leaves no (empty) output folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_safety_exits import _svm

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the parent-death signal is Linux's")

SRC = Path(__file__).resolve().parents[1] / "src"


def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(SRC), "MPLBACKEND": "Agg", **extra}


def _kill_parent_and_watch(proc: subprocess.Popen, n_workers: int, started=None) -> None:
    deadline = time.monotonic() + 120
    workers: set[int] = set()
    while len(workers) < n_workers:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the pool never started"
        workers = _children(proc.pid)
        time.sleep(0.05)
    if started is not None:
        while not started():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    try:
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "pool workers outlived their parent"
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


SLOW_POOL = """
import sys, time
from coreselect.engines.local import LocalEngine

def slow(shared, task):
    time.sleep(90)
    return task

LocalEngine(2).map(slow, None, [1, 2, 3])
"""


def test_local_pool_workers_die_with_a_killed_parent(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(SLOW_POOL)
    proc = subprocess.Popen([sys.executable, str(script)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _kill_parent_and_watch(proc, 2)


SLOW_FIT = """
import os, sys, time

class Slow:
    def __init__(self, k, seed):
        self.k = k

    def fit(self, X, Y):
        open(os.environ["SLOW_STARTED"], "a").close()
        time.sleep(90)
"""

SLOW_EVALUATE = """
import numpy as np
import slowfit
from coreselect.evaluation import protocol

if __name__ == "__main__":  # "spawn" workers import this file again
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (40, 6)).astype(float)
    Y = (rng.random((40, 2)) < 0.5).astype(int)
    protocol.run_protocol(X, Y, {"slow": slowfit.Slow}, [1], n_folds=2, jobs=2)
"""


def test_evaluate_jobs_workers_die_with_a_killed_parent(tmp_path):
    (tmp_path / "slowfit.py").write_text(SLOW_FIT)  # "spawn" workers import it by name
    (tmp_path / "evaluate.py").write_text(SLOW_EVALUATE)
    started = tmp_path / "started"
    env = _env(PYTHONPATH=f"{SRC}{os.pathsep}{tmp_path}", SLOW_STARTED=str(started))
    proc = subprocess.Popen([sys.executable, str(tmp_path / "evaluate.py")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _kill_parent_and_watch(proc, 2, started=started.exists)


def _held(tmp_path: Path, hold: str, args: list[str]) -> tuple[subprocess.Popen, Path]:
    marker = tmp_path / "held"
    marker.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "coreselect", *args], cwd=tmp_path,
                            env=_env(CORESELECT_TEST_HOLD=hold,
                                     CORESELECT_TEST_HOLD_FILE=str(marker)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(proc.communicate())
        assert time.monotonic() < deadline, f"{hold} never reached"
        time.sleep(0.02)
    return proc, marker


def test_a_kill_during_the_last_cleanup_is_swept_by_the_next_run(tmp_path):
    _svm(tmp_path / "d" / "a.svm")
    _svm(tmp_path / "d" / "b.svm", seed=1)
    args = ["store", "build", "d", "s", "--row-block-size", "100", "--workers", "2",
            "--checkpoint", "ck", "-q"]
    proc, _ = _held(tmp_path, "build-removing", args)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert (tmp_path / "ck.parts.removed").is_dir() and (tmp_path / "s").is_dir()
    again = subprocess.run([sys.executable, "-m", "coreselect", *args], cwd=tmp_path,
                           env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "already exists" in again.stderr, again.stderr
    assert not (tmp_path / "ck.parts.removed").exists()


def _evaluate_args() -> list[str]:
    return ["evaluate", "d.svm", "--methods", "gds,random", "--k", "2,3", "--folds", "3",
            "--jobs", "2", "--out", "out", "-q"]


def _stopped_cleanly(proc: subprocess.Popen, tmp_path: Path) -> None:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0, (out, err)
    assert "Traceback" not in err and "Error" not in err.replace("error:", ""), err
    assert not (tmp_path / "out").exists(), list((tmp_path / "out").iterdir())


def test_evaluate_jobs_sigterm_while_the_workers_start(tmp_path):
    """SIGTERM as soon as the pool's processes exist (they are still being sent their
    data): no worker traceback, a non-zero exit, no output folder."""
    _svm(tmp_path / "d.svm", rows=120)
    proc = subprocess.Popen([sys.executable, "-m", "coreselect", *_evaluate_args()],
                            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_children(proc.pid)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGTERM)
    _stopped_cleanly(proc, tmp_path)


def test_a_signal_taken_by_another_thread_waits_for_the_end_of_the_held_block():
    """While the pool's workers are spawned the parent holds SIGTERM back. The kernel hands a
    process's signal to any thread that has it unblocked (here one started before the block,
    as a kernel pool's threads are), and Python runs the handler in the main thread all the
    same: it must still wait for the end of the block, and run there once."""
    import threading

    from coreselect.evaluation.protocol import _signals_held

    calls: list[str] = []
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()  # SIGTERM unblocked in it
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: calls.append("handled"))
    try:
        with _signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:  # bytecode boundaries: where a handler runs
                time.sleep(0.01)
            calls.append("block ends")
        deadline = time.monotonic() + 5
        while "handled" not in calls and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop.set()
    assert calls == ["block ends", "handled"]


def test_evaluate_jobs_sigterm_while_the_report_is_committed(tmp_path):
    _svm(tmp_path / "d.svm", rows=120)
    proc, _ = _held(tmp_path, "commit", _evaluate_args())
    os.kill(proc.pid, signal.SIGTERM)
    _stopped_cleanly(proc, tmp_path)


def test_an_initializer_run_in_the_parent_itself_leaves_it_running():
    """A pool double that runs its initializer in the calling process (a thread pool, as the
    option-matrix tests use) must not take the caller for an orphaned worker and end it (it
    did: os._exit(1), a test process gone without a word). Run in a child: that is what died."""
    import subprocess
    import sys

    code = ("import os; from coreselect.utils import die_with_parent; "
            "die_with_parent(os.getpid()); print('alive')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "alive", (r.returncode, r.stderr[-500:])
