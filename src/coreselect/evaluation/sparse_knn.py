"""A k-nearest-neighbour label scorer that scales to 10⁵ labels, sparse throughout.

Scores of a query = the cosine-similarity-weighted vote of its ``n_neighbors`` most similar
training rows: ``s(q) = Σ_j w_j y_j / Σ_j w_j`` with ``w_j = max(cos(q, x_j), 0)`` over the
neighbours j (a weighted fraction in [0, 1]). Label rows stay CSR, the scores are CSR (at most
``n_neighbors`` label rows summed per query), and queries go in blocks whose dense similarity
block has at most ``block_cells`` entries, so memory is O(block_cells + n·n_neighbors·labels per
row + training nnz), never samples × labels or queries × training rows.

Why not ``sklearn.neighbors.NearestNeighbors(metric="cosine", algorithm="brute")``: it also
works in chunks, but its order among equally distant neighbours is unspecified; here ties go
to the smaller training index (through :func:`coreselect.evaluation.ranking.top_k`; the
similarities are rounded to 12 decimals first so that equal ones in exact arithmetic tie), so
the scores are reproducible and testable against a loop.

A query with no training row of positive similarity (e.g. no selected feature present) gets
the training frequencies of the ``n_prior`` most frequent labels, scaled to [0, 1].
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin

from coreselect.errors import InputError
from coreselect.evaluation.ranking import top_k

__all__ = ["SparseKNN"]


def _normalized(X) -> sp.csr_matrix:
    X = sp.csr_matrix(X, dtype=np.float64) if not sp.issparse(X) else X.tocsr().astype(np.float64)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(inv) @ X)


class SparseKNN(ClassifierMixin, BaseEstimator):
    """Cosine k-nearest-neighbour multi-label scorer on sparse data.

    Parameters
    ----------
    n_neighbors : int, default=10
    threshold : float, default=0.5
        ``predict`` keeps the labels whose score (weighted vote fraction) is at least this.
    top : int or None, default=None
        If given, ``predict`` keeps instead the ``top`` best labels of every row.
    block_cells : int, default=2**22
        Most entries of one dense block of query × training similarities.
    n_prior : int, default=10
        Labels given to a query that has no similar training row (see the module docstring).
    """

    def __init__(self, n_neighbors: int = 10, threshold: float = 0.5, top: int | None = None,
                 block_cells: int = 1 << 22, n_prior: int = 10):
        self.n_neighbors = n_neighbors
        self.threshold = threshold
        self.top = top
        self.block_cells = block_cells
        self.n_prior = n_prior

    def fit(self, X, Y) -> "SparseKNN":
        """Keep the rows of ``X`` (normalized) and their labels ``Y`` as the neighbours to search."""
        if self.n_neighbors < 1:
            raise InputError(f"n_neighbors must be at least 1, got {self.n_neighbors}")
        Xn = _normalized(X)
        Yc = sp.csr_matrix(Y) if not sp.issparse(Y) else Y.tocsr()
        Yc = sp.csr_matrix(((Yc.data != 0).astype(np.float64), Yc.indices, Yc.indptr), shape=Yc.shape)
        Yc.eliminate_zeros()
        if Xn.shape[0] != Yc.shape[0]:
            raise InputError("X and Y have different numbers of rows")
        if Xn.shape[0] == 0:
            raise InputError("no training rows")
        self.X_ = Xn
        self.Xt_ = sp.csr_matrix(Xn.T)  # features x rows: the product's right side
        self.Y_ = Yc
        self.n_features_in_ = Xn.shape[1]
        self.n_labels_ = Yc.shape[1]
        freq = np.bincount(Yc.indices, minlength=Yc.shape[1]).astype(np.float64)
        order = np.lexsort((np.arange(freq.size), -freq))[: self.n_prior]
        order = order[freq[order] > 0]
        self.prior_ = (order, freq[order] / Xn.shape[0])
        return self

    def kneighbors(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(indices, similarities), each (n, m) with m = min(n_neighbors, training rows); best
        first, ties by smaller training index."""
        Q = _normalized(X)
        if Q.shape[1] != self.n_features_in_:
            raise InputError(f"X has {Q.shape[1]} features, the fit had {self.n_features_in_}")
        n_train = self.X_.shape[0]
        m = min(self.n_neighbors, n_train)
        block = max(1, int(self.block_cells) // n_train)
        idx = np.empty((Q.shape[0], m), np.int64)
        sim = np.empty((Q.shape[0], m))
        for s in range(0, Q.shape[0], block):
            S = (Q[s:s + block] @ self.Xt_).toarray()  # block x n_train, bounded
            # 12 decimals: similarities equal in exact arithmetic (x and 2x) tie exactly, so
            # the tie rule, not rounding noise, orders them
            np.round(S, 12, out=S)
            nb = top_k(S, m)
            idx[s:s + block] = nb
            sim[s:s + block] = np.take_along_axis(S, nb, axis=1)
        return idx, sim

    def predict_scores(self, X) -> sp.csr_matrix:
        """CSR (n, labels) of weighted vote fractions."""
        idx, sim = self.kneighbors(X)
        n, m = idx.shape
        w = np.maximum(sim, 0.0)
        tot = w.sum(axis=1)
        w = np.divide(w, tot[:, None], out=np.zeros_like(w), where=tot[:, None] > 0)
        W = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, n * m + 1, m)),
                          shape=(n, self.X_.shape[0]))
        W.eliminate_zeros()
        scores = sp.csr_matrix(W @ self.Y_)
        empty = np.flatnonzero(tot <= 0)
        labels, values = self.prior_
        if empty.size and labels.size:
            P = sp.csr_matrix((np.tile(values, empty.size), np.tile(labels, empty.size),
                               np.arange(0, empty.size * labels.size + 1, labels.size)),
                              shape=(empty.size, self.n_labels_))
            scores = sp.csr_matrix(scores + sp.csr_matrix(
                (np.ones(empty.size), (empty, np.arange(empty.size))),
                shape=(n, empty.size)) @ P)
        scores.sort_indices()
        return scores

    def predict(self, X) -> sp.csr_matrix:
        """CSR 0/1 label matrix: scores >= ``threshold``, or the ``top`` best labels per row."""
        scores = self.predict_scores(X)
        n = scores.shape[0]
        if self.top is not None:
            t = top_k(scores, int(self.top))
            r = np.repeat(np.arange(n), t.shape[1])
            c = t.ravel()
            keep = c >= 0
            return sp.csr_matrix((np.ones(keep.sum()), (r[keep], c[keep])), shape=scores.shape)
        out = scores.copy()
        out.data = (out.data >= self.threshold).astype(np.float64)
        out.eliminate_zeros()
        return out
