"""Datasets read as row chunks with bounded memory, from one file or many.

The interface (what a store build or a selection over files uses)::

    ds = open_chunks(data, labels=None, **reader_options)   # -> ChunkedDataset, reads nothing yet
    ds.files, ds.format                                    # the shard files in order, "libsvm", ...
    ds.n_features, ds.n_labels, ds.feature_names, ds.label_names, ds.n_rows
    for chunk in ds.chunks(chunk_rows=None, chunk_bytes=None):   # re-iterable: a new pass each call
        chunk.X           # rows x n_features float64: CSR for LIBSVM/XMC, numpy for tables/ARFF
        chunk.Y           # rows x n_labels CSR, int8 0/1
        chunk.file        # the file (path or URL) the rows came from
        chunk.first_row   # index of the chunk's first row in the whole DATASET (all files)
    ds.file_chunks(i, ...)  # file i's chunks only (first_row still dataset-wide)
    ds.scan(); pickle.dumps(ds)  # the first pass done once, handed to workers (small)
    ds.file_scan(i); ds.scan(file_scans=[...])  # LIBSVM/XMC: the first pass in parallel
    ds.read()               # the whole dataset as one Dataset (the chunks concatenated)

``data`` is a file, a folder (every data file under it, recursively), a glob
(``shards/*.svm.gz``), a list file (suffix ``.list``: one path or URL per line, relative paths
from the list file's folder, ``#`` comments), a list of those, or the same as an fsspec URL
(``s3://bucket/shards/*.svm.gz``, ``s3://bucket/dataset/``). The files are row shards of one
dataset, in **sorted order of their full path/URL** (a list file or a Python list keeps its
own order). All must have the same format; their feature and label spaces must agree (the
first file that disagrees is named in a one-line :class:`~coreselect.errors.DatasetError`).

Widths and the first pass (LIBSVM/XMC). A LIBSVM file's index base and width may depend on
its whole content (an index 0 anywhere means 0-based; without a header the width is the
largest index), so the first call of :meth:`ChunkedDataset.chunks` (or :meth:`scan`,
:attr:`n_features`, ...) makes one cheap pass over all files that keeps only counts, minima
and maxima (:class:`coreselect.io.libsvm.FileScan`): after it **every chunk has the dataset's
final width**, and every error the whole-file reader reports except a feature repeated on a
line (reported by the chunk that holds it) is reported before the first chunk. Headerless
shards take the largest width of all shards and one base for all (0-based if any shard holds
index 0); shards with headers must declare the same widths and decide the same base. Memory
is bounded by the chunk (``chunk_bytes`` of text, 32 MiB by default, about 12 bytes per
non-zero once parsed: a few times ``chunk_bytes`` in all; the first pass reads 4 MiB at a
time), never by the file or the declared widths (a header declaring 10^8
labels costs nothing until the data hold them; such a header is refused by
:func:`~coreselect.io.dataset.check_declared_width` anyway).

``chunk_rows`` caps the rows of a chunk (chunks may have fewer: a chunk never spans two
files); ``chunk_bytes`` caps the text parsed at once. A file changed or removed between the
scan and a later pass is an error naming it.

CSV and Parquet files are read with pyarrow's streaming readers (``pyarrow.csv.open_csv`` in
blocks of ``chunk_bytes``, ``ParquetFile.iter_batches``), the same parser as the whole-file
reader (which concatenates the batches); X is dense float64. The first pass over a CSV checks
its header and size, settles each column's type and checks and counts its rows, streamed
(``scan_block`` bytes at a time, ``progress(n)`` called with the bytes read). A table with a
text or boolean feature column is read whole per file (its codes need every value; memory
bounded by the largest such file, not the dataset); shards with text columns must hold the
same values. ARFF files stream their data section in blocks of whole lines, each parsed with
the header (declared nominal values give the same codes in every block; files with string
attributes are read whole); X is CSR for sparse ARFF, dense otherwise; the ID columns
(:attr:`ChunkedDataset.id_columns`) are decided while streaming, as the whole-file reader
decides them. Errors name file and line as the whole-file reader's do.
"""

from __future__ import annotations

import glob as _glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, IndexedNames

__all__ = ["Chunk", "ChunkedDataset", "open_chunks", "resolve_files", "is_many", "names_files", "LIST_SUFFIX"]

LIST_SUFFIX = ".list"
_GLOB_CHARS = "*?["


@dataclass(frozen=True)
class Chunk:
    """Consecutive rows of a dataset (see the module docs)."""

    X: sp.csr_matrix | np.ndarray
    Y: sp.csr_matrix
    file: str
    first_row: int

    @property
    def n_rows(self) -> int:
        return self.X.shape[0]


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _data_suffix(name: str) -> bool:
    from coreselect.io import format_of

    try:
        format_of(name)
        return True
    except DatasetError:
        return False


