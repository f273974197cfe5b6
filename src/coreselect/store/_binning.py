"""Binning from per-column value counts: what lets a store be built from row chunks in two
passes (pass 1 counts, pass 2 codes) without holding a column over all rows.

Every rule of :mod:`coreselect.core.discretize` is a function of a column's *value
histogram* (its distinct values with the number of samples holding each, zeros included) and
of ``n``: equal values share a bin, equal-frequency bins cut the cumulative counts, small bins
merge by counts. So :class:`ColumnCounts` gathers exact ``(column, value) -> count`` over the
chunks (mergeable: counts add, in any order and any split over workers), and
:func:`bin_table` turns them into the code of every distinct value with the same helpers the
in-memory discretization uses: the codes are those of ``discretize`` on the whole matrix.

The cap (a documented sketch): a column with more than ``cap`` distinct values (continuous
data) keeps its values truncated to :data:`SKETCH_BITS` significant bits of the mantissa (a
relative precision of 2^-SKETCH_BITS, a fixed grid like DDSketch's, so rounding commutes with
merging: the result does not depend on how the rows were cut into chunks or spread over
workers). Such a column is binned on the truncated values: values that share a grid cell
share a bin, so only values within 2^-SKETCH_BITS (relative) of a cut point may land one bin
off the in-memory build. A column is sketched exactly when its distinct values over all rows
exceed the cap, whatever the split. Counts take at most ``min(nnz, d * (cap + 1))`` entries
(plus one chunk's worth pending), sketched columns at most a few thousand cells each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import (
    _relabel_to_mode, _split_bins, effective_min_bin_count, flip_label_columns, resolve_n_bins,
)
from coreselect.errors import InputError

#: Largest direct lookup array (columns x value range) of a table of integer values.
LOOKUP_CELLS = 1 << 25
#: Exact distinct values kept per column before it is sketched.
DEFAULT_CAP = 1 << 14
#: Significant mantissa bits a sketched column keeps (relative precision 2^-10 ~ 0.1 %).
SKETCH_BITS = 10
_MASK = np.int64(~((1 << (52 - SKETCH_BITS)) - 1))


def truncate(values: np.ndarray) -> np.ndarray:
    """``values`` (float64) with all but :data:`SKETCH_BITS` mantissa bits cleared: monotone
    (never reorders), idempotent, 0 stays 0."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    return (v.view(np.int64) & _MASK).view(np.float64)


#: Small integer values (counts) are counted in a dense ``columns x SMALL_WIDTH`` table of the
#: values ``SMALL_LO ..`` while it holds at most ``SMALL_CELLS`` cells (int64: 32 MiB).
SMALL_LO = -8
SMALL_WIDTH = 32
SMALL_CELLS = 1 << 22
#: Integer values spanning at most this many steps are keyed by their offset (no float sort).
_INT_SPAN = 1 << 20


def _int_span(vals: np.ndarray) -> tuple[float, int] | None:
    """``(lo, span)`` when every value is an integer within ``_INT_SPAN`` steps of ``lo``."""
    if vals.size == 0:
        return 0.0, 1
    lo, hi = float(vals.min()), float(vals.max())
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi - lo >= _INT_SPAN:
        return None
    if not np.array_equal(vals, np.floor(vals)):
        return None
    return lo, int(hi - lo) + 1


