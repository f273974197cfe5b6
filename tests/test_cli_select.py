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
