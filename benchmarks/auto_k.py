"""Automatic k: the chosen k's score against the best fixed k's, and its cost.

    python benchmarks/auto_k.py [--datasets emotions,scene] [--folds 3] [--out PATH]

For each dataset, an outer ``--folds``-fold cross-validation (``run_protocol``'s split, seed
0): on each training fold ``select(k="auto")`` (the greedy order up to the cap, internal
cross-validation on the training fold only) and, timed apart, one selection at the cap
(``select(k=cap)``, the same data). Every prefix of the order at k in {10, 20, 50, 100} (capped)
and the automatic one are scored on the test fold: BRkNN-b, example F1. The table gives the
automatic k per fold, its score (mean ± std over folds), the best fixed k's score, whether the
automatic score is within one fold std of the best (the larger std of the two), whether the
automatic k is at most the best k (mean over folds), and the cost of ``k="auto"`` over one
selection at the cap (ratio of the CPU seconds summed over folds, both measured in this
process on the same folds: CPU time, as the machine is shared; the kernels' compilation is
loaded before the first timed call).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _common as C  # noqa: E402
from calibration_research import FILES, load_xy  # noqa: E402

KS = (10, 20, 50, 100)
DEFAULT = "emotions,scene,yeast,CAL500,genbase,medical,enron,Corel5k"


def run_one(name: str, folds: int) -> dict:
    import coreselect
    from coreselect.evaluation.protocol import _score, make_folds

    X, Y = load_xy(name)
    X = X.tocsr() if hasattr(X, "tocsr") else np.asarray(X)
    Y = Y.toarray() if hasattr(Y, "toarray") else np.asarray(Y)
    coreselect.select(X[:50], Y[:50], k=1)  # load the compiled kernels before timing
    per_k: dict = {}
    auto_scores, chosen, t_auto, t_cap = [], [], 0.0, 0.0
    for f, (train, test) in enumerate(make_folds(X.shape[0], folds, 0)):
        Xtr, Ytr, Xte, Yte = X[train], Y[train], X[test], Y[test]
        t0 = time.process_time()  # CPU time: the machine is shared (see the load below)
        res = coreselect.select(Xtr, Ytr, k="auto")
        t_auto += time.process_time() - t0
        cap = res.auto_k.cap
        t0 = time.process_time()
        coreselect.select(Xtr, Ytr, k=cap)
        t_cap += time.process_time() - t0
        order = np.asarray(res.ranking)
        chosen.append(res.auto_k.k)
        auto_scores.append(_score(Xtr, Ytr, Xte, Yte, order[:res.auto_k.k],
                                  measures=["example_f1"])["example_f1"])
        for k in KS:  # k = 100 on 72 features: all of them (the cap); the same key per fold
            per_k.setdefault(k, []).append(_score(Xtr, Ytr, Xte, Yte, order[:min(k, cap)],
                                                  measures=["example_f1"])["example_f1"])
    best_k = max(per_k, key=lambda k: np.mean(per_k[k]))
    a, b = np.asarray(auto_scores), np.asarray(per_k[best_k])
    tol = max(a.std(ddof=1), b.std(ddof=1))
    return {"dataset": name, "n": X.shape[0], "d": X.shape[1], "cap": cap,
            "chosen": chosen, "auto": (a.mean(), a.std(ddof=1)), "best_k": best_k,
            "best": (b.mean(), b.std(ddof=1)), "within": a.mean() >= b.mean() - tol,
            "le_best": np.mean(chosen) <= best_k, "ratio": t_auto / t_cap,
            "t_auto": t_auto / folds, "t_cap": t_cap / folds,
            "fixed": {k: float(np.mean(v)) for k, v in per_k.items()}}


def main() -> None:
    ap = C.parser(C.describe(__doc__))
    ap.add_argument("--datasets", default=DEFAULT,
                    help="comma-separated shared datasets (benchmarks/calibration_research.py)")
    ap.add_argument("--folds", type=int, default=3, help="outer cross-validation folds")
    args = ap.parse_args()
    names = ["emotions"] if args.quick else [n.strip() for n in args.datasets.split(",")]
    rows = []
    for name in names:
        if name not in FILES:
            raise SystemExit(f"unknown dataset {name!r}")
        r = run_one(name, args.folds)
        print(name, r, file=sys.stderr, flush=True)
        rows.append([
            r["dataset"], f"{r['n']} x {r['d']}", r["cap"], ", ".join(map(str, r["chosen"])),
            f"{r['auto'][0]:.3f} ± {r['auto'][1]:.3f}", r["best_k"],
            f"{r['best'][0]:.3f} ± {r['best'][1]:.3f}", "yes" if r["within"] else "**no**",
            "yes" if r["le_best"] else "no", f"{r['ratio']:.2f}x",
            f"{r['t_auto']:.2f} s / {r['t_cap']:.2f} s",
            ", ".join(f"{k}: {v:.3f}" for k, v in r["fixed"].items())])
    table = C.md_table(["dataset", "n x d", "cap", "auto k per fold", "auto example F1",
                        "best k", "best k's F1", "within 1 std", "auto k <= best k",
                        "CPU cost / cap", "CPU s per fold (auto / cap)", "fixed k: mean F1"], rows)
    C.emit("Automatic k: the chosen k against the best fixed k (BRkNN-b, example F1)", table,
           args.out)


if __name__ == "__main__":
    main()
