"""A column-partitioned on-disk store that workers memory-map by themselves.

Layout of ``STORE_DIR``::

    store.json            format name and version, n, d, L, block layout, seed, discretization
    order.npy             int64 (d,): original column id of each store position
    n_codes.npy           int64 (d,): number of codes of each store position
    feature_names.json    list of d names (original id order)
    labels/               the discretized labels: CSC arrays indptr/indices/data + n_codes
    blocks/b000000/ ...   one folder per block of ``block_size`` store positions, CSC arrays
                          indptr.npy (int64), indices.npy (int32), data.npy (int16 codes)

The columns are shuffled once with the seed (``order``), so every contiguous range of store
positions is a uniformly random set of columns: the partition of Algorithm 3 is a set of
contiguous ranges, and a task needs only ``(store path, start, stop)`` to read its own
columns, mapping just the blocks it overlaps (``np.load(mmap_mode="r")``). On a shared
filesystem this works unchanged for a multi-machine Dask cluster.

The store keeps *discretized codes*, not raw values. Discretization is strictly per column
(:mod:`coreselect.core.discretize`), so discretizing block by block at build time gives the
same codes as discretizing everything at once, and the workers never need each other's data.
The price is that the binning (``n_bins``, ``strategy``, ``min_bin_count``) is fixed when the
store is built; it is recorded in ``store.json``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix, discretize, discretize_labels
from coreselect.errors import EngineError, InputError

log = logging.getLogger(__name__)

FORMAT = "coreselect-column-store"
FORMAT_VERSION = 1
META_FILE = "store.json"
DEFAULT_BLOCK_SIZE = 65536
_ARRAYS = ("indptr", "indices", "data")


@dataclass(frozen=True)
class StoreRef:
    """What a task receives instead of data: the store's path (picklable, a few bytes)."""

    path: str


