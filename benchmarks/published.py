"""The scoreboard: the default against the published multi-label MI selectors.

    python benchmarks/published.py run [--datasets scene,emotions] [--folds 3]
                                       [--ks 10,20,50,100] [--max-rows 6000] [--methods gds,pmu,...]
    python benchmarks/published.py timing [--datasets rcv1subset1,...] [--k 50] [--repeat 3]
    python benchmarks/published.py report

``run`` cross-validates with ``run_protocol`` (what ``coreselect evaluate`` runs: selection fit
on the training folds only, seed 0) the default ``gds``, the nine published selectors of
:mod:`coreselect.baselines.mi_methods`, ``br-ig`` and ``random``, scores every selection with
BRkNN-b and with BR logistic regression, and writes one CSV per dataset to
docs/results/published/ (``select_seconds``: the selection's fit time on one training fold).
A rerun of some methods (``--methods gds``) replaces only their rows, so a new default is
scored against the stored results of the others. :data:`VARIANTS` are the default's ideas one
at a time (the previous default, and each change alone). Datasets run smallest first; one with
more than ``--max-rows`` rows is cut to a random subsample of that many (seed 0), recorded in
the CSV (``rows_used``, ``rows_total``); k is capped at the fewest columns that are not
constant on a training fold (only those can be selected).

``timing`` fits every MI method once per round at one ``k`` on the wide datasets (the same
rows as ``run``), rounds alternating the methods, and writes the best wall time and its CPU
time to docs/results/bench/published_timing.md.

``report`` reads the CSVs (and the timing file) and writes docs/results/scoreboard.md whole:
the win/tie/loss of ``gds`` against the best of all the other methods (the best mean; *win*
above it by more than one standard deviation over folds, the larger of the two, *loss* below
by more, *tie* otherwise) per dataset, evaluator, measure (example F1, macro F1) and k; the
cells where it is below ``random`` by more than one standard deviation; the same for every
variant; selection times.
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
    best_of_cpu,
    cross_validate,
    emit,
    machine,
    md_table,
    save_method_rows,
    selectable_columns,
    write_atomic,
    write_csv,
)
from calibration_research import FILES, load_xy  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "published"
SCOREBOARD = REPO_ROOT / "docs" / "results" / "scoreboard.md"
TIMING = REPO_ROOT / "docs" / "results" / "bench" / "published_timing.md"
#: the two summaries other docs splice in (README, calibration.md)
TARGETS = REPO_ROOT / "docs" / "results" / "bench" / "scoreboard_targets.md"
IDEAS = REPO_ROOT / "docs" / "results" / "bench" / "scoreboard_ideas.md"
PUBLISHED = ["pmu", "mdmr", "d2f", "scls", "lrfs", "lsmfs", "mlsmfs", "ppt-mi", "igmf"]
#: the competitors: gds is scored against the best of these in every cell
OTHERS = [*PUBLISHED, "br-ig"]
METHODS = ["gds", *OTHERS]
#: run beside them for the "never below random" check; not a competitor in the verdicts
REFERENCE = ["random"]
#: the default's ideas one at a time (centralized GDS with these parameters): the previous
#: default, and each of the two changes of the current one alone
VARIANTS = {
    "gds-range": dict(calibration="range"),  # the previous default (p = 10)
    "gds-range-pall": dict(calibration="range", p="all"),  # no top-p cut, distances
    "gds-information-p10": dict(calibration="information", p=10),  # shared bits, top-10
}
#: smallest first (rows x features x labels), so that a run cut short has the most datasets
ORDER = ["emotions", "scene", "yeast", "CAL500", "genbase", "medical", "enron", "Corel5k",
         "tmc2007-500", "bibtex", "rcv1subset1", "delicious"]
#: many features (sparse text and tags): where the selections are timed
WIDE = ["medical", "enron", "tmc2007-500", "bibtex", "rcv1subset1", "delicious"]
MEASURES = ["example_f1", "macro_f1"]
EVALUATORS = ("brknn", "linear")


def _variant(k: int, seed: int, **options):
    from coreselect.core.objective import P_ALL
    from coreselect.evaluation.gds import CalibratedGDS

    if options.get("p") == "all":
        options = {**options, "p": P_ALL}
    return CalibratedGDS(k=k, random_state=seed, **options)


def factories(methods: list[str]) -> dict:
    """``coreselect evaluate``'s factories, and :data:`VARIANTS` by name."""
    from coreselect.evaluation.protocol import method_factories

    plain = method_factories([m for m in methods if m not in VARIANTS], lam=0.5)
    return {m: functools.partial(_variant, **VARIANTS[m]) if m in VARIANTS else plain[m]
            for m in methods}


