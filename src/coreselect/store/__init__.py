"""A tiled on-disk store of discretized codes that workers read by themselves.

Layout of ``STORE_DIR`` (format version 2)::

    store.json                  format, version, n, d, L, tile layout, seed, discretization,
                                ``column_ids`` (the source's column number of each stored
                                column when the store holds some columns of it, e.g. a
                                file's without its ID columns; else null), the size and
                                crc32 of every other file, and the crc32 of store.json
                                itself (key ``checksum``)
    order.npy                   int64 (d,): original column id of each store position
    n_codes.npy                 int64 (d,): number of codes of each store position
    feature_names.json          list of d names (absent when the names are x0, x1, ...)
    labels/n_codes.npy          int64 (L,): 1 or 2 codes per label
    labels/r000000/ ...         the discretized labels of row block 0 (CSC triplet)
    blocks/b000000/r000000/ ... the tile of column block 0 x row block 0: CSC arrays
                                indptr.npy (int64), indices.npy (int32, rows local to the
                                row block), data.npy (int16 codes, or int32 when needed)

Columns are shuffled once with the seed (``order``), so every contiguous range of store
positions is a uniformly random set of columns: the partition of Algorithm 3 is a set of
contiguous ranges, and a task needs only ``(store path, start, stop)`` to read its own
columns. Rows are cut into row blocks of ``row_block_size`` samples (the last one shorter),
so a row-sharded engine reads one tile (row block x column range) at a time
(:meth:`ColumnStore.read_tile`, :meth:`ColumnStore.labels_tile`). The default row block size
is automatic: about :data:`TARGET_TILE_NNZ` non-zeros per tile (one row block for data up to
that size), rounded up to a multiple of 4096 rows.

The store keeps *discretized codes*, not raw values. Discretization is strictly per column
and computed over all rows once at build time, so the codes of a tile equal the rows of the
codes of the whole matrix.

Integrity: every file's size and crc32 are in ``store.json``, whose own crc32 is stored in
it. Opening a store checks ``store.json`` and that every file is present with the right
size (a ``stat`` per file); a block's crc32 is verified the first time a process opens the
file, and the structural invariants of the arrays (indptr monotone and ending at nnz, row
indices in range and increasing, codes in ``1 .. n_codes-1``, shapes as in the metadata)
are checked on every read, before any kernel sees them. :meth:`ColumnStore.verify` (the CLI's
``store verify`` and ``store info``) checks every file. Every problem raises
:class:`StoreError` naming the block.

Version 1 stores (one row block, no checksums) are refused with a clear message: rebuild.
"""

from coreselect.store._format import (
    DEFAULT_BLOCK_SIZE,
    FORMAT,
    FORMAT_VERSION,
    META_FILE,
    TARGET_TILE_NNZ,
    StoreRef,
    is_store,
    shuffled_order,
)
from coreselect.errors import StoreError
from coreselect.store.build import build_store, build_store_from_chunks, check_build_target
from coreselect.store.opening import open_store
from coreselect.store.reader import ColumnStore

__all__ = [
    "DEFAULT_BLOCK_SIZE", "FORMAT", "FORMAT_VERSION", "META_FILE", "TARGET_TILE_NNZ",
    "ColumnStore", "StoreError", "StoreRef", "build_store", "build_store_from_chunks",
    "check_build_target",
    "is_store", "open_store", "shuffled_order",
]
