"""Conditional mutual information of every (feature, label) pair given one feature, and the
CMIM greedy built on it (Fleuret, JMLR 2004; Brown et al., JMLR 2012), for multi-label data.

``calibration="cmim"`` replaces the relevance-against-redundancy step of the other
calibrations by a conditional criterion: the first feature is the one of largest
``sum_l I(f; l)``; every later one the candidate of largest

    sum over labels l of  min over selected s of  I(f; l | s),

what the candidate still tells about each label in the worst case over the features already
chosen (a copy of a selected feature tells nothing more: 0). It answers "what does ``f`` add
about ``l`` that ``s`` did not", which pairwise redundancy cannot: two columns may share bits
that are irrelevant to every label, or be independent and still say the same about a label.
On small dense numeric data it beats the default (docs/results/dense_research.md).

``I(f; l | s) = sum_a P(s=a) I(f; l | s=a)``, each term from the (code of f, code of l) count
table of the rows where ``s = a``. All tables of all features and labels come from one sparse
product per code of ``s`` of the indicator columns (one per non-zero code; code 0 stays
implicit, as in :class:`~coreselect.core.discretize.DiscreteMatrix`), the code-0 cells by
subtraction from the margins, so a step costs about one relevance computation on the rows
where ``s`` is not 0 plus ``O(features x labels)`` closed-form work. Count tables add over
rows, so the criterion is exact; this module holds no I/O and no engine knowledge.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.objective import argmax_first
from coreselect.errors import InputError

#: Cells of the (features x labels) tables a run keeps (each label's worst case so far, and
#: one step's conditional information): refused above this rather than exhausting memory.
MAX_CELLS = 200_000_000


def _xlogx(x) -> np.ndarray:
    """``x log2 x`` elementwise (0 at 0), for counts."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 0, x * np.log2(np.where(x > 0, x, 1.0)), 0.0)


def _indicators(m: DiscreteMatrix) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(E, G)``: one 0/1 column per non-zero code of each column of ``m`` (rows: samples),
    and the (columns x indicators) matrix that sums a column's indicators."""
    codes = sp.csc_matrix(m.codes)
    n, d = codes.shape
    width = np.maximum(np.asarray(m.n_codes, dtype=np.int64) - 1, 0)
    start = np.concatenate([[0], np.cumsum(width)]).astype(np.int64)
    owner = np.repeat(np.arange(d), np.diff(codes.indptr))
    nz = codes.data > 0
    rows, col = codes.indices[nz], start[owner[nz]] + codes.data[nz].astype(np.int64) - 1
    E = sp.csr_matrix((np.ones(rows.size), (rows, col)), shape=(n, int(start[-1])))
    of = np.repeat(np.arange(d), width)
    G = sp.csr_matrix((np.ones(of.size), (of, np.arange(of.size))), shape=(d, int(start[-1])))
    return E, G


def _fix(m: sp.spmatrix, margin: np.ndarray, axis: int) -> sp.csr_matrix:
    """Over the stored cells of ``m``: ``phi(margin - m) - phi(margin)``, ``margin`` indexed
    by the cell's row (``axis=0``) or column: the correction that turns ``sum phi(margin)``
    into the sum over the cells of the complementary code."""
    m = sp.coo_matrix(m)
    base = margin[m.row] if axis == 0 else margin[m.col]
    return sp.csr_matrix((_xlogx(base - m.data) - _xlogx(base), (m.row, m.col)), shape=m.shape)


