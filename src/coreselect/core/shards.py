"""Count tables of a row shard, their merge, and the statistics and distances they give.

Every statistic of the objective is an entropy of a count table, and count tables add over
rows. Once every column's cut points are fixed over all rows (:func:`discretize`, so a code
means the same bin in every shard and code 0 is the column's global mode), the run needs:

* :class:`ShardCounts` of each row shard: its number of rows, the count of every
  (feature, code >= 1) and (label, code >= 1) slot, and the feature x label co-occurrence
  counts of non-zero codes. :func:`merge` adds two of them; the merge of all shards is the
  table of all rows (an exact, associative and commutative sum of integers).
* per greedy step, :func:`step_counts` of each shard: the co-occurrences of the new feature
  ``u``'s non-zero codes with every (feature, code >= 1) slot, an ``(a_u x slots)`` table
  (a few bytes per column, whatever the number of rows). Their sum gives
  every joint table ``H(u, v)`` in closed form (:func:`distances_from_counts`), as in
  :mod:`coreselect.core.entropy`.

:class:`RowShardedOracle` has the interface of :class:`~coreselect.core.entropy.DistanceOracle`
(``distances_from(u)``, ``use_numba``, ``backend``), so the greedy runs on it unchanged;
engines only decide where shards live and how the per-step sum is taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix, slot_offsets
from coreselect.core.entropy import (
    Backend, Relevance, _numba_enabled, column_blocks, distance_from_entropies,
    relevance_from_entropies, row_access, xlogx_table, zero_small,
)


def xlogx(c: np.ndarray) -> np.ndarray:
    """``c * log2(c)`` elementwise (0 for ``c = 0``), the same floats as ``xlogx_table``."""
    c = np.asarray(c, dtype=np.float64)
    out = np.zeros_like(c)
    pos = c > 0
    out[pos] = c[pos] * np.log2(c[pos])
    return out


@dataclass(eq=False)
class ShardCounts:
    """Count tables of some rows (a shard, or the merge of several).

    ``feature_codes`` / ``label_codes`` are the (global) numbers of codes per column, which
    fix the slot layout; ``joint[s, t]`` counts rows with feature slot ``s`` and label slot
    ``t`` (both codes >= 1).
    """

    n_samples: int
    feature_codes: np.ndarray
    label_codes: np.ndarray
    feature_counts: np.ndarray
    label_counts: np.ndarray
    joint: np.ndarray

    def __add__(self, other: "ShardCounts") -> "ShardCounts":
        return merge(self, other)

    def __iadd__(self, other: "ShardCounts") -> "ShardCounts":
        """``merge(self, other)`` into this object's own tables: a reducer that owns its
        running total adds each shard's tables without allocating the whole joint table
        again (a seventh of the counts pass over a store's eight row blocks)."""
        _check_mergeable(self, other)
        self.n_samples += other.n_samples
        self.feature_counts += other.feature_counts
        self.label_counts += other.label_counts
        self.joint += other.joint
        return self

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShardCounts) and self.n_samples == other.n_samples
                and all(np.array_equal(getattr(self, f), getattr(other, f)) for f in
                        ("feature_codes", "label_codes", "feature_counts", "label_counts",
                         "joint")))


def _check_mergeable(a: ShardCounts, b: ShardCounts) -> None:
    if not (np.array_equal(a.feature_codes, b.feature_codes)
            and np.array_equal(a.label_codes, b.label_codes)):
        raise ValueError("count tables of differently discretized columns cannot be merged")


def merge(a: ShardCounts, b: ShardCounts) -> ShardCounts:
    """The count tables of the rows of ``a`` and ``b`` together."""
    _check_mergeable(a, b)
    return ShardCounts(a.n_samples + b.n_samples, a.feature_codes, a.label_codes,
                       a.feature_counts + b.feature_counts, a.label_counts + b.label_counts,
                       a.joint + b.joint)


