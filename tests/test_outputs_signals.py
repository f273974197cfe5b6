"""An interrupted run exits 130 (SIGINT) / 143 (SIGTERM) and leaves nothing new; a finished
one exits 0 with all its outputs (issue 17).

Real ``python -m coreselect`` processes get a real signal at a chosen stage: the
``CORESELECT_TEST_HOLD`` hook (:func:`coreselect.io.files.checkpoint`) makes the run wait there
and say so in a file, so the signal lands at that moment every time (no timing guesses).
The stages cover the whole life of a run: data read, a part finished while the others are
still in a local process pool (signal to the whole process group, as Ctrl-C in a terminal
sends it), every output written to its temporary, the first output renamed into place, and
all outputs in place. The invariant checked after each: either exit 0 and every output new
and whole, or exit 128 + signal with every output as it was before (old content or absent)
and no temporary file left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")

SRC = Path(__file__).resolve().parents[1] / "src"


def _data(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(40, 12))
    Y = (X[:, :2] > 0).astype(int)
    path = folder / "d.csv"
    header = ",".join([f"f{i}" for i in range(12)] + ["y0", "y1"])
    np.savetxt(path, np.hstack([X, Y]), delimiter=",", fmt="%d", header=header, comments="")
    return path


SELECT = ["select", "d.csv", "--labels", "2", "-k", "2", "--quiet"]
OUTS = ["--out", "res.json", "--coverage", "cov.png"]
COMMANDS = {
    "rows": [*SELECT, "--mode", "rows", *OUTS],
    "pool": [*SELECT, "--mode", "distributed", "--engine", "local", "--workers", "2",
             "--partitions", "3", *OUTS],
    "export": [*SELECT, *OUTS, "--export", "x.arff"],
    "evaluate": ["evaluate", "d.csv", "--labels", "2", "--methods", "gds", "--k", "2",
                 "--folds", "2", "--out", "ev", "--quiet"],
}
OUTPUTS = {
    "rows": ["res.json", "cov.png"], "pool": ["res.json", "cov.png"],
    "export": ["res.json", "cov.png", "x.arff", "x.xml"],
    "evaluate": ["ev/results.csv", "ev/summary.md", "ev/macro_f1.png"],
}

# (command, stage, signal, whole process group): the stages of a run, each hit by a signal.
CASES = [
    ("rows", "loaded", signal.SIGINT, False),
    ("rows", "commit", signal.SIGTERM, False),
    ("export", "renamed", signal.SIGINT, False),
    ("pool", "progress", signal.SIGTERM, True),
    ("pool", "progress", signal.SIGINT, True),
    ("evaluate", "renamed", signal.SIGTERM, False),
    ("rows", "committed", signal.SIGTERM, False),  # after the last output is in place: done
]


def _as_from_a_terminal() -> None:
    # A test run started in the background of a script (`cmd &`) inherits SIGINT ignored, and
    # coreselect keeps an ignored SIGINT ignored on purpose (nohup, `&`): the run under test is
    # started as from a terminal, where Ctrl-C reaches it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command,stage,sig,group", CASES,
                         ids=[f"{c}-{s}-{g.name}{'-group' if grp else ''}" for c, s, g, grp in CASES])
def test_signal_at_each_stage_leaves_all_or_nothing(tmp_path, command, stage, sig, group):
    _data(tmp_path)
    (tmp_path / "ev").mkdir()
    for name in OUTPUTS[command][::2]:  # some outputs exist already: they must survive
        (tmp_path / name).write_text(f"old {name}")
    before = _snapshot(tmp_path)
    marker = tmp_path.parent / f"{tmp_path.name}.held"
    env = {**os.environ, "PYTHONPATH": str(SRC), "MPLBACKEND": "Agg",
           "CORESELECT_TEST_HOLD": stage, "CORESELECT_TEST_HOLD_FILE": str(marker)}
    proc = subprocess.Popen([sys.executable, "-m", "coreselect", *COMMANDS[command]], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"stage {stage} never reached"
            time.sleep(0.02)
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    after = _snapshot(tmp_path)
    leftovers = [p.name for p in tmp_path.rglob(".*")]
    assert leftovers == [], leftovers
    if stage == "committed":  # the run had finished: it says so, with every output new
        assert proc.returncode == 0, err
        assert json.loads((tmp_path / "res.json").read_text())["selected"]
        assert all(after.get(n) not in (None, before.get(n)) for n in OUTPUTS[command])
    else:
        assert proc.returncode == 128 + sig, (proc.returncode, err)
        assert after == before, sorted(set(after) ^ set(before))
        assert b"interrupted" in err or b"terminated" in err


_TEARDOWN_PROBE = """
import builtins, sys
class Probe:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")
builtins._probe = Probe()  # collected only by the interpreter's teardown
{before}
sys.argv = ["coreselect", *{args!r}]
from coreselect.cli import main
main()
"""


@pytest.mark.parametrize("before", ["", "import atexit, gc; "
                                        "atexit.register(lambda: print('kept', gc.get_freeze_count() > 0))"])
def test_a_finished_process_leaves_before_the_teardown_with_its_code(tmp_path, before):
    """A finished ``coreselect`` process skips the interpreter's teardown (0.15-0.25 s once
    numba is loaded), with its exit code, stdout whole and its outputs in place; not when an
    exit handler was registered before it (a wrapper's, coverage's): that one still runs."""
    _data(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(SRC), "MPLBACKEND": "Agg"}
    runs = {}
    for name, args in (("ok", [*SELECT, "--out", "res.json"]),
                       ("bad", ["select", "missing.csv", "-k", "2"])):
        code = _TEARDOWN_PROBE.format(before=before, args=args)
        runs[name] = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, timeout=300)
    ok, bad = runs["ok"], runs["bad"]
    assert ok.returncode == 0 and bad.returncode == 2, (ok.stderr, bad.stderr)
    assert json.loads((tmp_path / "res.json").read_text())["selected"]
    assert any(line.startswith(("objective h =", "cmim criterion"))
               for line in ok.stdout.splitlines())
    assert bad.stderr.splitlines()[0].startswith("coreselect: error:")
    for run in (ok, bad):
        assert ("teardown ran" in run.stderr) == bool(before), run.stderr
        assert ("kept" in run.stdout) == bool(before)
    # the objects of start-up and reading stay out of the collector's scans (gc.freeze)
    assert ("kept True" in ok.stdout) == bool(before)


#: Put on PYTHONPATH for the runs below: the process sends itself SIGINT the moment it starts
#: to import the module named in $CORESELECT_TEST_SIGINT_AT (an audit hook: the same instant
#: every run, no timing guesses).
_SIGINT_AT = """
import os, signal, sys
_at, _fired = os.environ.get("CORESELECT_TEST_SIGINT_AT"), []
def _hook(event, args):
    if event == "import" and args[0] == _at and not _fired:
        _fired.append(True)
        os.kill(os.getpid(), signal.SIGINT)
