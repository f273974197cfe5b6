"""Writing a column store: from in-memory X/Y, or from row chunks without holding X whole."""

from __future__ import annotations

import glob
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import discretize, discretize_labels, resolve_n_bins
from coreselect.errors import InputError, OutputError
from coreselect.io.files import atomic_dir, clean_stale, temp_name_prefix
from coreselect.store._format import (
    DEFAULT_BLOCK_SIZE,
    FORMAT,
    FORMAT_VERSION,
    MAX_FIELD,
    META_FILE,
    ROW_BLOCK_MULTIPLE,
    TARGET_TILE_NNZ,
    label_dir,
    meta_checksum,
    shuffled_order,
    tile_dir,
)
from coreselect.store.opening import open_store
from coreselect.store.reader import ColumnStore
from coreselect.store.writer import Writer as _Writer

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]


def build_store(
    X: np.ndarray | sp.spmatrix,
    Y: np.ndarray | sp.spmatrix,
    path: str | os.PathLike,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    row_block_size: int | None = None,
    seed: int = 0,
    n_bins: int | str = "auto",
    strategy: str = "auto",
    min_bin_count: int = 10,
    feature_names: Sequence[str] | None = None,
    label_names: Sequence[str] | None = None,
    name: str = "dataset",
    column_ids: Sequence[int] | None = None,
    progress: Progress | None = None,
    storage_options: dict | None = None,
) -> ColumnStore:
    """Discretize ``X`` column block by column block and write a tiled column store at
    ``path`` (layout in :mod:`coreselect.store`).

    ``row_block_size`` rows per row block; ``None`` chooses it so that a tile holds about
    :data:`~coreselect.store.TARGET_TILE_NNZ` non-zeros. The store appears under ``path``
    only when complete (it is written into a hidden folder beside it and renamed), so a
    failed build leaves nothing behind; hidden folders of killed builds are removed by the
    next build in the same place.

    ``column_ids`` (increasing, one per column of ``X``) are the columns' numbers in the data
    ``X`` was taken from (for example a file's candidate columns, ID columns left out);
    selections from the store report them (default: ``0 .. d-1``).

    ``path`` may be a URL fsspec writes (``s3://bucket/prefix``, ``memory://x``, ...; with
    ``storage_options``): the store is built in a local temporary folder and published all
    or nothing, ``store.json`` last (:func:`coreselect.store.fs.build_at_url`).

    Raises
    ------
    InputError
        On bad parameters, mismatched shapes, or when ``path`` exists and is not empty.
    """
    if not (sp.issparse(X) or isinstance(X, np.ndarray)) or len(X.shape) != 2:
        X = np.asarray(X)
        if X.ndim != 2:
            raise InputError(f"X must be a 2-D matrix, got shape {X.shape}")
    from coreselect.store import fs

    path = fs.local_path(path)
    if fs.scheme(path) is not None:
        return fs.build_at_url(path, lambda local: build_store(
            X, Y, local, block_size=block_size, row_block_size=row_block_size, seed=seed,
            n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count,
            feature_names=feature_names, label_names=label_names, name=name,
            column_ids=column_ids, progress=progress), storage_options)
    n, d = X.shape
    nnz = int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))
    # Column slicing wants CSC; a dense X is sliced directly.
    Xc = sp.csc_matrix(X) if sp.issparse(X) else X
    return _build(path, n, d, nnz, lambda b, cols: Xc[:, cols], lambda: Y,
                  block_size=block_size, row_block_size=row_block_size, seed=seed,
                  n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count,
                  feature_names=feature_names, label_names=label_names, name=name,
                  column_ids=column_ids, progress=progress)


