"""Binary-relevance logistic regression: the second evaluator of ``coreselect evaluate``.

One L2-regularized logistic regression per label (scikit-learn's ``liblinear`` solver, fixed
``C``) on the selected features, each feature scaled by its training maximum absolute value
(``MaxAbsScaler``: keeps sparse data sparse, puts dense features on one scale). A label that is
constant on the training fold is predicted constant. This is what users commonly run on wide
text data, where BRkNN-b (distance-based) is weak.

Rare labels. With a fixed 0.5 cut, a model of a label that is on in 1 % of the rows almost
never predicts it: on sparse text with many rare labels the evaluator then predicts almost
nothing (example F1 of a few hundredths whatever the features), and its scores say nothing
about the selectors. What a practitioner does is tune the decision threshold of each label;
``threshold="cv"`` (the default) does it on the training fold only:

* out-of-fold probabilities of the training rows (``inner_folds``-fold split of the training
  fold, seeded; the models of an inner fold never see its rows);
* for every label, the cut in a fixed grid (0.05, 0.10, ..., 0.50) with the best F1 of that
  label on those probabilities (ties: the highest cut); 0.5 when no cut predicts a positive
  right;
* the models are then refitted on the whole training fold and cut there.

Why a threshold and not class weighting (``class_weight="balanced"``, also available): the
weights move every label to a 50/50 prior, which over-predicts the rare ones (many false
positives) and changes the models, while the cut keeps the models and picks, per label, the
trade-off the F1 measures reward. Measured side by side on four shared sets (same selections,
docs/results/linear_evaluator.md, ``python benchmarks/rivals.py linear``), the per-label cut
had the best macro F1 in nearly every cell and beat the weights on example F1 in most; against
the old 0.5 cut it lifts macro F1 everywhere and example F1 where the old cut predicted almost
nothing, and costs a little example F1 on yeast (it predicts more labels per row than there
are). The threshold costs ``inner_folds`` extra fits per label. Nothing of the test fold is
used: it is only ever passed to :meth:`predict`.

Empty label sets. A cut chosen per label for that label's F1 lowers the cut of a rare label,
and each label's extra positives land on rows whose label set is empty as often as anywhere:
on data where many rows have no label (most rows of a bird-song set, rare labels kept from a
larger set) nearly every empty row then gets some label, and example F1, which scores an empty
row 1 only when nothing is predicted, falls far below the 0.5 cut's and below BRkNN-b's (which
predicts as many labels as the neighbours have); which rare label's cut drops varies by fold,
hence unstable folds. With ``empty="model"`` (the default) the evaluator also models the empty
set as its own binary target where the training fold has empty rows: a logistic regression of
"no label", its cut chosen on the same out-of-fold probabilities for the example F1 of the
combined prediction (never, when no cut helps), and a row over that cut is predicted empty.
That decision serves the example-based measures (:meth:`~BRLogistic.predict`); the label-based
ones (macro and micro F1) score each label at its own cut, for which it was chosen
(:meth:`~BRLogistic.predict_per_label`, what ``coreselect evaluate`` scores them on). Training
folds without an empty row are predicted exactly as before.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MaxAbsScaler
from sklearn.utils.validation import check_is_fitted

__all__ = ["BRLogistic", "EMPTY_GRID", "THRESHOLD_GRID", "best_empty_cut"]

#: the cuts ``threshold="cv"`` chooses among (never above 0.5: the cut only lowers it)
THRESHOLD_GRID = np.round(np.arange(0.05, 0.501, 0.05), 2)
#: the cuts of the empty-set model (``empty="model"``); infinity: never predict the empty set
EMPTY_GRID = np.append(np.round(np.arange(0.3, 0.951, 0.05), 2), np.inf)


def _example_f1_rows(Y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row, ``2 |L ∩ L'| / (|L| + |L'|)``; both empty score 1 (Mulan's convention)."""
    both = (Y & P).sum(axis=1)
    size = Y.sum(axis=1) + P.sum(axis=1)
    return np.where(size == 0, 1.0, 2.0 * both / np.maximum(size, 1))


def best_empty_cut(Y: np.ndarray, P: np.ndarray, p_empty: np.ndarray,
                   grid: np.ndarray = EMPTY_GRID) -> float:
    """The cut of the empty-set probability ``p_empty`` (rows at or over it predicted empty)
    with the best mean example F1 of the label predictions ``P`` against ``Y`` (ties: the
    highest cut, so infinity, never, when no cut helps)."""
    Y, P = np.asarray(Y).astype(bool), np.asarray(P).astype(bool)
    best, cut = -1.0, np.inf
    for t in grid:
        f1 = float(_example_f1_rows(Y, P & ~(p_empty >= t)[:, None]).mean())
        if f1 >= best - 1e-12:
            best, cut = f1, float(t)
    return cut


def _fit_models(Xs, Y: np.ndarray, C: float, class_weight) -> list:
    models: list = []
    for j in range(Y.shape[1]):
        y = Y[:, j].astype(int)
        if y.size == 0 or y.min() == y.max():
            models.append(int(y[0]) if y.size else 0)
        else:
            models.append(LogisticRegression(solver="liblinear", C=C, class_weight=class_weight).fit(Xs, y))
    return models


def _proba(models: list, Xs) -> np.ndarray:
    out = np.zeros((Xs.shape[0], len(models)))
    for j, m in enumerate(models):
        out[:, j] = float(m) if isinstance(m, int) else m.predict_proba(Xs)[:, 1]
    return out


