"""Entropy kernels: marginal and joint entropies, the relevance matrix, distance steps.

All quantities are in bits and come from integer count tables. A joint table of two
discrete columns ``a`` (codes ``i``) and ``b`` (codes ``j``) is never built cell by cell:
only the co-occurrences of non-zero codes ``N[i, j]`` (``i, j >= 1``) are counted (one sparse
product of one-hot indicators, or a compiled gather), and the other cells follow in closed form
from the marginals::

    N[i, 0] = m_a[i] - sum_j N[i, j]        N[0, j] = m_b[j] - sum_i N[i, j]
    N[0, 0] = n - nnz(a) - nnz(b) + sum_ij N[i, j]

so zero cells of sparse data cost nothing. ``H = log2(n) - sum N log2 N / n``.

Definitions (Ghadiri & Schmidt 2019, Section 3):

* ``I(a, b) = H(a) + H(b) - H(a, b)``
* relevance ``"nmi"`` (the paper's text): ``MI(x, l) = I(x, l) / sqrt(H(x) H(l))``, 0 when
  either entropy is 0; relevance ``"mi"``: ``I(x, l)`` in bits, which is what reproduces the
  objective values of the paper's Table 2.
* distance ``d(u, v) = 1 - I(u, v) / H(u, v)`` (normalized variation of information, a
  metric), 0 when ``H(u, v) = 0``, clipped to ``[0, 1]``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
import scipy.sparse as sp

from coreselect.core._backend import Backend, numba_enabled as _numba_enabled
from coreselect.core.discretize import DiscreteMatrix

Relevance = Literal["nmi", "mi"]
RELEVANCES = ("nmi", "mi")


# ``log2(n) - sum N log2 N / n`` of a constant column is ~4e-16, not 0, for some n (11, 13,
# 29, ...), and NMI divides by its square root. A true entropy of n samples is at least about
# log2(n) / n (> 1e-10 for n < 1e12), so anything below this is 0.
ZERO_ENTROPY = 1e-12


def zero_small(h: np.ndarray) -> np.ndarray:
    """Entropies with rounding residue (and negative values) set to exactly 0."""
    return np.where(h < ZERO_ENTROPY, 0.0, h)


@lru_cache(maxsize=8)
def xlogx_table(n: int) -> np.ndarray:
    """``c * log2(c)`` for every count ``c = 0 .. n`` (0 for ``c = 0``); read-only."""
    c = np.arange(n + 1, dtype=np.float64)
    table = np.zeros(n + 1)
    table[1:] = c[1:] * np.log2(c[1:])
    table.setflags(write=False)
    return table


def entropy(a: DiscreteMatrix) -> np.ndarray:
    """Entropy in bits of every column."""
    n = a.n_samples
    if n == 0:
        return np.zeros(a.n_columns)
    xl = xlogx_table(n)
    s = np.bincount(a.expanded_owner, weights=xl[a.code_counts], minlength=a.n_columns)
    zero = n - a.nonzero_counts
    return zero_small(np.log2(n) - (s + xl[zero]) / n)


def _aggregator(a: DiscreteMatrix) -> sp.csr_matrix:
    """Sparse (columns x expanded) matrix summing a column's code slots."""
    m = int(a.offsets[-1])
    return sp.csr_matrix(
        (np.ones(m), (a.expanded_owner, np.arange(m))), shape=(a.n_columns, m)
    )


def joint_entropy(a: DiscreteMatrix, b: DiscreteMatrix, backend: Backend = "auto") -> np.ndarray:
    """Joint entropy ``H(a_i, b_j)`` in bits of every pair of columns, shape (d_a, d_b).

    ``backend="numpy"``: one sparse product of the one-hot indicators gives the non-zero
    co-occurrences and every other cell of every joint table is filled in closed form (see the
    module docstring). ``"numba"``: a compiled loop over the columns of ``a`` doing the same
    per column. ``"auto"``: numba when available.
    """
    if a.n_samples != b.n_samples:
        raise ValueError("the two matrices have different numbers of samples")
    if a.n_samples == 0:
        return np.zeros((a.n_columns, b.n_columns))
    if _numba_enabled(backend):
        return _joint_entropy_compiled(a, b)
    return _joint_entropy_sparse(a, b)