def _group(cols: np.ndarray, vals: np.ndarray, counts: np.ndarray):
    """Distinct ``(col, val)`` pairs sorted by column then value, counts summed.

    One integer key per cell, ``col * G + rank of the value`` (the rank is the value's offset
    for small-range integers such as counts, else its rank among the distinct values), then
    a counting pass when the keys are dense or one integer sort: the same result as a
    lexicographic sort of (col, val), several times faster."""
    if cols.size == 0:
        return cols.astype(np.int64), vals.astype(np.float64), counts.astype(np.int64)
    span = _int_span(vals)
    if span is not None:
        lo, G = span
        rank = (vals - lo).astype(np.int64)
        value_of = None
    else:
        value_of, rank = np.unique(vals, return_inverse=True)
        G = value_of.size
        rank = rank.astype(np.int64).ravel()
    key = cols.astype(np.int64) * G + rank
    n_keys = (int(cols.max()) + 1) * G
    if n_keys <= 4 * key.size + (1 << 20):
        w = np.bincount(key, weights=counts, minlength=n_keys)
        u_key = np.flatnonzero(np.bincount(key, minlength=n_keys))
        u_counts = np.rint(w[u_key]).astype(np.int64)
    else:
        order = np.argsort(key, kind="stable")
        k = key[order]
        new = np.ones(k.size, dtype=bool)
        new[1:] = k[1:] != k[:-1]
        starts = np.flatnonzero(new)
        u_key = k[starts]
        u_counts = np.add.reduceat(counts[order], starts).astype(np.int64)
    u_cols, u_rank = np.divmod(u_key, G)
    u_vals = u_rank + lo if value_of is None else value_of[u_rank]
    return u_cols, u_vals.astype(np.float64), u_counts


def _cells(X) -> tuple[np.ndarray, np.ndarray]:
    """(column, value) of every non-zero cell of a chunk (sparse or dense)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)  # no copy for CSR: the column of a cell is its index
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        cols = X.indices.astype(np.int64)
        vals = np.asarray(X.data, dtype=np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
        mask = X != 0
        cols = np.broadcast_to(np.arange(X.shape[1], dtype=np.int64), X.shape)[mask]
        vals = X[mask]
    keep = vals != 0
    return cols[keep], vals[keep]


def check_values(vals: np.ndarray, strategy: str) -> None:
    """The checks of :func:`~coreselect.core.discretize.discretize`, with its messages."""
    if vals.size and not np.all(np.isfinite(vals)):
        raise InputError("the data contain NaN or infinite values")
    if strategy == "none" and vals.size and np.any(vals != np.round(vals)):
        raise InputError('strategy="none" needs integer codes, but the data hold fractional values')


@dataclass
class ColumnCounts:
    """Exact non-zero value counts per column (sorted by column, value), mergeable, with the
    per-column cap of the module docstring. Zeros are not stored: ``n_rows`` minus a column's
    counted cells."""

    d: int = 0
    n_rows: int = 0
    cap: int = DEFAULT_CAP
    cols: np.ndarray = None  # type: ignore[assignment]
    vals: np.ndarray = None  # type: ignore[assignment]
    counts: np.ndarray = None  # type: ignore[assignment]
    sketched: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.cols is None:
            self.cols = np.zeros(0, np.int64)
            self.vals = np.zeros(0, np.float64)
            self.counts = np.zeros(0, np.int64)
        if self.sketched is None:
            self.sketched = np.zeros(self.d, dtype=bool)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_size = 0
        self._small: np.ndarray | None = None  # the dense table of small integer values
        self._small_cells = 0

    def _widen(self, d: int) -> None:
        if d > self.d:
            self.sketched = np.concatenate([self.sketched, np.zeros(d - self.d, bool)])
            self.d = d

    def add_chunk(self, X, strategy: str = "auto") -> None:
        """Count the non-zero values of a row chunk (its columns are columns ``0 ..``)."""
        self._widen(X.shape[1])
        self.n_rows += X.shape[0]
        if sp.issparse(X) and X.shape[1] * SMALL_WIDTH <= SMALL_CELLS:
            # Count data: small integers straight into the dense table (compiled), the
            # other cells (if any) by the general path below.
            X = sp.csr_matrix(X)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            from coreselect.store._numba_counts import count_small

            if self._small is None or self._small.shape[0] < X.shape[1]:
                self.flush()
                self._small = np.zeros((X.shape[1], SMALL_WIDTH), np.int64)
            data = np.asarray(X.data, dtype=np.float64)
            rest = np.zeros(data.size, dtype=bool)
            n_rest = count_small(X.indices, data, self._small, float(SMALL_LO), rest)
            self._small_cells += data.size - n_rest
            if self._small_cells > 1 << 40:  # far from int64's limit: fold it in
                self.flush()
            if not n_rest:
                return
            cols, vals = X.indices[rest].astype(np.int64), data[rest]
        else:
            cols, vals = _cells(X)
        check_values(vals, strategy)
        self._add(cols, vals, np.ones(cols.size, np.int64))

    def _add(self, cols, vals, counts) -> None:
        self._pending.append(_group(cols, vals, counts))
        self._pending_size += cols.size
        if self._pending_size > max(self.cols.size, 1 << 20):  # amortized: linear in all
            self.flush()

    def shift_columns(self, by: int) -> None:
        """Columns ``j`` become ``j - by`` (counts of indices as written, once the base is
        known); the first ``by`` columns must hold nothing."""
        self.flush()
        if self.cols.size and int(self.cols.min()) < by:
            raise ValueError("shift_columns would drop counted columns")
        self.cols = self.cols - by
        self.sketched = self.sketched[by:]
        self.d = max(self.d - by, 0)

    def merge(self, other: "ColumnCounts") -> "ColumnCounts":
        """Add the counts of ``other`` (rows of other files) to these."""
        other.flush()
        self._widen(other.d)
        other._widen(self.d)
        self.sketched |= other.sketched
        self.n_rows += other.n_rows
        self._pending.append((other.cols, other.vals, other.counts))
        self._pending_size += other.cols.size
        self.flush()
        return self

    def _fold_small(self) -> None:
        """The dense table's counts as pending entries (then zeroed)."""
        if self._small is None or not self._small_cells:
            return
        c, v = np.nonzero(self._small)
        self._pending.append((c.astype(np.int64), (v + SMALL_LO).astype(np.float64),
                              self._small[c, v].astype(np.int64)))
        self._pending_size += c.size
        self._small[:] = 0
        self._small_cells = 0

    def flush(self) -> None:
        self._fold_small()
        if not self._pending:
            return
        parts = [(self.cols, self.vals, self.counts)] + self._pending
        self._pending, self._pending_size = [], 0
        cols = np.concatenate([p[0] for p in parts])
        vals = np.concatenate([p[1] for p in parts])
        counts = np.concatenate([p[2] for p in parts])
        del parts
        while True:
            sk = self.sketched[cols]
            if sk.any():
                vals = vals.copy()
                vals[sk] = truncate(vals[sk])
            cols, vals, counts = _group(cols, vals, counts)
            over = (np.bincount(cols, minlength=self.d) > self.cap) & ~self.sketched
            if not over.any():
                break
            self.sketched |= over
        self.cols, self.vals, self.counts = cols, vals, counts

    def __getstate__(self) -> dict:
        self.flush()
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._pending, self._pending_size = [], 0
        self._small, self._small_cells = None, 0