def best_thresholds(Y: np.ndarray, P: np.ndarray, grid: np.ndarray = THRESHOLD_GRID) -> np.ndarray:
    """Per label, the cut in ``grid`` with the best F1 of ``P >= cut`` against ``Y`` (ties: the
    highest cut); 0.5 where no cut gets a true positive."""
    out = np.full(Y.shape[1], 0.5)
    y = Y.astype(bool)
    for j in range(Y.shape[1]):
        best = 0.0
        for t in grid:
            pred = P[:, j] >= t
            tp = float(np.sum(pred & y[:, j]))
            if tp == 0:
                continue
            f1 = 2 * tp / (pred.sum() + y[:, j].sum())
            if f1 >= best - 1e-12:
                best, out[j] = f1, t
    return out


class BRLogistic(ClassifierMixin, BaseEstimator):
    """Binary relevance with ``LogisticRegression(solver="liblinear", C=C)`` per label.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularization strength (the same for every label; not tuned).
    threshold : {"cv", "fixed"}, default="cv"
        ``"cv"``: a decision threshold per label chosen on out-of-fold probabilities of the
        training rows (see the module docstring); ``"fixed"``: 0.5 for every label (the
        earlier evaluator).
    class_weight : None or "balanced", default=None
        Passed to every ``LogisticRegression``.
    inner_folds : int, default=3
        Folds of the training rows for ``threshold="cv"``.
    empty : {"model", "none"} or None, default=None
        ``"model"``: also model the empty label set (module docstring) where the training fold
        has rows without a label; its cut is chosen on the out-of-fold probabilities, so it
        needs ``threshold="cv"`` (refused with ``"fixed"``). ``"none"``: never (the evaluator
        before). None: ``"model"`` with ``threshold="cv"``, ``"none"`` with ``"fixed"``.
    random_state : int, default=0
        Seeds the inner split.

    Attributes
    ----------
    scaler_ : MaxAbsScaler
    models_ : list
        Per label, a fitted ``LogisticRegression`` or a constant 0/1 (label constant in training).
    thresholds_ : ndarray of shape (n_labels,)
        The cut of every label.
    empty_model_ : LogisticRegression or None
        The model of "no label" (None: not used).
    empty_cut_ : float
        Rows whose probability of no label is at least this are predicted empty (infinity:
        never).
    """

    def __init__(self, C: float = 1.0, threshold: str = "cv", class_weight=None,
                 inner_folds: int = 3, random_state: int = 0, empty: str | None = None):
        self.C = C
        self.threshold = threshold
        self.class_weight = class_weight
        self.inner_folds = inner_folds
        self.random_state = random_state
        self.empty = empty

    def fit(self, X, Y) -> "BRLogistic":
        """One logistic model per label on ``X`` scaled by ``MaxAbsScaler``; with
        ``threshold="cv"``, each label's cut chosen on out-of-fold probabilities."""
        from coreselect.errors import InputError

        if self.threshold not in ("cv", "fixed"):
            raise InputError(f"threshold must be 'cv' or 'fixed', got {self.threshold!r}")
        if self.empty not in ("model", "none", None):
            raise InputError(f"empty must be 'model', 'none' or None, got {self.empty!r}")
        if self.empty == "model" and self.threshold != "cv":
            raise InputError("empty='model' chooses its cut on out-of-fold probabilities: it "
                             "needs threshold='cv'")
        empty = self.empty or ("model" if self.threshold == "cv" else "none")
        Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
        self.scaler_ = MaxAbsScaler().fit(X)
        Xs = self.scaler_.transform(X)
        self.models_ = _fit_models(Xs, Y, self.C, self.class_weight)
        self.thresholds_ = np.full(Y.shape[1], 0.5)
        self.empty_model_, self.empty_cut_ = None, np.inf
        n = Y.shape[0]
        if self.threshold == "cv" and n >= 2 * max(int(self.inner_folds), 2):
            from sklearn.model_selection import KFold

            # "no label" as one more target (a column of Y itself when the fold has empty rows)
            none = (Y.sum(axis=1) == 0).astype(int)
            model_empty = empty == "model" and 0 < none.sum() < n
            T = np.column_stack([Y, none]) if model_empty else Y
            oof = np.zeros(T.shape, dtype=np.float64)
            Xc = Xs.tocsr() if sp.issparse(Xs) else Xs
            for tr, te in KFold(int(self.inner_folds), shuffle=True,
                                random_state=self.random_state).split(np.zeros((n, 1))):
                oof[te] = _proba(_fit_models(Xc[tr], T[tr], self.C, self.class_weight), Xc[te])
            self.thresholds_ = best_thresholds(Y, oof[:, :Y.shape[1]])
            if model_empty:
                P = oof[:, :Y.shape[1]] >= self.thresholds_[None, :]
                self.empty_cut_ = best_empty_cut(Y, P, oof[:, -1])
                if np.isfinite(self.empty_cut_):
                    self.empty_model_ = _fit_models(Xs, none[:, None], self.C, self.class_weight)[0]
        return self

    def predict_proba(self, X) -> np.ndarray:
        """``(n, n_labels)``: every label's probability (a constant label: its 0/1)."""
        check_is_fitted(self, "models_")
        return _proba(self.models_, self.scaler_.transform(X))

    def predict_per_label(self, X) -> np.ndarray:
        """Every label at its own cut, without the empty-set model: what the label-based
        measures (macro and micro F1) score, as each cut was chosen for its label's F1."""
        return (self.predict_proba(X) >= self.thresholds_[None, :]).astype(np.int8)

    def predict(self, X) -> np.ndarray:
        """The label set of every row: each label at its cut, and nothing on a row the
        empty-set model puts at or over its cut (what the example-based measures score)."""
        P = self.predict_proba(X) >= self.thresholds_[None, :]
        if self.empty_model_ is not None:
            p_empty = _proba([self.empty_model_], self.scaler_.transform(X))[:, 0]
            P &= ~(p_empty >= self.empty_cut_)[:, None]
        return P.astype(np.int8)