def _joint_entropy_sparse(a: DiscreteMatrix, b: DiscreteMatrix) -> np.ndarray:
    n = a.n_samples
    xl = xlogx_table(n)
    co = (a.indicator.T @ b.indicator).tocsr()  # (slots_a x slots_b) co-occurrence counts
    co.sum_duplicates()
    counts = np.rint(co.data).astype(np.int64)
    agg_a, agg_b = _aggregator(a), _aggregator(b)

    f_co = sp.csr_matrix((xl[counts], co.indices, co.indptr), shape=co.shape)
    cells = (agg_a @ f_co @ agg_b.T).toarray()  # sum over i, j >= 1 of f(N[i, j])

    # Row remainders N[i, 0] = m_a[i] - sum_j N[i, j]: correct f(m_a[i]) where the sum is > 0.
    rows = (co @ agg_b.T).tocsr()
    rows.sum_duplicates()
    r_cnt = np.rint(rows.data).astype(np.int64)
    m_a = np.repeat(a.code_counts, np.diff(rows.indptr))
    rows.data = xl[m_a - r_cnt] - xl[m_a]
    cells += (agg_a @ rows).toarray()

    # Column remainders N[0, j] = m_b[j] - sum_i N[i, j].
    cols = (agg_a @ co).tocsc()
    cols.sum_duplicates()
    c_cnt = np.rint(cols.data).astype(np.int64)
    m_b = np.repeat(b.code_counts, np.diff(cols.indptr))
    cols.data = xl[m_b - c_cnt] - xl[m_b]
    cells += (cols @ agg_b.T).toarray()

    base_a = np.bincount(a.expanded_owner, weights=xl[a.code_counts], minlength=a.n_columns)
    base_b = np.bincount(b.expanded_owner, weights=xl[b.code_counts], minlength=b.n_columns)
    together = (agg_a @ co @ agg_b.T).toarray()  # sum over i, j >= 1 of N[i, j]
    n00 = (n - a.nonzero_counts[:, None] - b.nonzero_counts[None, :]
           + np.rint(together).astype(np.int64))
    cells += base_a[:, None] + base_b[None, :] + xl[n00]
    return zero_small(np.log2(n) - cells / n)


def mutual_information(a: DiscreteMatrix, b: DiscreteMatrix, backend: Backend = "auto") -> np.ndarray:
    """``I(a_i, b_j)`` in bits for every pair of columns, shape (d_a, d_b); never negative."""
    h_ab = joint_entropy(a, b, backend)
    return np.maximum(entropy(a)[:, None] + entropy(b)[None, :] - h_ab, 0.0)


def relevance_matrix(
    features: DiscreteMatrix,
    labels: DiscreteMatrix,
    kind: Relevance = "nmi",
    backend: Backend = "auto",
) -> np.ndarray:
    """Relevance of every feature to every label column, shape (n_features, n_labels).

    ``kind="nmi"``: ``I(x, l) / sqrt(H(x) H(l))`` in [0, 1] (0 when either entropy is 0), as
    the paper writes it. ``kind="mi"``: raw ``I(x, l)`` in bits. Label columns may be
    multi-valued (for example a label-powerset class).
    """
    if kind not in RELEVANCES:
        raise ValueError(f"unknown relevance {kind!r}; choose one of {RELEVANCES}")
    varying = ~features.is_constant
    if 2 * int(varying.sum()) > varying.size:
        return relevance_from_entropies(entropy(features), entropy(labels),
                                        joint_entropy(features, labels, backend), kind, backend)
    # A constant column carries no information about anything: its row is 0 by definition.
    # Most columns of wide text data are constant on a sample of rows, and their joint
    # tables would be most of the work.
    live = np.flatnonzero(varying)
    sub = features.take(live)
    values = relevance_from_entropies(entropy(sub), entropy(labels),
                                      joint_entropy(sub, labels, backend), kind, backend)
    out = np.zeros((labels.n_columns, features.n_columns)).T  # column-major, as the kernel's
    for label in range(labels.n_columns):  # one column at a time: contiguous, no temporaries
        out[live, label] = values[:, label]
    return out


