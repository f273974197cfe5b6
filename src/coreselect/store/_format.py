"""The store's file names, checksums and structural checks (shared by the builder and reader)."""

from __future__ import annotations

import json
import mmap
import os
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from coreselect.errors import StoreError

FORMAT = "coreselect-column-store"
FORMAT_VERSION = 2
META_FILE = "store.json"
#: The largest ``store.json`` read: it lists every file with its checksum and the labels'
#: names (megabytes for the largest stores); a bigger one is refused before it is read.
MAX_META_BYTES = 1 << 28
DEFAULT_BLOCK_SIZE = 65536
# Automatic row blocks aim at tiles of about this many non-zeros (~100 MB of codes).
TARGET_TILE_NNZ = 1 << 24
ROW_BLOCK_MULTIPLE = 4096
ARRAYS = ("indptr", "indices", "data")


def store_error(message: str, block: str | None, path: str | os.PathLike | None = None
                ) -> StoreError:
    """A :class:`~coreselect.errors.StoreError` whose message already names the store and
    the block in words (``"block 1, row block 2"``, ``"labels, row block 0"``,
    ``"store.json"``, ``"column order"`` ...); ``block`` and ``path`` are set as attributes
    (passing them to the constructor would prefix them to the message a second time)."""
    err = StoreError(message)
    err.block, err.path = block, None if path is None else str(path)
    return err


@dataclass(frozen=True)
class StoreRef:
    """What a task receives instead of data: the store's path or URL, and the storage options
    of a URL (picklable, a few bytes; the options never show in a repr)."""

    path: str
    options: dict | None = field(default=None, repr=False, compare=False)


def shuffled_order(n_columns: int, seed: int | np.random.RandomState | None) -> np.ndarray:
    """The seeded random permutation of the columns shared by the store and every engine
    (``order[i]`` is the original id at position ``i``)."""
    from coreselect.utils import check_random_state

    return check_random_state(seed).permutation(n_columns).astype(np.int64)


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a column store."""
    return (Path(path) / META_FILE).is_file()


def block_dir(b: int) -> str:
    return f"blocks/b{b:06d}"


def tile_dir(b: int, r: int) -> str:
    return f"{block_dir(b)}/r{r:06d}"


def label_dir(r: int) -> str:
    return f"labels/r{r:06d}"


def tile_name(b: int, r: int) -> str:
    return f"block {b}, row block {r}"


# -- checksums -----------------------------------------------------------------------------
class CrcWriter:
    """A write-only file wrapper that computes the crc32 and size of what passes through
    (``np.save`` writes in chunks to non-file objects, so nothing is read back)."""

    def __init__(self, fh: BinaryIO):
        self.fh, self.crc, self.size = fh, 0, 0

    def write(self, b) -> int:
        self.crc = zlib.crc32(b, self.crc)
        self.size += len(b)
        return self.fh.write(b)


def file_crc32(path: Path) -> int:
    """crc32 of a file's bytes, read through the page cache without a copy."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return 0
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return zlib.crc32(mm)


def meta_checksum(meta: dict) -> int:
    """crc32 of the canonical JSON of ``meta`` without its ``checksum`` key."""
    body = {k: v for k, v in meta.items() if k != "checksum"}
    return zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


# -- structural checks ---------------------------------------------------------------------
def check_csc(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_rows: int,
              n_codes: np.ndarray, where: str, block: str) -> None:
    """Raise :class:`StoreError` unless the CSC triplet is a valid block of codes: integer
    arrays, ``indptr`` starting at 0, monotone and ending at nnz, row indices in
    ``0 .. n_rows-1`` and strictly increasing within each column, every code in
    ``1 .. n_codes[column]-1`` (code 0 is implicit). Nothing else reaches a kernel."""

    def bad(what: str) -> StoreError:
        return store_error(f"column store {where}: {block} is damaged ({what})", block=block)

    for name, arr in (("indptr", indptr), ("indices", indices), ("data", data)):
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise bad(f"{name} is {arr.dtype} of shape {arr.shape}, expected 1-D integers")
    w = n_codes.size
    if indptr.size != w + 1:
        raise bad(f"indptr has {indptr.size} entries for {w} columns")
    nnz = indices.size
    if indptr[0] != 0 or indptr[-1] != nnz or data.size != nnz:
        raise bad(f"indptr runs {indptr[0]}..{indptr[-1]} for {nnz} indices and "
                  f"{data.size} codes")
    counts = np.diff(indptr)
    if counts.size and counts.min() < 0:
        raise bad("indptr is not monotone")
    if nnz == 0:
        return
    if indices.min() < 0 or indices.max() >= n_rows:
        raise bad(f"a row index is outside 0..{n_rows - 1}")
    step = np.diff(indices)
    allowed = np.zeros(step.size, dtype=bool)  # a column start may step back
    starts = indptr[1:-1][(indptr[1:-1] > 0) & (indptr[1:-1] < nnz)]
    allowed[starts - 1] = True
    if np.any((step <= 0) & ~allowed):
        raise bad("row indices are repeated or unsorted within a column")
    has = counts > 0  # per-column largest code: no nnz-sized temporary
    if data.min() < 1 or np.any(np.maximum.reduceat(data, indptr[:-1][has]) >= n_codes[has]):
        raise bad("a code is outside 1..n_codes-1 of its column")


#: Largest integer store.json may hold (numpy's int64 must hold every derived count).
MAX_FIELD = 2**53


def as_int_field(meta: dict, key: str, where: str, minimum: int = 0) -> int:
    """``meta[key]`` as an int, or :class:`StoreError` (bools, strings, floats and integers
    beyond :data:`MAX_FIELD` are refused)."""
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_FIELD:
        raise store_error(f"column store {where}: store.json field {key!r} is {value!r}, "
                         f"expected an integer in {minimum}..{MAX_FIELD}", block=META_FILE)
    return value


#: numpy parses a ``.npy`` header with ``ast.literal_eval``, and CPython 3.11's AST constructor
#: is not safe in several threads at once ("AST constructor recursion depth mismatch": seen with
#: two Dask threads reading tiles). Header parses are microseconds: one at a time.
NPY_HEADER_LOCK = threading.Lock()


def load_npy(file, **kwargs) -> np.ndarray:
    """``np.load`` of one ``.npy`` file (a path or a binary file object), its header parsed
    under :data:`NPY_HEADER_LOCK`."""
    with NPY_HEADER_LOCK:
        return np.load(file, **kwargs)
