"""How the default compares with every rival on quality and speed, in one small table.

    python benchmarks/summary.py [--out docs/results/bench/summary.md]

Reads the cross-validation CSVs that ``python benchmarks/rivals.py run`` wrote to
docs/results/rivals/ (nothing is rerun) and writes one table: per group of rivals, how often
the default (``gds``) wins or ties against the best of the group in a cell (dataset,
evaluator, measure, k; the rule of rivals.md: a tie is within one fold standard deviation),
and each rival's selection time over the default's (median over the datasets). The
full tables are on the results pages (rivals.md, scoreboard.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402

from _common import REPO_ROOT, emit, md_table  # noqa: E402

RESULTS = REPO_ROOT / "docs" / "results" / "rivals"
OUT = REPO_ROOT / "docs" / "results" / "bench" / "summary.md"
PUBLISHED = ["pmu", "mdmr", "d2f", "scls", "lrfs", "lsmfs", "mlsmfs", "ppt-mi", "igmf", "atr"]
FILTERS = ["br-ig", "br-chi2", "max-chi2"]
#: the rows of the table: a name a user knows, and the methods of the group
GROUPS = {
    "10 published multi-label MI selectors (PMU, MDMR, D2F, SCLS, …)": PUBLISHED,
    "per-label filters (information gain, χ²)": FILTERS,
    "L1-regularized logistic regression": ["l1"],
    "extra-trees importance": ["trees"],
    "all 15 rivals": [*PUBLISHED, *FILTERS, "l1", "trees"],
}
MEASURES = ["example_f1", "macro_f1"]
CELL = ["dataset", "evaluator", "measure", "k"]


def load_results(folder: Path = RESULTS) -> pd.DataFrame:
    """Every score the cross-validation wrote (both evaluators, example and macro F1)."""
    frames = [pd.read_csv(p) for p in sorted(folder.glob("*.csv"))
              if not p.name.endswith(".stability.csv") and p.name != "linear_variants.csv"]
    if not frames:
        raise SystemExit(f"no results in {folder}: run `python benchmarks/rivals.py run` first")
    df = pd.concat(frames, ignore_index=True)
    return df[df.measure.isin(MEASURES)]


def verdicts(df: pd.DataFrame, rivals: list[str], method: str = "gds") -> pd.Series:
    """``win``, ``tie`` or ``loss`` of ``method`` against the best of ``rivals`` per cell: a
    tie is within one fold standard deviation (the larger of the two means' deviations);
    the scoreboard's rule (:func:`published.verdicts`)."""
    from published import verdicts as cells

    v = cells(df, method, rivals)
    return (v.set_index(CELL)["verdict"].astype(object) if len(v)
            else pd.Series(dtype=object))


def time_ratios(df: pd.DataFrame, rivals: list[str], method: str = "gds") -> pd.Series:
    """Per rival, the median over the datasets of its selection seconds over ``method``'s
    (each the mean over folds of one selection on a training fold)."""
    seconds = (df.drop_duplicates(["dataset", "method", "fold", "select_seconds"])
               .groupby(["dataset", "method"])["select_seconds"].mean().unstack())
    present = [r for r in rivals if r in seconds.columns]
    return seconds[present].div(seconds[method], axis=0).median()


def _times(ratio: float) -> str:
    return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.1f}x"


def summary(df: pd.DataFrame) -> str:
    rows = []
    for name, rivals in GROUPS.items():
        v = verdicts(df, rivals)
        good = int(v.isin(["win", "tie"]).sum())
        ratios = time_ratios(df, rivals)
        spread = (f" ({_times(ratios.min())} to {_times(ratios.max())})"
                  if len(ratios) > 1 else "")
        rows.append([name, f"{100 * good / max(len(v), 1):.0f} % of {len(v)}",
                     "/".join(str(int((v == x).sum())) for x in ("win", "tie", "loss")),
                     _times(float(ratios.median())) + spread])
    datasets = df.dataset.nunique()
    folds = int(df.groupby("dataset")["fold"].nunique().max())
    return ("coreselect's default against each group of rivals, scored by how well a "
            "classifier predicts the labels from the selected features (BRkNN and logistic "
            f"regression; example and macro F1; {datasets} Mulan datasets, k from 10 to 100, "
            f"{folds}-fold cross-validation). *Win or tie*: the share of cells where the "
            "default is not below the best of the group by more than one fold standard "
            "deviation. *Time*: a rival's selection seconds over the default's on the same "
            "training folds, median over the datasets; for a group, the median of its members "
            "(the fastest to the slowest in brackets); above 1x the default is faster.\n\n"
            + md_table(["rivals", "win or tie", "win/tie/loss", "their time / coreselect's"],
                       rows, align="lrrr"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(OUT), help="the Markdown file to write (the README "
                   "splices it in)")
    p.add_argument("--quick", action="store_true",
                   help="no effect (the summary reads saved results and is always quick); "
                        "taken as every benchmark takes it")
    a = p.parse_args(argv)
    emit("How coreselect compares", summary(load_results()), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
