"""Opening and reading a column store (layout in :mod:`coreselect.store`)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from functools import cached_property
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix
from coreselect.errors import InputError
from coreselect.store._format import (
    ARRAYS,
    FORMAT,
    FORMAT_VERSION,
    META_FILE,
    NPY_HEADER_LOCK,
    StoreRef,
    as_int_field,
    check_csc,
    file_crc32,
    label_dir,
    load_npy,
    meta_checksum,
    store_error,
    tile_dir,
    tile_name,
)

# Files whose crc32 this process has verified, by (path, size, mtime): each block is
# checked once per process (per worker), when it is first opened.
_VERIFIED: set[tuple[str, int, int]] = set()
_VERIFIED_LOCK = threading.Lock()
#: ``order`` and ``n_codes`` as checked, by the same file identity: a process that opens the
#: store again for every part (streaming, a Dask worker) checks a 10^7-column permutation once,
#: not once per part. The last few files only.
_CHECKED: dict[tuple[str, str, int, int], np.ndarray] = {}
_CHECKED_MAX = 8
#: A row block may declare at most ROW_RATIO rows per stored code (labels and features), or
#: ROW_FLOOR rows whatever it holds: real rows hold a label or a feature value.
ROW_FLOOR = 1 << 20
ROW_RATIO = 64


class ColumnStore:
    """An opened column store. Cheap to open: only ``store.json`` is read and every file is
    ``stat``-ed; blocks are memory-mapped, checksummed (once per process) and checked when
    a range of columns or a tile is asked for."""

    def __init__(self, path: str | os.PathLike, meta: dict):
        self.path = Path(path)
        self.meta = meta

    # -- metadata ------------------------------------------------------------------------
    @property
    def ref(self) -> StoreRef:
        """A picklable reference to this store (its absolute path) that a worker opens itself."""
        return StoreRef(str(self.path.resolve()))

    @property
    def n_samples(self) -> int:
        """Number of rows the store holds."""
        return int(self.meta["n_samples"])

    @property
    def n_features(self) -> int:
        """Number of feature columns the store holds."""
        return int(self.meta["n_features"])

    @property
    def n_labels(self) -> int:
        """Number of label columns the store holds."""
        return int(self.meta["n_labels"])

    @property
    def block_size(self) -> int:
        """Columns per column block."""
        return int(self.meta["block_size"])

    @property
    def n_blocks(self) -> int:
        """Number of column blocks."""
        return int(self.meta["n_blocks"])

    @property
    def row_block_size(self) -> int:
        """Rows per row block (the last block may be shorter)."""
        return int(self.meta["row_block_size"])

    @property
    def n_row_blocks(self) -> int:
        """Number of row blocks: the shards of ``mode="rows"``."""
        return int(self.meta["n_row_blocks"])

    @property
    def row_bounds(self) -> np.ndarray:
        """First row of every row block, and ``n_samples`` at the end."""
        return np.minimum(np.arange(self.n_row_blocks + 1, dtype=np.int64) * self.row_block_size,
                          self.n_samples)

    @property
    def seed(self) -> int:
        """Seed of the column shuffle fixed at build time (the distributed partition)."""
        return int(self.meta["seed"])

    @property
    def label_names(self) -> list[str]:
        """Names of the label columns."""
        return list(self.meta["label_names"])

    @cached_property
    def feature_names(self) -> Sequence[str]:
        prefix = self.meta.get("feature_names_prefix")
        if prefix is not None:
            from coreselect.io.dataset import IndexedNames

            return IndexedNames(self.n_features, prefix)
        try:
            names = json.loads(self._read_text("feature_names.json", "feature names"))
        except (OSError, ValueError) as exc:
            raise store_error(f"column store {self.path}: feature names are damaged "
                             f"(feature_names.json: {exc})", block="feature names") from None
        if (not isinstance(names, list) or len(names) != self.n_features
                or not all(isinstance(s, str) for s in names)):
            raise store_error(f"column store {self.path}: feature names are damaged "
                             f"(feature_names.json does not hold {self.n_features} names)",
                             block="feature names")
        return names

    @cached_property
    def column_ids(self) -> np.ndarray | None:
        """The source's column number of each stored column (None: the stored column ids
        are the source's, ``0 .. n_features-1``)."""
        ids = self.meta.get("column_ids")
        if ids is None:
            return None
        out = np.asarray(ids)
        if (out.shape != (self.n_features,) or out.dtype.kind not in "iu"
                or (out.size and out[0] < 0) or np.any(np.diff(out) <= 0)):
            raise store_error(f"column store {self.path}: column_ids in store.json are damaged "
                             f"(not {self.n_features} increasing column numbers)",
                             block=META_FILE)
        return out.astype(np.int64)

    @cached_property
    def order(self) -> np.ndarray:
        """Original column id of every store position (a permutation, checked)."""
        return self._checked_once("order.npy", self._read_order)

    def _read_order(self) -> np.ndarray:
        order = self._array("order.npy", "column order")
        d = self.n_features
        if order.shape != (d,) or order.dtype.kind not in "iu" or (
                d and (order.min() < 0 or order.max() >= d
                       or np.any(np.bincount(order, minlength=d) != 1))):
            raise store_error(f"column store {self.path}: column order is damaged (order.npy "
                             f"is not a permutation of {d} columns)", block="column order")
        return np.asarray(order, dtype=np.int64)

    @cached_property
    def n_codes(self) -> np.ndarray:
        """Number of codes of every store position (checked: 1 .. n_samples)."""
        return self._checked_once("n_codes.npy", lambda: self._n_codes(
            "n_codes.npy", self.n_features, max(self.n_samples, 1), "n_codes"))

    @cached_property
    def label_n_codes(self) -> np.ndarray:
        return self._n_codes("labels/n_codes.npy", self.n_labels, 2, "labels")

    def n_selectable(self, keep_constant: bool = False) -> int:
        """Number of columns a selection may pick (constant columns only with ``keep_constant``)."""
        return self.n_features if keep_constant else self.n_features - int(self.meta["n_constant"])

    def n_nonzero(self) -> int:
        """Non-zero codes stored over all feature tiles, from the arrays' headers (no codes
        are read; an opening check has read them already: its count)."""
        counted = getattr(self, "_feature_nnz", None)
        if counted is None:
            counted = sum(self._npy_length(f"{tile_dir(b, r)}/indices.npy", tile_name(b, r))
                          for r in range(self.n_row_blocks) for b in range(self.n_blocks))
            self._feature_nnz = counted
        return int(counted)

    # -- data ----------------------------------------------------------------------------
    def labels(self) -> DiscreteMatrix:
        """The discretized labels of all rows."""
        with self._prefetch([f"{label_dir(r)}/{a}.npy" for r in range(self.n_row_blocks)
                             for a in ARRAYS]):
            pieces = [self._label_arrays(r) for r in range(self.n_row_blocks)]
        codes = self._stack_rows(pieces, self.n_labels)
        self._check_code_counts(codes, self.label_n_codes, "labels")
        return DiscreteMatrix(codes, self.label_n_codes)

    def labels_tile(self, row_block: int) -> DiscreteMatrix:
        """The discretized labels of the rows of one row block."""
        r = self._row_block(row_block)
        ptr, idx, dat = self._label_arrays(r)
        n_rows = int(self.row_bounds[r + 1] - self.row_bounds[r])
        return DiscreteMatrix(sp.csc_matrix((dat, idx, ptr), shape=(n_rows, self.n_labels)),
                              self.label_n_codes)

    def read_tile(self, row_block: int, col_start: int, col_stop: int) -> DiscreteMatrix:
        """Codes of the rows of ``row_block`` and the columns at store positions
        ``col_start .. col_stop-1`` (rows numbered from the row block's first row)."""
        r = self._row_block(row_block)
        start, stop = self._col_range(col_start, col_stop)
        n_rows = int(self.row_bounds[r + 1] - self.row_bounds[r])
        with self._prefetch([f"{tile_dir(b, r)}/{a}.npy" for b, _, _ in
                             self._col_blocks(start, stop) for a in ARRAYS]):
            pieces = [self._tile_cols(b, r, lo, hi)
                      for b, lo, hi in self._col_blocks(start, stop)]
        if start == 0 and stop == self.n_features:
            self._note_row_block(r, pieces)
        return DiscreteMatrix(_hstack(pieces, n_rows), np.array(self.n_codes[start:stop]))

    def _note_row_block(self, r: int, pieces: list) -> None:
        """Row-block readers (``--mode rows``) never see a whole column at once, so the
        column-wide check of ``n_codes`` (:meth:`_check_code_counts`) is made here: each
        column's largest code is kept over the full-width tiles read, and once every row
        block was read it must be ``n_codes - 1`` (a forged, larger ``n_codes`` is refused)."""
        with _VERIFIED_LOCK:
            if getattr(self, "_row_top", None) is None:
                self._row_top = np.zeros(self.n_features, dtype=np.int64)
                self._rows_seen: set[int] = set()
            if r in self._rows_seen:
                return
            pos = 0
            for ptr, _, dat in pieces:
                width = ptr.size - 1
                has = np.diff(ptr) > 0
                if has.any():
                    cols = np.flatnonzero(has) + pos
                    self._row_top[cols] = np.maximum(self._row_top[cols],
                                                     np.maximum.reduceat(dat, ptr[:-1][has]))
                pos += width
            self._rows_seen.add(r)
            if len(self._rows_seen) == self.n_row_blocks and np.any(
                    self._row_top != np.maximum(self.n_codes - 1, 0)):
                raise store_error(f"column store {self.path}: n_codes is damaged (its code counts "
                                  "do not match the codes stored)", block="n_codes")

    def read_range(self, start: int, stop: int) -> tuple[np.ndarray, DiscreteMatrix]:
        """Columns at store positions ``start .. stop-1`` over all rows: ``(original ids,
        codes)`` in store order. Only the overlapping tiles are mapped, and only the range is
        copied."""
        start, stop = self._col_range(start, stop)
        pieces = [self._stack_rows(self._column_block(b, lo, hi), hi - lo)
                  for b, lo, hi in self._col_blocks(start, stop)]
        codes = _hstack([(p.indptr, p.indices, p.data) for p in pieces], self.n_samples)
        n_codes = np.array(self.n_codes[start:stop])
        self._check_code_counts(codes, n_codes, "n_codes")
        return np.array(self.order[start:stop]), DiscreteMatrix(codes, n_codes)

    def read_all(self) -> DiscreteMatrix:
        """Every column, in original id order (for the centralized mode: needs all memory):
        ``read_range(0, d)`` put in id order, the same arrays. Each tile's columns are read
        and checked (:meth:`_tile_cols`), then copied once, straight to their place: no
        stacked copy per column block, no concatenation and no permutation after (those
        three copies of the data were a third of a centralized run from a store)."""
        n, d = self.n_samples, self.n_features
        order = self.order  # original id of each store position (a checked permutation)
        blocks, counts, dtypes = [], np.zeros(d, dtype=np.int64), []
        for b, lo, hi in self._col_blocks(0, d):
            rows = self._column_block(b, lo, hi)
            ids = order[b * self.block_size + lo:b * self.block_size + hi]
            for ptr, _, dat in rows:
                counts[ids] += np.diff(ptr)
                dtypes.append(dat.dtype)
            blocks.append((ids, rows))
        indptr = np.zeros(d + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        index_dtype = np.int32 if n < 2**31 else np.int64
        idx_out = np.empty(int(indptr[-1]), dtype=index_dtype)
        dat_out = np.empty(int(indptr[-1]), dtype=np.result_type(np.int16, *dtypes))
        for j, (ids, rows) in enumerate(blocks):
            blocks[j] = None  # each block's copies are freed once placed
            self._place_rows(rows, indptr[ids], idx_out, dat_out)
            del rows
        codes = sp.csc_matrix((dat_out, idx_out, indptr), shape=(n, d))
        n_codes = np.empty(d, dtype=np.int64)
        n_codes[order] = self.n_codes
        self._check_code_counts(codes, n_codes, "n_codes")
        return DiscreteMatrix(codes, n_codes)

    # -- integrity -----------------------------------------------------------------------
    def check(self) -> None:
        """Cheap check: every file listed in ``store.json`` is present with its recorded size
        (one ``stat`` each), and the shapes ``store.json`` declares agree with the arrays'
        headers (:meth:`check_shapes`). Raise :class:`StoreError` naming the first bad block."""
        expected = self._expected_files()
        listed = self.meta["files"]
        if len(listed) != len(expected) or not all(rel in listed for rel in expected):
            extra = sorted(set(listed) - set(expected))[:1] or sorted(set(expected) - set(listed))[:1]
            raise store_error(f"column store {self.path}: store.json's file list does not match its "
                              f"shape ({len(listed)} files listed, {len(expected)} expected; e.g. "
                              f"{extra[0] if extra else '?'})", block=META_FILE)
        for rel in expected:
            self._stat(rel)
        self.check_shapes()

    def check_shapes(self) -> None:
        """The declared shapes against the files, before anything is allocated for them
        (checksums can be forged along with ``store.json``; structure cannot): every array's
        ``.npy`` header against its file size, ``order``/``n_codes`` lengths, every tile's
        ``indptr`` length against its width and ``indices``/``data`` against each other, a
        row count each row block's non-zeros can plausibly fill (``n_samples`` of 10^12 over
        a few thousand codes is refused), and ``n_codes`` within the discretization's bins."""
        d, n_labels, where = self.n_features, self.n_labels, str(self.path)

        def bad(block: str, what: str):
            return store_error(f"column store {where}: {block} is damaged ({what}); store.json "
                               "declares shapes its files do not have", block=block)

        for rel, size, block in (("order.npy", d, "column order"), ("n_codes.npy", d, "n_codes"),
                                 ("labels/n_codes.npy", n_labels, "labels")):
            if self._npy_length(rel, block) != size:
                raise bad(block, f"{rel} does not hold {size} values")
        bounds = self.row_bounds
        nnz_rows = np.zeros(self.n_row_blocks, dtype=np.int64)

        def tile(folder: str, block: str, width: int, r: int) -> int:
            n_ptr, n_idx, n_dat = (self._npy_length(f"{folder}/{a}.npy", block) for a in ARRAYS)
            if n_ptr != width + 1:
                raise bad(block, f"indptr has {n_ptr} entries for {width} columns")
            if n_idx != n_dat:
                raise bad(block, f"{n_idx} row indices for {n_dat} codes")
            nnz_rows[r] += n_idx
            return n_idx

        feature_nnz = 0
        for r in range(self.n_row_blocks):
            tile(label_dir(r), f"labels, row block {r}", n_labels, r)
            for b in range(self.n_blocks):
                feature_nnz += tile(tile_dir(b, r), tile_name(b, r),
                                    min(self.block_size, d - b * self.block_size), r)
        self._feature_nnz = feature_nnz  # what n_nonzero() counts: not read again
        rows = np.diff(bounds)
        implausible = (rows > ROW_FLOOR) & (rows > ROW_RATIO * (nnz_rows + 1))
        if implausible.any():
            r = int(np.flatnonzero(implausible)[0])
            raise bad(f"row block {r}", f"store.json declares {int(rows[r])} rows for {int(nnz_rows[r])} "
                      f"stored codes; n_samples={self.n_samples} is not what the tiles hold")
        n_codes = self._array("n_codes.npy", "n_codes")
        if int((np.asarray(n_codes) <= 1).sum()) != int(self.meta["n_constant"]):
            raise store_error(f"column store {where}: store.json's n_constant does not match n_codes.npy "
                              "(a forged or damaged store.json)", block=META_FILE)
        disc = self.meta.get("discretization")
        if isinstance(disc, dict) and disc.get("strategy") not in (None, "none"):
            n_bins = disc.get("n_bins")
            if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 2:
                raise store_error(f"column store {where}: store.json's discretization is malformed",
                                  block=META_FILE)
            top = int(n_codes.max(initial=1))
            if top > n_bins:
                raise bad("n_codes", f"a column declares {top} codes, more than the {n_bins} bins "
                          "it was discretized into")

    def _npy_length(self, rel: str, block: str) -> int:
        """The length a 1-D integer ``.npy`` file's header declares, checked against the file's
        size (a header claiming more than the file holds is refused before mapping)."""
        path = self.path / rel
        try:
            with open(path, "rb") as fh:
                with NPY_HEADER_LOCK:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
                start, size = fh.tell(), os.fstat(fh.fileno()).st_size
        except Exception as exc:  # noqa: BLE001 - numpy's header parser raises SyntaxError, TokenError ...
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} is not a "
                              f"numeric .npy file: {type(exc).__name__})", block=block) from None
        if len(shape) != 1 or dtype.kind not in "iu" or start + shape[0] * dtype.itemsize != size:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} declares "
                              f"{dtype} of shape {shape} in {size - start} bytes of data)", block=block)
        return int(shape[0])

    def verify(self) -> dict:
        """Full check: the crc32 of every file and the structural invariants of every tile,
        the labels, ``order`` and ``n_codes``. Returns ``{"files": .., "bytes": ..}``."""
        self.check()
        files = self._expected_files()
        if not self._reads_checksummed:
            for rel in files:
                self._verified(rel, _block_of(rel), force=True)
        # else (a remote store) every read below checks size and crc32: each object once
        _ = self.order, self.n_codes, self.label_n_codes, self.feature_names, self.column_ids
        # tile by tile (memory: one tile), keeping each column's largest code
        top = np.zeros(self.n_features, dtype=np.int64)
        for b, lo, hi in self._col_blocks(0, self.n_features):
            pos = b * self.block_size
            for r in range(self.n_row_blocks):
                with self._prefetch([f"{tile_dir(b, r)}/{a}.npy" for a in ARRAYS]):
                    ptr, _, dat = self._tile_cols(b, r, lo, hi)
                has = np.diff(ptr) > 0
                if has.any():
                    cols = np.flatnonzero(has) + pos
                    top[cols] = np.maximum(top[cols], np.maximum.reduceat(dat, ptr[:-1][has]))
        if np.any(top != np.maximum(self.n_codes - 1, 0)):
            raise store_error(f"column store {self.path}: n_codes is damaged (its code counts "
                             "do not match the codes stored)", block="n_codes")
        self.labels()
        return {"files": len(files) + 1,
                "bytes": sum(int(self.meta["files"][rel][0]) for rel in files)}

    def info(self) -> dict:
        """A JSON-able summary of the store's metadata (what ``coreselect store info`` prints)."""
        keys = ("name", "version", "n_samples", "n_features", "n_labels", "block_size",
                "n_blocks", "row_block_size", "n_row_blocks", "seed", "n_constant",
                "discretization")
        return {"path": str(self.path), **{k: self.meta.get(k) for k in keys}}

    # -- internals -----------------------------------------------------------------------
    def _expected_files(self) -> list[str]:
        files = ["order.npy", "n_codes.npy", "labels/n_codes.npy"]
        if self.meta.get("feature_names_prefix") is None:
            files.append("feature_names.json")
        for r in range(self.n_row_blocks):
            files += [f"{label_dir(r)}/{a}.npy" for a in ARRAYS]
        for b in range(self.n_blocks):
            for r in range(self.n_row_blocks):
                files += [f"{tile_dir(b, r)}/{a}.npy" for a in ARRAYS]
        return files

    def _entry(self, rel: str, block: str) -> tuple[int, int]:
        entry = self.meta["files"].get(rel)
        if (not isinstance(entry, list) or len(entry) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in entry)):
            raise store_error(f"column store {self.path}: store.json has no size and checksum "
                             f"for {rel} ({block})", block=block)
        return entry[0], entry[1]

    def _stat(self, rel: str) -> os.stat_result:
        block = _block_of(rel)
        size, _ = self._entry(rel, block)
        try:
            st = os.stat(self.path / rel)
        except FileNotFoundError:
            raise store_error(f"column store {self.path} is missing {block} ({rel}); rebuild it "
                             "with 'coreselect store build'", block=block) from None
        except OSError as exc:
            raise store_error(f"column store {self.path}: cannot read {rel}: {exc.strerror}",
                             block=block) from None
        if st.st_size != size:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} has "
                             f"{st.st_size} bytes, expected {size}: truncated or replaced)",
                             block=block)
        return st

    def _identity(self, rel: str) -> tuple[str, int, int]:
        """``rel``'s resolved path, size and modification time (its size checked against
        ``store.json``): what a check made once per process is keyed by."""
        st = self._stat(rel)
        return str((self.path / rel).resolve()), st.st_size, st.st_mtime_ns

    def _checked_once(self, rel: str, read) -> np.ndarray:
        """``read()`` (which loads and checks ``rel``), or what it returned before in this
        process for the same file (same size and modification time)."""
        key = (rel, *self._identity(rel))
        with _VERIFIED_LOCK:
            got = _CHECKED.get(key)
        if got is None:
            got = read()
            with _VERIFIED_LOCK:
                while len(_CHECKED) >= _CHECKED_MAX:
                    _CHECKED.pop(next(iter(_CHECKED)))
                _CHECKED[key] = got
        return got

    def _verified(self, rel: str, block: str, force: bool = False) -> Path:
        """Path of ``rel`` after checking its size and (once per process) its crc32."""
        path = self.path / rel
        key = self._identity(rel)
        if force or key not in _VERIFIED:
            _, crc = self._entry(rel, block)
            try:
                actual = file_crc32(path)
            except OSError as exc:
                raise store_error(f"column store {self.path}: cannot read {rel}: {exc}",
                                 block=block) from None
            if actual != crc:
                raise store_error(f"column store {self.path}: {block} is damaged ({rel} fails "
                                 "its checksum); rebuild the store", block=block)
            with _VERIFIED_LOCK:
                _VERIFIED.add(key)
        return path

    #: Whether every read checks the file's crc32 (a remote store's), so that :meth:`verify`
    #: needs no separate checksum pass.
    _reads_checksummed = False

    def _prefetch(self, rels: list[str]):
        """A context in which ``rels`` are about to be read (a remote store fetches them
        concurrently, :mod:`coreselect.store.fs`); nothing to do for mapped files."""
        return contextlib.nullcontext()

    def _read_text(self, rel: str, block: str) -> str:
        return self._verified(rel, block).read_text(encoding="utf-8")

    def _load_npy(self, rel: str, block: str):
        """The verified file ``rel`` as numpy loads it (memory-mapped: a local store)."""
        return load_npy(self._verified(rel, block), mmap_mode="r", allow_pickle=False)

    def _array(self, rel: str, block: str) -> np.ndarray:
        try:
            arr = self._load_npy(rel, block)
        except (ValueError, OSError, EOFError) as exc:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} is not a "
                             f"numeric .npy file: {exc})", block=block) from None
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} holds "
                             f"{getattr(arr, 'dtype', '?')} of shape "
                             f"{getattr(arr, 'shape', '?')}, expected 1-D integers)",
                             block=block)
        return arr

    def _n_codes(self, rel: str, size: int, top: int, block: str) -> np.ndarray:
        arr = self._array(rel, block)
        if arr.shape != (size,) or (size and (arr.min() < 1 or arr.max() > top)):
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} must hold "
                             f"{size} code counts in 1..{top})", block=block)
        return np.asarray(arr, dtype=np.int64)

    def _check_code_counts(self, codes: sp.csc_matrix, n_codes: np.ndarray, block: str) -> None:
        """Over all rows, a column's largest code is ``n_codes - 1`` (every code but the
        implicit 0 appears somewhere): a wrong ``n_codes`` would change every entropy."""
        counts = np.diff(codes.indptr)
        top = np.zeros(n_codes.size, dtype=np.int64)
        has = counts > 0
        if has.any():
            top[has] = np.maximum.reduceat(codes.data, codes.indptr[:-1][has])
        if np.any(top != np.maximum(n_codes - 1, 0)):
            raise store_error(f"column store {self.path}: {block} is damaged (its code counts "
                             "do not match the codes stored)", block=block)

    def _tile_cols(self, b: int, r: int, lo: int, hi: int):
        """The CSC triplet of columns ``lo .. hi-1`` (local to block ``b``) of tile (b, r),
        copied out of the mapped files and checked."""
        folder, block = tile_dir(b, r), tile_name(b, r)
        indptr, indices, data = (self._array(f"{folder}/{a}.npy", block) for a in ARRAYS)
        width = min(self.block_size, self.n_features - b * self.block_size)
        if indptr.size != width + 1:
            raise store_error(f"column store {self.path}: {block} is damaged (indptr has "
                             f"{indptr.size} entries for {width} columns)", block=block)
        ptr = np.array(indptr[lo:hi + 1], dtype=np.int64)
        a, z = int(ptr[0]), int(ptr[-1])
        if not 0 <= a <= z <= min(indices.size, data.size):
            raise store_error(f"column store {self.path}: {block} is damaged (indptr points "
                             "outside its arrays)", block=block)
        ptr -= a
        idx, dat = np.array(indices[a:z]), np.array(data[a:z])
        n_rows = int(self.row_bounds[r + 1] - self.row_bounds[r])
        pos = b * self.block_size
        check_csc(ptr, idx, dat, n_rows, self.n_codes[pos + lo:pos + hi], str(self.path), block)
        return ptr, idx.astype(np.int32, copy=False), _codes_dtype(dat)

    def _label_arrays(self, r: int):
        folder, block = label_dir(r), f"labels, row block {r}"
        ptr, idx, dat = (np.array(self._array(f"{folder}/{a}.npy", block)) for a in ARRAYS)
        n_rows = int(self.row_bounds[r + 1] - self.row_bounds[r])
        check_csc(ptr, idx, dat, n_rows, self.label_n_codes, str(self.path), block)
        return ptr.astype(np.int64), idx.astype(np.int32, copy=False), _codes_dtype(dat)

    def _stack_rows(self, pieces: list, width: int) -> sp.csc_matrix:
        """Stack the CSC triplets of consecutive row blocks (same columns) into one CSC."""
        if len(pieces) == 1:
            ptr, idx, dat = pieces[0]
            return sp.csc_matrix((dat, idx, ptr), shape=(self.n_samples, width))
        indptr = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(sum(np.diff(p[0]) for p in pieces), out=indptr[1:])
        nnz = int(indptr[-1])
        index_dtype = np.int32 if self.n_samples < 2**31 else np.int64
        idx_out = np.empty(nnz, dtype=index_dtype)
        dat_out = np.empty(nnz, dtype=np.result_type(*(p[2].dtype for p in pieces)))
        self._place_rows(pieces, indptr[:-1], idx_out, dat_out)
        return sp.csc_matrix((dat_out, idx_out, indptr),
                             shape=(self.n_samples, width))

    def _place_rows(self, pieces: list, starts: np.ndarray, idx_out: np.ndarray,
                    dat_out: np.ndarray) -> None:
        """Copy the CSC triplets of consecutive row blocks (same columns) into ``idx_out`` /
        ``dat_out``, column ``j``'s entries from ``starts[j]`` on, row blocks in order (row
        indices made global)."""
        filled = np.array(starts, dtype=np.int64)  # where each column's next entries go
        for r, (ptr, idx, dat) in enumerate(pieces):
            # each column's entries of this row block go to one contiguous run
            length = np.diff(ptr)
            dest = np.repeat(filled - ptr[:-1], length)
            dest += np.arange(idx.size)
            idx_out[dest] = idx + idx_out.dtype.type(self.row_bounds[r])
            dat_out[dest] = dat
            filled += length

    def _column_block(self, b: int, lo: int, hi: int) -> list:
        """The checked CSC triplets of columns ``lo .. hi-1`` of column block ``b`` in every
        row block, in row-block order (:meth:`_tile_cols`)."""
        with self._prefetch([f"{tile_dir(b, r)}/{a}.npy" for r in range(self.n_row_blocks)
                             for a in ARRAYS]):
            return [self._tile_cols(b, r, lo, hi) for r in range(self.n_row_blocks)]

    def _row_block(self, r) -> int:
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or \
                not 0 <= r < self.n_row_blocks:
            raise InputError(f"row block {r!r} is not in 0..{self.n_row_blocks - 1}")
        return int(r)

    def _col_range(self, start, stop) -> tuple[int, int]:
        if not 0 <= start <= stop <= self.n_features:
            raise InputError(f"bad column range {start}:{stop} (the store has "
                             f"{self.n_features} columns)")
        return int(start), int(stop)

    def _col_blocks(self, start: int, stop: int):
        bs = self.block_size
        for b in range(start // bs, -(-stop // bs)):
            yield b, max(start, b * bs) - b * bs, min(stop, (b + 1) * bs) - b * bs


def _codes_dtype(data: np.ndarray) -> np.ndarray:
    return data.astype(np.int16 if data.dtype.itemsize <= 2 else np.int32, copy=False)


def _hstack(pieces: list, n_rows: int) -> sp.csc_matrix:
    """Columns of several checked CSC triplets side by side (no re-validation by scipy)."""
    if not pieces:
        return sp.csc_matrix((n_rows, 0), dtype=np.int16)
    if len(pieces) == 1:
        ptr, idx, dat = pieces[0]
        return sp.csc_matrix((dat, idx, ptr), shape=(n_rows, ptr.size - 1))
    sizes = np.array([p[0][-1] for p in pieces], dtype=np.int64)
    shift = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    indptr = np.concatenate([pieces[0][0][:1]] + [p[0][1:] + s for p, s in zip(pieces, shift)])
    return sp.csc_matrix((np.concatenate([p[2] for p in pieces]),
                          np.concatenate([p[1] for p in pieces]), indptr),
                         shape=(n_rows, indptr.size - 1))


def _block_of(rel: str) -> str:
    """The human name of the block a file belongs to."""
    parts = rel.split("/")
    if parts[0] == "blocks" and len(parts) >= 3:
        return tile_name(int(parts[1][1:]), int(parts[2][1:]))
    if parts[0] == "labels" and len(parts) >= 3:
        return f"labels, row block {int(parts[1][1:])}"
    return {"order.npy": "column order", "n_codes.npy": "n_codes",
            "feature_names.json": "feature names"}.get(rel, parts[0])


# ------------------------------------------------------------------------------------------
def _check_meta(meta, folder: Path, meta_path: Path) -> None:
    """Validate ``store.json`` before anything is derived from it."""
    where = str(folder)
    if not isinstance(meta, dict):
        raise store_error(f"{meta_path} is malformed (not a JSON object)", block=META_FILE)
    if meta.get("format") != FORMAT:
        raise store_error(f"{folder} is not a coreselect column store "
                         f"(format {meta.get('format')!r})", block=META_FILE)
    version = meta.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise store_error(f"column store {folder}: store.json has a malformed format version "
                         f"{version!r} "
                         f"({type(version).__name__}, expected the integer {FORMAT_VERSION}); "
                         "rebuild it with 'coreselect store build'", block=META_FILE)
    if version != FORMAT_VERSION:
        raise store_error(
            f"column store {folder} has format version {version}, this coreselect reads "
            f"version {FORMAT_VERSION}; rebuild it with 'coreselect store build'",
            block=META_FILE)
    if meta.get("checksum") != meta_checksum(meta):
        raise store_error(f"column store {folder}: store.json was edited or damaged (its "
                         "checksum does not match); rebuild the store", block=META_FILE)
    n = as_int_field(meta, "n_samples", where, 1)
    d = as_int_field(meta, "n_features", where, 1)
    n_labels = as_int_field(meta, "n_labels", where, 1)
    bs = as_int_field(meta, "block_size", where, 1)
    rbs = as_int_field(meta, "row_block_size", where, 1)
    as_int_field(meta, "seed", where, 0)
    n_const = as_int_field(meta, "n_constant", where, 0)
    if as_int_field(meta, "n_blocks", where, 1) != -(-d // bs) or \
            as_int_field(meta, "n_row_blocks", where, 1) != -(-n // rbs) or n_const > d:
        raise store_error(f"column store {folder}: store.json's block counts do not match its "
                         "shape", block=META_FILE)
    names = meta.get("label_names")
    prefix = meta.get("feature_names_prefix")
    if (not isinstance(names, list) or len(names) != n_labels
            or not all(isinstance(s, str) for s in names)
            or not (prefix is None or isinstance(prefix, str))
            or not isinstance(meta.get("files"), dict)):
        raise store_error(f"column store {folder}: store.json's names or file list are "
                         "malformed", block=META_FILE)
    # every tile has 3 listed files: a forged shape cannot make us iterate over more tiles
    # than store.json lists (no memory or time bomb from a few bytes of JSON)
    n_tiles = meta["n_blocks"] * meta["n_row_blocks"] + meta["n_row_blocks"]
    if 3 * n_tiles > len(meta["files"]):
        raise store_error(f"column store {folder}: store.json lists {len(meta['files'])} files "
                         f"for {n_tiles} tiles", block=META_FILE)
