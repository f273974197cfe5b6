"""Compiled conditional tables (numba, ``nogil``, cached on disk) for the in-memory CMIM
greedy of :mod:`coreselect.core.conditional`: ``N I(f; l)`` over the rows of one part (the
rows where the picked column has one code) for every feature ``f`` and label ``l``, counted
from the rows themselves instead of sparse products of indicator matrices.

It takes the same counts and the same floating-point steps, in the same order, as
:meth:`~coreselect.core.conditional.ConditionalTables._n_times_mi` over binary (or constant)
labels: ``x log2 x`` is read from a table the module's own ``_xlogx`` filled, and every sum
runs over a feature's indicators in increasing order, as the sparse products add them. The
tests compare both paths bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def add_part(part_rows, f_indptr, f_slots, f_start, l_indptr, l_cols, label_slot, xl, x_n,
             M, e, z, total):  # pragma: no cover
    """``total[f, l] += N I(f; l)`` over the rows ``part_rows`` (not empty). Features:
    row-major slots (``f_indptr``, ``f_slots``; feature ``f`` owns the slots ``f_start[f]``
    to ``f_start[f + 1]``, one per non-zero code, in code order). Labels: row-major columns
    (``l_indptr``, ``l_cols``) of at most one non-zero code, ``label_slot[l]`` its indicator
    or -1 (a constant label). ``x_n``: ``phi(N)`` as the sparse path computes it, for the N
    of this part. ``M`` (label indicators x feature slots), ``e`` and ``z`` are scratch."""
    M[:, :] = 0
    e[:] = 0
    z[:] = 0
    for r in part_rows:
        lo = f_indptr[r]
        hi = f_indptr[r + 1]
        for t in range(lo, hi):
            e[f_slots[t]] += 1
        for q in range(l_indptr[r], l_indptr[r + 1]):
            slot = label_slot[l_cols[q]]
            z[slot] += 1
            row = M[slot]
            for t in range(lo, hi):
                row[f_slots[t]] += 1
    N = part_rows.size
    d = f_start.size - 1
    for f in range(d):
        ge = 0
        for k in range(f_start[f], f_start[f + 1]):
            ge += e[k]
        x_ne = xl[N - ge]
        for label in range(label_slot.size):
            q = label_slot[label]
            zl = z[q] if q >= 0 else 0
            together = 0
            joint = 0.0  # sum over both codes non-zero of phi(count)
            f_only = 0.0  # feature code non-zero, label code 0: phi(e - m) - phi(e)
            if q >= 0:
                for k in range(f_start[f], f_start[f + 1]):
                    m = M[q, k]
                    if m > 0:
                        together += m
                        joint += xl[m]
                        f_only += xl[e[k] - m] - xl[e[k]]
            l_only = xl[zl - together] - xl[zl] if together > 0 else 0.0
            s = (joint + f_only) + l_only
            total[f, label] += (((s + xl[N - ge - zl + together]) - x_ne) - xl[N - zl]) + x_n
