"""The nine mldr sets as a hold-out: the default against every rival on data no choice of the
default looked at, run once.

    python benchmarks/holdout.py run [--datasets stackex_chess,langlog,slashdot] [--folds 3]
                                     [--ks 10,20,50,100] [--max-rows 6000] [--methods ...]
    python benchmarks/holdout.py report

``run`` is ``benchmarks/rivals.py run`` (``run_protocol``, what ``coreselect evaluate`` runs;
selection fit on the training folds only, seed 0) on the sets of ``../shared/data/mldr/``
(Yahoo! directory categories, StackExchange sites, Language Log, 20 Newsgroups, Slashdot; all
sparse text), scored by BRkNN-b; one CSV per set in docs/results/holdout/. ``report`` writes
docs/results/holdout.md: the default against the best of all rivals per cell, below random,
average ranks with the Friedman test and the Nemenyi critical difference, and the pairwise
win/tie/loss (the tables of rivals.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402

from _common import REPO_ROOT, cross_validate, emit, md_table  # noqa: E402
from calibration_research import FILES  # noqa: E402
from published import load_rows  # noqa: E402
import rivals as R  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "holdout"
REPORT = REPO_ROOT / "docs" / "results" / "holdout.md"
#: the mldr sets, smallest first
MLDR = ["stackex_chess", "langlog", "slashdot", "stackex_chemistry", "stackex_cooking", "ng20",
        "yahoo_reference", "yahoo_health", "yahoo_education"]
FILES.update({name: ([f"mldr/{name}.arff.gz"], f"mldr/{name}.xml") for name in MLDR})


def run(datasets: list[str], folds: int, ks: list[int], methods: list[str], max_rows: int) -> None:
    for name in datasets:
        X, Y, n_rows = load_rows(name, max_rows)
        cross_validate(name, X, Y, n_rows, R.factories(methods), ks, OUT, folds, ("brknn",))


def report() -> None:
    frames = [pd.read_csv(p) for p in sorted(OUT.glob("*.csv"))]
    if not frames:
        raise SystemExit("no results in docs/results/holdout/")
    df = pd.concat(frames, ignore_index=True)
    df = df[df.measure.isin(R.MEASURES)]
    datasets = [d for d in MLDR if d in set(df.dataset)]
    v = R.verdicts(df)
    per = [[d, R._counts(v[v.dataset == d]), int(v[v.dataset == d].below_random.sum()),
            ", ".join(sorted(set(v[(v.dataset == d) & (v.verdict == "loss")].best))) or "–"]
           for d in datasets]
    cut = df.groupby("dataset")[["rows_used", "rows_total"]].first()
    cut = cut[cut.rows_used < cut.rows_total]
    methods = [m for m in R.RANKED if m in set(df.method)]
    ranks = R.ranks_section(df, datasets, methods=methods, out=None)
    body = ("The default (`gds`) against the best of the rivals that ran (" + ", ".join(
        m for m in methods if m not in ("gds", "random")) + ") on mldr sets no choice of the "
        "default looked at, run once: BRkNN-b, 3-fold cross-validation (seed 0), example and "
        "macro F1, k in {10, 20, 50, 100}. A win or a loss: the means differ by more than the "
        "larger fold standard deviation."
        + (" Rows cut (random, seed 0): " + ", ".join(
            f"{d} {int(r.rows_used)} of {int(r.rows_total)}" for d, r in cut.iterrows()) + "."
           if len(cut) else "")
        + (" Not run (time): " + ", ".join(d for d in MLDR if d not in datasets) + "."
           if len(datasets) < len(MLDR) else "")
        + "\n\n" + md_table(["held-out set", "win/tie/loss", "below random", "beaten by"], per,
                            align="llrl")
        + f"\n\nAll cells: {R._share(v)} win or tie ({R._counts(v)}), "
          f"{int(v.below_random.sum())} below random.\n\n" + "\n".join(ranks[2:]))
    emit("The hold-out: nine mldr sets", body, str(REPORT))


def main() -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = p.add_subparsers(dest="cmd", required=True,
                           help="run: cross-validate on the mldr sets; report: write the tables")
    r = sub.add_parser("run", help="cross-validate the default and the rivals")
    r.add_argument("--datasets", default=",".join(MLDR[:3]), help="comma-separated mldr sets")
    r.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    r.add_argument("--ks", default="10,20,50,100", help="comma-separated numbers of features")
    r.add_argument("--max-rows", type=int, default=6000, help="random row cut (seed 0)")
    r.add_argument("--methods", default=",".join(R.RANKED), help="comma-separated methods")
    sub.add_parser("report", help="write docs/results/holdout.md")
    a = p.parse_args()
    if a.cmd == "run":
        run(a.datasets.split(","), a.folds, [int(k) for k in a.ks.split(",")],
            a.methods.split(","), a.max_rows)
    else:
        report()


if __name__ == "__main__":
    main()
