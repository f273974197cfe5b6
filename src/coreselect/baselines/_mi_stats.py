"""The information statistics the published multi-label MI selectors are made of.

Every criterion of :mod:`coreselect.baselines.mi_methods` is a combination of

* ``I(f; l)``: the relevance matrix of the core (:func:`~coreselect.core.entropy.relevance_matrix`);
* ``I(f; s)`` for a newly selected ``s`` and every ``f``: the core's joint entropies of one column
  against all (:func:`~coreselect.core.entropy.joint_entropy`, a gather over ``s``'s rows);
* ``I(f; l | z)`` for every ``f`` and ``l`` and one conditioning column ``z`` (a new ``s``, or a
  label): :func:`~coreselect.baselines._mi_kernels.conditional_mi`, the three-way count tables
  ``(f, l, z)`` filled from the non-zero cells and the marginals;
* interaction information ``I(f; s; l) = I(f; l) - I(f; l | s)`` (McGill's co-information, the
  sign of Lee & Kim: positive when ``s`` and ``f`` carry the same information about ``l``).

So a greedy step costs one pass over the features' non-zero cells (times the labels on those
rows) plus ``O(d x L)``; nothing of size features x features or features x labels x labels is
ever held. Discretization is the core's (:func:`~coreselect.core.discretize.discretize`), as
for every baseline, so all methods see the same bins.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from coreselect.baselines.transform import binary_relevance_targets

__all__ = ["MIStatistics", "pick_best", "TIE_TOLERANCE"]

#: Scores within this relative distance of the best count as tied; the lowest index wins.
TIE_TOLERANCE = 1e-9


def pick_best(scores: np.ndarray, taken: np.ndarray) -> int:
    """The best candidate not yet taken: the lowest index among those within
    ``TIE_TOLERANCE * max(1, |best|)`` of the best score (float rounding never decides)."""
    s = np.where(taken, -np.inf, scores)
    top = s.max()
    return int(np.flatnonzero(s >= top - TIE_TOLERANCE * max(1.0, abs(top)))[0])


class MIStatistics:
    """Discretized features and binary labels of one fit, and the statistics above on demand.

    Parameters
    ----------
    X : array or sparse matrix (n, d)
    Y : array or sparse matrix (n, L), binary
    n_bins, strategy, min_bin_count : the core's discretization.
    """

    def __init__(self, X, Y, n_bins: int = 5, strategy: str = "auto", min_bin_count: int = 10):
        from coreselect.core.discretize import discretize, discretize_labels
        from coreselect.core.entropy import xlogx_table

        self.features = discretize(X, n_bins=n_bins, strategy=strategy,
                                   min_bin_count=min_bin_count)
        Yb = binary_relevance_targets(Y)
        self.Y = Yb  # (n, L) int8
        self.labels = discretize_labels(Yb)
        self.label_rows = sp.csr_matrix(Yb)
        self.label_rows.eliminate_zeros()
        self.label_rows.sort_indices()
        self.n, self.d = self.features.n_samples, self.features.n_columns
        self.n_labels = Yb.shape[1]
        self.xl = xlogx_table(max(self.n, 1))

    # -- marginal statistics -------------------------------------------------------------
    @cached_property
    def relevance(self) -> np.ndarray:
        """``I(f; l)`` in bits, shape (d, L)."""
        from coreselect.core.entropy import relevance_matrix

        return np.ascontiguousarray(relevance_matrix(self.features, self.labels, kind="mi"))

    @cached_property
    def feature_entropy(self) -> np.ndarray:
        from coreselect.core.entropy import entropy

        return entropy(self.features)

    @cached_property
    def label_cooccurrence(self) -> np.ndarray:
        """``(L, L)`` rows on which both labels are on."""
        y = self.label_rows.astype(np.int64)
        return np.asarray((y.T @ y).toarray(), dtype=np.int64)

    # -- pairwise and conditional statistics ---------------------------------------------
    def mi_with(self, s: int) -> np.ndarray:
        """``I(f; s)`` for every feature ``f``, shape (d,)."""
        from coreselect.core.entropy import joint_entropy

        h = self.feature_entropy
        h_fs = joint_entropy(self.features.take([s]), self.features)[0]
        return np.maximum(h + h[s] - h_fs, 0.0)

    def _conditional(self, z: np.ndarray, n_z: int, z_label: np.ndarray) -> np.ndarray:
        from coreselect.baselines._mi_kernels import conditional_mi

        codes = self.features.codes
        z_rows = np.bincount(z, minlength=n_z).astype(np.int64)
        out = np.empty((self.d, self.n_labels))
        conditional_mi(codes.indptr, codes.indices, codes.data, self.features.n_codes,
                       self.label_rows.indptr, self.label_rows.indices, z, z_rows,
                       np.ascontiguousarray(z_label, dtype=np.int64), self.xl, out)
        return out

    def given_feature(self, s: int) -> np.ndarray:
        """``I(f; l | s)`` for every feature ``f`` and label ``l``, shape (d, L)."""
        codes = self.features.codes
        lo, hi = codes.indptr[s], codes.indptr[s + 1]
        rows, vals = codes.indices[lo:hi], codes.data[lo:hi].astype(np.int64)
        n_z = max(int(self.features.n_codes[s]), 1)
        z = np.zeros(self.n, dtype=np.int64)
        z[rows] = vals
        z_label = np.zeros((n_z, self.n_labels), dtype=np.int64)
        if rows.size:
            onehot = sp.csr_matrix((np.ones(rows.size), (vals, rows)), shape=(n_z, self.n))
            z_label[:] = np.rint((onehot @ self.label_rows).toarray())
        z_label[0] = self.label_rows.getnnz(axis=0) - z_label[1:].sum(axis=0)
        return self._conditional(z, n_z, z_label)

    def given_label(self, j: int) -> np.ndarray:
        """``I(f; l | l_j)`` for every feature ``f`` and label ``l``, shape (d, L)."""
        z = self.Y[:, j].astype(np.int64)
        co = self.label_cooccurrence
        z_label = np.vstack([np.diag(co) - co[j], co[j]])
        return self._conditional(z, 2, z_label)

    @cached_property
    def label_pairs(self) -> dict[str, np.ndarray]:
        """Aggregates over ordered label pairs ``i != j`` of ``C[f, i, j] = I(f; l_i | l_j)``,
        one conditioning label at a time (never the d x L x L tensor):

        * ``"sum_cond"`` (d,): ``sum_{i != j} C``;
        * ``"sum_supp"`` (d,): ``sum_{i != j} max(0, C - I(f; l_i))``;
        * ``"max_cond"`` (d, L): ``max_{j != i} C`` (``-inf`` with one label).
        """
        from coreselect.baselines._mi_kernels import label_pair_aggregates

        codes = self.features.codes
        co = self.label_cooccurrence
        sum_cond = np.zeros(self.d)
        sum_supp = np.zeros(self.d)
        max_cond = np.full((self.d, self.n_labels), -np.inf)
        label_pair_aggregates(codes.indptr, codes.indices, codes.data, self.features.n_codes,
                              self.label_rows.indptr, self.label_rows.indices,
                              np.ascontiguousarray(np.diag(co)), co, self.relevance, self.xl,
                              sum_cond, sum_supp, max_cond)
        return {"sum_cond": sum_cond, "sum_supp": sum_supp, "max_cond": max_cond}

    # -- label powerset ------------------------------------------------------------------
    def labelset_ids(self, rows: np.ndarray | None = None) -> np.ndarray:
        from coreselect.baselines.transform import labelset_ids

        return labelset_ids(self.Y if rows is None else self.Y[rows])
