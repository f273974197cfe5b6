"""The linear evaluator on data where many rows have no label: per-label cuts alone against the
cuts with the empty-set model (evaluation/linear.py), beside BRkNN-b.

    python benchmarks/empty_labelsets.py [--folds 3] [--ks 10,50] [--out PATH]

No shared set has a row without a label, so three are derived from shared dense sets by keeping
some labels: scene's first three (51 % of the rows then have none), yeast's five rarest (67 %)
and emotions' two rarest (48 %). On each, the default's selection (fit on the training folds
only, seed 0) is scored by BRkNN-b and by the linear evaluator without (``empty="none"``, the
evaluator before) and with the empty-set model: example F1 and macro F1 (mean ± std over
folds), and the share of the test rows without a label that get some label.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import _common as C  # noqa: E402
from published import load_rows  # noqa: E402

#: derived set -> (shared set, which labels are kept)
DERIVED = {"scene, labels 1-3": ("scene", "first3"), "yeast, 5 rarest labels": ("yeast", "rare5"),
           "emotions, 2 rarest labels": ("emotions", "rare2")}


def derived(name: str):
    base, keep = DERIVED[name]
    X, Y, _ = load_rows(base, 6000)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X)
    Y = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y)
    order = np.argsort(Y.mean(axis=0), kind="stable")
    cols = {"first3": [0, 1, 2], "rare5": order[:5], "rare2": order[:2]}[keep]
    return X, Y[:, cols]


def main() -> None:
    import coreselect
    from coreselect.evaluation.brknn import BRkNNb
    from coreselect.evaluation.linear import BRLogistic
    from coreselect.evaluation.measures import example_f1, macro_f1
    from coreselect.evaluation.protocol import make_folds

    ap = C.parser(C.describe(__doc__))
    ap.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    ap.add_argument("--ks", default="10,50", help="comma-separated numbers of features")
    args = ap.parse_args()
    ks = [10] if args.quick else [int(k) for k in args.ks.split(",")]
    names = list(DERIVED)[:1] if args.quick else list(DERIVED)
    rows = []
    for name in names:
        X, Y = derived(name)
        for k in ks:
            got: dict = {}
            for tr, te in make_folds(X.shape[0], args.folds, 0):
                sel = np.asarray(coreselect.select(X[tr], Y[tr], k=k).selected)
                empty = Y[te].sum(axis=1) == 0
                for label, clf in (("BRkNN-b", BRkNNb()),
                                   ("linear, per-label cuts only", BRLogistic(empty="none")),
                                   ("linear, with the empty-set model", BRLogistic())):
                    clf.fit(X[tr][:, sel], Y[tr])
                    P = clf.predict(X[te][:, sel])
                    Q = clf.predict_per_label(X[te][:, sel]) if hasattr(clf, "predict_per_label") else P
                    g = got.setdefault(label, {"ex": [], "ma": [], "fp": []})
                    g["ex"].append(example_f1(Y[te], P))
                    g["ma"].append(macro_f1(Y[te], Q))
                    g["fp"].append(float(P[empty].any(axis=1).mean()))
            for label, g in got.items():
                rows.append([name, f"{(Y.sum(axis=1) == 0).mean():.0%}", k, label,
                             f"{np.mean(g['ex']):.3f} ± {np.std(g['ex'], ddof=1):.3f}",
                             f"{np.mean(g['ma']):.3f} ± {np.std(g['ma'], ddof=1):.3f}",
                             f"{np.mean(g['fp']):.2f}"])
            print(name, k, "done", file=sys.stderr, flush=True)
    body = (f"The default's selection ({args.folds}-fold CV, seed 0, fit on the training folds "
            "only); macro F1 of the linear evaluator is scored on each label's own cut in both "
            "rows (what `coreselect evaluate` does), example F1 on the predicted label sets.\n\n"
            + C.md_table(["data", "rows without a label", "k", "evaluator", "example F1",
                          "macro F1", "empty test rows given a label"], rows, align="lrrlllr"))
    C.emit("The linear evaluator where many rows have no label", body, args.out)


if __name__ == "__main__":
    main()