def shard_counts(features: DiscreteMatrix, labels: DiscreteMatrix,
                 backend: Backend = "auto") -> ShardCounts:
    """Count tables of one row shard (features and labels over the same rows)."""
    if features.n_samples != labels.n_samples:
        raise ValueError("features and labels of a shard have different numbers of rows")
    shape = (int(features.offsets[-1]), int(labels.offsets[-1]))
    if _numba_enabled(backend):
        from coreselect.core._numba import count_block
        from coreselect.core._threads import run_blocks

        joint = np.zeros(shape, dtype=np.int64)
        rows, codes = row_access(labels), features.codes
        bounds = column_blocks(codes.indptr)
        flat = joint.reshape(-1)

        def block(j: int) -> None:  # blocks of features fill disjoint rows of the table
            count_block(bounds[j], bounds[j + 1], codes.indptr, codes.indices, codes.data,
                        features.n_codes, features.offsets, *rows, labels.offsets, flat)

        run_blocks(block, bounds.size - 1)
    else:
        joint = np.rint((features.indicator.T @ labels.indicator).toarray()).astype(np.int64)
    return ShardCounts(features.n_samples, features.n_codes.copy(), labels.n_codes.copy(),
                       features.code_counts.copy(), labels.code_counts.copy(), joint)


@dataclass(eq=False)
class SparseShardCounts:
    """Count tables of some rows when the labels are binary and many: as :class:`ShardCounts`
    but the co-occurrences are a sparse ``(labels x feature code slots)`` matrix ``joint``
    (label ``l``'s row counts the rows with ``l = 1`` and each feature code; a constant
    label's row is empty), so they take memory per co-occurring pair, not per feature and
    label. They add over shards exactly as the dense tables do (:meth:`__add__`)."""

    n_samples: int
    feature_codes: np.ndarray
    label_codes: np.ndarray
    feature_counts: np.ndarray
    label_counts: np.ndarray
    joint: sp.csr_matrix

    def __add__(self, other: "SparseShardCounts") -> "SparseShardCounts":
        if not (np.array_equal(self.feature_codes, other.feature_codes)
                and np.array_equal(self.label_codes, other.label_codes)):
            raise ValueError("count tables of differently discretized columns cannot be merged")
        joint = (self.joint + other.joint).tocsr()
        return SparseShardCounts(self.n_samples + other.n_samples, self.feature_codes,
                                 self.label_codes, self.feature_counts + other.feature_counts,
                                 self.label_counts + other.label_counts, joint)

    def __eq__(self, other: object) -> bool:
        if not (isinstance(other, SparseShardCounts) and self.n_samples == other.n_samples
                and all(np.array_equal(getattr(self, f), getattr(other, f)) for f in
                        ("feature_codes", "label_codes", "feature_counts", "label_counts"))):
            return False
        a, b = self.joint.tocsr(), other.joint.tocsr()
        a.eliminate_zeros(), b.eliminate_zeros()
        a.sort_indices(), b.sort_indices()
        return (a.shape == b.shape and np.array_equal(a.indptr, b.indptr)
                and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data))


def sparse_shard_counts(features: DiscreteMatrix, labels: DiscreteMatrix) -> SparseShardCounts:
    """:class:`SparseShardCounts` of one row shard (binary labels): one sparse product per
    block of labels (temporaries bounded as :class:`SparseRelevance`'s)."""
    from coreselect.core.sparse_relevance import labels_are_binary, work_blocks

    if features.n_samples != labels.n_samples:
        raise ValueError("features and labels of a shard have different numbers of rows")
    if not labels_are_binary(labels):
        raise ValueError("sparse count tables need binary label columns")
    n, n_slots, L = features.n_samples, int(features.offsets[-1]), labels.n_columns
    count_type = np.int32 if n < 2**31 else np.int64
    ind_x = sp.csr_matrix(
        (np.ones(features.codes.nnz, dtype=count_type),
         (features.codes.indices, features.expanded_column)), shape=(n, n_slots))
    # (labels x rows); a binary label's only non-zero code is 1.
    lab = labels.codes.tocsc()
    ind_y = sp.csc_matrix((np.ones(lab.nnz, dtype=count_type), lab.indices, lab.indptr),
                          shape=lab.shape).T.tocsr()
    work = ind_y @ np.diff(ind_x.indptr).astype(np.float64)  # entries per label, at most
    blocks = [(ind_y[r0:r1] @ ind_x).tocsr() for r0, r1 in work_blocks(work)]
    joint = (sp.vstack(blocks, format="csr") if blocks
             else sp.csr_matrix((L, n_slots), dtype=count_type))
    joint.sort_indices()
    return SparseShardCounts(n, features.n_codes.copy(), labels.n_codes.copy(),
                             features.code_counts.copy(), labels.code_counts.copy(), joint)


