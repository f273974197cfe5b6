"""The paper's baselines against the default: every shared dataset, both evaluators.

    python benchmarks/baselines.py run --datasets scene,emotions [--folds 5] [--jobs 1]
    python benchmarks/baselines.py report

``run`` cross-validates (``run_protocol``: selection fit on the training folds only) the
library's default (``gds``: centralized GDS, ``DEFAULT_CALIBRATION``, lambda = 0.5), the
paper's objective (``cgds``: eq. 2, lambda = 0.5), br-ig, lp-ig, br-rf, lp-rf, br-chi2 and
random at k in {10, 20, 50, 100} (capped at the number of features), scores each selection
with BRkNN-b and with BR logistic regression, and writes one CSV per dataset to
docs/results/baselines/. ReliefF (br-rf, lp-rf) uses a random sample of 500 instances on
datasets whose training folds have more than 3000 rows (Weka's ReliefF samples all; the
full run does not fit the time on 2 shared cores), and datasets with more than
6000 rows may be cut to a random 6000 rows (seed 0; the report names them;
``--max-rows 0`` runs them whole).

``report`` reads those CSVs and writes docs/results/baselines.md and
docs/results/baselines/winloss.png (the scoreboard against the published MI selectors is
docs/results/scoreboard.md, ``benchmarks/published.py``): for every dataset, evaluator,
measure and k, the
default against the best baseline (the best mean among br-ig, lp-ig, br-rf, lp-rf,
br-chi2): *win* if its mean is higher by more than one standard deviation over folds (the
larger of the two), *loss* if lower by more, *tie* otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import (REPO_ROOT, describe, save_figure, save_method_rows,  # noqa: E402
                     selectable_columns, write_atomic, write_csv)
from calibration_research import FILES, load_xy  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "baselines"
METHODS = ["gds", "cgds", "br-ig", "lp-ig", "br-rf", "lp-rf", "br-chi2", "random"]
BASELINES = ["br-ig", "lp-ig", "br-rf", "lp-rf", "br-chi2"]
KS = [10, 20, 50, 100]
WIDE = ["rcv1subset1", "bibtex", "delicious", "enron", "medical", "tmc2007-500"]


def run(datasets: list[str], folds: int, jobs: int, methods: list[str], max_rows: int) -> None:
    from coreselect.core.objective import DEFAULT_CALIBRATION
    from coreselect.evaluation.protocol import method_factories, run_protocol

    OUT.mkdir(parents=True, exist_ok=True)
    for name in datasets:
        X, Y = load_xy(name)
        n_rows = X.shape[0]
        if max_rows and n_rows > max_rows:  # documented subsample: the run must fit the time
            keep = np.sort(np.random.default_rng(0).choice(n_rows, size=max_rows, replace=False))
            X, Y = X[keep], Y[keep]
        ks = sorted({min(k, selectable_columns(X, folds)) for k in KS})
        n_train = X.shape[0] * (folds - 1) // folds
        options = {"n_samples": 500} if n_train > 3000 else None
        factories = method_factories(methods, lam=0.5, baseline_options=options)
        t0 = time.perf_counter()
        df = run_protocol(X, Y, factories, ks, n_folds=folds, seed=0, jobs=jobs,
                          evaluator=("brknn", "linear"))
        df.insert(0, "dataset", name)
        df.insert(2, "calibration", np.where(df["method"] == "gds", DEFAULT_CALIBRATION,
                                             np.where(df["method"] == "cgds", "paper", "")))
        df["relieff_samples"] = (options or {}).get("n_samples", 0)
        df["rows_used"] = X.shape[0]
        df["rows_total"] = n_rows
        save_method_rows(df, OUT / f"{name}.csv", methods)
        print(f"{name}: {X.shape} in {time.perf_counter() - t0:.0f} s", flush=True)


def _absent_methods_note(df: pd.DataFrame) -> str:
    """Methods missing on some dataset (too slow there): the best baseline is then the best of
    those that ran."""
    absent = [f"{d}: {', '.join(m for m in METHODS if m not in set(g.method))}"
              for d, g in df.groupby("dataset", sort=False)
              if any(m not in set(g.method) for m in METHODS)]
    return (" Methods not run (time; the best baseline is the best of those that ran): "
            + "; ".join(absent) + ".") if absent else ""


def _summary(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"]
    return g.agg(mean="mean", std=lambda v: float(np.std(v, ddof=1))).reset_index()


def verdicts(df: pd.DataFrame, against: list[str]) -> pd.DataFrame:
    """One row per (dataset, evaluator, measure, k): default vs the best of ``against``."""
    s = _summary(df)
    rows = []
    for key, cell in s.groupby(["dataset", "evaluator", "measure", "k"]):
        cell = cell.set_index("method")
        if "gds" not in cell.index:
            continue
        # k = number of features: every method selects every feature, nothing to compare
        if cell["mean"].max() - cell["mean"].min() < 1e-12:
            continue
        others = cell.loc[[m for m in against if m in cell.index]]
        best = others["mean"].idxmax()
        diff = cell.at["gds", "mean"] - others.at[best, "mean"]
        tol = max(cell.at["gds", "std"], others.at[best, "std"])
        verdict = "win" if diff > tol else ("loss" if diff < -tol else "tie")
        rnd = cell.loc["random"] if "random" in cell.index else None
        below_random = bool(rnd is not None and cell.at["gds", "mean"] < rnd["mean"] - max(cell.at["gds", "std"], rnd["std"]))
        rows.append(dict(zip(["dataset", "evaluator", "measure", "k"], key), gds=cell.at["gds", "mean"],
                         gds_std=cell.at["gds", "std"], best=best, best_mean=others.at[best, "mean"],
                         best_std=others.at[best, "std"], diff=diff, verdict=verdict,
                         above_best_mean=bool(diff > 0), below_random=below_random))
    return pd.DataFrame(rows)


def _figure(v: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    from coreselect.evaluation.measures import MEASURES

    datasets = [d for d in FILES if d in set(v["dataset"])]
    cols = [(e, m) for e in ("brknn", "linear") for m in MEASURES]
    score = np.full((len(datasets), len(cols)), np.nan)
    text = [["" for _ in cols] for _ in datasets]
    for i, d in enumerate(datasets):
        for j, (e, m) in enumerate(cols):
            c = v[(v.dataset == d) & (v.evaluator == e) & (v.measure == m)]
            if c.empty:
                continue
            w, t, l = ((c.verdict == x).sum() for x in ("win", "tie", "loss"))
            score[i, j] = (w - l) / len(c)
            text[i][j] = f"{w}/{t}/{l}"
    fig, ax = plt.subplots(figsize=(13, 0.45 * len(datasets) + 2.2), dpi=120)
    cmap = ListedColormap(plt.get_cmap("RdYlGn")(np.linspace(0.1, 0.9, 256)))
    ax.imshow(score, cmap=cmap, vmin=-1, vmax=1, aspect="auto")
    for i in range(len(datasets)):
        for j in range(len(cols)):
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=8)
    short = {"example_f1": "ex-F1", "macro_f1": "macro-F1", "micro_f1": "micro-F1",
             "example_accuracy": "ex-acc", "subset_accuracy": "subset-acc"}
    ax.set_xticks(range(len(cols)), [f"{'BRkNN' if e == 'brknn' else 'linear'}\n{short.get(m, m)}"
                                     for e, m in cols], fontsize=8)
    ax.set_yticks(range(len(datasets)), datasets)
    ax.axvline(len(MEASURES) - 0.5, color="black", linewidth=1.5)
    ax.set_title("coreselect default (gds) vs the best baseline (br-ig, lp-ig, br-rf, lp-rf, br-chi2):\n"
                 "wins / ties / losses over k (tie = within one std over folds); colour = (wins - losses) / cells")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def _relieff_note(df: pd.DataFrame) -> str:
    sampled = df[df.relieff_samples > 0].groupby("dataset")["relieff_samples"].first()
    if sampled.empty:
        return "ReliefF used every instance."
    return ("ReliefF used a random sample of instances (Weka's default is all; time) on: "
            + ", ".join(f"{d} ({int(n)})" for d, n in sampled.items()) + "; all instances elsewhere.")


def _rows_note(df: pd.DataFrame) -> str:
    if "rows_used" not in df.columns:
        return ""
    cut = df[df.rows_used.notna() & (df.rows_used < df.rows_total)].groupby("dataset")[["rows_used", "rows_total"]].first()
    if cut.empty:
        return ""
    return ("Row subsample (random, seed 0) for time: " + ", ".join(
        f"{d} {int(r.rows_used)} of {int(r.rows_total)} rows" for d, r in cut.iterrows()) + ".")


def _pct(v: pd.DataFrame, ok=("win", "tie")) -> str:
    return f"{(v.verdict.isin(ok)).mean() * 100:.0f}% ({int(v.verdict.isin(ok).sum())}/{len(v)})"


def report() -> None:
    from coreselect.core.objective import DEFAULT_CALIBRATION

    frames = [pd.read_csv(p) for p in sorted(OUT.glob("*.csv"))]
    if not frames:
        raise SystemExit("no results in docs/results/baselines/")
    df = pd.concat(frames, ignore_index=True)
    v = verdicts(df, BASELINES)
    v_paper = verdicts(df, ["cgds"])
    write_csv(v, OUT / "verdicts.csv", float_format="%.6g")
    _figure(v, OUT / "winloss.png")
    done = [d for d in FILES if d in set(df.dataset)]
    missing = [d for d in FILES if d not in set(df.dataset)]
    lines = ["# The default selection against the paper's baselines", "",
             "Written whole by `python benchmarks/baselines.py report`. The scoreboard against the "
             "published multi-label MI selectors is [scoreboard.md](scoreboard.md).", "",
             f"`benchmarks/baselines.py`: {df.fold.nunique()}-fold cross-validation (selection fit on the "
             "training folds only, seed 0), k in {10, 20, 50, 100} (capped below), "
             f"two evaluators (BRkNN-b with 5 neighbours; BR logistic regression, liblinear, C = 1). "
             f"`gds` is the library default (calibration `{DEFAULT_CALIBRATION}`, lambda = 0.5); "
             "`cgds` the paper's eq. (2) at lambda = 0.5. " + _relieff_note(df) + " "
             + _rows_note(df), "",
             f"Datasets: {', '.join(done)}." + (f" **Not run** (time): {', '.join(missing)}." if missing else "")
             + _absent_methods_note(df),
             "", "![win/tie/loss](baselines/winloss.png)", "",
             "*win*: the default's mean is above the best baseline's mean by more than one standard "
             "deviation over folds (the larger of the two); *loss*: below by more; *tie*: otherwise. "
             "k is capped at the fewest columns that vary on a training fold ("
             + ", ".join(f"{d} {int(k)}" for d, k in df.groupby("dataset")["k"].max().items()
                         if k < max(KS))
             + "); cells where every method selects every such column are left out of all "
             "counts.", "",
             "## Win or tie against the best baseline", "",
             "| evaluator | measure | win or tie (all cells) | win or tie, wide sparse data | above best mean, wide, k <= 50 | vs paper objective (cgds): win or tie | below random by > 1 std |",
             "|---|---|---|---|---|---|---|"]
    for ev in ("brknn", "linear"):
        for m in ("example_f1", "macro_f1", "micro_f1", "example_accuracy", "subset_accuracy"):
            c = v[(v.evaluator == ev) & (v.measure == m)]
            if c.empty:
                continue
            wide = c[c.dataset.isin(WIDE)]
            w50 = wide[wide.k <= 50]
            cp = v_paper[(v_paper.evaluator == ev) & (v_paper.measure == m)]
            above = f"{w50.above_best_mean.mean() * 100:.0f}% ({int(w50.above_best_mean.sum())}/{len(w50)})" if len(w50) else "-"
            lines.append(f"| {ev} | {m} | {_pct(c)} | {_pct(wide) if len(wide) else '-'} | {above} | "
                         f"{_pct(cp)} | {int(c.below_random.sum())} of {len(c)} |")
    lines += ["", "## Where the default wins and where it does not", "",
              "Wins / ties / losses against the best baseline over k, example F1 and macro F1 together "
              "(cells with k = number of features left out):", "",
              "| dataset | BRkNN-b | linear | vs cgds (paper), both evaluators | below random by > 1 std |",
              "|---|---|---|---|---|"]
    f1 = v[v.measure.isin(["example_f1", "macro_f1"])]
    f1p = v_paper[v_paper.measure.isin(["example_f1", "macro_f1"])]

    def wtl(c: pd.DataFrame) -> str:
        return "/".join(str(int((c.verdict == x).sum())) for x in ("win", "tie", "loss"))

    for d in done:
        c = f1[f1.dataset == d]
        lines.append(f"| {d} | {wtl(c[c.evaluator == 'brknn'])} | {wtl(c[c.evaluator == 'linear'])} | "
                     f"{wtl(f1p[f1p.dataset == d])} | {int(c.below_random.sum())} |")
    lines += [""]
    lines += ["## Per dataset and k (example-based F1 and macro F1)", "",
              "| dataset | evaluator | measure | k | gds | best baseline | verdict |", "|---|---|---|---|---|---|---|"]
    for _, r in v[v.measure.isin(["example_f1", "macro_f1"])].sort_values(["evaluator", "measure"]).iterrows():
        lines.append(f"| {r.dataset} | {r.evaluator} | {r.measure} | {r.k} | {r.gds:.4f} ± {r.gds_std:.4f} | "
                     f"{r.best} {r.best_mean:.4f} ± {r.best_std:.4f} | {r.verdict} |")
    secs = df.groupby(["dataset", "method"])["select_seconds"].mean().unstack("method")
    cols = [m for m in METHODS if m in secs.columns]
    lines += ["", "## Mean selection time per fit (seconds; rankers and gds fit once per fold for all k, "
              "cgds once per k; 2 cores shared with other jobs, so only rough)", "",
              "| dataset | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    lines += [f"| {d} | " + " | ".join(f"{secs.at[d, c]:.3g}" for c in cols) + " |" for d in secs.index]
    lines += [""]
    write_atomic(OUT.parent / "baselines.md", "\n".join(lines))
    print("\n".join(lines[:30]))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=describe(__doc__))
    sub = ap.add_subparsers(dest="cmd", required=True, help="what to do")
    r = sub.add_parser("run", help="cross-validate every method on every dataset (hours); "
                       "one CSV per dataset in docs/results/baselines/")
    r.add_argument("--datasets", default=",".join(FILES), help="comma-separated datasets of $COREDATA")
    r.add_argument("--folds", type=int, default=5, help="cross-validation folds")
    r.add_argument("--jobs", type=int, default=1, help="folds run at once (processes)")
    r.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods")
    r.add_argument("--max-rows", type=int, default=6000,
                   help="random subsample (seed 0) of larger datasets (delicious, tmc2007-500); 0 = all")
    sub.add_parser("report", help="write docs/results/baselines.md and winloss.png from the CSVs "
                   "(seconds)")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        run(args.datasets.split(","), args.folds, args.jobs, args.methods.split(","), args.max_rows)
    else:
        report()


if __name__ == "__main__":
    main()
