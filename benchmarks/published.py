"""The published multi-label MI selectors against the default, on every shared dataset (issue 18).

    python benchmarks/published.py run [--datasets scene,emotions] [--folds 3] [--ks 10,50]
                                       [--max-rows 6000] [--methods gds,pmu,...]
    python benchmarks/published.py report

``run`` cross-validates with ``run_protocol`` (what ``coreselect evaluate`` runs: selection fit
on the training folds only, seed 0) the default ``gds``, the nine published selectors of
:mod:`coreselect.baselines.mi_methods` and ``br-ig``, scores every selection with BRkNN-b and
with BR logistic regression, and writes one CSV per dataset to docs/results/published/
(``select_seconds``: the selection's fit time on one training fold). Datasets run smallest
first; a dataset with more than ``--max-rows`` rows is cut to a random subsample of that many
(seed 0), recorded in the CSV (``rows_used``, ``rows_total``) and in the report.

``report`` reads the CSVs and writes docs/results/published/README.md: selection seconds per
method and dataset (mean over folds), and the win/tie/loss of ``gds`` against the best of all
the other methods (the best mean; *win* above it by more than one standard deviation over
folds, the larger of the two, *loss* below by more, *tie* otherwise), per dataset, evaluator,
measure (example F1, macro F1) and k, with the method that is best where gds loses.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import REPO_ROOT, machine, md_table, save_method_rows  # noqa: E402
from calibration_research import FILES, load_xy  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "published"
PUBLISHED = ["pmu", "mdmr", "d2f", "scls", "lrfs", "lsmfs", "mlsmfs", "ppt-mi", "igmf"]
METHODS = ["gds", *PUBLISHED, "br-ig"]
#: smallest first (rows x features x labels), so that a run cut short has the most datasets
ORDER = ["emotions", "scene", "yeast", "CAL500", "genbase", "medical", "enron", "Corel5k",
         "tmc2007-500", "bibtex", "rcv1subset1", "delicious"]
MEASURES = ["example_f1", "macro_f1"]


def run(datasets: list[str], folds: int, ks: list[int], methods: list[str], max_rows: int,
        evaluators: tuple[str, ...]) -> None:
    from coreselect.evaluation.protocol import method_factories, run_protocol

    OUT.mkdir(parents=True, exist_ok=True)
    for name in datasets:
        X, Y = load_xy(name)
        n_rows = X.shape[0]
        if max_rows and n_rows > max_rows:
            keep = np.sort(np.random.default_rng(0).choice(n_rows, size=max_rows, replace=False))
            X, Y = X[keep], Y[keep]
        cap = sorted({min(k, X.shape[1]) for k in ks})
        factories = method_factories(methods, lam=0.5)
        for m in methods:  # compiled kernels loaded before any timed fit
            factories[m](1, 0).fit(X[:100], Y[:100])
        t0 = time.perf_counter()
        df = run_protocol(X, Y, factories, cap, n_folds=folds, seed=0, evaluator=evaluators)
        if "evaluator" not in df.columns:
            df.insert(1, "evaluator", evaluators[0])
        df.insert(0, "dataset", name)
        df["rows_used"] = X.shape[0]
        df["rows_total"] = n_rows
        save_method_rows(df, OUT / f"{name}.csv", methods)
        sel = df[df.method.isin(methods)].groupby("method")["select_seconds"].mean()
        print(f"{name}: {X.shape} in {time.perf_counter() - t0:.0f} s; selection seconds "
              + ", ".join(f"{m} {sel[m]:.2f}" for m in methods if m in sel), flush=True)


def verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, evaluator, measure, k): gds against the best of the others."""
    g = df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"]
    s = g.agg(mean="mean", std=lambda v: float(np.std(v, ddof=1))).reset_index()
    rows = []
    for key, cell in s.groupby(["dataset", "evaluator", "measure", "k"]):
        cell = cell.set_index("method")
        if "gds" not in cell.index or cell["mean"].max() - cell["mean"].min() < 1e-12:
            continue  # k = number of features: every method selects every feature
        others = cell.drop(index="gds")
        best = others["mean"].idxmax()
        diff = cell.at["gds", "mean"] - others.at[best, "mean"]
        tol = max(cell.at["gds", "std"], others.at[best, "std"])
        verdict = "win" if diff > tol else ("loss" if diff < -tol else "tie")
        rows.append(dict(zip(["dataset", "evaluator", "measure", "k"], key),
                         gds=cell.at["gds", "mean"], gds_std=cell.at["gds", "std"], best=best,
                         best_mean=others.at[best, "mean"], best_std=others.at[best, "std"],
                         diff=diff, verdict=verdict))
    return pd.DataFrame(rows)


