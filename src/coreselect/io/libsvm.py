"""Multi-label LIBSVM / SVMlight reader and writer.

Format: one instance per line, ``l1,l2,... idx:val idx:val ...``; the label list may be
empty (the line then starts with a feature or is blank). An optional first line
``n_samples n_features n_labels`` (the Extreme Classification Repository header) gives
the shape. ``#`` starts a comment.

Index base (``zero_based="auto"``), decided separately for features and for labels:

* an index 0 anywhere means 0-based;
* otherwise, with a header line, 0-based (the repository's files are 0-based), except
  that features are read 1-based when the largest index equals ``n_features``;
* otherwise (no header, no 0) 1-based, the SVMlight convention; labels then follow the
  features' base.

:func:`write_libsvm` writes a header and 0-based indices, so files round-trip exactly.

Checks: a feature index appears at most once per line (``3:1 3:2`` is an error naming the
line; order within a line is free); values are finite decimals (``nan``/``inf`` are errors
naming the line); a repeated label on a line counts once. Feature and label names are
:class:`~coreselect.io.dataset.IndexedNames` (no string per declared feature), and a
declared width the data cannot fill is refused before anything is allocated for it
(:func:`~coreselect.io.dataset.check_declared_width`: ``1 99999999:1`` is refused).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, IndexedNames, check_declared_width
from coreselect.io.text import fast_numbers, open_text, parse_number, shorten, stem

__all__ = ["read_libsvm", "write_libsvm", "LIBSVM_SUFFIXES"]

LIBSVM_SUFFIXES = (".svm", ".libsvm", ".txt", ".svmlight")
_DENSE_Y_CELLS = 50_000_000  # more label cells than this: Y stays sparse (extreme classification)
_TWO_COLONS_RE = re.compile(r":[^\s:]*:")


def _is_header(line: str) -> tuple[int, int, int] | None:
    parts = line.split()
    if len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1]), int(parts[2])
    return None


# ------------------------------------------------------------------ one parser, in blocks
#
# A file is read as blocks of whole lines (``BLOCK_BYTES`` of text at a time, cut after the
# last newline). Each block is parsed to *raw* arrays (indices as written, before the base is
# known) by the compiled byte parser (:mod:`coreselect.io._numba_libsvm`), or, for any line
# outside its plain grammar, by the Python token path below, which accepts or reports
# exactly as the reader always did. The base and the widths need the whole file (an index 0
# anywhere means 0-based), so they are decided from per-block statistics (:class:`FileScan`)
# and applied afterwards: :func:`read_libsvm` concatenates the raw blocks and finishes once;
# :mod:`coreselect.io.chunks` scans first, then finishes each block as a chunk.

BLOCK_BYTES = 32 << 20
#: Text parsed at a time by the first pass (:func:`scan_file`), which keeps only numbers: its
#: memory is a few times this, whatever the chunk size of the passes after it.
SCAN_BYTES = 4 << 20


@dataclass
class RawBlock:
    """One block's rows, indices as written (features int32/int64, labels int64)."""

    idx: np.ndarray
    vals: np.ndarray
    counts: np.ndarray  # features per row
    labs: np.ndarray
    lab_counts: np.ndarray  # labels per row
    row_lines: np.ndarray  # 1-based line number of each row

    @property
    def n(self) -> int:
        return len(self.counts)


def _empty_block() -> RawBlock:
    z = np.zeros(0, dtype=np.int64)
    return RawBlock(np.zeros(0, dtype=np.int32), np.zeros(0), z, z, z, z)


def _text_of(block: bytes) -> str:
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError:
        return block.decode("latin-1")  # every byte sequence decodes


def _classify(text: str, first_line: int) -> tuple[list[str], list[int], list[bool]]:
    """Rows (comment and trailing text stripped), their line numbers, and which are blank."""
    lines = text.split("\n")
    if lines and lines[-1].strip() == "":
        lines.pop()  # the text after the final newline is not a line
    rows: list[str] = []
    row_lines: list[int] = []
    blank: list[bool] = []
    for i, raw in enumerate(lines, start=first_line):
        if raw.strip().startswith("#"):
            continue
        s = raw.split("#", 1)[0].strip()
        rows.append(s)
        row_lines.append(i)
        blank.append(not s)
    return rows, row_lines, blank


