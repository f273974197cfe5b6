"""``br-chi2`` and ``max-chi2``: scikit-learn's chi-squared statistic of every feature per
label, summed over the labels or their maximum."""

from __future__ import annotations

import numpy as np

from coreselect.baselines.transform import RankingSelector, binary_relevance_targets

__all__ = ["BRChi2", "MaxChi2"]


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

    References
    ----------
    The χ² statistic for feature selection: Yang & Pedersen, "A comparative study on feature
    selection in text categorization", ICML (1997); summed over the binary-relevance problems
    as in Spolaôr, Cherman, Monard & Lee (2013) and the baselines of Ghadiri & Schmidt
    (AISTATS 2019).
    """

    def _scores(self, X, Y) -> np.ndarray:
        return per_label_chi2(X, Y).sum(axis=1)


def per_label_chi2(X, Y) -> np.ndarray:
    """``(d, L)``: ``chi2(x, y_l)`` of every feature and label (0 where sklearn gives NaN:
    a constant label or feature); a column with negative values shifted by its minimum."""
    import scipy.sparse as sp
    from sklearn.feature_selection import chi2

    Y = binary_relevance_targets(Y)
    if X.shape[0] == 0:
        return np.zeros((X.shape[1], Y.shape[1]))
    mins = np.asarray(X.min(axis=0).toarray() if sp.issparse(X) else np.min(X, axis=0)).ravel()
    if np.any(mins < 0):
        X = (X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)) - np.minimum(mins, 0)
    out = np.zeros((X.shape[1], Y.shape[1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(Y.shape[1]):
            stat, _ = chi2(X, Y[:, j])
            out[:, j] = np.nan_to_num(stat, nan=0.0, posinf=0.0)
    return out


class MaxChi2(RankingSelector):
    """``max-chi2``: ``max_l chi2(x, y_l)``, the strongest single-label association of each
    feature (the "chi2_max" of text categorization: Yang & Pedersen, ICML 1997), beside
    :class:`BRChi2`'s sum. A feature that matters for one rare label ranks high even when it
    says nothing about the frequent ones. Same conventions as :class:`BRChi2`.

    Parameters
    ----------
    k : int, default=10
        Number of features to select.
    """

    def _scores(self, X, Y) -> np.ndarray:
        table = per_label_chi2(X, Y)
        return table.max(axis=1) if table.shape[1] else np.zeros(X.shape[1])