def relevance_from_entropies(h_x: np.ndarray, h_l: np.ndarray, h_xl: np.ndarray,
                             kind: Relevance = "nmi", backend: Backend = "auto") -> np.ndarray:
    """Relevance from the entropies of features, labels and their pairs; ``h_xl`` (d x L) is
    overwritten and returned (it is the largest array of a run). Row-sharded runs share it.
    ``backend="numba"`` does the same float operations in one compiled pass over ``h_xl``
    (the numpy path reads and writes it six times), so the same bits."""
    with np.errstate(divide="ignore"):
        inv_x = np.where(h_x >= ZERO_ENTROPY, 1.0 / np.sqrt(h_x), 0.0)
        inv_l = np.where(h_l >= ZERO_ENTROPY, 1.0 / np.sqrt(h_l), 0.0)
    if _numba_enabled(backend) and h_xl.ndim == 2 and h_xl.dtype == np.float64:
        from coreselect.core._numba import relevance_in_place

        relevance_in_place(h_xl, np.asarray(h_x, dtype=np.float64),
                           np.asarray(h_l, dtype=np.float64), inv_x, inv_l, kind != "mi",
                           not h_xl.flags.c_contiguous)
        return h_xl
    info = h_xl
    np.subtract(h_x[:, None], info, out=info)
    info += h_l[None, :]
    np.maximum(info, 0.0, out=info)
    info += 0.0  # a zero is +0.0 (the sign np.maximum gives a zero is not specified)
    if kind == "mi":
        return info
    info *= inv_x[:, None]
    info *= inv_l[None, :]
    return np.minimum(info, 1.0, out=info)


