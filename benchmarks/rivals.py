"""The default against every rival, the full-feature reference, stability, and the
linear evaluator's rare-label fix.

    python benchmarks/rivals.py linear [--datasets emotions,yeast,medical,enron] [--ks 10,50]
    python benchmarks/rivals.py run [--datasets emotions,scene,...] [--folds 3] [--ks 10,20,50,100]
                                    [--max-rows 6000] [--methods gds,atr,...]
    python benchmarks/rivals.py report

``linear`` scores the same selections (``gds`` and ``br-chi2``, selection fit on the training
folds only) with three BR logistic regressions side by side: the previous evaluator
(0.5 cut), class weighting (``class_weight="balanced"``, 0.5 cut) and per-label thresholds
chosen on out-of-fold probabilities of the training fold (the new default); it writes
docs/results/linear_evaluator.md.

``run`` cross-validates with ``run_protocol`` (what ``coreselect evaluate`` runs) the default
``gds`` and every rival (:data:`RIVALS`: the nine published MI selectors, atr, br-ig, br-chi2,
max-chi2, l1, trees), ``random`` and the full-feature reference ``all``, scored by BRkNN-b and
the (new) linear evaluator; one CSV per dataset in docs/results/rivals/ (with the evaluator's
fit seconds) and one of the selection stability (``<name>.stability.csv``). Large sets are cut
to ``--max-rows`` random rows (seed 0) as ``published.py`` cuts them; k is capped at the fewest
columns that vary on a training fold.

``report`` writes docs/results/rivals.md whole: win/tie/loss of ``gds`` against the best rival
per (dataset, evaluator, measure, k) (a tie: within the larger fold standard deviation), the
cells below random, the fraction of the full-feature score each method keeps, stability, and
selection time (gds against l1 and trees on the wide sets).
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import (  # noqa: E402
    REPO_ROOT,
    cross_validate,
    emit,
    machine,
    md_table,
    save_method_rows,
    selectable_columns,
    write_atomic,
    write_csv,
)
from calibration_research import FILES  # noqa: E402
from published import ORDER, PUBLISHED, WIDE, load_rows  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "rivals"
REPORT = REPO_ROOT / "docs" / "results" / "rivals.md"
LINEAR = REPO_ROOT / "docs" / "results" / "linear_evaluator.md"
#: the summaries the README splices in
LODO = REPO_ROOT / "docs" / "results" / "bench" / "rivals_lodo.md"
KEEP = REPO_ROOT / "docs" / "results" / "bench" / "rivals_keep.md"
SPEED = REPO_ROOT / "docs" / "results" / "bench" / "rivals_time.md"
RIVALS = [*PUBLISHED, "atr", "br-ig", "br-chi2", "max-chi2", "l1", "trees"]
METHODS = ["gds", *RIVALS, "random", "all"]
MEASURES = ["example_f1", "macro_f1"]
EVALUATORS = ("brknn", "linear")
DENSE = ["emotions", "scene", "yeast", "CAL500"]
#: the stated candidates for the default, chosen among leave-one-dataset-
#: out: centralized GDS with coreselect.tuning's candidates (``gds`` is the library default), and
#: ``gds-tuned``, which chooses among them on each training fold (coreselect.tuning)
from coreselect.tuning import CANDIDATES as _TUNING  # noqa: E402

CANDIDATES = {("gds" if name == "default" else "gds-" + name.replace("lam", "l")): params
              for name, params in _TUNING.items()}
TUNED = "gds-tuned"


# -- the linear evaluator, old and new ---------------------------------------------------------
LINEAR_VARIANTS = {"0.5 cut (before)": dict(threshold="fixed"),
                   "balanced weights": dict(threshold="fixed", class_weight="balanced"),
                   "per-label cut (new)": dict(threshold="cv")}


def linear(datasets: list[str], ks: list[int], folds: int, max_rows: int) -> None:
    from coreselect.evaluation.linear import BRLogistic
    from coreselect.evaluation.measures import MEASURES as FNS
    from coreselect.evaluation.protocol import make_folds, method_factories

    rows = []
    for name in datasets:
        X, Y, n_rows = load_rows(name, max_rows)
        X = X.tocsr() if hasattr(X, "tocsr") else np.asarray(X)
        Y = Y.toarray() if hasattr(Y, "toarray") else np.asarray(Y)
        cap = sorted({min(k, selectable_columns(X, folds)) for k in ks})
        made = method_factories(["gds", "br-chi2"])
        for f, (tr, te) in enumerate(make_folds(X.shape[0], folds, 0)):
            for m, factory in made.items():
                for k in cap:
                    sel = np.asarray(factory(k, f).fit(X[tr], Y[tr]).selected_)
                    for label, opts in LINEAR_VARIANTS.items():
                        pred = BRLogistic(**opts).fit(X[tr][:, sel], Y[tr]).predict(X[te][:, sel])
                        for ms in MEASURES:
                            rows.append(dict(dataset=name, method=m, k=k, fold=f, variant=label,
                                             measure=ms, value=FNS[ms](Y[te], pred),
                                             positives=float(pred.sum(axis=1).mean()),
                                             true_positives=float(Y[te].sum(axis=1).mean())))
        print(name, "done", flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    write_csv(df, OUT / "linear_variants.csv", float_format="%.6g")
    g = df.groupby(["dataset", "method", "k", "measure", "variant"], sort=False)
    s = g["value"].agg(mean="mean", std=lambda v: float(np.std(v, ddof=1))).reset_index()
    pos = g["positives"].mean().reset_index()
    table = []
    for (d, m, k, ms), cell in s.groupby(["dataset", "method", "k", "measure"], sort=False):
        cell = cell.set_index("variant")
        table.append([d, m, int(k), ms] + [f"{cell.at[v, 'mean']:.3f} ± {cell.at[v, 'std']:.3f}"
                                           for v in LINEAR_VARIANTS])
    per_row = pos[pos.measure == MEASURES[0]].groupby(["dataset", "variant"], sort=False)["positives"].mean()
    truth = df.groupby("dataset", sort=False)["true_positives"].mean()
    lab = [[d, f"{truth[d]:.2f}"] + [f"{per_row[(d, v)]:.2f}" for v in LINEAR_VARIANTS]
           for d in dict.fromkeys(df.dataset)]
    cut = {d: load_rows(d, max_rows)[2] for d in dict.fromkeys(df.dataset)}
    cut = ", ".join(f"{d} {min(n, max_rows)} of {n} rows" for d, n in cut.items() if n > max_rows)
    body = ("The same selections (gds and br-chi2, fit on the training folds only; "
            f"{folds}-fold CV, seed 0) scored by three BR logistic regressions (liblinear, C = 1, "
            "MaxAbs scaling): the previous evaluator (every label cut at 0.5), class "
            "weighting (`class_weight=\"balanced\"`, cut at 0.5), and the new default: a cut per "
            "label chosen on out-of-fold probabilities of the training fold (3 inner folds, the "
            "F1-best cut in 0.05..0.5). Mean ± standard deviation over folds."
            + (f" Rows cut (random, seed 0): {cut}." if cut else "") + "\n\n"
            + md_table(["dataset", "method", "k", "measure", *LINEAR_VARIANTS], table,
                       align="llrl" + "l" * len(LINEAR_VARIANTS))
            + "\n\nLabels predicted per test row (mean over methods, k and folds) against the "
              "true number:\n\n"
            + md_table(["dataset", "true labels per row", *LINEAR_VARIANTS], lab,
                       align="lr" + "r" * len(LINEAR_VARIANTS)))
    emit("The linear evaluator on rare labels", body, str(LINEAR))


# -- the comparison --------------------------------------------------------------------------
def factories(methods: list[str]) -> dict:
    """``coreselect evaluate``'s factories, and :data:`CANDIDATES` by name."""
    from coreselect.evaluation.protocol import _make_calibrated, method_factories

    plain = method_factories([m for m in methods if m not in CANDIDATES], lam=0.5)
    return {m: functools.partial(_make_calibrated, p=None, **CANDIDATES[m])
            if m in CANDIDATES else plain[m] for m in methods}