def _parse_rows_py(rows: list[str], row_lines: list[int], spath: str) -> RawBlock:
    """The token path: raw arrays of non-blank or blank rows, or the error naming the line."""
    n = len(rows)
    label_parts: list[str] = []
    feat_parts: list[str] = []
    counts = np.zeros(n, dtype=np.int64)
    for k, s in enumerate(rows):
        first, _, rest = s.partition(" ")
        if ":" in first:
            label_parts.append("")
            feat = s
        else:
            label_parts.append(first)
            feat = rest
        counts[k] = feat.count(":")
        feat_parts.append(feat)
    # Features: "i:v i:v ..." -> one C pass over all lines, when every token is one "i:v"
    # (as many tokens as colons, none with two); else the token path reports the line.
    joined = " ".join(feat_parts)
    total = int(counts.sum())
    arr = None
    if not total:
        arr = np.empty(0)
    elif len(joined.split()) == total and not _TWO_COLONS_RE.search(joined):
        arr = fast_numbers(joined.replace(":", " "), " ", 2 * total)
    if arr is None or not (np.abs(arr[0::2]) < 2**53).all() or not np.array_equal(arr[0::2], np.floor(arr[0::2])):
        _diagnose_features(feat_parts, row_lines, spath)
        raise DatasetError("malformed feature list", spath)  # pragma: no cover
    idx = arr[0::2].astype(np.int64)
    vals = arr[1::2]
    if total and idx.min() < 0:
        i = int(np.flatnonzero(idx < 0)[0])
        raise DatasetError(f"negative feature index {idx[i]}", spath, _line_of(counts, row_lines, i))
    # Labels: "1,5,7" per line, non-negative decimal integers.
    lab_counts = np.array([len(p.split(",")) if p else 0 for p in label_parts], dtype=np.int64)
    lab_text = ",".join(p for p in label_parts if p)
    lab_total = int(lab_counts.sum())
    labs = None
    if not lab_total:
        labs = np.empty(0)
    elif lab_text.isascii() and lab_text.replace(",", "").isdigit():
        labs = fast_numbers(lab_text, ",", lab_total)
    if labs is None or not (labs < 2**53).all():
        for k, p in enumerate(label_parts):
            for t in p.split(",") if p else []:
                if not (t.isascii() and t.isdigit()) or int(t) >= 2**53:
                    raise DatasetError(f"bad label {shorten(t)!r} (labels are non-negative integers)", spath,
                                       row_lines[k])
        raise DatasetError("malformed label list", spath)  # pragma: no cover
    return RawBlock(idx, vals, counts, labs.astype(np.int64), lab_counts, np.asarray(row_lines, dtype=np.int64))


def _parse_block(block: bytes, first_line: int, spath: str, header_ok: bool, fast: bool = True,
                 ) -> tuple[RawBlock, np.ndarray, tuple[int, int, int] | None]:
    """Parse a block of whole lines: ``(raw rows, blank flag per row, header)``.

    ``header_ok``: the block starts the file, so its first non-comment line may be the
    header ``n_samples n_features n_labels``.
    """
    header = None
    if header_ok:
        # The header is the first line that is neither a comment nor (wholly) a comment:
        # found here in Python, a few lines at most.
        pos, line = 0, first_line
        while pos < len(block):
            end = block.find(b"\n", pos)
            end = len(block) if end < 0 else end
            raw = _text_of(block[pos:end])
            if raw.strip().startswith("#"):
                pos, line = end + 1, line + 1
                continue
            s = raw.split("#", 1)[0].strip()
            if s:
                header = _is_header(s)
                if header is not None:
                    block, first_line = block[end + 1:], line + 1
            break
    if fast:
        from coreselect.io._numba_libsvm import parse_block

        got = parse_block(block, first_line)
        if got is not None:
            return RawBlock(*got[:6]), got[6], header
    rows, row_lines, blank = _classify(_text_of(block), first_line)
    return _parse_rows_py(rows, row_lines, spath), np.asarray(blank, dtype=bool), header


def _take_rows(b: RawBlock, keep: np.ndarray) -> RawBlock:
    """The rows of ``b`` where ``keep`` (a boolean mask) is true."""
    if keep.all():
        return b
    fk = np.repeat(keep, b.counts)
    lk = np.repeat(keep, b.lab_counts)
    return RawBlock(b.idx[fk], b.vals[fk], b.counts[keep], b.labs[lk], b.lab_counts[keep], b.row_lines[keep])