def distance_from_entropies(h_uv: np.ndarray, h_u: float | np.ndarray, h_v: np.ndarray) -> np.ndarray:
    """``d = 1 - I/H(u,v) = (2 H(u,v) - H(u) - H(v)) / H(u,v)``, 0 where ``H(u,v) = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = h_uv >= ZERO_ENTROPY
        dist = np.where(ok, (2.0 * h_uv - h_u - h_v) / np.where(ok, h_uv, 1.0), 0.0)
    return np.clip(dist, 0.0, 1.0)


def shared_information(dist: np.ndarray, h_u: float, h_v: np.ndarray) -> np.ndarray:
    """``I(u; v)`` from the distance :func:`distance_from_entropies` gave and the two entropies:
    ``H(u,v) = (H(u) + H(v)) / (2 - d)``, so ``I = (H(u) + H(v)) (1 - d) / (2 - d)`` (0 where
    both columns are constant). Every distance oracle (in memory, row-sharded) thus gives the
    information too, from the same count tables."""
    dist = np.asarray(dist, dtype=np.float64)
    return np.maximum((h_u + np.asarray(h_v)) * (1.0 - dist) / (2.0 - dist), 0.0)


_EMPTY_F = np.zeros(0)
_EMPTY_B = np.zeros(0, dtype=bool)


def add_distances(dist: np.ndarray, h_u: float, h_v: np.ndarray, diversity: np.ndarray,
                  information: np.ndarray | None = None, copies: np.ndarray | None = None,
                  copy_atol: float = 0.0, use_numba: bool = False) -> None:
    """A greedy step's sums, in place: ``diversity += dist``, ``information +=``
    :func:`shared_information` (when given), ``copies |= dist <= copy_atol`` (when given);
    compiled, one pass, the same bits."""
    if use_numba:
        from coreselect.core._numba import add_distances as kernel

        kernel(np.asarray(dist, dtype=np.float64), float(h_u), h_v, diversity,
               _EMPTY_F if information is None else information,
               _EMPTY_B if copies is None else copies, float(copy_atol))
        return
    diversity += dist
    if information is not None:
        information += shared_information(dist, h_u, h_v)
    if copies is not None:
        copies |= dist <= copy_atol


def pairwise_distances(a: DiscreteMatrix, backend: Backend = "auto") -> np.ndarray:
    """All pairwise distances of the columns of ``a`` (a small d x d matrix: for tests and for
    the few selected features only, never for the whole feature set)."""
    h = entropy(a)
    return distance_from_entropies(joint_entropy(a, a, backend), h[:, None], h[None, :])


def warm_up() -> bool:
    """Import numba and load the compiled kernels from their on-disk cache by running them
    once on tiny data (about a second, mostly numba's own start-up). A caller with other work
    to do first, such as reading a file, can run this in a thread meanwhile. Returns whether
    the compiled kernels are in use."""
    if not _numba_enabled("auto"):
        return False
    from coreselect.core._numba import enter_top, lower_gains, range_pick
    from coreselect.core.discretize import discretize, discretize_labels

    tiny = discretize(np.array([[0, 1], [1, 1], [1, 0], [0, 0]]), strategy="none")
    discretize(np.linspace(0.0, 1.0, 80).reshape(40, 2))  # long columns, sorted by numpy
    relevance_matrix(tiny, discretize_labels(np.array([[0, 1], [1, 1], [1, 0], [0, 0]])))
    oracle = DistanceOracle(tiny)
    oracle.add_distances_from(0, np.zeros(2), np.zeros(2), np.zeros(2, bool))
    oracle.distances_from(0)  # more cells than slots: the step of a pick on many rows
    add_distances(np.zeros(2), 0.0, np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2, bool),
                  use_numba=True)
    lower_gains(np.zeros(2), np.arange(2), 2, 0.0, 1.0, np.zeros(2), False)
    enter_top(np.zeros((2, 2)), np.zeros((2, 2), order="F")[0],  # a row of the relevance
              np.empty(2, np.int64), np.empty(2), np.empty(2))
    range_pick(np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2, dtype=bool), True, 0.0, 0.5,
               0.0, 1e-9, np.zeros(2))
    return True


#: A ``B`` with at most this many (column, code >= 1) slots (the labels, usually) is counted
#: as one bit set per row (:func:`coreselect.core._numba._count_bits`): a few word operations
#: per non-zero of ``A`` instead of one scattered update per co-occurrence.
BITSET_MAX_SLOTS = 256

#: Cells (stored codes plus one per column) of ``A`` per block of the relevance kernel: the
#: unit of work handed to a thread (blocks are many more than threads, for balance).
RELEVANCE_BLOCK_CELLS = 1 << 18

#: The relevance kernel's blocks per thread, at least (when they are smaller than
#: RELEVANCE_BLOCK_CELLS): uneven blocks then even out.
BLOCKS_PER_THREAD = 4

#: A step gathering fewer cells than this runs on one thread (starting threads costs more).
THREADED_MIN_CELLS = 1 << 16

#: A distance step marks the slots it gathers (so the fill skips the columns sharing no row
#: with ``u``) while its cells are fewer than this many per slot: the same bits either way.
MARK_CELLS_PER_SLOT = 1.0

#: The row-major slot copy is built by column blocks of at least this many cells each.
SLOT_ROWS_PART_CELLS = 1 << 20


class _Marginals:
    """What the closed-form fill needs about the matrix ``B`` whose columns are compared with
    one column at a time: slot layout, slot and non-zero counts, ``sum_j f(m_v[j])`` per
    column, and the ``c log2 c`` table."""

    def __init__(self, b: DiscreteMatrix):
        xl = xlogx_table(b.n_samples)
        self.offsets = b.offsets
        self.code_counts = b.code_counts
        self.nonzero_counts = b.nonzero_counts
        self.base = np.bincount(b.expanded_owner, weights=xl[b.code_counts],
                                minlength=b.n_columns)
        self.xl = xl

    @property
    def args(self) -> tuple:
        return self.offsets, self.code_counts, self.nonzero_counts, self.base, self.xl


_NO_BITS = np.zeros((1, 0), dtype=np.uint64)


def row_access(b: DiscreteMatrix) -> tuple:
    """How the count kernels read ``B`` by rows: ``(bits, starts, stops, cols, codes)``, with
    ``bits`` the per-row slot bit sets when ``B`` has at most :data:`BITSET_MAX_SLOTS` slots
    (then the CSR arrays are empty), else an empty bit set and ``B``'s CSR rows."""
    from coreselect.core._numba import slot_bits

    n_slots = int(b.offsets[-1])
    codes = b.codes
    if 0 < n_slots <= BITSET_MAX_SLOTS:
        bits = np.zeros((b.n_samples, (n_slots + 63) // 64), dtype=np.uint64)
        slot_bits(codes.indptr, codes.indices, codes.data, b.offsets, bits)
        empty = codes.indptr[:0]
        return bits, empty, empty, codes.indices[:0], codes.data[:0]
    rm = b.row_major
    return _NO_BITS, rm.indptr[:-1], rm.indptr[1:], rm.indices, rm.data


def column_blocks(indptr: np.ndarray, target: int = RELEVANCE_BLOCK_CELLS) -> np.ndarray:
    """Bounds of consecutive column blocks of about ``target`` cells (CSC ``indptr``)."""
    from coreselect.core.discretize import _blocks

    return _blocks(np.diff(indptr) + 1, target)


def _joint_entropy_compiled(a: DiscreteMatrix, b: DiscreteMatrix) -> np.ndarray:
    from coreselect.core._numba import joint_block
    from coreselect.core._threads import n_threads, run_blocks

    side = _Marginals(b)
    rows = row_access(b)
    owner = b.expanded_owner
    codes = a.codes
    # Column-major output: the greedy reads the relevance matrix one label at a time.
    out = np.empty((b.n_columns, a.n_columns)).T
    # Blocks of at most RELEVANCE_BLOCK_CELLS, and at least a few per thread: two blocks of
    # very different sizes would leave a thread idle (a training fold of text data).
    cells = int(codes.indptr[-1]) + a.n_columns
    per_thread = max(1, -(-cells // (BLOCKS_PER_THREAD * n_threads())))
    bounds = column_blocks(codes.indptr, min(RELEVANCE_BLOCK_CELLS, per_thread))

    def block(j: int) -> None:
        joint_block(bounds[j], bounds[j + 1], codes.indptr, codes.indices, codes.data,
                    a.n_codes, a.offsets, a.code_counts, *rows, *side.args, owner, out)

    run_blocks(block, bounds.size - 1)
    return out


class SlotRows:
    """A row-major copy of ``A`` for the distance steps: per row, the (column, code >= 1) slot
    of every non-zero cell (int32 while the slots fit: 4 bytes per cell, less than a CSR of
    column ids and codes, and a step's gather reads one array with no lookup). Built from the
    CSC codes by column blocks on several threads, each with its own cursors into the rows."""

    def __init__(self, a: DiscreteMatrix, threads: int | None = None):
        from coreselect.core._numba import row_counts, slot_rows
        from coreselect.core._threads import n_threads, run_blocks

        codes = a.codes
        n = a.n_samples
        n_slots = int(a.offsets[-1])
        nnz = int(codes.indptr[-1])
        self.slots = np.empty(nnz, dtype=np.int32 if n_slots < 2**31 else np.int64)
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        threads = n_threads() if threads is None else threads
        parts = min(max(threads, 1), max(nnz // SLOT_ROWS_PART_CELLS, 1))
        bounds = column_blocks(codes.indptr, max(1, -(-(nnz + a.n_columns) // parts)))
        # Cells of each row in each column block; block j of row r starts after blocks < j.
        cursors = np.zeros((bounds.size - 1, n), dtype=np.int64)
        run_blocks(lambda j: row_counts(codes.indptr, codes.indices, bounds[j], bounds[j + 1],
                                        cursors[j]), bounds.size - 1, threads)
        np.cumsum(cursors.sum(axis=0), out=self.indptr[1:])
        start = self.indptr[:-1].copy()
        for part in cursors:  # counts become starts, in place
            count = part.copy()
            part[:] = start
            start += count
        del start

        def block(j: int) -> None:
            slot_rows(codes.indptr, codes.indices, codes.data, a.offsets, bounds[j],
                      bounds[j + 1], cursors[j], self.slots)

        run_blocks(block, len(cursors), threads)
        self.starts, self.stops = self.indptr[:-1], self.indptr[1:]
        self.cells_per_row = nnz / max(n, 1)


class DistanceOracle:
    """Distances from one column to all columns of a :class:`DiscreteMatrix`, on demand.

    A greedy step needs ``d(u, v)`` for the newly added ``u`` and every candidate ``v``: the
    oracle gathers only the rows where ``u`` is non-zero, counts the codes of every column on
    them, and fills the joint tables in closed form. ``backend="numba"`` runs compiled
    kernels (cached on disk after the first compile) over column blocks whose count tables
    stay in cache, on as many threads as numba is set to use (the same bits with any number);
    ``"numpy"`` is the pure numpy/scipy path; ``"auto"`` takes numba when it imports
    (``CORESELECT_NUMBA=0`` turns it off). Both give the same numbers up to float rounding,
    and the greedy's tie rule makes them select the same.
    """

    def __init__(self, a: DiscreteMatrix, backend: Backend = "auto"):
        self.matrix = a
        self.entropies = entropy(a)
        self.use_numba = _numba_enabled(backend)
        self.backend = "numba" if self.use_numba else "numpy"
        self._table = self._seen = None  # a marked step's scratch (_distances_marked)
        if self.use_numba:
            self._side = _Marginals(a)
            self._rows = SlotRows(a)

    def distances_from(self, u: int) -> np.ndarray:
        """``d(u, v)`` for every column ``v`` (``d(u, u) = 0``)."""
        a = self.matrix
        if self.use_numba:
            return self._distances_compiled(int(u))
        h_uv = _joint_entropy_sparse(a.take([u]), a)[0]
        return distance_from_entropies(h_uv, self.entropies[u], self.entropies)

    def _distances_compiled(self, u: int, sums: tuple | None = None) -> np.ndarray:
        """Two phases, each split over threads: the counts of ``u``'s codes with every slot,
        gathered from disjoint parts of ``u``'s rows into one table per part and added up
        (integers: exact in any order), then the closed-form fill of disjoint column blocks;
        then the greedy's ``sums`` (see :meth:`add_distances_from`) when given."""
        from coreselect.core._numba import add_distances as add_sums
        from coreselect.core._numba import distances_block, gather_counts
        from coreselect.core._threads import n_threads, run_blocks

        a, side, rows = self.matrix, self._side, self._rows
        codes = a.codes
        lo, hi = codes.indptr[u], codes.indptr[u + 1]
        u_rows, u_codes = codes.indices[lo:hi], codes.data[lo:hi]
        n_codes = max(int(a.n_codes[u]) - 1, 0)
        n_slots = int(side.offsets[-1])
        threads = n_threads() if (hi - lo) * rows.cells_per_row >= THREADED_MIN_CELLS else 1
        # The slots each part saw: the fill reads the table only for columns that have one.
        # Worth a byte store per cell only while the cells are fewer than the slots (sparse
        # data, where most columns share no row with u); past that nearly every column is
        # touched and the marks cost a seventh of a step for nothing (the 26 M fit).
        mark = (hi - lo) * rows.cells_per_row < MARK_CELLS_PER_SLOT * n_slots
        # A greedy step on one thread marks whatever its size: its one pass over the
        # columns adds the sums too, which pays for the marks.
        if threads == 1 and (mark or sums is not None):
            return self._distances_marked(u, u_rows, u_codes, n_codes, sums)
        dtype = np.int32 if a.n_samples < 2**31 else np.int64
        tables = [np.zeros(max(n_codes * n_slots, 1), dtype) for _ in range(threads)]
        seen = [np.zeros(n_slots if mark else 0, np.uint8) for _ in range(threads)]
        cut = np.linspace(0, hi - lo, threads + 1).astype(np.int64)

        def gather(j: int) -> None:
            if n_codes:
                part = slice(cut[j], cut[j + 1])
                gather_counts(u_rows[part], u_codes[part], rows.starts, rows.stops, rows.slots,
                              None, side.offsets, 0, 1, n_slots, tables[j], seen[j])

        run_blocks(gather, threads, threads)
        table = tables[0]
        for other in tables[1:]:
            table += other
        for other in seen[1:]:
            seen[0] |= other
        out = np.empty(a.n_columns)
        u_counts = side.code_counts[side.offsets[u]:side.offsets[u + 1]]
        h_u = float(self.entropies[u])
        cols = np.linspace(0, a.n_columns, threads + 1).astype(np.int64)

        def fill(j: int) -> None:
            v_lo, v_hi = cols[j], cols[j + 1]
            distances_block(v_lo, v_hi, table, False, n_codes, u_counts, h_u, side.offsets,
                            side.code_counts, side.nonzero_counts, side.base, self.entropies,
                            side.xl, seen[0], out[v_lo:v_hi])

        run_blocks(fill, threads, threads)
        if sums is not None:  # one pass after the fill, on this thread
            add_sums(out, h_u, self.entropies, *sums)
        return out

    def _distances_marked(self, u: int, u_rows: np.ndarray, u_codes: np.ndarray,
                          n_codes: int, sums: tuple | None = None) -> np.ndarray:
        """A small step on one thread (sparse data: ``u`` meets few slots): the table and the
        marks persist between steps, and the fill clears what the gather wrote, so a step
        costs what ``u``'s rows touch plus one pass over the columns, which also adds the
        greedy's ``sums`` (see :meth:`add_distances_from`)."""
        from coreselect.core._numba import add_distance_step, gather_marked

        a, side, rows = self.matrix, self._side, self._rows
        n_slots = int(side.offsets[-1])
        size = max(n_codes * n_slots, 1)
        if self._table is None or self._table.size < size:
            self._table = np.zeros(size, np.int32 if a.n_samples < 2**31 else np.int64)
            # Padded to whole 8-byte words: the fill finds the marks a word at a time.
            self._seen_words = np.zeros(-(-n_slots // 8), np.uint64)
            self._seen = self._seen_words.view(np.uint8)
            self._done = np.zeros(a.n_columns, np.uint8)
            self._owner = a.expanded_owner
        if n_codes:
            gather_marked(u_rows, u_codes, rows.starts, rows.stops, rows.slots, n_codes,
                          self._table, self._seen)
        diversity, information, copies, copy_atol = sums or (_EMPTY_F, _EMPTY_F, _EMPTY_B, 0.0)
        out = np.empty(a.n_columns)
        add_distance_step(self._table, n_codes,
                          side.code_counts[side.offsets[u]:side.offsets[u + 1]],
                          float(self.entropies[u]), side.offsets, self._owner,
                          side.code_counts, side.nonzero_counts, side.base, self.entropies,
                          side.xl, self._seen, self._seen_words, self._done, out,
                          diversity, information, copies, float(copy_atol))
        return out

    def add_distances_from(self, u: int, diversity: np.ndarray,
                           information: np.ndarray | None = None,
                           copies: np.ndarray | None = None,
                           copy_atol: float = 0.0) -> np.ndarray:
        """:meth:`distances_from`, also added to a greedy's sums in place: ``diversity +=
        d(u, .)``, ``information += I(u; .)`` (when given, as :func:`shared_information`),
        ``copies |= d(u, .) <= copy_atol`` (when given). Returns the distances. A small
        compiled step does it all in its pass over the columns (the same bits as the numpy
        sums)."""
        u = int(u)
        if self.use_numba:
            return self._distances_compiled(u, (
                diversity, _EMPTY_F if information is None else information,
                _EMPTY_B if copies is None else copies, float(copy_atol)))
        dist = self.distances_from(u)
        add_distances(dist, float(self.entropies[u]), self.entropies, diversity, information,
                      copies, copy_atol)
        return dist