#: methods whose BRkNN-b rows ``published.py run`` already wrote with the same protocol (folds,
#: seed, row cut, k cap; BRkNN-b unchanged since): ``--adopt`` copies them instead of rerunning
ADOPTABLE = [*PUBLISHED, "br-ig", "gds-range", "random"]  # gds reruns: timed beside l1, trees


def adopt(name: str, n_features: int) -> list[str]:
    """Copy the BRkNN-b rows of :data:`ADOPTABLE` from docs/results/published/NAME.csv into
    this benchmark's CSV (their linear rows there are the old evaluator's: not copied)."""
    from published import OUT as PUBLISHED_OUT

    src = PUBLISHED_OUT / f"{name}.csv"
    if not src.exists():
        return []
    df = pd.read_csv(src)
    df = df[df.method.isin(ADOPTABLE) & (df.evaluator == "brknn")].copy()
    df["n_features"] = n_features
    df["source"] = "published.py run"
    save_method_rows(df, OUT / f"{name}.csv", list(dict.fromkeys(df.method)))
    return list(dict.fromkeys(df.method))


def run(datasets: list[str], folds: int, ks: list[int], methods: list[str], max_rows: int,
        jobs: int = 1, evaluators: tuple[str, ...] = EVALUATORS, reuse: bool = False) -> None:
    for name in datasets:
        X, Y, n_rows = load_rows(name, max_rows)
        todo = methods
        if reuse:
            got = adopt(name, X.shape[1])
            print(f"{name}: BRkNN-b rows of {', '.join(got)} copied from published/", flush=True)
            todo = [m for m in methods if m not in got]
        cross_validate(name, X, Y, n_rows, factories(todo), ks, OUT, folds, evaluators, jobs,
                       stability=True)


