"""``br-chi2``: scikit-learn's chi-squared statistic of every feature, summed over labels."""

from __future__ import annotations

import numpy as np

from coreselect.baselines.transform import RankingSelector, binary_relevance_targets

__all__ = ["BRChi2"]


class BRChi2(RankingSelector):
    """``br-chi2``: ``sum_l chi2(x, y_l)`` (:func:`sklearn.feature_selection.chi2`, one binary
    target per label). Features must be non-negative (counts, tf-idf, 0/1, frequencies).
    A label constant on the data, or a constant feature, contributes 0 (sklearn gives NaN).
    chi2 needs non-negative features: a column with negative values is shifted by its
    minimum first (as ``MinMaxScaler`` before ``chi2`` would; chi2 is not shift-invariant,
    so this is a convention, not a neutral step).

    Parameters
    ----------
    k : int, default=10
        Number of features to select.
    """

    def _scores(self, X, Y) -> np.ndarray:
        import scipy.sparse as sp
        from sklearn.feature_selection import chi2

        Y = binary_relevance_targets(Y)
        mins = np.asarray(X.min(axis=0).toarray() if sp.issparse(X) else np.min(X, axis=0)).ravel()
        if np.any(mins < 0):
            X = (X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)) - np.minimum(mins, 0)
        total = np.zeros(X.shape[1])
        with np.errstate(divide="ignore", invalid="ignore"):
            for j in range(Y.shape[1]):
                stat, _ = chi2(X, Y[:, j])
                total += np.nan_to_num(stat, nan=0.0, posinf=0.0)
        return total
