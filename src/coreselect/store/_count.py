"""Step 2 of the build from files, **count**: each task's exact value counts per column, label
ones and rows per piece (:class:`Counted`), and the driver's merge of them into the
:class:`Plan` (each value's code, the column order, the row blocks) that the encode and tile
steps follow. Counts add, so the plan is independent of the grouping."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError, InputError
from coreselect.store._binning import ColumnCounts, bin_table, label_ones
from coreselect.store._format import shuffled_order
from coreselect.store._plan import BuildOptions, Shared, _piece_file, _piece_size, row_bounds
from coreselect.store._read import _chunks, _rows_view, _slices

log = logging.getLogger(__name__)



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