def verdicts(df: pd.DataFrame, method: str = "gds") -> pd.DataFrame:
    """One row per (dataset, evaluator, measure, k): ``method`` against the best of
    :data:`RIVALS`, and whether it is below ``random`` by more than one standard deviation."""
    g = df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"]
    s = g.agg(mean="mean", std=lambda v: float(np.std(v, ddof=1))).reset_index()
    rows = []
    for key, cell in s.groupby(["dataset", "evaluator", "measure", "k"]):
        cell = cell.set_index("method")
        others = cell[cell.index.isin(RIVALS)]
        if method not in cell.index or others.empty:
            continue
        if others["mean"].max() - others["mean"].min() < 1e-12 and \
                abs(cell.at[method, "mean"] - others["mean"].max()) < 1e-12:
            continue  # k = every selectable feature
        best = others["mean"].idxmax()
        mean, std = cell.at[method, "mean"], cell.at[method, "std"]
        diff = mean - others.at[best, "mean"]
        tol = max(std, others.at[best, "std"])
        verdict = "win" if diff > tol else ("loss" if diff < -tol else "tie")
        def under_random(name: str) -> bool:
            return bool("random" in cell.index and cell.at[name, "mean"] < cell.at["random", "mean"]
                        - max(cell.at[name, "std"], cell.at["random", "std"]))

        rows.append(dict(zip(["dataset", "evaluator", "measure", "k"], key), method=method, gds=mean,
                         gds_std=std, best=best, best_mean=others.at[best, "mean"],
                         best_std=others.at[best, "std"], verdict=verdict,
                         below_random=under_random(method),
                         # how common that is in the cell: random subsets can suit an evaluator
                         # (BRkNN-b at a large k) better than any informed choice
                         rivals_below_random=sum(under_random(r) for r in others.index),
                         rivals=len(others)))
    return pd.DataFrame(rows)