def report() -> None:
    frames = [pd.read_csv(p) for p in sorted(OUT.glob("*.csv")) if p.name != "verdicts.csv"]
    if not frames:
        raise SystemExit("no results in docs/results/published/")
    df = pd.concat(frames, ignore_index=True)
    datasets = [d for d in ORDER if d in set(df.dataset)]
    v = verdicts(df[df.measure.isin(MEASURES)])
    v.to_csv(OUT / "verdicts.csv", index=False, float_format="%.6g")
    folds = df.groupby("dataset")["fold"].nunique()
    lines = ["# The published multi-label MI selectors against the default", "",
             "Written by `python benchmarks/published.py report` from the CSVs that "
             "`python benchmarks/published.py run` wrote (`run_protocol`, the code of "
             "`coreselect evaluate`: selection fit on the training folds only, seed 0; "
             f"{', '.join(f'{d} {int(folds[d])}' for d in datasets)} folds; k in "
             f"{{{', '.join(str(k) for k in sorted(df.k.unique()))}}}; evaluators BRkNN-b "
             "(5 neighbours) and BR logistic regression). `gds` is the library default; the "
             "published methods are those of `coreselect.baselines.mi_methods` (the docstrings "
             "give each formula and the reading taken).", ""]
    cut = df.groupby("dataset")[["rows_used", "rows_total"]].first()
    cut = cut[cut.rows_used < cut.rows_total]
    if not cut.empty:
        lines += ["Row subsample (random, seed 0) for time: " + ", ".join(
            f"{d} {int(r.rows_used)} of {int(r.rows_total)} rows" for d, r in cut.iterrows()) + ".", ""]
    absent = {d: [m for m in METHODS if m not in set(df[df.dataset == d].method)] for d in datasets}
    absent = {d: m for d, m in absent.items() if m}
    missing = [d for d in ORDER if d not in datasets]
    if missing:
        lines += [f"Datasets not run (time on the shared machine): {', '.join(missing)}.", ""]
    if absent:
        lines += ["Methods not run (time): " + "; ".join(f"{d}: {', '.join(m)}"
                                                          for d, m in absent.items()) + ".", ""]
    lines += [f"Machine: {machine()} (shared with other jobs: compare columns within a row).", ""]

    # -- selection time ------------------------------------------------------------------
    sel = (df.drop_duplicates(["dataset", "method", "fold", "select_seconds"])
           .groupby(["dataset", "method"])["select_seconds"].mean())
    methods = [m for m in METHODS if m in set(df.method)]
    rows = []
    for d in datasets:
        shape = df[df.dataset == d][["rows_used"]].iloc[0]
        rows.append([d, int(shape.rows_used)] + [sel.get((d, m), float("nan")) for m in methods])
    lines += ["## Selection seconds (one training fold, mean over folds; the largest k, one fit "
              "serves every k)", "", md_table(["dataset", "rows"] + methods, rows), ""]
    ratio = []
    for d in datasets:
        g = sel.get((d, "gds"))
        if g:
            ratio.append([d] + [sel.get((d, m), float("nan")) / g for m in methods if m != "gds"])
    lines += ["Time relative to `gds` (selection seconds / gds's):", "",
              md_table(["dataset"] + [m for m in methods if m != "gds"], ratio), ""]

    # -- win / tie / loss ----------------------------------------------------------------
    if not v.empty:
        ok = v.verdict.isin(["win", "tie"])
        lines += ["## gds against the best of all other methods", "",
                  f"Win or tie in **{ok.sum()} of {len(v)} cells ({ok.mean() * 100:.0f} %)** "
                  f"(example F1 and macro F1, both evaluators, every k and dataset); wins "
                  f"{(v.verdict == 'win').sum()}, ties {(v.verdict == 'tie').sum()}, losses "
                  f"{(v.verdict == 'loss').sum()}.", ""]
        losses = v[v.verdict == "loss"].best.value_counts()
        if not losses.empty:
            lines += ["Best method where gds loses: " + ", ".join(
                f"{m} {c}" for m, c in losses.items()) + ".", ""]
        best_all = v.best.value_counts()
        lines += ["Best other method per cell (all cells): " + ", ".join(
            f"{m} {c}" for m, c in best_all.items()) + ".", ""]
        rows = []
        for d in datasets:
            for ev in ("brknn", "linear"):
                c = v[(v.dataset == d) & (v.evaluator == ev)]
                if not c.empty:
                    rows.append([d, ev] + [str(int((c.verdict == x).sum())) for x in ("win", "tie", "loss")]
                                + [", ".join(sorted(set(c[c.verdict == "loss"].best))) or "–"])
        lines += ["Per dataset and evaluator (cells: 2 measures x k):", "",
                  md_table(["dataset", "evaluator", "win", "tie", "loss", "beaten by"], rows,
                           align="llrrrl"), ""]
        rows = [[r.dataset, r.evaluator, r.measure, int(r.k), f"{r.gds:.4f} ± {r.gds_std:.4f}",
                 f"{r.best} {r.best_mean:.4f} ± {r.best_std:.4f}", r.verdict]
                for r in v.itertuples()]
        lines += ["## Every cell", "",
                  md_table(["dataset", "evaluator", "measure", "k", "gds", "best other", "verdict"],
                           rows, align="lllrlll"), ""]
    tmp = OUT / ".README.md.tmp"
    tmp.write_text("\n".join(lines))
    tmp.replace(OUT / "README.md")
    print("\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True, help="run: cross-validate; report: write the tables")
    r = sub.add_parser("run", help="cross-validate every method on the datasets, one CSV per dataset")
    r.add_argument("--datasets", default=",".join(ORDER), help="comma-separated dataset names (smallest first)")
    r.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    r.add_argument("--ks", default="10,50", help="comma-separated numbers of features")
    r.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods of coreselect evaluate")
    r.add_argument("--max-rows", type=int, default=6000, help="random row subsample (seed 0) of larger datasets, for time")
    r.add_argument("--evaluators", default="brknn,linear", help="comma-separated evaluators")
    sub.add_parser("report", help="write docs/results/published/README.md from the CSVs")
    a = p.parse_args()
    if a.cmd == "run":
        names = [d for d in a.datasets.split(",") if d]
        unknown = [d for d in names if d not in FILES]
        if unknown:
            raise SystemExit(f"unknown datasets: {', '.join(unknown)}")
        run(names, a.folds, [int(k) for k in a.ks.split(",")], a.methods.split(","),
            a.max_rows, tuple(a.evaluators.split(",")))
    else:
        report()


if __name__ == "__main__":
    main()
