"""Compiled count-table kernels of the published multi-label MI selectors (numba, disk-cached).

Both kernels read the features' codes in CSC form (code 0, the most frequent bin, implicit) and
fill every cell of each joint table from the counts gathered on the non-zero cells plus the
marginals, as :mod:`coreselect.core.entropy` does for two variables. ``xl`` is
:func:`coreselect.core.entropy.xlogx_table` (``c log2 c``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def conditional_mi(f_indptr, f_rows, f_codes, f_ncodes, y_indptr, y_cols, z, z_rows, z_label,
                   xl, out):  # pragma: no cover - compiled
    """``out[f, l] = I(f; l | z)`` in bits for every feature ``f`` and binary label ``l``.

    ``z``: code (``0 .. V-1``) of the conditioning variable on every row; ``z_rows[v]``: rows
    with ``z = v``; ``z_label[v, l]``: rows with ``z = v`` and ``l = 1``. Labels are the rows
    of a CSR 0/1 matrix (``y_indptr``, ``y_cols``). With ``n_R`` rows in a stratum ``z = v``,
    ``n_R I_R = n_R log n_R - S(f) - S(l) + S(f, l)`` where ``S`` sums ``c log c`` over the
    cells of a count table; ``I(f; l | z) = sum_v n_R I_R / n``. Cost: the feature's non-zero
    cells times the labels on their rows, plus ``V x codes x L`` per feature.
    """
    d = f_indptr.size - 1
    n_lab = out.shape[1]
    n_z = z_rows.size
    n = 0
    for v in range(n_z):
        n += z_rows[v]
    max_a = 1
    for f in range(d):
        if f_ncodes[f] - 1 > max_a:
            max_a = f_ncodes[f] - 1
    N = np.zeros((n_z, max_a, n_lab), dtype=np.int64)
    M = np.zeros((n_z, max_a), dtype=np.int64)
    lab_part = np.zeros((n_z, n_lab))
    for v in range(n_z):
        nv = z_rows[v]
        for lab in range(n_lab):
            c = z_label[v, lab]
            lab_part[v, lab] = xl[nv] - xl[c] - xl[nv - c]
    for f in range(d):
        a = f_ncodes[f] - 1
        if a < 0:
            a = 0
        for t in range(f_indptr[f], f_indptr[f + 1]):
            r = f_rows[t]
            c = f_codes[t] - 1
            v = z[r]
            M[v, c] += 1
            for e in range(y_indptr[r], y_indptr[r + 1]):
                N[v, c, y_cols[e]] += 1
        for lab in range(n_lab):
            out[f, lab] = 0.0
        for v in range(n_z):
            nv = z_rows[v]
            if nv == 0:
                continue
            m_sum = 0
            s_f = 0.0
            for c in range(a):
                m_sum += M[v, c]
                s_f += xl[M[v, c]]
            if m_sum == 0:
                continue  # f is constant (code 0) on this stratum: it adds nothing
            s_f += xl[nv - m_sum]
            for lab in range(n_lab):
                cl = z_label[v, lab]
                s = 0.0
                n_sum = 0
                for c in range(a):
                    x = N[v, c, lab]
                    s += xl[x] + xl[M[v, c] - x]
                    n_sum += x
                    N[v, c, lab] = 0
                s += xl[cl - n_sum] + xl[nv - m_sum - cl + n_sum]
                out[f, lab] += lab_part[v, lab] - s_f + s
            for c in range(a):
                M[v, c] = 0
        for lab in range(n_lab):
            out[f, lab] /= n


@njit(cache=True, nogil=True)
def partition_joint_entropy(f_indptr, f_rows, f_codes, f_ncodes, group, group_size, xl,
                            out):  # pragma: no cover - compiled
    """``out[f] = H(g, f)`` in bits: joint entropy of a row partition ``g`` (``group[r]``,
    ``group_size[g]``) with every feature. Cost: the features' non-zero cells."""
    d = f_indptr.size - 1
    n_groups = group_size.size
    n = 0
    base = 0.0
    for g in range(n_groups):
        n += group_size[g]
        base += xl[group_size[g]]
    log2n = np.log2(n) if n > 0 else 0.0
    max_a = 1
    for f in range(d):
        if f_ncodes[f] - 1 > max_a:
            max_a = f_ncodes[f] - 1
    work = np.zeros(n_groups * max_a, dtype=np.int64)
    mark = np.zeros(n_groups, dtype=np.int8)
    touched = np.zeros(n_groups, dtype=np.int64)
    for f in range(d):
        a = f_ncodes[f] - 1
        n_t = 0
        for t in range(f_indptr[f], f_indptr[f + 1]):
            g = group[f_rows[t]]
            work[g * max_a + f_codes[t] - 1] += 1
            if mark[g] == 0:
                mark[g] = 1
                touched[n_t] = g
                n_t += 1
        s = base
        for k in range(n_t):
            g = touched[k]
            mark[g] = 0
            nz = 0
            for c in range(a):
                x = work[g * max_a + c]
                s += xl[x]
                nz += x
                work[g * max_a + c] = 0
            s += xl[group_size[g] - nz] - xl[group_size[g]]
        h = log2n - s / n if n > 0 else 0.0
        out[f] = h if h > 1e-12 else 0.0