def _concat(blocks: list[RawBlock]) -> RawBlock:
    if not blocks:
        return _empty_block()
    if len(blocks) == 1:
        return blocks[0]
    dt = np.result_type(*[b.idx.dtype for b in blocks])
    return RawBlock(
        np.concatenate([b.idx for b in blocks]).astype(dt, copy=False),
        np.concatenate([b.vals for b in blocks]),
        np.concatenate([b.counts for b in blocks]),
        np.concatenate([b.labs for b in blocks]),
        np.concatenate([b.lab_counts for b in blocks]),
        np.concatenate([b.row_lines for b in blocks]),
    )


def _byte_blocks(fh, block_bytes: int, path: str = ""):
    """``(bytes, first line number)`` of whole lines; a line is never cut (a line longer than
    ``block_bytes`` makes one longer block; one over :data:`~coreselect.io.text.MAX_LINE_BYTES`
    is an error)."""
    from coreselect.io.text import MAX_LINE_BYTES, line_too_long

    rest = b""
    line = 1
    while True:
        buf = fh.read(block_bytes)
        if not buf:
            if len(rest) > MAX_LINE_BYTES:
                raise line_too_long(rest, path, line)
            if rest.strip():  # text after the last newline is a line unless blank
                yield rest, line
            return
        if rest:
            buf = rest + buf
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE_BYTES:
                raise line_too_long(buf, path, line)
            rest = buf
            continue
        out = buf[:cut + 1]
        rest = buf[cut + 1:]
        yield out, line
        line += out.count(b"\n")


def _range_blocks(fh, start: int, end: int | None, block_bytes: int, first_line: int,
                  info: dict, path: str = ""):
    """``_byte_blocks`` of the lines that *start* in bytes ``[start, end)`` of a plain file
    (the last one read to its end; a line that starts before ``start`` belongs to the range
    before). ``info`` gets ``pos`` (where the first line starts) and ``lines`` (lines read)."""
    from coreselect.io.text import MAX_LINE_BYTES, line_too_long

    pos = start
    if start > 0:
        fh.seek(start - 1)
        if fh.read(1) != b"\n":  # inside a line: it belongs to the range before
            while True:
                buf = fh.read(1 << 16)
                if not buf:
                    pos = -1
                    break
                k = buf.find(b"\n")
                if k >= 0:
                    pos += k + 1
                    fh.seek(pos)
                    break
                pos += len(buf)
    else:
        fh.seek(0)
    info["pos"], info["lines"] = pos, 0
    if pos < 0 or (end is not None and pos >= end):
        return
    left = None if end is None else end - pos  # bytes in which our lines start
    rest = bytearray()
    line = first_line
    while True:
        # Each block read into its own bytearray after the previous block's partial last line,
        # then cut after its last newline in place: no copy of the block (bytes would take two).
        want = block_bytes if left is None else min(block_bytes, left)
        if want > 0:
            buf = bytearray(len(rest) + want)
            buf[:len(rest)] = rest
            view = memoryview(buf)
            try:
                got = fh.readinto(view[len(rest):])
            finally:
                view.release()
            if left is not None:
                left -= got
            if got < want:
                del buf[len(rest) + got:]
        elif rest:  # the last line runs past the range: read it to its end
            more = fh.read(1 << 16)
            k = more.find(b"\n")
            more = more if k < 0 else more[:k + 1]
            got = len(more)
            buf = rest + more
        else:
            break
        if not got:
            if len(rest) > MAX_LINE_BYTES:
                raise line_too_long(rest, path, line)
            if rest.strip():  # text after the last newline is a line unless blank
                info["lines"] = line - first_line + 1
                yield bytes(rest), line
            else:
                info["lines"] = line - first_line
            return
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE_BYTES:
                raise line_too_long(buf, path, line)
            rest = buf
            continue
        rest = buf[cut + 1:]
        del buf[cut + 1:]
        yield buf, line
        line += buf.count(b"\n")
        info["lines"] = line - first_line
    info["lines"] = line - first_line