def sparse_statistics(counts: SparseShardCounts, kind: Relevance = "mi") -> "Statistics":
    """:func:`statistics` of sparse counts: the relevance is a
    :class:`~coreselect.core.sparse_relevance.MergedSparseRelevance` (the marginals with the
    in-memory path's table lookups, so its numbers are the centralized sparse form's)."""
    from coreselect.core.sparse_relevance import MergedSparseRelevance

    n = counts.n_samples
    fx, fl = counts.feature_codes, counts.label_codes
    xl = xlogx_table(max(n, 1))
    owner_x, owner_l = _owner(fx), _owner(fl)
    nnz_x = np.bincount(owner_x, weights=counts.feature_counts, minlength=fx.size)
    nnz_x = np.rint(nnz_x).astype(np.int64)
    nnz_l = np.rint(np.bincount(owner_l, weights=counts.label_counts,
                                minlength=fl.size)).astype(np.int64)
    base_x = np.bincount(owner_x, weights=xl[counts.feature_counts], minlength=fx.size)
    base_l = np.bincount(owner_l, weights=xl[counts.label_counts], minlength=fl.size)

    def entropies(base: np.ndarray, nnz: np.ndarray) -> np.ndarray:  # as entropy()
        if n == 0:
            return np.zeros(base.size)
        return zero_small(np.log2(n) - (base + xl[n - nnz]) / n)

    h_x, h_l = entropies(base_x, nnz_x), entropies(base_l, nnz_l)
    count = np.where(fl >= 2, nnz_l, 0).astype(np.int64)
    joint = counts.joint.tocsr()
    joint.sum_duplicates()
    relevance = MergedSparseRelevance(n, kind, nnz_x, base_x, h_x, count, base_l, h_l,
                                      owner_x, counts.feature_counts, joint)
    return Statistics(n, fx, counts.feature_counts, nnz_x, h_x, h_l, relevance)


def _owner(n_codes: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(n_codes.size), np.maximum(n_codes - 1, 0))


def _aggregator(n_codes: np.ndarray) -> sp.csr_matrix:
    """(columns x slots) 0/1 matrix that sums each column's slots."""
    owner = _owner(n_codes)
    return sp.csr_matrix((np.ones(owner.size), (owner, np.arange(owner.size))),
                         shape=(n_codes.size, owner.size))


def column_entropies(n_samples: int, n_codes: np.ndarray, slot_counts: np.ndarray) -> np.ndarray:
    """Entropy in bits of every column from its slot counts (code 0 is what is left)."""
    if n_samples == 0:
        return np.zeros(n_codes.size)
    owner = _owner(n_codes)
    s = np.bincount(owner, weights=xlogx(slot_counts), minlength=n_codes.size)
    nonzero = np.bincount(owner, weights=slot_counts, minlength=n_codes.size)
    return zero_small(np.log2(n_samples) - (s + xlogx(n_samples - nonzero)) / n_samples)