def load_rows(name: str, max_rows: int):
    """``(X, Y, rows in the file)``: the dataset, cut to a random ``max_rows`` (seed 0)."""
    X, Y = load_xy(name)
    n_rows = X.shape[0]
    if max_rows and n_rows > max_rows:
        keep = np.sort(np.random.default_rng(0).choice(n_rows, size=max_rows, replace=False))
        X, Y = X[keep], Y[keep]
    return X, Y, n_rows


def run(datasets: list[str], folds: int, ks: list[int], methods: list[str], max_rows: int,
        evaluators: tuple[str, ...]) -> None:
    for name in datasets:
        X, Y, n_rows = load_rows(name, max_rows)
        cross_validate(name, X, Y, n_rows, factories(methods), ks, OUT, folds, evaluators)


def timing(datasets: list[str], k: int, repeat: int, max_rows: int, out: Path) -> None:
    """Selection seconds of every MI method at ``k`` on the whole (cut) data, in alternating
    rounds: the best wall time of ``repeat`` and its CPU time, and each method's ratio to
    ``gds`` (CPU; the fairer number on a shared machine)."""
    import os

    methods = ["gds", "gds-range", *PUBLISHED]
    rows, records = [], []
    for name in datasets:
        X, Y, n_rows = load_rows(name, max_rows)
        made = factories(methods)
        for m in methods:
            made[m](2, 0).fit(X[:100], Y[:100])
        best = {m: (np.inf, np.inf) for m in methods}
        for _ in range(repeat):  # rounds: every method once, so load drifts hit all alike
            for m in methods:
                wall, cpu, _ = best_of_cpu(lambda: made[m](k, 0).fit(X, Y), repeat=1)
                if wall < best[m][0]:
                    best[m] = (wall, cpu)
        records += [dict(dataset=name, method=m, k=k, wall=best[m][0], cpu=best[m][1])
                    for m in methods]
        g = best["gds"][1]
        rows.append([name, f"{X.shape[0]} x {X.shape[1]} x {Y.shape[1]}", best["gds"][0], g,
                     best["gds-range"][1] / g]
                    + [best[m][1] / g for m in PUBLISHED])
        print(name, {m: tuple(round(v, 3) for v in best[m]) for m in methods}, flush=True)
    load = os.getloadavg()[0]
    body = (f"Selection at k = {k} on the whole data (the rows of the scoreboard), best wall "
            f"time of {repeat} alternating rounds and its CPU time; 1-min load average "
            f"{load:.1f} at the end. `gds` is the default; `gds-range` the previous default "
            "(CPU time / gds's); the published methods as CPU time / gds's.\n\n"
            + md_table(["dataset", "rows x features x labels", "gds wall s", "gds CPU s",
                        "gds-range", *PUBLISHED], rows, align="ll" + "r" * (3 + len(PUBLISHED))))
    emit("Selection time of the MI methods", body, str(out))
    write_csv(pd.DataFrame(records), out.with_suffix(".csv"), float_format="%.6g")


def verdicts(df: pd.DataFrame, method: str = "gds", rivals: list[str] = OTHERS) -> pd.DataFrame:
    """One row per (dataset, evaluator, measure, k): ``method`` against the best of
    ``rivals`` (:data:`OTHERS` by default), and whether it is below ``random`` by more than
    one standard deviation."""
    g = df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"]
    s = g.agg(mean="mean", std=lambda v: float(np.std(v, ddof=1))).reset_index()
    rows = []
    for key, cell in s.groupby(["dataset", "evaluator", "measure", "k"]):
        cell = cell.set_index("method")
        others = cell[cell.index.isin(rivals)]
        if method not in cell.index or others.empty:
            continue
        if cell["mean"].max() - cell["mean"].min() < 1e-12:
            continue  # k = every selectable feature: every method selects the same
        best = others["mean"].idxmax()
        mean, std = cell.at[method, "mean"], cell.at[method, "std"]
        diff = mean - others.at[best, "mean"]
        tol = max(std, others.at[best, "std"])
        verdict = "win" if diff > tol else ("loss" if diff < -tol else "tie")
        below = ("random" in cell.index and mean < cell.at["random", "mean"]
                 - max(std, cell.at["random", "std"]))
        rows.append(dict(zip(["dataset", "evaluator", "measure", "k"], key),
                         method=method, gds=mean, gds_std=std, best=best,
                         best_mean=others.at[best, "mean"], best_std=others.at[best, "std"],
                         diff=diff, verdict=verdict, below_random=bool(below),
                         random=cell.at["random", "mean"] if "random" in cell.index else np.nan))
    return pd.DataFrame(rows)