def raw_blocks(path: str, block_bytes: int = BLOCK_BYTES, fast: bool = True, opener=None, *,
               start: int = 0, end: int | None = None, first_line: int = 1,
               header: tuple[int, int, int] | None = None, keep_tail: int = 0,
               info: dict | None = None):
    """Yield ``(header, RawBlock)`` for each block of a LIBSVM file, the file's blank-line rule
    applied: without a header a blank line is no row; with one it is an empty instance,
    except blank lines at the end past the announced count (held back until what follows
    them is known). The header (or None) is the same in every item; an empty file yields one
    item with an empty block.

    A *range* of a plain file (``start > 0`` or ``end`` given): the lines that start in
    ``[start, end)``, numbered from ``first_line``; past the first range, ``header`` is the
    file's (from its first range). The blank rows at the range's end are held back; ``keep_tail``
    of them are yielded (how many the whole file keeps is decided over all ranges), their
    number goes into ``info["held"]`` with ``info["rows"]`` (the other rows), ``pos`` and
    ``lines`` (see :func:`_range_blocks`)."""
    from coreselect.io.text import check_regular_input, open_binary

    spath = str(path)
    piece = start > 0 or end is not None
    if piece:
        check_regular_input(spath)
    info = {} if info is None else info
    first = start == 0  # the header can only be in the file's first range
    header = header if start > 0 else None
    held = _empty_block()  # trailing blank rows of the blocks so far (header files only)
    n_rows = 0
    with (open(spath, "rb") if piece else (opener or open_binary)(spath)) as fh:
        try:
            blocks = (_range_blocks(fh, start, end, block_bytes, first_line, info, spath) if piece
                      else _byte_blocks(fh, block_bytes, spath))
            for block, line in blocks:
                raw, blank, h = _parse_block(block, line, spath, header_ok=first, fast=fast)
                if first:
                    header = h
                    # the header may only be the first line that is not a comment
                    first = h is None and raw.n == 0 and len(blank) == 0
                if header is None:
                    raw = _take_rows(raw, ~blank)
                else:
                    # blank rows at the block's end wait: kept only if rows follow them,
                    # or as far as the header's count goes.
                    nz = np.flatnonzero(~blank)
                    cut = int(nz[-1]) + 1 if len(nz) else 0
                    tail = _take_rows(raw, np.arange(raw.n) >= cut)
                    if cut:
                        raw = _concat([held, _take_rows(raw, np.arange(raw.n) < cut)])
                        held = tail
                    else:
                        held = _concat([held, tail])
                        continue
                n_rows += raw.n
                if raw.n:
                    yield header, raw
        except DatasetError:
            raise
        except (OSError, EOFError, ValueError) as exc:
            raise DatasetError(f"cannot read the file: {exc}", path=spath) from None
    if piece:
        info["rows"], info["held"], info["header"] = n_rows, held.n, header
        if header is not None and held.n and keep_tail:
            yield header, _take_rows(held, np.arange(held.n) < keep_tail)
        return
    if header is not None and held.n:
        yield header, _take_rows(held, np.arange(held.n) < max(0, header[0] - n_rows))
    elif n_rows == 0:
        yield header, _empty_block()


def first_line_end(path: str, limit: int = 1 << 20) -> tuple[int, tuple[int, int, int] | None] | None:
    """Where the file's first line that is not a comment ends (the byte after its newline) and
    the header it is (or None): the line a first range must hold. None when not found within
    ``limit`` bytes."""
    with open(path, "rb") as fh:
        head = fh.read(limit)
    pos = 0
    while True:
        end = head.find(b"\n", pos)
        if end < 0:
            return None
        raw = _text_of(head[pos:end])
        if not raw.strip().startswith("#"):
            s = raw.split("#", 1)[0].strip()
            return end + 1, (_is_header(s) if s else None)
        pos = end + 1


def newlines_before(path: str, pos: int) -> int:
    """The number of newlines in the first ``pos`` bytes of a plain file."""
    n = 0
    with open(path, "rb") as fh:
        while pos > 0:
            buf = fh.read(min(pos, 16 << 20))
            if not buf:
                break
            n += buf.count(b"\n")
            pos -= len(buf)
    return n


