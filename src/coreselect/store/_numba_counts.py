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
