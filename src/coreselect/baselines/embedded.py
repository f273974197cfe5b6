"""Embedded selectors: a model is trained on the training fold and its weights rank the features.

* ``l1``: L1-regularised one-vs-rest (binary relevance) logistic regression; a feature's score
  is its largest absolute coefficient over the labels (scikit-learn's ``SelectFromModel`` with
  ``norm_order=inf`` on a multi-output model), the regularisation chosen on the training fold.
* ``trees``: the impurity importances of an extremely randomized multi-output tree ensemble
  (scikit-learn's ``ExtraTreeClassifier``, one tree at a time), under a stated size cap.

Neither sees anything but the rows it is fitted on.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from coreselect.baselines.transform import RankingSelector, binary_relevance_targets

__all__ = ["L1Logistic", "ExtraTreesImportance"]


def _micro_f1(Y: np.ndarray, P: np.ndarray) -> float:
    tp = float(np.sum((Y == 1) & (P == 1)))
    fp = float(np.sum((Y == 0) & (P == 1)))
    fn = float(np.sum((Y == 1) & (P == 0)))
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


class L1Logistic(RankingSelector):
    """``l1``: one L1-regularised logistic regression per label (``liblinear``), on features
    scaled by their maximum absolute value (``MaxAbsScaler``: sparse stays sparse, coefficients
    comparable across features); ``score(f) = max_l |w_{l,f}|``.

    How ``C`` is chosen, on the training rows only: the rows are split once at random
    (``validation_fraction`` held out, seeded); for every ``C`` in ``Cs`` the per-label models
    are fitted on the rest and scored by micro F1 on the held-out rows (0/1 predictions);
    the best ``C`` wins (ties: the smaller, sparser one) and the models are refitted at it on
    all the rows. Features whose coefficient is 0 for every label (L1 zeroes most) keep their
    order by the least regularised fit of the grid (largest ``C``, on the split), then by index,
    so that every ``k`` has a ranking. A label constant on the rows has no model.

    Parameters
    ----------
    k : int, default=10
    Cs : tuple of float, default=(0.1, 1.0, 10.0)
        Inverse regularisation strengths tried.
    validation_fraction : float, default=0.25
    random_state : int or None

    Attributes
    ----------
    C_ : float
        The chosen ``C``.

    References
    ----------
    Selection by an L1 penalty: Tibshirani, "Regression shrinkage and selection via the lasso",
    JRSS B 58 (1996); for logistic regression, Ng, "Feature selection, L1 vs. L2
    regularization, and rotational invariance", ICML (2004).
    """

    def __init__(self, k: int = 10, Cs: tuple = (0.1, 1.0, 10.0), validation_fraction: float = 0.25,
                 random_state=None):
        super().__init__(k=k)
        self.Cs = Cs
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    @staticmethod
    def _coefs(X, Y: np.ndarray, C: float) -> tuple[np.ndarray, list]:
        from sklearn.linear_model import LogisticRegression

        W = np.zeros((Y.shape[1], X.shape[1]))
        models: list = []
        for j in range(Y.shape[1]):
            y = Y[:, j]
            if y.min() == y.max():
                models.append(int(y[0]) if y.size else 0)
                continue
            m = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=C, random_state=0).fit(X, y)
            W[j] = m.coef_.ravel()
            models.append(m)
        return W, models

    @staticmethod
    def _predict(models: list, X) -> np.ndarray:
        out = np.zeros((X.shape[0], len(models)), dtype=np.int8)
        for j, m in enumerate(models):
            out[:, j] = m if isinstance(m, int) else m.predict(X)
        return out

    def _scores(self, X, Y) -> np.ndarray:
        from sklearn.preprocessing import MaxAbsScaler

        Y = binary_relevance_targets(Y)
        X = X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        n, d = X.shape
        if n == 0 or Y.shape[1] == 0:
            self.C_ = float(min(self.Cs))
            self._tiebreak = np.zeros(d)
            return np.zeros(d)
        Xs = MaxAbsScaler().fit_transform(X)
        Cs = sorted(float(c) for c in self.Cs)
        order = check_random_state(self.random_state).permutation(n)
        n_val = int(round(self.validation_fraction * n))
        val, fit = order[:n_val], order[n_val:]
        best, best_f1, loose = Cs[0], -1.0, np.zeros(d)
        if n_val and fit.size:
            for C in Cs:  # ascending: a tie keeps the smaller C
                W, models = self._coefs(Xs[fit], Y[fit], C)
                f1 = _micro_f1(Y[val], self._predict(models, Xs[val]))
                if f1 > best_f1 + 1e-12:
                    best, best_f1 = C, f1
                loose = np.abs(W).max(axis=0)
        self.C_ = best
        W, _ = self._coefs(Xs, Y, best)
        self._tiebreak = loose
        return np.abs(W).max(axis=0)


class ExtraTreesImportance(RankingSelector):
    """``trees``: impurity (Gini) importances of extremely randomized trees fitted on all the
    labels at once (scikit-learn's multi-output trees: one split serves every label), averaged
    over the trees as ``ExtraTreesClassifier.feature_importances_`` averages them.

    Size cap (so that the cost and memory stay bounded on wide, many-label data): at most
    ``max_rows`` rows (a seeded random subsample of the training rows), ``n_estimators`` trees
    of depth at most ``max_depth``, ``sqrt(d)`` candidate features per split, fitted one at a
    time and dropped once their importances are added (a multi-output tree stores
    ``nodes x labels`` class counts: 100 deep trees on 983 labels would take gigabytes).
    Features no tree splits on score 0 and follow by index.

    Parameters
    ----------
    k : int, default=10
    n_estimators : int, default=50
    max_depth : int, default=12
    max_rows : int, default=2000
    random_state : int or None
    """

    def __init__(self, k: int = 10, n_estimators: int = 50, max_depth: int = 12,
                 max_rows: int = 2000, random_state=None):
        super().__init__(k=k)
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.max_rows = max_rows
        self.random_state = random_state

    def _scores(self, X, Y) -> np.ndarray:
        from sklearn.tree import ExtraTreeClassifier

        Y = binary_relevance_targets(Y)
        X = X.tocsc() if sp.issparse(X) else np.asarray(X, dtype=np.float32)
        n, d = X.shape
        rng = check_random_state(self.random_state)
        if n > self.max_rows:
            rows = np.sort(rng.choice(n, size=self.max_rows, replace=False))
            X, Y = X[rows], Y[rows]
        total = np.zeros(d)
        used = 0
        if X.shape[0] < 2 or Y.shape[1] == 0:
            return total
        for _ in range(int(self.n_estimators)):
            tree = ExtraTreeClassifier(max_features="sqrt", max_depth=self.max_depth,
                                       random_state=rng.randint(np.iinfo(np.int32).max))
            tree.fit(X, Y)
            if tree.tree_.node_count > 1:  # as the forest: a single-leaf tree adds nothing
                total += tree.feature_importances_
                used += 1
        return total / used if used else total