@dataclass
class FileScan:
    """What deciding the base and the widths needs of a file (mergeable over blocks)."""

    header: tuple[int, int, int] | None = None
    n_rows: int = 0
    nnz: int = 0
    n_lab: int = 0
    idx_min: int = 1 << 62
    idx_max: int = -1
    idx_max_line: int = 0  # line of the first largest feature index
    idx_zero_line: int = 0  # line of the first feature index 0 (0: none)
    lab_min: int = 1 << 62
    lab_max: int = -1
    lab_max_line: int = 0
    stat: tuple[int, int] | None = None  # (size, mtime) of a local file when scanned

    def add(self, b: RawBlock) -> None:
        self.n_rows += b.n
        if len(b.idx):
            self.nnz += len(b.idx)
            lo, hi = int(b.idx.min()), int(b.idx.max())
            if lo == 0 and not self.idx_zero_line:
                self.idx_zero_line = _line_of(b.counts, b.row_lines, int(np.flatnonzero(b.idx == 0)[0]))
            self.idx_min = min(self.idx_min, lo)
            if hi > self.idx_max:
                self.idx_max = hi
                self.idx_max_line = _line_of(b.counts, b.row_lines, int(np.argmax(b.idx)))
        if len(b.labs):
            self.n_lab += len(b.labs)
            self.lab_min = min(self.lab_min, int(b.labs.min()))
            hi = int(b.labs.max())
            if hi > self.lab_max:
                self.lab_max = hi
                self.lab_max_line = _line_of(b.lab_counts, b.row_lines, int(np.argmax(b.labs)))


def merge_ranges(scans: list[FileScan], infos: list[dict]) -> tuple[FileScan, list[int], list[int]]:
    """One file's scan from the scans of its consecutive ranges (each numbered from line 1;
    ``infos`` as :func:`raw_blocks` fills them): the file's scan (lines shifted), each range's
    first line, and how many of its held blank rows each range keeps (header files: all of
    them when a later range holds a row, else as far as the header's count goes, as the
    whole-file reader keeps them)."""
    out = FileScan(header=scans[0].header if scans else None)
    firsts, line = [], 1
    for s, info in zip(scans, infos):
        firsts.append(line)
        shift = line - 1
        out.n_rows += s.n_rows
        out.nnz += s.nnz
        out.n_lab += s.n_lab
        if s.nnz:
            out.idx_min = min(out.idx_min, s.idx_min)
            if s.idx_zero_line and not out.idx_zero_line:
                out.idx_zero_line = s.idx_zero_line + shift
            if s.idx_max > out.idx_max:
                out.idx_max, out.idx_max_line = s.idx_max, s.idx_max_line + shift
        if s.n_lab:
            out.lab_min = min(out.lab_min, s.lab_min)
            if s.lab_max > out.lab_max:
                out.lab_max, out.lab_max_line = s.lab_max, s.lab_max_line + shift
        line += int(info.get("lines", 0))
    tails = [0] * len(scans)
    if out.header is not None:
        last = max([k for k, i in enumerate(infos) if i.get("rows", 0)], default=-1)
        before = sum(int(i.get("rows", 0)) for i in infos[:last + 1])
        for k in range(len(infos)):
            held = int(infos[k].get("held", 0))
            if k < last:
                tails[k] = held
                before += held
            else:  # the file's trailing blank lines: instances up to the announced count
                tails[k] = max(0, min(held, out.header[0] - before))
                before += tails[k]
        out.n_rows += sum(tails)
    return out, firsts, tails


@dataclass(frozen=True)
class Layout:
    """The decided index bases and widths of a file."""

    f_zero: bool
    l_zero: bool
    n_features: int
    n_labels: int


