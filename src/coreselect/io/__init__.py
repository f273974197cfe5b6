"""Reading and writing multi-label datasets in every supported format.

:func:`read` and :func:`write` dispatch on the file suffix:

=====================================  ==========================================
``.arff`` (``.gz``, ``.bz2``, ``.xz``)  Mulan / MEKA ARFF (:mod:`coreselect.io.arff`)
``.svm``, ``.libsvm``, ``.txt``         multi-label LIBSVM (:mod:`coreselect.io.libsvm`)
``.xmc`` (``.gz``, ``.bz2``, ``.xz``)   Extreme Classification Repository (:mod:`coreselect.io.xmc`)
``.csv`` (``.gz``, ``.bz2``, ``.xz``)   CSV (:mod:`coreselect.io.tabular`)
``.parquet``, ``.pq``                   Parquet (:mod:`coreselect.io.tabular`)
=====================================  ==========================================

Reading in row chunks with bounded memory, and many files (a folder, a glob, a ``.list``
file, an fsspec URL) as one dataset: :mod:`coreselect.io.chunks` (``open_chunks``); every
whole-file reader is its chunk reader's blocks concatenated (one parser per format).

Labels are chosen the same way for every format (:mod:`coreselect.io.labels`: ``N`` is the
last N columns/attributes). Readers record what they learnt in the typed
:class:`~coreselect.io.dataset.DatasetMeta` (``Dataset.metadata``); ID-like columns follow
one rule (:func:`~coreselect.io.dataset.detect_id_columns`). Untrusted input is bounded:
compressed files are decoded as a stream with a size cap (:mod:`coreselect.io.text`), and
declared widths the data cannot fill are refused before allocation
(:func:`~coreselect.io.dataset.check_declared_width`).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, IndexedNames

__all__ = ["Dataset", "DatasetMeta", "IndexedNames", "read", "write", "export_columns", "subset_columns",
           "from_arrays", "format_of"]

_Z = ("", ".gz", ".bz2", ".xz")
_FORMATS = {
    "arff": tuple(".arff" + z for z in _Z),
    "libsvm": tuple(s + z for s in (".svm", ".libsvm", ".svmlight", ".txt") for z in _Z),
    "csv": tuple(".csv" + z for z in _Z),
    "xmc": tuple(".xmc" + z for z in _Z),
    "parquet": (".parquet", ".pq"),
}


def format_of(path: str | os.PathLike) -> str:
    """The format name (``arff``, ``libsvm``, ``csv``, ``xmc``, ``parquet``) of a path, by suffix."""
    name = Path(path).name.lower()
    for fmt, suffixes in _FORMATS.items():
        if name.endswith(suffixes):
            return fmt
    known = ", ".join(s for ss in _FORMATS.values() for s in ss)
    raise DatasetError(f"unknown data file suffix (known: {known})", path=str(path))


def read(path: str | os.PathLike, labels: Any = None, **options: Any) -> Dataset:
    """Read a dataset file, choosing the reader by suffix.

    Parameters
    ----------
    path : path-like
    labels : optional
        A label spec, the same for ARFF, CSV and Parquet (:mod:`coreselect.io.labels`):
        ``N`` the last N columns/attributes, ``-N`` the first N, names, a prefix, or a
        Mulan XML file. LIBSVM files carry their labels (must be None).
    **options
        Passed to the reader (``missing="bin"`` for ARFF, ``zero_based`` for LIBSVM, ...).

    Raises
    ------
    DatasetError
        On a missing or malformed file, naming the file and line.
    """
    ds = _read(path, labels, **options)
    m = ds.metadata
    # Every file read is an input the CLI must never overwrite (DatasetMeta.files_read).
    read_ = [*m.files_read, str(path), *([m.label_file] if m.label_file else [])]
    ds.metadata = dataclasses.replace(m, files_read=tuple(read_))
    return ds


def _read(path: str | os.PathLike, labels: Any = None, **options: Any) -> Dataset:
    fmt = format_of(path)
    url = "://" in str(path) and not str(path).lower().startswith("file://")
    if not url and not Path(path).exists():  # a URL's absence is found by opening it
        raise DatasetError("no such file", path=str(path))
    if fmt != "arff" and "missing" in options:
        # ARFF's '?' is the only missing-value marker with a choice; elsewhere a missing
        # value is always an error, so only that default is accepted.
        if options.pop("missing") not in (None, "error"):
            raise DatasetError(f"missing='bin' (--missing bin) applies to ARFF files only; this is a {fmt} "
                               "file, whose missing values are always an error", path=str(path))
    if fmt != "csv" and "header" in options:
        if options.pop("header") is not None:
            raise DatasetError(f"header= (--no-header) applies to CSV files only; this is a {fmt} file",
                               path=str(path))
    if fmt == "arff":
        from coreselect.io.arff import read_arff

        return read_arff(path, labels=labels, **options)
    if fmt == "libsvm":
        from coreselect.io.libsvm import read_libsvm

        if labels is not None:
            raise DatasetError("LIBSVM files carry their labels; do not pass labels", path=str(path))
        return read_libsvm(path, **options)
    if fmt == "xmc":
        from coreselect.io.xmc import read_xmc

        if labels is not None:
            raise DatasetError("XMC files carry their labels; do not pass labels", path=str(path))
        return read_xmc(path, **options)
    if fmt == "csv":
        from coreselect.io.tabular import read_csv

        return read_csv(path, labels=labels, **options)
    from coreselect.io.tabular import read_parquet

    return read_parquet(path, labels=labels, **options)


def write(dataset: Dataset, path: str | os.PathLike, **options: Any) -> None:
    """Write a dataset, choosing the format by suffix; the file appears only when complete.

    ARFF also writes the Mulan label XML beside it (same stem), but never replaces an
    existing XML that names other labels (see :func:`coreselect.io.arff.write_arff`).
    ``options`` go to the format's writer (``xml=`` for ARFF).
    """
    fmt = format_of(path)
    if fmt == "arff":
        from coreselect.io.arff import write_arff

        write_arff(dataset, path, **options)
    elif fmt == "libsvm":
        from coreselect.io.libsvm import write_libsvm

        write_libsvm(dataset, path)
    elif fmt == "xmc":
        from coreselect.io.xmc import write_xmc

        write_xmc(dataset, path)
    elif fmt == "csv":
        from coreselect.io.tabular import write_csv

        write_csv(dataset, path)
    else:
        from coreselect.io.tabular import write_parquet

        write_parquet(dataset, path)


def subset_columns(dataset: Dataset, columns: Sequence[int | str]) -> Dataset:
    """The dataset reduced to the given feature columns (indices or names), labels kept.

    ``metadata`` keeps the nominal declarations of the kept features; ``id_columns`` and
    ``feature_kinds`` are remapped.
    """
    import dataclasses

    cols = list(columns)
    pos = None
    idx: list[int] = []
    for c in cols:
        if isinstance(c, str):
            if pos is None:
                pos = {n: i for i, n in enumerate(dataset.feature_names)}
            if c not in pos:
                raise DatasetError(f"no feature named {c!r}")
            idx.append(pos[c])
        else:
            i = int(c)
            if not 0 <= i < dataset.n_features:
                raise DatasetError(f"feature index {i} out of range ({dataset.n_features} features)")
            idx.append(i)
    X = dataset.X[:, idx] if sp.issparse(dataset.X) else np.asarray(dataset.X)[:, idx]
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    names = [dataset.feature_names[i] for i in idx]
    m = dataset.metadata
    kept = set(names)
    kinds = m.feature_kinds
    old_ids = set(m.id_columns)
    metadata = dataclasses.replace(
        m,
        nominal_values={n: v for n, v in m.nominal_values.items() if n in kept},
        feature_kinds=tuple(kinds[i] for i in idx) if kinds is not None and len(kinds) == dataset.n_features else None,
        id_columns=tuple(j for j, i in enumerate(idx) if i in old_ids),
    )
    return Dataset(X=X, Y=dataset.Y, feature_names=names, label_names=list(dataset.label_names),
                   name=dataset.name, metadata=metadata)


def export_columns(dataset: Dataset, columns: Sequence[int | str], path: str | os.PathLike,
                   **options: Any) -> None:
    """Write ``dataset`` reduced to ``columns`` (feature indices or names) plus all labels.

    The format follows the suffix of ``path`` (see :func:`write`); used by
    ``coreselect select --export``. Nothing is written unless the whole file is.
    """
    write(subset_columns(dataset, columns), path, **options)


def from_arrays(X, Y, feature_names=None, label_names=None, name: str = "arrays") -> Dataset:
    """Build a Dataset from numpy / scipy.sparse / pandas inputs (see :func:`coreselect.io.tabular.from_arrays`)."""
    from coreselect.io.tabular import from_arrays as _from_arrays

    return _from_arrays(X, Y, feature_names=feature_names, label_names=label_names, name=name)
