"""Problem transformations and the common base of the ranking baselines.

* Binary relevance (BR): one single-label problem per label; a feature's score is the sum
  of its scores over the labels.
* Label powerset (LP): one single-label problem whose classes are the distinct label sets.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from coreselect.errors import InputError

__all__ = ["labelset_ids", "binary_relevance_targets", "RankingSelector"]


def _dense_labels(Y) -> np.ndarray:
    Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2:
        raise InputError("Y must be a 2-D label matrix")
    return (Y != 0).astype(np.int8)


def binary_relevance_targets(Y) -> np.ndarray:
    """The BR class columns: ``(n, L)`` 0/1 int8, one single-label problem per label."""
    return _dense_labels(Y)


def labelset_ids(Y) -> np.ndarray:
    """The LP class vector: an int id per row, equal ids for equal label sets."""
    Yd = _dense_labels(Y)
    _, ids = np.unique(Yd, axis=0, return_inverse=True)
    return ids.ravel().astype(np.int64)


class RankingSelector(SelectorMixin, BaseEstimator):
    """Base of the score-and-rank baselines.

    Subclasses implement ``_scores(X, Y) -> ndarray (n_features,)``. After ``fit``:

    Attributes
    ----------
    scores_ : ndarray of shape (n_features,)
        Higher is better.
    ranking_ : ndarray of shape (n_features,)
        All features, best first (ties: lower index first). The top ``k`` of it is the
        selection for every ``k``, which lets an evaluation reuse one fit across ``k``.
    selected_ : ndarray of shape (k,)
        ``ranking_[:k]``, in ranking order.
    """

    #: the selection for k is the prefix of the selection for any larger k
    is_ranker = True

    def __init__(self, k: int = 10):
        self.k = k

    def _scores(self, X, Y) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, X, Y) -> "RankingSelector":
        """Score every feature on (X, Y) and rank them."""
        if X.shape[0] != Y.shape[0]:
            raise InputError("X and Y have different numbers of rows")
        if not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise InputError(f"k must be a positive integer, got {self.k!r}")
        if self.k > X.shape[1]:
            raise InputError(f"k={self.k} exceeds the number of features ({X.shape[1]})")
        scores = np.asarray(self._scores(X, Y), dtype=np.float64)
        self.scores_ = scores
        # a second key (set by ``_scores``, e.g. the embedded selectors) orders equal scores
        second = getattr(self, "_tiebreak", None)
        self.ranking_ = (np.argsort(-scores, kind="stable") if second is None
                         else np.lexsort((-np.asarray(second, dtype=np.float64), -scores)))
        self.selected_ = self.ranking_[: self.k]
        self.n_features_in_ = X.shape[1]
        return self

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "selected_")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask
