"""Compiled entropy kernels (numba, cached on disk after the first compile).

Imported only when numba is available; :mod:`coreselect.core.entropy` has a pure
numpy/scipy path for everything here, and the tests check that both agree.

The core is :func:`_joint_row`: joint entropies ``H(u, v)`` of one column ``u`` with every
column ``v`` of a matrix ``B``, given ``u``'s non-zero rows and codes and ``B``'s codes in
CSR form (column ``v`` and code ``c >= 1`` of a cell are the slot ``offsets[v] + c - 1``).
Index and code arrays are taken in whatever integer type they are stored (no int64 copies). Columns of ``B`` that never share a row with ``u`` have the
"independent" table, which needs only marginals; the others are fixed up from the counts
gathered on ``u``'s rows. Cost: O(cols(B)) + O(cells of B on u's rows).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# entropy.ZERO_ENTROPY (not imported: entropy.py imports this module lazily)
ZERO_ENTROPY = 1e-12


@njit(cache=True, nogil=True)
def _joint_row(u_rows, u_codes, a, u_counts, indptr, cols, codes, offsets, code_counts,
               nonzero_counts, base, xl, work, colmark, touched, out):  # pragma: no cover
    n = xl.size - 1
    log2n = np.log2(n)
    nnz_u = 0
    base_u = 0.0
    for i in range(a):
        nnz_u += u_counts[i]
        base_u += xl[u_counts[i]]
    # Gather co-occurrence counts on u's rows; remember which columns of B they touch.
    n_touched = 0
    for t in range(u_rows.size):
        r = u_rows[t]
        i = u_codes[t] - 1
        for e in range(indptr[r], indptr[r + 1]):
            v = cols[e]
            slot = offsets[v] + codes[e] - 1
            work[slot * a + i] += 1
            if colmark[v] == 0:
                colmark[v] = 1
                touched[n_touched] = v
                n_touched += 1
    # Columns sharing no row with u: the table is made of marginals only.
    for v in range(out.size):
        zero_zero = n - nnz_u - nonzero_counts[v]
        if zero_zero < 0:
            zero_zero = 0  # only possible for touched columns, fixed below
        s = base[v] + base_u + xl[zero_zero]
        h = log2n - s / n
        out[v] = h if h >= ZERO_ENTROPY else 0.0
    # Touched columns: every cell from the gathered counts and the marginals.
    row_sums = np.zeros(max(a, 1), dtype=np.int64)
    for k in range(n_touched):
        v = touched[k]
        colmark[v] = 0
        s = 0.0
        together = 0
        for i in range(a):
            row_sums[i] = 0
        for slot in range(offsets[v], offsets[v + 1]):
            col_sum = 0
            b = slot * a
            for i in range(a):
                c = work[b + i]
                s += xl[c]
                col_sum += c
                row_sums[i] += c
                work[b + i] = 0
            s += xl[code_counts[slot] - col_sum]
            together += col_sum
        for i in range(a):
            s += xl[u_counts[i] - row_sums[i]]
        s += xl[n - nnz_u - nonzero_counts[v] + together]
        h = log2n - s / n
        out[v] = h if h >= ZERO_ENTROPY else 0.0


@njit(cache=True, nogil=True)
def distances_from_column(u_rows, u_codes, a, u_counts, h_u, indptr, cols, codes, offsets,
                          code_counts, nonzero_counts, base, entropies, xl, work, colmark,
                          touched):  # pragma: no cover
    """``d(u, v) = (2 H(u,v) - H(u) - H(v)) / H(u,v)`` (0 where H(u,v) = 0), clipped to [0, 1]."""
    out = np.empty(offsets.size - 1)
    _joint_row(u_rows, u_codes, a, u_counts, indptr, cols, codes, offsets, code_counts,
               nonzero_counts, base, xl, work, colmark, touched, out)
    for v in range(out.size):
        h = out[v]
        if h >= ZERO_ENTROPY:
            dist = (2.0 * h - h_u - entropies[v]) / h
            out[v] = 0.0 if dist < 0.0 else (1.0 if dist > 1.0 else dist)
        else:
            out[v] = 0.0
    return out


@njit(cache=True, nogil=True)
def joint_entropy_matrix(a_indptr, a_rows, a_codes, a_ncodes, a_offsets, a_counts,
                         indptr, cols, codes, offsets, code_counts, nonzero_counts, base,
                         xl, work, colmark, touched, out):  # pragma: no cover
    """``H(a_x, b_v)`` for every column ``x`` of A (CSC codes) and ``v`` of B, into ``out``."""
    d_a = a_indptr.size - 1
    for x in range(d_a):
        lo, hi = a_indptr[x], a_indptr[x + 1]
        a = a_ncodes[x] - 1
        if a < 0:
            a = 0
        _joint_row(a_rows[lo:hi], a_codes[lo:hi], a, a_counts[a_offsets[x]:a_offsets[x + 1]],
                   indptr, cols, codes, offsets, code_counts, nonzero_counts, base, xl,
                   work, colmark, touched, out[x])


@njit(cache=True, nogil=True)
def lower_gains(column, active, n_active, low, high, gains):  # pragma: no cover
    """A label's threshold rose from ``low`` to ``high``: lower the gains of the active
    candidates by ``clip(MI, low, high) - low`` and keep those still above ``high`` (in place,
    at the front of ``active``). Returns how many stay active."""
    kept = 0
    for t in range(n_active):
        v = active[t]
        m = column[v]
        if m > low:
            gains[v] -= (m if m < high else high) - low
            if m > high:
                active[kept] = v
                kept += 1
    return kept


@njit(cache=True, nogil=True)
def cooccurrence_counts(a_indptr, a_rows, a_codes, a_offsets, b_indptr, b_cols, b_codes,
                        b_offsets, out):  # pragma: no cover
    """Add to ``out[slot_a, slot_b]`` the number of rows where column ``x`` of A (CSC) has code
    ``i >= 1`` and column ``v`` of B (CSR) code ``j >= 1`` (slots as in :func:`_joint_row`)."""
    for x in range(a_indptr.size - 1):
        for t in range(a_indptr[x], a_indptr[x + 1]):
            r = a_rows[t]
            sa = a_offsets[x] + a_codes[t] - 1
            for e in range(b_indptr[r], b_indptr[r + 1]):
                v = b_cols[e]
                out[sa, b_offsets[v] + b_codes[e] - 1] += 1


@njit(cache=True, nogil=True)
def step_counts_dense(u_rows, u_codes, indptr, cols, codes, offsets, out):  # pragma: no cover
    """Add to ``out[i - 1, slot]`` the rows where ``u`` has code ``i >= 1`` and the slot's
    column its code (B's codes in CSR form, slots as in :func:`_joint_row`)."""
    for t in range(u_rows.size):
        r = u_rows[t]
        i = u_codes[t] - 1
        for e in range(indptr[r], indptr[r + 1]):
            out[i, offsets[cols[e]] + codes[e] - 1] += 1
