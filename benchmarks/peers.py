"""Peers: the same budget (k = 50 features) with the Python alternatives a user would try.

Methods (each fit on the training folds only, 5-fold CV through
``coreselect.evaluation.run_protocol``; BRkNN-b with 5 neighbours scores the selection):

* ``coreselect CGDS`` / ``coreselect DGDS``: ``GDSSelector`` centralized / distributed
  (the paper's eq. (2), mi relevance, lambda = 0.5, p = 10);
* ``sklearn BR-MI``: ``SelectKBest(mutual_info_classif)`` in binary relevance: the MI of
  every feature with every label (sklearn defaults: its kNN estimator on dense continuous
  data, discrete counting on sparse data), averaged over labels, top k;
* ``sklearn BR-chi2``: the same with ``chi2`` (needs non-negative features);
* ``mRMR per label``: ``mrmr_selection.mrmr_classif`` (F-statistic relevance, correlation
  redundancy) for each label, merged round-robin over labels (skipping repeats) up to k;
* ``random``: k random features (a floor).

Where a peer would take too long on a dataset (estimated from timing it on one or two labels
of the first training fold), it is not cross-validated; the table shows the estimated time
of one fit instead.

    python benchmarks/peers.py [--quick] [--datasets scene,rcv1subset1] [--budget 300]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402


def _dense_labels(Y):
    return Y.toarray() if sp.issparse(Y) else np.asarray(Y)


class BRScore:
    """Binary relevance around a univariate sklearn score: mean over labels, top k."""

    def __init__(self, k, score="mi", labels=None, random_state=0):
        self.k, self.score, self.labels, self.random_state = k, score, labels, random_state

    def _one(self, X, y):
        from sklearn.feature_selection import chi2, mutual_info_classif

        if self.score == "mi":
            return mutual_info_classif(X, y, random_state=self.random_state)
        s, _ = chi2(X, y)
        return np.nan_to_num(s)

    def fit(self, X, Y):
        Y = _dense_labels(Y)
        labels = range(Y.shape[1]) if self.labels is None else self.labels
        scores = np.zeros(X.shape[1])
        for j in labels:
            if np.unique(Y[:, j]).size > 1:
                scores += self._one(X, Y[:, j])
        self.scores_ = scores
        self.selected_ = np.argsort(-scores, kind="stable")[: self.k]
        return self


class MRMRPerLabel:
    """``mrmr_classif`` for each label; rankings merged round-robin up to k features."""

    def __init__(self, k, labels=None):
        self.k, self.labels = k, labels

    def fit(self, X, Y):
        import pandas as pd
        from mrmr import mrmr_classif

        Y = _dense_labels(Y)
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
        frame = pd.DataFrame(Xd, columns=[str(i) for i in range(Xd.shape[1])])
        labels = range(Y.shape[1]) if self.labels is None else self.labels
        ranks = []
        for j in labels:
            if np.unique(Y[:, j]).size < 2:
                continue
            chosen = mrmr_classif(X=frame, y=pd.Series(Y[:, j]), K=self.k, n_jobs=1,
                                  show_progress=False)
            ranks.append([int(c) for c in chosen])
        seen, out = set(), []
        for pos in range(self.k):
            for r in ranks:
                if pos < len(r) and r[pos] not in seen:
                    seen.add(r[pos])
                    out.append(r[pos])
        rest = [i for i in range(X.shape[1]) if i not in seen]
        self.selected_ = np.array((out + rest)[: self.k], dtype=np.int64)
        return self


def _factories():
    from coreselect.evaluation.protocol import method_factories

    gds = method_factories(["cgds", "dgds", "random"])
    return {
        "coreselect CGDS": gds["cgds"],
        "coreselect DGDS": gds["dgds"],
        "sklearn BR-MI": lambda k, seed: BRScore(k, "mi", random_state=seed),
        "sklearn BR-chi2": lambda k, seed: BRScore(k, "chi2"),
        "mRMR per label": lambda k, seed: MRMRPerLabel(k),
        "random": gds["random"],
    }


def estimate_fit(name, X, Y, k, n_labels_probe):
    """Seconds one fit of a per-label peer would take, from ``n_labels_probe`` labels."""
    Yd = _dense_labels(Y)
    L = Yd.shape[1]
    probe = [j for j in range(L) if np.unique(Yd[:, j]).size > 1][:n_labels_probe]
    if name == "sklearn BR-MI":
        est = BRScore(k, "mi", labels=probe)
    elif name == "sklearn BR-chi2":
        est = BRScore(k, "chi2", labels=probe)
    elif name == "mRMR per label":
        est = MRMRPerLabel(k, labels=probe)
    else:
        return None
    t0 = time.perf_counter()
    est.fit(X, Yd)
    return (time.perf_counter() - t0) * L / max(len(probe), 1)


def main(argv=None) -> str:
    ap = C.parser(__doc__)
    ap.add_argument("--datasets", default=None,
                    help="comma-separated datasets of $COREDATA (default scene,rcv1subset1; "
                    "--quick: scene)")
    ap.add_argument("-k", type=int, default=None,
                    help="features each method selects (default 50; 5 with --quick)")
    ap.add_argument("--folds", type=int, default=None, help="CV folds (default 5; 2 with --quick)")
    ap.add_argument("--methods", default=None,
                    help="comma-separated subset of the method names (default: all)")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="cross-validate a peer only if one fit is estimated under this (s)")
    args = ap.parse_args(argv)
    quick = args.quick
    names = (args.datasets or ("scene" if quick else "scene,rcv1subset1")).split(",")
    k = args.k or (5 if quick else 50)
    args.folds = args.folds or (2 if quick else 5)

    import warnings

    from coreselect.evaluation.protocol import make_folds, run_protocol

    warnings.filterwarnings("ignore")
    factories = _factories()
    if args.methods:
        wanted = [m.strip() for m in args.methods.split(",")]
        unknown = [m for m in wanted if m not in factories]
        if unknown:
            ap.error(f"unknown methods {unknown}; choose from {list(factories)}")
        factories = {m: f for m, f in factories.items() if m in wanted}
    try:
        import mrmr  # noqa: F401
    except ImportError:
        factories.pop("mRMR per label", None)
        missing = ["mRMR per label: `mrmr_selection` is not installed (pip install mrmr_selection)"]
    else:
        missing = []

    rows, notes = [], list(missing)
    for name in names:
        if not C.have_data(name):
            notes.append(f"{name}: not found at {C.data_path(name)}, skipped")
            continue
        ds = C.load(name)
        X, Y = ds.X, _dense_labels(ds.Y)
        if quick:
            X, Y = X[:120, :20], Y[:120]
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        negative = (X.min() < 0) if not sp.issparse(X) else (X.data.min() < 0)
        train = make_folds(X.shape[0], args.folds, 0)[0][0]
        run, estimated = {}, {}
        for method, factory in factories.items():
            if method == "sklearn BR-chi2" and negative:
                notes.append(f"{name}: chi2 needs non-negative features, skipped")
                continue
            if X.shape[1] > 2000 and method in ("sklearn BR-MI", "mRMR per label", "sklearn BR-chi2"):
                probe = 1 if method != "sklearn BR-chi2" else 5
                est = estimate_fit(method, X[train], Y[train], k, probe)
                if est is not None and est > args.budget:
                    estimated[method] = (est, probe)
                    continue
            run[method] = factory
        df = run_protocol(X, Y, run, ks=[k], n_folds=args.folds, seed=0)
        f1 = df[df.measure == "example_f1"].groupby("method", sort=False)
        for method in factories:
            if method in run:
                g = f1.get_group(method)
                rows.append([name, method, C.seconds_str(float(g.select_seconds.mean())),
                             f"{g.value.mean():.3f} ± {g.value.std(ddof=1):.3f}"])
            elif method in estimated:
                est, probe = estimated[method]
                rows.append([name, method,
                             f"≈ {C.seconds_str(est)} (est. from {probe} of {Y.shape[1]} labels)",
                             "not run (over the %.0f s budget)" % args.budget])
        notes.append(f"{name}: {X.shape[0]:,} x {X.shape[1]:,}, {Y.shape[1]} labels")
        for row in rows:
            if row[0] == name:  # progress on stderr as each dataset finishes
                print("# " + " | ".join(map(str, row)), file=sys.stderr, flush=True)

    body = [
        f"k = {k}; {args.folds}-fold CV; BRkNN-b (5 neighbours) example-based F1 on the test "
        "folds, mean ± std over folds; time = mean wall time of one selection on a training "
        "fold (single process).",
        "",
        C.md_table(["dataset", "method", "selection time", "example F1"], rows),
    ]
    if notes:
        body += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return C.emit("Peers: coreselect vs the usual Python alternatives", "\n".join(body), args.out)


if __name__ == "__main__":
    main()
