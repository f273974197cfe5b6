"""BRkNN-b (Spyromitros, Tsoumakas & Vlahavas 2008) as Mulan 1.5 implements it.

Mulan's ``mulan.classifier.lazy.BRkNN`` with ``ExtensionType.EXTB``, reproduced step by step:

* **Distance**: Weka's ``EuclideanDistance`` over the feature columns, each feature min-max
  normalized with the *training* ranges, ``(x - min) / (max - min)``; a feature that is
  constant on the training data contributes nothing. Test values outside the training
  range are not clipped (Weka does not clip either).
* **Neighbours**: Weka's ``LinearNNSearch.kNearestNeighbours`` returns the ``k`` nearest
  training instances *plus every further instance tied with the k-th distance*. This matters
  on binary features (e.g. the Synthesized data), where ties are common.
* **Confidences**: with ``n`` training instances, ``L`` labels and ``K`` returned neighbours
  (ties included), the confidence of label ``j`` is ``(c_j + 1/n) / (K + L/n)`` where ``c_j``
  counts the neighbours that have label ``j`` (Mulan's small correction to the estimator;
  it keeps the order of the plain fraction ``c_j / K``).
* **Label count**: ``round(sum_j c_j / (K + L/n))`` with Java's ``Math.round`` (halves round
  up), i.e. the rounded mean label-set size of the neighbours.
* **Which labels**: the labels with the highest confidence. Labels tied at the cut-off
  confidence are chosen at random among the tied ones (Mulan: ``java.util.Random(1)``;
  here a NumPy generator seeded with ``random_state``), so the prediction is deterministic
  for a given ``random_state``.

The search is brute force over blocks of query rows (every training distance of a block is
computed, then the ``k``-th smallest is found: with the compiled kernels in one pass per row
that also counts the neighbours' labels, else with numpy's partial sort), rather than
``sklearn.neighbors``: Weka's inclusion of every tie needs all distances, and on 0/1 data
ties are the rule. Squared distances are used, which are exact on 0/1 data.

Set ``mulan_correction=False`` for the plain fractions ``c_j / K`` and
``include_ties=False`` for exactly ``n_neighbors`` neighbours (ties at the k-th distance
then broken by training-row order).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils.validation import check_is_fitted

from coreselect.errors import InputError

__all__ = ["BRkNNb"]

# bytes of the distance block of one batch of query rows
_BLOCK_BYTES = 64 * 2**20


def _minmax_scale(X, mins: np.ndarray, scale: np.ndarray):
    """``(X - mins) * scale`` for dense or sparse X (sparse: the shift is applied densely)."""
    if sp.issparse(X):
        # Euclidean distance is shift-invariant: scaling alone keeps sparsity and distances.
        return sp.csr_matrix(X, dtype=np.float64) @ sp.diags(scale)
    return (np.asarray(X, dtype=np.float64) - mins) * scale


def _compiled_counts(backend: str):
    """The compiled neighbour counts, or None where the numpy form runs (``backend="numpy"``,
    ``CORESELECT_NUMBA=0``, or numba missing)."""
    from coreselect.core._backend import numba_enabled

    if backend == "numpy" or not numba_enabled("auto"):
        return None
    from coreselect.selection._knn_kernels import neighbour_label_counts

    return neighbour_label_counts


class BRkNNb(ClassifierMixin, BaseEstimator):
    """Binary-relevance k-nearest-neighbour classifier, extension b (Mulan-faithful): Spyromitros,
    Tsoumakas & Vlahavas, "An empirical study of lazy multilabel classification algorithms",
    SETN (2008), the evaluator of Ghadiri & Schmidt (AISTATS 2019).

    Parameters
    ----------
    n_neighbors : int, default=5
        ``k`` of the neighbour search (the paper uses 5).
    include_ties : bool, default=True
        Also use every training instance tied with the k-th nearest distance (Weka).
    mulan_correction : bool, default=True
        Use Mulan's ``1/n`` correction of the confidences and of the label-count mean.
    random_state : int or None, default=1
        Seed for breaking ties among labels with equal confidence at the cut-off.

    Attributes
    ----------
    mins_, ranges_ : ndarray of shape (n_features,)
        Training minima and ranges used for normalization.
    Y_ : ndarray of shape (n_train, n_labels)
        Training label matrix (bool).
    """

    def __init__(
        self,
        n_neighbors: int = 5,
        include_ties: bool = True,
        mulan_correction: bool = True,
        random_state: int | None = 1,
    ):
        self.n_neighbors = n_neighbors
        self.include_ties = include_ties
        self.mulan_correction = mulan_correction
        self.random_state = random_state

    def fit(self, X, Y) -> "BRkNNb":
        """Store the min-max normalized training data and its labels."""
        if X.shape[0] != Y.shape[0]:
            raise InputError("X and Y have different numbers of rows")
        if X.shape[0] < 1:
            raise InputError("BRkNN-b needs at least one training instance")
        k = self.n_neighbors
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"n_neighbors must be an integer of at least 1, got {k!r}")
        if sp.issparse(X):
            Xc = sp.csc_matrix(X, dtype=np.float64)
            mins = np.asarray(Xc.min(axis=0).toarray()).ravel()
            maxs = np.asarray(Xc.max(axis=0).toarray()).ravel()
        else:
            Xd = np.asarray(X, dtype=np.float64)
            if Xd.ndim != 2:
                raise InputError("X must be 2-D")
            mins, maxs = (Xd.min(axis=0), Xd.max(axis=0)) if Xd.shape[1] else (np.zeros(0), np.zeros(0))
        ranges = maxs - mins
        # Weka: a constant attribute normalizes to 0 for every instance.
        scale = np.divide(1.0, ranges, out=np.zeros_like(ranges), where=ranges > 0)
        self.mins_, self.ranges_, self._scale = mins, ranges, scale
        Yd = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
        self.Y_ = Yd != 0
        # the training labels as CSR rows, for the compiled neighbour counts
        labels = sp.csr_matrix(self.Y_)
        self._label_rows = (labels.indptr.astype(np.int64), labels.indices.astype(np.int64))
        self.n_features_in_ = X.shape[1]
        self._Xtrain = _minmax_scale(X, mins, scale)
        return self

    def _neighbour_counts(self, Xq, backend: str = "auto") -> tuple[np.ndarray, np.ndarray]:
        """Per query row: label counts over its neighbours and the number of neighbours.

        Distances are computed for a block of query rows against all training rows at a
        time (never a full test x train matrix), so every tie at the k-th distance is seen.
        With ties included and the compiled kernels in use, the counts come from
        :func:`coreselect.selection._knn_kernels.neighbour_label_counts` (the same numbers;
        ``backend="numpy"`` runs the numpy form, its reference).
        """
        n_train, n_labels = self.Y_.shape
        k = min(self.n_neighbors, n_train)
        # k >= 1 also after a set_params past fit's check: the kernel has no bounds checks
        kernel = _compiled_counts(backend) if self.include_ties and k >= 1 else None
        Yf = self.Y_.astype(np.float64) if kernel is None else None
        counts = np.empty((Xq.shape[0], n_labels)) if kernel is None else np.zeros(
            (Xq.shape[0], n_labels))
        sizes = np.empty(Xq.shape[0])
        block = max(1, _BLOCK_BYTES // (8 * n_train * 3))
        for s in range(0, Xq.shape[0], block):
            # squared distances: exact on 0/1 data, so ties there are exact ties
            d2 = euclidean_distances(Xq[s : s + block], self._Xtrain, squared=True)
            if kernel is not None:
                kernel(np.ascontiguousarray(d2, dtype=np.float64), k, *self._label_rows,
                       counts[s : s + block], sizes[s : s + block])
                continue
            if self.include_ties:
                kth = np.partition(d2, k - 1, axis=1)[:, k - 1 : k]
                mask = d2 <= kth + 1e-12 * np.maximum(1.0, kth)
            else:
                # exactly k; equal distances broken by training-row order
                order = np.argsort(d2, axis=1, kind="stable")[:, :k]
                mask = np.zeros(d2.shape, dtype=bool)
                np.put_along_axis(mask, order, True, axis=1)
            counts[s : s + block] = mask @ Yf
            sizes[s : s + block] = mask.sum(axis=1)
        return counts, sizes

    def predict_proba(self, X) -> np.ndarray:
        """Label confidences, shape (n_samples, n_labels)."""
        conf, _ = self._confidences(X)
        return conf

    def _confidences(self, X) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "Y_")
        if X.shape[1] != self.n_features_in_:
            raise InputError(f"X has {X.shape[1]} features, the classifier was fit on {self.n_features_in_}")
        Xq = _minmax_scale(X, self.mins_, self._scale)
        n_train, n_labels = self.Y_.shape
        counts, sizes = self._neighbour_counts(Xq)
        if self.mulan_correction:
            conf = (counts + 1.0 / n_train) / (sizes + n_labels / n_train)[:, None]
            mean_size = counts.sum(axis=1) / (sizes + n_labels / n_train)
        else:
            conf = counts / sizes[:, None]
            mean_size = counts.sum(axis=1) / sizes
        # Java's Math.round: halves round up (numpy's round would round half to even).
        n_pred = np.floor(mean_size + 0.5).astype(int)
        return conf, np.clip(n_pred, 0, n_labels)

    def predict(self, X) -> np.ndarray:
        """Predicted label matrix (0/1 int8), shape (n_samples, n_labels)."""
        conf, n_pred = self._confidences(X)
        rng = np.random.default_rng(self.random_state)
        n, n_labels = conf.shape
        out = np.zeros((n, n_labels), dtype=np.int8)
        for row in range(n):
            m = n_pred[row]
            if m == 0:
                continue
            c = conf[row]
            cut = np.sort(c)[::-1][m - 1]
            above = np.flatnonzero(c > cut)
            tied = np.flatnonzero(c == cut)
            out[row, above] = 1
            need = m - len(above)
            if need > 0:
                out[row, rng.choice(tied, size=need, replace=False)] = 1
        return out
