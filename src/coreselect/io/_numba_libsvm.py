"""Compiled byte parser of multi-label LIBSVM text (numba, cached on disk).

:func:`parse_block` parses a block of whole lines into raw arrays in one pass over the
bytes. It accepts a plain subset of the format: ASCII, blanks ``' '``/``'\\t'``/``'\\r'``,
labels ``d,d,...`` (at most 15 digits each) separated from the features by a space,
features ``i:v`` with ``i`` at most 10 digits below 2**31 - 1 and ``v`` a decimal number
(:func:`coreselect.io.text.parse_number`'s grammar), ``#`` comments. Anything else (a
malformed line, odd whitespace, a non-finite value) returns None, and the caller parses the
block with the Python token path, which accepts or reports exactly as the reader always
did; so the compiled parser changes speed, never results or messages. Values whose
mantissa has more than 19 digits or whose exponent leaves the exactly representable range
are parsed by Python's ``float`` (correctly rounded, as ``strtod``); the others are exact by
Clinger's fast path (an integer below 2**53 times or divided by an exact power of ten: one
rounding). tests/test_io_chunks.py checks both paths agree on generated text.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_POW10 = np.array([10.0 ** i for i in range(23)])
_TWO53 = 1 << 53


@njit(cache=True, nogil=True)
def _is_blank(c):  # pragma: no cover - compiled
    return c == 32 or c == 9 or c == 13


@njit(cache=True, nogil=True)
def _kernel(buf, first_line, row_line, row_nnz, row_nlab, row_blank, idx, val, lab,
            slow_pos, slow_start, slow_end, pow10, sizes):  # pragma: no cover - compiled
    """Fill the row/entry arrays; ``sizes`` gets (rows, entries, labels, slow values).
    Returns 0, 1 when a line is outside the plain grammar, 2 when the slow values overflow
    ``slow_pos`` (the caller retries with room for all)."""
    n = buf.size
    pos = 0
    line = first_line
    r = 0
    k = 0
    m = 0
    s = 0
    while pos < n:
        end = pos
        while end < n and buf[end] != 10:
            end += 1
        # content: up to the first '#'
        cend = pos
        has_hash = False
        while cend < end:
            if buf[cend] == 35:
                has_hash = True
                break
            cend += 1
        a = pos
        b = cend
        while a < b and _is_blank(buf[a]):
            a += 1
        while b > a and _is_blank(buf[b - 1]):
            b -= 1
        if a == b:
            if not has_hash:
                # a blank row (the caller applies the file's blank-line rule)
                row_line[r] = line
                row_nnz[r] = 0
                row_nlab[r] = 0
                row_blank[r] = True
                r += 1
            pos = end + 1
            line += 1
            continue
        # the first token (up to a space) holds labels unless it has a colon
        t = a
        colon = False
        while t < b and buf[t] != 32:
            c = buf[t]
            if c == 58:
                colon = True
            elif c == 9 or c == 13:
                return 1
            t += 1
        f = a
        nlab = 0
        if not colon:
            j = a
            while True:
                start = j
                v = 0
                while j < t and 48 <= buf[j] <= 57:
                    v = v * 10 + (buf[j] - 48)
                    j += 1
                if j == start or j - start > 15:
                    return 1
                lab[m] = v
                m += 1
                nlab += 1
                if j == t:
                    break
                if buf[j] != 44:
                    return 1
                j += 1
            f = t + 1
        # features: i:v tokens separated by blanks
        nnz = 0
        j = f
        while True:
            while j < b and _is_blank(buf[j]):
                j += 1
            if j >= b:
                break
            start = j
            iv = 0
            while j < b and 48 <= buf[j] <= 57:
                iv = iv * 10 + (buf[j] - 48)
                j += 1
            if j == start or j - start > 10 or iv >= 2147483647 or j >= b or buf[j] != 58:
                return 1
            j += 1
            # a decimal number: [+-]?(d+.?d*|.d+)([eE][+-]?d+)?
            vstart = j
            neg = False
            if j < b and (buf[j] == 43 or buf[j] == 45):
                neg = buf[j] == 45
                j += 1
            mant = 0
            nd = 0
            dexp = 0
            digits = 0
            slow = False
            while j < b and 48 <= buf[j] <= 57:
                d = buf[j] - 48
                digits += 1
                if mant == 0 and d == 0:
                    pass
                elif nd < 19:
                    mant = mant * 10 + d
                    nd += 1
                else:
                    slow = True
                j += 1
            if j < b and buf[j] == 46:
                j += 1
                while j < b and 48 <= buf[j] <= 57:
                    d = buf[j] - 48
                    digits += 1
                    if mant == 0 and d == 0:
                        dexp -= 1
                    elif nd < 19:
                        mant = mant * 10 + d
                        nd += 1
                        dexp -= 1
                    else:
                        slow = True
                    j += 1
            if digits == 0:
                return 1
            if j < b and (buf[j] == 101 or buf[j] == 69):
                j += 1
                eneg = False
                if j < b and (buf[j] == 43 or buf[j] == 45):
                    eneg = buf[j] == 45
                    j += 1
                estart = j
                e = 0
                while j < b and 48 <= buf[j] <= 57:
                    if e < 100000:
                        e = e * 10 + (buf[j] - 48)
                    j += 1
                if j == estart:
                    return 1
                dexp += -e if eneg else e
            if j < b and not _is_blank(buf[j]):
                return 1
            idx[k] = iv
            x = 0.0
            if slow or mant > 9007199254740992:
                if s == slow_pos.size:
                    return 2
                slow_pos[s] = k
                slow_start[s] = vstart
                slow_end[s] = j
                s += 1
            elif mant != 0:
                if 0 <= dexp <= 22:
                    x = mant * pow10[dexp]
                elif -22 <= dexp < 0:
                    x = mant / pow10[-dexp]
                else:
                    if s == slow_pos.size:
                        return 2
                    slow_pos[s] = k
                    slow_start[s] = vstart
                    slow_end[s] = j
                    s += 1
            val[k] = -x if neg else x
            k += 1
            nnz += 1
        row_line[r] = line
        row_nnz[r] = nnz
        row_nlab[r] = nlab
        row_blank[r] = False
        r += 1
        pos = end + 1
        line += 1
    sizes[0] = r
    sizes[1] = k
    sizes[2] = m
    sizes[3] = s
    return 0


@njit(cache=True, nogil=True)
def _census(buf):  # pragma: no cover - compiled
    """One pass over the bytes: (any byte >= 128, newlines, colons, commas): the sizes of the
    parse's arrays (four numpy passes and their temporaries before). Four histograms over
    interleaved bytes, so that consecutive equal bytes do not wait on one counter."""
    h = np.zeros((4, 256), dtype=np.int64)
    n = buf.size
    q = n - n % 4
    for i in range(0, q, 4):
        h[0, buf[i]] += 1
        h[1, buf[i + 1]] += 1
        h[2, buf[i + 2]] += 1
        h[3, buf[i + 3]] += 1
    for i in range(q, n):
        h[0, buf[i]] += 1
    t = h.sum(axis=0)
    return t[128:].sum() > 0, t[10], t[58], t[44]


def parse_block(block: bytes, first_line: int):
    """``(idx int32, vals, counts, labs int64, lab_counts, row_lines, blank)`` of a block of
    whole lines, or None when a line needs the Python token path (see the module docs)."""
    buf = np.frombuffer(block, dtype=np.uint8)
    high, newlines, colons, commas = _census(buf)
    if high:
        return None  # non-ASCII outside comments is rare: the token path decides
    n_lines = int(newlines) + 1
    n_colons = int(colons)
    n_labels = int(commas) + n_lines
    row_line = np.empty(n_lines, dtype=np.int64)
    row_nnz = np.empty(n_lines, dtype=np.int64)
    row_nlab = np.empty(n_lines, dtype=np.int64)
    row_blank = np.empty(n_lines, dtype=np.bool_)
    idx = np.empty(n_colons, dtype=np.int32)
    val = np.empty(n_colons, dtype=np.float64)
    lab = np.empty(n_labels, dtype=np.int64)
    # Values for float() are rare: room for a few first, for all only when they are many.
    for cap in (min(n_colons, 1024 + n_colons // 64), n_colons):
        slow_pos = np.empty(cap, dtype=np.int64)
        slow_start = np.empty(cap, dtype=np.int64)
        slow_end = np.empty(cap, dtype=np.int64)
        sizes = np.zeros(4, dtype=np.int64)
        status = _kernel(buf, first_line, row_line, row_nnz, row_nlab, row_blank, idx, val, lab,
                         slow_pos, slow_start, slow_end, _POW10, sizes)
        if status != 2:
            break
    if status:
        return None
    r, k, m, s = (int(v) for v in sizes)
    for q in range(s):
        x = float(block[slow_start[q]:slow_end[q]])
        if x != x or x in (float("inf"), float("-inf")):
            return None  # the token path reports it
        val[slow_pos[q]] = x
    # Copies trimmed to size (the upper bounds above may be much larger for labels).
    return (idx[:k].copy() if k < n_colons else idx, val[:k].copy() if k < n_colons else val,
            row_nnz[:r].copy(), lab[:m].copy(), row_nlab[:r].copy(), row_line[:r].copy(),
            row_blank[:r].copy())


@njit(cache=True, nogil=True)
def sort_rows(indptr, idx, val):  # pragma: no cover - compiled
    """Sort each row's entries by index in place (rows are short and almost always sorted:
    insertion sort); return the first row holding an index twice, or -1, and that index."""
    for r in range(indptr.size - 1):
        a = indptr[r]
        b = indptr[r + 1]
        for j in range(a + 1, b):
            if idx[j] <= idx[j - 1]:
                # insertion sort of the rest of the row
                for q in range(j, b):
                    ki = idx[q]
                    kv = val[q]
                    p = q - 1
                    while p >= a and idx[p] > ki:
                        idx[p + 1] = idx[p]
                        val[p + 1] = val[p]
                        p -= 1
                    idx[p + 1] = ki
                    val[p + 1] = kv
                for q in range(a + 1, b):
                    if idx[q] == idx[q - 1]:
                        return r, idx[q]
                break
    return -1, 0