@dataclass
class Statistics:
    """What the merged count tables give: entropies, relevance, and the marginals the
    per-step distances need."""

    n_samples: int
    n_codes: np.ndarray
    code_counts: np.ndarray
    nonzero_counts: np.ndarray
    entropies: np.ndarray
    label_entropies: np.ndarray
    relevance: np.ndarray  # or a MergedSparseRelevance (sparse_statistics)

    @property
    def n_columns(self) -> int:
        return int(self.n_codes.size)

    @cached_property
    def offsets(self) -> np.ndarray:
        return slot_offsets(self.n_codes)

    @cached_property
    def owner(self) -> np.ndarray:
        return _owner(self.n_codes)

    @cached_property
    def xl(self) -> np.ndarray:
        return xlogx_table(self.n_samples)

    @cached_property
    def base(self) -> np.ndarray:
        """``sum_j f(m_v[j])`` of every column, as the in-memory kernels compute it."""
        return np.bincount(self.owner, weights=self.xl[self.code_counts],
                           minlength=self.n_columns)

    @property
    def is_constant(self) -> np.ndarray:
        return self.n_codes <= 1


def statistics(counts: ShardCounts, kind: Relevance = "mi",
               backend: Backend = "auto") -> Statistics:
    """Entropies and the relevance matrix (as :func:`relevance_matrix`) from merged counts.

    ``H(x, l)`` of every pair comes in closed form from the co-occurrences ``N`` of non-zero
    codes and the marginals: ``N[i, 0] = m_x[i] - sum_j N[i, j]``, ``N[0, j] = m_l[j] -
    sum_i N[i, j]``, ``N[0, 0] = n - nnz(x) - nnz(l) + sum N``. The compiled path is the
    in-memory kernel's own fill, so a row-sharded run gets the in-memory numbers bit for bit.
    """
    n = counts.n_samples
    fx, fl = counts.feature_codes, counts.label_codes
    h_x = column_entropies(n, fx, counts.feature_counts)
    h_l = column_entropies(n, fl, counts.label_counts)
    ax, al = _aggregator(fx), _aggregator(fl)
    nnz_x = np.rint(ax @ counts.feature_counts.astype(np.float64)).astype(np.int64)
    nnz_l = np.rint(al @ counts.label_counts.astype(np.float64)).astype(np.int64)
    if n == 0:
        h_xl = np.zeros((fx.size, fl.size))
    elif _numba_enabled(backend):
        h_xl = _joint_from_counts(counts, nnz_l)
    else:
        joint = counts.joint
        cells = ax @ (al @ xlogx(joint).T).T  # sum over i, j >= 1 of f(N[i, j])
        row_sum = (al @ joint.T).T  # (slots_x, L): sum_j N[i, j]
        cells += ax @ xlogx(counts.feature_counts[:, None] - row_sum)
        col_sum = ax @ joint.astype(np.float64)  # (d, slots_l): sum_i N[i, j]
        col_sum = np.rint(col_sum).astype(np.int64)
        cells += (al @ xlogx(counts.label_counts[None, :] - col_sum).T).T
        together = np.rint(ax @ row_sum.astype(np.float64)).astype(np.int64)
        cells += xlogx(n - nnz_x[:, None] - nnz_l[None, :] + together)
        h_xl = zero_small(np.log2(n) - cells / n)
    return Statistics(n, fx, counts.feature_counts, nnz_x, h_x, h_l,
                      relevance_from_entropies(h_x, h_l, np.asarray(h_xl, dtype=np.float64),
                                               kind))