@dataclass
class BinTable:
    """The code of every distinct non-zero value of every column (sorted by column, value),
    each column's code of zero, number of codes, and whether its values are truncated."""

    cols: np.ndarray
    vals: np.ndarray
    codes: np.ndarray
    zero_code: np.ndarray
    n_codes: np.ndarray
    sketched: np.ndarray

    def __post_init__(self) -> None:
        # One integer key per (column, value): the value's offset for small-range integers
        # (counts), with a direct lookup array when columns x values are few; else its rank
        # among all distinct values, looked up with one searchsorted. No per-column loop.
        d = self.n_codes.size
        self._span = _int_span(self.vals)
        if self._span is not None:
            lo, G = self._span
            rank = (self.vals - lo).astype(np.int64)
            self._uniq = None
        else:
            self._uniq = np.unique(self.vals)
            G = max(self._uniq.size, 1)
            rank = np.searchsorted(self._uniq, self.vals)
        self._G = G
        self._keys = self.cols * G + rank
        self._lookup = None
        if d * G <= LOOKUP_CELLS:
            self._lookup = np.full(d * G, -1, dtype=np.int32)
            self._lookup[self._keys] = self.codes

    def encode(self, cols: np.ndarray, vals: np.ndarray) -> np.ndarray:
        """The codes of non-zero cells ``(cols, vals)``; :class:`InputError` for a value the
        counting pass did not see (the data changed between the passes)."""
        vals = np.asarray(vals, dtype=np.float64)
        sk = self.sketched[cols]
        if sk.any():
            vals = vals.copy()
            vals[sk] = truncate(vals[sk])
        G = self._G
        if self._uniq is None:
            lo = self._span[0]
            off = vals - lo
            rank = off.astype(np.int64)
            ok = (off >= 0) & (off < G) & (rank == off)
        else:
            rank = np.searchsorted(self._uniq, vals)
            ok = rank < self._uniq.size
            rank = np.minimum(rank, max(self._uniq.size - 1, 0))
            if self._uniq.size:
                ok &= self._uniq[rank] == vals
        keys = cols * G + np.where(ok, rank, 0)
        if self._lookup is not None:
            out = self._lookup[keys]
            ok &= out >= 0
        else:
            at = np.minimum(np.searchsorted(self._keys, keys), max(self._keys.size - 1, 0))
            if self._keys.size:
                ok &= self._keys[at] == keys
            else:
                ok[:] = False
            out = self.codes[at] if self.codes.size else np.zeros(keys.size, np.int64)
        if not ok.all():
            raise InputError("the data changed between the build's two passes (a value the "
                             "first pass did not count)")
        return out

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__post_init__()


