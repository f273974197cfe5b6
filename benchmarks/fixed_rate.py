"""A fixed exchange rate (calibration "fixed") against the per-step "range" default and the paper's eq. (2), on the shared datasets.

    python benchmarks/fixed_rate.py --datasets emotions,scene --out docs/results/bench/fixed_rate.md
    python benchmarks/fixed_rate.py --datasets none --out docs/results/bench/fixed_rate.md

For every dataset not yet in ``--csv-dir`` (default docs/results/fixed_rate/): *quality*, with
``run_protocol`` (selection fit on the training folds only, seed 0, ``--folds`` folds, both
evaluators BRkNN-b and BR logistic regression, example F1 and macro F1) of ``gds-fixed``,
``gds-range`` and ``gds-paper`` at every k; and the *distributed/centralized ratio*: the
objective that each calibration's result reports, of Algorithm 3 (default partitions
``ceil(sqrt(d/k))``, seed 0) over AltGreedy on all features, and the overlap of the two
selections. A dataset with more than ``--max-rows`` rows is cut to a random subsample (seed
0), as benchmarks/published.py does. Then the report over every dataset in the folder:
win / tie / loss of ``fixed`` against ``range`` and ``paper`` (tie: within one standard
deviation over folds, the larger of the two) and against the best baseline of
``--baselines`` (the calibration research's CSVs: same folds), with selection seconds.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import REPO_ROOT, emit, md_table, parser, write_csv  # noqa: E402
from calibration_research import FILES, load_xy  # noqa: E402

CSV_DIR = REPO_ROOT / "docs" / "results" / "fixed_rate"
BASELINES = REPO_ROOT / "docs" / "results" / "calibration"
METHODS = ["gds-fixed", "gds-pilot", "gds-range", "gds-paper"]
#: (first, second) pairs of the win / tie / loss columns ("best" = the best baseline)
PAIRS = [("gds-fixed", "gds-range"), ("gds-pilot", "gds-range"), ("gds-fixed", "gds-paper"),
         ("gds-range", "gds-paper"), ("gds-fixed", "best"), ("gds-pilot", "best"),
         ("gds-range", "best")]
MEASURES = ["example_f1", "macro_f1"]
ORDER = ["emotions", "scene", "yeast", "CAL500", "genbase", "medical", "enron", "Corel5k",
         "tmc2007-500", "bibtex", "rcv1subset1", "delicious"]


def pilot_ranges(problem, chosen) -> tuple[float, float]:
    """The exchange rate that a "range" run used on average: geometric means over its steps
    after the first of the spreads (max - min over the live candidates, copies of selected
    features left out as "range" does) of the relevance and diversity gains. ``R_g`` is halved
    so that AltGreedy, which halves the relevance weight of a fixed objective, weighs the two
    gains as the pilot did."""
    from coreselect.core.entropy import DistanceOracle
    from coreselect.core.objective import relevance_gains

    gains = relevance_gains(problem.relevance, problem.params.p)
    oracle = DistanceOracle(problem.features)
    live = np.asarray(problem.selectable, dtype=bool).copy()
    div = np.zeros(problem.n_columns)
    copies = np.zeros(problem.n_columns, dtype=bool)
    spreads = []
    for t, u in enumerate(problem.positions_of(np.asarray(chosen))):
        if t:
            lv = live & ~copies if (live & ~copies).any() else live
            spreads.append((np.ptp(gains.gains[lv]), np.ptp(div[lv])))
        live[u] = False
        gains.add(int(u))
        dist = oracle.distances_from(int(u))
        div += dist
        copies |= dist <= 1e-9

    def geomean(values):
        values = np.asarray([v for v in values if v > 0])
        return float(np.exp(np.log(values).mean())) if values.size else 0.0

    return geomean([s[0] for s in spreads]) / 2, geomean([s[1] for s in spreads])


class PilotFixedGDS:
    """Experiment (not a library calibration): the "fixed" objective with the exchange rate of
    a pilot "range" run of k steps on the same training data (:func:`pilot_ranges`), then
    AltGreedy on that fixed objective. k-dependent, so refit per k."""

    is_ranker = False

    def __init__(self, k: int = 10, lam: float = 0.5, p: int = 10):
        self.k, self.lam, self.p = k, lam, p

    def fit(self, X, Y):
        import dataclasses

        from coreselect.core import Problem

        t0 = time.perf_counter()
        problem = Problem.build(X, Y, k=self.k, lam=self.lam, p=self.p, calibration="range")
        pilot = problem.run(alternate=True)
        params = dataclasses.replace(problem.params, calibration="fixed",
                                     ranges=pilot_ranges(problem, pilot.selected))
        result = dataclasses.replace(problem, params=params).run(alternate=True)
        self.selected_ = np.asarray(result.selected, dtype=np.int64)
        self.seconds_ = time.perf_counter() - t0
        return self


def _pilot(k: int, seed: int) -> PilotFixedGDS:
    return PilotFixedGDS(k=k)


def _subsample(X, Y, max_rows: int):
    n = X.shape[0]
    if max_rows and n > max_rows:
        keep = np.sort(np.random.default_rng(0).choice(n, size=max_rows, replace=False))
        return X[keep], Y[keep]
    return X, Y


def quality(name: str, X, Y, ks, folds: int, n_rows: int) -> pd.DataFrame:
    from coreselect.evaluation.protocol import method_factories, run_protocol

    factories = method_factories([m for m in METHODS if m != "gds-pilot"], lam=0.5)
    factories["gds-pilot"] = _pilot
    for m in METHODS:  # compiled kernels loaded before any timed fit
        factories[m](1, 0).fit(X[:100], Y[:100])
    df = run_protocol(X, Y, factories, ks, n_folds=folds, seed=0, evaluator=("brknn", "linear"))
    df.insert(0, "dataset", name)
    df["rows_used"], df["rows_total"] = X.shape[0], n_rows
    return df[df.measure.isin(MEASURES)]


def ratios(name: str, X, Y, ks) -> pd.DataFrame:
    """Algorithm 3 (default partitions, seed 0) against AltGreedy, per calibration and k."""
    from coreselect.selection.sources import InMemorySource
    from coreselect.selection.spec import Objective
    from coreselect.selection.strategies import AltGreedy, DistributedGreedy

    source = InMemorySource(X, Y)
    rows = []
    for calibration in ("range", "fixed"):
        for k in ks:
            obj = Objective(k=k, calibration=calibration)
            cent = AltGreedy().run(obj, source)
            dist = DistributedGreedy(random_state=0).run(obj, source)
            overlap = len(set(cent.selected.tolist()) & set(dist.selected.tolist())) / k
            rows.append(dict(dataset=name, calibration=calibration, k=k,
                             partitions=dist.partitions, h_centralized=cent.objective,
                             h_distributed=dist.objective,
                             ratio=dist.objective / cent.objective if cent.objective else np.nan,
                             overlap=overlap, centralized_select_s=cent.timings.get("select"),
                             distributed_s=dist.seconds))
    return pd.DataFrame(rows)


def _stats(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"]
    return g.agg(mean="mean", std=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0)


def _verdict(a_mean, a_std, b_mean, b_std) -> str:
    tol = max(a_std, b_std)
    diff = a_mean - b_mean
    return "win" if diff > tol else ("loss" if diff < -tol else "tie")


def _wtl(verdicts: list[str]) -> str:
    return " / ".join(str(verdicts.count(v)) for v in ("win", "tie", "loss"))


def report(csv_dir: Path, baselines: Path | None) -> str:
    files = sorted(csv_dir.glob("quality-*.csv"))
    if not files:
        return "No results yet: run some datasets first.\n"
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    datasets = [d for d in ORDER if d in set(df.dataset)] + sorted(set(df.dataset) - set(ORDER))
    base = None
    if baselines is not None and baselines.is_dir():
        frames = [pd.read_csv(f) for f in sorted(baselines.glob("*.csv"))]
        if frames:
            b = pd.concat(frames, ignore_index=True)
            base = b[~b.method.str.startswith("gds") & b.measure.isin(MEASURES)]
    s = _stats(df)
    sb = _stats(base) if base is not None and len(base) else None
    short = {"gds-fixed": "fixed", "gds-pilot": "pilot", "gds-range": "range",
             "gds-paper": "paper", "best": "best baseline"}
    per, cells = [], []
    totals: dict = {pair: [] for pair in PAIRS}
    for name in datasets:
        sub = s.xs(name, level="dataset")
        v: dict = {pair: [] for pair in PAIRS}
        for (ev, measure, k), cell in sub.groupby(level=["evaluator", "measure", "k"]):
            cell = cell.droplevel(["evaluator", "measure", "k"])
            stats = {m: (cell.at[m, "mean"], cell.at[m, "std"]) for m in METHODS}
            best = "-"
            if sb is not None and (name, ev, measure, k) in sb.droplevel("method").index:
                bc = sb.xs((name, ev, measure, k), level=["dataset", "evaluator", "measure", "k"])
                top = bc["mean"].idxmax()
                stats["best"] = (bc.at[top, "mean"], bc.at[top, "std"])
                best = f"{top} {bc.at[top, 'mean']:.3f}"
            for a, b in PAIRS:
                if a in stats and b in stats:
                    v[(a, b)].append(_verdict(*stats[a], *stats[b]))
            cells.append([name, ev, measure, k]
                         + [f"{stats[m][0]:.3f} ± {stats[m][1]:.3f}" for m in METHODS] + [best])
        for pair in PAIRS:
            totals[pair] += v[pair]
        d = df[df.dataset == name]
        secs = d.groupby("method")["select_seconds"].mean()
        means = d.groupby("method")["value"].mean()
        rows_used, rows_total = int(d.rows_used.iloc[0]), int(d.rows_total.iloc[0])
        per.append([name if rows_used == rows_total else f"{name} ({rows_used} of {rows_total} rows)"]
                   + [_wtl(v[pair]) if v[pair] else "-" for pair in PAIRS]
                   + [" / ".join(f"{means[m]:.3f}" for m in METHODS),
                      " / ".join(f"{secs[m]:.2f}" for m in METHODS)])
    per.append(["**all**"] + [_wtl(totals[pair]) if totals[pair] else "-" for pair in PAIRS]
               + ["", ""])
    names = " / ".join(short[m] for m in METHODS)
    headers = (["dataset"] + [f"{short[a]} vs {short[b]}" for a, b in PAIRS]
               + [f"mean F1 {names}", f"select s {names}"])
    folds = int(df.fold.max()) + 1
    out = [f"Quality: {folds} folds, selection fit on the training folds only, k in "
           f"{{{', '.join(map(str, sorted(set(df.k))))}}}, both evaluators, example F1 and macro F1 "
           "(cells per dataset: evaluators x measures x k). *pilot* is an experiment, not a library "
           "calibration: the fixed objective with the average exchange rate of a range run of k "
           "steps on the same training data (pilot_ranges). *win / tie / loss* of the first named "
           "against the second; tie: within one standard deviation over folds (the larger of the "
           "two). Best baseline: the best mean of br-ig, br-chi2, lp-ig and random in the "
           "calibration research's CSVs (docs/results/calibration/, same folds), where there is one.",
           "",
           md_table(headers, per),
           ""]
    ratio_files = sorted(csv_dir.glob("ratios-*.csv"))
    if ratio_files:
        r = pd.concat([pd.read_csv(f) for f in ratio_files], ignore_index=True)
        r["order"] = r.dataset.map({n: i for i, n in enumerate(ORDER)}).fillna(99)
        r = r.sort_values(["order", "dataset", "k"])
        rows = []
        for (name, k), g in r.groupby(["dataset", "k"], sort=False):
            rg, fx = (g[g.calibration == c].iloc[0] for c in ("range", "fixed"))
            rows.append([name, k, int(rg.partitions), f"{rg.ratio:.4f}", f"{rg.overlap:.2f}",
                         f"{fx.ratio:.4f}", f"{fx.overlap:.2f}"])
        out += ["Algorithm 3 against AltGreedy on all features (default partitions, seed 0; the "
                "same row subsample): ratio of the objective each result reports (range: eq. (2)'s "
                "h, which range does not maximize; fixed: its own h, which both runs maximize) and "
                "the share of the centralized selection that the distributed one holds.", "",
                md_table(["dataset", "k", "parts", "range: h ratio", "range: overlap",
                          "fixed: h ratio", "fixed: overlap"], rows), ""]
    out += ["Every cell (mean ± std over folds):", "",
            md_table(["dataset", "evaluator", "measure", "k"] + [short[m] for m in METHODS]
                     + ["best baseline"], cells)]
    return "\n".join(out)


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--datasets", default="emotions,scene,yeast,genbase,medical,enron,CAL500",
                    help="comma-separated datasets of $COREDATA to run (" + ", ".join(FILES)
                    + "; 'none': only the report)")
    ap.add_argument("--ks", default="10,50", help="comma-separated numbers of features")
    ap.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    ap.add_argument("--max-rows", type=int, default=6000,
                    help="random row subsample (seed 0) of larger datasets, for time")
    ap.add_argument("--csv-dir", default=None,
                    help=f"folder of the per-dataset CSVs (default {CSV_DIR.relative_to(REPO_ROOT)})")
    ap.add_argument("--baselines", default=str(BASELINES),
                    help="folder of CSVs with baseline rows on the same folds (calibration research)")
    ap.add_argument("--rerun", action="store_true", help="rerun datasets already in the folder")
    a = ap.parse_args(argv)
    tmp = None
    if a.quick:  # scene cut to 300 rows, k 3 and 5, 2 folds, into a temporary folder
        tmp = tempfile.TemporaryDirectory()
        a.datasets, a.ks, a.folds, a.max_rows = "scene", "3,5", 2, 300
        a.csv_dir = a.csv_dir or tmp.name
    csv_dir = Path(a.csv_dir) if a.csv_dir else CSV_DIR
    csv_dir.mkdir(parents=True, exist_ok=True)
    scratch = tmp is not None and csv_dir == Path(tmp.name)  # removed at the end: not a result
    names = [] if a.datasets == "none" else a.datasets.split(",")
    for name in names:
        if name not in FILES:
            ap.error(f"unknown dataset {name!r}; choose from {', '.join(FILES)}")
        qpath, rpath = csv_dir / f"quality-{name}.csv", csv_dir / f"ratios-{name}.csv"
        if qpath.exists() and rpath.exists() and not a.rerun:
            continue
        t0 = time.perf_counter()
        X, Y = load_xy(name)
        n_rows = X.shape[0]
        X, Y = _subsample(X, Y, a.max_rows)
        ks = sorted({min(int(k), X.shape[1]) for k in a.ks.split(",")})
        if a.rerun or not rpath.exists():
            write_csv(ratios(name, X, Y, ks), rpath, announce=not scratch)
        if a.rerun or not qpath.exists():
            write_csv(quality(name, X, Y, ks, a.folds, n_rows), qpath, announce=not scratch)
        print(f"{name}: {X.shape} in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    emit("Fixed exchange rate against range and paper",
         report(csv_dir, None if a.quick else Path(a.baselines)), a.out)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
