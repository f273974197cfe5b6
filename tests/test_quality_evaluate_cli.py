"""``coreselect evaluate``: default k capped on narrow data, --evaluator, gds methods, and the
lambda-sweep tables bolding the best lambda for each k."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from coreselect.evaluation.report import write_summary


def _cli(capsys, *args):
    from coreselect.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _narrow_csv(path, d=12):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(60, d))
    Y = np.column_stack([X[:, 0] > 1, X[:, 1] > 2]).astype(int)
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(d)])
    df["y0"], df["y1"] = Y[:, 0], Y[:, 1]
    df.to_csv(path, index=False)
    return path


def test_default_k_is_capped_on_narrow_data(tmp_path, capsys):
    data = _narrow_csv(tmp_path / "narrow.csv")
    out = tmp_path / "out"
    code, _, err = _cli(capsys, "evaluate", str(data), "--labels", "y0,y1", "--methods", "gds,br-chi2",
                        "--folds", "2", "--evaluator", "linear", "--out", str(out), "--quiet")
    assert code == 0, err
    assert "capped at 12" in err
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {int(r["k"]) for r in rows} == {10, 12}
    assert {r["method"] for r in rows} == {"gds", "br-chi2"}
    assert "linear" in (out / "summary.md").read_text()


def test_explicit_k_beyond_the_features_is_capped_too(tmp_path, capsys):
    data = _narrow_csv(tmp_path / "narrow.csv")
    code, _, err = _cli(capsys, "evaluate", str(data), "--labels", "y0,y1", "--k", "5,20",
                        "--methods", "br-chi2", "--folds", "2", "--out", str(tmp_path / "o"),
                        "--quiet")
    assert code == 0 and err.strip().splitlines() == ["narrow has 12 features: k capped at 12 (k = 5,12)"]
    with open(tmp_path / "o" / "results.csv", newline="") as fh:
        assert {int(r["k"]) for r in csv.DictReader(fh)} == {5, 12}


def test_lambda_sweep_bolds_the_best_lambda_of_each_k(tmp_path):
    rows = []
    # k=10: best lambda 0.2; k=20: best lambda 0.8 (the best k of every lambda is 20)
    for lam, v10, v20 in [(0.2, 0.5, 0.6), (0.8, 0.3, 0.9)]:
        for k, v in ((10, v10), (20, v20)):
            for fold in (0, 1):
                rows.append(dict(method="cgds", lam=lam, k=k, fold=fold, measure="example_f1",
                                 value=v, select_seconds=0.0))
    write_summary(pd.DataFrame(rows), tmp_path / "s.md")
    table = [l for l in (tmp_path / "s.md").read_text().splitlines() if l.startswith("| 0.")]
    assert table[0].split("|")[2].strip().startswith("**0.5000")  # lam 0.2, k 10
    assert not table[0].split("|")[3].strip().startswith("**")  # lam 0.2, k 20
    assert table[1].split("|")[3].strip().startswith("**0.9000")  # lam 0.8, k 20
    assert not table[1].split("|")[2].strip().startswith("**")  # lam 0.8, k 10


def test_evaluate_rivals_full_reference_and_stability(tmp_path, capsys):
    """Issue 30 from the command line: the new rivals and ``all`` are accepted; the summary
    states the fraction of the full model's score, the training-time ratio and stability; an
    option no such run uses (--lam without a GDS method) is refused in one line."""
    data = _narrow_csv(tmp_path / "narrow.csv")
    out = tmp_path / "out"
    code, _, err = _cli(capsys, "evaluate", str(data), "--labels", "y0,y1", "--methods",
                        "gds,max-chi2,atr,l1,trees,all", "--k", "2,4", "--folds", "2",
                        "--evaluator", "linear", "--out", str(out), "--quiet")
    assert code == 0, err
    rows = pd.read_csv(out / "results.csv")
    assert set(rows.method) == {"gds", "max-chi2", "atr", "l1", "trees", "all"}
    assert set(rows[rows.method == "all"].k) == {12}
    assert {"fit_seconds", "predict_seconds"} <= set(rows.columns)
    md = (out / "summary.md").read_text()
    assert "as a fraction of the full-feature model" in md
    assert "training time as a ratio" in md and "Kuncheva" in md
    code, _, err = _cli(capsys, "evaluate", str(data), "--labels", "y0,y1", "--methods", "all",
                        "--lam", "0.3", "--k", "2", "--folds", "2", "--out", str(tmp_path / "o2"))
    assert code == 2 and len(err.strip().splitlines()) == 1