def bin_table(counts: ColumnCounts, n_bins: int | str, strategy: str, min_bin_count: int
              ) -> BinTable:
    """Codes of every distinct value by the rules of :mod:`coreselect.core.discretize`, from
    the value counts alone (the same steps as its numpy path after grouping; ``n_bins="auto"``
    by the rows counted)."""
    counts.flush()
    n, d = counts.n_rows, counts.d
    n_bins = resolve_n_bins(n_bins, n)
    per_col = np.bincount(counts.cols, weights=counts.counts, minlength=d).astype(np.int64)
    zeros = n - per_col
    zc = np.flatnonzero(zeros > 0)
    u_col, u_val, u_w = _group(np.concatenate([counts.cols, zc]),
                               np.concatenate([counts.vals, np.zeros(zc.size)]),
                               np.concatenate([counts.counts, zeros[zc]]))
    u_start = np.searchsorted(u_col, np.arange(d + 1))
    n_distinct = np.diff(u_start)
    bins = np.arange(u_col.size) - u_start[u_col]  # rule 1: one bin per distinct value
    split = n_distinct > n_bins if strategy != "none" else np.zeros(d, dtype=bool)
    if split.any():
        bins = _split_bins(u_col, u_val, u_w, u_start, split, n, n_bins, strategy,
                           effective_min_bin_count(min_bin_count, n, n_bins), bins)
    # Relabel so that code 0 is the most frequent bin (lowest bin on a tie) of each column.
    u_code, n_codes = _relabel_to_mode(u_col, bins, u_w, d)
    is_zero_value = u_val == 0
    zero_code = np.zeros(d, dtype=np.int64)
    zero_code[u_col[is_zero_value]] = u_code[is_zero_value]
    keep = ~is_zero_value
    return BinTable(u_col[keep], u_val[keep], u_code[keep], zero_code, n_codes,
                    counts.sketched.copy())


def encode_rows(table: BinTable, X, d: int, position: np.ndarray, a: int = 0,
                b: int | None = None) -> sp.csc_matrix | None:
    """:func:`encode_chunk` of rows ``a .. b`` of a CSR chunk by the compiled kernel, when the
    table allows it (small-range integer values with a direct lookup, no sketched column, every
    zero coded 0), else None. No copy of the rows; int32 codes, as the general path's."""
    if (not sp.isspmatrix_csr(X) or table._lookup is None or table._uniq is not None
            or X.shape[1] > d or table.sketched.any() or table.zero_code.any()):
        return None
    from coreselect.store._numba_counts import encode_rows as kernel

    b = X.shape[0] if b is None else b
    if not X.has_canonical_format:
        return None
    n_cells = int(X.indptr[b] - X.indptr[a])
    ptr = np.zeros(d + 1, dtype=np.int64)
    rows = np.empty(n_cells, dtype=np.int32)
    codes = np.empty(n_cells, dtype=np.int32)
    nnz = kernel(X.indptr, X.indices, np.asarray(X.data, dtype=np.float64), a, b, table._lookup,
                 float(table._span[0]), int(table._G), np.asarray(position, dtype=np.int64),
                 np.empty(n_cells, dtype=np.int32), ptr, rows, codes)
    if nnz < 0:
        return None
    idx_dtype = np.int32 if nnz < 2**31 else np.int64
    out = sp.csc_matrix((codes[:nnz], rows[:nnz], ptr.astype(idx_dtype)), shape=(b - a, d))
    out.has_sorted_indices = True
    return out


