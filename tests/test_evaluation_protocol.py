"""Cross-validation protocol, reports and the ``coreselect evaluate`` command."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from coreselect.baselines.transform import RankingSelector
from coreselect.datasets import make_synthesized
from coreselect.errors import InputError
from coreselect.evaluation.measures import MEASURES
from coreselect.evaluation.protocol import (
    RESULT_COLUMNS,
    make_folds,
    method_factories,
    parse_k,
    parse_values,
    run_protocol,
)
from coreselect.evaluation.report import write_summary


def test_parse_k():
    assert parse_k("10,20,50") == [10, 20, 50]
    assert parse_k("10:100:10") == list(range(10, 101, 10))
    assert parse_k("50, 10") == [10, 50]
    for bad in ("", "a", "0", "10:5:1", "1.5", "10:100:-5"):
        with pytest.raises(InputError):
            parse_k(bad)


def test_parse_values():
    assert parse_values("0,0.1,...,1") == [round(0.1 * i, 10) for i in range(11)]
    assert parse_values("0:1:0.25") == [0, 0.25, 0.5, 0.75, 1.0]
    assert parse_values("0.2,0.7") == [0.2, 0.7]
    with pytest.raises(InputError):
        parse_values("0,...,1")


# --- spies (module level so that they pickle) ---------------------------------------------
FIT_LOG: list[dict] = []


class SpyRanker(RankingSelector):
    """Records the rows (via an id column) every fit sees."""

    def _scores(self, X, Y):
        FIT_LOG.append({"kind": "ranker", "k": self.k, "ids": set(np.asarray(X[:, 0]).astype(int).tolist())})
        return -np.arange(X.shape[1], dtype=float)


class SpyGreedy:
    """A non-ranker (like cgds): refit for every k."""

    def __init__(self, k):
        self.k = k

    def fit(self, X, Y):
        FIT_LOG.append({"kind": "greedy", "k": self.k, "ids": set(np.asarray(X[:, 0]).astype(int).tolist())})
        self.selected_ = np.arange(self.k)
        return self


def _spy_ranker(k, seed):
    return SpyRanker(k=k)


def _spy_greedy(k, seed):
    return SpyGreedy(k)


def _data(n=60, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 0] = np.arange(n)  # row id
    Y = rng.integers(0, 2, (n, 3))
    return X, Y


def test_no_leakage_and_ranker_caching():
    FIT_LOG.clear()
    X, Y = _data()
    folds = make_folds(60, 3, seed=5)
    calls = []
    df = run_protocol(
        X, Y, {"spy-r": _spy_ranker, "spy-g": _spy_greedy}, [2, 4, 6], n_folds=3, seed=5,
        progress=lambda done, total: calls.append((done, total)),
    )
    rankers = [e for e in FIT_LOG if e["kind"] == "ranker"]
    greedy = [e for e in FIT_LOG if e["kind"] == "greedy"]
    # a ranker is fit once per fold with the largest k; a greedy method once per (k, fold)
    assert len(rankers) == 3 and {e["k"] for e in rankers} == {6}
    assert len(greedy) == 9 and sorted(e["k"] for e in greedy) == [2, 2, 2, 4, 4, 4, 6, 6, 6]
    trains = [set(tr.tolist()) for tr, _ in folds]
    tests = [set(te.tolist()) for _, te in folds]
    for entry in FIT_LOG:
        # every fit sees exactly one training fold, never a test row of that fold
        assert entry["ids"] in trains
        f = trains.index(entry["ids"])
        assert not entry["ids"] & tests[f]
    assert calls[0] == (0, 18) and calls[-1] == (18, 18)
    assert list(df.columns) == RESULT_COLUMNS
    assert len(df) == 2 * 3 * 3 * len(MEASURES)


def test_protocol_parallel_equals_serial():
    d = make_synthesized(n_samples=64, copies=3, random_state=1)
    methods = method_factories(["random", "br-ig"])
    a = run_protocol(d.X, d.Y, methods, [4, 8], n_folds=2, seed=0, jobs=1)
    calls = []
    b = run_protocol(d.X, d.Y, methods, [4, 8], n_folds=2, seed=0, jobs=2,
                     progress=lambda done, total: calls.append((done, total)))
    cols = ["method", "k", "fold", "measure", "value"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert calls[-1] == (8, 8)


def test_protocol_rejects_bad_input():
    X, Y = _data()
    with pytest.raises(InputError):
        run_protocol(X, Y, {"spy-r": _spy_ranker}, [9], n_folds=3)
    with pytest.raises(InputError):
        run_protocol(X, Y, {"spy-r": _spy_ranker}, [2], n_folds=1)
    with pytest.raises(InputError):
        method_factories(["nope"])


def test_summary_file(tmp_path):
    X, Y = _data()
    df = run_protocol(X, Y, {"spy-r": _spy_ranker, "spy-g": _spy_greedy}, [2, 4], n_folds=2)
    write_summary(df, tmp_path / "summary.md", title="toy")
    md = (tmp_path / "summary.md").read_text()
    assert "±" in md and "spy-g" in md and "Macro-averaged F1" in md
    # atomic_path writes a hidden ".summary.XXXX.md" beside the target: none may be left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"]


def _cli(capsys, *args):
    from coreselect.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_cli_evaluate_on_synthesized(tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = _cli(
        capsys, "evaluate", "synthesized", "--methods", "cgds,br-ig,lp-rf,random", "--k", "10,20",
        "--folds", "2", "--seed", "0", "--out", str(out), "--quiet",
    )
    assert code == 0, err
    rows = _read_csv(out / "results.csv")
    assert set(RESULT_COLUMNS) <= set(rows[0])
    assert {r["method"] for r in rows} == {"cgds", "br-ig", "lp-rf", "random"}
    assert {r["k"] for r in rows} == {"10", "20"} and {r["fold"] for r in rows} == {"0", "1"}
    assert len(rows) == 4 * 2 * 2 * len(MEASURES)
    assert (out / "summary.md").is_file()
    for m in MEASURES:
        assert (out / f"{m}.png").stat().st_size > 1000


def test_cli_lambda_sweep(tmp_path, capsys):
    out = tmp_path / "sweep"
    code, _, err = _cli(
        capsys, "evaluate", "synthesized", "--methods", "cgds", "--k", "10", "--folds", "2",
        "--lam-sweep", "0,0.5,1", "--out", str(out), "--quiet",
    )
    assert code == 0, err
    rows = _read_csv(out / "results.csv")
    assert {r["lam"] for r in rows} == {"0.0", "0.5", "1.0"} or {r["lam"] for r in rows} == {"0", "0.5", "1"}
    assert (out / "lambda_sweep.png").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["--methods", "nope"],
        ["--k", "10:x"],  # a k above the features is capped (tests/test_cli_seams.py)
        ["--folds", "1"],
        ["--lam-sweep", "0,2", "--methods", "cgds"],
        ["--lam-sweep", "0,1", "--methods", "br-ig"],
    ],
)
def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys, args):
    code, _, err = _cli(capsys, "evaluate", "synthesized", "--out", str(tmp_path / "o"), "--quiet", *args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("coreselect: error:")
    assert not (tmp_path / "o" / "results.csv").exists()
