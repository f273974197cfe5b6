"""Research runs for the calibration of the GDS objective (docs/results/calibration.md).

    python benchmarks/calibration_research.py --datasets scene,medical --folds 3 --k 10,50 \
        --methods gds-paper,gds-spread,br-ig,random --out /tmp/research
    python benchmarks/calibration_research.py summarize /tmp/research
    python benchmarks/calibration_research.py timing rcv1subset1

Cross-validates the methods with both evaluators (BRkNN-b and BR logistic regression) via
:func:`coreselect.evaluation.protocol.run_protocol`, selection fit on training folds only,
and prints mean example-F1 / macro-F1 per dataset, k, evaluator and method.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import data_dir, describe, emit, md_table, write_csv  # noqa: E402

#: name -> (file(s) under the data folder, label file); a list of files is stacked
FILES = {
    "scene": (["mulan/scene/scene-train.arff", "mulan/scene/scene-test.arff"], "mulan/scene/scene.xml"),
    "emotions": (["mulan/emotions/emotions.arff"], "mulan/emotions/emotions.xml"),
    "yeast": (["mulan/yeast/yeast.arff"], "mulan/yeast/yeast.xml"),
    "CAL500": (["mulan/cal500/cal500.arff"], "mulan/cal500/cal500.xml"),
    "Corel5k": (["mulan/corel5k/Corel5k-sparse.arff"], "mulan/corel5k/Corel5k.xml"),
    "delicious": (["mulan/delicious/delicious.arff"], "mulan/delicious/delicious.xml"),
    "enron": (["mulan/enron/enron.arff"], "mulan/enron/enron.xml"),
    "medical": (["mulan/medical/medical.arff"], "mulan/medical/medical.xml"),
    "genbase": (["mulan/genbase/genbase.arff"], "mulan/genbase/genbase.xml"),
    "bibtex": (["mulan/bibtex/bibtex.arff"], "mulan/bibtex/bibtex.xml"),
    "tmc2007-500": (["mulan/tmc2007-500/tmc2007-500.arff"], "mulan/tmc2007-500/tmc2007-500.xml"),
    "rcv1subset1": (["rcv1v2/rcv1subset1.arff.gz"], "rcv1v2/rcv1subset1.xml"),
}


def load_xy(name: str):
    """``(X, Y)`` of a shared dataset (train and test files stacked where split)."""
    import scipy.sparse as sp

    import coreselect

    files, labels = FILES[name]
    parts = [coreselect.load(data_dir() / f, labels=data_dir() / labels) for f in files]
    if len(parts) == 1:
        return parts[0].X, parts[0].Y
    stack = sp.vstack if sp.issparse(parts[0].X) else np.vstack
    stack_y = sp.vstack if sp.issparse(parts[0].Y) else np.vstack
    return stack([p.X for p in parts]), stack_y([p.Y for p in parts])


def summarize(folder: str) -> str:
    """Markdown tables (mean over folds) of every CSV in ``folder``, plus mean ranks."""
    frames = [pd.read_csv(p) for p in sorted(Path(folder).glob("*.csv"))]
    df = pd.concat(frames, ignore_index=True)
    s = df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"].mean().unstack("method")
    methods = list(dict.fromkeys(df["method"]))
    out = []
    for measure in ("example_f1", "macro_f1"):
        t = s.xs(measure, level="measure")[methods]
        out += [f"### {measure}", "", "| dataset | evaluator | k | " + " | ".join(methods) + " |",
                "|---" * (len(methods) + 3) + "|"]
        for (d, e, k), row in t.iterrows():
            best = row.max()
            cells = [f"**{v:.3f}**" if v == best else f"{v:.3f}" for v in row]
            out.append(f"| {d} | {e} | {k} | " + " | ".join(cells) + " |")
        ranks = t.rank(axis=1, ascending=False).mean()
        out += ["", "mean rank (1 = best): " + ", ".join(f"{m} {ranks[m]:.2f}" for m in methods), ""]
    return "\n".join(out)


def timing(name: str = "rcv1subset1", ks=(10, 50, 100), repeats: int = 3) -> str:
    """Greedy seconds (discretization and relevance excluded, shared) of each calibration,
    as a Markdown table (best of ``repeats``, calibrations interleaved)."""
    import dataclasses

    from coreselect.core.objective import CALIBRATIONS
    from coreselect.core.problem import Problem, centralized

    X, Y = load_xy(name)
    t0 = time.perf_counter()
    problem = Problem.build(X, Y, k=max(ks))
    shared = time.perf_counter() - t0
    centralized(dataclasses.replace(problem, params=dataclasses.replace(problem.params, k=10)))  # warm up
    rows = []
    for k in ks:
        best: dict = {}
        for _ in range(repeats):  # interleaved, best of n: the machine is shared
            for cal in CALIBRATIONS:
                pr = dataclasses.replace(problem, params=dataclasses.replace(problem.params, k=k, calibration=cal))
                t = time.perf_counter()
                centralized(pr)
                best[cal] = min(best.get(cal, np.inf), time.perf_counter() - t)
        rows.append([k] + [f"{best[c]:.2f}" for c in CALIBRATIONS])
        print(f"k={k}: {rows[-1][1:]}", file=sys.stderr, flush=True)
    return (f"{name}: greedy seconds per calibration, best of {repeats}; discretize + relevance "
            f"(the same for all) {shared:.2f} s.\n\n"
            + md_table(["k", *CALIBRATIONS], rows))


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["summarize"]:
        ap = argparse.ArgumentParser(prog="calibration_research.py summarize",
                                     description="Mean example-F1 and macro-F1 tables and mean "
                                     "ranks of the research CSVs in FOLDER.")
        ap.add_argument("folder", help="folder of the CSVs that a research run wrote (--out)")
        ap.add_argument("--out", default=None,
                        help="also write the Markdown (with the command and date) to this file")
        a = ap.parse_args(argv[1:])
        emit("Calibration research: mean over folds", summarize(a.folder), a.out)
        return
    if argv[:1] == ["timing"]:
        ap = argparse.ArgumentParser(prog="calibration_research.py timing",
                                     description="Greedy time of each calibration on one "
                                     "dataset (discretization and relevance excluded).")
        ap.add_argument("dataset", nargs="?", default="rcv1subset1", choices=list(FILES),
                        help="dataset of $COREDATA")
        ap.add_argument("--ks", default="10,50,100", help="comma-separated k values")
        ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
        ap.add_argument("--out", default=None,
                        help="also write the Markdown (with the command and date) to this file")
        a = ap.parse_args(argv[1:])
        emit("Calibration cost", timing(a.dataset, [int(k) for k in a.ks.split(",")], a.repeat),
             a.out)
        return

    from coreselect.evaluation.protocol import method_factories, run_protocol

    ap = argparse.ArgumentParser(
        description=describe(__doc__) + " Subcommands: `summarize FOLDER`, `timing [DATASET]` "
        "(each with its own --help).")
    ap.add_argument("--datasets", default="scene,emotions,yeast,medical,enron",
                    help="comma-separated datasets of $COREDATA (" + ", ".join(FILES) + ")")
    ap.add_argument("--methods", default="gds-paper,gds-spread,gds-range,gds-ratio,br-ig,random",
                    help="comma-separated methods of the evaluation protocol "
                    "(gds-CALIBRATION, br-ig, br-chi2, lp-ig, random, ...)")
    ap.add_argument("--k", default="10,50", help="comma-separated numbers of features")
    ap.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    ap.add_argument("--lam", type=float, default=0.5, help="lambda of the gds methods")
    ap.add_argument("--jobs", type=int, default=1, help="folds run at once (processes)")
    ap.add_argument("--out", default=None, help="folder for one CSV per dataset")
    args = ap.parse_args(argv)
    methods = method_factories(args.methods.split(","), lam=args.lam)
    for name in args.datasets.split(","):
        X, Y = load_xy(name)
        ks = [k for k in map(int, args.k.split(",")) if k <= X.shape[1]]
        t0 = time.perf_counter()
        df = run_protocol(X, Y, methods, ks, n_folds=args.folds, jobs=args.jobs,
                          evaluator=("brknn", "linear"))
        df.insert(0, "dataset", name)
        if args.out:
            write_csv(df, Path(args.out) / f"{name}.csv")
        sub = df[df.measure.isin(["example_f1", "macro_f1"])]
        table = sub.groupby(["evaluator", "measure", "k", "method"], sort=False)["value"].mean().unstack("method")
        secs = df.groupby("method", sort=False)["select_seconds"].mean()
        print(f"## {name} {X.shape} {Y.shape[1]} labels ({time.perf_counter() - t0:.0f} s)")
        print(table.round(3).to_string())
        print("select seconds:", secs.round(2).to_dict(), flush=True)


if __name__ == "__main__":
    main()