def _joint_from_counts(counts: ShardCounts, nnz_l: np.ndarray) -> np.ndarray:
    """``H(x, l)`` of every pair from merged counts with the compiled fill (threads over
    disjoint blocks of features)."""
    from coreselect.core._numba import joint_from_counts_block
    from coreselect.core._threads import run_blocks

    n = counts.n_samples
    xl = xlogx_table(n)
    fx, fl = counts.feature_codes, counts.label_codes
    x_offsets, l_offsets = slot_offsets(fx), slot_offsets(fl)
    base = np.bincount(_owner(fl), weights=xl[counts.label_counts], minlength=fl.size)
    out = np.empty((fl.size, fx.size)).T  # column-major, as the in-memory kernel's
    flat = np.ascontiguousarray(counts.joint).reshape(-1)
    bounds = np.linspace(0, fx.size, min(64, max(fx.size, 1)) + 1).astype(np.int64)

    def block(j: int) -> None:
        joint_from_counts_block(bounds[j], bounds[j + 1], flat, fx, x_offsets,
                                counts.feature_counts, l_offsets, counts.label_counts, nnz_l,
                                base, xl, out)

    run_blocks(block, bounds.size - 1)
    return out


def step_counts(features: DiscreteMatrix, u: int, backend: Backend = "auto") -> np.ndarray:
    """Co-occurrences, on this shard's rows, of column ``u``'s codes ``i >= 1`` (rows) with
    every (column, code >= 1) slot (columns): a dense int64 ``(a_u x slots)`` table.

    Dense, because a feature worth selecting is non-zero on many rows, which touch most slots
    (measured: a sparse form was as large and its conversion cost more than the count)."""
    a = max(int(features.n_codes[u]) - 1, 0)
    codes = features.codes
    lo, hi = codes.indptr[u], codes.indptr[u + 1]
    if a == 0 or hi == lo:
        return np.zeros((a, int(features.offsets[-1])), dtype=np.int64)
    rm = features.row_major
    return step_counts_rows(codes.indices[lo:hi], codes.data[lo:hi], rm.indptr, rm.indices,
                            rm.data, features.offsets, a, backend)


def step_counts_rows(rows: np.ndarray, u_codes: np.ndarray, indptr: np.ndarray,
                     cols: np.ndarray, codes: np.ndarray, offsets: np.ndarray, a: int,
                     backend: Backend = "auto") -> np.ndarray:
    """:func:`step_counts` from what it reads: the ``rows`` where ``u`` is non-zero with
    their codes, and the shard's codes in CSR form (``indptr``, column ``cols``, ``codes``;
    any order within a row). A shard kept on disk passes only column ``u`` and a mapped
    CSR, so a step never reads the whole tile."""
    n_slots = int(offsets[-1])
    table = np.zeros((a, n_slots), dtype=np.int64)
    if a == 0 or rows.size == 0:
        return table
    if _numba_enabled(backend):
        from coreselect.core._numba import gather_counts
        from coreselect.core._threads import n_threads, run_blocks
        from coreselect.core.entropy import THREADED_MIN_CELLS

        indptr = np.asarray(indptr)
        starts, stops = indptr[:-1], indptr[1:]
        # Both cores: disjoint parts of u's rows, one table per part, added in part order
        # (integers: the same counts whatever the number of threads). A step gathers millions
        # of cells from a shard with u frequent; one thread did all of them (the rows runs).
        cells = int((indptr[rows + 1] - indptr[rows]).sum())
        threads = n_threads() if cells >= THREADED_MIN_CELLS else 1
        cut = np.linspace(0, rows.size, threads + 1).astype(np.int64)
        # Parts in int32 while they cannot overflow: half the table to keep in cache (a
        # fifth off the step). One thread counts straight into the result.
        small = np.int32 if rows.size < 2**31 else np.int64
        tables = ([table] if threads == 1
                  else [np.zeros_like(table, dtype=small) for _ in range(threads)])
        none = np.zeros(0, dtype=np.uint8)

        def gather(j: int) -> None:
            part = slice(cut[j], cut[j + 1])
            gather_counts(rows[part], u_codes[part], starts, stops, cols, codes, offsets, 0, 1,
                          n_slots, tables[j].reshape(-1), none)

        run_blocks(gather, threads, threads)
        if threads > 1:
            for part_table in tables:
                table += part_table
        return table
    starts, stops = indptr[rows], indptr[rows + 1]
    lengths = (stops - starts).astype(np.int64)
    # Positions of the gathered cells, without a Python loop over rows.
    pos = np.repeat(stops - np.cumsum(lengths), lengths) + np.arange(int(lengths.sum()))
    slots = offsets[cols[pos]] + codes[pos].astype(np.int64) - 1
    slots += np.repeat((u_codes.astype(np.int64) - 1) * n_slots, lengths)
    return np.bincount(slots, minlength=a * n_slots).reshape(a, n_slots)