def resolve(scan: FileScan, spath: str, zero_based: bool | str = "auto", n_features: int | None = None,
            n_labels: int | None = None, bases: tuple[bool, bool] | None = None, check_width: bool = True,
            allow_empty: bool = False) -> Layout:
    """Decide bases and widths from a whole file's scan; raise what the data contradict
    (in the order the reader always checked them). ``bases`` imposes ``(features, labels)``
    zero-basedness decided elsewhere (over all shards of a dataset)."""
    header = scan.header
    if header is None and not scan.n_rows and not allow_empty:
        raise DatasetError("empty file", spath, 1)
    f_zero, l_zero = bases if bases is not None else _bases(zero_based, scan, header, n_features)
    if not f_zero and scan.nnz and scan.idx_min < 1:
        raise DatasetError("feature index 0 in a 1-based file", spath, scan.idx_zero_line)
    if not l_zero and scan.n_lab and scan.lab_min < 1:
        raise DatasetError("label 0 in a 1-based file", spath)
    fs, ls = (0 if f_zero else 1), (0 if l_zero else 1)
    nf = n_features if n_features is not None else (header[1] if header else (scan.idx_max - fs + 1 if scan.nnz else 0))
    nl = n_labels if n_labels is not None else (header[2] if header else (scan.lab_max - ls + 1 if scan.n_lab else 0))
    # Before anything of size nf or nl exists: a declared width the data cannot fill is refused.
    if check_width:
        check_declared_width("features", nf, scan.nnz, spath, 1 if header else None)
        check_declared_width("labels", nl, scan.n_lab, spath, 1 if header else None)
    if scan.nnz and scan.idx_max - fs >= nf:
        raise DatasetError(f"feature index {scan.idx_max} out of range ({nf} features)", spath, scan.idx_max_line)
    if scan.n_lab and scan.lab_max - ls >= nl:
        raise DatasetError(f"label {scan.lab_max} out of range ({nl} labels)", spath, scan.lab_max_line)
    if header is not None and header[0] != scan.n_rows:
        raise DatasetError(f"the header announces {header[0]} instances but the file holds {scan.n_rows}", spath, 1)
    return Layout(f_zero, l_zero, int(nf), int(nl))


def finish(raw: RawBlock, layout: Layout, spath: str) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(X, Y)`` of raw rows under a decided layout: CSR, X float64 without explicit zeros
    and with sorted indices (a feature twice on a line is an error naming it), Y int8 0/1.
    Consumes ``raw`` (its arrays are shifted and sorted in place: no copy of the entries)."""
    from coreselect.io._numba_libsvm import sort_rows

    n = raw.n
    idx, labs = raw.idx, raw.labs
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(raw.counts, out=indptr[1:])
    r, col = sort_rows(indptr, idx, raw.vals)
    if r >= 0:
        raise DatasetError(f"feature index {col} appears twice on the line", spath, int(raw.row_lines[r]))
    if not layout.f_zero:
        idx -= 1
    if not layout.l_zero:
        labs = labs - 1
    X = sp.csr_matrix((raw.vals, idx, indptr), shape=(n, layout.n_features))
    X.has_sorted_indices = True
    X.eliminate_zeros()
    lptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(raw.lab_counts, out=lptr[1:])
    Ys = sp.csr_matrix((np.ones(len(labs), dtype=np.int8), labs, lptr), shape=(n, layout.n_labels))
    Ys.sum_duplicates()  # "3,3" is label 3 once
    Ys.data[:] = 1
    return X, Ys


def scan_file(path: str, block_bytes: int = SCAN_BYTES, fast: bool = True, opener=None) -> FileScan:
    """One pass over a file that keeps only :class:`FileScan`'s numbers."""
    scan = FileScan()
    for header, raw in raw_blocks(path, block_bytes, fast, opener):
        scan.header = header
        scan.add(raw)
    return scan


def read_libsvm(
    path: str | os.PathLike,
    zero_based: bool | str = "auto",
    n_features: int | None = None,
    n_labels: int | None = None,
    name: str | None = None,
    block_bytes: int = BLOCK_BYTES,
    fast: bool = True,
) -> Dataset:
    """Read a multi-label LIBSVM/SVMlight file into a Dataset with a CSR ``X``.

    Parameters
    ----------
    path : path-like
        The file (``.gz``/``.bz2``/``.xz`` allowed).
    zero_based : bool or "auto"
        Index base of features and labels; ``"auto"`` follows the rules in the module docs.
    n_features, n_labels : int, optional
        Shape when neither the header nor the data give it (trailing all-zero columns).
    name : str, optional
        Dataset name; defaults to the file stem.
    block_bytes, fast
        Text parsed at a time; ``fast=False`` parses with the Python token path only (the
        tests' reference for the compiled parser).

    Returns
    -------
    Dataset
        Features named ``f0..``, labels ``l0..`` (in 0-based numbering).
    """
    spath = str(path)
    scan = FileScan()
    blocks = []
    for header, raw in raw_blocks(spath, block_bytes, fast):
        scan.header = header
        scan.add(raw)
        blocks.append(raw)
    layout = resolve(scan, spath, zero_based, n_features, n_labels)
    raw = _concat(blocks)
    del blocks
    X, Ys = finish(raw, layout, spath)
    n, nl = X.shape[0], layout.n_labels
    return Dataset(
        X=X,
        # Dense labels unless that would be large (extreme classification: millions of labels).
        Y=Ys.toarray() if n * nl <= _DENSE_Y_CELLS else Ys,
        feature_names=IndexedNames(layout.n_features, "f"),
        label_names=IndexedNames(nl, "l"),
        name=name or _stem(Path(spath)),
        metadata=DatasetMeta(format="libsvm", source=spath, zero_based=layout.f_zero,
                             labels_zero_based=layout.l_zero, label_source="file"),
    )


