"""Building a column store from files, out of core and in parallel.

The data come as a *chunked source* (the :class:`coreselect.io.chunks.ChunkedDataset`
interface: ``files``, ``file_chunks(i)`` yielding row chunks with ``.X`` and ``.Y``,
``feature_names``/``label_names``/``n_features``/``n_labels``; picklable, so that a worker
opens the files itself). Three passes, each a map of small tasks over an engine:

The unit of work is a *piece*: a file, or a byte range of a large plain LIBSVM/XMC file
(:data:`PIECE_BYTES`; the lines that start in it), so one big file spreads over workers too.

1. **count** (a task per group of pieces; for LIBSVM/XMC files not scanned yet, the readers'
   first pass in the same read, indices counted as written and shifted once every piece's
   scan has decided the bases): exact value counts per column
   (:class:`~coreselect.store._binning.ColumnCounts`; the cap's sketch for columns with more
   distinct values than ``cap``), label ones, rows per file. The driver merges them (counts
   add, so the merge is independent of the split) and turns them into each value's code
   (:func:`~coreselect.store._binning.bin_table`), the column order and the row blocks.
2. **encode** (a task per group of pieces): every chunk's codes, cut at column blocks and
   row blocks, written as pieces into a spill folder inside the store being built.
3. **tile** (a task per row block): the pieces of a row block stacked into its tiles
   (column block x row block) and its label tile, each written with its checksum.

The driver writes the small files and ``store.json`` last; the whole store appears at its path
only when complete (:func:`coreselect.files.atomic_dir`). At a URL (object storage), pass 3's
tasks write their tiles straight under the target (:class:`coreselect.store.fs.UrlWriter`:
no tile passes through the driver) and the driver uploads the small files and ``store.json``
last (:func:`coreselect.store.fs.build_direct`: a prefix without it is no store; on failure
nothing is left). The spill stays on the local disk, except with a Dask engine, whose workers
may run on other machines: then it goes under the build's temporary prefix beside the target
(:class:`UrlSpill`), where every worker reads it. Tiles depend only on the rows and
the codes, so the store is the same bytes whatever the grouping, the number of workers or
the engine. Where no column is sketched, it equals
:func:`~coreselect.store.build_store` on the whole data.

Memory (per process): one chunk and its codes (a few times the chunk), the value counts
(at most ``min(nnz, d * (cap + 1))`` entries of 24 bytes, plus one chunk's cells pending), and
in pass 3 one tile with its pieces (about ``TARGET_TILE_NNZ`` codes: ~100 MB at 6 bytes a
code, plus scipy's stacking copy). Never the file. Disk: the spill holds the codes once
(about the store's size) beside the store being written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import io
import json
import logging
import os
import pickle
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import STRATEGIES
from coreselect.errors import CheckpointError, DatasetError, InputError, OutputError
from coreselect.files import atomic_dir
from coreselect.store._binning import (
    DEFAULT_CAP, ColumnCounts, bin_table, encode_chunk, encode_labels, encode_rows, label_ones,
)
from coreselect.store._format import (
    DEFAULT_BLOCK_SIZE, FORMAT, FORMAT_VERSION, META_FILE, StoreRef, label_dir, meta_checksum,
    shuffled_order, tile_dir,
)

log = logging.getLogger(__name__)

#: ``progress(stage, done, total)``: stages ``"count"``, ``"encode"`` (bytes read of the
#: data files) and ``"tiles"`` (row blocks written); with a checkpoint, once per pass,
#: ``"resumed:STAGE"`` (tasks taken from the checkpoint, tasks of the pass) and, where kept
#: tasks failed their checksums (done again), ``"damaged:STAGE"`` (those tasks, the pass's).
Progress = Callable[[str, int, int], None]
SPILL = ".spill"


@dataclass(frozen=True)
class BuildOptions:
    """The store's layout and binning (as :func:`coreselect.store.build_store`)."""

    block_size: int = DEFAULT_BLOCK_SIZE
    row_block_size: int | None = None
    seed: int = 0
    n_bins: int = 5
    strategy: str = "auto"
    min_bin_count: int = 10
    cap: int = DEFAULT_CAP
    chunk_rows: int | None = None
    chunk_bytes: int | None = None
    name: str = "dataset"


@dataclass(frozen=True)
class UrlSpill:
    """A spill under a URL build's temporary prefix (``url``), shared by workers on any
    machine. ``key`` signs the plan there: a worker unpickles only the plan this build's
    driver wrote (the key travels in the tasks, never to the bucket)."""

    url: str
    options: dict = field(repr=False)
    key: bytes = field(repr=False)


@dataclass(frozen=True)
class Shared:
    """What every task receives: the source (files and reader options, never data), the
    options, and the folder of the store being built (or, a Dask build to a URL, its
    :class:`UrlSpill`). Small: travels inside each task."""

    source: Any
    options: BuildOptions
    root: str | UrlSpill
    keep: tuple[int, ...] | None = None  # the candidate columns when ID columns are left out
    is_reference: bool = field(default=True, repr=False)
    target: StoreRef | None = None  # a URL store: the tiles are written straight there


# -- planning (pure) -----------------------------------------------------------------------
def plan_groups(sizes: Sequence[int], n_workers: int, per_worker: int = 4) -> list[list[int]]:
    """Consecutive files grouped into tasks of about equal bytes: one task with one worker,
    else about ``per_worker`` tasks per worker (uneven files still spread), never more tasks
    than files. Deterministic; every file in exactly one group, in order."""
    n = len(sizes)
    if n == 0:
        return []
    if n_workers <= 1:
        return [list(range(n))]
    n_tasks = min(n, n_workers * per_worker)
    total = float(sum(max(int(s), 1) for s in sizes))
    cum = np.cumsum([max(int(s), 1) for s in sizes]) - 0.5 * np.array(
        [max(int(s), 1) for s in sizes])  # each file's middle byte
    group = np.minimum((cum / total * n_tasks).astype(np.int64), n_tasks - 1)
    return [list(np.flatnonzero(group == g)) for g in range(n_tasks) if (group == g).any()]


