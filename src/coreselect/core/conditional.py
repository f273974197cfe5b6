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
where ``s`` is not 0 plus ``O(features x labels)`` closed-form work. The counts add over rows
(:class:`ConditionalCounts`, :class:`StepCounts`: a merge is ``+``), so the tables of row
shards summed are the whole data's (:func:`coreselect.engines.rowsharded.select_conditional`);
this module holds no I/O and no engine knowledge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.greedy import GreedyResult
from coreselect.core.objective import CONDITIONAL_MAX_CELLS as MAX_CELLS
from coreselect.core.objective import argmax_first, relevance_of
from coreselect.errors import InputError


def _xlogx(x) -> np.ndarray:
    """``x log2 x`` elementwise (0 at 0), for counts."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 0, x * np.log2(np.where(x > 0, x, 1.0)), 0.0)


def _indicators(m: DiscreteMatrix) -> sp.csr_matrix:
    """One 0/1 column per non-zero code of each column of ``m`` (rows: samples)."""
    codes = sp.csc_matrix(m.codes)
    n, d = codes.shape
    start = _starts(m.n_codes)
    owner = np.repeat(np.arange(d), np.diff(codes.indptr))
    nz = codes.data > 0
    rows, col = codes.indices[nz], start[owner[nz]] + codes.data[nz].astype(np.int64) - 1
    return sp.csr_matrix((np.ones(rows.size), (rows, col)), shape=(n, int(start[-1])))


def _starts(n_codes) -> np.ndarray:
    """Where each column's indicators start (and, last, how many there are)."""
    width = np.maximum(np.asarray(n_codes, dtype=np.int64) - 1, 0)
    return np.concatenate([[0], np.cumsum(width)]).astype(np.int64)


def _aggregator(n_codes) -> sp.csr_matrix:
    """The (columns x indicators) matrix that sums each column's indicators."""
    start = _starts(n_codes)
    width = np.diff(start)
    of = np.repeat(np.arange(width.size), width)
    return sp.csr_matrix((np.ones(of.size), (of, np.arange(of.size))),
                         shape=(width.size, int(start[-1])))


def _fix(m: sp.spmatrix, margin: np.ndarray, axis: int) -> sp.csr_matrix:
    """Over the stored cells of ``m``: ``phi(margin - m) - phi(margin)``, ``margin`` indexed
    by the cell's row (``axis=0``) or column: the correction that turns ``sum phi(margin)``
    into the sum over the cells of the complementary code."""
    m = sp.coo_matrix(m)
    base = margin[m.row] if axis == 0 else margin[m.col]
    return sp.csr_matrix((_xlogx(base - m.data) - _xlogx(base), (m.row, m.col)), shape=m.shape)


@dataclass
class ConditionalCounts:
    """What the tables need of some rows: the (feature indicator x label indicator)
    co-occurrences ``M``, each feature indicator's count ``e``, each label indicator's count
    ``z`` and the number of rows ``n``. Integers that add over rows: the counts of a row shard
    merge with ``+`` (exact, associative and commutative), and the sum over the shards is the
    counts of all rows."""

    M: sp.csr_matrix
    e: np.ndarray
    z: np.ndarray
    n: float
    #: the numbers of codes of the feature and label columns (the same in every shard: the
    #: bins are fixed over all rows first), which say which indicators belong together
    features_n_codes: np.ndarray | None = None
    labels_n_codes: np.ndarray | None = None

    def __add__(self, other: "ConditionalCounts") -> "ConditionalCounts":
        if self.M.shape != other.M.shape or not (
                _same(self.features_n_codes, other.features_n_codes)
                and _same(self.labels_n_codes, other.labels_n_codes)):
            raise ValueError("the counts of shards binned differently do not add")
        return ConditionalCounts(self.M + other.M, self.e + other.e, self.z + other.z,
                                 self.n + other.n, self.features_n_codes, self.labels_n_codes)


def _same(a, b) -> bool:
    return a is None or b is None or np.array_equal(a, b)