def _stem(p: Path) -> str:
    return stem(p)


def _bases(zero_based, scan: FileScan, header, n_features) -> tuple[bool, bool]:
    if zero_based is True or zero_based is False:
        return bool(zero_based), bool(zero_based)
    if zero_based != "auto":
        raise DatasetError(f"zero_based must be True, False or 'auto', not {zero_based!r}")
    nf = header[1] if header else n_features
    if scan.nnz and scan.idx_min == 0:
        f_zero = True
    elif header is not None:
        f_zero = not (scan.nnz and nf is not None and scan.idx_max == nf)
    else:
        f_zero = False
    if scan.n_lab and scan.lab_min == 0:
        l_zero = True
    elif header is not None:
        l_zero = not (scan.n_lab and scan.lab_max == header[2])
    else:
        l_zero = f_zero
    return f_zero, l_zero


def _line_of(counts: np.ndarray, row_lines, entry: int) -> int:
    ptr = np.cumsum(counts)
    return int(row_lines[int(np.searchsorted(ptr, entry, side="right"))])


def _diagnose_features(feat_parts: list[str], row_lines: list[int], path: str) -> None:
    """The token path: report the first bad ``index:value`` with its line."""
    for k, s in enumerate(feat_parts):
        for tok in s.split():
            i, sep, v = tok.partition(":")
            if not sep or ":" in v:
                raise DatasetError(f"expected 'index:value', found {shorten(tok)!r}", path, row_lines[k])
            try:
                fi = parse_number(i)
            except ValueError:
                raise DatasetError(f"bad feature entry {shorten(tok)!r}: index {shorten(i)!r} is not an integer", path,
                                   row_lines[k]) from None
            if fi != int(fi) or abs(fi) >= 2**53:
                raise DatasetError(f"feature index {shorten(i)!r} is not an integer", path, row_lines[k])
            try:
                parse_number(v)
            except ValueError as exc:
                raise DatasetError(f"bad feature entry {shorten(tok)!r}: {shorten(str(exc))}", path,
                                   row_lines[k]) from None


def libsvm_text(dataset: Dataset) -> str:
    """The LIBSVM text of a Dataset: header line, 0-based feature and label indices."""
    X = sp.csr_matrix(dataset.X, dtype=np.float64)
    X.sort_indices()
    Y = sp.csr_matrix(dataset.Y)
    Y.eliminate_zeros()
    Y.sort_indices()
    n, f = X.shape
    out = [f"{n} {f} {Y.shape[1]}"]
    for i in range(n):
        a, b = X.indptr[i], X.indptr[i + 1]
        feats = " ".join(
            f"{c}:{repr(v) if v != int(v) else int(v)}"
            for c, v in zip(X.indices[a:b].tolist(), X.data[a:b].tolist())
            if v != 0
        )
        labs = ",".join(str(c) for c in Y.indices[Y.indptr[i] : Y.indptr[i + 1]].tolist())
        out.append(f"{labs} {feats}".strip() if labs else feats)
    return "\n".join(out) + "\n"


def write_libsvm(dataset: Dataset, path: str | os.PathLike) -> None:
    """Write a Dataset as multi-label LIBSVM (header line, 0-based), atomically.

    Feature and label names are not stored (the format has no place for them).
    NaN values cannot be written and raise DatasetError.
    """
    from coreselect.io.files import atomic_output

    X = dataset.X
    data = X.data if sp.issparse(X) else np.asarray(X)
    if np.isnan(data).any() or np.isinf(data).any():
        raise DatasetError("LIBSVM cannot hold NaN or infinite values", path=str(path))
    from coreselect.io.text import compressed_writer

    text = libsvm_text(dataset)
    # compressed by the suffix (.svm.gz was written as plain text before)
    with atomic_output(path, mode="wb") as raw, compressed_writer(raw, str(path)) as fh:
        fh.write(text)
