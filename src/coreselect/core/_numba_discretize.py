"""Compiled discretization (numba, ``nogil``, cached on disk): the rules of
:mod:`coreselect.core.discretize`, one column at a time, in one function.

The vectorized numpy path of that module ranks every value of a block of columns with one
global sort; here each column sorts only its own values, which is what makes it several
times faster on wide sparse data: short columns by insertion, long ones by numpy beforehand
(:func:`sort_plan` names them, :func:`pad_columns` lays them out as rows of one width for a
vectorized sort), integer columns of a small range by counting. Both paths produce the same
codes, bit for bit (the tests compare them on random data). Integer counts are exact, and the
only floating-point step (the ``uniform`` bin of a value) is the same IEEE expression in the
same order.

One function with two phases, so that a run loads one kernel from the cache, not two:

* phase 0 (**codes**): the code of every stored cell of columns ``lo <= j < hi``, each
  column's number of codes, the code of its implicit zeros (sparse input, not always 0) and
  the number of cells the output will store;
* phase 1 (**write**): the output's rows and codes (CSC order) at ``out_ptr``.

Columns are independent, so column ranges can run on several threads with the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit

STRATEGY_CODES = {"auto": 0, "quantile": 1, "uniform": 2, "none": 3}
#: Columns of at most this many stored values are sorted by insertion.
INSERTION_MAX = 32


@njit(cache=True, nogil=True)
def discretize_columns(phase, lo, hi, indptr, rows, vals, n, is_sparse, n_bins, strategy,
                       min_count, cell_code, n_codes, zero_code, out_count, out_ptr,
                       out_rows, out_codes, presorted, flags):  # pragma: no cover
    """Phase 0 or 1 (module docstring) on columns ``lo <= j < hi`` of a CSC matrix
    (``indptr``, ``rows``, ``vals``; ``rows`` empty: a dense column-major block, row
    ``t - indptr[j]``). ``cell_code`` is indexed like ``vals``; the other outputs by column.
    The columns :func:`sort_plan` flags (``flags[j] == 1``) come sorted in ``presorted``
    (indexed like ``vals``; numpy's vectorized sort is several times numba's)."""
    # Scratch for the largest column of the range, reused by every column: a wide sparse
    # matrix has tens of thousands of small columns, where a dozen allocations per column
    # cost more than the binning itself.
    width = 0
    if phase == 0:
        for j in range(lo, hi):
            width = max(width, indptr[j + 1] - indptr[j])
    u_val_buf = np.empty(width + 1)
    u_w_buf = np.zeros(width + 1, dtype=np.int64)
    g_buf = np.empty(width, dtype=np.int64)
    sorted_buf = np.empty(width)
    run_code = np.empty(width + 1, dtype=np.int64)
    run_top = np.empty(width + 1)
    bins_buf = np.empty(width + 1, dtype=np.int64)
    code_buf = np.empty(width + 1, dtype=np.int64)
    count_buf = np.zeros(width + 1, dtype=np.int64)
    split_buf = np.empty((2, width + 1), dtype=np.int64)  # _split's per-group raw bin, part
    nb = min(n_bins, width + 1)  # a split column has more than n_bins groups
    bin_buf = np.empty((4, nb), dtype=np.int64)  # _split's per-bin tables
    for j in range(lo, hi):
        s = indptr[j]
        e = indptr[j + 1]
        if phase == 1:
            _write(j, s, e, indptr, rows, n, cell_code, zero_code[j], out_ptr[j], out_rows,
                   out_codes)
            continue
        m = e - s
        if m == 0 and is_sparse:
            # No stored cell (most columns of wide text data): one code, 0, for every row,
            # and nothing to write; as the general path gives, without its allocations.
            n_codes[j] = 1 if n > 0 else 0
            zero_code[j] = 0
            out_count[j] = 0
            continue
        z = n - m if is_sparse else 0  # implicit zeros (never stored: see discretize)
        x = vals[s:e]
        # Distinct values (sorted) with their weights; the implicit zeros are one more value.
        u_val = u_val_buf[:m + 1]
        u_w = u_w_buf[:m + 1]
        u_w[:] = 0
        g_of = g_buf[:m]  # group of each cell, by position in the column
        counted, lo_v, span = _counted(x)
        if counted:
            G, zero_g = _groups_counted(x, z, lo_v, span, u_val, u_w, g_of)
        else:
            if flags.size > 0 and flags[j] == 1:
                ordered = presorted[s:e]
            else:
                ordered = sorted_buf[:m]
                _sort_into(x, ordered)
            G, zero_g = _groups_sorted(ordered, z, u_val, u_w)
        bins = bins_buf[:G]
        for g in range(G):
            bins[g] = g  # rule 1: one bin per distinct value
        if strategy != 3 and G > n_bins:
            _split(u_val, u_w, G, n, n_bins, strategy, min_count, bins, split_buf, bin_buf)
        # Relabel: code 0 is the most frequent bin (the lowest on a tie).
        nc = 0
        for g in range(G):
            nc = max(nc, bins[g] + 1)
        count = count_buf[:nc]
        count[:] = 0
        for g in range(G):
            count[bins[g]] += u_w[g]
        mode = 0
        for b in range(nc):
            if count[b] > count[mode]:
                mode = b
        code = code_buf[:G]
        for g in range(G):
            b = bins[g]
            code[g] = 0 if b == mode else (mode if b == 0 else b)
        stored = 0
        if counted:
            for t in range(m):
                c = code[g_of[t]]
                cell_code[s + t] = c
                if c != 0:
                    stored += 1
        else:
            # A sorted column's cells find their code by value: a binary search over the runs
            # of groups that share a code (as many as the bins), not over the groups.
            runs = 0
            for g in range(G):
                if runs > 0 and code[g] == run_code[runs - 1]:
                    run_top[runs - 1] = u_val[g]
                else:
                    run_code[runs] = code[g]
                    run_top[runs] = u_val[g]
                    runs += 1
            for t in range(m):
                v = x[t]
                a = 0
                b = runs - 1
                while a < b:  # the first run whose largest value is at least v
                    mid = (a + b) >> 1
                    if run_top[mid] < v:
                        a = mid + 1
                    else:
                        b = mid
                c = run_code[a]
                cell_code[s + t] = c
                if c != 0:
                    stored += 1
        zc = code[zero_g] if zero_g >= 0 and z > 0 else 0
        zero_code[j] = zc
        out_count[j] = stored + (z if zc != 0 else 0)
        n_codes[j] = nc


@njit(cache=True, nogil=True)
def _counted(x):  # pragma: no cover
    """(whether the column's distinct values are found by counting, its min, its span):
    integers over a span small enough to count; else the column is sorted."""
    lo_v, span = _integer_span(x)
    return span >= 0 and span <= 2 * x.size + 16, lo_v, span


@njit(cache=True, nogil=True)
def sort_plan(lo, hi, indptr, vals, flags):  # pragma: no cover
    """``flags[j] = 1`` for the columns ``lo <= j < hi`` that :func:`discretize_columns` would
    sort with more than :data:`INSERTION_MAX` values: the caller sorts them with numpy."""
    for j in range(lo, hi):
        s = indptr[j]
        e = indptr[j + 1]
        flags[j] = 1 if e - s > INSERTION_MAX and not _counted(vals[s:e])[0] else 0


@njit(cache=True, nogil=True)
def pad_columns(cols, indptr, vals, padded):  # pragma: no cover
    """Row ``r`` of ``padded`` = the values of column ``cols[r]``, then ``inf`` (sorted last)."""
    width = padded.shape[1]
    for r in range(cols.size):
        s = indptr[cols[r]]
        m = indptr[cols[r] + 1] - s
        for t in range(m):
            padded[r, t] = vals[s + t]
        for t in range(m, width):
            padded[r, t] = np.inf


@njit(cache=True, nogil=True)
def unpad_columns(cols, indptr, padded, out):  # pragma: no cover
    """The inverse of :func:`pad_columns` into ``out`` (indexed like the values)."""
    for r in range(cols.size):
        s = indptr[cols[r]]
        for t in range(indptr[cols[r] + 1] - s):
            out[s + t] = padded[r, t]


@njit(cache=True, nogil=True)
def _integer_span(x):  # pragma: no cover
    """(min, max - min) of ``x`` when all its values are integers (counts, codes, 0/1) and
    the span is small enough to count; else (0, -1)."""
    if x.size == 0:
        return 0.0, -1
    lo = x[0]
    hi = x[0]
    for v in x:
        if v != np.floor(v):
            return 0.0, -1
        lo = min(lo, v)
        hi = max(hi, v)
    if hi - lo > 1 << 30:
        return 0.0, -1
    return lo, np.int64(hi - lo)


@njit(cache=True, nogil=True)
def _groups_counted(x, z, lo, span, u_val, u_w, g_of):  # pragma: no cover
    """Distinct values of an integer column by counting (no sort): as :func:`_groups_sorted`."""
    count = np.zeros(span + 1, dtype=np.int64)
    for v in x:
        count[np.int64(v - lo)] += 1
    group = np.empty(span + 1, dtype=np.int64)
    G = 0
    zero_g = -1
    for k in range(span + 1):
        if count[k] == 0:
            continue
        v = lo + k  # exact: integers in a range below 2**30
        if z > 0 and zero_g < 0 and v > 0:
            zero_g = G
            u_val[G] = 0.0
            u_w[G] = z
            G += 1
        u_val[G] = v
        u_w[G] = count[k]
        group[k] = G
        G += 1
    if z > 0 and zero_g < 0:
        zero_g = G
        u_val[G] = 0.0
        u_w[G] = z
        G += 1
    for t in range(x.size):
        g_of[t] = group[np.int64(x[t] - lo)]
    return G, zero_g


@njit(cache=True, nogil=True)
def _groups_sorted(ordered, z, u_val, u_w):  # pragma: no cover
    """The distinct values of a column, given sorted (``ordered``), in increasing order
    (``u_val``) with their numbers of samples (``u_w``) and, with ``z`` implicit zeros
    (sparse input: none stored), the zero as one more group; returns (groups, the zero's
    group or -1)."""
    G = 0
    zero_g = -1
    for v in ordered:
        if z > 0 and zero_g < 0 and v > 0:
            zero_g = G
            u_val[G] = 0.0
            u_w[G] = z
            G += 1
        if G == 0 or v != u_val[G - 1] or G - 1 == zero_g:
            u_val[G] = v
            G += 1
        u_w[G - 1] += 1
    if z > 0 and zero_g < 0:
        zero_g = G
        u_val[G] = 0.0
        u_w[G] = z
        G += 1
    return G, zero_g


@njit(cache=True, nogil=True)
def _sort_into(x, ordered):  # pragma: no cover
    """``ordered`` = ``x`` sorted, by insertion: the short columns (at most
    :data:`INSERTION_MAX` values, most of a wide sparse matrix's), where it needs no
    allocation and beats a general sort's set-up; the longer ones come sorted by numpy
    (:func:`sort_plan`)."""
    m = x.size
    for i in range(m):
        v = x[i]
        k = i
        while k > 0 and ordered[k - 1] > v:
            ordered[k] = ordered[k - 1]
            k -= 1
        ordered[k] = v


@njit(cache=True, nogil=True)
def _write(j, s, e, indptr, rows, n, cell_code, zc, at, out_rows, out_codes):  # pragma: no cover
    dense = rows.size == 0
    if zc == 0:
        for t in range(s, e):
            c = cell_code[t]
            if c != 0:
                out_rows[at] = t - s if dense else rows[t]
                out_codes[at] = c
                at += 1
        return
    # Sparse column whose implicit zeros are not code 0: every row is written, in row order.
    t = s
    for r in range(n):
        if t < e and rows[t] == r:
            c = cell_code[t]
            t += 1
        else:
            c = zc
        if c != 0:
            out_rows[at] = r
            out_codes[at] = c
            at += 1


@njit(cache=True, nogil=True)
def _split(u_val, u_w, G, n, n_bins, strategy, min_count, bins, split_buf,
           bin_buf):  # pragma: no cover
    """Bins of a column with more than ``n_bins`` distinct values (rules 2 to 4), in the
    caller's scratch (``split_buf``: 2 rows of at least ``G``; ``bin_buf``: 4 rows of at least
    ``n_bins``)."""
    col_min = u_val[0]
    col_max = u_val[G - 1]
    zero_w = 0
    for g in range(G):
        if u_val[g] == 0:
            zero_w = u_w[g]
    zero_bin = strategy == 0 and col_min >= 0 and zero_w * 2 > n  # the values, not the format
    q = n_bins - 1 if zero_bin else n_bins
    raw = split_buf[0, :G]
    part = split_buf[1, :G]
    raw[:] = 0
    total = 0
    for g in range(G):
        if zero_bin and u_val[g] == 0:
            part[g] = 0
        else:
            part[g] = 1
            total += u_w[g]
    if strategy == 2:
        width = col_max - col_min if col_max > col_min else 1.0
        for g in range(G):
            raw[g] = min(np.int64(np.floor(n_bins * (u_val[g] - col_min) / width)), n_bins - 1)
    else:
        before = 0
        tot = max(total, 1)
        for g in range(G):
            if part[g]:
                raw[g] = (q * before) // tot
                before += u_w[g]
    # Compress empty bins, then merge small ones (as _merge_small_bins, on one row).
    counts = bin_buf[0, :n_bins]
    compact = bin_buf[1, :n_bins]
    table = bin_buf[2, :n_bins]
    mapping = bin_buf[3, :n_bins]
    counts[:] = 0
    compact[:] = 0
    table[:] = 0
    for g in range(G):
        if part[g]:
            counts[raw[g]] += u_w[g]
    nb = 0
    for b in range(n_bins):
        compact[b] = nb - 1 if counts[b] == 0 else nb
        if counts[b] > 0:
            table[nb] = counts[b]
            nb += 1
    for b in range(n_bins):
        mapping[b] = b
    while nb > 1:
        j = -1
        for b in range(nb):
            if table[b] < min_count and (j < 0 or table[b] < table[j]):
                j = b
        if j < 0:
            break
        big = np.iinfo(np.int64).max
        left = table[j - 1] if j > 0 else big
        right = table[j + 1] if j + 1 < nb else big
        go_left = j > 0 and left <= right
        target = j - 1 if go_left else j + 1
        table[target] += table[j]
        for b in range(j, nb - 1):
            table[b] = table[b + 1]
        table[nb - 1] = 0
        for b in range(n_bins):
            mb = mapping[b]
            if mb > j:
                mapping[b] = mb - 1
            elif mb == j and go_left:
                mapping[b] = j - 1
        nb -= 1
    shift = 1 if zero_bin else 0
    for g in range(G):
        bins[g] = mapping[compact[raw[g]]] + shift if part[g] else 0