def _share(v: pd.DataFrame) -> str:
    ok = int(v.verdict.isin(["win", "tie"]).sum())
    return f"{ok} of {len(v)} ({100 * ok / max(len(v), 1):.0f} %)" if len(v) else "–"


def _counts(v: pd.DataFrame) -> str:
    return "/".join(str(int((v.verdict == x).sum())) for x in ("win", "tie", "loss"))


#: ``benchmarks/rivals.py run``'s CSVs: the same protocol, scored by the linear evaluator of
#: the current linear evaluator (a cut per label chosen on the training fold)
RIVALS_OUT = REPO_ROOT / "docs" / "results" / "rivals"


def current_linear(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str], list[str]]:
    """``df`` with its linear rows (scored by the earlier evaluator, every label cut at 0.5: it collapses
    on rare labels) replaced by those ``rivals.py run`` wrote for the same methods, folds, rows
    and k; the datasets updated, and those whose linear cells are dropped (not re-run)."""
    keep = df[df.evaluator != "linear"]
    new, updated = [], []
    for d in dict.fromkeys(df.dataset):
        path = RIVALS_OUT / f"{d}.csv"
        r = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["evaluator", "method"])
        r = r[(r.evaluator == "linear") & r.method.isin(set(df[df.dataset == d].method))]
        if len(r):
            new.append(r[[c for c in df.columns if c in r.columns]])
            updated.append(d)
    dropped = [d for d in dict.fromkeys(df.dataset) if d not in updated
               and (df[(df.dataset == d)].evaluator == "linear").any()]
    return pd.concat([keep, *new], ignore_index=True), updated, dropped