def distances_from_counts(stats: Statistics, u: int, co: np.ndarray,
                          backend: Backend = "auto") -> np.ndarray:
    """``d(u, v)`` for every column ``v`` from the merged :func:`step_counts` of ``u``."""
    n = stats.n_samples
    d = stats.n_columns
    if n == 0:
        return np.zeros(d)
    co = np.asarray(co.toarray() if sp.issparse(co) else co, dtype=np.int64)
    if _numba_enabled(backend):
        return _distances_compiled(stats, u, co)
    offsets = stats.offsets
    m_u = stats.code_counts[offsets[u]:offsets[u + 1]]
    owner = stats.owner
    m_b = stats.code_counts
    # Cells with i, j >= 1, and the column remainders N[0, j] = m_b[j] - sum_i N[i, j].
    per_slot = xlogx(m_b - co.sum(axis=0))
    for i in range(co.shape[0]):
        per_slot += xlogx(co[i])
    s = np.bincount(owner, weights=per_slot, minlength=d)
    # Row remainders N[i, 0] = m_u[i] - sum_{j in v} N[i, j].
    together = np.zeros(d, dtype=np.int64)
    for i in range(co.shape[0]):
        row_sum = np.rint(np.bincount(owner, weights=co[i], minlength=d)).astype(np.int64)
        s += xlogx(m_u[i] - row_sum)
        together += row_sum
    nnz_u = int(m_u.sum())
    s += xlogx(n - nnz_u - stats.nonzero_counts + together)
    h_uv = zero_small(np.log2(n) - s / n)
    return distance_from_entropies(h_uv, stats.entropies[u], stats.entropies)


def _distances_compiled(stats: Statistics, u: int, co: np.ndarray) -> np.ndarray:
    """The in-memory oracle's fill (:func:`coreselect.core._numba.distances_block`) on the
    summed counts: the same numbers, bit for bit, as :class:`DistanceOracle` gives."""
    from coreselect.core._numba import distances_block

    offsets = stats.offsets
    a = max(int(stats.n_codes[u]) - 1, 0)
    out = np.empty(stats.n_columns)
    co = np.ascontiguousarray(co)
    # The slots with a count, as the in-memory gather marks them: the fill skips the rest.
    seen = np.any(co, axis=0).view(np.uint8)
    distances_block(0, stats.n_columns, co.reshape(-1), False, a,
                    stats.code_counts[offsets[u]:offsets[u + 1]], float(stats.entropies[u]),
                    offsets, stats.code_counts, stats.nonzero_counts, stats.base,
                    stats.entropies, stats.xl, seen, out)
    return out


class RowShardedOracle:
    """Distances from one column to all columns when the rows live in shards.

    ``step(u)`` must return the sum over all shards of :func:`step_counts` for ``u`` (an
    engine's map-reduce); the rest is closed-form arithmetic on the merged marginals. Same
    interface as :class:`~coreselect.core.entropy.DistanceOracle`.
    """

    def __init__(self, stats: Statistics, step: Callable[[int], np.ndarray],
                 backend: Backend = "auto"):
        self.stats = stats
        self.entropies = stats.entropies
        self._step = step
        self.use_numba = _numba_enabled(backend)
        self.backend = "numba" if self.use_numba else "numpy"

    def distances_from(self, u: int) -> np.ndarray:
        """``d(u, v)`` for every column ``v`` (``d(u, u) = 0``)."""
        return distances_from_counts(self.stats, u, self._step(u),
                                     "numba" if self.use_numba else "numpy")