def row_bounds(n: int, rbs: int) -> np.ndarray:
    n_rb = -(-n // rbs)
    return np.minimum(np.arange(n_rb + 1, dtype=np.int64) * rbs, n)


# -- tasks (run by the engines; module-level so that they pickle) -----------------------------
#: While the driver runs tasks in its own process: called with the bytes of each chunk read
#: (estimated from the file's size and rows), for a progress bar that moves within a file.
_LIVE: Callable[[float], None] | None = None


#: A plain LIBSVM/XMC file larger than this is read as byte ranges of about this size (its
#: passes spread over the workers; rows stay in file order, the store is the same bytes).
PIECE_BYTES = 64 << 20


# The build's unit of work is a *piece*: a byte range of a file for sources that plan them
# (:meth:`coreselect.io.chunks.ChunkedDataset.plan_pieces`), else a whole file.
def _n_pieces(source) -> int:
    return len(source.pieces) if hasattr(source, "pieces") else len(source.files)


def _piece_size(source, k: int) -> int:
    return int(source.piece_size(k)) if hasattr(source, "piece_size") else _file_size(source, k)


def _piece_file(source, k: int) -> str:
    return source.files[source.pieces[k][0]] if hasattr(source, "pieces") else source.files[k]


def _chunks(shared: Shared, i: int, slices: bool = True):
    """Piece ``i``'s chunks as ``(X, Y, file)``, ID columns left out; cut into row slices of
    about :data:`SLICE_CELLS` cells unless ``slices`` is false."""
    o = shared.options
    keep = None if shared.keep is None else np.asarray(shared.keep, dtype=np.int64)
    per_row = 0.0
    source = shared.source
    if _LIVE is not None and hasattr(source, "file_rows"):
        rows = source.piece_rows()[i] if hasattr(source, "piece_rows") else source.file_rows()[i]
        per_row = _piece_size(source, i) / max(rows, 1)
    chunks = source.piece_chunks if hasattr(source, "piece_chunks") else source.file_chunks
    for chunk in chunks(i, chunk_rows=o.chunk_rows, chunk_bytes=o.chunk_bytes):
        X = chunk.X if keep is None else chunk.X[:, keep]
        if not slices:
            yield X, chunk.Y, chunk.file
        elif sp.isspmatrix_csr(X) and X.has_canonical_format:
            for a, b in _slices(X):  # views of the chunk's rows (no copy)
                yield _rows_view(X, a, b), chunk.Y[a:b], chunk.file
        else:
            for a, b in _slices(X):
                yield X[a:b], chunk.Y[a:b], chunk.file
        if per_row and _LIVE is not None:
            _LIVE(per_row * X.shape[0])


#: Cells coded at a time: a reader's chunk (32 MiB of text, ~4 M non-zeros) is cut into row
#: slices of about this many, so the coding temporaries (~10 arrays of 8 bytes per cell)
#: follow this, not the reader's block.
SLICE_CELLS = 1 << 20


def _rows_view(X: sp.csr_matrix, a: int, b: int) -> sp.csr_matrix:
    """Rows ``a .. b`` of a canonical CSR matrix sharing its arrays (``X[a:b]`` copies)."""
    if a == 0 and b == X.shape[0]:
        return X
    p0, p1 = X.indptr[a], X.indptr[b]
    out = sp.csr_matrix((X.data[p0:p1], X.indices[p0:p1], X.indptr[a:b + 1] - p0),
                        shape=(b - a, X.shape[1]))
    out.has_canonical_format = True
    return out


def _columns_view(c: sp.csc_matrix, lo: int, hi: int) -> sp.csc_matrix:
    """Columns ``lo .. hi`` of a CSC matrix sharing its arrays (``c[:, lo:hi]`` copies)."""
    if lo == 0 and hi == c.shape[1]:
        return c
    p0, p1 = c.indptr[lo], c.indptr[hi]
    return sp.csc_matrix((c.data[p0:p1], c.indices[p0:p1], c.indptr[lo:hi + 1] - p0),
                         shape=(c.shape[0], hi - lo))


def _slices(X) -> list[tuple[int, int]]:
    """Row ranges of ``X`` holding about :data:`SLICE_CELLS` cells each (at least a row)."""
    n = X.shape[0]
    if sp.issparse(X):
        ends = np.asarray(sp.csr_matrix(X).indptr if X.format != "csr" else X.indptr)
    else:
        ends = np.arange(n + 1, dtype=np.int64) * max(X.shape[1], 1)
    if ends[-1] <= SLICE_CELLS:
        return [(0, n)]
    cuts = np.searchsorted(ends, np.arange(SLICE_CELLS, int(ends[-1]), SLICE_CELLS))
    bounds = np.unique(np.concatenate([[0], np.clip(cuts, 1, n), [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _file_size(source, i: int) -> int:
    sizes = getattr(source, "sizes", None)
    if sizes is not None:
        return int(sizes[i])
    try:
        return os.path.getsize(source.files[i])
    except (OSError, TypeError):
        return 0


@dataclass
class Counted:
    """Pass 1's result for a group of files."""

    counts: ColumnCounts
    ones: np.ndarray
    rows: dict[int, int]
    nnz: int
    sparse: bool | None
    n_labels: int
    bytes: int
    scans: list = field(default_factory=list)  # count_raw_task: the readers' first pass


def count_raw_task(shared: Shared, pieces: Sequence[int]) -> Counted:
    """Pass 1 of a LIBSVM/XMC source not scanned yet: the readers' first pass (each piece's
    :class:`~coreselect.io.libsvm.FileScan`, in ``Counted.scans``) and the value counts in one
    read of the text. Columns and labels are counted by their index as written (the base is
    known only once every piece is scanned); :func:`_from_raw` shifts them."""
    from coreselect.io import libsvm

    source, o = shared.source, shared.options
    counts = ColumnCounts(cap=o.cap)
    ones = np.zeros(0, np.int64)
    rows: dict[int, int] = {}
    scans, nnz, nbytes = [], 0, 0
    for k in pieces:
        scan, info = libsvm.FileScan(), {}
        path = _piece_file(source, k)
        try:
            for raw in source.piece_raw(k, o.chunk_bytes or libsvm.BLOCK_BYTES, info):
                scan.add(raw)
                width = int(raw.idx.max()) + 1 if raw.idx.size else 0
                n_lab = int(raw.labs.max()) + 1 if raw.labs.size else 0
                X, Y = libsvm.finish(raw, libsvm.Layout(True, True, width, n_lab), path)
                for a, b in _slices(X):
                    counts.add_chunk(_rows_view(X, a, b), o.strategy)
                got = label_ones(Y)
                if got.size > ones.size:
                    ones = np.concatenate([ones, np.zeros(got.size - ones.size, np.int64)])
                ones[:got.size] += got
                nnz += int(X.nnz)
        except DatasetError as exc:
            raise source.line_error(k, exc, info) from None
        scans.append((source.piece_scan_of(k, scan, info), info))
        rows[k] = scan.n_rows
        nbytes += _piece_size(source, k)
    counts.flush()
    return Counted(counts, ones, rows, nnz, True, 0, nbytes, scans)


def _from_raw(counted: list[Counted], source) -> None:
    """The first pass done (``source.scan`` of every piece's scan): counts of raw indices
    shifted to columns and labels by the decided bases, rows with the blank rows kept."""
    source.scan(piece_scans=[s for c in counted for s in c.scans])
    f_zero, l_zero = source.bases
    rows = source.piece_rows()
    for c in counted:
        if not f_zero:
            c.counts.shift_columns(1)
        if not l_zero:
            c.ones = c.ones[1:]
        c.rows = {k: rows[k] for k in c.rows}
        c.counts.n_rows = sum(c.rows.values())


def count_task(shared: Shared, files: Sequence[int]) -> Counted:
    counts = ColumnCounts(cap=shared.options.cap)
    ones = np.zeros(0, np.int64)
    rows: dict[int, int] = {}
    nnz, sparse, n_labels, nbytes = 0, None, 0, 0
    for i in files:
        rows[i] = 0
        for X, Y, file in _chunks(shared, i):
            if X.shape[0] != Y.shape[0]:
                raise InputError(f"{file}: a chunk has {X.shape[0]} rows of features "
                                 f"and {Y.shape[0]} of labels")
            if sparse is None:
                sparse = sp.issparse(X)
            elif sparse != sp.issparse(X):
                raise InputError(f"{file}: chunks mix sparse and dense rows")
            counts.add_chunk(X, shared.options.strategy)
            got = label_ones(Y)
            if got.size > ones.size:
                ones = np.concatenate([ones, np.zeros(got.size - ones.size, np.int64)])
            ones[:got.size] += got
            n_labels = max(n_labels, Y.shape[1])
            nnz += int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))
            rows[i] += X.shape[0]
        nbytes += _piece_size(shared.source, i)
    counts.flush()
    return Counted(counts, ones, rows, nnz, sparse, n_labels, nbytes)


@dataclass
class Plan:
    """What pass 1 decided, written once into the spill folder for the workers."""

    n: int
    d: int
    n_labels: int
    sparse: bool
    first_row: dict[int, int]
    bounds: np.ndarray
    order: np.ndarray
    table: Any
    flip: np.ndarray
    n_blocks: int
    block_size: int
    position: np.ndarray  # the store position of each column (inverse of ``order``)
    label_n_codes: np.ndarray


_PLANS: dict[str, Plan] = {}


def _plan(shared: Shared) -> Plan:
    path = _spilled(shared.root, "plan.pkl")
    plan = _PLANS.get(str(path))
    if plan is None:
        if isinstance(path, Path):
            with open(path, "rb") as fh:
                plan = pickle.load(fh)
        else:
            fsys, at = _url_fs(path)
            blob = fsys.cat_file(at)
            body, tag = blob[:-32], blob[-32:]
            if not hmac.compare_digest(tag, hmac.new(shared.root.key, body,
                                                     hashlib.sha256).digest()):
                raise InputError(f"{path.url}: the build's plan was altered on the server")
            plan = pickle.loads(body)
        _PLANS.clear()  # one build at a time per process
        _PLANS[str(path)] = plan
    return plan


def _save_plan(shared: Shared, plan: Plan) -> None:
    """The plan, where every task of passes 2 and 3 reads it (signed at a URL)."""
    body = pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
    path = _spilled(shared.root, "plan.pkl")
    if isinstance(path, Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    else:
        _put(path, body + hmac.new(shared.root.key, body, hashlib.sha256).digest())


def _spilled(root: str | UrlSpill, *parts: str) -> Path | UrlSpill:
    """A file (or folder) of the spill: a local path, or a URL under the temporary prefix."""
    if isinstance(root, UrlSpill):
        return UrlSpill("/".join([root.url.rstrip("/"), SPILL, *parts]), root.options, root.key)
    return Path(root, SPILL, *parts)


def _url_fs(at: UrlSpill):
    from coreselect.store import fs

    return fs.filesystem(at.url, at.options)


def _put(at: UrlSpill, data: bytes) -> None:
    from coreselect.store import fs

    fsys, path = _url_fs(at)
    try:
        fsys.pipe_file(path, data)
    except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
        raise fs._remote_error(fs.scrub(at.url), "", exc, at.options, verb="write") from None


def _piece_path(root: str | UrlSpill, r: int, what: str, first: int) -> Path | UrlSpill:
    return _spilled(root, f"r{r:06d}", what, f"{first:015d}.npz")


def _save_piece(path: Path | UrlSpill, m: sp.spmatrix) -> None:
    if isinstance(path, UrlSpill):
        buf = io.BytesIO()
        sp.save_npz(buf, sp.csc_matrix(m), compressed=False)
        _put(path, buf.getvalue())
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sp.save_npz(path, sp.csc_matrix(m), compressed=False)


def _pieces(shared: Shared, r: int) -> Callable[[str], list[sp.csc_matrix]]:
    """Row block ``r``'s pieces, by column block (``"b000001"``) or ``"labels"``, in row
    order; at a URL, listed once and each block's fetched together."""
    folder = _spilled(shared.root, f"r{r:06d}")
    if isinstance(folder, Path):
        return lambda what: [sp.load_npz(p) for p in sorted((folder / what).glob("*.npz"))]
    fsys, root = _url_fs(folder)
    try:
        names = sorted(fsys.find(root))
    except FileNotFoundError:
        names = []
    by: dict[str, list[str]] = {}
    for name in names:
        by.setdefault(name[len(root) + 1:].split("/", 1)[0], []).append(name)

    def load(what: str) -> list[sp.csc_matrix]:
        got = fsys.cat(by.get(what, []), on_error="raise") if by.get(what) else {}
        return [sp.load_npz(io.BytesIO(got[name])) for name in by.get(what, [])]
    return load


def _drop_pieces(shared: Shared, r: int) -> None:
    """Row block ``r``'s pieces, once its tiles are written (the spill holds each code once)."""
    folder = _spilled(shared.root, f"r{r:06d}")
    if isinstance(folder, Path):
        shutil.rmtree(folder, ignore_errors=True)
    else:
        fsys, root = _url_fs(folder)
        try:
            fsys.rm(root, recursive=True)
        except Exception:  # noqa: BLE001 - the driver removes the whole prefix at the end
            pass


def _tile_writer(shared: Shared):
    """Where pass 3 writes tiles: the local folder, or straight to the URL store."""
    from coreselect.store.build import _Writer

    if shared.target is None:
        return _Writer(Path(shared.root))
    from coreselect.store.fs import UrlWriter

    return UrlWriter(shared.target)


def encode_task(shared: Shared, files: Sequence[int]) -> int:
    plan = _plan(shared)
    nbytes = 0
    dtype = np.int16 if plan.table.n_codes.max(initial=0) < 2**15 else np.int32
    t = plan.table
    # The compiled coder takes whole reader chunks (its scratch is 12 bytes a cell, not the
    # general path's ~80): small-range integer values with a direct lookup (count data).
    fast = (plan.sparse and t._lookup is not None and t._uniq is None
            and not t.sketched.any() and not t.zero_code.any())
    for i in files:
        row = plan.first_row[i]
        end = row + _rows_of(plan, i)
        for X, Y, file in _chunks(shared, i):
            m = X.shape[0]
            if row + m > end:
                raise InputError(f"{file}: the file changed between the build's passes "
                                 "(more rows than counted)")
            labels = encode_labels(Y, plan.flip)
            r0 = int(np.searchsorted(plan.bounds, row, side="right") - 1)
            r1 = int(np.searchsorted(plan.bounds, row + m - 1, side="right") - 1) if m else r0
            codes = rows_c = None
            rows_l = labels.tocsr() if r1 > r0 else None
            for r in range(r0, r1 + 1):
                a = max(int(plan.bounds[r]), row) - row
                b = min(int(plan.bounds[r + 1]), row + m) - row
                if b <= a:
                    continue
                c_part = (encode_rows(t, X, plan.d, plan.position, a, b)
                          if fast and sp.isspmatrix_csr(X) else None)
                if c_part is None:
                    if codes is None:
                        codes = encode_chunk(t, X, plan.d, plan.position)
                        rows_c = codes.tocsr() if r1 > r0 else None
                    c_part = codes if rows_c is None else rows_c[a:b].tocsc()
                c_part.data = c_part.data.astype(dtype)
                l_part = labels if rows_l is None else rows_l[a:b].tocsc()
                first = row + a
                _save_piece(_piece_path(shared.root, r, "labels", first), l_part)
                for blk in range(plan.n_blocks):
                    lo, hi = blk * plan.block_size, min(plan.d, (blk + 1) * plan.block_size)
                    _save_piece(_piece_path(shared.root, r, f"b{blk:06d}", first),
                                _columns_view(c_part, lo, hi))
            row += m
        if row != end:
            raise InputError(f"{_piece_file(shared.source, i)}: the file changed between the "
                             "build's passes (fewer rows than counted)")
        nbytes += _piece_size(shared.source, i)
    return nbytes


def _rows_of(plan: Plan, i: int) -> int:
    later = [r for j, r in plan.first_row.items() if j > i]
    return (min(later) if later else plan.n) - plan.first_row[i]


def tile_task(shared: Shared, r: int) -> dict[str, list[int]]:
    """Row block ``r``'s tiles and label tile from its pieces; the files' sizes and crc32."""
    plan = _plan(shared)
    height = int(plan.bounds[r + 1] - plan.bounds[r])
    out = _tile_writer(shared)
    pieces = _pieces(shared, r)

    def stacked(what: str, width: int) -> sp.csc_matrix:
        parts = pieces(what)
        block = (sp.vstack(parts, format="csc") if parts
                 else sp.csc_matrix((0, width), dtype=np.int8))
        if block.shape != (height, width):
            raise InputError(f"row block {r} holds {block.shape[0]} rows, expected {height}: "
                             "the data changed during the build")
        block.sort_indices()
        return block

    for blk in range(plan.n_blocks):
        width = min(plan.d, (blk + 1) * plan.block_size) - blk * plan.block_size
        t = stacked(f"b{blk:06d}", width)
        out.save_csc(tile_dir(blk, r), t.indptr, t.indices, t.data)
        del t
    t = stacked("labels", plan.n_labels)
    out.save_csc(label_dir(r), t.indptr, t.indices, t.data)
    _drop_pieces(shared, r)
    return out.files


# -- a stand-in source ----------------------------------------------------------------------
@dataclass(frozen=True)
class FileChunk:
    X: Any
    Y: Any
    file: str
    first_row: int


@dataclass(frozen=True)
class _Meta:
    feature_names: Any
    label_names: Any
    n_features: int
    id_columns: tuple
    name: str


@dataclass
class WholeFileChunks:
    """A chunked source over files by name, for tables, ARFF and registry names: data files
    (a path or URL) are streamed chunk by chunk (:func:`coreselect.io.chunks.open_chunks`:
    the first pass settles column types, counts the rows and decides the ID columns as the
    whole-file reader does; memory follows the chunk), a registry name (a small built-in
    dataset) is read whole and cut into chunks of ``chunk_rows``. Holds paths, reader options
    and, once scanned, the small first-pass results (picklable)."""

    files: list[str]
    options: dict = field(default_factory=dict)
    chunk_rows: int = 1 << 16
    format: str = "whole-file"

    def _source(self):
        """The streaming source of the files, or None for a registry name."""
        if "_src" not in self.__dict__:
            from coreselect.io.chunks import is_url, open_chunks

            files = [str(f) for f in self.files]
            if all(is_url(f) or Path(f).is_file() for f in files):
                self.__dict__["_src"] = open_chunks(files if len(files) > 1 else files[0], **self.options)
            else:
                self.__dict__["_src"] = None
        return self.__dict__["_src"]

    def _load(self, i: int):
        from coreselect.datasets.load import load

        return load(self.files[i], **self.options)

    @property
    def _first(self):
        # The first file's names and widths, read once (not pickled with the source).
        if self.__dict__.get("_meta") is None:
            src = self._source()
            if src is not None:
                from coreselect.io.text import stem

                name = stem(src.files[0], (".csv", ".parquet", ".pq", ".arff"))
                meta = _Meta(src.feature_names, src.label_names, src.n_features, src.id_columns, name)
            else:
                ds = self._load(0)
                meta = _Meta(ds.feature_names, ds.label_names, ds.n_features, tuple(ds.id_columns), ds.name)
            self.__dict__["_meta"] = meta
        return self.__dict__["_meta"]

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_meta"}

    def scan(self, progress=None) -> None:
        """The streaming source's first pass (``progress(n)``: bytes read), done once."""
        src = self._source()
        if src is not None:
            src.scan(progress=progress)

    def file_rows(self) -> list[int]:
        src = self._source()
        if src is None:
            return [self._load(i).n_samples for i in range(len(self.files))]
        return src.file_rows()

    @property
    def feature_names(self):
        return self._first.feature_names

    @property
    def label_names(self):
        return self._first.label_names

    @property
    def n_features(self):
        return self._first.n_features

    @property
    def id_columns(self):
        return self._first.id_columns

    @property
    def name(self):
        return self._first.name

    @property
    def n_labels(self):
        src = self._source()
        return None if src is None else src.n_labels

    def file_chunks(self, i: int, chunk_rows: int | None = None, chunk_bytes: int | None = None):
        src = self._source()
        if src is not None:
            for c in src.file_chunks(i, chunk_rows=chunk_rows or self.chunk_rows, chunk_bytes=chunk_bytes):
                yield FileChunk(c.X, c.Y, c.file, c.first_row)
            return
        ds = self._load(i)
        if i and not (_same_names(ds.feature_names, self.feature_names)
                      and _same_names(ds.label_names, self.label_names)):
            raise InputError(f"{self.files[i]}: its feature or label columns differ from "
                             f"those of {self.files[0]}; the shards of a dataset agree")
        step = int(chunk_rows or self.chunk_rows)
        X = ds.X.tocsr() if sp.issparse(ds.X) else ds.X
        Y = sp.csr_matrix(ds.Y)
        for a in range(0, X.shape[0], step):
            yield FileChunk(X[a:a + step], Y[a:a + step], self.files[i], a)

    def chunks(self, chunk_rows: int | None = None, chunk_bytes: int | None = None):
        for i in range(len(self.files)):
            yield from self.file_chunks(i, chunk_rows, chunk_bytes)


def _same_names(a, b) -> bool:
    """Equal column names (default names compared by their count and prefix)."""
    if len(a) != len(b):
        return False
    from coreselect.io.dataset import IndexedNames

    if isinstance(a, IndexedNames) or isinstance(b, IndexedNames):
        return a == b
    return [str(x) for x in a] == [str(x) for x in b]


# -- the driver ------------------------------------------------------------------------------
def build_store_from_source(source: Any, path: str | os.PathLike, *,
                            options: BuildOptions = BuildOptions(), engine: Any = None,
                            progress: Progress | None = None,
                            storage_options: dict | None = None,
                            checkpoint: str | os.PathLike | None = None, _url: Any = None):
    """Build a column store at ``path`` from the chunked ``source`` (module docstring), the
    tasks run by ``engine`` (a :class:`coreselect.engines.base.Engine`; None: in this
    process). ``path`` may be a URL: the workers write the tiles there, the driver the rest,
    ``store.json`` last (:func:`coreselect.store.fs.build_direct`; ``storage_options`` reach
    the workers with the tasks). ``checkpoint``: a local path where every finished task is
    kept, so that the same call after an interruption skips them
    (:mod:`coreselect.store._resume`; removed when the store is committed); with a URL target
    the checkpointed build is made locally, then published (:func:`coreselect.store.fs.build_at_url`).

    Raises
    ------
    InputError
        Bad options, a target that is not free, data that break the binning rules, or files
        that change between the passes; nothing is left at ``path``.
    CheckpointError
        A checkpoint of another build (other files, sizes, times or options), or a damaged
        record; one line naming what differs.
    """
    from coreselect.store import fs
    from coreselect.store.build import _check_params, check_build_target

    path = fs.local_path(path)
    if fs.scheme(path) is not None:
        if checkpoint is not None:  # the kept tiles are local: build here, then publish
            return fs.build_at_url(path, lambda local: build_store_from_source(
                source, local, options=options, engine=engine, progress=progress,
                checkpoint=checkpoint), storage_options)
        return _build_at_url(source, path, options, engine, progress, storage_options)
    _check_params(options.block_size, options.row_block_size, options.seed)
    if options.strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {options.strategy!r}; choose one of "
                         f"{', '.join(STRATEGIES)}")
    if int(options.n_bins) < 2 or int(options.min_bin_count) < 1 or int(options.cap) < 1:
        raise InputError("n_bins must be at least 2, min_bin_count and cap at least 1")
    from coreselect.spec import MAX_BINS

    if int(options.n_bins) > MAX_BINS:  # a code is a 32-bit integer: refused before any file
        raise InputError(f"n_bins must be an integer in [2, {MAX_BINS}] (codes are 32-bit "
                         f"integers), got {options.n_bins}")
    target = Path(path)
    if checkpoint is not None:  # a kill in the last cleanup left it: swept even if done
        from coreselect.store._resume import sweep_removed

        sweep_removed(checkpoint)
    check_build_target(target)
    n_files = len(source.files)
    if n_files == 0:
        raise InputError("no data files to build the store from")
    if engine is None:
        from coreselect.engines.local import LocalEngine

        engine = LocalEngine()
    n_workers = int(getattr(engine, "n_workers", None) or _dask_workers(engine) or 1)
    if hasattr(source, "plan_pieces") and not source.scanned and not source.pieces_planned:
        source.plan_pieces(PIECE_BYTES)
    sizes = [_piece_size(source, k) for k in range(_n_pieces(source))]
    groups = plan_groups(sizes, n_workers)
    total_bytes = sum(sizes)
    start = time.perf_counter()
    # LIBSVM/XMC not scanned yet: the readers' first pass (widths, bases, rows of every piece)
    # runs inside the counting pass, one read of the text for both.
    raw = hasattr(source, "piece_raw") and source.sparse and not source.scanned
    from coreselect.store._resume import identities

    seen = identities(source)  # every file's size and time (ETag): checked after the reads
    if checkpoint is not None:
        if raw:  # a checkpoint keeps plain counts: the readers' first pass runs apart
            source.scan()
        try:
            _build_resumable(source, target, options, engine, progress, checkpoint, groups,
                             total_bytes, _candidates(source), seen)
        except OSError as exc:
            if isinstance(exc, OutputError):
                raise
            raise _os_error(exc, source, Path(str(exc.filename or target))) from exc
        finally:
            _PLANS.clear()
        from coreselect.store.opening import open_store

        return open_store(target)
    keep = None if raw else _candidates(source)
    try:
        with atomic_dir(target) as tmp:
            shared = _shared(source, options, tmp, keep, _url)
            counted = _run(engine, count_raw_task if raw else count_task, shared, groups,
                           "count", total_bytes, progress, lambda res: res.bytes)
            if raw:
                _from_raw(counted, source)
                shared = dataclasses.replace(shared, source=source)  # scanned: workers read only
            plan = _merge(counted, source, options, keep)
            _save_plan(shared, plan)
            _run(engine, encode_task, shared, groups, "encode", total_bytes, progress,
                 lambda res: res)
            _check_unchanged(source, seen)
            n_rb = plan.bounds.size - 1
            files: dict[str, list[int]] = {}
            for got in _run(engine, tile_task, shared, list(range(n_rb)), "tiles", n_rb,
                            progress, lambda res: 1):
                files.update(got)
            shutil.rmtree(tmp / SPILL, ignore_errors=True)  # a URL spill: with its prefix
            _PLANS.clear()
            _finish(tmp, plan, files, source, options, keep)
    except OutputError:
        raise
    except OSError as exc:
        raise _os_error(exc, source, target) from exc
    finally:
        _PLANS.clear()
    log.info("built store %s from %d files (%d pieces, %d bytes) in %.1fs", target, n_files,
             len(sizes), total_bytes, time.perf_counter() - start)
    if _url is not None:
        return None  # the tiles are at the URL: build_direct publishes and opens the store
    from coreselect.store.opening import open_store

    return open_store(target)


def _os_error(exc: OSError, source, target: Path) -> Exception:
    """An input file that vanished or cannot be read mid-build, said so (InputError); any
    other failure is the store's (OutputError)."""
    name = getattr(exc, "filename", None)
    if name is not None:
        inputs = {os.path.abspath(str(f)) for f in source.files if "://" not in str(f)}
        if os.path.abspath(str(name)) in inputs:
            why = ("vanished during the build" if isinstance(exc, FileNotFoundError)
                   else f"cannot be read ({exc.strerror or exc})")
            return InputError(f"{name}: {why}; nothing was written, build again")
    return OutputError(str(target), exc.strerror or str(exc), exc.errno)


def _row_block_prefix(r: int) -> str:
    """Where :func:`tile_task` reads row block ``r``'s pieces, relative to the root."""
    return _piece_path("", r, "labels", 0).parent.parent.as_posix() + "/"


def _check_unchanged(source, seen: list) -> None:
    """Refuse a build whose files changed while it read them (a reader that reads a file
    whole per pass cannot tell; a chunked one checks at the start of each pass): the store
    would mix two versions of the data."""
    from coreselect.store._resume import identities

    for i, (was, now) in enumerate(zip(seen, identities(source))):
        if was != now:
            what = ("vanished" if now[1] is None else
                    f"was {was[1]} bytes, now {now[1]}" if was[1] != now[1] else "was modified")
            raise InputError(f"{source.files[i]}: changed during the build ({what}); nothing "
                             "was written, build again")


def _build_resumable(source, target: Path, options: BuildOptions, engine, progress,
                     checkpoint, groups, total_bytes: int, keep, seen: list) -> None:
    """The three passes with every finished task kept under ``checkpoint``
    (:mod:`coreselect.store._resume`), the store assembled from the kept tiles at the end."""
    from coreselect.store._resume import BuildCheckpoint, fingerprint

    ck = BuildCheckpoint(checkpoint, fingerprint(source, options, keep, seen))
    mine = ck.ck.path.absolute()
    for p in (mine, mine.parent / f"{mine.name}.parts"):
        if p == target.absolute() or target.absolute() in p.parents or (
                p.name.endswith(".parts") and p in target.absolute().parents):
            raise InputError(f"checkpoint {ck.shown} and the store {target} overlap; give a "
                             "checkpoint path outside the store")
    ck.open()
    try:
        _passes(ck, source, target, options, engine, progress, groups, total_bytes, keep, seen)
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        if not any(ck.taken.values()):
            ck.drop_if_empty()
            raise
        # a manifest's result is not signed: a forged one that decodes but is of the wrong
        # shape fails where it is used
        raise CheckpointError(f"checkpoint {ck.shown} is damaged (a kept task's result is "
                              f"malformed: {type(exc).__name__}); delete it and its .parts "
                              "folder to start afresh") from None
    except BaseException:
        ck.drop_if_empty()  # a first attempt that finished nothing leaves nothing behind
        raise


def _passes(ck, source, target: Path, options: BuildOptions, engine, progress, groups,
            total_bytes: int, keep, seen: list) -> None:
    from coreselect.files import checkpoint as test_hold
    from coreselect.store._resume import _link

    work = ck.folder / "work"
    shared = Shared(source, options, str(work), keep)
    groups = ck.plan("groups", groups)
    counted = _run(engine, count_task, shared, groups, "count", total_bytes, progress,
                   lambda res: res.bytes, resume=(ck,))
    plan = _merge(counted, source, options, keep)
    (work / SPILL).mkdir(parents=True, exist_ok=True)
    plan_file = work / SPILL / "plan.pkl"
    with open(plan_file.with_suffix(".tmp"), "wb") as fh:
        pickle.dump(plan, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(plan_file.with_suffix(".tmp"), plan_file)
    common = ((f"{SPILL}/plan.pkl", str(plan_file)),)
    _run(engine, encode_task, shared, groups, "encode", total_bytes, progress,
         lambda res: res, resume=(ck, common))
    _check_unchanged(source, seen)
    pieces = tuple((rel, str(p)) for g in groups for rel, p in ck.files_of("encode", g))
    n_rb = plan.bounds.size - 1
    files: dict[str, list[int]] = {}
    for got in _run(engine, tile_task, shared, list(range(n_rb)), "tiles", n_rb, progress,
                    lambda res: 1, resume=(ck, common, pieces, _row_block_prefix)):
        files.update(got)
    test_hold("build-commit")  # tests kill the build here
    with atomic_dir(target) as tmp:
        for r in range(n_rb):
            for rel, kept in ck.files_of("tiles", r):
                _link(kept, tmp / rel)
        _finish(tmp, plan, files, source, options, keep)
    ck.remove()


def _build_at_url(source, url: str, options: BuildOptions, engine, progress,
                  storage_options: dict | None):
    """The build to a URL (:func:`coreselect.store.fs.build_direct`): tiles written by the
    workers under the target, the spill local except with Dask (under the temporary
    prefix: the workers may be on other machines)."""
    from coreselect.store import fs

    distributed = getattr(engine, "name", "") == "dask"

    def build(local: Path, target: StoreRef, staging: StoreRef) -> None:
        spill = (UrlSpill(staging.path, dict(staging.options or {}), secrets.token_bytes(32))
                 if distributed else None)
        build_store_from_source(source, local, options=options, engine=engine,
                                progress=progress, _url=(target, spill))

    return fs.build_direct(url, build, storage_options,
                           settle=getattr(engine, "settle", None))


def _shared(source, options: BuildOptions, tmp: Path, keep, url) -> Shared:
    """The tasks' :class:`Shared`: the spill in ``tmp`` (or a URL build's :class:`UrlSpill`),
    the tiles into ``tmp`` (or straight to a URL build's target)."""
    target, spill = url if url is not None else (None, None)
    if spill is None:
        (tmp / SPILL).mkdir()
    return Shared(source, options, str(tmp) if spill is None else spill, keep, target=target)


def _candidates(source) -> tuple[int, ...] | None:
    """The columns a selection may pick when the source names ID columns (their width must
    then be known), else None (all)."""
    ids = tuple(getattr(source, "id_columns", None) or ())
    if not ids:
        return None
    d = getattr(source, "n_features", None)
    if d is None:
        raise InputError("ID columns need a known number of feature columns")
    return tuple(int(j) for j in np.setdiff1d(np.arange(int(d)), ids))


def _dask_workers(engine) -> int | None:
    client = getattr(engine, "client", None) or getattr(engine, "_client", None)
    try:
        return len(client.scheduler_info()["workers"]) if client is not None else None
    except Exception:  # noqa: BLE001 - only sizes the plan
        return None


def _run(engine, func, shared, tasks, stage, total, progress, amount,
         resume: tuple | None = None) -> list:
    """``engine.map(func, shared, tasks)`` with the stage's progress; ``resume``:
    ``(BuildCheckpoint, common inputs, inputs, select)`` to take the finished tasks from a
    checkpoint and keep the others (:meth:`coreselect.store._resume.BuildCheckpoint.run`)."""
    global _LIVE
    done, live = [0], [0.0]

    def on_result(_i: int, result: Any) -> None:
        done[0] += amount(result)
        live[0] = float(done[0])
        if progress is not None:
            progress(stage, done[0], total)

    def on_chunk(nbytes: float) -> None:
        live[0] += nbytes
        progress(stage, int(min(live[0], total)), total)

    if progress is not None:
        progress(stage, 0, total)
    in_process = getattr(engine, "name", "") == "local" and not getattr(engine, "n_workers", None)
    _LIVE = on_chunk if progress is not None and in_process else None
    try:
        if resume is None:
            return engine.map(func, shared, tasks, on_result=on_result)
        ck, rest = resume[0], resume[1:]

        def announce(taken: int, redone: int) -> None:
            if progress is not None:
                progress(f"resumed:{stage}", taken, len(tasks))
                if redone:
                    progress(f"damaged:{stage}", redone, len(tasks))

        return ck.run(engine, func, shared, stage, tasks, on_result, *rest, announce=announce)
    finally:
        _LIVE = None


def _merge(counted: list[Counted], source, options: BuildOptions,
           keep: tuple[int, ...] | None) -> Plan:
    counts = ColumnCounts(cap=options.cap)
    ones = np.zeros(0, np.int64)
    rows: dict[int, int] = {}
    nnz, sparse, n_labels = 0, None, int(getattr(source, "n_labels", None) or 0)
    for c in counted:  # in task order: the same result for any grouping (counts add)
        counts.merge(c.counts)
        if c.ones.size > ones.size:
            ones = np.concatenate([ones, np.zeros(c.ones.size - ones.size, np.int64)])
        ones[:c.ones.size] += c.ones
        rows.update(c.rows)
        nnz += c.nnz
        n_labels = max(n_labels, c.n_labels)
        if c.sparse is not None:
            if sparse is not None and sparse != c.sparse:
                raise InputError("some files hold sparse rows and others dense ones")
            sparse = c.sparse
    n = counts.n_rows
    if n == 0 or sparse is None:
        raise InputError("the data have no samples")
    d = max(counts.d, len(keep) if keep is not None
            else int(getattr(source, "n_features", None) or 0))
    counts._widen(d)
    if d == 0:
        raise InputError("there are no feature columns")
    if n_labels == 0:
        raise InputError("there are no label columns")
    ones = np.concatenate([ones, np.zeros(n_labels - ones.size, np.int64)])
    from coreselect.store.build import auto_row_block_size

    rbs = (auto_row_block_size(n, d, nnz, options.block_size) if options.row_block_size is None
           else min(int(options.row_block_size), n))
    first, at = {}, 0
    for i in sorted(rows):
        first[i] = at
        at += rows[i]
    table = bin_table(counts, options.n_bins, options.strategy, options.min_bin_count)
    if counts.sketched.any():
        log.warning("%d columns have more than %d distinct values: binned on values kept to "
                    "%d significant bits", int(counts.sketched.sum()), options.cap, 10)
    order = shuffled_order(d, options.seed)
    return Plan(n=n, d=d, n_labels=n_labels, sparse=sparse, first_row=first,
                bounds=row_bounds(n, rbs), order=order, table=table, flip=ones * 2 > n,
                n_blocks=-(-d // options.block_size), block_size=int(options.block_size),
                position=np.argsort(order),
                label_n_codes=np.where((ones == 0) | (ones == n), 1, 2))


def _finish(tmp: Path, plan: Plan, files: dict, source, options: BuildOptions,
            keep: tuple[int, ...] | None) -> None:
    """The small files and ``store.json`` (with every checksum) last."""
    from coreselect.io.dataset import IndexedNames
    from coreselect.store.build import _Writer, check_meta_before_commit

    d = plan.d
    feature_names = getattr(source, "feature_names", None)
    if feature_names is not None and keep is not None:
        feature_names = [feature_names[j] for j in keep]
    if feature_names is None or len(feature_names) != d:
        feature_names = IndexedNames(d, getattr(source, "feature_prefix", "x"))
    label_names = getattr(source, "label_names", None)
    if label_names is None or len(label_names) != plan.n_labels:
        label_names = [f"y{i}" for i in range(plan.n_labels)]
    names_pattern = feature_names.prefix if isinstance(feature_names, IndexedNames) else None
    out = _Writer(tmp)
    out.files.update(sorted(files.items()))
    out.save("labels/n_codes.npy", plan.label_n_codes)
    out.save("order.npy", plan.order)
    n_codes = plan.table.n_codes[plan.order]
    out.save("n_codes.npy", n_codes)
    if names_pattern is None:
        out.save_text("feature_names.json", json.dumps([str(s) for s in feature_names]))
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "name": str(options.name),
        "n_samples": int(plan.n),
        "n_features": int(d),
        "n_labels": int(plan.n_labels),
        "label_names": [str(s) for s in label_names],
        "feature_names_prefix": names_pattern,
        "column_ids": None if keep is None else [int(j) for j in keep],
        "block_size": int(options.block_size),
        "n_blocks": int(plan.n_blocks),
        "row_block_size": int(plan.bounds[1] - plan.bounds[0]),
        "n_row_blocks": int(plan.bounds.size - 1),
        "seed": int(options.seed),
        "discretization": {"n_bins": int(options.n_bins), "strategy": options.strategy,
                           "min_bin_count": int(options.min_bin_count)},
        "content": "discretized codes (per-column binning over all rows at build time)",
    }
    meta = {**meta, "n_constant": int((n_codes <= 1).sum()), "files": out.files}
    meta["checksum"] = meta_checksum(meta)
    check_meta_before_commit(tmp, meta)
    (tmp / META_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")


__all__ = ["BuildOptions", "build_store_from_source", "plan_groups"]