class ConditionalTables:
    """``I(f; l | s)`` for every feature ``f`` and label ``l`` of a problem, given any one
    feature ``s`` (:meth:`given`), or given nothing (:meth:`relevance`), in bits."""

    def __init__(self, features: DiscreteMatrix, labels: DiscreteMatrix):
        if features.n_samples != labels.n_samples:
            raise InputError(f"X has {features.n_samples} samples but Y has {labels.n_samples}")
        self.features, self.labels = features, labels
        self.n = features.n_samples
        self.E, self.Gf = _indicators(features)
        self.Z, self.Gl = _indicators(labels)
        # one indicator per column (every column has exactly two codes): no sums to take
        self._features_binary = bool(np.all(np.asarray(features.n_codes) == 2))
        self._labels_binary = bool(np.all(np.asarray(labels.n_codes) == 2))
        # the counts over all rows: a step counts only the rows where s is not 0, and takes
        # those where it is 0 by subtraction (on sparse data, most rows)
        self.whole = self._counts(self.E, self.Z)

    def _by_label(self, m: sp.spmatrix) -> sp.spmatrix:
        """Columns of label indicators summed per label (as they are when all are 0/1)."""
        return m if self._labels_binary else m @ self.Gl.T

    def _by_feature(self, m: sp.spmatrix) -> sp.spmatrix:
        """Rows of feature indicators summed per feature (as they are when all are 0/1)."""
        return m if self._features_binary else self.Gf @ m

    @property
    def shape(self) -> tuple[int, int]:
        return self.features.n_columns, self.labels.n_columns

    def _n_times_mi(self, M, e, z, N: float) -> np.ndarray:
        """``N * I(f; l)`` over ``N`` rows from their counts: ``M`` (feature indicator x label
        indicator co-occurrences), ``e`` and ``z`` (each indicator's count)."""
        M = sp.csr_matrix(M)
        by_label = self._by_label
        by_feature = self._by_feature
        phi_m = sp.csr_matrix((_xlogx(M.data), M.indices, M.indptr), shape=M.shape)
        joint_nz = by_feature(by_label(phi_m))         # both codes non-zero
        m_l = by_label(M)
        f_only = by_feature(_fix(m_l, e, axis=0))      # feature code non-zero, label code 0
        l_only = by_label(_fix(by_feature(M), z, axis=1))  # label code non-zero, feature 0
        T = by_feature(m_l).toarray()                  # rows where both are non-zero
        ge, gz = self.Gf @ e, self.Gl @ z
        both_zero = _xlogx(N - ge[:, None] - gz[None, :] + T)
        out = (np.asarray((joint_nz + f_only + l_only).todense()) + both_zero
               - _xlogx(N - ge)[:, None] - _xlogx(N - gz)[None, :] + float(_xlogx(N)))
        return out

    @staticmethod
    def _counts(Ea: sp.csr_matrix, Za: sp.csr_matrix) -> tuple:
        """The counts of some rows: (indicator co-occurrences, feature indicator counts, label
        indicator counts, rows)."""
        return (sp.csr_matrix(Ea.T @ Za), np.asarray(Ea.sum(axis=0)).ravel(),
                np.asarray(Za.sum(axis=0)).ravel(), float(Ea.shape[0]))

    def relevance(self) -> np.ndarray:
        """``I(f; l)`` in bits, shape (features, labels)."""
        return self._conditional([self.whole])

    def given(self, s: int) -> np.ndarray:
        """``I(f; l | s)`` in bits for feature column ``s``, shape (features, labels)."""
        col = sp.csc_matrix(self.features.codes[:, [s]])
        rows, vals = col.indices, col.data
        parts = [self._counts(self.E[r], self.Z[r])
                 for r in (rows[vals == a] for a in np.unique(vals[vals > 0]))]
        M, e, z, N = self.whole  # code 0: every row the others do not hold
        for Ma, ea, za, Na in parts:
            M, e, z, N = M - Ma, e - ea, z - za, N - Na
        M.eliminate_zeros()
        return self._conditional([*parts, (M, e, z, N)])

    def _conditional(self, parts) -> np.ndarray:
        total = np.zeros(self.shape)
        for M, e, z, N in parts:
            if N == 0:
                continue
            total += self._n_times_mi(M, e, z, N)
        # rounding leaves tiny negatives where the information is 0
        return np.maximum(total / max(self.n, 1), 0.0)


def cmim(features: DiscreteMatrix, labels: DiscreteMatrix, n_select: int, *,
         selectable: np.ndarray | None = None,
         callback: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The CMIM greedy (module docstring) over the columns of ``features``: ``n_select``
    positions in selection order and each pick's criterion value. Ties go to the lowest
    position (callers keep columns in increasing original-id order, as for the other
    greedies). Only ``selectable`` columns are picked."""
    d = features.n_columns
    allowed = np.ones(d, bool) if selectable is None else np.asarray(selectable, bool).copy()
    if n_select > int(allowed.sum()):
        raise InputError(f"cannot select {n_select} features: only {int(allowed.sum())} are "
                         "selectable")
    if d * max(labels.n_columns, 1) > MAX_CELLS:
        raise InputError(f"calibration='cmim' keeps a (features x labels) table: {d} x "
                         f"{labels.n_columns} cells is more than {MAX_CELLS:,}; use the "
                         "default calibration on data this wide")
    tables = ConditionalTables(features, labels)
    score = tables.relevance().sum(axis=1)
    worst: np.ndarray | None = None
    penalty = np.where(allowed, 0.0, -np.inf)
    chosen: list[int] = []
    values: list[float] = []
    for step in range(n_select):
        u = argmax_first(score + penalty)
        chosen.append(u)
        values.append(float(score[u]))
        penalty[u] = -np.inf
        if step + 1 < n_select:
            cond = tables.given(u)
            worst = cond if worst is None else np.minimum(worst, cond)
            score = worst.sum(axis=1)
        if callback is not None:
            callback(step + 1, n_select)
    return np.asarray(chosen, dtype=np.int64), np.asarray(values)
