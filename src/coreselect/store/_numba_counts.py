"""Compiled kernels of the store build's counting pass (numba, cached on disk).

:func:`count_small` adds the non-zero cells of a CSR chunk whose value is a small integer
(count data: the common case) straight into a dense ``columns x values`` table, and flags
the others (fractions, large or non-finite values) for the general path of
:class:`coreselect.store._binning.ColumnCounts`. Counting is exact integer arithmetic, so the
totals are the general path's, whatever the chunk (tests/test_store_ingest.py compares both
with counts written from the definition).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def count_small(indices, data, table, lo, rest):  # pragma: no cover - compiled
    """``table[col, v - lo] += 1`` for every cell with an integer value ``v`` in
    ``[lo, lo + table.shape[1])``, zeros skipped; ``rest[k]`` set for every other non-zero
    cell (NaN included). Returns the number of such cells."""
    width = table.shape[1]
    n_rest = 0
    for k in range(indices.size):
        v = data[k]
        if v == 0.0:
            continue
        off = v - lo
        if off >= 0.0 and off < width:
            i = int(off)
            if i == off:
                table[indices[k], i] += 1
                continue
        rest[k] = True
        n_rest += 1
    return n_rest


@njit(cache=True, nogil=True)
def encode_rows(indptr, indices, data, r0, r1, lookup, lo, width, position, codes,
                out_ptr, out_rows, out_codes):  # pragma: no cover - compiled
    """The codes of CSR rows ``r0 .. r1`` as a CSC matrix (``out_ptr`` of ``d + 1`` zeros,
    rows ascending in each column, code 0 left out), column ``j`` put at ``position[j]``;
    a value is looked up as ``lookup[j * width + (v - lo)]`` (-1: not counted). ``codes``:
    scratch of one int per cell. Returns the non-zero codes, or -1 when a value is not in
    the table (the caller's general path reports it)."""
    base = indptr[r0]
    for r in range(r0, r1):
        for p in range(indptr[r], indptr[r + 1]):
            v = data[p]
            c = 0
            if v != 0.0:
                off = v - lo
                if not (off >= 0.0 and off < width):
                    return -1
                i = int(off)
                if i != off:
                    return -1
                c = lookup[indices[p] * width + i]
                if c < 0:
                    return -1
                if c != 0:
                    out_ptr[position[indices[p]] + 1] += 1
            codes[p - base] = c
    d = out_ptr.size - 1
    for j in range(d):
        out_ptr[j + 1] += out_ptr[j]
    fill = out_ptr[:-1].copy()
    for r in range(r0, r1):
        for p in range(indptr[r], indptr[r + 1]):
            c = codes[p - base]
            if c != 0:
                j = position[indices[p]]
                out_rows[fill[j]] = r - r0
                out_codes[fill[j]] = c
                fill[j] += 1
    return out_ptr[d]