def _counts(Ea: sp.csr_matrix, Za: sp.csr_matrix) -> ConditionalCounts:
    return ConditionalCounts(sp.csr_matrix(Ea.T @ Za), np.asarray(Ea.sum(axis=0)).ravel(),
                             np.asarray(Za.sum(axis=0)).ravel(), float(Ea.shape[0]))


class StepCounts(dict):
    """:class:`ConditionalCounts` of the rows where a feature ``s`` has each non-zero code
    (code -> counts); shards merge with ``+``, code by code."""

    def __add__(self, other: "StepCounts") -> "StepCounts":
        out = StepCounts(self)
        for a, counts in other.items():
            out[a] = out[a] + counts if a in out else counts
        return out


def conditional_counts(features: DiscreteMatrix, labels: DiscreteMatrix) -> ConditionalCounts:
    """The counts of all rows of ``features`` and ``labels`` (a shard, or the whole data)."""
    counts = _counts(_indicators(features), _indicators(labels))
    counts.features_n_codes = np.asarray(features.n_codes, dtype=np.int64)
    counts.labels_n_codes = np.asarray(labels.n_codes, dtype=np.int64)
    return counts


def step_counts(features: DiscreteMatrix, labels: DiscreteMatrix, s: int, *,
                E: sp.csr_matrix | None = None, Z: sp.csr_matrix | None = None) -> StepCounts:
    """The counts of the rows where feature ``s`` has each non-zero code (``E``, ``Z``: the
    indicators of ``features`` and ``labels``, when already built)."""
    E = _indicators(features) if E is None else E
    Z = _indicators(labels) if Z is None else Z
    col = sp.csc_matrix(features.codes[:, [s]])
    rows, vals = col.indices, col.data
    return StepCounts((int(a), _counts(E[r], Z[r]))
                      for a, r in ((a, rows[vals == a]) for a in np.unique(vals[vals > 0])))


class ConditionalTables:
    """``I(f; l | s)`` for every feature ``f`` and label ``l`` of a problem, given one
    feature ``s`` (:meth:`given`, from the :class:`StepCounts` of ``s``), or given nothing
    (:meth:`relevance`), in bits, from the counts of all rows (``whole``) and the numbers of
    codes of the columns: no data, so the same tables come from one matrix or from shards."""

    def __init__(self, features_n_codes, labels_n_codes, whole: ConditionalCounts):
        """``whole``: the counts of all rows (:func:`conditional_counts`, or their sum over
        the shards); the numbers of codes group the indicators into columns."""
        _check_size(len(features_n_codes), len(labels_n_codes))  # before any table is built
        self.Gf, self.Gl = _aggregator(features_n_codes), _aggregator(labels_n_codes)
        self.whole = whole
        self.n = whole.n
        # one indicator per column (every column has exactly two codes): no sums to take
        self._features_binary = bool(np.all(np.asarray(features_n_codes) == 2))
        self._labels_binary = bool(np.all(np.asarray(labels_n_codes) == 2))

    def _by_label(self, m: sp.spmatrix) -> sp.spmatrix:
        """Columns of label indicators summed per label (as they are when all are 0/1)."""
        return m if self._labels_binary else m @ self.Gl.T

    def _by_feature(self, m: sp.spmatrix) -> sp.spmatrix:
        """Rows of feature indicators summed per feature (as they are when all are 0/1)."""
        return m if self._features_binary else self.Gf @ m

    @property
    def shape(self) -> tuple[int, int]:
        return self.Gf.shape[0], self.Gl.shape[0]

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

    def relevance(self) -> np.ndarray:
        """``I(f; l)`` in bits, shape (features, labels)."""
        return self._conditional([self.whole])

    def given(self, parts: StepCounts) -> np.ndarray:
        """``I(f; l | s)`` in bits, shape (features, labels), from the counts of the rows
        where ``s`` has each non-zero code; its code-0 rows are all the others."""
        M, e, z, N = self.whole.M, self.whole.e, self.whole.z, self.whole.n
        for Ma, ea, za, Na in ((c.M, c.e, c.z, c.n) for c in parts.values()):
            M, e, z, N = M - Ma, e - ea, z - za, N - Na
        M = sp.csr_matrix(M)
        M.eliminate_zeros()
        return self._conditional([*parts.values(), ConditionalCounts(M, e, z, N)])

    def _conditional(self, parts) -> np.ndarray:
        total = np.zeros(self.shape)
        for c in parts:
            if c.n == 0:
                continue
            total += self._n_times_mi(c.M, c.e, c.z, c.n)
        # rounding leaves tiny negatives where the information is 0
        return np.maximum(total / max(self.n, 1), 0.0)


