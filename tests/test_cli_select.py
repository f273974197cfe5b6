"""`coreselect select`: output formats and one-line errors with exit code 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from coreselect.cli import main


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_json_output(capsys, tmp_path):
    out_file = tmp_path / "result.json"
    code, out, err = run(capsys, "select", "synthesized", "-k", "16", "--json", "--out", str(out_file))
    assert code == 0, err
    report = json.loads(out)  # exactly one JSON object
    for key in ("selected", "names", "objective", "relevance", "diversity", "k", "lam", "p",
                "mode", "seconds"):
        assert key in report
    assert len(report["selected"]) == 16 and report["k"] == 16 and report["mode"] == "centralized"
    assert sorted(i // 50 for i in report["selected"]) == list(range(16))
    assert report["names"][0].startswith("l") and report["names"][0].endswith("_c0")
    assert json.loads(out_file.read_text())["selected"] == report["selected"]
    # the default calibration's p on 8 labels: max(3, ceil(4 * 16 / 8))
    assert report["p"] == report["spec"]["p"] == json.loads(out_file.read_text())["p"] == 8
    code, out, err = run(capsys, "select", "synthesized", "-k", "4", "--p", "2", "--json")
    assert json.loads(out)["p"] == json.loads(out)["spec"]["p"] == 2
    # p = all is written "all", not the integer standing for it
    code, out, err = run(capsys, "select", "synthesized", "-k", "4", "--p", str(2**31 - 1),
                         "--json")
    assert json.loads(out)["p"] == json.loads(out)["spec"]["p"] == "all"


def test_table_output(capsys):
    code, out, err = run(capsys, "select", "synthesized", "-k", "5", "--lam", "0.3", "--p", "3",
                         "--relevance", "mi")
    assert code == 0, err
    assert "rank" in out and "objective h =" in out and "mi" in out
    assert len([l for l in out.splitlines() if l.strip()[:1].isdigit()]) == 5


def _csv(tmp_path, X, Y, name="d.csv"):
    path = tmp_path / name
    cols = [f"f{i}" for i in range(X.shape[1])] + [f"y{i}" for i in range(Y.shape[1])]
    rows = [",".join(cols)] + [",".join(str(v) for v in r) for r in np.hstack([X, Y])]
    path.write_text("\n".join(rows) + "\n")
    return path


BAD = {
    "missing file": lambda tmp: ["select", str(tmp / "nope.arff"), "-k", "3"],
    "unreadable format": lambda tmp: ["select", str(_write(tmp / "x.arff", "garbage\n\x00\x01")), "-k", "3"],
    "k < 1": lambda tmp: ["select", "synthesized", "-k", "0"],
    "k > features": lambda tmp: ["select", "synthesized", "-k", "801"],
    "p < 1": lambda tmp: ["select", "synthesized", "--p", "0"],
    "lam > 1": lambda tmp: ["select", "synthesized", "--lam", "1.5"],
    "lam < 0": lambda tmp: ["select", "synthesized", "--lam", "-0.5"],
    "not a number": lambda tmp: ["select", "synthesized", "-k", "many"],
    "unknown option": lambda tmp: ["select", "synthesized", "--frobnicate"],
}


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, case):
    out_file = tmp_path / "out.json"
    args = BAD[case](tmp_path) + ["--out", str(out_file)]
    code, out, err = run(capsys, *args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("coreselect: error:")
    assert "Traceback" not in err and out == ""
    assert not out_file.exists() and not list(tmp_path.glob(".out*"))


@pytest.mark.parametrize("bad", ["nan", "inf"])
def test_non_finite_values(capsys, tmp_path, bad):
    X = np.arange(40, dtype=float).reshape(10, 4)
    X[3, 1] = float(bad)
    Y = np.eye(10, 2, dtype=int)
    path = _csv(tmp_path, X, Y)
    code, out, err = run(capsys, "select", str(path), "--labels", "2", "-k", "2")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "nan" in err.lower() or "infinit" in err.lower()


def test_no_labels(capsys, tmp_path):
    path = _write(tmp_path / "nolabels.arff",
                  "@relation x\n@attribute a numeric\n@attribute b numeric\n@data\n1,2\n3,4\n")
    code, out, err = run(capsys, "select", str(path), "-k", "1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "label" in err.lower()


def test_help_is_fast_and_lists_commands(capsys):
    code, out, err = run(capsys, "--help")
    assert code == 0 and "select" in out


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    from coreselect.datasets import make_synthesized
    from coreselect.store import build_store

    ds = make_synthesized(random_state=2)
    path = tmp_path_factory.mktemp("cli") / "folder"
    return build_store(ds.X, ds.Y, path, block_size=100, seed=3, name="synth")


@pytest.mark.parametrize("option", [["--bins", "3"], ["--strategy", "uniform"],
                                    ["--min-bin-count", "2"], ["--labels", "4"],
                                    ["--export", "x.csv"]])
def test_store_refuses_options_it_would_ignore(capsys, tmp_path, small_store, option):
    if option[0] == "--export":
        option = ["--export", str(tmp_path / "x.csv")]
    code, out, err = run(capsys, "select", str(small_store.path), "-k", "3", *option)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert option[0] in err and "column store" in err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("mode, option", [
    ("centralized", ["--engine", "dask"]), ("centralized", ["--workers", "2"]),
    ("centralized", ["--partitions", "3"]), ("centralized", ["--coreset-size", "4"]),
    ("centralized", ["--scheduler", "tcp://127.0.0.1:9"]), ("streaming", ["--engine", "dask"]),
    ("streaming", ["--workers", "2"])])
def test_options_a_mode_would_ignore_are_refused(capsys, mode, option):
    code, out, err = run(capsys, "select", "synthesized", "-k", "3", "--mode", mode, *option)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert option[0] in err and f"--mode {mode}" in err


def test_defaults_given_explicitly_are_fine_when_used(capsys):
    code, out, err = run(capsys, "select", "synthesized", "-k", "3", "--mode", "distributed",
                         "--engine", "local", "--partitions", "2", "--coreset-size", "3",
                         "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["partitions"] == 2 and report["strategy"] == "distributed"
    assert {"engine_start", "parts", "union"} <= set(report["timings"])


def test_coresets_smaller_than_k_name_the_cause(capsys):
    code, out, err = run(capsys, "select", "synthesized", "-k", "5", "--mode", "distributed",
                         "--coreset-size", "2", "--partitions", "2")
    assert code == 2 and "coresets" in err and "fewer than -k 5" in err
    assert "selectable" not in err


def test_folder_that_is_not_a_store(capsys, tmp_path):
    code, out, err = run(capsys, "select", str(tmp_path), "-k", "3")
    assert code == 2 and "not a coreselect column store" in err
    assert len(err.strip().splitlines()) == 1


def test_store_report(capsys, small_store):
    code, out, err = run(capsys, "select", str(small_store.path), "-k", "4", "--mode",
                         "distributed", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["dataset"] == "synth" and report["union_size"] > 0 and "union" not in report
    assert len(report["feature_relevance"]) == 4
    assert all(np.isfinite(report["feature_relevance"])) and min(report["feature_relevance"]) > 0
    # the table shows them too (no nan)
    code, out, err = run(capsys, "select", str(small_store.path), "-k", "4")
    assert code == 0 and "nan" not in out


def test_calibration_option_and_no_progress_bars_off_a_terminal(capsys):
    from coreselect.core.objective import CALIBRATIONS, DEFAULT_CALIBRATION

    code, out, err = run(capsys, "select", "synthesized", "-k", "3", "--json")
    # the default on binary columns: information
    assert code == 0 and json.loads(out)["calibration"] == "information" != DEFAULT_CALIBRATION
    assert "\r" not in err and err == ""  # stderr is not a terminal here: no tqdm bars
    code, out, err = run(capsys, "select", "synthesized", "-k", "3", "--json",
                         "--calibration", CALIBRATIONS[-1])
    assert code == 0 and json.loads(out)["calibration"] == CALIBRATIONS[-1]
    code, out, err = run(capsys, "select", "synthesized", "-k", "3", "--calibration", "nope")
    assert code == 2 and len(err.strip().splitlines()) == 1


@pytest.mark.dask
def test_verbose_dask_run_logs_our_stages_only(small_store):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "coreselect", "select", str(small_store.path), "-k", "3",
         "--mode", "distributed", "--engine", "dask", "--workers", "1", "-v", "--json"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    # our stages (partition, cluster start, parts, union) and nothing of Dask's internals
    assert any("coreselect.selection.strategies: parts" in line for line in lines)
    assert not [line for line in lines if " distributed." in line], lines
    assert len(lines) < 10 and json.loads(proc.stdout)["engine"] == "dask"


def test_explain_and_coverage(capsys, tmp_path):
    png = tmp_path / "coverage.png"
    code, out, err = run(capsys, "select", "synthesized", "-k", "16", "--json", "--explain",
                         "--coverage", str(png))
    assert code == 0, err
    report = json.loads(out)
    explained = report["explanations"]
    assert [e["feature"] for e in explained] == report["names"]
    for e in explained:  # synthesized feature "l<j>_..." was planted for label j
        planted = "label" + e["feature"].split("_")[0][1:]
        assert e["labels"][0] == planted and 0 < e["g_share"] <= 1
    # each share is rounded to 6 decimals in the JSON: the sum is 1 within their rounding
    assert abs(sum(e["g_share"] for e in explained) - 1) <= len(explained) * 5e-7 + 1e-12
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_loading_pauses_the_cyclic_collector_and_restores_it(capsys, tmp_path, monkeypatch):
    """The collector waits while the file is read and numba warms up (its passes over
    numba's new objects took 50 ms of the GIL), and is on again afterwards, also when the
    read fails; a caller that had it off keeps it off, and a caller's objects are not frozen."""
    import gc
    import sys

    import coreselect.datasets.load  # noqa: F401 - the module (the package exports a function)

    loader = sys.modules["coreselect.datasets.load"]
    seen = []
    real = loader.load
    monkeypatch.setattr(loader, "load", lambda *a, **k: seen.append(gc.isenabled()) or real(*a, **k))
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    code, out, _ = run(capsys, "select", "synthesized", "-k", "3", "--json")
    assert code == 0 and json.loads(out)["selected"] and seen == [False] and gc.isenabled()
    assert gc.get_freeze_count() == frozen  # only the coreselect process freezes its objects
    code, _, err = run(capsys, "select", str(tmp_path / "missing.csv"), "-k", "3")
    assert code == 2 and "no such file" in err and seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        run(capsys, "select", "synthesized", "-k", "3", "--json")
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("k, auto_k", [("auto", True), ("5", False)])
def test_the_warm_up_thread_loads_k_auto_kernel_for_k_auto_only(capsys, monkeypatch, k, auto_k):
    """``select -k auto`` asks the warm-up thread that runs while the file is read for
    k="auto"'s prefix step too; a fixed k does not (it would load a kernel it never calls)."""
    import coreselect.cli.select as cli_select

    asked = []
    monkeypatch.setattr(cli_select, "_warm_up", lambda auto_k=False: asked.append(auto_k))
    code, out, err = run(capsys, "select", "emotions", "-k", k, "--json")
    assert code == 0, err
    assert asked == [auto_k]
