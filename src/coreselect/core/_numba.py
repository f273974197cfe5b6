"""Compiled count and entropy kernels (numba, ``nogil``, cached on disk after the first compile).

Imported only when numba is available; :mod:`coreselect.core.entropy` has a pure
numpy/scipy path for everything here, and the tests check that both agree.

Every joint entropy ``H(u, v)`` of a column ``u`` (codes ``i = 1 .. a``) with the columns ``v``
of a matrix ``B`` is two steps, shared by the in-memory, row-sharded, store and Dask paths:

1. **count**: the co-occurrences ``N[i, slot]`` of ``u``'s non-zero codes with every
   (column, code >= 1) slot of ``B`` (column ``v`` and code ``c`` is the slot
   ``offsets[v] + c - 1``), either gathered from ``B``'s rows (:func:`gather_counts`) or, when
   ``B`` has few slots (the labels), summed as bit sets (:func:`_count_bits`);
2. **fill** (:func:`_fill`): every cell of every joint table in closed form from those counts
   and the marginals, then ``H``.

Integer counts are exact in any order, and every output cell is filled by exactly one call, so
splitting the work into blocks (and running blocks on several threads) never changes a bit.
Tables are addressed as ``table[t0 + slot * s_slot + (i - 1) * s_i]``, which serves both the
slot-major scratch of a fused kernel and the ``(a x slots)`` / ``(slots_x x slots_l)`` tables
that row shards add up. Index and code arrays are taken in whatever integer type they are
stored (no int64 copies).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# entropy.ZERO_ENTROPY (not imported: entropy.py imports this module lazily)
ZERO_ENTROPY = 1e-12


# -- step 1: counts --------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def gather_counts(u_rows, u_codes, starts, stops, cols, codes, offsets, t0, s_slot, s_i,
                  table, seen):  # pragma: no cover
    """Add one to ``table[t0 + slot * s_slot + (i - 1) * s_i]`` for every cell of ``B``
    between ``starts[r]`` and ``stops[r]`` of every row ``r = u_rows[t]`` where ``u`` has code
    ``i = u_codes[t]``. ``B`` in CSR form: column ``cols[e]`` with code ``codes[e]`` (slot
    ``offsets[cols[e]] + codes[e] - 1``), or, with ``codes=None``, the slot ``cols[e]``
    itself (a row-major copy of slots: one 4-byte read per cell, no lookup). With a
    non-empty ``seen`` (one byte per slot), ``seen[slot] = 1`` for every slot counted: the
    fill then finds the columns that share a row with ``u`` without reading the table."""
    # The branches stay outside the per-cell loops (a test per cell cost a tenth of a step).
    mark = seen.size > 0
    for t in range(u_rows.size):
        r = u_rows[t]
        base = t0 + (np.int64(u_codes[t]) - 1) * s_i
        if codes is None:
            if mark:
                for e in range(starts[r], stops[r]):
                    table[base + cols[e] * s_slot] += 1
                    seen[cols[e]] = 1
            else:
                for e in range(starts[r], stops[r]):
                    table[base + cols[e] * s_slot] += 1
        else:
            base -= s_slot
            if mark:
                for e in range(starts[r], stops[r]):
                    slot = offsets[cols[e]] + codes[e]
                    table[base + slot * s_slot] += 1
                    seen[slot - 1] = 1
            else:
                for e in range(starts[r], stops[r]):
                    table[base + (offsets[cols[e]] + codes[e]) * s_slot] += 1


@njit(cache=True, nogil=True)
def row_counts(indptr, rows, col_lo, col_hi, counts):  # pragma: no cover
    """Add to ``counts[r]`` the cells of row ``r`` in columns ``col_lo <= x < col_hi`` (CSC)."""
    for t in range(indptr[col_lo], indptr[col_hi]):
        counts[rows[t]] += 1


@njit(cache=True, nogil=True)
def slot_rows(indptr, rows, codes, offsets, col_lo, col_hi, cursor, slots):  # pragma: no cover
    """Write the slot of every cell of columns ``col_lo <= x < col_hi`` of a CSC code matrix
    into its row of a row-major copy (``slots``), at ``cursor[r]`` (advanced). Column blocks
    with disjoint cursors can run at once; within a row the slots stay in column order."""
    for x in range(col_lo, col_hi):
        base = offsets[x] - 1
        for t in range(indptr[x], indptr[x + 1]):
            r = rows[t]
            slots[cursor[r]] = base + codes[t]
            cursor[r] += 1


@njit(cache=True, nogil=True)
def slot_bits(indptr, rows, codes, offsets, bits):  # pragma: no cover
    """Set bit ``slot`` of row ``r`` in ``bits`` (``(n, ceil(slots / 64))`` uint64) for every
    non-zero cell of a CSC code matrix."""
    for v in range(indptr.size - 1):
        for t in range(indptr[v], indptr[v + 1]):
            s = offsets[v] + codes[t] - 1
            bits[rows[t], s >> 6] |= np.uint64(1) << np.uint64(s & 63)


_LOW_BITS = np.uint64(0x0101010101010101)


@njit(cache=True, nogil=True)
def _count_bits(u_rows, u_codes, a, bits, n_slots, acc, t0, s_slot, s_i,
                table, seen):  # pragma: no cover
    """:func:`gather_counts` for a ``B`` given as row bit sets: each row's word is added in
    eight shifted copies to byte-lane counters (lane ``j`` of ``acc[i, w, k]`` counts bit
    ``8 j + k``), a dozen register operations per row of ``u`` instead of one scattered update
    per co-occurrence; the lanes are emptied into ``table`` before they can overflow. A
    non-empty ``seen`` gets ``seen[slot] = 1`` for every slot counted, as in
    :func:`gather_counts`."""
    mark = seen.size > 0
    n_words = bits.shape[1]
    for i in range(a):
        for w in range(n_words):
            for k in range(8):
                acc[i, w, k] = 0
    done = 0
    while done < u_rows.size:
        stop = min(u_rows.size, done + 255)  # a byte lane holds 255
        for t in range(done, stop):
            r = u_rows[t]
            i = u_codes[t] - 1
            for w in range(n_words):
                m = bits[r, w]
                for k in range(8):
                    acc[i, w, k] += (m >> np.uint64(k)) & _LOW_BITS
        for i in range(a):
            for w in range(n_words):
                for k in range(8):
                    lanes = acc[i, w, k]
                    if lanes == 0:
                        continue
                    acc[i, w, k] = 0
                    for j in range(8):
                        s = 64 * w + 8 * j + k
                        c = (lanes >> np.uint64(8 * j)) & np.uint64(255)
                        if s < n_slots and c != 0:
                            table[t0 + s * s_slot + i * s_i] += np.int64(c)
                            if mark:
                                seen[s] = 1
        done = stop


# -- step 2: closed-form fill ----------------------------------------------------------------
@njit(cache=True, nogil=True)
def _fill(table, t0, s_slot, s_i, clear, a, u_counts, v_lo, v_hi, offsets, code_counts,
          nonzero_counts, base, xl, seen, out):  # pragma: no cover
    """``out[v - v_lo] = H(u, v)`` for ``v_lo <= v < v_hi`` from the co-occurrence counts in
    ``table`` (zeroed as read when ``clear``) and the marginals: ``N[i, 0] = m_u[i] - sum_j
    N[i, j]``, ``N[0, j] = m_v[j] - sum_i N[i, j]``, ``N[0, 0] = n - nnz(u) - nnz(v) + sum N``.
    A column sharing no row with ``u`` has the table of marginals only (and is summed in
    that order). A non-empty ``seen`` holds :func:`gather_counts`'s marks: columns with no
    marked slot are not read from the table at all."""
    n = xl.size - 1
    log2n = np.log2(n)
    nnz_u = 0
    base_u = 0.0
    for i in range(a):
        nnz_u += u_counts[i]
        base_u += xl[u_counts[i]]
    row_sums = np.zeros(max(a, 1), dtype=np.int64)
    marked = seen.size > 0
    for v in range(v_lo, v_hi):
        # With marks, whether v shares a row with u is known before any float work: in a
        # distance step most columns do not, and get the closed form at once.
        touched = 1
        if marked:
            touched = 0
            for slot in range(offsets[v], offsets[v + 1]):
                touched += seen[slot]
        together = 0
        s = 0.0
        if touched:
            for i in range(a):
                row_sums[i] = 0
            for slot in range(offsets[v], offsets[v + 1]):
                col_sum = 0
                b = t0 + slot * s_slot
                for i in range(a):
                    c = np.int64(table[b + i * s_i])
                    s += xl[c]
                    col_sum += c
                    row_sums[i] += c
                    if clear:
                        table[b + i * s_i] = 0
                s += xl[code_counts[slot] - col_sum]
                together += col_sum
        if together == 0:
            zero_zero = n - nnz_u - nonzero_counts[v]
            s = base[v] + base_u + xl[zero_zero if zero_zero > 0 else 0]
        else:
            for i in range(a):
                s += xl[u_counts[i] - row_sums[i]]
            s += xl[n - nnz_u - nonzero_counts[v] + together]
        h = log2n - s / n
        out[v - v_lo] = h if h >= ZERO_ENTROPY else 0.0


@njit(cache=True, nogil=True)
def _fill_marked(table, a, u_counts, offsets, owner, code_counts, nonzero_counts, base, xl,
                 seen, out):  # pragma: no cover
    """:func:`_fill` of a fused kernel's scratch (``t0 = 0``, ``s_slot = 1``,
    ``s_i = slots``, cleared as read) with marks: first every column's closed form in one pass
    with no branch on the data, then the columns that own a marked slot from the table, in
    slot order (each column once: its marks are cleared with it). The same float operations
    in the same order as :func:`_fill`, so the same bits; ``seen`` is left clear."""
    n = xl.size - 1
    log2n = np.log2(n)
    n_b = offsets.size - 1
    n_slots = offsets[n_b]
    nnz_u = 0
    base_u = 0.0
    for i in range(a):
        nnz_u += u_counts[i]
        base_u += xl[u_counts[i]]
    for v in range(n_b):
        zero_zero = n - nnz_u - nonzero_counts[v]
        s = base[v] + base_u + xl[zero_zero if zero_zero > 0 else 0]
        h = log2n - s / n
        out[v] = h if h >= ZERO_ENTROPY else 0.0
    row_sums = np.zeros(max(a, 1), dtype=np.int64)
    for slot0 in range(n_slots):
        if seen[slot0] == 0:
            continue
        v = owner[slot0]
        for i in range(a):
            row_sums[i] = 0
        together = 0
        s = 0.0
        for slot in range(offsets[v], offsets[v + 1]):
            col_sum = 0
            for i in range(a):
                c = np.int64(table[slot + i * n_slots])
                s += xl[c]
                col_sum += c
                row_sums[i] += c
                table[slot + i * n_slots] = 0
            s += xl[code_counts[slot] - col_sum]
            together += col_sum
            seen[slot] = 0
        if together == 0:
            continue  # marked but nothing counted: the closed form stands, as in _fill
        for i in range(a):
            s += xl[u_counts[i] - row_sums[i]]
        s += xl[n - nnz_u - nonzero_counts[v] + together]
        h = log2n - s / n
        out[v] = h if h >= ZERO_ENTROPY else 0.0


@njit(cache=True, nogil=True)
def _to_distances(out, h_u, entropies, v_lo):  # pragma: no cover
    """``d(u, v) = (2 H(u,v) - H(u) - H(v)) / H(u,v)`` (0 where H(u,v) = 0), clipped to [0, 1],
    in place over ``out[v - v_lo] = H(u, v)``."""
    for t in range(out.size):
        h = out[t]
        if h >= ZERO_ENTROPY:
            dist = (2.0 * h - h_u - entropies[v_lo + t]) / h
            out[t] = 0.0 if dist < 0.0 else (1.0 if dist > 1.0 else dist)
        else:
            out[t] = 0.0


@njit(cache=True, nogil=True)
def relevance_in_place(info, h_x, h_l, inv_x, inv_l, normalized, by_label):  # pragma: no cover
    """:func:`coreselect.core.entropy.relevance_from_entropies` in one pass over ``info``
    (``H(x, l)`` in, relevance out): ``max(H(x) - H(x, l) + H(l), 0)``, then for the
    normalized form ``* inv_x[x] * inv_l[l]`` and ``min(., 1)``; the numpy path's operations in
    its order, with its rules: NaN stays NaN, a zero is +0.0.
    ``by_label``: labels in the outer loop (``info`` column-major, as the joint kernel writes
    it)."""
    d, n_labels = info.shape
    outer = n_labels if by_label else d
    inner = d if by_label else n_labels
    for o in range(outer):
        for t in range(inner):
            x, label = (t, o) if by_label else (o, t)
            v = (h_x[x] - info[x, label]) + h_l[label]
            if v <= 0.0:
                v = 0.0
            if normalized:
                v = v * inv_x[x] * inv_l[label]
                if v > 1.0:
                    v = 1.0
            info[x, label] = v


# -- fused kernels over blocks (each block's outputs are written by one call only) ------------
@njit(cache=True, nogil=True)
def _max_codes(n_codes, lo, hi):  # pragma: no cover
    m = 1
    for x in range(lo, hi):
        if n_codes[x] - 1 > m:
            m = n_codes[x] - 1
    return m


@njit(cache=True, nogil=True)
def count_block(x_lo, x_hi, a_indptr, a_rows, a_codes, a_ncodes, a_offsets, bits, starts,
                stops, cols, codes, offsets, table):  # pragma: no cover
    """Co-occurrences of the non-zero codes of columns ``x_lo <= x < x_hi`` of ``A`` (CSC)
    with every slot of ``B`` added to ``table`` (``(slots_A, slots_B)``, C order, flat):
    from ``B``'s row bit sets when ``bits`` has columns, else from ``B``'s CSR rows."""
    n_slots = offsets[offsets.size - 1]
    use_bits = bits.shape[1] > 0
    acc = np.zeros((_max_codes(a_ncodes, x_lo, x_hi), max(bits.shape[1], 1), 8), np.uint64)
    no_marks = np.zeros(0, dtype=np.uint8)
    for x in range(x_lo, x_hi):
        a = max(a_ncodes[x] - 1, 0)
        lo, hi = a_indptr[x], a_indptr[x + 1]
        if a == 0 or hi == lo:
            continue
        t0 = a_offsets[x] * n_slots
        if use_bits:
            _count_bits(a_rows[lo:hi], a_codes[lo:hi], a, bits, n_slots, acc, t0, 1, n_slots,
                        table, no_marks)
        else:
            gather_counts(a_rows[lo:hi], a_codes[lo:hi], starts, stops, cols, codes, offsets,
                          t0, 1, n_slots, table, no_marks)


@njit(cache=True, nogil=True)
def joint_block(x_lo, x_hi, a_indptr, a_rows, a_codes, a_ncodes, a_offsets, a_counts, bits,
                starts, stops, cols, codes, offsets, code_counts, nonzero_counts, base, xl,
                owner, out):  # pragma: no cover
    """``out[x, v] = H(a_x, b_v)`` for columns ``x_lo <= x < x_hi`` of ``A`` (CSC) and every
    column ``v`` of ``B``: :func:`count_block` and :func:`_fill` fused per column of ``A``
    into one small scratch table (codes x slots of ``B``), which stays in cache. The counted
    slots are marked, so the columns of ``B`` that share no row with ``a_x`` (most labels of
    a sparse text column) get the closed form without reading the table."""
    n_b = offsets.size - 1
    n_slots = offsets[n_b]
    a_max = _max_codes(a_ncodes, x_lo, x_hi)
    table = np.zeros(max(n_slots, 1) * a_max, dtype=np.int64)
    seen = np.zeros(max(n_slots, 1), dtype=np.uint8)
    use_bits = bits.shape[1] > 0
    acc = np.zeros((a_max if use_bits else 1, max(bits.shape[1], 1), 8), np.uint64)
    for x in range(x_lo, x_hi):
        a = max(a_ncodes[x] - 1, 0)
        lo, hi = a_indptr[x], a_indptr[x + 1]
        if a > 0 and hi > lo:
            if use_bits:
                _count_bits(a_rows[lo:hi], a_codes[lo:hi], a, bits, n_slots, acc, 0, 1,
                            n_slots, table, seen)
            else:
                gather_counts(a_rows[lo:hi], a_codes[lo:hi], starts, stops, cols, codes,
                              offsets, 0, 1, n_slots, table, seen)
        _fill_marked(table, a, a_counts[a_offsets[x]:a_offsets[x + 1]], offsets, owner,
                     code_counts, nonzero_counts, base, xl, seen, out[x])


@njit(cache=True, nogil=True)
def joint_from_counts_block(x_lo, x_hi, table, a_ncodes, a_offsets, a_counts, offsets,
                            code_counts, nonzero_counts, base, xl, out):  # pragma: no cover
    """:func:`joint_block` from counts already added up (``(slots_A, slots_B)`` C order, flat,
    as :func:`count_block` writes them; the table is left as it is)."""
    n_b = offsets.size - 1
    n_slots = offsets[n_b]
    no_marks = np.zeros(0, dtype=np.uint8)
    for x in range(x_lo, x_hi):
        a = max(a_ncodes[x] - 1, 0)
        _fill(table, a_offsets[x] * n_slots, 1, n_slots, False, a,
              a_counts[a_offsets[x]:a_offsets[x + 1]], 0, n_b, offsets, code_counts,
              nonzero_counts, base, xl, no_marks, out[x])


@njit(cache=True, nogil=True)
def distances_block(v_lo, v_hi, table, clear, a, u_counts, h_u, offsets, code_counts,
                    nonzero_counts, base, entropies, xl, seen, out):  # pragma: no cover
    """``out[v - v_lo] = d(u, v)`` for ``v_lo <= v < v_hi`` from the co-occurrence counts of
    ``u`` (an ``(a x slots)`` table, C order, flat, as :func:`gather_counts` writes it with
    ``s_i = slots``, and as row shards' step counts add up; zeroed as read when ``clear``)
    and the slots :func:`gather_counts` marked in ``seen`` (empty: found from the table)."""
    n_slots = offsets[offsets.size - 1]
    _fill(table, 0, 1, n_slots, clear, a, u_counts, v_lo, v_hi, offsets, code_counts,
          nonzero_counts, base, xl, seen, out)
    _to_distances(out, h_u, entropies, v_lo)


@njit(cache=True, nogil=True)
def gather_marked(u_rows, u_codes, starts, stops, slots, a, table, seen):  # pragma: no cover
    """:func:`gather_counts` over a row-major copy of slots into a ``(slots x a)`` table
    (``s_slot = a``: a slot's counts share a cache line), with ``seen[slot] = 1`` for every
    slot counted."""
    for t in range(u_rows.size):
        r = u_rows[t]
        i = np.int64(u_codes[t]) - 1
        for e in range(starts[r], stops[r]):
            slot = slots[e]
            table[slot * a + i] += 1
            seen[slot] = 1


@njit(cache=True, nogil=True)
def add_distance_step(table, a, u_counts, h_u, offsets, owner, code_counts, nonzero_counts,
                      base, entropies, xl, seen, seen_words, done, out, diversity,
                      information, copies, copy_atol):  # pragma: no cover
    """One greedy step's distances from ``u`` after :func:`gather_marked`, and their sums:
    ``out[v] = d(u, v)``, ``diversity[v] += d``, ``information[v] += I(u; v)`` (as
    :func:`~coreselect.core.entropy.shared_information`), ``copies[v] |= d <= copy_atol``;
    a sum with no columns is skipped. The columns that share a row with ``u`` (owners of the
    marked slots, skipped eight at a time where ``seen_words``, the same bytes, is zero, and
    visited in column order) are filled from the table as :func:`_fill` does, clearing the table,
    the marks and setting ``done``; every other column has the closed form of its marginals,
    computed for all columns in one pass with no branch on the data and kept where ``done``
    is not set (which it clears). Each value is the same float operations in the same order
    as :func:`distances_block` and the numpy sums, so the same bits."""
    n = xl.size - 1
    log2n = np.log2(n)
    nnz_u = 0
    base_u = 0.0
    for i in range(a):
        nnz_u += u_counts[i]
        base_u += xl[u_counts[i]]
    row_sums = np.zeros(max(a, 1), dtype=np.int64)
    for w in range(seen_words.size):
        if seen_words[w] == 0:
            continue
        for slot0 in range(8 * w, 8 * w + 8):
            if seen[slot0] == 0:  # or cleared with its column's other slots
                continue
            v = owner[slot0]
            done[v] = 1
            for i in range(a):
                row_sums[i] = 0
            s = 0.0
            together = 0
            for slot in range(offsets[v], offsets[v + 1]):
                col_sum = 0
                cell = slot * a
                for i in range(a):
                    c = np.int64(table[cell + i])
                    if c > 1:  # xl[0] = xl[1] = 0, and s + 0.0 is s (s >= +0.0): the same bits
                        s += xl[c]
                    col_sum += c
                    row_sums[i] += c
                    table[cell + i] = 0
                s += xl[code_counts[slot] - col_sum]
                together += col_sum
                seen[slot] = 0
            for i in range(a):
                s += xl[u_counts[i] - row_sums[i]]
            s += xl[n - nnz_u - nonzero_counts[v] + together]
            h = log2n - s / n
            if h >= ZERO_ENTROPY:
                dist = (2.0 * h - h_u - entropies[v]) / h
                out[v] = 0.0 if dist < 0.0 else (1.0 if dist > 1.0 else dist)
            else:
                out[v] = 0.0
    summed = diversity.size > 0
    informed = information.size > 0
    mark_copies = copies.size > 0
    for v in range(out.size):
        zero_zero = n - nnz_u - nonzero_counts[v]
        s = base[v] + base_u + xl[zero_zero if zero_zero > 0 else 0]
        h = log2n - s / n
        if h >= ZERO_ENTROPY:
            dist = (2.0 * h - h_u - entropies[v]) / h
            dist = 0.0 if dist < 0.0 else (1.0 if dist > 1.0 else dist)
        else:
            dist = 0.0
        if done[v]:
            dist = out[v]
            done[v] = 0
        out[v] = dist
        if summed:
            diversity[v] += dist
        if informed:
            shared = (h_u + entropies[v]) * (1.0 - dist) / (2.0 - dist)
            information[v] += shared if shared > 0.0 else 0.0
        if mark_copies and dist <= copy_atol:
            copies[v] = True


@njit(cache=True, nogil=True)
def add_distances(dist, h_u, entropies, diversity, information, copies,
                  copy_atol):  # pragma: no cover
    """The sums of :func:`add_distance_step` for distances computed elsewhere."""
    # Written out here as there (and the table fill as in _fill): a compiled helper that takes
    # the arrays pays reference counting on every call, five times the cost of these loops.
    informed = information.size > 0
    mark_copies = copies.size > 0
    for v in range(dist.size):
        d = dist[v]
        diversity[v] += d
        if informed:
            shared = (h_u + entropies[v]) * (1.0 - d) / (2.0 - d)
            information[v] += shared if shared > 0.0 else 0.0
        if mark_copies and d <= copy_atol:
            copies[v] = True


# -- greedy bookkeeping ----------------------------------------------------------------------
@njit(cache=True, nogil=True)
def enter_top(top, vals, raised, old, new):  # pragma: no cover
    """:func:`coreselect.core.objective.enter_top` in one pass, in place: ``vals[l]`` enters
    label ``l``'s row of the top-p table (descending) where it beats the row's last value;
    ``raised[:count]`` are the labels whose last value rose, ``old`` and ``new`` that value
    before and after. Returns ``count``."""
    n_labels, p = top.shape
    count = 0
    for label in range(n_labels):
        last = top[label, p - 1]
        x = vals[label]
        if not x > last:
            continue
        i = p - 1
        while i > 0 and top[label, i - 1] < x:
            top[label, i] = top[label, i - 1]
            i -= 1
        top[label, i] = x
        if top[label, p - 1] > last:
            raised[count] = label
            old[count] = last
            new[count] = top[label, p - 1]
            count += 1
    return count


@njit(cache=True, nogil=True)
def lower_gains(column, active, n_active, low, high, gains, every):  # pragma: no cover
    """A label's threshold rose from ``low`` to ``high``: lower the gains of the active
    candidates by ``clip(MI, low, high) - low`` and keep those still above ``high`` (in place,
    at the front of ``active``). Returns how many stay active. ``every``: the label's first
    rise, when the candidates ``0 .. n_active - 1`` are all active (``active`` is only
    written: no index list to build and read)."""
    kept = 0
    for t in range(n_active):  # no data-dependent branch: whether m > high is a coin toss
        v = t if every else active[t]
        m = column[v]
        drop = (m if m < high else high) - low
        gains[v] -= drop if drop > 0.0 else 0.0  # 0 for m <= low, exactly as skipping it
        active[kept] = v
        kept += m > high
    return kept


@njit(cache=True, nogil=True)
def range_pick(gains, diversity, penalty, copies, skip_copies, gain_floor, lam, floor_d, rtol,
               scores):  # pragma: no cover
    """One greedy step of the ``"range"`` calibration (``"balanced"`` with ``floor_d = 1``)
    in three passes over the candidates: :func:`coreselect.core.greedy.step_scores` then
    :func:`~coreselect.core.objective.argmax_first`, the same operations on each element in
    the same order (the same bits, the same pick); ``scores`` is scratch of ``gains``' size.
    Candidates are those with ``penalty == 0``, less the ``copies`` while ``skip_copies`` and
    any other is left; relevance gains at most ``gain_floor`` count as 0."""
    d = gains.size
    drop_copies = False
    if skip_copies:
        for v in range(d):
            if penalty[v] == 0.0 and not copies[v]:
                drop_copies = True
                break
    low_g = np.inf
    high_g = -np.inf
    low_d = np.inf
    high_d = -np.inf
    for v in range(d):
        if penalty[v] == 0.0 and not (drop_copies and copies[v]):
            g = gains[v] if gains[v] > gain_floor else 0.0
            low_g = min(low_g, g)
            high_g = max(high_g, g)
            low_d = min(low_d, diversity[v])
            high_d = max(high_d, diversity[v])
    spread_g = high_g - low_g
    spread_d = high_d - low_d
    if floor_d > spread_d:
        spread_d = floor_d
    best = -np.inf
    for v in range(d):
        if penalty[v] == 0.0 and not (drop_copies and copies[v]):
            g = gains[v] if gains[v] > gain_floor else 0.0
            scaled_g = (g - low_g) / spread_g if spread_g > 0 else 0.0
            scaled_d = (diversity[v] - low_d) / spread_d if spread_d > 0 else 0.0
            s = ((1.0 - lam) * scaled_g + lam * scaled_d) + 0.0
        else:
            s = -np.inf
        scores[v] = s
        if s > best:
            best = s
        elif s != s:  # numpy's max is NaN then, and argmax the first NaN
            return v
    if not np.isfinite(best):  # argmax: the first of the largest
        for v in range(d):
            if scores[v] == best:
                return v
    cut = best - rtol * max(1.0, abs(best))
    for v in range(d):
        if scores[v] >= cut:
            return v
    return 0