#: The compiled conditional tables count every (label, feature code) pair in a dense table
#: (4 bytes a cell); past this many cells CMIM keeps the sparse path's co-occurrences.
ROW_TABLES_MAX_CELLS = 1 << 26


class RowTables:
    """:class:`ConditionalTables` of data in memory, counted from its rows by a compiled
    kernel (:mod:`coreselect.core._numba_conditional`): the same tables, bit for bit, for
    labels of at most two codes (:meth:`applies`), without a sparse product per code of the
    picked column. ``given`` takes the picked column itself."""

    def __init__(self, features: DiscreteMatrix, labels: DiscreteMatrix):
        from coreselect.core.entropy import SlotRows

        _check_size(features.n_columns, labels.n_columns)
        self.features = features
        self.n = float(features.n_samples)
        rows = SlotRows(features)
        self._f = (rows.indptr, rows.slots, _starts(features.n_codes))
        row_major = labels.row_major
        label_slot = np.where(np.asarray(labels.n_codes) == 2, _starts(labels.n_codes)[:-1], -1)
        self._l = (row_major.indptr, row_major.indices, label_slot.astype(np.int64))
        self._xl = _xlogx(np.arange(features.n_samples + 1, dtype=np.float64))
        n_slots = int(self._f[2][-1])
        count = np.int32 if features.n_samples < 2**31 else np.int64
        self._M = np.zeros((labels.n_columns, n_slots), dtype=count)
        self._e = np.zeros(n_slots, dtype=np.int64)
        self._z = np.zeros(labels.n_columns, dtype=np.int64)

    @staticmethod
    def applies(features: DiscreteMatrix, labels: DiscreteMatrix) -> bool:
        """Binary (or constant) labels, numba, and a count table (labels x feature codes)
        within :data:`ROW_TABLES_MAX_CELLS`; the sparse path keeps only the co-occurrences
        present."""
        from coreselect.core._backend import numba_enabled

        return (numba_enabled("auto") and bool(np.all(np.asarray(labels.n_codes) <= 2))
                and labels.n_columns * int(features.offsets[-1]) <= ROW_TABLES_MAX_CELLS)

    @property
    def shape(self) -> tuple[int, int]:
        return self.features.n_columns, self._z.size

    def relevance(self) -> np.ndarray:
        """``I(f; l)`` in bits, shape (features, labels)."""
        return self._conditional([np.arange(self.features.n_samples)])

    def given(self, s: int) -> np.ndarray:
        """``I(f; l | s)`` in bits: the parts are the rows of each non-zero code of ``s`` in
        increasing order, then the rest (as :func:`step_counts` and
        :meth:`ConditionalTables.given` order them)."""
        codes = self.features.codes
        lo, hi = codes.indptr[s], codes.indptr[s + 1]
        rows, vals = codes.indices[lo:hi], codes.data[lo:hi]
        rest = np.ones(self.features.n_samples, dtype=bool)
        rest[rows] = False
        return self._conditional([rows[vals == a] for a in np.unique(vals[vals > 0])]
                                 + [np.flatnonzero(rest)])

    def _conditional(self, parts: list[np.ndarray]) -> np.ndarray:
        from coreselect.core._numba_conditional import add_part

        total = np.zeros(self.shape)
        for rows in parts:
            if rows.size == 0:
                continue
            add_part(rows.astype(np.int64), *self._f, *self._l, self._xl,
                     float(_xlogx(float(rows.size))), self._M, self._e, self._z, total)
        return np.maximum(total / max(self.n, 1), 0.0)


