"""Compiled step of :class:`coreselect.core.sparse_relevance.SparseRelevanceGains` (numba,
cached on disk). Imported only when numba is available; the numpy path in
``SparseRelevanceGains._pairs`` does the same and the tests check that both agree."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def lower_pairs(raised, low, high, indptr, live, feature, value, closed, gains):  # pragma: no cover
    """For each raised label (threshold ``low -> high``), move its live co-occurring pairs'
    corrections: ``gains[v] += clip(closed, a, b) - clip(value, a, b)``; the pairs still above
    ``high`` stay live (a prefix: each label's pairs are sorted by ``max(value, closed)``)."""
    for i in range(raised.size):
        label = raised[i]
        a = low[i]
        b = high[i]
        start = indptr[label]
        keep = 0
        for j in range(start, start + live[label]):
            c = min(max(closed[j], a), b)
            v = min(max(value[j], a), b)
            gains[feature[j]] += c - v
            if value[j] > b or closed[j] > b:
                keep += 1
        live[label] = keep


@njit(cache=True, nogil=True)
def _finish(cells, f, label, n, log2n, h_x, h_l, inv_x, inv_l, nmi):  # pragma: no cover
    # SparseRelevance._finish, one pair at a time, the same float operations in the same order.
    h = log2n - cells / n
    if h < 1e-12:  # entropy.ZERO_ENTROPY
        h = 0.0
    info = h_x[f] - h + h_l[label]
    if info < 0.0:
        info = 0.0
    if nmi:
        info = info * inv_x[f]
        info = info * inv_l[label]
        if info > 1.0:
            info = 1.0
    return info


@njit(cache=True, nogil=True)
def count_pairs(y_indptr, y_rows, x_indptr, x_cols, mark, touched):  # pragma: no cover
    """Number of features co-occurring with each label (``mark`` zeroed scratch, left so)."""
    n_labels = y_indptr.size - 1
    sizes = np.zeros(n_labels, dtype=np.int64)
    for label in range(n_labels):
        nt = 0
        for t in range(y_indptr[label], y_indptr[label + 1]):
            r = y_rows[t]
            for e in range(x_indptr[r], x_indptr[r + 1]):
                col = x_cols[e]
                if mark[col] == 0:
                    mark[col] = 1
                    touched[nt] = col
                    nt += 1
        for i in range(nt):
            mark[touched[i]] = 0
        sizes[label] = nt
    return sizes


@njit(cache=True, nogil=True)
def label_pairs(indptr, feature, value, closed, y_indptr, y_rows, x_indptr, x_cols, x_codes,
                offsets, code_counts, nnz, base, h_x, inv_x, count, base_l, h_l, inv_l, xl,
                log2n, nmi, slot_count, mark, touched):  # pragma: no cover
    """Co-occurring pairs of every label, written at ``indptr`` (from :func:`count_pairs`)
    into ``feature``, ``value``, ``closed``, each label's pairs sorted by
    ``max(value, closed)`` descending: counts, per label, of every feature code on the
    label's rows (``x_*`` is the features' CSR), then the dense kernel's closed form.
    ``slot_count``, ``mark``, ``touched`` are zeroed scratch (left zeroed)."""
    n = xl.size - 1
    for label in range(indptr.size - 1):
        out = indptr[label]
        c = count[label]
        nt = 0
        for t in range(y_indptr[label], y_indptr[label + 1]):
            r = y_rows[t]
            for e in range(x_indptr[r], x_indptr[r + 1]):
                col = x_cols[e]
                slot_count[offsets[col] + x_codes[e] - 1] += 1
                if mark[col] == 0:
                    mark[col] = 1
                    touched[nt] = col
                    nt += 1
        start = out
        for i in range(nt):
            f = touched[i]
            mark[f] = 0
            s1 = 0.0
            s2 = 0.0
            together = 0
            first = True
            for s in range(offsets[f], offsets[f + 1]):
                cnt = slot_count[s]
                if cnt == 0:
                    continue
                slot_count[s] = 0
                m = code_counts[s]
                if first:
                    s1 = xl[cnt]
                    s2 = xl[m - cnt] - xl[m]
                    first = False
                else:
                    s1 += xl[cnt]
                    s2 += xl[m - cnt] - xl[m]
                together += cnt
            s3 = xl[c - together] - xl[c]
            rest = (base[f] + base_l[label]) + xl[n - nnz[f] - c + together]
            cells = ((s1 + s2) + s3) + rest
            feature[out] = f
            value[out] = _finish(cells, f, label, n, log2n, h_x, h_l, inv_x, inv_l, nmi)
            n00 = n - nnz[f] - c
            if n00 < 0:
                n00 = 0
            closed[out] = _finish((base[f] + base_l[label]) + xl[n00], f, label, n, log2n,
                                  h_x, h_l, inv_x, inv_l, nmi)
            out += 1
        if out > start:
            key = np.empty(out - start)
            for j in range(start, out):
                key[j - start] = -max(value[j], closed[j])
            order = np.argsort(key) + start
            feature[start:out] = feature[order]
            value[start:out] = value[order]
            closed[start:out] = closed[order]