def is_many(data: Any) -> bool:
    """Whether ``data`` names several files (a list, glob, list file, or a folder that is not a
    column store); a single existing data file is not."""
    if isinstance(data, (list, tuple)):
        return True
    if not isinstance(data, (str, os.PathLike)):
        return False
    text = os.fspath(data)
    if text.endswith(LIST_SUFFIX):
        return True
    if is_url(text):
        # s3://bucket/prefix (no pattern) stays a column store's URL
        return any(c in text for c in _GLOB_CHARS)
    p = Path(text)
    if p.is_dir():
        # a folder of data files; a store, or a folder without data, is not (the store's
        # reader, or load, says what it is)
        return not (p / "store.json").exists() and any(
            _data_suffix(f.name) and not f.is_dir() for f in p.rglob("*"))
    return not p.exists() and any(c in text for c in _GLOB_CHARS)


def names_files(data: Any) -> bool:
    """Whether ``data`` is read by :func:`open_chunks` rather than as a store, a single local
    file or a dataset name: several files (:func:`is_many`) or the URL of one data file."""
    if is_many(data):
        return True
    return isinstance(data, str) and is_url(data) and _data_suffix(data)


def resolve_files(data: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The shard files ``data`` names, in the order of the module docs; a name matching
    nothing is a DatasetError naming it."""
    if isinstance(data, (list, tuple)):
        out: list[str] = []
        for item in data:
            out.extend(resolve_files(item))
        if not out:
            raise DatasetError("an empty list of data files")
        return out
    text = os.fspath(data)
    if text.endswith(LIST_SUFFIX):
        return _from_list(text)
    if is_url(text):
        return _remote(text)
    p = Path(text)
    if p.is_dir():
        # pathlib's rglob does not enter linked folders: no loop
        files = _regular_once(sorted(str(f) for f in p.rglob("*") if _data_suffix(f.name)))
        if not files:
            raise DatasetError("the folder holds neither a column store (store.json) nor a data file (known "
                               "suffixes: .svm, .xmc, .csv, .parquet, "
                               ".arff, ...)", path=text)
        return files
    if p.exists() or p.is_symlink():
        return _regular_once([text])
    if any(c in text for c in _GLOB_CHARS):
        files = _regular_once(sorted(_glob_once(text)))
        if not files:
            raise DatasetError("the pattern matches no file", path=text)
        return files
    raise DatasetError("no such file", path=text)


def _regular_once(paths: list[str]) -> list[str]:
    """The regular files among ``paths`` (folders dropped), each file once (by its real
    path: a link beside its target, or a file reached twice, is read once); a dangling link
    or a special file (FIFO, device, socket) is an error naming it, before anything is read."""
    from coreselect.io.text import check_regular_input

    out: list[str] = []
    seen: set[str] = set()
    for f in paths:
        if os.path.isdir(f):
            continue
        check_regular_input(f)
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            out.append(f)
    return out


def _glob_once(pattern: str) -> list[str]:
    """``glob.glob(pattern, recursive=True)``, except that ``**`` enters each real folder
    once: a link to an ancestor (``ln -s . again``) would repeat every file below it, 40
    levels deep (two such links: 2^40 paths). Hidden names match as in :mod:`glob`."""
    if "**" not in pattern:
        return _glob.glob(pattern)
    import fnmatch

    absolute = pattern.startswith(os.sep)
    parts = [q for q in pattern.split(os.sep) if q]
    visited: set[str] = set()
    found: list[str] = []

    def entries(base: str):
        try:
            with os.scandir(base or os.curdir) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError:
            return []

    def join(base: str, name: str) -> str:
        return os.path.join(base, name) if base else name

    def walk(base: str, rest: list[str]) -> None:
        if not rest:
            found.append(base)
            return
        head, tail = rest[0], rest[1:]
        if head == "**":
            here = (os.path.realpath(base or os.curdir), len(rest))
            if here in visited:
                return
            visited.add(here)
            walk(base, tail)  # no folder at all
            for e in entries(base):
                if e.name.startswith("."):
                    continue
                if e.is_dir():
                    walk(join(base, e.name), rest)
                elif not tail:
                    found.append(join(base, e.name))
        elif any(c in head for c in _GLOB_CHARS):
            for e in entries(base):
                if e.name.startswith(".") and not head.startswith("."):
                    continue
                if fnmatch.fnmatchcase(e.name, head) and (not tail or e.is_dir()):
                    walk(join(base, e.name), tail)
        else:
            child = join(base, head)
            if tail and os.path.isdir(child) or not tail and os.path.lexists(child):
                walk(child, tail)

    walk(os.sep if absolute else "", parts)
    return list(dict.fromkeys(found))


def _from_list(path: str) -> list[str]:
    from coreselect.io.text import read_bytes

    base = os.path.dirname(path)
    out: list[str] = []
    for raw in read_bytes(path).decode("utf-8", errors="replace").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        out.append(line if is_url(line) or os.path.isabs(line) else os.path.join(base, line))
    if not out:
        raise DatasetError("the list file names no data file", path=path)
    return out


def _remote(url: str) -> list[str]:
    from coreselect.io.text import url_fs

    fs, root = url_fs(url)
    try:
        proto = url.split("://", 1)[0]
        if any(c in root for c in _GLOB_CHARS):
            found = fs.glob(root)
        elif fs.isdir(root):
            found = [f for f in fs.find(root) if _data_suffix(f)]
        else:
            found = [root] if fs.exists(root) else []
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
        raise DatasetError(f"cannot list: {' '.join(str(exc).split()) or type(exc).__name__}", path=url) from None
    files = sorted(f if "://" in f else f"{proto}://{f}" for f in found)
    if not files:
        raise DatasetError("matches no file", path=url)
    return files


def _check_same_format(files: list[str]) -> str:
    from coreselect.io import format_of

    fmt = format_of(files[0])
    for f in files[1:]:
        other = format_of(f)
        if other != fmt:
            raise DatasetError(f"is a {other} file but {files[0]} is {fmt}; the shards of a dataset share "
                               "one format", path=f)
    return fmt


def _stat(path: str) -> tuple[int, int] | None:
    if is_url(path):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class ChunkedDataset:
    """Row shards read chunk by chunk (see the module docs); made by :func:`open_chunks`."""

    def __init__(self, files: list[str], format: str, labels: Any = None, **options: Any):
        self.files = list(files)
        self.format = format
        self.labels = labels
        self.options = options
        self._scans: list | None = None
        self._layout = None
        self._rows: list[int] | None = None
        self._stats: list = []
        self._columns: tuple[list[str], list[str]] | None = None  # tables/ARFF: feature and label names
        self._streamable: list[bool] = []
        self._infos: list = []
        self._ids: tuple[int, ...] = ()
        #: ``progress(n)``: called with the bytes read by the first pass (tables and ARFF).
        self.progress = None
        #: Bytes the first pass reads at a time (tables and ARFF).
        self.scan_block = SCAN_BLOCK
        # Byte ranges (LIBSVM/XMC, plain local files): (file, start, end, header); None: one per file.
        self._pieces: list[tuple[int, int, int | None, Any]] | None = None
        self._piece_meta: list[tuple[int, int, int]] | None = None  # (first line, tail, rows)

    # ------------------------------------------------------------------ shape
    @property
    def scanned(self) -> bool:
        """Whether the first pass is done (its numbers travel with the object)."""
        return self._rows is not None

    @property
    def sparse(self) -> bool:
        return self.format in ("libsvm", "xmc")

    @property
    def n_features(self) -> int:
        self.scan()
        return self._layout.n_features if self.sparse else len(self._columns[0])

    @property
    def n_labels(self) -> int:
        self.scan()
        return self._layout.n_labels if self.sparse else len(self._columns[1])

    @property
    def feature_names(self) -> Sequence[str]:
        self.scan()
        return IndexedNames(self._layout.n_features, "f") if self.sparse else list(self._columns[0])

    @property
    def label_names(self) -> Sequence[str]:
        self.scan()
        return IndexedNames(self._layout.n_labels, "l") if self.sparse else list(self._columns[1])

    @property
    def n_rows(self) -> int:
        self.scan()
        return sum(self._rows)

    def file_rows(self) -> list[int]:
        """Rows per file, in file order."""
        self.scan()
        return list(self._rows)

    # ------------------------------------------------------------------ byte ranges
    def plan_pieces(self, piece_bytes: int, bounds: dict[int, list[int]] | None = None) -> list[tuple[int, int, int | None]]:
        """Cut every plain local LIBSVM/XMC file larger than ``piece_bytes`` into byte ranges of
        about that size, so that its passes spread over workers (``bounds``: a file's cut
        points, for tests). A range holds the lines that start in it; the file's first line
        that is not a comment (its header, if any) always lies in its first range; compressed
        files and URLs stay whole. Before the first pass; returns ``(file, start, end)`` of
        every piece in order (``end`` None: to the end of the file)."""
        from coreselect.io import libsvm
        from coreselect.io.text import COMPRESSED_SUFFIXES

        if self._rows is not None:
            raise DatasetError("plan_pieces comes before the first pass", path=self.files[0])
        pieces: list[tuple[int, int, int | None, Any]] = []
        for i, f in enumerate(self.files):
            cuts: list[int] = []
            size = 0
            if self.sparse and not is_url(f) and not f.lower().endswith(COMPRESSED_SUFFIXES):
                size = os.path.getsize(f)
                cuts = (sorted(bounds[i]) if bounds and i in bounds
                        else list(range(int(piece_bytes), size, int(piece_bytes)))
                        if size > piece_bytes else [])
            first = libsvm.first_line_end(f) if cuts else None
            if first is None:
                pieces.append((i, 0, None, None))
                continue
            ends = [max(c, first[0]) for c in cuts]  # the first range holds the first line
            starts = [0, *ends]
            for a, b in zip(starts, [*ends, None]):
                pieces.append((i, a, b, first[1]))
        self._pieces = pieces
        return [(i, a, b) for i, a, b, _ in pieces]

    @property
    def pieces_planned(self) -> bool:
        return self._pieces is not None

    @property
    def pieces(self) -> list[tuple[int, int, int | None]]:
        """``(file, start, end)`` of every piece (one per file unless :meth:`plan_pieces`)."""
        return [(i, a, b) for i, a, b, _ in self._all_pieces()]

    def _all_pieces(self):
        return self._pieces if self._pieces is not None else [(i, 0, None, None) for i in range(len(self.files))]

    def piece_size(self, k: int) -> int:
        i, a, b, _ = self._all_pieces()[k]
        if b is None:
            try:
                b = os.path.getsize(self.files[i]) if not is_url(self.files[i]) else a
            except OSError:
                b = a
        return max(int(b) - int(a), 0)

    def piece_scan(self, k: int):
        """Piece ``k``'s first-pass numbers: ``(FileScan, info)``, lines counted from the
        piece's first (the file's scan and info, for a whole file)."""
        from coreselect.io import libsvm

        i, a, b, _ = self._all_pieces()[k]
        if a == 0 and b is None:
            return self.file_scan(i), {}
        scan, info = libsvm.FileScan(), {}
        for raw in self.piece_raw(k, libsvm.SCAN_BYTES, info):
            scan.add(raw)
        return self.piece_scan_of(k, scan, info), info

    def piece_scan_of(self, k: int, scan, info: dict):
        """The scan of piece ``k`` (gathered from :meth:`piece_raw`'s blocks) completed."""
        i, a, _, header = self._all_pieces()[k]
        scan.header = header if a > 0 else info.get("header")
        scan.stat = _stat(self.files[i])
        return scan

    def piece_raw(self, k: int, block_bytes: int, info: dict):
        """Piece ``k``'s raw blocks (:class:`coreselect.io.libsvm.RawBlock`, indices as written)
        before the first pass: a pass that scans and counts at once. Lines are counted from the
        piece's first; :meth:`line_error` names the file's line in an error."""
        from coreselect.io import libsvm

        i, a, b, header = self._all_pieces()[k]
        f = self.files[i]
        if self.format == "xmc" and a == 0:
            from coreselect.io.xmc import check_header

            check_header(f)
        try:
            if a == 0 and b is None:
                for h, raw in libsvm.raw_blocks(f, block_bytes):
                    info["header"] = h
                    yield raw
            else:
                for _h, raw in libsvm.raw_blocks(f, block_bytes, start=a, end=b, header=header, info=info):
                    yield raw
        except DatasetError as exc:
            raise self.line_error(k, exc, info) from None

    def line_error(self, k: int, exc: DatasetError, info: dict) -> DatasetError:
        """``exc`` (raised on piece ``k``, lines counted from the piece's first) with the file's
        line number."""
        from coreselect.io import libsvm

        i, a, _, _ = self._all_pieces()[k]
        if a == 0 or exc.line is None or getattr(exc, "file_line", False):
            return exc  # a line of the file already (callers pass on what piece_raw raised)
        line = libsvm.newlines_before(self.files[i], info.get("pos", a)) + exc.line
        where = f"{exc.path}:{exc.line}: "
        text = str(exc)
        out = DatasetError(text[len(where):] if text.startswith(where) else text, exc.path, line)
        out.file_line = True
        return out

    @property
    def bases(self) -> tuple[bool, bool]:
        """Whether feature indices and labels are 0-based (after the first pass)."""
        self.scan()
        return self._layout.f_zero, self._layout.l_zero

    # ------------------------------------------------------------------ first pass
    def __getstate__(self) -> dict:
        return {**self.__dict__, "progress": None}  # a callback stays in its process

    def scan(self, file_scans: list | None = None, piece_scans: list | None = None,
             progress=None) -> None:
        """The first pass (once): bases, widths, rows per file, every whole-file check.
        ``progress(n)``: called with the bytes each block of the pass reads (tables and ARFF,
        :attr:`scan_block` at a time).

        ``file_scans``: LIBSVM/XMC only, :meth:`file_scan` of every file, computed elsewhere
        (in parallel, one task per file); they are combined without reading anything. A
        scanned ChunkedDataset pickles small (no open files): hand it to workers, whose
        :meth:`file_chunks` then read only their file."""
        if self._rows is not None:
            return
        if progress is not None:
            self.progress = progress
        if self.sparse:
            self._scan_sparse(file_scans, piece_scans)
        else:
            if file_scans is not None or piece_scans is not None:
                raise DatasetError("file_scans applies to LIBSVM and XMC files", path=self.files[0])
            self._scan_tables()

    def file_scan(self, i: int):
        """File ``i``'s first-pass numbers (:class:`coreselect.io.libsvm.FileScan`; LIBSVM/XMC)."""
        from coreselect.io import libsvm

        f = self.files[i]
        if self.format == "xmc":
            from coreselect.io.xmc import check_header

            check_header(f)
        scan = libsvm.scan_file(f)
        scan.stat = _stat(f)
        return scan

    def _libsvm_options(self) -> dict:
        opts = dict(self.options)
        opts.pop("name", None)
        if self.format == "xmc":
            if "zero_based" in opts:
                raise DatasetError("XMC files are 0-based; zero_based does not apply", path=self.files[0])
            opts["zero_based"] = True
        unknown = set(opts) - {"zero_based", "n_features", "n_labels"}
        if unknown:
            raise DatasetError(f"unknown option(s) for {self.format} files: {', '.join(sorted(unknown))}",
                               path=self.files[0])
        return opts

    def _scan_sparse(self, file_scans: list | None = None, piece_scans: list | None = None) -> None:
        from coreselect.io import libsvm

        if file_scans is None and (piece_scans is not None or self._pieces is not None):
            file_scans = self._merge_pieces(piece_scans)

        opts = self._libsvm_options()
        if self.labels is not None:
            raise DatasetError(f"{self.format.upper()} files carry their labels; do not pass labels",
                               path=self.files[0])
        zero_based = opts.get("zero_based", "auto")
        nf_opt, nl_opt = opts.get("n_features"), opts.get("n_labels")
        if file_scans is not None and len(file_scans) != len(self.files):
            raise DatasetError(f"{len(file_scans)} file scans for {len(self.files)} files")
        scans = list(file_scans) if file_scans is not None else [self.file_scan(i) for i in range(len(self.files))]
        self._stats = [getattr(s, "stat", None) for s in scans]
        self._scans = scans
        many = len(self.files) > 1
        with_header = [s.header is not None for s in scans]
        for f, h in zip(self.files, with_header):
            if h != with_header[0]:
                raise DatasetError(f"{'has' if h else 'has no'} header line but {self.files[0]} "
                                   f"{'has' if with_header[0] else 'has none'}; the shards of a dataset agree",
                                   path=f)
        if with_header[0] or not many:
            layouts = [libsvm.resolve(s, f, zero_based, nf_opt, nl_opt) for s, f in zip(scans, self.files)]
            for f, lay in zip(self.files, layouts):
                if lay != layouts[0]:
                    raise DatasetError(
                        f"declares {lay.n_features} features and {lay.n_labels} labels "
                        f"({_base(lay)}) but {self.files[0]} declares {layouts[0].n_features} and "
                        f"{layouts[0].n_labels} ({_base(layouts[0])}); the shards of a dataset agree", path=f)
            self._layout = layouts[0]
        else:
            # Headerless shards: one base for all (0-based if any holds index 0, as within a
            # file), the widest width of all; each file checked against it by name.
            if all(s.n_rows == 0 for s in scans):
                raise DatasetError("every file is empty", path=self.files[0], line=1)
            nnz = sum(s.nnz for s in scans)
            n_lab = sum(s.n_lab for s in scans)
            merged = libsvm.FileScan(nnz=nnz, n_lab=n_lab,
                                     idx_min=min(s.idx_min for s in scans), idx_max=max(s.idx_max for s in scans),
                                     lab_min=min(s.lab_min for s in scans), lab_max=max(s.lab_max for s in scans),
                                     n_rows=sum(s.n_rows for s in scans))
            bases = libsvm._bases(zero_based, merged, None, nf_opt)
            fs, ls = (0 if bases[0] else 1), (0 if bases[1] else 1)
            nf = nf_opt if nf_opt is not None else (merged.idx_max - fs + 1 if nnz else 0)
            nl = nl_opt if nl_opt is not None else (merged.lab_max - ls + 1 if n_lab else 0)
            for s, f in zip(scans, self.files):
                libsvm.resolve(s, f, n_features=nf, n_labels=nl, bases=bases, check_width=False, allow_empty=True)
            from coreselect.io.dataset import check_declared_width

            check_declared_width("features", nf, nnz, self.files[0])
            check_declared_width("labels", nl, n_lab, self.files[0])
            self._layout = libsvm.Layout(bases[0], bases[1], int(nf), int(nl))
        self._rows = [s.n_rows for s in scans]

    def _merge_pieces(self, piece_scans: list | None):
        """Each file's scan from its pieces' (computed here when not given), and every piece's
        first line, held blank rows kept and rows."""
        from coreselect.io import libsvm

        pieces = self._all_pieces()
        if piece_scans is None:
            piece_scans = [self.piece_scan(k) for k in range(len(pieces))]
        if len(piece_scans) != len(pieces):
            raise DatasetError(f"{len(piece_scans)} piece scans for {len(pieces)} pieces", path=self.files[0])
        file_scans, meta = [], []
        for i in range(len(self.files)):
            ks = [k for k, p in enumerate(pieces) if p[0] == i]
            if len(ks) == 1 and pieces[ks[0]][1] == 0 and pieces[ks[0]][2] is None:
                file_scans.append(piece_scans[ks[0]][0])
                meta.append((1, 0, piece_scans[ks[0]][0].n_rows))
                continue
            scans = [piece_scans[k][0] for k in ks]
            infos = [piece_scans[k][1] for k in ks]
            merged, firsts, tails = libsvm.merge_ranges(scans, infos)
            merged.stat = scans[0].stat
            if any(s.stat != merged.stat for s in scans):
                raise DatasetError("changed while its pieces were read; read it again", path=self.files[i])
            file_scans.append(merged)
            meta.extend((fl, t, s.n_rows + t) for fl, t, s in zip(firsts, tails, scans))
        self._piece_meta = meta
        return file_scans

    def piece_rows(self) -> list[int]:
        """Rows per piece, in order."""
        self.scan()
        if self._piece_meta is None:
            return list(self._rows)
        return [m[2] for m in self._piece_meta]

    def _scan_tables(self) -> None:
        """Names from each file's header or footer (checked to agree), then one pass that
        checks and counts the rows, with the whole-file reader's parser: streamed (numeric
        tables, ARFF without string attributes) or the whole-file reader (tables with text
        columns and ARFF with string attributes, whose codes need every value). The ID
        columns (nominal columns distinct in every row) are decided on the way, as the
        whole-file reader decides them."""
        from coreselect import io as cio
        from coreselect.io.tabular import check_same_kinds, column_kinds, table_chunks, table_columns

        opts = dict(self.options)
        opts.pop("name", None)
        rows, self._streamable, self._columns, self._infos = [], [], None, []
        nominal = None  # (file, its text columns' values): the first shard read whole
        first_kinds = None
        ids: set[int] | None = None
        id_state = _IdColumns()
        for f in self.files:
            self._stats.append(_stat(f))
            info = None
            feats = labs = None
            streamable = True
            n = 0
            if self.format in ("csv", "parquet"):
                info = table_columns(f, self.format, self.labels, chunk_bytes=self.scan_block,
                                     progress=self.progress, scan_block=self.scan_block, **opts)
                feats, labs, streamable = info.features, info.labels, info.streamable
                if streamable and info.rows is not None:
                    n = info.rows
                elif streamable:
                    for X, _Y in table_chunks(f, self.format, info, **opts):
                        n += X.shape[0]
            else:
                from coreselect.io.arff import arff_chunks

                try:
                    first = None
                    for part in arff_chunks(f, self.labels, chunk_bytes=self.scan_block, progress=self.progress,
                                            **opts):
                        if first is None:
                            first = part
                        id_state.add(part)
                        n += part.X.shape[0]
                    if first is None:  # no rows: the names of the whole-file reader
                        first = cio.read(f, labels=self.labels, **self.options)
                    feats, labs = list(first.feature_names), list(first.label_names)
                except NotImplementedError:  # string attributes: read whole
                    streamable = False
            if not streamable:
                ds = cio.read(f, labels=self.labels, **self.options)
                if self.progress is not None and self.format != "arff":
                    self.progress(_size_of(f))
                feats, labs, n = list(ds.feature_names), list(ds.label_names), ds.X.shape[0]
                ids = set(ds.id_columns) if ids is None else ids & set(ds.id_columns)
            if self._columns is None:
                self._columns = (list(feats), list(labs))
            elif (list(feats), list(labs)) != self._columns:
                raise DatasetError(f"its columns differ from those of {self.files[0]}; the shards of a dataset "
                                   "have the same features and labels", path=f)
            if self.format in ("csv", "parquet"):
                kinds = column_kinds(f, self.format, feats, None if streamable else ds.metadata.nominal_values,
                                     info, **opts)
                if first_kinds is None:
                    first_kinds = kinds
                else:
                    check_same_kinds(self.files[0], first_kinds, f, kinds)
            if not streamable:
                if nominal is None:
                    nominal = (f, ds.metadata.nominal_values)
                elif ds.metadata.nominal_values != nominal[1]:
                    raise DatasetError(f"the values of its text columns differ from those of {nominal[0]} (their "
                                       "codes would disagree); convert the columns to numbers", path=f)
            self._streamable.append(streamable)
            self._infos.append(info)
            rows.append(n)
        streamed = id_state.ids(sum(r for r, s in zip(rows, self._streamable) if s))
        if ids is None:
            self._ids = streamed
        elif all(not s for s in self._streamable):
            self._ids = tuple(sorted(ids))
        else:
            self._ids = tuple(sorted(ids & set(streamed)))
        self._rows = rows

    @property
    def id_columns(self) -> tuple[int, ...]:
        """Feature columns that identify samples (a nominal value distinct in every row of
        the dataset), decided by the first pass as the whole-file reader decides them
        (:func:`coreselect.io.dataset.detect_id_columns`); none for LIBSVM/XMC."""
        self.scan()
        return () if self.sparse else tuple(self._ids)

    # ------------------------------------------------------------------ passes
    def chunks(self, chunk_rows: int | None = None, chunk_bytes: int | None = None) -> Iterator[Chunk]:
        """All rows, file after file, in chunks (a new pass each call)."""
        for i in range(len(self.files)):
            yield from self.file_chunks(i, chunk_rows=chunk_rows, chunk_bytes=chunk_bytes)

    def file_chunks(self, i: int, chunk_rows: int | None = None, chunk_bytes: int | None = None) -> Iterator[Chunk]:
        """File ``i``'s rows in chunks; ``first_row`` counts from the dataset's first row."""
        self.scan()
        if self._piece_meta is not None:
            for k, p in enumerate(self._all_pieces()):
                if p[0] == i:
                    yield from self.piece_chunks(k, chunk_rows, chunk_bytes)
            return
        yield from self._chunks_of(i, None, chunk_rows, chunk_bytes)

    def piece_chunks(self, k: int, chunk_rows: int | None = None, chunk_bytes: int | None = None) -> Iterator[Chunk]:
        """Piece ``k``'s rows in chunks (see :meth:`plan_pieces`); ``first_row`` dataset-wide."""
        self.scan()
        if self._piece_meta is None:
            yield from self.file_chunks(self._all_pieces()[k][0], chunk_rows, chunk_bytes)
            return
        yield from self._chunks_of(self._all_pieces()[k][0], k, chunk_rows, chunk_bytes)

    def _chunks_of(self, i: int, k: int | None, chunk_rows: int | None, chunk_bytes: int | None) -> Iterator[Chunk]:
        if chunk_rows is not None and chunk_rows < 1:
            raise DatasetError(f"chunk_rows must be at least 1, not {chunk_rows}")
        path = self.files[i]
        if k is None:
            start, expect = sum(self._rows[:i]), self._rows[i]
        else:
            rows = [m[2] for m in self._piece_meta]
            start, expect = sum(rows[:k]), rows[k]
        if self._stats and self._stats[i] is not None and _stat(path) != self._stats[i]:
            raise DatasetError("changed or vanished since it was first read; read it again", path=path)
        seen = 0
        parts = (self._sparse_parts(path, chunk_bytes, k) if self.sparse
                 else self._table_parts(path, chunk_rows, chunk_bytes))
        for X, Y in parts:
            n = X.shape[0]
            step = chunk_rows or max(n, 1)
            for a in range(0, n, step):
                b = min(n, a + step)
                whole = a == 0 and b == n  # X[0:n] would copy the block
                yield Chunk(X=X if whole else X[a:b], Y=Y if whole else Y[a:b], file=path,
                            first_row=start + seen + a)
            seen += n
        if seen != expect:
            raise DatasetError(f"holds {seen} rows now but held {expect} when first read; it changed "
                               "while being read", path=path)

    def _sparse_parts(self, path: str, chunk_bytes: int | None, k: int | None = None):
        from coreselect.io import libsvm

        block = chunk_bytes or libsvm.BLOCK_BYTES
        if k is None or self._piece_meta is None:
            blocks = libsvm.raw_blocks(path, block)
        else:
            _, a, b, header = self._all_pieces()[k]
            first_line, tail, _ = self._piece_meta[k]
            blocks = (libsvm.raw_blocks(path, block) if a == 0 and b is None else
                      libsvm.raw_blocks(path, block, start=a, end=b, first_line=first_line,
                                        header=header, keep_tail=tail))
        for _header, raw in blocks:
            if raw.n:
                yield libsvm.finish(raw, self._layout, path)

    def _table_parts(self, path: str, chunk_rows: int | None = None, chunk_bytes: int | None = None):
        from coreselect import io as cio
        from coreselect.io.tabular import table_chunks

        k = self.files.index(path)
        opts = dict(self.options)
        opts.pop("name", None)
        if self._streamable[k] and self.format == "arff":
            from coreselect.io.arff import arff_chunks

            for part in arff_chunks(path, self.labels, chunk_bytes=chunk_bytes or (32 << 20), **opts):
                yield part.X, sp.csr_matrix(np.asarray(part.Y), dtype=np.int8)
            return
        if self._streamable[k]:
            yield from table_chunks(path, self.format, self._infos[k], chunk_rows=chunk_rows,
                                    chunk_bytes=chunk_bytes, **opts)
            return
        ds = cio.read(path, labels=self.labels, **self.options)
        Y = sp.csr_matrix(np.asarray(ds.Y) if not sp.issparse(ds.Y) else ds.Y, dtype=np.int8)
        yield ds.X, Y

    # ------------------------------------------------------------------ whole
    def read(self, name: str | None = None) -> Dataset:
        """The whole dataset as one :class:`Dataset` (a single file reads as
        :func:`coreselect.io.read` reads it)."""
        from coreselect import io as cio
        from coreselect.io.dataset import stack

        if len(self.files) == 1:
            return cio.read(self.files[0], labels=self.labels, **self.options)
        if not self.sparse:
            parts = [cio.read(f, labels=self.labels, **self.options) for f in self.files]
            self._check_tables(parts)
            return stack(parts, name or _common_name(self.files))
        import dataclasses

        from coreselect.io.dataset import DatasetMeta

        Xs, Ys = [], []
        for c in self.chunks():
            Xs.append(c.X)
            Ys.append(c.Y)
        X = sp.vstack(Xs, format="csr") if Xs else sp.csr_matrix((0, self.n_features))
        Y = sp.vstack(Ys, format="csr") if Ys else sp.csr_matrix((0, self.n_labels), dtype=np.int8)
        from coreselect.io.libsvm import _DENSE_Y_CELLS

        if X.shape[0] * self.n_labels <= _DENSE_Y_CELLS:
            Y = Y.toarray()
        meta = DatasetMeta(format=self.format, source=str(self.files[0]), zero_based=self._layout.f_zero,
                           labels_zero_based=self._layout.l_zero, label_source="file")
        meta = dataclasses.replace(meta, parts=tuple(self.files), files_read=tuple(self.files))
        return Dataset(X=X, Y=Y, feature_names=self.feature_names, label_names=self.label_names,
                       name=name or _common_name(self.files), metadata=meta)

    def _check_tables(self, parts: list[Dataset]) -> None:
        """The first pass's checks on shards read whole: the same columns, each of one kind,
        text columns with the same values (else their codes would disagree)."""
        from coreselect.io.tabular import check_same_kinds, column_kinds

        opts = dict(self.options)
        opts.pop("name", None)
        first = parts[0]
        first_kinds = None
        for f, p in zip(self.files, parts):
            if list(p.feature_names) != list(first.feature_names) or list(p.label_names) != list(first.label_names):
                raise DatasetError(f"its columns differ from those of {self.files[0]}; the shards of a dataset "
                                   "have the same features and labels", path=f)
            if self.format not in ("csv", "parquet"):
                continue
            kinds = column_kinds(f, self.format, list(p.feature_names), p.metadata.nominal_values, **opts)
            if first_kinds is None:
                first_kinds = kinds
                continue
            check_same_kinds(self.files[0], first_kinds, f, kinds)
            if p.metadata.nominal_values != first.metadata.nominal_values:
                raise DatasetError(f"the values of its text columns differ from those of {self.files[0]} (their "
                                   "codes would disagree); convert the columns to numbers", path=f)


#: Bytes the first pass over tables and ARFF files reads at a time (:attr:`ChunkedDataset.scan_block`).
SCAN_BLOCK = 4 << 20


class _IdColumns:
    """The ID-column rule (:func:`coreselect.io.dataset.detect_id_columns` with the ARFF
    reader's candidates: nominal columns declaring at least n - 1 values) over row blocks:
    per candidate, the codes seen so far; a column stops being followed once a code repeats
    or the rows outnumber its values (memory: the declared values, never the rows)."""

    def __init__(self):
        self.seen: dict[int, np.ndarray] | None = None
        self.rows = 0

    def add(self, part: Dataset) -> None:
        kinds = part.metadata.feature_kinds or ()
        names = list(part.feature_names)
        values = part.metadata.nominal_values
        if self.seen is None:
            self.seen = {j: np.zeros(len(values.get(names[j], ())) + 1, dtype=bool)
                         for j, k in enumerate(kinds) if k != "numeric"}
        self.rows += part.X.shape[0]
        for j in list(self.seen):
            seen = self.seen[j]
            if self.rows > seen.size:  # more rows than values (and the missing bin): never distinct
                del self.seen[j]
                continue
            col = part.X[:, j]
            col = col.toarray().ravel() if sp.issparse(col) else np.asarray(col)
            codes = col.astype(np.int64)
            if len(np.unique(codes)) != len(codes) or seen[codes].any():
                del self.seen[j]
            else:
                seen[codes] = True

    def ids(self, n: int) -> tuple[int, ...]:
        if self.seen is None or n < 2:
            return ()
        return tuple(sorted(self.seen))


def _size_of(path: str) -> int:
    st = _stat(path)
    return st[0] if st else 0


def _base(layout) -> str:
    return f"{'0' if layout.f_zero else '1'}-based"


def _common_name(files: list[str]) -> str:
    from coreselect.io.text import stem

    parent = os.path.basename(os.path.dirname(files[0].rstrip("/"))) or stem(files[0])
    return parent


def open_chunks(data: str | os.PathLike | Sequence[str | os.PathLike], labels: Any = None,
                **reader_options: Any) -> ChunkedDataset:
    """A :class:`ChunkedDataset` over the files ``data`` names (see the module docs); lists the
    files and checks their formats now, reads them on first use."""
    files = resolve_files(data)
    fmt = _check_same_format(files)
    if fmt != "arff" and "missing" in reader_options:
        if reader_options.pop("missing") not in (None, "error"):
            raise DatasetError(f"missing='bin' (--missing bin) applies to ARFF files only; this is a {fmt} "
                               "file, whose missing values are always an error", path=files[0])
    return ChunkedDataset(files, fmt, labels, **reader_options)