def cmim(features: DiscreteMatrix, labels: DiscreteMatrix, n_select: int, *,
         selectable: np.ndarray | None = None,
         callback: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The CMIM greedy (module docstring) over the columns of ``features`` held in memory:
    ``n_select`` positions in selection order and each pick's criterion value."""
    if features.n_samples != labels.n_samples:
        raise InputError(f"X has {features.n_samples} samples but Y has {labels.n_samples}")
    if RowTables.applies(features, labels):
        return cmim_order(RowTables(features, labels), lambda s: s, n_select,
                          selectable=selectable, callback=callback)
    E, Z = _indicators(features), _indicators(labels)
    tables = ConditionalTables(features.n_codes, labels.n_codes, _counts(E, Z))
    return cmim_order(tables, lambda s: step_counts(features, labels, s, E=E, Z=Z), n_select,
                      selectable=selectable, callback=callback)


def _check_size(d: int, n_labels: int) -> None:
    if d * max(n_labels, 1) > MAX_CELLS:
        raise InputError(f"calibration='cmim' keeps a (features x labels) table: {d} x "
                         f"{n_labels} cells is more than {MAX_CELLS:,}; use "
                         "calibration='information' on data this wide")


def cmim_order(tables: ConditionalTables, given: Callable[[int], StepCounts], n_select: int,
               *, selectable: np.ndarray | None = None,
               callback: Callable[[int, int], None] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The CMIM greedy over the tables' columns, ``given(s)`` the :class:`StepCounts` of a
    picked column (from memory, or summed over row shards): ``n_select`` positions in
    selection order and each pick's criterion value. Ties go to the lowest position (callers
    keep columns in increasing original-id order, as for the other greedies). Only
    ``selectable`` columns are picked."""
    d = tables.shape[0]
    allowed = np.ones(d, bool) if selectable is None else np.asarray(selectable, bool).copy()
    if n_select > int(allowed.sum()):
        raise InputError(f"cannot select {n_select} features: only {int(allowed.sum())} are "
                         "selectable")
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
            cond = tables.given(given(u))
            worst = cond if worst is None else np.minimum(worst, cond)
            score = worst.sum(axis=1)
        if callback is not None:
            callback(step + 1, n_select)
    return np.asarray(chosen, dtype=np.int64), np.asarray(values)


def conditional_result(selected: np.ndarray, local: np.ndarray, values: np.ndarray, relevance,
                       p: int, pair: np.ndarray, seconds: float,
                       calibration: str) -> GreedyResult:
    """A conditional order as a :class:`~coreselect.core.greedy.GreedyResult`, whether its
    counts came from one matrix or from row shards: ``objective`` the sum of the picks'
    criterion ``values`` (bits), ``relevance`` and ``diversity`` the selection's ``g`` (from
    the ``relevance`` matrix, top ``p``) and pairwise distance sum (``pair``: the distances
    among the picks, selection order), as for the weighing calibrations."""
    return GreedyResult(
        selected=selected, local=local, objective=float(values.sum()),
        relevance=relevance_of(relevance, local, p),
        diversity=float(np.triu(pair, 1).sum()), pair_distances=pair,
        seconds=seconds, algorithm=calibration, extra={"criterion_values": values})


def warm_up() -> bool:
    """Load the compiled kernels of a default selection from numba's on-disk cache (compiling
    them on the first run after an install), so that the first ``fit`` or ``select`` in this
    process does not pay for it (mostly numba's own import). Call it where
    the wait does not matter, such as a service's start-up; it is safe in a thread.
    Covers both defaults: the relevance-against-redundancy greedy of sparse data and CMIM on
    dense data. Returns whether the compiled kernels are in use (False: numba is missing or
    ``CORESELECT_NUMBA=0``, and the numpy kernels run)."""
    from coreselect.core.discretize import discretize, discretize_labels
    from coreselect.core.entropy import warm_up as warm_up_counts

    if not warm_up_counts():
        return False
    pairs = np.array([[0, 1], [1, 1], [1, 0], [0, 0]])
    RowTables(discretize(pairs, strategy="none"), discretize_labels(pairs)).given(0)
    return True
