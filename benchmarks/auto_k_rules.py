"""Which rule should choose k (``k="auto"``): measures, band and cap, chosen leave-one-dataset-out
so that the chosen k is close to the best fixed k on every measure and evaluator, not only the
one the rule scores.

    python benchmarks/auto_k_rules.py run [--datasets emotions,scene,...] [--folds 3]
    python benchmarks/auto_k_rules.py report

``run``: an outer ``--folds``-fold cross-validation (``run_protocol``'s split, seed 0). On each
training fold the default's greedy order up to the cap, then what every rule needs, on the
training fold only: the inner cross-validation of :mod:`coreselect.autok` (5 folds of at most
1000 rows, BRkNN-b on each prefix of the grid) with example F1 *and* macro F1 per inner fold.
On the test fold every prefix of the grid is scored by BRkNN-b and by the linear evaluator
(example and macro F1): the best fixed k is read from these. One CSV per dataset in
docs/results/auto_k_rules/ (``NAME.inner.csv``, ``NAME.outer.csv``).

``report``: every candidate rule is replayed on the inner curves (no refit), and its k's test
scores compared with the best fixed k's per (dataset, evaluator, measure) cell: *within* when
the chosen k's mean is at least the best mean minus the larger fold standard deviation of the
two. The rule is then chosen leave-one-dataset-out (on the other sets: the largest share of
cells within, ties to the smaller mean k over the cap). Writes docs/results/auto_k_rules.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import REPO_ROOT, emit, md_table, write_atomic, write_csv  # noqa: E402
from holdout import MLDR  # noqa: E402  (registers the hold-out sets' files)
from published import load_rows  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "auto_k_rules"
REPORT = REPO_ROOT / "docs" / "results" / "auto_k_rules.md"
MEASURES = ("example_f1", "macro_f1")
DEFAULT = ("emotions,scene,yeast,CAL500,genbase,medical,enron,Corel5k,tmc2007-500,bibtex,"
           "rcv1subset1,delicious")
#: sets scored by BRkNN-b only (the linear evaluator's per-label cut on many labels: time;
#: the hold-out sets as holdout.py scores them)
BRKNN_ONLY = {"CAL500", "Corel5k", "delicious", "bibtex", *MLDR}
#: the hold-out sets: never used to choose the rule, scored once with the chosen one
HOLDOUT = set(MLDR)


def run_one(name: str, folds: int, max_rows: int) -> None:
    import coreselect
    from coreselect.selection.autok import (INNER_FOLDS, INNER_ROWS, INNER_SEED, _inner_folds, auto_cap,
                                  brknn_b_prefixes, k_grid, label_scores)
    from coreselect.evaluation.protocol import _score, make_folds

    X, Y, _ = load_rows(name, max_rows)
    X = X.tocsr() if hasattr(X, "tocsr") else np.asarray(X)
    Y = Y.toarray() if hasattr(Y, "toarray") else np.asarray(Y)
    evaluators = ("brknn",) if name in BRKNN_ONLY else ("brknn", "linear")
    inner, outer = [], []
    for f, (tr, te) in enumerate(make_folds(X.shape[0], folds, 0)):
        Xtr, Ytr, Xte, Yte = X[tr], Y[tr], X[te], Y[te]
        cap = auto_cap(Xtr)
        order = np.asarray(coreselect.select(Xtr, Ytr, k=cap).selected)
        grid = k_grid(order.size)
        rows = np.arange(Xtr.shape[0])
        if rows.size > INNER_ROWS:
            rows = np.sort(np.random.default_rng(INNER_SEED).choice(rows.size, INNER_ROWS, replace=False))
        Xs = Xtr[:, order][rows]
        Xs = (Xs.toarray() if hasattr(Xs, "toarray") else Xs).astype(np.float64)
        Ys = Ytr[rows] != 0
        for i, (a, b) in enumerate(_inner_folds(rows.size, INNER_FOLDS, INNER_SEED)):
            for g, pred in zip(grid, brknn_b_prefixes(Xs[a], Ys[a], Xs[b], grid)):
                for ms, v in label_scores(Ys[b], pred, MEASURES).items():
                    inner.append(dict(dataset=name, fold=f, inner=i, k=int(g), measure=ms, value=v,
                                      cap=int(order.size)))
        for ev in evaluators:
            for g in grid:
                s = _score(Xtr, Ytr, Xte, Yte, order[:g], evaluator=ev, measures=list(MEASURES))
                for ms, v in s.items():
                    outer.append(dict(dataset=name, fold=f, evaluator=ev, k=int(g), measure=ms,
                                      value=v))
        print(f"{name}: fold {f} done (cap {order.size})", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    for part, rows_ in (("inner", inner), ("outer", outer)):
        write_atomic(OUT / f"{name}.{part}.csv", pd.DataFrame(rows_).to_csv(index=False,
                                                                            float_format="%.6g"))


# -- the rules --------------------------------------------------------------------------------
def choose(curves: dict[str, np.ndarray], grid: np.ndarray, cap: int, n_features: int,
           measures: tuple[str, ...], band: str, half_cap: bool) -> int:
    """The k a rule picks from inner ``curves`` (measure -> (inner folds, grid) scores): per
    measure, the smallest k whose mean is within the band of the best mean (``"se"``: the
    best's standard error; ``"std"``: its fold std); the largest of these over ``measures``.
    ``half_cap``: never beyond half the features unless the curve still rises there by more than
    its band."""
    from coreselect.selection.autok import band_rule

    return band_rule({m: curves[m] for m in measures}, grid, band=band,
                     half=n_features // 2 if half_cap else None)


RULES = {  # name -> (measures, band, half cap)
    "ex-se": (("example_f1",), "se", False),  # the rule before
    "ex-se-half": (("example_f1",), "se", True),
    "ex-std": (("example_f1",), "std", False),
    "macro-se": (("macro_f1",), "se", False),
    "both-se": (("example_f1", "macro_f1"), "se", False),
    "both-se-half": (("example_f1", "macro_f1"), "se", True),
    "both-std": (("example_f1", "macro_f1"), "std", False),
    "both-std-half": (("example_f1", "macro_f1"), "std", True),
    "ex-best": (("example_f1",), "best", False),
    "both-best": (("example_f1", "macro_f1"), "best", False),
    "both-best-half": (("example_f1", "macro_f1"), "best", True),
}


def replay(inner: pd.DataFrame, outer: pd.DataFrame, n_features: dict[str, int]) -> pd.DataFrame:
    """Per (rule, dataset, evaluator, measure): the chosen k per fold, its test scores, and the
    best fixed k's; ``within`` as in the module docstring."""
    rows = []
    for (d, f), cur in inner.groupby(["dataset", "fold"]):
        grid = np.sort(cur.k.unique())
        curves = {m: c.pivot(index="inner", columns="k", values="value")[grid].to_numpy()
                  for m, c in cur.groupby("measure")}
        cap = int(cur.cap.iloc[0])
        for rule, (ms, band, half) in RULES.items():
            rows.append(dict(rule=rule, dataset=d, fold=f, k=choose(curves, grid, cap,
                                                                    n_features[d], ms, band, half),
                             cap=cap))
    picks = pd.DataFrame(rows)
    out = []
    for (d, ev, ms), o in outer.groupby(["dataset", "evaluator", "measure"]):
        table = o.pivot(index="fold", columns="k", values="value")
        means = table.mean()
        best = means.idxmax()
        for rule in RULES:
            p = picks[(picks.rule == rule) & (picks.dataset == d)].set_index("fold")
            got = np.array([table.at[fo, p.at[fo, "k"]] for fo in table.index])
            tol = max(got.std(ddof=1), table[best].std(ddof=1))
            out.append(dict(rule=rule, dataset=d, evaluator=ev, measure=ms, k_mean=p.k.mean(),
                            k_frac=float((p.k / n_features[d]).mean()), score=got.mean(),
                            best_k=int(best), best=means[best], tol=tol,
                            within=bool(got.mean() >= means[best] - tol - 1e-12)))
    return pd.DataFrame(out)


def lodo(res: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for d in dict.fromkeys(res.dataset):
        train = res[res.dataset != d]
        score = train.groupby("rule", sort=False).agg(within=("within", "mean"),
                                                      frac=("k_frac", "mean"))
        pick = score.sort_values(["within", "frac"], ascending=[False, True], kind="stable").index[0]
        held = res[(res.dataset == d) & (res.rule == pick)]
        rows.append(dict(dataset=d, pick=pick, within=int(held.within.sum()), cells=len(held),
                         k_frac=float(held.k_frac.mean())))
    return pd.DataFrame(rows)


def report() -> None:
    inner = pd.concat([pd.read_csv(p) for p in sorted(OUT.glob("*.inner.csv"))], ignore_index=True)
    outer = pd.concat([pd.read_csv(p) for p in sorted(OUT.glob("*.outer.csv"))], ignore_index=True)
    width = {d: int(load_rows(d, 6000)[0].shape[1]) for d in dict.fromkeys(inner.dataset)}
    every = replay(inner, outer, width)
    held_out = every[every.dataset.isin(HOLDOUT)]
    res = every[~every.dataset.isin(HOLDOUT)]  # the rule is chosen on the older sets only
    names = list(dict.fromkeys(res.dataset))
    rows = []
    for rule, (ms, band, half) in RULES.items():
        r = res[res.rule == rule]
        per = [f"{int(r[r.evaluator == ev].within.sum())} of {int((r.evaluator == ev).sum())}"
               for ev in ("brknn", "linear")]
        rows.append([f"`{rule}`", " + ".join(ms), band, "yes" if half else "no",
                     f"{int(r.within.sum())} of {len(r)} ({100 * r.within.mean():.0f} %)", *per,
                     f"{r.drop_duplicates('dataset').k_frac.mean():.2f}",
                     ", ".join(f"{d} {r[r.dataset == d].k_mean.iloc[0]:.0f}" for d in names)])
    table = md_table(["rule", "measures (inner CV, BRkNN-b)", "band", "half cap",
                      "cells within one std of the best fixed k", "BRkNN-b", "linear",
                      "mean k / features", "mean k per set"], rows, align="lllllllrl")
    lo = lodo(res)
    lt = md_table(["held out", "rule picked on the others", "cells within there", "k / features"],
                  [[r.dataset, f"`{r.pick}`", f"{r.within} of {r.cells}", f"{r.k_frac:.2f}"]
                   for r in lo.itertuples()], align="llll")
    n_cells = int(lo.cells.sum())
    # the rules that never keep more than half the features unless the curve still rises there
    capped = lodo(res[res.rule.isin([r for r, (_, _, half) in RULES.items() if half])])
    picks = ", ".join(f"`{p}` {n} of {len(capped)}" for p, n in
                      capped.pick.value_counts().items())
    if len(held_out):
        # chosen as lodo() chooses, on all the older sets, among the half-capped rules
        on_older = res[res.rule.isin([r for r, (_, _, half) in RULES.items() if half])]
        score = on_older.groupby("rule", sort=False).agg(within=("within", "mean"),
                                                         frac=("k_frac", "mean"))
        rule = score.sort_values(["within", "frac"], ascending=[False, True],
                                 kind="stable").index[0]
        h = held_out[held_out.rule == rule]
        per_set = ", ".join(f"{d} {int(g.within.sum())} of {len(g)} (k {g.k_mean.iloc[0]:.0f} "
                            f"of {width[d]})" for d, g in h.groupby("dataset", sort=False))
        holdout_text = (f"\n\n## The hold-out sets\n\nThe {h.dataset.nunique()} hold-out sets "
                        "(BRkNN-b, as [holdout.md](holdout.md) scores them), scored once with "
                        f"the rule the older sets choose among the half-capped ones (`{rule}`): "
                        f"{int(h.within.sum())} of {len(h)} cells within one std of the best "
                        f"fixed k ({100 * h.within.mean():.0f} %); " + per_set + ".")
    else:
        holdout_text = ""
    capped_text = (f"\n\nThe same among the rules with the half cap only ({picks}): "
                   f"{int(capped.within.sum())} of {int(capped.cells.sum())} held-out cells "
                   f"within ({100 * capped.within.sum() / max(int(capped.cells.sum()), 1):.0f} %); "
                   "per set: " + ", ".join(f"{r.dataset} {r.within} of {r.cells}"
                                           for r in capped.itertuples()) + ".")
    body = ("Every rule replayed on the same inner curves (5 inner folds of at most 1000 training "
            "rows, BRkNN-b on each prefix of the default's greedy order) and scored on the test "
            "folds of a 3-fold cross-validation (seed 0) by BRkNN-b and, where the set has few "
            "labels, the linear evaluator; cells: (dataset, evaluator, measure) with example F1 "
            "and macro F1. *Within*: the chosen k's mean test score is at least the best fixed "
            "k's (best over the prefix grid) minus the larger fold standard deviation. Band "
            "`se`: the standard error of the best inner mean (fold std / sqrt(5)); `std`: one "
            "inner fold std. With several measures each gives its smallest k within its band, "
            "and the rule keeps the largest of them. Half cap: at most half the features unless "
            "the curve still rises by more than its band beyond that.\n\n" + table
            + "\n\nLeave-one-dataset-out (the rule with the most cells within on the other sets, "
              "ties to the smaller k):\n\n" + lt + f"\n\nTotal: {int(lo.within.sum())} of "
            f"{n_cells} held-out cells within one std of the best fixed k "
            f"({100 * lo.within.sum() / max(n_cells, 1):.0f} %)." + capped_text + holdout_text)
    emit("Automatic k: which rule", body, str(REPORT))
    write_csv(every, OUT / "replay.csv", float_format="%.6g")


def main() -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = p.add_subparsers(dest="cmd", required=True,
                           help="run: the curves and test scores; report: replay the rules")
    r = sub.add_parser("run", help="inner curves and test scores of every prefix")
    r.add_argument("--datasets", default=DEFAULT, help="comma-separated dataset names")
    r.add_argument("--folds", type=int, default=3, help="outer cross-validation folds")
    r.add_argument("--max-rows", type=int, default=6000, help="random row cut (seed 0)")
    sub.add_parser("report", help="write docs/results/auto_k_rules.md")
    a = p.parse_args()
    if a.cmd == "run":
        for name in a.datasets.split(","):
            run_one(name, a.folds, a.max_rows)
    else:
        report()


if __name__ == "__main__":
    main()