def candidate_ranks(df: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Rank (1 = best mean; ties share the mean rank) of each candidate among ``names`` per
    (dataset, evaluator, measure, k) cell: columns ``dataset, evaluator, measure, k, method, rank``."""
    m = (df[df.method.isin(names)].groupby(["dataset", "evaluator", "measure", "k", "method"])
         ["value"].mean().reset_index())
    m["rank"] = m.groupby(["dataset", "evaluator", "measure", "k"])["value"].rank(ascending=False)
    return m.drop(columns="value")


def leave_one_dataset_out(df: pd.DataFrame, names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """For each held-out dataset: on the other datasets' cells, the candidate
    with the largest share of win-or-tie cells against the best rival (ties broken by the
    smaller mean rank among the candidates, then the order of ``names``), and that
    pick's verdicts on the held-out set.
    Returns ``(per held-out set, the picks' verdict cells)``; only datasets where every candidate
    ran count."""
    ran = df.groupby("dataset")["method"].agg(set)
    sets = [d for d in ORDER if d in ran.index and set(names) <= ran[d]]
    df = df[df.dataset.isin(sets)]
    v = pd.concat([verdicts(df, c) for c in names], ignore_index=True)
    key = ["dataset", "evaluator", "measure", "k", "method"]
    v = v.merge(candidate_ranks(df, names), on=key, how="left")
    rows, cells = [], []
    for d in sets:
        train = v[v.dataset != d].assign(dense=lambda t: t.dataset.isin(DENSE))
        train = train.assign(ok=train.verdict.isin(["win", "tie"]))
        score = train.groupby("method").agg(share=("ok", "mean"), rank=("rank", "mean"))
        # the target holds per kind of data: the worst of the dense and the sparse shares
        score["worst"] = train.groupby(["method", "dense"])["ok"].mean().groupby("method").min()
        score = score.reindex(names)
        pick = score.sort_values(["worst", "share", "rank"], ascending=[False, False, True],
                                 kind="stable").index[0]
        held = v[(v.dataset == d) & (v.method == pick)]
        cells.append(held)
        rows.append(dict(dataset=d, pick=pick, share=score.at[pick, "share"],
                         worst=score.at[pick, "worst"],
                         rank=score.at[pick, "rank"], cells=held))
    return pd.DataFrame(rows), (pd.concat(cells, ignore_index=True) if cells else v.iloc[:0])


def _share(v: pd.DataFrame) -> str:
    ok = int(v.verdict.isin(["win", "tie"]).sum())
    return f"{ok} of {len(v)} ({100 * ok / max(len(v), 1):.0f} %)" if len(v) else "–"


def _counts(v: pd.DataFrame) -> str:
    return "/".join(str(int((v.verdict == x).sum())) for x in ("win", "tie", "loss"))


def _kind_rows(v: pd.DataFrame, datasets: list[str]) -> list[list]:
    rows = []
    for kind, names in (("dense", DENSE), ("sparse", [d for d in ORDER if d not in DENSE])):
        c = v[v.dataset.isin(names)]
        if len(c):
            rows.append([f"{kind} sets ({', '.join(d for d in datasets if d in names)})",
                         _share(c), _counts(c), int(c.below_random.sum())])
    rows.append(["all cells", _share(v), _counts(v), int(v.below_random.sum())])
    return rows


def auto_k_cost() -> dict[str, float]:
    """``k="auto"``'s CPU cost over one selection at the cap per dataset, read from the table
    ``coreselect bench auto_k`` wrote (docs/results/bench/auto_k.md)."""
    path = REPO_ROOT / "docs" / "results" / "bench" / "auto_k.md"
    if not path.exists():
        return {}
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in path.read_text().splitlines() if line.startswith("|")]
    if len(rows) < 3 or "CPU cost / cap" not in rows[0]:
        return {}
    at = rows[0].index("CPU cost / cap")
    return {r[0]: float(r[at].rstrip("x")) for r in rows[2:]}


def lodo_section(df: pd.DataFrame, datasets: list[str]) -> list[str]:
    """The leave-one-dataset-out choice of the default among :data:`CANDIDATES` (Markdown lines),
    and its summary in docs/results/bench/rivals_lodo.md (the README splices it)."""
    names = [c for c in [*CANDIDATES, TUNED] if c in set(df.method)]
    if len(names) < 2:
        return []
    per, cells = leave_one_dataset_out(df, names)
    if per.empty:
        return []
    what = {c: ", ".join(f"{k} {v}" for k, v in o.items()) for c, o in CANDIDATES.items()}
    what[TUNED] = ("chosen on each training fold among the candidates above (internal "
                   "cross-validation, coreselect.tuning; its cost is in the selection time)")
    rows = [[f"`{c}`", what[c] + (" (the library default)" if c == "gds" else "")] for c in names]
    head = ("Candidates (centralized GDS; `gds` is the library default):\n\n"
            + md_table(["candidate", "parameters"], rows, align="ll")
            + "\n\nRule: for each held-out dataset, the candidate whose worse share of "
              "win-or-tie cells against the best rival, of the dense and of the sparse sets "
              "among the other datasets, is the largest (so a pick has to hold up on both kinds; ties broken "
              "by the share over all their cells, then the smaller mean rank among the "
              "candidates, then the order above) is the default; its "
              "cells on the held-out set are scored as everywhere else (a tie is within one fold "
              "standard deviation, the larger of the two). Only datasets where every candidate "
              f"ran take part ({len(per)}).")
    rows = []
    for r in per.itertuples():
        c = r.cells
        rows.append([r.dataset, "dense" if r.dataset in DENSE else "sparse", f"`{r.pick}`",
                     f"{100 * r.worst:.0f} %", f"{100 * r.share:.0f} %", f"{r.rank:.2f}", _counts(c),
                     int(c.below_random.sum()),
                     ", ".join(sorted(set(c[c.verdict == "loss"].best))) or "–"])
    table = md_table(["held out", "kind", "pick (on the others)",
                      "its win-or-tie share there: worse kind", "all cells",
                      "its mean rank there", "win/tie/loss on the held-out set", "below random",
                      "beaten by"], rows, align="lllrrrlrl")
    totals = md_table(["cells (leave-one-dataset-out)", "win or tie", "win/tie/loss",
                       "below random"], _kind_rows(cells, list(per.dataset)), align="llll")
    picks = per["pick"].value_counts()
    under = cells[cells.below_random]
    context = ("" if under.empty else
               " In the cells where the pick is below random, the rivals below random too: "
               + "; ".join(f"{r.dataset}, {r.evaluator}, {r.measure}, k = {int(r.k)}: "
                           f"{r.rivals_below_random} of {r.rivals}" for r in under.itertuples())
               + ".")
    body = (head + "\n\n" + table + "\n\nTotals of the picks on their held-out sets "
            "(a good pick wins or ties in at least 90 % of the cells of the dense and of the sparse "
            "sets and is never below random):"
            "\n\n" + totals + "\n\nPicks: " + ", ".join(f"`{m}` {n} of {len(per)}"
                                                          for m, n in picks.items()) + "."
            + context)
    emit("The default chosen leave-one-dataset-out", body, str(LODO))
    # every candidate on every set (in-sample, for reading the picks)
    rows = []
    for c in names:
        vc = verdicts(df[df.dataset.isin(per.dataset)], c)
        kinds = {k: vc[vc.dataset.isin(n)] for k, n in
                 (("dense", DENSE), ("sparse", [d for d in ORDER if d not in DENSE]))}
        rows.append([f"`{c}`", _share(kinds["dense"]), _share(kinds["sparse"]), _counts(vc),
                     int(vc.below_random.sum())])
    every = md_table(["candidate", "dense: win or tie", "sparse: win or tie", "win/tie/loss",
                      "below random"], rows, align="lllll")
    return ["## The default chosen leave-one-dataset-out", "", body, "",
            "Each candidate on every one of these sets (in-sample: for reading the picks, "
            "not a score of a choice):", "", every, ""]


#: every method the ranks compare (the default, each rival, and random as a floor)
RANKED = ["gds", *RIVALS, "random"]
RANKS = REPO_ROOT / "docs" / "results" / "bench" / "rivals_ranks.md"


def rank_cells(df: pd.DataFrame, methods: list[str] = RANKED) -> pd.DataFrame:
    """Mean over folds per (dataset, evaluator, measure, k) cell (rows) and method (columns),
    only cells where every one of ``methods`` ran and k is below the selectable columns (at
    every feature all selections are equal)."""
    m = (df[df.method.isin(methods)].groupby(["dataset", "evaluator", "measure", "k", "method"])
         ["value"].mean().unstack("method"))
    m = m.reindex(columns=methods).dropna()
    return m[m.max(axis=1) - m.min(axis=1) > 1e-12]


def pairwise(df: pd.DataFrame, method: str = "gds", rivals: list[str] = RIVALS) -> pd.DataFrame:
    """``method`` against each rival on its own, cell by cell: win/tie/loss (a tie: the means
    differ by at most the larger fold standard deviation), as :func:`verdicts` against one."""
    g = df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"]
    s = g.agg(mean="mean", std=lambda v: float(np.std(v, ddof=1))).reset_index()
    rows = []
    for key, cell in s.groupby(["dataset", "evaluator", "measure", "k"]):
        cell = cell.set_index("method")
        if method not in cell.index or cell["mean"].max() - cell["mean"].min() < 1e-12:
            continue
        for r in rivals:
            if r not in cell.index:
                continue
            diff = cell.at[method, "mean"] - cell.at[r, "mean"]
            tol = max(cell.at[method, "std"], cell.at[r, "std"])
            rows.append(dict(zip(["dataset", "evaluator", "measure", "k"], key), rival=r,
                             verdict="win" if diff > tol else ("loss" if diff < -tol else "tie")))
    return pd.DataFrame(rows)


def ranks_section(df: pd.DataFrame, datasets: list[str], methods: list[str] = RANKED,
                  out: Path | None = RANKS, dense: list[str] = DENSE) -> list[str]:
    """Average ranks with the Friedman test and the Nemenyi critical difference (Demšar 2006),
    and the default's pairwise win/tie/loss against every rival, the ``dense`` sets and the
    others apart (Markdown lines; the summary goes to ``out``)."""
    from coreselect.evaluation.significance import friedman

    rivals = [m for m in methods if m != "gds"]
    cells = rank_cells(df, methods)
    kinds = {"dense": [d for d in datasets if d in dense],
             "sparse": [d for d in datasets if d not in dense]}
    if all(kinds.values()):  # both kinds: all sets too
        kinds["all"] = datasets
    tests, ranks = {}, {}
    for kind, names in kinds.items():
        c = cells[cells.index.get_level_values("dataset").isin(names)]
        if len(c) >= 2:
            tests[kind] = friedman(c.to_numpy())
            ranks[kind] = pd.Series(tests[kind].ranks, index=methods)
    if not tests:
        return []
    order = ranks[list(ranks)[-1]].sort_values().index
    pw = pairwise(df[df.dataset.isin(datasets)], rivals=rivals)
    pw = pw.assign(dense=pw.dataset.isin(dense))
    kinds_present = [dense for dense, kind in ((True, "dense"), (False, "sparse")) if kinds[kind]]
    rows = []
    for m in order:
        row = [f"`{m}`" if m == "gds" else m]
        for kind in tests:
            r = ranks[kind]
            sig = ""
            if m != "gds" and r[m] - r["gds"] <= -tests[kind].cd:
                sig = " (better than gds)"
            elif m != "gds" and r[m] - r["gds"] >= tests[kind].cd:
                sig = " †"
            row.append(f"{r[m]:.2f}{sig}")
        if m == "gds":
            row += [""] * len(kinds_present)
        else:
            for dense in kinds_present:
                p = pw[(pw.rival == m) & (pw.dense == dense)]
                row.append(_counts(p) if len(p) else "–")
        rows.append(row)
    stat = md_table(["cells", "N", "methods", "Friedman chi2 (p)", "Iman-Davenport F (p)",
                     "Nemenyi CD (alpha 0.05)", "gds: rank (place)",
                     "rivals significantly better than gds"],
                    [[f"{kind} sets", t.n_cells, len(methods), f"{t.chi2:.1f} ({t.p_chi2:.1e})",
                      f"{t.f:.2f} ({t.p_f:.1e})", f"{t.cd:.2f}",
                      f"{ranks[kind]['gds']:.2f} ({int((ranks[kind] < ranks[kind]['gds']).sum()) + 1} of {len(methods)})",
                      ", ".join(m for m in methods if ranks[kind][m] - ranks[kind]["gds"] <= -t.cd) or "none"]
                     for kind, t in tests.items()], align="lrrllrll")
    body = ("Average rank of every method (1 = best) over the cells (dataset, evaluator, measure, "
            "k below the selectable columns) where all of them ran, mean over folds; the "
            "Friedman test of the hypothesis that all are equivalent and the Nemenyi critical "
            "difference (Demšar, JMLR 2006): two methods differ significantly when their average "
            "ranks differ by at least CD. Cells of one dataset are not independent (several "
            "measures, k, evaluators), so the p-values overstate the evidence.\n\n" + stat
            + "\n\n" + md_table(["method", *[f"rank: {k} sets" for k in tests],
                                 *[f"gds against it: {'dense' if d else 'sparse'} (win/tie/loss)"
                                   for d in kinds_present]], rows,
                                align="l" + "r" * len(tests) + "l" * len(kinds_present))
            + "\n\n\u2020: significantly worse than gds (Nemenyi). Pairwise: gds against that "
              "rival alone, cell by cell (a tie: the means differ by at most the larger fold "
              "standard deviation), over every cell where both ran.")
    emit("Average ranks, Friedman and Nemenyi", body, str(out) if out else None)
    return ["## Average ranks, the Friedman test and the Nemenyi critical difference", "", body, ""]


def report() -> None:
    from coreselect.evaluation.protocol import full_reference

    frames = [pd.read_csv(p) for p in sorted(OUT.glob("*.csv"))
              if not p.name.endswith(".stability.csv") and p.name != "linear_variants.csv"]
    if not frames:
        raise SystemExit("no results in docs/results/rivals/")
    df = pd.concat(frames, ignore_index=True)
    df = df[df.measure.isin(MEASURES)]
    datasets = [d for d in ORDER if d in set(df.dataset)]
    v = verdicts(df)
    write_csv(v, OUT / "verdicts.txt", float_format="%.6g")
    ks = sorted(k for k in df[df.method != "all"].k.unique())
    folds = sorted(set(df.groupby("dataset")["fold"].nunique()))
    cut = df.groupby("dataset")[["rows_used", "rows_total"]].first()
    cut = cut[cut.rows_used < cut.rows_total]
    lines = ["# The default against every rival, the full-feature reference, stability", "",
             "Written whole by `python benchmarks/rivals.py report` from the CSVs in "
             "[rivals/](rivals/) that `python benchmarks/rivals.py run` wrote (`run_protocol`, "
             "the code of `coreselect evaluate`: selection fit on the training folds only, seed 0; "
             f"{' or '.join(map(str, folds))} folds; k in {{{', '.join(map(str, ks))}}} capped at "
             "the fewest columns that vary on a training fold; evaluators BRkNN-b (5 neighbours) "
             "and BR logistic regression with per-label cuts chosen on the training fold "
             "([linear_evaluator.md](linear_evaluator.md)); measures example F1 and macro F1). "
             "`gds` is the library default (unchanged); the rivals are the nine published MI "
             "selectors, atr, br-ig, br-chi2, max-chi2, l1 and trees. The default was chosen "
             "on these sets of `../shared/data`, so its own table below is not a "
             "leave-one-dataset-out score; the first section is: a default picked among stated "
             "candidates on the other sets and scored on the held-out one.", "",
             "*win*: the default's mean is above the best rival's by more than one fold "
             "standard deviation (the larger of the two); *loss*: below by more; *tie*: "
             "otherwise. *Below random*: below `random` by more than one standard deviation.", ""]
    if not cut.empty:
        lines += ["Row subsample (random, seed 0, as published.py): " + ", ".join(
            f"{d} {int(r.rows_used)} of {int(r.rows_total)} rows" for d, r in cut.iterrows()) + ".", ""]
    missing = [d for d in ORDER if d not in datasets]
    if missing:
        lines += [f"Not run (time on 2 shared cores): {', '.join(missing)}.", ""]
    evs = df.groupby("dataset")["evaluator"].agg(set)
    brknn_only = [d for d in datasets if evs[d] == {"brknn"}]
    if brknn_only:
        lines += ["Scored by BRkNN-b only (time on 2 shared cores: the linear evaluator's per-label "
                  "cut fits 4 logistic models per label, about 80 s per selection on delicious's "
                  "983 labels and 6000 rows): " + ", ".join(brknn_only) + ".", ""]
    if "source" in df.columns:
        adopted = df[df.source.notna()].groupby("dataset")["method"].agg(lambda m: sorted(set(m)))
        if len(adopted):
            lines += ["BRkNN-b rows copied from `benchmarks/published.py run` (same folds, seed, "
                      "row cut and k; BRkNN-b unchanged since; `run --adopt`): "
                      + "; ".join(f"{d}: {', '.join(m)}" for d, m in adopted.items()) + ".", ""]
    absent = {d: [m for m in METHODS if m not in set(df[df.dataset == d].method)] for d in datasets}
    absent = {d: m for d, m in absent.items() if m}
    if absent:
        lines += ["Methods not run (time): " + "; ".join(
            f"{d}: {', '.join(m)}" for d, m in absent.items()) + ".", ""]
    lines += lodo_section(df, datasets)
    lines += ranks_section(df, datasets)
    rows = []
    for kind, names in (("dense", DENSE), ("sparse", [d for d in ORDER if d not in DENSE])):
        c = v[v.dataset.isin(names)]
        if len(c):
            rows.append([f"{kind} sets ({', '.join(d for d in datasets if d in names)})", _share(c),
                         _counts(c), int(c.below_random.sum())])
    for ev in EVALUATORS:
        for ms in MEASURES:
            c = v[(v.evaluator == ev) & (v.measure == ms)]
            rows.append([f"{ev}, {ms}", _share(c), _counts(c), int(c.below_random.sum())])
    rows.append(["all cells", _share(v), _counts(v), int(v.below_random.sum())])
    lines += ["## The fixed default against the best rival (not leave-one-dataset-out)", "",
              md_table(["cells", "win or tie", "win/tie/loss", "below random"], rows, align="llll"), ""]
    if (v.verdict == "loss").any():
        lines += ["Best rival where the default loses: " + ", ".join(
            f"{m} {c}" for m, c in v[v.verdict == "loss"].best.value_counts().items()) + ".", ""]
    lines += ["Best rival per cell: " + ", ".join(
        f"{m} {c}" for m, c in v.best.value_counts().items()) + ".", ""]
    rows = []
    for d in datasets:
        for ev in EVALUATORS:
            c = v[(v.dataset == d) & (v.evaluator == ev)]
            if len(c):
                rows.append([d, ev, _counts(c), int(c.below_random.sum()),
                             ", ".join(sorted(set(c[c.verdict == "loss"].best))) or "–"])
    lines += ["## Per dataset and evaluator", "",
              md_table(["dataset", "evaluator", "win/tie/loss", "below random", "beaten by"], rows,
                       align="llrrl"), ""]

    # -- the full-feature reference ----------------------------------------------------------
    fr = pd.concat([full_reference(df[df.dataset == d]).assign(dataset=d) for d in datasets])
    if len(fr):
        show = ["gds", "br-chi2", "max-chi2", "l1", "trees", "random"]
        rows = []
        for d in datasets:
            for ev in EVALUATORS:
                f = fr[(fr.dataset == d) & (fr.evaluator == ev) & (fr.measure == "example_f1")]
                full = f[f.method == "all"]
                if full.empty:
                    continue
                width = int(df[df.dataset == d].n_features.iloc[0])
                for k in ks:
                    if k not in set(f.k) or k >= width:  # every feature: nothing to compare
                        continue
                    cells = []
                    for m in show:
                        h = f[(f.method == m) & (f.k == k)]
                        cells.append(f"{h.fraction.iloc[0]:.2f}" if len(h) else "–")
                    g = f[(f.method == "gds") & (f.k == k)]
                    rows.append([d, ev, k, f"{full['mean'].iloc[0]:.3f}", *cells,
                                 f"{g.fit_ratio.iloc[0]:.2f}" if len(g) else "–"])
        lines += ["## What a selection keeps of the full model", "",
                  "Example F1 of each method at k as a fraction of the evaluator on every feature "
                  "(`all`, same folds), and the evaluator's training time on gds's k features as "
                  "a ratio to its time on all of them (BRkNN-b's training only stores the rows: "
                  "its ratio is noise; the linear model's is the one to read).", "",
                  md_table(["dataset", "evaluator", "k", "all: example F1", *show, "gds fit time / all's"],
                           rows, align="llrr" + "r" * (len(show) + 1)), ""]
        keep = []
        for d in datasets:
            f = fr[(fr.dataset == d) & (fr.measure == "example_f1")]
            if f[f.method == "all"].empty:
                continue
            width = int(df[df.dataset == d].n_features.iloc[0])
            ref = f[f.method == "all"].set_index("evaluator")["mean"]
            cells = []
            for k in (10, 20, 50, 100):
                g = f[(f.method == "gds") & (f.k == k)].set_index("evaluator")
                if g.empty or k >= width:
                    cells.append("–")
                    continue
                parts = [f"{g.at[ev, 'fraction']:.2f}" if ev in g.index else "–" for ev in EVALUATORS]
                lin = g.at["linear", "fit_ratio"] if "linear" in g.index else float("nan")
                cells.append(" / ".join(parts) + (f" (x{lin:.2f})" if lin == lin else ""))
            keep.append([d, " / ".join(f"{ref[ev]:.3f}" if ev in ref.index else "–"
                                       for ev in EVALUATORS), *cells])
        if keep:
            body = ("The default's example F1 at k as a fraction of the same evaluator on every "
                    "feature (`--methods ...,all`, same folds): BRkNN-b / linear, and in "
                    "brackets the linear model's training time on the k features over its time "
                    "on all of them. Per method and k: [rivals.md](../rivals.md).\n\n"
                    + md_table(["dataset", "all features: example F1 (BRkNN-b / linear)",
                                "k = 10", "k = 20", "k = 50", "k = 100"], keep, align="llllll"))
            emit("What the default keeps of the full model", body, str(KEEP))
    notes = [p for p in sorted(OUT.glob("*.notes.txt"))]
    for p in notes:
        lines += [p.read_text().strip(), ""]

    # -- stability ---------------------------------------------------------------------------
    st = pd.concat([pd.read_csv(p) for p in sorted(OUT.glob("*.stability.csv"))], ignore_index=True)
    st = st[st.dataset.isin(datasets) & st.kuncheva.notna()]  # k = every feature: undefined
    if len(st):
        order = [m for m in ["gds", *RIVALS, "random"] if m in set(st.method)]
        piv = st.groupby("method")[["jaccard", "kuncheva"]].mean()
        rows = [[m, f"{piv.at[m, 'jaccard']:.2f}", f"{piv.at[m, 'kuncheva']:.2f}"] for m in order]
        lines += ["## Stability of the selection across folds", "",
                  "Mean over datasets and k (below the number of features) of the mean pairwise Jaccard index and Kuncheva's "
                  "index (chance-corrected: 0 for random selections) of the folds' selections; "
                  "per dataset and k in [rivals/](rivals/) (`*.stability.csv`).", "",
                  md_table(["method", "Jaccard", "Kuncheva"], rows, align="lrr"), ""]

    # -- time --------------------------------------------------------------------------------
    sel = (df[df.method != "all"].drop_duplicates(["dataset", "method", "fold", "select_seconds"])
           .groupby(["dataset", "method"])["select_seconds"].mean())
    methods = [m for m in ["gds", *RIVALS] if (m in set(df.method))]
    rows = [[d] + [sel.get((d, m), float("nan")) for m in methods] for d in datasets]
    lines += ["## Selection time", "",
              "Seconds per selection in the cross-validation (one training fold, mean over folds; "
              "rankers fit once at the largest k). Shared 2-core machine: read ratios. Rows copied "
              "from published.py (above) carry that run's times, under another load.", "",
              md_table(["dataset"] + methods, rows), ""]
    wide = [d for d in datasets if d in WIDE]
    auto = auto_k_cost()
    rows = []
    for d in wide:
        if not all((d, m) in sel for m in ("gds", "l1", "trees")):
            continue
        g = sel[(d, "gds")]
        a = auto.get(d)
        t = sel.get((d, TUNED))
        rows.append([d, f"{g:.2f}", f"{sel[(d, 'l1')]:.2f}", f"{sel[(d, 'trees')]:.2f}",
                     f"{sel[(d, 'l1')] / g:.1f}", f"{sel[(d, 'trees')] / g:.1f}",
                     f"{a:.2f}x" if a else "–",
                     f"{sel[(d, 'l1')] / (g * a):.1f}" if a else "–",
                     f"{sel[(d, 'trees')] / (g * a):.1f}" if a else "–",
                     f"{t / g:.1f}x" if t else "–",
                     f"{sel[(d, 'l1')] / t:.1f} / {sel[(d, 'trees')] / t:.1f}" if t else "–"])
    if rows:
        speed = ("Seconds per selection on one training fold (mean over the folds of the "
                 "cross-validation above, wall time, one process on a shared 2-core machine), and "
                 "the embedded rivals' time over the default's (10 means the default is ten "
                 "times faster). With "
                 "`k=\"auto\"` the default also scores prefixes by internal cross-validation: its "
                 "cost over one selection at the cap is the CPU ratio of "
                 "[auto_k.md](auto_k.md) (`coreselect bench auto_k`), applied here. `gds-tuned` "
                 "(the objective's form chosen on the training fold, five candidates) is timed "
                 "in the same cross-validation. Rows of sets run in several invocations "
                 "(`--methods`) were timed in separate runs, not side by side, and rows rerun "
                 "later on another 2-core machine of the same kind: read the ratios within a "
                 "row.\n\n"
                 + md_table(["dataset", "gds s", "l1 s", "trees s", "l1 / gds", "trees / gds",
                             "k=auto cost / one selection", "l1 / gds (k=auto)",
                             "trees / gds (k=auto)", "gds-tuned / gds",
                             "l1 / gds-tuned, trees / gds-tuned"], rows, align="lrrrrrrrrrr"))
        emit("Selection time: the default against the embedded rivals", speed, str(SPEED))
        lines += ["On the wide sets:", "", speed, ""]

    rows = [[r.dataset, r.evaluator, r.measure, int(r.k), f"{r.gds:.4f} ± {r.gds_std:.4f}",
             f"{r.best} {r.best_mean:.4f} ± {r.best_std:.4f}",
             r.verdict + (f", below random (as {r.rivals_below_random} of {r.rivals} rivals)"
                          if r.below_random else "")] for r in v.itertuples()]
    lines += ["## Every cell: the default against the best of all rivals", ""]
    for kind, names in (("Dense", DENSE), ("Sparse", [d for d in ORDER if d not in DENSE])):
        part = [r for r in rows if r[0] in names]
        if part:
            lines += [f"{kind} sets:", "", md_table(["dataset", "evaluator", "measure", "k", "gds",
                                                     "best rival", "verdict"], part,
                                                    align="lllrlll"), ""]
    lines += [f"Machine: {machine()} (shared with other jobs).", ""]
    write_atomic(REPORT, "\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = p.add_subparsers(dest="cmd", required=True,
                           help="linear: the linear evaluator before and after; run: cross-validate; "
                                "report: write docs/results/rivals.md")
    li = sub.add_parser("linear", help="the linear evaluator before and after, side by side")
    li.add_argument("--datasets", default="emotions,yeast,medical,enron",
                    help="comma-separated dataset names")
    li.add_argument("--ks", default="10,50", help="comma-separated numbers of features")
    li.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    li.add_argument("--max-rows", type=int, default=6000,
                    help="random row subsample (seed 0) of larger datasets, for time")
    r = sub.add_parser("run", help="cross-validate gds, every rival, random and all")
    r.add_argument("--datasets", default=",".join(ORDER), help="comma-separated dataset names (smallest first)")
    r.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    r.add_argument("--ks", default="10,20,50,100", help="comma-separated numbers of features")
    r.add_argument("--methods", default=",".join(METHODS),
                   help="comma-separated methods of coreselect evaluate; a rerun of some replaces only their rows")
    r.add_argument("--max-rows", type=int, default=6000,
                   help="random row subsample (seed 0) of larger datasets, for time")
    r.add_argument("--jobs", type=int, default=1, help="worker processes of run_protocol")
    r.add_argument("--evaluators", default=",".join(EVALUATORS), help="comma-separated evaluators")
    r.add_argument("--adopt", action="store_true",
                   help="copy the BRkNN-b rows published.py wrote for the published methods, "
                        "gds, gds-range and random (same protocol) instead of rerunning them")
    sub.add_parser("report", help="write docs/results/rivals.md from the CSVs")
    a = p.parse_args()
    names = [d for d in getattr(a, "datasets", "").split(",") if d]
    unknown = [d for d in names if d not in FILES]
    if unknown:
        raise SystemExit(f"unknown datasets: {', '.join(unknown)}")
    if a.cmd == "linear":
        linear(names, [int(k) for k in a.ks.split(",")], a.folds, a.max_rows)
    elif a.cmd == "run":
        run(names, a.folds, [int(k) for k in a.ks.split(",")], a.methods.split(","), a.max_rows,
            a.jobs, tuple(a.evaluators.split(",")), a.adopt)
    else:
        report()


if __name__ == "__main__":
    main()