if _at:
    sys.addaudithook(_hook)
"""

#: The moments of a start-up: the CLI's own imports, before its handlers are in place (click);
#: the command's module, loaded by click outside the command's body (its first import); numpy
#: half imported (its first submodule), where a handler that imports would find it half made;
#: the output machinery, half imported; and the CSV reader, in the command's body.
EARLY = ["click", "coreselect.selection.spec", "numpy.version", "coreselect.io._scratch",
         "coreselect.io.csvfile"]


def _interrupted_at(tmp_path: Path, *, at: str | None = None, delay: float | None = None):
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SIGINT_AT)
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{SRC}", "MPLBACKEND": "Agg",
           "CORESELECT_TEST_SIGINT_AT": at or ""}
    proc = subprocess.Popen([sys.executable, "-m", "coreselect", *SELECT, "--out", "res.json"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        if delay is not None:
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err.decode()


@pytest.mark.parametrize("at", EARLY)
def test_ctrl_c_while_the_command_starts_is_one_line_and_130(tmp_path, at):
    """Ctrl-C at any moment of the start-up ends the run as a later one does: exit 130, the
    one line on stderr, no traceback and no output."""
    _data(tmp_path)
    code, err = _interrupted_at(tmp_path, at=at)
    assert (code, err) == (130, "coreselect: interrupted\n"), (code, err[-3000:])
    assert not (tmp_path / "res.json").exists()


@pytest.mark.parametrize("delay", [0.3, 0.6, 1.0])
def test_ctrl_c_after_a_delay_is_one_line_and_130_or_a_finished_run(tmp_path, delay):
    """Ctrl-C some time after the start: interrupted (130, one line, no output) or, on a fast
    machine, already finished (0, its output whole); never killed by the signal, never a
    traceback."""
    _data(tmp_path)
    code, err = _interrupted_at(tmp_path, delay=delay)
    if code == 0:
        assert json.loads((tmp_path / "res.json").read_text())["selected"]
    else:
        assert (code, err) == (130, "coreselect: interrupted\n"), (code, err[-3000:])
        assert not (tmp_path / "res.json").exists()


def test_an_interrupt_inside_the_import_machinery_is_asked_again_outside(monkeypatch):
    """Raised in importlib's own code (between its lock and its `try`, or in the weakref
    callback that drops a module lock, where the exception is printed and dropped), an
    interrupt was lost with the import lock held and the run hung at its next import. There
    the handler sends the signal again instead, to be raised once execution has left it."""
    from types import SimpleNamespace

    from coreselect.cli import _common
    from coreselect.io.files import last_outputs_committed

    last_outputs_committed(reset=True)
    sent = []

    class Now:  # the timer that sends the signal again, fired at once
        def __init__(self, delay, function, args):
            self.function, self.args, self.daemon = function, args, False

        def start(self):
            assert self.daemon  # never holds the process open
            self.function(*self.args)

    monkeypatch.setattr(_common.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    monkeypatch.setattr(_common.threading, "Timer", Now)
    importlib_frame = SimpleNamespace(f_code=SimpleNamespace(co_filename="<frozen importlib._bootstrap>"))
    try:
        _common._on_signal(signal.SIGINT, importlib_frame)
    except KeyboardInterrupt:
        pytest.fail("the interrupt was raised inside the import machinery")
    assert sent == [(os.getpid(), signal.SIGINT)]
    with pytest.raises(KeyboardInterrupt):  # anywhere else, at once
        _common._on_signal(signal.SIGINT, sys._getframe())
    assert len(sent) == 1