def encode_chunk(table: BinTable, X, d: int, position: np.ndarray | None = None
                 ) -> sp.csc_matrix:
    """The codes (CSC, sorted, code 0 implicit) of a row chunk ``X`` with ``d`` columns (a
    narrower chunk is padded with zero columns), column ``j`` put at ``position[j]`` (the
    store's column order; default: in place)."""
    m = X.shape[0]
    position = np.arange(d, dtype=np.int64) if position is None else position
    special = np.flatnonzero(table.zero_code != 0)  # their zeros are coded: written out
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        cols = X.indices.astype(np.int64)
        rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(X.indptr))
        vals = X.data
        nz = vals != 0
        if not nz.all():
            cols, rows, vals = cols[nz], rows[nz], vals[nz]
        codes = table.encode(cols, vals)
        if special.size:
            dense = np.broadcast_to(table.zero_code[special], (m, special.size)).copy()
            slot = np.full(d, -1, dtype=np.int64)
            slot[special] = np.arange(special.size)
            inside = slot[cols] >= 0
            dense[rows[inside], slot[cols[inside]]] = codes[inside]
            r, c = np.nonzero(dense)
            keep = ~inside
            rows = np.concatenate([rows[keep], r])
            cols = np.concatenate([cols[keep], special[c]])
            codes = np.concatenate([codes[keep], dense[r, c]])
    else:
        X = np.asarray(X, dtype=np.float64)
        if X.shape[1] < d:
            X = np.hstack([X, np.zeros((m, d - X.shape[1]))])
        full = np.broadcast_to(table.zero_code, (m, d)).copy()
        mask = X != 0
        full[mask] = table.encode(np.broadcast_to(np.arange(d, dtype=np.int64), (m, d))[mask],
                                  X[mask])
        rows, cols = np.nonzero(full)
        codes = full[rows, cols]
    keep = codes != 0
    out = sp.csc_matrix((codes[keep], (rows[keep], position[cols[keep]])), shape=(m, d))
    out.sort_indices()
    return out


def _spread(indptr: np.ndarray, columns: np.ndarray, d: int) -> np.ndarray:
    """The indptr of a ``d``-column matrix whose only non-empty columns are ``columns``,
    holding the columns of ``indptr`` in that order."""
    counts = np.zeros(d, dtype=np.int64)
    counts[columns] = np.diff(indptr)
    out = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def label_ones(Y) -> np.ndarray:
    """The number of ones of each label of a chunk, after checking it is 0/1."""
    Y = sp.csc_matrix(Y, dtype=np.float64)
    if Y.data.size and not np.all(np.isfinite(Y.data)):
        raise InputError("the labels contain NaN or infinite values")
    if Y.data.size and not np.all((Y.data == 0) | (Y.data == 1)):
        raise InputError("labels must be binary (0/1)")
    Y.eliminate_zeros()
    return np.diff(Y.indptr).astype(np.int64)


def encode_labels(Y, flip: np.ndarray) -> sp.csc_matrix:
    """A chunk's label codes: 1 where on, except in labels on in more than half of all samples
    (``flip``), where code 1 means off (as :func:`~coreselect.core.discretize.discretize_labels`)."""
    L = flip.size
    Y = sp.csc_matrix(Y, dtype=np.int8)
    Y.eliminate_zeros()
    if Y.shape[1] < L:
        Y = sp.csc_matrix((Y.data, Y.indices, np.concatenate(
            [Y.indptr, np.full(L - Y.shape[1], Y.indptr[-1])])), shape=(Y.shape[0], L))
    cols = np.flatnonzero(flip)
    if cols.size:
        Y = flip_label_columns(Y, cols)
    Y.sort_indices()
    return Y
