"""Compiled step of :class:`coreselect.core.sparse_relevance.SparseRelevanceGains` (numba,
cached on disk). Imported only when numba is available; the numpy path in
``SparseRelevanceGains._pairs`` does the same and the tests check that both agree."""

from __future__ import annotations

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
