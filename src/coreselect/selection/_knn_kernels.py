"""Compiled steps of BRkNN-b's neighbour search (numba, disk-cached): automatic ``k``'s
prefix evaluator and the label counts of :class:`coreselect.evaluation.brknn.BRkNNb`.

:func:`coreselect.selection.autok.brknn_b_prefixes` scores every prefix of the greedy order
with BRkNN-b. Its numpy form partitions each validation row's distances, builds a neighbour
mask and sorts every row's label confidences twice; on the inner folds that took three
quarters of ``k="auto"``'s time. This kernel does one row at a time in one pass: the distance
update, the k-th smallest distance, the neighbours' label counts and the top labels. It gives
the same predictions bit for bit (the numpy form stays as the reference, and runs under
``CORESELECT_NUMBA=0``). :func:`neighbour_label_counts` does the same search for the evaluator,
whose numpy form multiplies a rows x training rows mask by the dense label matrix (on 983
labels, most of its time).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _kth_smallest(values, k, best):  # pragma: no cover - compiled
    """The ``k``-th smallest of ``values`` (``1 <= k <= values.size``), kept sorted in
    ``best`` (length ``k``): one pass, ``k`` is a handful."""
    filled = 0
    for t in range(values.size):
        v = values[t]
        if filled < k:
            i = filled
            filled += 1
        elif v < best[k - 1]:
            i = k - 1
        else:
            continue
        while i > 0 and best[i - 1] > v:
            best[i] = best[i - 1]
            i -= 1
        best[i] = v
    return best[k - 1]


@njit(cache=True, nogil=True)
def _count_neighbours(row, k, best, y_indptr, y_cols, counts):  # pragma: no cover
    """The neighbours of one query row (``row``: its squared distances to every training
    row) are every training row at most the ``k``-th smallest distance plus
    ``1e-12 max(1, kth)`` (Weka's ties): adds 1 to ``counts[l]`` for each neighbour with label
    ``l`` (training labels as CSR rows ``y_indptr``, ``y_cols``) and returns their number."""
    kth = _kth_smallest(row, k, best)
    limit = kth + 1e-12 * max(1.0, kth)
    size = 0
    for t in range(row.size):
        if row[t] <= limit:
            size += 1
            for j in range(y_indptr[t], y_indptr[t + 1]):
                counts[y_cols[j]] += 1
    return size


@njit(cache=True, nogil=True)
def neighbour_label_counts(d2, k, y_indptr, y_cols, counts, sizes):  # pragma: no cover
    """Per query row ``r`` of ``d2`` (squared distances to every training row): ``sizes[r]``
    neighbours (:func:`_count_neighbours`), ``counts[r, l]`` of them with label ``l``.
    ``counts`` must be zero on entry."""
    best = np.empty(k)
    for r in range(d2.shape[0]):
        sizes[r] = _count_neighbours(d2[r], k, best, y_indptr, y_cols, counts[r])


@njit(cache=True, nogil=True)
def prefix_step(prod, b_sq, a_sq, d2, k, y_indptr, y_cols, n_labels,
                pred):  # pragma: no cover - compiled
    """One prefix of BRkNN-b for every validation row (``k >= 1``).

    ``prod`` (rows x training rows) is ``B A^T`` over the prefix's new columns, ``b_sq`` and
    ``a_sq`` the rows' squared norms over them: ``d2 += max(b_sq - 2 prod + a_sq, ...)`` is
    updated in place in numpy's order of operations (``((-2 prod) + b_sq) + a_sq``, then
    added and clipped at 0), so the distances are numpy's bits. Neighbours: every training
    row at most the ``k``-th smallest distance (plus ``1e-12 max(1, kth)``). A label's
    confidence ``(c + 1/n) / (s + L/n)`` grows with its neighbour count ``c`` (the same ``s``
    for all labels of a row), so the top ``round(sum c / (s + L/n))`` labels are those of the
    largest counts, ties in label order, as a stable sort of the confidences gives. Training
    labels: CSR rows (``y_indptr``, ``y_cols``). Writes ``pred`` (rows x labels, 0/1).
    """
    n_rows, n_train = d2.shape
    best = np.empty(k)
    counts = np.zeros(n_labels, dtype=np.int64)
    hist = np.zeros(n_train + 1, dtype=np.int64)
    for r in range(n_rows):
        for t in range(n_train):
            v = prod[r, t] * -2.0
            v = v + b_sq[r]
            v = v + a_sq[t]
            v = d2[r, t] + v
            if v < 0.0:
                v = 0.0
            d2[r, t] = v
        size = _count_neighbours(d2[r], k, best, y_indptr, y_cols, counts)
        # the labels' counts: their histogram, the largest and the sum (the neighbours' labels)
        top = 0
        total = 0
        for lab in range(n_labels):
            hist[counts[lab]] += 1
            total += counts[lab]
            if counts[lab] > top:
                top = counts[lab]
        denominator = size + n_labels / n_train
        n_pred = int(np.floor(total / denominator + 0.5))
        n_pred = min(max(n_pred, 0), n_labels)
        # the count the n_pred-th label reaches, and how many of that count are taken
        cut = top
        above = 0
        while n_pred > 0 and above + hist[cut] < n_pred:
            above += hist[cut]
            cut -= 1
        take = n_pred - above
        for lab in range(n_labels):
            c = counts[lab]
            if n_pred > 0 and c > cut:
                pred[r, lab] = 1
            elif n_pred > 0 and c == cut and take > 0:
                pred[r, lab] = 1
                take -= 1
            else:
                pred[r, lab] = 0
            hist[c] = 0
            counts[lab] = 0