def report() -> None:
    frames = [pd.read_csv(p) for p in sorted(OUT.glob("*.csv")) if p.name != "verdicts.csv"]
    if not frames:
        raise SystemExit("no results in docs/results/published/")
    df = pd.concat(frames, ignore_index=True)
    df, relinear, unlinear = current_linear(df)
    df = df[df.measure.isin(MEASURES)]
    datasets = [d for d in ORDER if d in set(df.dataset)]
    v = verdicts(df)
    write_csv(v, OUT / "verdicts.csv", float_format="%.6g")
    folds = sorted(set(df.groupby("dataset")["fold"].nunique()))
    top = df.groupby("dataset")["k"].max()
    capped = ", ".join(f"{d} {int(top[d])}" for d in datasets if top[d] < 100)
    ks = sorted(k for k in df.k.unique() if k in (10, 20, 50, 100))
    cut = df.groupby("dataset")[["rows_used", "rows_total"]].first()
    cut = cut[cut.rows_used < cut.rows_total]
    lines = ["# Scoreboard: the default against the published multi-label MI selectors", "",
             "Written whole by `python benchmarks/published.py report` from the CSVs in "
             "[published/](published/) that `python benchmarks/published.py run` wrote "
             "(`run_protocol`, the code of `coreselect evaluate`: selection fit on the training "
             f"folds only, seed 0; {' or '.join(str(f) for f in folds)} folds; k in "
             f"{{{', '.join(str(k) for k in ks)}}}, capped at the fewest columns that vary on "
             f"a training fold ({capped}); evaluators BRkNN-b (5 neighbours) and BR logistic regression; "
             "measures example F1 and macro F1). `gds` is the library default (calibration "
             "`information`, lambda = 0.5); the competitors are the nine published selectors of "
             "`coreselect.baselines.mi_methods` (each checked against a slow reference written "
             "from its paper's formula; the docstrings give the reading taken) and `br-ig`.", "",
             "*win*: the default's mean is above the best competitor's mean by more than one "
             "standard deviation over folds (the larger of the two); *loss*: below by more; "
             "*tie*: otherwise. Cells where every method selects the same (k = every selectable "
             "column) are left out. *Below random*: the default's mean is below `random`'s by "
             "more than one standard deviation.", ""]
    if not cut.empty:
        lines += ["Row subsample (random, seed 0; the label-pair methods and the linear "
                  "evaluator on the full sets do not fit the time on 2 shared cores): "
                  + ", ".join(f"{d} {int(r.rows_used)} of {int(r.rows_total)} rows"
                              for d, r in cut.iterrows()) + ".", ""]
    missing = [d for d in ORDER if d not in datasets]
    if missing:
        lines += [f"Datasets not run yet: {', '.join(missing)}.", ""]
    lines += ["The linear cells are those of `python benchmarks/rivals.py run` (same folds, seed, "
              "rows and k; the linear evaluator with a cut per label chosen on the "
              "training fold: [linear_evaluator.md](linear_evaluator.md)) on "
              + (", ".join(relinear) or "no dataset") + "."
              + (f" On {', '.join(unlinear)} the linear evaluator was not re-run (time on 2 "
                 "shared cores): their linear cells, scored by the earlier 0.5 cut that predicts "
                 "almost no rare label, are left out." if unlinear else ""), ""]
    absent = {d: [m for m in METHODS + REFERENCE if m not in set(df[df.dataset == d].method)]
              for d in datasets}
    absent = {d: m for d, m in absent.items() if m}
    if absent:
        lines += ["Methods not run: " + "; ".join(f"{d}: {', '.join(m)}"
                                                  for d, m in absent.items()) + ".", ""]

    # -- against the best -----------------------------------------------------------------------
    rows = [["all cells", _share(v), _counts(v), int(v.below_random.sum())]]
    for ev in EVALUATORS:
        for ms in MEASURES:
            c = v[(v.evaluator == ev) & (v.measure == ms)]
            rows.append([f"{ev}, {ms}", _share(c), _counts(c), int(c.below_random.sum())])
    for ev in EVALUATORS:
        c = v[v.evaluator == ev]
        rows.append([f"{ev}, both measures", _share(c), _counts(c), int(c.below_random.sum())])
    targets = ("The default (`gds`) against the best of the nine published MI selectors and "
               f"br-ig in every cell ({len(datasets)} datasets, k in "
               f"{{{', '.join(str(k) for k in ks)}}}, {' or '.join(str(f) for f in folds)} "
               "folds; a tie is within one fold standard deviation; *below random*: below "
               "`random` by more than one standard deviation):\n\n"
               + md_table(["cells", "win or tie", "win/tie/loss", "below random"], rows,
                          align="llll"))
    emit("Scoreboard: the default against the best of the others", targets, str(TARGETS))
    lines += ["## The default against the best of all the others", "", targets, ""]
    losses = v[v.verdict == "loss"].best.value_counts()
    if not losses.empty:
        lines += ["Best competitor where the default loses: " + ", ".join(
            f"{m} {c}" for m, c in losses.items()) + ".", ""]
    lines += ["Best competitor per cell (all cells): " + ", ".join(
        f"{m} {c}" for m, c in v.best.value_counts().items()) + ".", ""]

    # -- ideas ---------------------------------------------------------------------------
    ideas = [m for m in ["gds", *VARIANTS] if m in set(df.method)]
    if len(ideas) > 1:
        what = {"gds": "the default: shared bits, every selected feature's relevance",
                "gds-range": "the previous default: range, distances, top-10",
                "gds-range-pall": "range, distances, every selected feature's relevance",
                "gds-information-p10": "shared bits, top-10 relevance"}
        rows = []
        ran = df.groupby(["dataset", "evaluator"])["method"].agg(set)
        lost = [m for m in ideas if m not in set(df[df.evaluator == "linear"].method)]
        both = {key for key, m in ran.items() if set(ideas) <= m}  # the same cells for every idea
        for m in ideas:
            c = verdicts(df, m)
            c = c[[key in both for key in zip(c.dataset, c.evaluator)]]
            rows.append([f"`{m}`", what[m], _share(c), _counts(c), int(c.below_random.sum())]
                        + [_share(c[c.evaluator == ev]) for ev in EVALUATORS])
        ideas = ("Each of the default's two changes alone, scored like the default against "
                 "the same competitors in the same cells (those where every idea ran; "
                 "`CalibratedGDS` with these "
                 "parameters; lambda = 0.5)"
                 + (f"; no linear cell: {', '.join(lost)} were scored by the earlier linear "
                    "evaluator only, not re-run" if lost else "") + ":\n\n"
                 + md_table(["method", "redundancy, relevance", "win or tie", "win/tie/loss",
                             "below random", *EVALUATORS], rows, align="llllrll"))
        emit("Scoreboard: the default's ideas one at a time", ideas, str(IDEAS))
        lines += ["## Which idea moved quality", "", ideas, ""]

    # -- per dataset ---------------------------------------------------------------------
    rows = []
    for d in datasets:
        for ev in EVALUATORS:
            c = v[(v.dataset == d) & (v.evaluator == ev)]
            if not c.empty:
                rows.append([d, ev, _counts(c), int(c.below_random.sum()),
                             ", ".join(sorted(set(c[c.verdict == "loss"].best))) or "–"])
    lines += ["## Per dataset and evaluator", "", "Cells: 2 measures x k.", "",
              md_table(["dataset", "evaluator", "win/tie/loss", "below random", "beaten by"],
                       rows, align="llrrl"), ""]

    # -- time ----------------------------------------------------------------------------
    sel = (df.drop_duplicates(["dataset", "method", "fold", "select_seconds"])
           .groupby(["dataset", "method"])["select_seconds"].mean())
    methods = [m for m in ["gds", *OTHERS] if m in set(df.method)]
    rows = [[d, int(df[df.dataset == d].rows_used.iloc[0])]
            + [sel.get((d, m), float("nan")) for m in methods] for d in datasets]
    lines += ["## Time", "",
              "Selection seconds in the cross-validation (one training fold, mean over folds; "
              "every method fits once per fold at the largest k and serves the smaller k "
              "from its ranking). The machine is shared and a rerun of the default replaces "
              "only its rows, so its column may come from another load than the others': the "
              "timing below runs them side by side.", "",
              md_table(["dataset", "rows"] + methods, rows), ""]
    timed = TIMING.with_suffix(".csv")
    if timed.exists():
        t = pd.read_csv(timed).pivot_table(index="dataset", columns="method", values="cpu")
        slower = (t["gds"] / t["gds-range"]).max()
        rows = [[m, f"{(t[m] / t['gds']).min():.1f}", f"{(t[m] / t['gds']).median():.1f}",
                 f"{int(((t[m] / t['gds']) >= 10).sum())} of {len(t)}"] for m in PUBLISHED]
        lines += ["On the wide sets at k = 50 (CPU seconds, alternating rounds, below): the "
                  "default takes at most "
                  f"{slower:.2f}x the previous default's time; each published method's time "
                  "over the default's:", "",
                  md_table(["method", "its time / the default's: smallest", "median",
                            "sets where >= 10x"], rows, align="lrrr"), ""]
    if TIMING.exists():
        lines += ["On the wide sets at k = 50, alternating rounds "
                  f"([bench/{TIMING.name}](bench/{TIMING.name}), written by `python "
                  "benchmarks/published.py timing`):", "", TIMING.read_text().rstrip(), ""]

    # -- every cell ----------------------------------------------------------------------
    rows = [[r.dataset, r.evaluator, r.measure, int(r.k), f"{r.gds:.4f} ± {r.gds_std:.4f}",
             f"{r.best} {r.best_mean:.4f} ± {r.best_std:.4f}", f"{r.random:.4f}",
             r.verdict + (", below random" if r.below_random else "")]
            for r in v.itertuples()]
    lines += ["## Every cell", "",
              md_table(["dataset", "evaluator", "measure", "k", "gds", "best other", "random",
                        "verdict"], rows, align="lllrllll"), "",
              f"Machine: {machine()} (shared with other jobs).", ""]
    write_atomic(SCOREBOARD, "\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True,
                           help="run: cross-validate; timing: time the selections; "
                                "report: write the scoreboard")
    r = sub.add_parser("run", help="cross-validate every method on the datasets, one CSV per dataset")
    r.add_argument("--datasets", default=",".join(ORDER), help="comma-separated dataset names (smallest first)")
    r.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    r.add_argument("--ks", default="10,20,50,100", help="comma-separated numbers of features")
    r.add_argument("--methods", default=",".join(METHODS + REFERENCE),
                   help="comma-separated methods of coreselect evaluate or variants "
                        f"({', '.join(VARIANTS)}); a rerun of some replaces only their rows")
    r.add_argument("--max-rows", type=int, default=6000, help="random row subsample (seed 0) of larger datasets, for time")
    r.add_argument("--evaluators", default=",".join(EVALUATORS), help="comma-separated evaluators")
    t = sub.add_parser("timing", help="selection time of every MI method on the wide sets")
    t.add_argument("--datasets", default=",".join(WIDE), help="comma-separated dataset names")
    t.add_argument("--k", type=int, default=50, help="number of features")
    t.add_argument("--repeat", type=int, default=3, help="alternating rounds")
    t.add_argument("--max-rows", type=int, default=6000, help="as for run")
    t.add_argument("--out", default=str(TIMING), help="the table's file")
    sub.add_parser("report", help="write docs/results/scoreboard.md from the CSVs")
    a = p.parse_args()
    names = [d for d in getattr(a, "datasets", "").split(",") if d]
    unknown = [d for d in names if d not in FILES]
    if unknown:
        raise SystemExit(f"unknown datasets: {', '.join(unknown)}")
    if a.cmd == "run":
        run(names, a.folds, [int(k) for k in a.ks.split(",")], a.methods.split(","),
            a.max_rows, tuple(a.evaluators.split(",")))
    elif a.cmd == "timing":
        timing(names, a.k, a.repeat, a.max_rows, Path(a.out))
    else:
        report()


if __name__ == "__main__":
    main()