def shuffled_order(n_columns: int, seed: int | np.random.RandomState | None) -> np.ndarray:
    """The seeded random permutation of the columns shared by the store and every engine
    (``order[i]`` is the original id at position ``i``)."""
    from coreselect.utils import check_random_state

    return check_random_state(seed).permutation(n_columns).astype(np.int64)


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a column store."""
    return (Path(path) / META_FILE).is_file()


# ------------------------------------------------------------------------------------------
def build_store(
    X: np.ndarray | sp.spmatrix,
    Y: np.ndarray | sp.spmatrix,
    path: str | os.PathLike,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    seed: int = 0,
    n_bins: int = 5,
    strategy: str = "auto",
    min_bin_count: int = 10,
    feature_names: Sequence[str] | None = None,
    label_names: Sequence[str] | None = None,
    name: str = "dataset",
    progress: Callable[[str, int, int], None] | None = None,
) -> "ColumnStore":
    """Discretize ``X`` block by block and write a column store at ``path``.

    The store appears under ``path`` only when complete (it is written into a temporary
    folder beside it and renamed), so a failed build leaves nothing behind.

    Raises
    ------
    InputError
        On bad parameters, mismatched shapes, or when ``path`` exists and is not empty.
    """
    target = Path(path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InputError(f"{target} already exists; choose a new folder for the store")
    if int(block_size) < 1:
        raise InputError(f"block size must be at least 1, got {block_size}")
    if seed is None or int(seed) < 0:
        raise InputError("the store needs a non-negative integer seed")
    block_size, seed = int(block_size), int(seed)
    n, d = X.shape
    if Y.shape[0] != n:
        raise InputError(f"X has {n} samples but Y has {Y.shape[0]}")
    if d == 0:
        raise InputError("there are no feature columns")
    labels = discretize_labels(Y)
    from coreselect.io.dataset import IndexedNames

    if feature_names is None:
        feature_names = IndexedNames(d, "x")
    # Default names x0, x1, ... are kept as a pattern: no file of millions of names.
    names_pattern = feature_names.prefix if isinstance(feature_names, IndexedNames) else None
    if names_pattern is None:
        feature_names = list(feature_names)
    label_names = ([f"y{i}" for i in range(labels.n_columns)] if label_names is None
                   else list(label_names))
    if len(feature_names) != d or len(label_names) != labels.n_columns:
        raise InputError("the numbers of feature/label names do not match the data")

    start = time.perf_counter()
    # Column slicing wants CSC; a dense X is sliced directly.
    Xc = sp.csc_matrix(X) if sp.issparse(X) else np.asarray(X)
    order = shuffled_order(d, seed)
    n_blocks = -(-d // block_size)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        n_codes = np.zeros(d, dtype=np.int64)
        for b in range(n_blocks):
            lo, hi = b * block_size, min(d, (b + 1) * block_size)
            cols = order[lo:hi]
            block = discretize(Xc[:, cols], n_bins=n_bins, strategy=strategy,
                               min_bin_count=min_bin_count)
            n_codes[lo:hi] = block.n_codes
            _save_csc(tmp / "blocks" / _block_name(b), block.codes)
            if progress is not None:
                progress("store", b + 1, n_blocks)
        _save_csc(tmp / "labels", labels.codes)
        np.save(tmp / "labels" / "n_codes.npy", labels.n_codes)
        np.save(tmp / "order.npy", order)
        np.save(tmp / "n_codes.npy", n_codes)
        if names_pattern is None:
            (tmp / "feature_names.json").write_text(json.dumps(feature_names))
        meta = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "name": name,
            "n_samples": int(n),
            "n_features": int(d),
            "n_labels": int(labels.n_columns),
            "label_names": label_names,
            "feature_names_prefix": names_pattern,
            "block_size": block_size,
            "n_blocks": n_blocks,
            "seed": seed,
            "n_constant": int((n_codes <= 1).sum()),
            "discretization": {"n_bins": int(n_bins), "strategy": strategy,
                               "min_bin_count": int(min_bin_count)},
            "content": "discretized codes (per-column binning at build time)",
        }
        (tmp / META_FILE).write_text(json.dumps(meta, indent=1))
        if target.exists():
            target.rmdir()  # an empty folder; checked above
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("built store %s: %d columns in %d blocks of %d (%.1fs)", target, d, n_blocks,
             block_size, time.perf_counter() - start)
    return open_store(target)


def _block_name(b: int) -> str:
    return f"b{b:06d}"


def _save_csc(folder: Path, codes: sp.csc_matrix) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    codes = sp.csc_matrix(codes)
    codes.sort_indices()
    np.save(folder / "indptr.npy", codes.indptr.astype(np.int64))
    np.save(folder / "indices.npy", codes.indices.astype(np.int32))
    np.save(folder / "data.npy", codes.data.astype(np.int16 if codes.data.size == 0
                                                  or codes.data.max() < 2**15 else np.int32))


def _load_array(path: Path, mmap: bool = True) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r" if mmap else None)
    except FileNotFoundError:
        raise EngineError(f"column store is missing {path}") from None
    except (ValueError, OSError) as exc:
        raise EngineError(f"column store file {path} is unreadable: {exc}") from None


# ------------------------------------------------------------------------------------------
class ColumnStore:
    """An opened column store (see the module docstring). Cheap to open: only metadata is
    read; blocks are memory-mapped when a range of columns is asked for."""

    def __init__(self, path: str | os.PathLike, meta: dict):
        self.path = Path(path)
        self.meta = meta

    # -- metadata ------------------------------------------------------------------------
    @property
    def ref(self) -> StoreRef:
        return StoreRef(str(self.path.resolve()))

    @property
    def n_samples(self) -> int:
        return int(self.meta["n_samples"])

    @property
    def n_features(self) -> int:
        return int(self.meta["n_features"])

    @property
    def n_labels(self) -> int:
        return int(self.meta["n_labels"])

    @property
    def block_size(self) -> int:
        return int(self.meta["block_size"])

    @property
    def n_blocks(self) -> int:
        return int(self.meta["n_blocks"])

    @property
    def seed(self) -> int:
        return int(self.meta["seed"])

    @property
    def label_names(self) -> list[str]:
        return list(self.meta["label_names"])

    @cached_property
    def feature_names(self) -> Sequence[str]:
        prefix = self.meta.get("feature_names_prefix")
        if prefix is not None:
            from coreselect.io.dataset import IndexedNames

            return IndexedNames(self.n_features, prefix)
        try:
            return json.loads((self.path / "feature_names.json").read_text())
        except FileNotFoundError:
            raise EngineError(f"column store {self.path} has no feature_names.json") from None

    @cached_property
    def order(self) -> np.ndarray:
        """Original column id of every store position (memory-mapped)."""
        return _load_array(self.path / "order.npy")

    @cached_property
    def n_codes(self) -> np.ndarray:
        """Number of codes of every store position (memory-mapped)."""
        return _load_array(self.path / "n_codes.npy")

    def n_selectable(self, keep_constant: bool = False) -> int:
        return self.n_features if keep_constant else self.n_features - int(self.meta["n_constant"])

    # -- data ----------------------------------------------------------------------------
    def labels(self) -> DiscreteMatrix:
        folder = self.path / "labels"
        codes = _read_csc(folder, self.n_samples, mmap=False)
        return DiscreteMatrix(codes, np.asarray(_load_array(folder / "n_codes.npy", mmap=False)))

    def read_range(self, start: int, stop: int) -> tuple[np.ndarray, DiscreteMatrix]:
        """Columns at store positions ``start .. stop-1``: ``(original ids, codes)`` in store
        order. Only the overlapping blocks are mapped, and only the range is copied."""
        if not 0 <= start <= stop <= self.n_features:
            raise ValueError(f"bad column range {start}:{stop}")
        bs = self.block_size
        pieces = []
        for b in range(start // bs, -(-stop // bs)):
            lo = max(start, b * bs) - b * bs
            hi = min(stop, (b + 1) * bs) - b * bs
            folder = self.path / "blocks" / _block_name(b)
            indptr = _load_array(folder / "indptr.npy")
            a, z = int(indptr[lo]), int(indptr[hi])
            ptr = np.asarray(indptr[lo:hi + 1]) - a
            indices = np.array(_load_array(folder / "indices.npy")[a:z])
            data = np.array(_load_array(folder / "data.npy")[a:z])
            pieces.append(sp.csc_matrix((data, indices, ptr), shape=(self.n_samples, hi - lo)))
        codes = (sp.hstack(pieces, format="csc") if len(pieces) > 1 else pieces[0]) if pieces \
            else sp.csc_matrix((self.n_samples, 0), dtype=np.int16)
        ids = np.array(self.order[start:stop])
        return ids, DiscreteMatrix(codes, np.array(self.n_codes[start:stop]))

    def read_all(self) -> DiscreteMatrix:
        """Every column, in original id order (for the centralized mode: needs all memory)."""
        ids, block = self.read_range(0, self.n_features)
        return block.take(np.argsort(ids, kind="stable"))

    def check(self) -> None:
        """Raise :class:`EngineError` when a block or another file is missing."""
        names = ("order.npy", "n_codes.npy") + (
            () if self.meta.get("feature_names_prefix") is not None else ("feature_names.json",))
        for name in names:
            if not (self.path / name).is_file():
                raise EngineError(f"column store {self.path} is missing {name}")
        for arr in _ARRAYS + ("n_codes",):
            if not (self.path / "labels" / f"{arr}.npy").is_file():
                raise EngineError(f"column store {self.path} is missing labels/{arr}.npy")
        for b in range(self.n_blocks):
            for arr in _ARRAYS:
                if not (self.path / "blocks" / _block_name(b) / f"{arr}.npy").is_file():
                    raise EngineError(
                        f"column store {self.path} is missing block {b} "
                        f"(blocks/{_block_name(b)}/{arr}.npy); rebuild it with "
                        "'coreselect store build'")

    def info(self) -> dict:
        keys = ("name", "version", "n_samples", "n_features", "n_labels", "block_size",
                "n_blocks", "seed", "n_constant", "discretization")
        return {"path": str(self.path), **{k: self.meta.get(k) for k in keys}}


def _read_csc(folder: Path, n_rows: int, mmap: bool = True) -> sp.csc_matrix:
    indptr, indices, data = (np.asarray(_load_array(folder / f"{a}.npy", mmap=mmap))
                             for a in _ARRAYS)
    return sp.csc_matrix((data, indices, indptr), shape=(n_rows, indptr.size - 1))


def open_store(path: str | os.PathLike | StoreRef, check: bool = True) -> ColumnStore:
    """Open the column store at ``path``.

    Raises
    ------
    EngineError
        When ``path`` holds no store, a store of another format version, or one with
        missing blocks (``check=True``).
    """
    if isinstance(path, StoreRef):
        path = path.path
    folder = Path(path)
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise EngineError(f"{folder} is not a coreselect column store (no {META_FILE})")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot read {meta_path}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise EngineError(f"{folder} is not a coreselect column store (format {meta.get('format')!r})"
                          if isinstance(meta, dict) else f"{meta_path} is malformed")
    if meta.get("version") != FORMAT_VERSION:
        raise EngineError(
            f"column store {folder} has format version {meta.get('version')}, this coreselect "
            f"reads version {FORMAT_VERSION}; rebuild it with 'coreselect store build'")
    store = ColumnStore(folder, meta)
    if check:
        store.check()
    return store
