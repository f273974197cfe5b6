"""Automatic ``k``: how many of the greedy order's features to keep (``k="auto"``).

The rule, on the training data only:

1. The greedy order is computed once, up to the **cap** ``min(selectable features,
   AUTO_CAP)`` (:func:`cap_for`). Under the default calibration the selection of any ``k`` is
   the first ``k`` of that order (a greedy step's gains do not depend on ``k``); under
   ``"paper"`` and ``"fixed"``, whose weights depend on ``k``, the prefixes of the order at the
   cap are what is scored.
2. Prefixes of sizes :func:`k_grid` (1, 2, 3, 5, 7, 10, 20, 30, 50, 70, 100: the
   1-2-3-5-7 ladder below the cap, and the cap) are scored by **internal cross-validation**: ``INNER_FOLDS``
   folds (seed 0; fewer on fewer than ``2 * INNER_FOLDS`` rows) of at most ``INNER_ROWS``
   training rows (a seeded random sample beyond),
   the cheap evaluator BRkNN-b (5 neighbours) fitted on each prefix's columns, example F1 on
   the held-out fold.
3. **The rule** (:data:`RULE`), on two curves, example F1 and macro F1 (:data:`MEASURES`): per
   measure, the ``k`` of the best mean, but no more than half the features that vary on the
   training rows unless the curve still rises beyond that by more than its band (the standard
   error, fold std / sqrt(folds), of the best mean at or below half); the rule keeps the
   larger of the two measures' ``k``, so that the choice is close to the best on both.
   Chosen leave-one-dataset-out among band rules (one standard error, one fold std, the best
   mean; example F1, macro F1 or both; with and without the half cap) on the shared data sets,
   both evaluators and both measures (docs/results/auto_k_rules.md, ``coreselect bench
   auto_k_rules``): the one-standard-error rule on example F1 alone, the rule before, landed
   within one fold std of the best fixed k in 17 of 26 cells, this rule in 22.

The order is computed on all the training rows, so the inner folds' validation rows took part
in the selection they score: a small optimism shared by every prefix, which moves the curve,
not much its shape. Everything here sees only the data it is given: inside ``evaluate``'s outer
folds, the training fold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from coreselect.errors import InputError

#: The greedy order is computed up to at most this many features.
AUTO_CAP = 100
#: Folds of the internal cross-validation, and the most training rows it uses.
INNER_FOLDS = 5
INNER_ROWS = 1000
#: Seed of the inner folds and of the row sample.
INNER_SEED = 0
MEASURE = "example_f1"
#: the curves the rule reads
MEASURES = ("example_f1", "macro_f1")
RULE = "best of example and macro F1, half the features unless a rise beyond exceeds its standard error"


def cap_for(n_selectable: int) -> int:
    """How far the greedy order is computed: ``min(n_selectable, AUTO_CAP)``."""
    return int(max(0, min(int(n_selectable), AUTO_CAP)))


def auto_cap(X) -> int:
    """The cap for a ranking of ``X``'s columns (the training rows): :func:`cap_for` of the
    columns that vary on them, at least 1."""
    return max(1, cap_for(varying_columns(X)))


def k_grid(cap: int) -> np.ndarray:
    """The prefix sizes scored: the 1-2-3-5-7 ladder (1, 2, 3, 5, 7, 10, 20, 30, 50, 70,
    100, ...) below ``cap``, and ``cap``."""
    cap = int(cap)
    if cap < 1:
        return np.zeros(0, dtype=np.int64)
    ladder = [m * 10**e for e in range(len(str(cap))) for m in (1, 2, 3, 5, 7)]
    return np.unique([g for g in ladder if g < cap] + [cap]).astype(np.int64)


@dataclass
class AutoK:
    """The choice of ``k``: the chosen ``k``, the cap, the greedy order up to the cap, and the
    curve (``cv_results``: ``n_features``, ``mean_test_score``, ``std_test_score`` and
    ``split{i}_test_score``, as scikit-learn's ``RFECV.cv_results_``)."""

    k: int
    cap: int
    order: np.ndarray
    cv_results: dict
    best_k: int
    seconds: float = 0.0
    rule: str = RULE
    measure: str = MEASURE
    evaluator: str = "brknn"
    folds: int = INNER_FOLDS
    rows: int = 0
    timings: dict = field(default_factory=dict)
    #: half the varying features (the rule's cap unless the curve rises beyond it)
    half: int = 0
    #: per measure: its k, the level a rise beyond ``half`` had to clear, the band (SE)
    per_measure: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        cv = self.cv_results
        out = {
            "k": int(self.k), "best_k": int(self.best_k), "cap": int(self.cap),
            "rule": self.rule, "measure": self.measure, "evaluator": self.evaluator,
            "folds": int(self.folds), "rows": int(self.rows),
            "curve": {"n_features": [int(v) for v in cv["n_features"]],
                      "mean": [round(float(v), 6) for v in cv["mean_test_score"]],
                      "std": [round(float(v), 6) for v in cv["std_test_score"]]},
            "seconds": round(float(self.seconds), 4),
        }
        if self.per_measure:
            out["half"] = int(self.half)
            out["measures"] = {
                m: {"mean": [round(float(v), 6) for v in cv[f"mean_test_{m}"]],
                    "se": [round(float(v), 6) for v in cv[f"se_test_{m}"]],
                    **{key: (round(float(v), 6) if isinstance(v, float) else int(v))
                       for key, v in info.items()}}
                for m, info in self.per_measure.items()}
        return out


def one_standard_error(grid: np.ndarray, scores: np.ndarray) -> tuple[int, int]:
    """``(chosen k, best k)``: ``scores`` is (folds, grid); the smallest grid size whose mean is
    within one standard error of the best mean (the first best on ties)."""
    mean = scores.mean(axis=0)
    best = int(np.argmax(mean))
    se = scores[:, best].std() / np.sqrt(scores.shape[0])
    ok = np.flatnonzero(mean >= mean[best] - se - 1e-12)
    return int(grid[ok[0]]), int(grid[best])


def label_scores(T: np.ndarray, P: np.ndarray, measures=("example_f1", "macro_f1")) -> dict:
    """Example F1 and/or macro F1 of ``P`` against ``T`` with Mulan's conventions (as
    :mod:`coreselect.evaluation.measures`: both sets empty score 1; a label neither present nor
    predicted scores 1)."""
    T, P = np.asarray(T) != 0, np.asarray(P) != 0
    out = {}
    for m in measures:
        if m == "example_f1":
            out[m] = example_f1(T, P)
        elif m == "macro_f1":
            tp = (T & P).sum(axis=0)
            size = T.sum(axis=0) + P.sum(axis=0)
            out[m] = float(np.where(size == 0, 1.0, 2.0 * tp / np.maximum(size, 1)).mean())
        else:
            raise InputError(f"k='auto' scores example_f1 or macro_f1, got {m!r}")
    return out


def band_rule(curves: dict, grid: np.ndarray, band: str = "se", half: int | None = None) -> int:
    """The k of the band rule on inner-CV ``curves`` (measure -> (folds, grid) scores): the
    largest of the measures' :func:`measure_pick`, so that it is close to the best on each."""
    return max(measure_pick(scores, grid, band, half)["k"] for scores in curves.values())


def measure_pick(scores: np.ndarray, grid: np.ndarray, band: str = "se",
                 half: int | None = None) -> dict:
    """One measure's pick from its inner-CV ``scores`` (folds, grid).

    The band is the standard error (``band="se"``: fold std / sqrt(folds)), one fold std
    (``"std"``) of the best mean, or nothing (``"best"``: the best mean's k); the pick is the
    smallest grid size whose mean is within the band of the best. With ``half``, sizes above
    ``half`` count only where the curve still rises beyond it: the best mean above ``half``
    exceeds the best at or below it by more than the band, and at least by the larger of the
    two points' standard errors (the ``threshold``): on a few hundred rows one inner fold can
    lift a large prefix's mean by more than the other point's error. Returns ``k``,
    ``threshold`` (NaN without a half cap in play) and ``band`` (the standard error of the
    best mean at or below ``half``)."""
    grid = np.asarray(grid)
    scores = np.asarray(scores, dtype=np.float64)
    mean = scores.mean(axis=0)
    allowed = np.ones(grid.size, dtype=bool)
    best = int(np.argmax(mean))
    width = _band(scores[:, best], band)
    threshold, se = float("nan"), _band(scores[:, best], "se")
    if half is not None and (grid <= half).any() and (grid > half).any():
        low = np.flatnonzero(grid <= half)
        b_low = low[int(np.argmax(mean[low]))]
        high = np.flatnonzero(grid > half)
        b_high = high[int(np.argmax(mean[high]))]
        # a rise counts when it exceeds its band, at least the standard error of both ends
        se = _band(scores[:, b_low], "se")
        threshold = float(mean[b_low] + max(_band(scores[:, b_low], band), se,
                                            _band(scores[:, b_high], "se")))
        if grid[best] > half and mean[best] <= threshold:
            allowed = grid <= half  # no real rise beyond half the features
            best = b_low
            width = _band(scores[:, best], band)
    ok = np.flatnonzero(allowed & (mean >= mean[best] - width - 1e-12))
    return {"k": int(grid[ok[0]]), "threshold": threshold, "band": float(se)}


def _band(best_scores: np.ndarray, band: str) -> float:
    if band == "se":
        return float(best_scores.std() / np.sqrt(best_scores.size))
    if band == "std":
        return float(best_scores.std())
    if band == "best":
        return 0.0
    raise InputError(f"band must be 'se', 'std' or 'best', got {band!r}")


def _inner_folds(n: int, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    perm = np.random.default_rng(seed).permutation(n)
    parts = np.array_split(perm, folds)
    return [(np.sort(np.concatenate(parts[:i] + parts[i + 1:])), np.sort(parts[i]))
            for i in range(folds)]


def score_prefixes(X, Y, order: np.ndarray, grid: np.ndarray, *, folds: int = INNER_FOLDS,
                   max_rows: int = INNER_ROWS, seed: int = INNER_SEED
                   ) -> tuple[np.ndarray, int]:
    """Example F1 of BRkNN-b on the first ``g`` columns of ``order`` for each ``g`` of
    ``grid``, per inner fold: ``(scores (folds, grid), rows used)``."""
    curves, used = score_curves(X, Y, order, grid, ("example_f1",), folds=folds,
                                max_rows=max_rows, seed=seed)
    return curves["example_f1"], used


def score_curves(X, Y, order: np.ndarray, grid: np.ndarray, measures=MEASURES, *,
                 folds: int = INNER_FOLDS, max_rows: int = INNER_ROWS, seed: int = INNER_SEED
                 ) -> tuple[dict, int]:
    """:func:`score_prefixes` for several measures (:func:`label_scores`) from the same
    predictions: ``({measure: scores (folds, grid)}, rows used)``."""
    n = X.shape[0]
    if n < 4:
        raise InputError(f"k='auto' cross-validates on the samples and needs at least 4, got {n}")
    folds = max(2, min(folds, n // 2))  # at least 2 rows per fold
    rows = np.arange(n)
    if n > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))
    Xc = X.tocsc() if sp.issparse(X) else np.asarray(X)
    Xs = Xc[:, np.asarray(order, dtype=np.int64)]
    Xs = (Xs.tocsr()[rows].toarray() if sp.issparse(Xs) else Xs[rows]).astype(np.float64)
    Ys = (Y.tocsr()[rows].toarray() if sp.issparse(Y) else np.asarray(Y)[rows]) != 0
    from threadpoolctl import threadpool_limits  # scikit-learn's dependency

    curves = {m: np.zeros((folds, grid.size)) for m in measures}
    # Small products (rows x a few columns): BLAS threads would spin more than they work.
    with threadpool_limits(1, user_api="blas"):
        for f, (tr, va) in enumerate(_inner_folds(rows.size, folds, seed)):
            for j, pred in enumerate(brknn_b_prefixes(Xs[tr], Ys[tr], Xs[va], grid)):
                for m, v in label_scores(Ys[va], pred, measures).items():
                    curves[m][f, j] = v
    return curves, int(rows.size)


def example_f1(T: np.ndarray, P: np.ndarray) -> float:
    """Mean over examples of ``2 |L ∩ L'| / (|L| + |L'|)``, both empty counting as 1 (as
    :func:`coreselect.evaluation.measures.example_f1`, for one label too)."""
    T, P = np.asarray(T) != 0, np.asarray(P) != 0
    both = (T & P).sum(axis=1)
    size = T.sum(axis=1) + P.sum(axis=1)
    per = np.where(size == 0, 1.0, 2.0 * both / np.maximum(size, 1))
    return float(per.mean()) if per.size else 0.0


def _compiled_step():
    """The compiled prefix step, or None where the numpy kernels run (``CORESELECT_NUMBA=0``,
    or numba missing)."""
    from coreselect.core._backend import numba_enabled

    if not numba_enabled("auto"):
        return None
    from coreselect.selection._knn_kernels import prefix_step

    return prefix_step


def warm_up() -> None:
    """Load the compiled prefix step (numba's on-disk cache) on a problem of a few rows, with
    the argument types of a real run, so that the first ``k="auto"`` selection does not wait
    for it; nothing where the numpy kernels run."""
    if _compiled_step() is None:
        return
    rows = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    labels = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.int8)
    for _ in brknn_b_prefixes(rows, labels, rows, np.array([1, 2]), n_neighbors=1):
        pass


def brknn_b_prefixes(Xtr: np.ndarray, Ytr: np.ndarray, Xva: np.ndarray, grid: np.ndarray,
                     n_neighbors: int = 5, backend: str = "auto"):
    """BRkNN-b's predictions (:class:`coreselect.evaluation.brknn.BRkNNb`: min-max scaled on
    the training rows, every tie at the k-th distance a neighbour, Mulan's correction, the
    top ``round(mean label count)`` labels) on the first ``g`` columns for each ``g`` of
    ``grid``, in one pass: the squared distances of a prefix are those of the previous prefix
    plus its new columns'. Labels tied at the cut-off are taken in label order (BRkNNb draws
    them at random). ``backend="numpy"`` runs the numpy form, the reference of the compiled
    step (:mod:`coreselect.selection._knn_kernels`) that runs otherwise, with the same
    predictions."""
    lo = Xtr.min(axis=0) if Xtr.shape[0] else np.zeros(Xtr.shape[1])
    rng = (Xtr.max(axis=0) - lo) if Xtr.shape[0] else np.zeros(Xtr.shape[1])
    scale = np.divide(1.0, rng, out=np.zeros_like(rng), where=rng > 0)
    A, B = (Xtr - lo) * scale, (Xva - lo) * scale
    n_train, n_labels = Ytr.shape
    k = min(n_neighbors, n_train)
    # The kernel adds in float64 (numpy's float32 sums would differ), and its buffer of the k
    # smallest needs a slot (compiled code has no bounds checks).
    kernel = (_compiled_step() if backend != "numpy" and k >= 1
              and A.dtype == B.dtype == np.float64 else None)
    d2 = np.zeros((B.shape[0], n_train))
    if kernel is None:
        Yf = Ytr.astype(np.float64)
        mask = np.empty(d2.shape, dtype=bool)
        kth = np.empty((B.shape[0], 1))
    else:
        labels = sp.csr_matrix(Ytr)
        y_indptr, y_cols = labels.indptr.astype(np.int64), labels.indices.astype(np.int64)
    done = 0
    for g in grid:
        # |b - a|^2 = |b|^2 + |a|^2 - 2 b.a over the new columns (one matrix product, as
        # scikit-learn's euclidean_distances that BRkNNb uses), clipped at 0; in place
        a, b = A[:, done:int(g)], B[:, done:int(g)]
        prod = b @ a.T
        if kernel is not None:
            done = int(g)
            pred = np.empty((B.shape[0], n_labels), dtype=np.int8)
            kernel(prod, (b * b).sum(axis=1), (a * a).sum(axis=1), d2, k, y_indptr, y_cols,
                   n_labels, pred)
            yield pred
            continue
        prod *= -2.0
        prod += (b * b).sum(axis=1)[:, None]
        prod += (a * a).sum(axis=1)[None, :]
        d2 += prod
        del prod
        np.maximum(d2, 0.0, out=d2)
        done = int(g)
        kth[:, 0] = np.partition(d2, k - 1, axis=1)[:, k - 1]
        np.less_equal(d2, kth + 1e-12 * np.maximum(1.0, kth), out=mask)
        sizes = mask.sum(axis=1).astype(np.float64)
        if sizes.sum() * 20 < mask.size:
            # About k neighbours per row: their label counts from a sparse mask cost
            # neighbours x labels, not rows x training rows x labels (374 labels on Corel5k).
            r, c = np.nonzero(mask)
            counts = sp.csr_matrix((np.ones(r.size), (r, c)), shape=mask.shape) @ Yf
        else:  # many ties (a few binary columns): one dense product
            counts = mask.astype(np.float64) @ Yf
        conf = (counts + 1.0 / n_train) / (sizes + n_labels / n_train)[:, None]
        mean_size = counts.sum(axis=1) / (sizes + n_labels / n_train)
        n_pred = np.clip(np.floor(mean_size + 0.5).astype(np.int64), 0, n_labels)
        rank = np.argsort(np.argsort(-conf, axis=1, kind="stable"), axis=1, kind="stable")
        yield (rank < n_pred[:, None]).astype(np.int8)


def varying_columns(X) -> int:
    """How many columns of ``X`` are not constant."""
    if sp.issparse(X):
        high, low = X.max(axis=0).toarray().ravel(), X.min(axis=0).toarray().ravel()
    else:
        high, low = np.max(X, axis=0), np.min(X, axis=0)
    return int(np.count_nonzero(high != low))


def choose_k(X, Y, order: np.ndarray, *, folds: int = INNER_FOLDS,
             max_rows: int = INNER_ROWS, seed: int = INNER_SEED) -> AutoK:
    """Choose ``k`` among the prefixes of ``order`` (columns of ``X``, the greedy order up to
    the cap) by the module's rule. ``X`` and ``Y`` are the training data only."""
    start = time.perf_counter()
    order = np.asarray(order, dtype=np.int64)
    grid = k_grid(order.size)
    if grid.size == 0:
        raise InputError("k='auto' has no feature to choose from")
    curves, used = score_curves(X, Y, order, grid, MEASURES, folds=folds, max_rows=max_rows,
                                seed=seed)
    half = max(1, varying_columns(X) // 2)
    picks = {m: measure_pick(c, grid, "best", half) for m, c in curves.items()}
    k = max(p["k"] for p in picks.values())
    scores = curves[MEASURE]
    folds = scores.shape[0]
    best = int(grid[int(np.argmax(scores.mean(axis=0)))])
    cv = {"n_features": grid, "mean_test_score": scores.mean(axis=0),
          "std_test_score": scores.std(axis=0),
          **{f"split{i}_test_score": scores[i] for i in range(folds)}}
    for m, c in curves.items():
        cv[f"mean_test_{m}"] = c.mean(axis=0)
        cv[f"se_test_{m}"] = c.std(axis=0) / np.sqrt(folds)
        cv.update({f"split{i}_test_{m}": c[i] for i in range(folds)})
    return AutoK(k=k, cap=int(order.size), order=order, cv_results=cv, best_k=best,
                 seconds=time.perf_counter() - start, folds=folds, rows=used, half=half,
                 per_measure=picks)


def plot_k_curve(auto: AutoK | dict, path: str | Path, title: str | None = None) -> None:
    """Draw the curves of ``k`` as a PNG a person can read: per measure the mean of the inner
    folds with its band (± one standard error, what the rule uses), the threshold a rise beyond
    half the features had to clear (dashed, where the half cap is in play), half the features
    (dotted) and the chosen ``k``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = auto.to_dict() if isinstance(auto, AutoK) else auto
    x = np.asarray(d["curve"]["n_features"])
    fig, ax = plt.subplots(figsize=(7.5, 5.6), dpi=120)
    measures = d.get("measures") or {d["measure"]: {
        "mean": d["curve"]["mean"],
        "se": list(np.asarray(d["curve"]["std"]) / np.sqrt(max(d["folds"], 1))),
        "k": d["k"], "threshold": float("nan")}}
    names = {"example_f1": "example F1", "macro_f1": "macro F1"}
    for i, (m, info) in enumerate(measures.items()):
        mean, se = np.asarray(info["mean"]), np.asarray(info["se"])
        color = f"C{i}"
        ax.plot(x, mean, "o-", color=color, ms=3,
                label=f"{names.get(m, m)}: mean of {d['folds']} inner folds (its k: {info['k']})")
        ax.fill_between(x, mean - se, mean + se, color=color, alpha=0.2,
                        label="± one standard error (the rule's band)" if i == 0 else None)
        if np.isfinite(info.get("threshold", float("nan"))):
            ax.axhline(info["threshold"], color=color, ls="--", lw=1,
                       label=f"{names.get(m, m)}: a rise beyond half must clear this")
    if d.get("half") and d["half"] < x.max():
        ax.axvline(d["half"], color="0.5", ls=":", label=f"half the varying features ({d['half']})")
    ax.axvline(d["k"], color="C3", ls="-", lw=1.5, label=f"chosen k = {d['k']}")
    ax.set_xscale("log")
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500) if t <= max(x.max(), 1)]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("number of features (prefix of the greedy order)")
    ax.set_ylabel("score (BRkNN-b, inner cross-validation)")
    ax.set_title(title or f"Automatic k: cap {d['cap']}, {d['rows']} training rows", fontsize=10)
    ax.grid(alpha=0.3)
    # below the axes: inside, it would hide the curves' right end, where the rule decides
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


__all__ = ["AUTO_CAP", "INNER_FOLDS", "INNER_ROWS", "MEASURES", "RULE", "AutoK", "band_rule",
           "cap_for", "choose_k", "k_grid", "label_scores", "measure_pick", "one_standard_error",
           "plot_k_curve", "score_curves", "score_prefixes", "varying_columns"]