def build_store_from_chunks(
    chunks: Iterable[tuple[np.ndarray | sp.spmatrix, np.ndarray | sp.spmatrix]],
    path: str | os.PathLike,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    row_block_size: int | None = None,
    seed: int = 0,
    n_bins: int | str = "auto",
    strategy: str = "auto",
    min_bin_count: int = 10,
    feature_names: Sequence[str] | None = None,
    label_names: Sequence[str] | None = None,
    name: str = "dataset",
    progress: Progress | None = None,
    storage_options: dict | None = None,
) -> ColumnStore:
    """Like :func:`build_store`, from an iterable of row chunks ``(X_k, Y_k)`` (all dense or
    all sparse, with the same columns), never holding the whole ``X``.

    Pass 1 writes each chunk's columns, already shuffled, into per-column-block spill files
    (an out-of-core transpose); pass 2 discretizes one column block over all rows at a time,
    so the cut points are those of the whole matrix and the store equals
    ``build_store(vstack(X_k), vstack(Y_k))``. Peak memory is one column block over all rows
    (choose ``block_size`` for that) plus the labels.
    """
    from coreselect.store import fs

    path = fs.local_path(path)
    if fs.scheme(path) is not None:
        return fs.build_at_url(path, lambda local: build_store_from_chunks(
            chunks, local, block_size=block_size, row_block_size=row_block_size, seed=seed,
            n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count,
            feature_names=feature_names, label_names=label_names, name=name,
            progress=progress), storage_options)
    block_size, seed = _check_params(block_size, row_block_size, seed)
    resolve_n_bins(n_bins, 0)  # refused before the chunks are read
    target = Path(path)
    check_build_target(target)
    spill = _spill_dir(target)
    from coreselect.io.files import save_array

    try:
        n = d = nnz = 0
        sparse = None
        ys = []
        order = None
        for k, (Xk, Yk) in enumerate(chunks):
            Xk = Xk if sp.issparse(Xk) else np.asarray(Xk)
            Yk = Yk if sp.issparse(Yk) else np.asarray(Yk)
            if Xk.ndim != 2 or Yk.ndim != 2 or Yk.shape[0] != Xk.shape[0]:
                raise InputError(f"row chunk {k}: X and Y must be 2-D with the same rows")
            if order is None:
                d, sparse = Xk.shape[1], sp.issparse(Xk)
                if d == 0:
                    raise InputError("there are no feature columns")
                order = shuffled_order(d, seed)
            elif Xk.shape[1] != d or sp.issparse(Xk) != sparse:
                raise InputError(f"row chunk {k} has {Xk.shape[1]} columns "
                                 f"({'sparse' if sp.issparse(Xk) else 'dense'}); the first "
                                 f"had {d} ({'sparse' if sparse else 'dense'})")
            Xk = sp.csc_matrix(Xk) if sparse else Xk
            for b in range(-(-d // block_size)):
                piece = Xk[:, order[b * block_size:(b + 1) * block_size]]
                (spill / f"b{b}").mkdir(exist_ok=True)
                if sparse:
                    sp.save_npz(spill / f"b{b}" / f"c{k}.npz", piece, compressed=False)
                else:
                    save_array(spill / f"b{b}" / f"c{k}.npy", piece)
            n += Xk.shape[0]
            nnz += int(Xk.nnz) if sparse else int(np.count_nonzero(Xk))
            # Labels kept sparse from the start: a dense (n x L) stack, and its float64 copy
            # in discretize_labels, was most of a tall build's peak (8 GiB at n = 10 M).
            try:
                ys.append(sp.csr_matrix(Yk))
            except (TypeError, ValueError):
                raise InputError("labels must be a numeric 0/1 matrix") from None
        if order is None:
            raise InputError("no row chunks: the data have no samples")
        n_chunks = len(ys)

        def columns(b: int, cols: np.ndarray):
            folder = spill / f"b{b}"
            if sparse:
                block = sp.vstack([sp.load_npz(folder / f"c{k}.npz") for k in range(n_chunks)],
                                  format="csc")
            else:
                block = np.vstack([np.load(folder / f"c{k}.npy") for k in range(n_chunks)])
            shutil.rmtree(folder)  # one column block of spill at a time on disk after this
            return block

        def labels():
            return sp.vstack(ys, format="csr")

        return _build(target, n, d, nnz, columns, labels, block_size=block_size,
                      row_block_size=row_block_size, seed=seed, n_bins=n_bins,
                      strategy=strategy, min_bin_count=min_bin_count,
                      feature_names=feature_names, label_names=label_names, name=name,
                      progress=progress, order=order)
    finally:
        shutil.rmtree(spill, ignore_errors=True)


# ------------------------------------------------------------------------------------------
def _check_params(block_size, row_block_size, seed) -> tuple[int, int]:
    # store.json holds integers up to MAX_FIELD (readers refuse more): refused before writing.
    if isinstance(block_size, bool) or not 1 <= int(block_size) <= MAX_FIELD:
        raise InputError(f"block size must be in 1..{MAX_FIELD}, got {block_size}")
    if row_block_size is not None and not 1 <= int(row_block_size) <= MAX_FIELD:
        raise InputError(f"row block size must be in 1..{MAX_FIELD}, got {row_block_size}")
    if seed is None or isinstance(seed, bool) or int(seed) < 0:
        raise InputError("the store needs a non-negative integer seed")
    return int(block_size), int(seed)


def check_build_target(path: str | os.PathLike, storage_options: dict | None = None) -> None:
    """Raise :class:`InputError` unless ``path`` is free for a new store (absent or an
    empty folder; for a URL, an empty prefix in a bucket that exists): the CLI checks this
    before reading the data."""
    from coreselect.store import fs

    path = fs.local_path(path)
    if fs.scheme(path) is not None:
        return fs.check_url_target(path, storage_options)
    target = Path(path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InputError(f"{target} already exists; choose a new folder for the store")


def auto_row_block_size(n: int, d: int, nnz: int, block_size: int) -> int:
    """Rows per row block so that an average tile holds about ``TARGET_TILE_NNZ``
    non-zeros, a multiple of 4096 rows (``n`` when one row block is small enough)."""
    per_row = nnz / max(n, 1) * min(block_size, d) / max(d, 1)
    rows = TARGET_TILE_NNZ / max(per_row, 1e-12)
    rows = int(-(-rows // ROW_BLOCK_MULTIPLE) * ROW_BLOCK_MULTIPLE)
    return max(1, min(n, max(ROW_BLOCK_MULTIPLE, rows)))


def _spill_dir(target: Path) -> Path:
    """A hidden scratch folder beside ``target``, named like every temporary of
    :mod:`coreselect.io.files` so that a killed build's one is cleaned by the next write there."""
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(target.parent, (f".{glob.escape(target.name)}.p*-*.tmp",))
    return Path(tempfile.mkdtemp(prefix=temp_name_prefix(target.name), suffix=".tmp",
                                 dir=target.parent))


def split_rows(codes: sp.csc_matrix, bounds: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """The CSC triplets of ``codes`` cut at the row ``bounds`` (rows made local)."""
    codes = sp.csc_matrix(codes)
    codes.sort_indices()
    n_rb, w = bounds.size - 1, codes.shape[1]
    if n_rb == 1:
        return [(codes.indptr, codes.indices, codes.data)]
    rb = np.searchsorted(bounds, codes.indices, side="right") - 1
    col = np.repeat(np.arange(w), np.diff(codes.indptr))
    counts = np.bincount(rb * w + col, minlength=n_rb * w).reshape(n_rb, w)
    grouped = np.argsort(rb, kind="stable")  # by row block; (column, row) order kept inside
    ends = np.cumsum(counts.sum(axis=1))
    out = []
    for r in range(n_rb):
        sel = grouped[ends[r] - counts[r].sum():ends[r]]
        ptr = np.zeros(w + 1, dtype=np.int64)
        np.cumsum(counts[r], out=ptr[1:])
        out.append((ptr, codes.indices[sel] - bounds[r], codes.data[sel]))
    return out


def _build(path, n, d, nnz, columns, get_labels, *, block_size, row_block_size, seed, n_bins,
           strategy, min_bin_count, feature_names, label_names, name, progress,
           order=None, column_ids=None) -> ColumnStore:
    block_size, seed = _check_params(block_size, row_block_size, seed)
    n_bins = resolve_n_bins(n_bins, n)  # "auto": by the rows of the whole data
    target = Path(path)
    check_build_target(target)
    Y = get_labels()
    Y = Y if sp.issparse(Y) else np.asarray(Y)
    if Y.ndim != 2 or Y.shape[0] != n:
        raise InputError(f"X has {n} samples but Y has shape {getattr(Y, 'shape', None)}")
    if n == 0:
        raise InputError("the data have no samples")
    if d == 0:
        raise InputError("there are no feature columns")
    labels = discretize_labels(Y)
    from coreselect.io.dataset import IndexedNames

    if feature_names is None:
        feature_names = IndexedNames(d, "x")
    # Default names x0, x1, ... are kept as a pattern: no file of millions of names.
    names_pattern = feature_names.prefix if isinstance(feature_names, IndexedNames) else None
    if names_pattern is None:
        feature_names = [str(s) for s in feature_names]
    label_names = ([f"y{i}" for i in range(labels.n_columns)] if label_names is None
                   else [str(s) for s in label_names])
    if len(feature_names) != d or len(label_names) != labels.n_columns:
        raise InputError("the numbers of feature/label names do not match the data")
    if column_ids is not None:
        column_ids = np.asarray(column_ids, dtype=np.int64)
        if column_ids.shape != (d,) or (d and column_ids[0] < 0) or np.any(
                np.diff(column_ids) <= 0):
            raise InputError(f"column_ids must be {d} increasing non-negative column numbers")
        if np.array_equal(column_ids, np.arange(d)):
            column_ids = None
    rbs = (auto_row_block_size(n, d, nnz, block_size) if row_block_size is None
           else min(int(row_block_size), n))
    n_rb = -(-n // rbs)
    bounds = np.minimum(np.arange(n_rb + 1, dtype=np.int64) * rbs, n)

    start = time.perf_counter()
    order = shuffled_order(d, seed) if order is None else order
    n_blocks = -(-d // block_size)
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "name": str(name),
        "n_samples": int(n),
        "n_features": int(d),
        "n_labels": int(labels.n_columns),
        "label_names": label_names,
        "feature_names_prefix": names_pattern,
        # the source's column number of each stored column, when not 0 .. d-1
        "column_ids": None if column_ids is None else [int(i) for i in column_ids],
        "block_size": block_size,
        "n_blocks": n_blocks,
        "row_block_size": int(rbs),
        "n_row_blocks": int(n_rb),
        "seed": seed,
        "discretization": {"n_bins": int(n_bins), "strategy": strategy,
                           "min_bin_count": int(min_bin_count)},
        "content": "discretized codes (per-column binning over all rows at build time)",
    }
    try:
        with atomic_dir(target) as tmp:  # umask modes, cleanup on failure, stale folders
            _write_all(tmp, columns, labels, order, block_size, bounds, n_bins, strategy,
                       min_bin_count, progress, feature_names, meta)
    except OutputError:
        raise
    except OSError as exc:  # a full disk, a read-only folder: the user's path, not the temp's
        raise OutputError(str(target), exc.strerror or str(exc), exc.errno) from exc
    log.info("built store %s: %d columns x %d rows in %d x %d tiles (%.1fs)", target, d, n,
             n_blocks, n_rb, time.perf_counter() - start)
    return open_store(target)


def _write_all(tmp: Path, columns, labels, order, block_size, bounds, n_bins, strategy,
               min_bin_count, progress, feature_names, meta: dict) -> None:
    """Every file of the store into ``tmp``, ``store.json`` (with all checksums) last."""
    d, n_blocks = order.size, meta["n_blocks"]
    out = _Writer(tmp)
    n_codes = np.zeros(d, dtype=np.int64)
    for b in range(n_blocks):
        lo, hi = b * block_size, min(d, (b + 1) * block_size)
        values = columns(b, order[lo:hi])
        block = discretize(values, n_bins=n_bins, strategy=strategy,
                           min_bin_count=min_bin_count)
        del values
        n_codes[lo:hi] = block.n_codes
        for r, tile in enumerate(split_rows(block.codes, bounds)):
            out.save_csc(tile_dir(b, r), *tile)
        del block
        if progress is not None:
            progress("store", b + 1, n_blocks)
    for r, tile in enumerate(split_rows(labels.codes, bounds)):
        out.save_csc(label_dir(r), *tile)
    out.save("labels/n_codes.npy", labels.n_codes)
    out.save("order.npy", order)
    out.save("n_codes.npy", n_codes)
    if meta["feature_names_prefix"] is None:
        out.save_text("feature_names.json", json.dumps(feature_names))
    meta = {**meta, "n_constant": int((n_codes <= 1).sum()), "files": out.files}
    meta["checksum"] = meta_checksum(meta)
    check_meta_before_commit(tmp, meta)
    (tmp / META_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")


def check_meta_before_commit(tmp: Path, meta: dict) -> None:
    """The reader's checks of ``store.json`` on the metadata about to be written: a store that
    would not open is refused here, before it is renamed into place (nothing is left)."""
    from coreselect.store.reader import _check_meta

    _check_meta(meta, tmp, tmp / META_FILE)


__all__ = ["auto_row_block_size", "check_build_target", "build_store", "build_store_from_chunks",
           "split_rows"]
