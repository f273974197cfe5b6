"""Per-column discretization of features and labels into small integer codes.

Every statistic of coreselect is an entropy of a count table, so features are first turned
into discrete codes. The rules, applied to each column on its own (a column never needs
another column, which is what lets distributed workers bin their own blocks):

1. A column with at most ``n_bins`` distinct values is used as it is: one bin per distinct
   value. This rule comes first; such columns are never re-binned.
2. Otherwise, with ``strategy="auto"``: a non-negative column that is mostly zero (more than
   half of the samples) keeps zero as its own bin and splits its non-zero values into
   ``n_bins - 1`` equal-frequency bins; any other column gets ``n_bins`` equal-frequency bins.
   The rule reads the values only, never the container: a dense, CSR or CSC matrix of the
   same values gets the same codes (sparse text, where zero dominates, keeps its zero bin).
   ``strategy="quantile"``: ``n_bins`` equal-frequency bins over all values (zeros included).
   ``strategy="uniform"``: ``n_bins`` equal-width bins between the column's min and max.
   ``strategy="none"``: the values are already discrete integer codes and are used as they are.
3. Equal values always share a bin. Equal-frequency binning puts a distinct value ``v`` in bin
   ``floor(q * W(<v) / W)`` where ``W(<v)`` is the number of samples with a smaller value (among
   the samples being split) and ``W`` their total, ``q`` the number of bins.
4. In a split column no bin holds fewer than ``m`` samples: the smallest such bin is merged
   into its smaller neighbour (the left one on a tie) until none is left or only one bin
   remains. The zero bin of rule 2 is never merged, so a word seen in three documents ends
   up as present/absent rather than with three bins of its own. ``m`` is ``min_bin_count``,
   shrunk on tiny data so that a split column keeps at least two bins:
   ``m = min(min_bin_count, max(1, n // (2 * n_bins)))`` (:func:`effective_min_bin_count`),
   a bin need never hold more than half an equal-frequency bin's share. With five bins and
   ``min_bin_count=10`` it changes nothing from ``n = 100`` samples on.

``n_bins="auto"`` (the default) is decided by the rows being binned (:func:`resolve_n_bins`):
three bins below :data:`FEW_ROWS` rows, five from there. On a few hundred rows of dense
numeric columns the conditional criterion's tables (bins x bins x label) hold a handful of
rows per cell with five bins; three bins were the better estimate on every dense set cut to
that size, five on the whole sets (docs/results/small_dense.md). The rows are known wherever
columns are binned (in memory, when a store is built, after an ingest's first pass), so every
mode decides alike.

The result, :class:`DiscreteMatrix`, stores codes in a CSC matrix in which code 0 is each
column's most frequent bin. Zero cells stay implicit, so sparse data stays sparse and all
count tables can be filled in closed form from co-occurrences of non-zero codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Literal

import numpy as np
import scipy.sparse as sp

from coreselect.errors import InputError

Strategy = Literal["auto", "quantile", "uniform", "none"]
STRATEGIES = ("auto", "quantile", "uniform", "none")


def slot_offsets(n_codes: np.ndarray) -> np.ndarray:
    """Start of each column's non-zero codes (code >= 1) in the flat "expanded" code space of
    columns with ``n_codes`` codes each; the last entry is the number of slots."""
    out = np.zeros(len(n_codes) + 1, dtype=np.int64)
    np.cumsum(np.maximum(np.asarray(n_codes, dtype=np.int64) - 1, 0), out=out[1:])
    return out


@dataclass(eq=False)
class DiscreteMatrix:
    """Discrete codes of ``d`` columns over ``n`` samples.

    Attributes
    ----------
    codes : scipy.sparse.csc_matrix of int, shape (n_samples, n_columns)
        Code of every cell; code 0 (the column's most frequent bin) is implicit.
    n_codes : ndarray of int, shape (n_columns,)
        Number of non-empty bins of each column (codes are ``0 .. n_codes - 1``).
    """

    codes: sp.csc_matrix
    n_codes: np.ndarray

    def __post_init__(self) -> None:
        self.codes = sp.csc_matrix(self.codes)
        if not self.codes.data.all():
            # A stored 0 is code 0, which every kernel takes as the cells not stored.
            self.codes = self.codes.copy()
            self.codes.eliminate_zeros()
        self.codes.sort_indices()
        self.n_codes = np.asarray(self.n_codes, dtype=np.int64)

    # -- shape -----------------------------------------------------------------------------
    @property
    def n_samples(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.codes.shape[1])

    # -- derived statistics (cached; the matrix is treated as immutable) -------------------
    @cached_property
    def offsets(self) -> np.ndarray:
        """Start of each column's non-zero codes in the flat "expanded" code space."""
        return slot_offsets(self.n_codes)

    @property
    def expanded_column(self) -> np.ndarray:
        """Expanded index (column, code >= 1) of every stored cell of ``codes`` (not cached:
        it is 8 bytes per cell)."""
        col = np.repeat(np.arange(self.n_columns), np.diff(self.codes.indptr))
        return self.offsets[col] + self.codes.data.astype(np.int64) - 1

    @cached_property
    def code_counts(self) -> np.ndarray:
        """Number of samples with each (column, code >= 1), flat in expanded order."""
        out = np.zeros(int(self.offsets[-1]), dtype=np.int64)
        indptr = self.codes.indptr
        bounds = _blocks(np.diff(indptr) + 1, BLOCK_CELLS)  # bounded temporaries
        for c0, c1 in zip(bounds[:-1], bounds[1:]):
            lo, hi = int(indptr[c0]), int(indptr[c1])
            col = np.repeat(np.arange(c0, c1), np.diff(indptr[c0:c1 + 1]))
            slot = self.offsets[col] + self.codes.data[lo:hi].astype(np.int64) - 1
            lo_slot, hi_slot = int(self.offsets[c0]), int(self.offsets[c1])
            out[lo_slot:hi_slot] += np.bincount(slot - lo_slot, minlength=hi_slot - lo_slot)
        return out

    @cached_property
    def nonzero_counts(self) -> np.ndarray:
        """Number of samples whose code is not 0, per column."""
        return np.diff(self.codes.indptr).astype(np.int64)

    @property
    def is_constant(self) -> np.ndarray:
        """Columns with a single value in every sample."""
        return self.n_codes <= 1

    @cached_property
    def expanded_owner(self) -> np.ndarray:
        """Column that owns each expanded (column, code) slot."""
        return np.repeat(np.arange(self.n_columns), np.maximum(self.n_codes - 1, 0))

    @cached_property
    def indicator(self) -> sp.csr_matrix:
        """One-hot matrix (n_samples x expanded) of the non-zero codes, CSR for row gathers (the
        pure numpy path only; the compiled kernels read :attr:`row_major`)."""
        rows = self.codes.indices
        mat = sp.csr_matrix(
            (np.ones(rows.size, dtype=np.float64), (rows, self.expanded_column)),
            shape=(self.n_samples, int(self.offsets[-1])),
        )
        mat.sort_indices()
        return mat

    @cached_property
    def row_major(self) -> sp.csr_matrix:
        """The same codes in CSR form: the one row-major view, which the distance step needs
        to gather the rows where a column is non-zero."""
        csr = self.codes.tocsr()
        csr.sort_indices()
        return csr

    def dense_codes(self) -> np.ndarray:
        """All codes as a dense (n_samples, n_columns) integer array."""
        return self.codes.toarray()

    def take(self, columns: np.ndarray | list[int]) -> "DiscreteMatrix":
        """The sub-matrix of the given columns, in the given order."""
        columns = np.asarray(columns, dtype=np.int64)
        return DiscreteMatrix(self.codes[:, columns], self.n_codes[columns])

    @classmethod
    def hstack(cls, parts: list["DiscreteMatrix"]) -> "DiscreteMatrix":
        """Columns of several matrices over the same samples, side by side."""
        return cls(
            sp.hstack([p.codes for p in parts], format="csc"),
            np.concatenate([p.n_codes for p in parts]),
        )

    @classmethod
    def from_dense_codes(cls, codes: np.ndarray) -> "DiscreteMatrix":
        """Build from a dense integer array of arbitrary codes (relabelled per column)."""
        return discretize(np.asarray(codes), strategy="none")


# ------------------------------------------------------------------------------------------
#: ``n_bins="auto"``: :data:`FEW_ROWS_BINS` bins per split column below this many rows,
#: :data:`DEFAULT_BINS` from there. Chosen leave-one-dataset-out on the dense sets cut to
#: 150-1200 rows (the threshold of training rows with the most cells won or tied, then the
#: better rank; docs/results/small_dense.md).
FEW_ROWS = 240
FEW_ROWS_BINS = 3
DEFAULT_BINS = 5
AUTO_BINS = "auto"
#: ``n_bins`` above this is refused: a bin's code is at most a 32-bit integer.
MAX_BINS = 2**31 - 1


def resolve_n_bins(n_bins: int | str, n_samples: int) -> int:
    """The bins per split column that ``n_bins`` stands for over ``n_samples`` rows: the
    integer itself, or for ``"auto"`` :data:`FEW_ROWS_BINS` below :data:`FEW_ROWS` rows and
    :data:`DEFAULT_BINS` from there.

    Raises
    ------
    InputError
        When ``n_bins`` is neither ``"auto"`` nor an integer in ``[2, MAX_BINS]``.
    """
    if isinstance(n_bins, str) and n_bins == AUTO_BINS:
        return FEW_ROWS_BINS if int(n_samples) < FEW_ROWS else DEFAULT_BINS
    whole = isinstance(n_bins, (int, np.integer, float)) and not isinstance(n_bins, bool) \
        and float(n_bins).is_integer()
    if not whole or not 2 <= int(n_bins) <= MAX_BINS:
        raise InputError(f'n_bins must be "auto" or an integer in [2, {MAX_BINS}] (codes are '
                         f"32-bit integers), got {n_bins!r}")
    return int(n_bins)


def effective_min_bin_count(min_bin_count: int, n_samples: int, n_bins: int) -> int:
    """The smallest bin of a split column over ``n_samples`` (rule 4): ``min_bin_count``, but
    at most half an equal-frequency bin's share, ``n_samples // (2 * n_bins)`` (at least 1),
    so that tiny data (scikit-learn's checks use 20 samples or fewer) keep split bins."""
    return int(min(int(min_bin_count), max(1, int(n_samples) // (2 * int(n_bins)))))


def discretize(
    X: np.ndarray | sp.spmatrix,
    n_bins: int | Literal["auto"] = AUTO_BINS,
    strategy: Strategy = "auto",
    min_bin_count: int = 10,
    backend: Literal["auto", "numba", "numpy"] = "auto",
) -> DiscreteMatrix:
    """Discretize every column of ``X`` (dense or scipy.sparse) by the rules of this module
    (``n_bins="auto"``: by the number of rows, :func:`resolve_n_bins`).

    ``backend="numba"`` sorts each column on its own in a compiled loop (several times faster
    on wide sparse data); ``"numpy"`` is the vectorized path; ``"auto"`` takes numba when it
    imports (as :mod:`coreselect.core.entropy`). Both give the same codes, bit for bit.

    Raises
    ------
    InputError
        On NaN or infinite values, on non-integer values with ``strategy="none"``, or on bad
        parameters.
    """
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    resolve_n_bins(n_bins, 0)  # refused before the data are looked at
    is_sparse = sp.issparse(X)
    if is_sparse:
        X = sp.csc_matrix(X)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if (X.data == 0).any():
            # The binning counts a column's zeros as the cells it does not store: explicitly
            # stored zeros would be binned as values and lose the zero rule. On a copy: the
            # caller's matrix is left as it was.
            X = X.copy()
            X.eliminate_zeros()
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise InputError(f"expected a 2-D matrix, got shape {X.shape}")
        if X.dtype.kind not in "biuf":
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise InputError(f"the data are not numeric: {exc}") from None
    n, d = X.shape
    n_bins = resolve_n_bins(n_bins, n)
    min_bin_count = effective_min_bin_count(min_bin_count, n, n_bins)
    from coreselect.core._backend import numba_enabled as _numba_enabled

    compiled = _numba_enabled(backend)
    # Columns are binned independently, so blocks of columns with about BLOCK_CELLS cells
    # each bound every temporary (sort keys, float copies) without any per-column Python loop.
    cells = np.diff(X.indptr) + 1 if is_sparse else np.full(d, max(n, 1))
    bounds = _blocks(cells, BLOCK_CELLS)
    indptr = np.zeros(d + 1, dtype=np.int64)
    indices, data, n_codes = [], [], []
    for c0, c1 in zip(bounds[:-1], bounds[1:]):
        if compiled:
            block = _discretize_block_compiled(X, int(c0), int(c1), n_bins, strategy,
                                               min_bin_count, is_sparse)
        else:
            block = _discretize_block(X[:, c0:c1], n_bins, strategy, min_bin_count, is_sparse)
        indptr[c0 + 1:c1 + 1] = indptr[c0] + block.indptr[1:]
        # Narrow each block at once: int64 pieces of every block would be 16 bytes per cell.
        indices.append(block.indices.astype(np.int32 if n < 2**31 else np.int64))
        data.append(block.data.astype(code_dtype(int(block.n_codes.max(initial=0)))))
        n_codes.append(block.n_codes)
        del block
    n_codes = np.concatenate(n_codes) if n_codes else np.zeros(0, dtype=np.int64)
    dtype = code_dtype(int(n_codes.max(initial=0)))
    idx_dtype = np.int32 if max(n, int(indptr[-1])) < 2**31 else np.int64
    codes = sp.csc_matrix(
        (np.concatenate(data, dtype=dtype, casting="unsafe") if data else np.zeros(0, dtype),
         np.concatenate(indices, dtype=idx_dtype, casting="unsafe") if indices
         else np.zeros(0, idx_dtype),
         indptr),
        shape=(n, d),
    )
    codes.has_sorted_indices = True
    return DiscreteMatrix(codes, n_codes)


#: Cells (stored values plus one per column) per block of columns discretized at once.
BLOCK_CELLS = 1 << 20

#: Columns of more stored values than this are sorted one by one where they land, not in
#: padded rows (whose padding would add up to their own size in memory).
PAD_MAX_WIDTH = 1 << 16


def code_dtype(max_codes: int) -> type:
    """The smallest signed integer type that holds codes ``0 .. max_codes - 1``."""
    for dtype in (np.int8, np.int16, np.int32):
        if max_codes <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _blocks(cells: np.ndarray, target: int) -> np.ndarray:
    """Bounds of consecutive column blocks of about ``target`` cells (at least one column)."""
    d = cells.size
    if d == 0:
        return np.zeros(1, dtype=np.int64)
    ends = np.searchsorted(np.cumsum(cells), np.arange(target, int(cells.sum()), target))
    bounds = np.unique(np.concatenate([[0], np.minimum(ends + 1, d), [d]]))
    return bounds.astype(np.int64)


@dataclass
class _Block:
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_codes: np.ndarray


def _check_values(vals, strategy) -> None:
    if vals.size and not np.all(np.isfinite(vals)):
        raise InputError("the data contain NaN or infinite values")
    if strategy == "none" and vals.size and np.any(vals != np.round(vals)):
        raise InputError('strategy="none" needs integer codes, but the data hold fractional values')


def _discretize_block_compiled(X, c0, c1, n_bins, strategy, min_bin_count, is_sparse) -> _Block:
    """Columns ``c0 <= j < c1`` of ``X`` (checked CSC or dense) by the compiled kernel, on the
    kernels' threads (column ranges of about equal cells; the same bits on any number)."""
    from coreselect.core._numba_discretize import STRATEGY_CODES, discretize_columns
    from coreselect.core._threads import n_threads, run_blocks

    n = X.shape[0]
    d = c1 - c0
    if is_sparse:
        lo, hi = int(X.indptr[c0]), int(X.indptr[c1])
        col_ptr = X.indptr[c0:c1 + 1].astype(np.int64) - lo
        rows = X.indices[lo:hi]
        vals = np.ascontiguousarray(X.data[lo:hi], dtype=np.float64)
    else:
        col_ptr = np.arange(d + 1, dtype=np.int64) * n
        rows = np.zeros(0, dtype=np.int32)  # dense: the row is the position in the column
        vals = np.asarray(X[:, c0:c1], dtype=np.float64).ravel(order="F")
    _check_values(vals, strategy)
    idx_dtype = np.int32 if n < 2**31 else np.int64
    cell_code = np.empty(vals.size, dtype=idx_dtype)
    n_codes = np.zeros(d, dtype=np.int64)
    zero_code = np.zeros(d, dtype=np.int64)
    out_count = np.zeros(d, dtype=np.int64)
    out_ptr = np.zeros(d + 1, dtype=np.int64)
    out_rows = np.zeros(0, dtype=idx_dtype)
    out_codes = np.zeros(0, dtype=idx_dtype)
    code = STRATEGY_CODES[strategy]
    # A few column ranges per thread: the cost of a column is not its cells (sorting), so
    # equal cells alone can leave a thread idle.
    parts = _blocks(np.diff(col_ptr) + 1, max(1, (vals.size + d) // (4 * max(1, n_threads()))
                                             + 1))

    presorted, flags = _presorted(col_ptr, vals, parts)

    def run(phase: int) -> Callable[[int], None]:
        def one(b: int) -> None:
            discretize_columns(phase, int(parts[b]), int(parts[b + 1]), col_ptr, rows, vals, n,
                               is_sparse, n_bins, code, min_bin_count, cell_code, n_codes,
                               zero_code, out_count, out_ptr, out_rows, out_codes, presorted,
                               flags)
        return one

    run_blocks(run(0), len(parts) - 1)
    np.cumsum(out_count, out=out_ptr[1:])
    out_rows = np.empty(int(out_ptr[-1]), dtype=idx_dtype)
    out_codes = np.empty(int(out_ptr[-1]), dtype=idx_dtype)
    run_blocks(run(1), len(parts) - 1)
    return _Block(out_ptr, out_rows, out_codes, n_codes)


def _presorted(col_ptr: np.ndarray, vals: np.ndarray, parts: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray]:
    """The values of the columns the compiled kernel would sort itself with a general sort
    (:func:`~coreselect.core._numba_discretize.sort_plan`), sorted by numpy instead, in rows
    of a power-of-two width padded with ``inf`` (numpy's vectorized sort of short rows is
    several times numba's; sorted values are the same whoever sorts them), on the kernels'
    threads (numpy's sort releases the GIL). Returns the sorted values indexed like ``vals``
    (only the flagged columns' ranges written) and the flags; empty arrays when none."""
    from coreselect.core._numba_discretize import pad_columns, sort_plan, unpad_columns
    from coreselect.core._threads import n_threads, run_blocks

    d = col_ptr.size - 1
    flags = np.zeros(d, dtype=np.uint8)
    run_blocks(lambda b: sort_plan(int(parts[b]), int(parts[b + 1]), col_ptr, vals, flags),
               len(parts) - 1)
    cols = np.flatnonzero(flags)
    if cols.size == 0:
        return np.zeros(0), np.zeros(0, dtype=np.uint8)
    sizes = col_ptr[cols + 1] - col_ptr[cols]
    widths = np.left_shift(1, np.ceil(np.log2(sizes)).astype(np.int64))
    presorted = np.empty(vals.size)
    cells_per_task = max(64, (1 << 16) // max(1, n_threads()))  # a few tasks per thread
    tasks = []
    for width in np.unique(widths):
        group = cols[widths == width]
        step = max(1, cells_per_task // int(width))
        tasks += [(group[a:a + step], int(width)) for a in range(0, group.size, step)]

    def sort_task(t: int) -> None:  # each task writes only its own columns' ranges
        group, width = tasks[t]
        if width > PAD_MAX_WIDTH:  # a tall column: sorted where it lands, no padded copy
            for j in group.tolist():
                column = presorted[col_ptr[j]:col_ptr[j + 1]]
                column[:] = vals[col_ptr[j]:col_ptr[j + 1]]
                column.sort()
            return
        padded = np.empty((group.size, width))
        pad_columns(group, col_ptr, vals, padded)
        padded.sort(axis=1)
        unpad_columns(group, col_ptr, padded, presorted)

    run_blocks(sort_task, len(tasks))
    return presorted, flags


def _discretize_block(X, n_bins, strategy, min_bin_count, is_sparse) -> _Block:
    """The rules of this module on some columns (their CSC codes and numbers of codes)."""
    cols, vals, weights, rows, n, d = _entries(X)
    _check_values(vals, strategy)

    # Distinct (column, value) groups with the number of samples holding each, sorted by
    # column then value, and the group of every cell.
    uniq, value_rank = _value_ranks(vals)
    key = cols * uniq.size + value_rank
    del value_rank
    if d * uniq.size <= 4 * key.size + 4096:
        # Few distinct values (counts, binary data): a counting sort, no comparison sort.
        w_full = np.bincount(key, weights=weights, minlength=d * uniq.size)
        present = np.bincount(key, minlength=d * uniq.size) > 0
        group = (np.cumsum(present) - 1)[key]
        nz = np.flatnonzero(present)
        u_col, u_val = nz // uniq.size, uniq[nz % uniq.size]
        u_w = np.rint(w_full[nz]).astype(np.int64)
        del w_full, present, nz
    else:
        order = np.argsort(key)
        new = np.ones(key.size, dtype=bool)
        s_key = key[order]
        new[1:] = s_key[1:] != s_key[:-1]
        group_of_sorted = np.cumsum(new) - 1
        u_key = s_key[new]
        u_col, u_val = u_key // uniq.size, uniq[u_key % uniq.size]
        u_w = np.bincount(group_of_sorted, weights=weights[order]).astype(np.int64)
        group = np.empty_like(group_of_sorted)
        group[order] = group_of_sorted
        del order, s_key, group_of_sorted, new
    del key
    u_start = np.searchsorted(u_col, np.arange(d + 1))
    n_distinct = np.diff(u_start)
    rank = np.arange(u_col.size) - u_start[u_col]

    bins = rank.copy()  # rule 1: a column with few distinct values keeps one bin per value
    split = n_distinct > n_bins if strategy != "none" else np.zeros(d, dtype=bool)
    if split.any():
        bins = _split_bins(u_col, u_val, u_w, u_start, split, n, n_bins, strategy,
                           min_bin_count, bins)

    u_code, n_codes = _relabel_to_mode(u_col, bins, u_w, d)

    # Map back to the cells. Virtual "implicit zero" entries have rows == -1.
    cell_code = u_code[group]
    del group
    real = rows >= 0
    keep = real & (cell_code != 0)
    out_rows, out_cols, out_codes = [rows[keep]], [cols[keep]], [cell_code[keep]]
    # Columns whose implicit zeros are not code 0 (zero is not their mode): write them out.
    virtual_code = np.zeros(d, dtype=np.int64)
    virtual_code[cols[~real]] = cell_code[~real]
    if not (is_sparse and np.any(virtual_code)):
        # Cells come in CSC order (by column, then row) and stay so: no conversion needed.
        indptr = np.zeros(d + 1, dtype=np.int64)
        np.cumsum(np.bincount(out_cols[0], minlength=d), out=indptr[1:])
        return _Block(indptr, out_rows[0], out_codes[0], n_codes)
    for j in np.flatnonzero(virtual_code):
        present = np.zeros(n, dtype=bool)
        present[X.indices[X.indptr[j]:X.indptr[j + 1]]] = True
        zrows = np.flatnonzero(~present)
        out_rows.append(zrows)
        out_cols.append(np.full(zrows.size, j))
        out_codes.append(np.full(zrows.size, virtual_code[j]))
    codes = sp.csc_matrix(
        (np.concatenate(out_codes), (np.concatenate(out_rows), np.concatenate(out_cols))),
        shape=(n, d),
    )
    codes.sort_indices()
    return _Block(codes.indptr, codes.indices, codes.data, n_codes)


def _ones_by_column(Y: np.ndarray) -> sp.csc_matrix:
    """The CSC int8 matrix of a dense 0/1 ``Y``, read label by label from its transpose (a
    third of the time scipy takes from a dense matrix, through (row, column) pairs sorted
    again by column). One temporary of a byte per cell, as the caller's 0/1 check."""
    n, n_labels = Y.shape
    ones = np.not_equal(Y.T, 0, order="C")  # written label-major, whatever Y's order
    flat = np.flatnonzero(ones)  # label-major: each label's rows come out in order
    indptr = np.zeros(n_labels + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(ones, axis=1), out=indptr[1:])
    return sp.csc_matrix((np.ones(flat.size, dtype=np.int8), flat % max(n, 1), indptr),
                         shape=(n, n_labels))


def discretize_labels(Y: np.ndarray | sp.spmatrix) -> DiscreteMatrix:
    """Check that ``Y`` is a binary (0/1) label matrix and return it as codes.

    A label column with a single value is kept (its entropy is 0, so it carries no relevance).
    """
    try:
        if sp.issparse(Y):
            Y = sp.csc_matrix(Y, dtype=np.float64)
            values = Y.data
        else:
            Y = np.asarray(Y)
            # Integer and boolean labels are checked as they are: a float64 copy of a dense
            # 60 x 800,000 int8 matrix is 384 MB for nothing.
            if Y.dtype.kind not in "biu":
                Y = np.asarray(Y, dtype=np.float64)
            values = Y.ravel()
    except (TypeError, ValueError):
        raise InputError("labels must be a numeric 0/1 matrix") from None
    if Y.ndim != 2:
        raise InputError(f"labels must be a 2-D matrix, got shape {Y.shape}")
    if Y.shape[1] == 0:
        raise InputError("there are no label columns")
    if values.size and values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise InputError("the labels contain NaN or infinite values")
    if values.size and not np.all((values == 0) | (values == 1)):
        raise InputError("labels must be binary (0/1)")
    # Binary columns need no binning: the ones are code 1, except in a label that is on in more
    # than half of the samples, where code 0 (the implicit, most frequent bin) must mean "on".
    Y = sp.csc_matrix(Y, dtype=np.int8) if sp.issparse(Y) else _ones_by_column(Y)
    Y.eliminate_zeros()
    n = Y.shape[0]
    ones = np.diff(Y.indptr)
    flip = np.flatnonzero(ones * 2 > n)
    if flip.size:
        Y = flip_label_columns(Y, flip)
    n_codes = np.where((ones == 0) | (ones == n), 1, 2)
    return DiscreteMatrix(Y, n_codes)


def flip_label_columns(Y: sp.csc_matrix, cols: np.ndarray) -> sp.csc_matrix:
    """``Y`` (0/1 codes, CSC) with the columns ``cols`` turned (1 where they were 0), stored
    zeros dropped and indices sorted. The turned columns replace the others by column
    indexing: no per-row Python objects (a LIL matrix holds two lists per row, enough to set
    off the garbage collector's full passes on every few selections)."""
    turned = sp.csc_matrix(1 - Y[:, cols].toarray(), dtype=np.int8)
    order = np.arange(Y.shape[1])
    order[cols] = Y.shape[1] + np.arange(cols.size)
    out = sp.csc_matrix(sp.hstack([Y, turned], format="csc", dtype=np.int8)[:, order])
    out.eliminate_zeros()
    out.sort_indices()
    return out


# ------------------------------------------------------------------------------------------
def _entries(X) -> tuple[np.ndarray, ...]:
    """(column, value, weight, row) of every cell of a block of columns that
    :func:`discretize` has already checked (numeric, 2-D, no stored zeros); a sparse column's
    implicit zeros become one virtual entry with the number of zero cells as weight and row -1."""
    if sp.issparse(X):
        X = sp.csc_matrix(X, dtype=np.float64)  # one block of columns only
        n, d = X.shape
        nnz = np.diff(X.indptr)
        cols = np.repeat(np.arange(d), nnz)
        zero_cols = np.flatnonzero(nnz < n)
        return (
            np.concatenate([cols, zero_cols]),
            np.concatenate([X.data, np.zeros(zero_cols.size)]),
            np.concatenate([np.ones(cols.size, dtype=np.int64), n - nnz[zero_cols]]),
            np.concatenate([X.indices.astype(np.int64), np.full(zero_cols.size, -1)]),
            n,
            d,
        )
    n, d = X.shape
    return (
        np.repeat(np.arange(d), n),
        np.asarray(X, dtype=np.float64).ravel(order="F"),
        np.ones(n * d, dtype=np.int64),
        np.tile(np.arange(n, dtype=np.int64), d),
        n,
        d,
    )


def _value_ranks(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and each value's rank among them; integer values in a small
    range (counts, codes, 0/1) are ranked by counting instead of sorting."""
    if vals.size:
        lo, hi = float(vals.min()), float(vals.max())
        if hi - lo <= 1 << 16:
            shifted = vals - lo
            ints = shifted.astype(np.int64)
            if np.array_equal(ints, shifted):
                present = np.bincount(ints) > 0
                return np.flatnonzero(present) + lo, (np.cumsum(present) - 1)[ints]
    uniq, inverse = np.unique(vals, return_inverse=True)
    return uniq, inverse.astype(np.int64).ravel()


def _relabel_to_mode(u_col: np.ndarray, bins: np.ndarray, u_w: np.ndarray, d: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the distinct values, relabelled so that code 0 is the most frequent bin of each
    column (the lowest bin on a tie; bins 0 and the mode swap), and each column's code count."""
    n_codes = np.zeros(d, dtype=np.int64)
    np.maximum.at(n_codes, u_col, bins + 1)
    base = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(n_codes, out=base[1:])
    slot_count = np.bincount(base[u_col] + bins, weights=u_w, minlength=int(base[-1]))
    mode = _segment_argmax(slot_count, base)
    u_code = bins.copy()
    is_mode = bins == mode[u_col]
    was_zero = bins == 0
    u_code[is_mode] = 0
    u_code[was_zero & ~is_mode] = mode[u_col[was_zero & ~is_mode]]
    return u_code, n_codes


def _split_bins(u_col, u_val, u_w, u_start, split, n, n_bins, strategy, min_bin_count, bins):
    """Bins of the distinct values of the columns that must be split (rules 2 to 4)."""
    d = split.size
    col_min = np.full(d, np.inf)
    col_max = np.full(d, -np.inf)
    has = u_start[:-1] < u_start[1:]
    col_min[has] = u_val[u_start[:-1][has]]
    col_max[has] = u_val[u_start[1:][has] - 1]
    zero_w = np.zeros(d, dtype=np.int64)
    zero_at = u_val == 0
    zero_w[u_col[zero_at]] = u_w[zero_at]
    zero_bin = np.zeros(d, dtype=bool)
    if strategy == "auto":
        # On the values, not the container (rule 2): dense and sparse agree.
        zero_bin = split & (col_min >= 0) & (zero_w * 2 > n)
    in_split = split[u_col]
    separate_zero = zero_bin[u_col] & zero_at  # the kept zero bin of sparse-like columns
    part = in_split & ~separate_zero  # values that are cut into bins
    q = np.where(zero_bin, n_bins - 1, n_bins)

    if strategy == "uniform":
        width = np.where(col_max > col_min, col_max - col_min, 1.0)
        raw = np.floor(n_bins * (u_val - col_min[u_col]) / width[u_col]).astype(np.int64)
        raw = np.minimum(raw, n_bins - 1)
    else:
        # Equal frequency: cumulative sample count before each distinct value, per column.
        w_part = np.where(part, u_w, 0)
        csum = np.cumsum(w_part)
        before = csum - w_part
        col_offset = np.zeros(d, dtype=np.int64)
        first = u_start[:-1][has]
        col_offset[has] = (csum - w_part)[first]
        before = before - col_offset[u_col]
        total = np.bincount(u_col, weights=w_part, minlength=d).astype(np.int64)
        raw = (q[u_col] * before) // np.maximum(total[u_col], 1)

    # Compress empty bins, then merge small bins, on a (split columns x bins) count table.
    sc = np.flatnonzero(split)
    row_of = np.full(d, -1, dtype=np.int64)
    row_of[sc] = np.arange(sc.size)
    r = row_of[u_col[part]]
    b = raw[part]
    counts = np.bincount(r * n_bins + b, weights=u_w[part], minlength=sc.size * n_bins)
    counts = counts.astype(np.int64).reshape(sc.size, n_bins)
    present = counts > 0
    compact = np.cumsum(present, axis=1) - 1  # old bin -> compressed bin
    nb = present.sum(axis=1)
    table = np.zeros_like(counts)
    rr, cc = np.nonzero(present)
    table[rr, compact[rr, cc]] = counts[rr, cc]
    mapping = _merge_small_bins(table, nb, min_bin_count)  # compressed bin -> merged bin
    merged = mapping[r, compact[r, b]]
    out = bins.copy()
    out[part] = merged + zero_bin[u_col[part]]  # the zero bin, when kept, is bin 0
    out[separate_zero] = 0
    return out


def _merge_small_bins(table: np.ndarray, nb: np.ndarray, min_count: int) -> np.ndarray:
    """Merge, row by row and all rows at once, the smallest bin below ``min_count`` into its
    smaller neighbour (left on a tie) until no such bin is left or one bin remains.

    Returns the map from each original (compressed) bin to its final bin index.
    """
    table = table.copy()
    nb = nb.copy()
    rows, width = table.shape
    mapping = np.tile(np.arange(width), (rows, 1))
    j_idx = np.arange(width)
    while True:
        valid = j_idx[None, :] < nb[:, None]
        small = valid & (table < min_count)
        act = np.flatnonzero(small.any(axis=1) & (nb > 1))
        if act.size == 0:
            return mapping
        t = table[act]
        cand = np.where(small[act], t, np.iinfo(np.int64).max)
        j = cand.argmin(axis=1)  # smallest small bin, leftmost on a tie
        ar = np.arange(act.size)
        left_ok = j > 0
        right_ok = j + 1 < nb[act]
        left = np.where(left_ok, t[ar, np.maximum(j - 1, 0)], np.iinfo(np.int64).max)
        right = np.where(right_ok, t[ar, np.minimum(j + 1, width - 1)], np.iinfo(np.int64).max)
        go_left = left_ok & (left <= right)
        target = np.where(go_left, j - 1, j + 1)
        t[ar, target] += t[ar, j]
        # Delete bin j: shift the bins right of it one place left.
        keep = j_idx[None, :] < j[:, None]
        shifted = np.concatenate([t[:, 1:], np.zeros((act.size, 1), dtype=t.dtype)], axis=1)
        table[act] = np.where(keep, t, shifted)
        m = mapping[act]
        m = np.where(m > j[:, None], m - 1, m)
        m = np.where((mapping[act] == j[:, None]) & go_left[:, None], j[:, None] - 1, m)
        mapping[act] = m
        nb[act] -= 1


def _segment_argmax(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Index within each segment ``values[bounds[i]:bounds[i+1]]`` of its first maximum."""
    n_seg = bounds.size - 1
    out = np.zeros(n_seg, dtype=np.int64)
    lengths = np.diff(bounds)
    has = lengths > 0
    if not has.any():
        return out
    seg = np.repeat(np.arange(n_seg), lengths)
    seg_max = np.full(n_seg, -np.inf)
    np.maximum.at(seg_max, seg, values)
    is_max = values == seg_max[seg]
    pos = np.arange(values.size) - bounds[seg]
    first = np.full(n_seg, np.iinfo(np.int64).max)
    np.minimum.at(first, seg[is_max], pos[is_max])
    out[has] = first[has]
    return out
