"""Reading a piece's row chunks for the count and encode steps: ID columns left out, cut into
row slices of about :data:`SLICE_CELLS` cells (views, no copy), and, while the tasks run in the
driver's process, the bytes read reported as they go (:data:`_LIVE`)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from coreselect.store._plan import Shared, _piece_size



#: While the driver runs tasks in its own process: called with the bytes of each chunk read
#: (estimated from the file's size and rows), for a progress bar that moves within a file.
_LIVE: Callable[[float], None] | None = None


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