@njit(cache=True, nogil=True)
def label_pair_aggregates(f_indptr, f_rows, f_codes, f_ncodes, y_indptr, y_cols, label_count,
                          co, rel, xl, sum_cond, sum_supp, max_cond):  # pragma: no cover
    """Aggregates over ordered label pairs ``i != j`` of ``C = I(f; l_i | l_j)`` for every
    feature, without the (d, L, L) array: ``sum_cond[f] = sum C``, ``sum_supp[f] = sum
    max(0, C - rel[f, i])``, ``max_cond[f, i] = max_j C`` (``-inf`` with one label).

    Per feature, the counts ``P[c, i, j]`` of rows with code ``c``, ``l_i = 1`` and ``l_j = 1``
    are gathered once (``P[c, i, i]`` holds ``(c, l_i = 1)``); the strata ``l_j = 1`` and
    ``l_j = 0`` of every pair follow from them and the marginals (``co``: label
    co-occurrences, ``label_count``: ``co``'s diagonal). Cost per feature: its rows' label
    pairs, plus ``codes x L x L``.
    """
    d = f_indptr.size - 1
    n_lab = label_count.size
    n = xl.size - 1
    max_a = 1
    for f in range(d):
        if f_ncodes[f] - 1 > max_a:
            max_a = f_ncodes[f] - 1
    P = np.zeros((max_a, n_lab, n_lab), dtype=np.int64)
    D = np.zeros((max_a, n_lab), dtype=np.int64)  # P[c, i, i], contiguous
    M = np.zeros(max_a, dtype=np.int64)
    for f in range(d):
        a = f_ncodes[f] - 1
        if a < 0:
            a = 0
        for t in range(f_indptr[f], f_indptr[f + 1]):
            r = f_rows[t]
            c = f_codes[t] - 1
            M[c] += 1
            for e in range(y_indptr[r], y_indptr[r + 1]):
                i = y_cols[e]
                D[c, i] += 1
                for e2 in range(y_indptr[r], y_indptr[r + 1]):
                    P[c, i, y_cols[e2]] += 1
        m_all = 0
        for c in range(a):
            m_all += M[c]
        sc = 0.0
        ss = 0.0
        # P is symmetric in (i, j): the inner loop runs over i along P[c, j, :], co[j, :]
        for j in range(n_lab):
            n1 = label_count[j]
            n0 = n - n1
            m1 = 0
            sf1 = 0.0
            sf0 = 0.0
            for c in range(a):
                x = D[c, j]
                m1 += x
                sf1 += xl[x]
                sf0 += xl[M[c] - x]
            m0 = m_all - m1
            sf1 += xl[n1 - m1]
            sf0 += xl[n0 - m0]
            for i in range(n_lab):
                if i == j:
                    continue
                total = 0.0
                if m1 > 0:  # stratum l_j = 1 (f constant there: adds nothing)
                    cl = co[j, i]
                    s = 0.0
                    ns = 0
                    for c in range(a):
                        x = P[c, j, i]
                        s += xl[x] + xl[D[c, j] - x]
                        ns += x
                    s += xl[cl - ns] + xl[n1 - m1 - cl + ns]
                    total += xl[n1] - xl[cl] - xl[n1 - cl] - sf1 + s
                if m0 > 0:  # stratum l_j = 0
                    cl = label_count[i] - co[j, i]
                    s = 0.0
                    ns = 0
                    for c in range(a):
                        x = D[c, i] - P[c, j, i]
                        s += xl[x] + xl[M[c] - D[c, j] - x]
                        ns += x
                    s += xl[cl - ns] + xl[n0 - m0 - cl + ns]
                    total += xl[n0] - xl[cl] - xl[n0 - cl] - sf0 + s
                val = total / n
                sc += val
                gain = val - rel[f, i]
                if gain > 0.0:
                    ss += gain
                if val > max_cond[f, i]:
                    max_cond[f, i] = val
        sum_cond[f] = sc
        sum_supp[f] = ss
        # reset only what this feature touched
        for t in range(f_indptr[f], f_indptr[f + 1]):
            r = f_rows[t]
            c = f_codes[t] - 1
            M[c] = 0
            for e in range(y_indptr[r], y_indptr[r + 1]):
                i = y_cols[e]
                D[c, i] = 0
                for e2 in range(y_indptr[r], y_indptr[r + 1]):
                    P[c, i, y_cols[e2]] = 0
