"""Progress where people look (coreselect.progress): lines in a log, bars on a terminal,
nothing with -q, and the results of `evaluate` on stdout."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pandas as pd
import pytest

from coreselect.progress import Reporter, format_seconds, interval_from_env

LINE = re.compile(r"^coreselect: .+")


def _cli(*args, interval="0", timeout=300):
    """The CLI in a fresh process, stderr a pipe (not a terminal)."""
    env = dict(os.environ, CORESELECT_PROGRESS_INTERVAL=interval)
    return subprocess.run([sys.executable, "-m", "coreselect", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_select_writes_progress_lines_to_a_log_and_none_with_quiet():
    args = ["select", "synthesized", "-k", 3, "--mode", "streaming", "--json"]
    proc = _cli(*args)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(LINE.match(x) for x in lines), proc.stderr
    assert "\r" not in proc.stderr  # a log gets lines, not a redrawn bar
    parts = [x for x in lines if x.startswith("coreselect: parts ")]
    assert re.search(r"parts \d+/\d+ \(\d+%\), .*elapsed", parts[0]), parts
    assert re.search(r"parts (\d+)/\1 done in ", parts[-1]), parts  # the stage's last line
    assert any(x.startswith("coreselect: starting the engine") for x in lines)
    quiet = _cli(*args, "-q")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout == proc.stdout or quiet.stdout.startswith("{")


def test_a_short_run_says_nothing_at_the_default_interval():
    """Lines come every interval of a stage: a run shorter than that prints none."""
    proc = _cli("select", "synthesized", "-k", 3, "--json", interval="3600")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_evaluate_prints_progress_and_its_results(tmp_path):
    args = ["evaluate", "synthesized", "--methods", "gds,random", "--k", "2,3", "--folds", 2,
            "--measures", "micro_f1", "--out", tmp_path / "ev"]
    proc = _cli(*args)
    assert proc.returncode == 0, proc.stderr
    cells = [x for x in proc.stderr.splitlines() if "(method, k, fold) cells" in x]
    assert cells and cells[-1].endswith(tuple("0123456789s")) and "8/8 done in" in cells[-1]
    # stdout: mean ± std per method and k, the best of each k marked
    out = proc.stdout.splitlines()
    assert out[0].startswith("mean ± std over 2 folds")
    table = out[out.index("Micro-averaged F1 (micro_f1)") + 1:]
    assert table[0].split() == ["k", "gds", "random"]
    assert [row.split()[0] for row in table[1:3]] == ["2", "3"]
    assert all(row.count("±") == 2 and row.count("*") == 1 for row in table[1:3])
    results = pd.read_csv(tmp_path / "ev" / "results.csv")
    best = results.groupby(["k", "method"])["value"].mean().groupby("k").idxmax()
    for row, k in zip(table[1:3], (2, 3)):
        cells_ = re.findall(r"(\d\.\d{4}) ± \d\.\d{4}( \*)?", row)
        marked = ["gds", "random"][[bool(c[1]) for c in cells_].index(True)]
        assert (k, marked) == best[k]
    quiet = _cli(*args[:-1], tmp_path / "ev2", "-q")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == proc.stdout


# -- the reporter itself --------------------------------------------------------------------
def _wait_for(predicate, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_lines_follow_the_interval():
    log = io.StringIO()
    with Reporter(stream=log, tty=False, interval=3600) as rep:
        for i in range(101):
            rep("select", i, 100)
    assert log.getvalue() == ""  # a stage shorter than the interval: nothing
    log = io.StringIO()
    with Reporter(stream=log, tty=False, interval=0, labels={"select": "greedy steps"}) as rep:
        for i in range(5):
            rep("select", i, 4)
    lines = log.getvalue().splitlines()
    assert len(lines) == 5 and lines[0].startswith("coreselect: greedy steps 0/4 (0%)")
    assert "~" in lines[1] and "left" in lines[1] and lines[-1].startswith(
        "coreselect: greedy steps 4/4 done in ")


def test_nothing_to_count_is_no_stage():
    log = io.StringIO()
    with Reporter(stream=log, tty=False, interval=0) as rep:
        rep("parts", 0, 0)
        assert rep._stages == {}
    assert log.getvalue() == ""


def test_a_waiting_stage_keeps_reporting():
    """A stage without updates (a cluster starting) still gets its lines, then its time."""
    log = io.StringIO()
    rep = Reporter(stream=log, tty=False, interval=0)
    with rep.stage("starting"):
        _wait_for(lambda: "starting: " in log.getvalue())
    assert "coreselect: starting done in " in log.getvalue()
    rep.close()
    assert rep._ticker is None


def test_a_failed_stage_ends_without_a_done_line():
    log = io.StringIO()
    rep = Reporter(stream=log, tty=False, interval=0)
    with pytest.raises(RuntimeError), rep.stage("loading"):
        rep("x", 0, 2)
        raise RuntimeError
    rep.close()
    assert "done" not in log.getvalue()


def test_quiet_reporter_draws_nothing():
    log = io.StringIO()
    with Reporter(enabled=False, stream=log, tty=False, interval=0) as rep:
        with rep.stage("loading"):
            rep("select", 1, 2)
    assert log.getvalue() == ""


def test_a_terminal_gets_a_bar_per_stage():
    term = io.StringIO()
    with Reporter(stream=term, tty=True, interval=0) as rep:
        with rep.stage("loading"):
            pass
        for i in range(4):
            rep("select", i, 3)
    text = term.getvalue()
    assert "\r" in text and "loading" in text and "select" in text
    assert "coreselect: " not in text  # bars, not log lines


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.setenv("CORESELECT_PROGRESS_INTERVAL", "2.5")
    assert interval_from_env() == 2.5
    monkeypatch.setenv("CORESELECT_PROGRESS_INTERVAL", "off")
    assert interval_from_env() == float("inf")
    monkeypatch.setenv("CORESELECT_PROGRESS_INTERVAL", "soon")
    assert interval_from_env() == 10.0
    assert format_seconds(9.23) == "9.2 s" and format_seconds(185) == "3 min 05 s"
    assert format_seconds(3725) == "1 h 02 min"


def test_summary_text_marks_the_best_of_each_row_or_sweep_column():
    from coreselect.evaluation.report import summary_text

    rows = [dict(method=m, k=k, fold=f, measure="micro_f1", value=v + 0.01 * f, select_seconds=0.1)
            for m, base in (("a", 0.5), ("b", 0.6)) for k in (2, 4) for f in range(3)
            for v in [base + (0.2 if (m, k) == ("a", 4) else 0.0)]]
    text = summary_text(pd.DataFrame(rows)).splitlines()
    assert text[0] == "mean ± std over 3 folds; * marks the best method at each k"
    table = text[text.index("Micro-averaged F1 (micro_f1)") + 1:]
    assert table[0].split() == ["k", "a", "b"]
    assert table[1].split() == ["2", "0.5100", "±", "0.0100", "0.6100", "±", "0.0100", "*"]
    assert table[2].split() == ["4", "0.7100", "±", "0.0100", "*", "0.6100", "±", "0.0100"]
    sweep = pd.DataFrame([dict(r, lam=lam, value=r["value"] + lam * (r["k"] == 2))
                          for r in rows if r["method"] == "a" for lam in (0.0, 1.0)])
    text = summary_text(sweep).splitlines()
    table = text[text.index("Micro-averaged F1 (micro_f1), a: rows = lambda, columns = k") + 1:]
    assert table[0].split() == ["lam", "2", "4"]
    assert table[1].split()[-1] == "*" and table[1].count("*") == 1  # lam 0: k = 4 (a tie)
    assert table[2].count("*") == 2  # lam 1 best at k = 2, and tied at k = 4


def test_an_estimator_holding_a_reporter_clones_and_pickles():
    import pickle

    import numpy as np
    from sklearn.base import clone

    from coreselect import GDSSelector

    rep = Reporter(tty=False, interval=0, labels={"select": "greedy steps"})
    sel = clone(GDSSelector(k=2, progress=rep))
    assert isinstance(sel.progress, Reporter) and sel.progress is not rep
    assert sel.progress.labels == rep.labels and sel.progress.interval == 0
    assert pickle.loads(pickle.dumps(rep)).labels == rep.labels
    log = io.StringIO()
    sel.progress._stream = log
    rng = np.random.default_rng(0)
    sel.fit(rng.integers(0, 3, (40, 6)), rng.integers(0, 2, (40, 2)))
    assert "coreselect: greedy steps 2/2 done in " in log.getvalue()
