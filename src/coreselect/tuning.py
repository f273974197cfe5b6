"""Let the training data choose the objective's form among a few stated candidates:
the default wins on sparse text and may lose elsewhere.

The candidates (:data:`CANDIDATES`) are fixed in advance, not fitted to any dataset: the
library default, the previous default calibration, more relevance, more diversity, and
normalized MI. The rule, on the training rows only (inside ``evaluate``, the training fold):

1. each candidate's greedy order is computed on the training rows up to the cap (the ``k``
   asked for, or :func:`coreselect.selection.autok.cap_for` for ``k="auto"``);
2. the prefixes of each order (:func:`coreselect.selection.autok.k_grid`) are scored by the internal
   cross-validation of :mod:`coreselect.selection.autok` (the same inner folds, rows and cheap
   evaluator, BRkNN-b, example F1 on the held-out inner fold); a candidate's per-fold score is
   the mean over the grid (the area under its prefix curve, so the choice serves every ``k``
   up to the cap, and the selection stays a ranking);
3. the default is kept unless another candidate beats it by more than one standard error of
   their paired per-fold difference; among those that do, the largest mean difference wins.

Its cost is one selection at the cap per candidate plus the inner scoring of each order. As in
:mod:`coreselect.selection.autok`, the orders see every training row, including the inner validation
rows: a shared optimism, the same for every candidate up to how much each one overfits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from coreselect.errors import InputError

#: name -> (calibration, lam, relevance); the first is the library default and is kept on ties
CANDIDATES: dict[str, dict] = {
    # "auto": cmim on dense numeric data; the others weigh (a given lam or relevance would
    # make "auto" weigh too, so they name their calibration)
    "default": dict(calibration="auto", lam=0.5, relevance="mi"),
    "range": dict(calibration="range", lam=0.5, relevance="mi"),
    "lam0.25": dict(calibration="information", lam=0.25, relevance="mi"),
    "lam0.75": dict(calibration="information", lam=0.75, relevance="mi"),
    "nmi": dict(calibration="information", lam=0.5, relevance="nmi"),
}


@dataclass
class Tuned:
    """The choice: the chosen candidate's name and parameters, its order up to the cap, and per
    candidate the per-fold areas (``areas``, folds x candidates), their means and the paired
    difference to the default (mean and standard error)."""

    choice: str
    params: dict
    order: np.ndarray
    cap: int
    names: list[str]
    areas: np.ndarray
    orders: dict = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """A JSON-able summary: the choice, its parameters, the rule and each candidate's paired
        difference to the default."""
        mean, se = paired_to_default(self.areas)
        return {"choice": self.choice, "params": dict(self.params), "cap": int(self.cap),
                "rule": "the default unless beaten by more than one standard error",
                "candidates": {n: {"area": round(float(self.areas[:, i].mean()), 6),
                                   "diff": round(float(mean[i]), 6),
                                   "se": round(float(se[i]), 6)}
                               for i, n in enumerate(self.names)},
                "seconds": round(float(self.seconds), 4)}


def paired_to_default(areas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``areas`` (folds x candidates; column 0 the default): the mean of its
    per-fold difference to column 0, and that difference's standard error (fold std /
    sqrt(folds))."""
    diff = areas - areas[:, :1]
    return diff.mean(axis=0), diff.std(axis=0) / np.sqrt(diff.shape[0])


def pick(areas: np.ndarray) -> int:
    """Column of ``areas`` (folds x candidates; column 0 the default) chosen by the module's
    rule: 0 unless some column's mean paired difference to column 0 exceeds its standard error
    (fold std / sqrt(folds)); then the largest such difference (the first on ties)."""
    areas = np.asarray(areas, dtype=np.float64)
    if areas.ndim != 2 or areas.shape[1] == 0:
        raise InputError("pick needs a folds x candidates array with at least one candidate")
    mean, se = paired_to_default(areas)
    beats = (mean > se + 1e-12) & (mean > 1e-12)
    if not beats.any():
        return 0
    return int(np.argmax(np.where(beats, mean, -np.inf)))


def tune(X, Y, cap: int, *, candidates: dict[str, dict] | None = None) -> Tuned:
    """Choose among ``candidates`` (default :data:`CANDIDATES`) on ``X, Y`` (the training rows
    only) by the module's rule, with orders up to ``cap`` columns."""
    from coreselect.selection.autok import k_grid, score_prefixes
    from coreselect.selection import select

    candidates = dict(CANDIDATES if candidates is None else candidates)
    if not candidates:
        raise InputError("tuning needs at least one candidate")
    X, Y = _inputs(X, Y)
    if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or int(cap) < 1:
        raise InputError(f"cap must be a positive integer, got {cap!r}")
    start = time.perf_counter()
    names = list(candidates)
    orders = {name: np.asarray(select(X, Y, k=int(cap), **candidates[name]).selected,
                               dtype=np.int64) for name in names}
    # the same prefix sizes for every candidate (an order may stop early on few columns)
    grid = k_grid(min(o.size for o in orders.values()))
    areas = np.column_stack([score_prefixes(X, Y, orders[name], grid)[0].mean(axis=1)
                             for name in names])
    chosen = names[pick(areas)]
    return Tuned(choice=chosen, params=dict(candidates[chosen]), order=orders[chosen],
                 cap=int(cap), names=names, areas=areas, orders=orders,
                 seconds=time.perf_counter() - start)


def _inputs(X, Y):
    """``X`` and ``Y`` as :class:`~coreselect.selector.GDSSelector` takes them (a dense or
    sparse numeric matrix; a 0/1 matrix, a class vector or label lists), with its typed
    errors: the labels as a 0/1 matrix, which the inner scoring needs."""
    import scipy.sparse as sp

    from coreselect.errors import InputTypeError
    from coreselect.selection.sources import as_label_matrix, check_sparse_structure

    if sp.issparse(X):
        check_sparse_structure(X)
        X = X.tocsr()
    else:
        try:
            X = np.asarray(X)
        except (ValueError, TypeError):
            raise InputTypeError("X must be a numeric matrix (dense or sparse)") from None
        if X.dtype.kind not in "biuf":
            raise InputTypeError(f"X must be a numeric matrix, got {X.dtype} values")
        if X.ndim != 2:
            raise InputError(f"X must be 2-D, got shape {X.shape}")
        if X.dtype.kind == "f" and not np.all(np.isfinite(X)):
            raise InputError("X contains NaN or infinite values; impute or drop them first")
    return X, as_label_matrix(Y, X.shape[0])
