"""The Extreme Classification Repository's text format (XMC), read and written.

Format: a header line ``n_samples n_features n_labels``, then one sample per line,
``l1,l2,... f:v f:v ...`` with 0-based label and feature indices; a sample without labels
has an empty label list (the line starts with a space, or with its first feature). It is
multi-label LIBSVM with a mandatory header and a fixed base, so reading goes through
:func:`coreselect.io.libsvm.read_libsvm` (its checks: repeated features, non-finite values,
declared widths the data cannot fill) with ``zero_based=True`` once the header is found;
``Y`` stays sparse for many labels. Writing streams one block of lines at a time into an
atomic output (never the whole text in memory: a million labels).
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset
from coreselect.io.text import compressed_writer, open_binary

__all__ = ["read_xmc", "write_xmc", "XMC_SUFFIXES"]

XMC_SUFFIXES = (".xmc",)
_BLOCK_ROWS = 4096


def check_header(path: str) -> tuple[int, int, int]:
    """The header ``(n_samples, n_features, n_labels)`` of an XMC file's first line, or a
    DatasetError naming line 1."""
    with open_binary(path) as fh:
        line = fh.readline(256).decode("latin-1").strip()
    parts = line.split()
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
        raise DatasetError("an XMC file starts with the header line "
                           "'n_samples n_features n_labels'", path=path, line=1)
    return int(parts[0]), int(parts[1]), int(parts[2])


def read_xmc(path: str | os.PathLike, name: str | None = None) -> Dataset:
    """Read an XMC file (header required, 0-based indices) into a Dataset (CSR ``X``; ``Y``
    sparse when large)."""
    from coreselect.io.libsvm import read_libsvm

    spath = str(path)
    n, d, L = check_header(spath)
    dataset = read_libsvm(spath, zero_based=True, name=name)
    if dataset.X.shape[0] != n:
        raise DatasetError(f"the header declares {n} samples but the file holds "
                           f"{dataset.X.shape[0]}", path=spath, line=1)
    if dataset.X.shape[1] != d or dataset.Y.shape[1] != L:
        raise DatasetError(f"the data does not fit the header's {d} features and {L} labels",
                           path=spath, line=1)
    dataset.metadata = dataclass_replace(dataset.metadata, format="xmc")
    return dataset


def dataclass_replace(meta, **changes):
    import dataclasses

    return dataclasses.replace(meta, **changes)


def _number(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(float(v))


def write_xmc(dataset: Dataset, path: str | os.PathLike) -> None:
    """Write a Dataset in XMC format (header, 0-based), atomically, block by block."""
    from coreselect.io.files import atomic_output

    X = sp.csr_matrix(dataset.X, dtype=np.float64)
    if not np.all(np.isfinite(X.data)):
        raise DatasetError("XMC cannot hold NaN or infinite values", path=str(path))
    X.sort_indices()
    Y = sp.csr_matrix(dataset.Y)
    Y.eliminate_zeros()
    Y.sort_indices()
    n, d = X.shape
    with atomic_output(path, mode="wb") as raw, compressed_writer(raw, str(path)) as fh:
        fh.write(f"{n} {d} {Y.shape[1]}\n")
        for r0 in range(0, n, _BLOCK_ROWS):
            lines = []
            for i in range(r0, min(n, r0 + _BLOCK_ROWS)):
                a, b = X.indptr[i], X.indptr[i + 1]
                feats = " ".join(f"{c}:{_number(v)}" for c, v in
                                 zip(X.indices[a:b].tolist(), X.data[a:b].tolist()) if v != 0)
                labs = ",".join(map(str, Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist()))
                lines.append(f"{labs} {feats}".rstrip() if labs else f" {feats}".rstrip())
            fh.write("\n".join(lines) + "\n")
