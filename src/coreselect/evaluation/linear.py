"""Binary-relevance logistic regression: the second evaluator of ``coreselect evaluate``.

One L2-regularized logistic regression per label (scikit-learn's ``liblinear`` solver, fixed
``C``) on the selected features, each feature scaled by its training maximum absolute value
(``MaxAbsScaler``: keeps sparse data sparse, puts dense features on one scale). A label is
predicted where its probability exceeds 0.5. A label that is constant on the training fold
is predicted constant. This is what users commonly run on wide text data, where BRkNN-b
(distance-based) is weak.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MaxAbsScaler
from sklearn.utils.validation import check_is_fitted

__all__ = ["BRLogistic"]


class BRLogistic(ClassifierMixin, BaseEstimator):
    """Binary relevance with ``LogisticRegression(solver="liblinear", C=C)`` per label.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularization strength (the same for every label; not tuned).

    Attributes
    ----------
    scaler_ : MaxAbsScaler
    models_ : list
        Per label, a fitted ``LogisticRegression`` or a constant 0/1 (label constant in training).
    """

    def __init__(self, C: float = 1.0):
        self.C = C

    def fit(self, X, Y) -> "BRLogistic":
        Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
        self.scaler_ = MaxAbsScaler().fit(X)
        Xs = self.scaler_.transform(X)
        self.models_ = []
        for j in range(Y.shape[1]):
            y = Y[:, j].astype(int)
            if y.min() == y.max():
                self.models_.append(int(y[0]))
            else:
                self.models_.append(LogisticRegression(solver="liblinear", C=self.C).fit(Xs, y))
        return self

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "models_")
        Xs = self.scaler_.transform(X)
        out = np.zeros((Xs.shape[0], len(self.models_)), dtype=np.int8)
        for j, m in enumerate(self.models_):
            out[:, j] = m if isinstance(m, int) else m.predict(Xs)
        return out
