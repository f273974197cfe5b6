"""Reading and writing multi-label datasets in every supported format.

:func:`read` and :func:`write` dispatch on the file suffix:

=====================================  ==========================================
``.arff``, ``.arff.gz``, ``.arff.bz2``  Mulan / MEKA ARFF (:mod:`coreselect.io.arff`)
``.svm``, ``.libsvm``, ``.txt``         multi-label LIBSVM (:mod:`coreselect.io.libsvm`)
``.csv`` (``.csv.gz``)                  CSV (:mod:`coreselect.io.tabular`)
``.parquet``, ``.pq``                   Parquet (:mod:`coreselect.io.tabular`)
=====================================  ==========================================
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset

__all__ = ["Dataset", "read", "write", "export_columns", "subset_columns", "from_arrays", "format_of"]

_FORMATS = {
    "arff": (".arff", ".arff.gz", ".arff.bz2"),
    "libsvm": (".svm", ".libsvm", ".svmlight", ".txt", ".svm.gz", ".libsvm.gz", ".txt.gz", ".svm.bz2"),
    "csv": (".csv", ".csv.gz", ".csv.bz2"),
    "parquet": (".parquet", ".pq"),
}


def format_of(path: str | os.PathLike) -> str:
    """The format name (``arff``, ``libsvm``, ``csv``, ``parquet``) of a path, by suffix."""
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
        ARFF: a Mulan XML path, a MEKA-style count or names; CSV/Parquet: names, a prefix
        or a count of trailing columns; LIBSVM: unused.
    **options
        Passed to the reader (``missing="bin"`` for ARFF, ``zero_based`` for LIBSVM, ...).

    Raises
    ------
    DatasetError
        On a missing or malformed file, naming the file and line.
    """
    fmt = format_of(path)
    if not Path(path).exists():
        raise DatasetError("no such file", path=str(path))
    if fmt == "arff":
        from coreselect.io.arff import read_arff

        return read_arff(path, labels=labels, **options)
    if fmt == "libsvm":
        from coreselect.io.libsvm import read_libsvm

        if labels is not None:
            raise DatasetError("LIBSVM files carry their labels; do not pass labels", path=str(path))
        return read_libsvm(path, **options)
    if fmt == "csv":
        from coreselect.io.tabular import read_csv

        return read_csv(path, labels=labels, **options)
    from coreselect.io.tabular import read_parquet

    return read_parquet(path, labels=labels, **options)


def write(dataset: Dataset, path: str | os.PathLike) -> None:
    """Write a dataset, choosing the format by suffix; the file appears only when complete.

    ARFF also writes the Mulan label XML beside it (same stem).
    """
    fmt = format_of(path)
    if fmt == "arff":
        from coreselect.io.arff import write_arff

        write_arff(dataset, path)
    elif fmt == "libsvm":
        from coreselect.io.libsvm import write_libsvm

        write_libsvm(dataset, path)
    elif fmt == "csv":
        from coreselect.io.tabular import write_csv

        write_csv(dataset, path)
    else:
        from coreselect.io.tabular import write_parquet

        write_parquet(dataset, path)


def subset_columns(dataset: Dataset, columns: Sequence[int | str]) -> Dataset:
    """The dataset reduced to the given feature columns (indices or names), labels kept.

    ``meta`` keeps the nominal declarations of the kept features; ``id_columns`` and
    ``feature_kinds`` are remapped.
    """
    cols = list(columns)
    pos = {n: i for i, n in enumerate(dataset.feature_names)}
    idx: list[int] = []
    for c in cols:
        if isinstance(c, str):
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
    meta = dict(dataset.meta) if isinstance(dataset.meta, dict) else {}
    if "nominal_values" in meta:
        meta["nominal_values"] = {n: v for n, v in meta["nominal_values"].items() if n in set(names)}
    if "feature_kinds" in meta and len(meta["feature_kinds"]) == dataset.n_features:
        meta["feature_kinds"] = [meta["feature_kinds"][i] for i in idx]
    if "id_columns" in meta:
        old = set(meta["id_columns"])
        meta["id_columns"] = [j for j, i in enumerate(idx) if i in old]
    return Dataset(X=X, Y=dataset.Y, feature_names=names, label_names=list(dataset.label_names),
                   name=dataset.name, meta=meta)


def export_columns(dataset: Dataset, columns: Sequence[int | str], path: str | os.PathLike) -> None:
    """Write ``dataset`` reduced to ``columns`` (feature indices or names) plus all labels.

    The format follows the suffix of ``path`` (see :func:`write`); used by
    ``coreselect select --export``. Nothing is written unless the whole file is.
    """
    write(subset_columns(dataset, columns), path)


def from_arrays(X, Y, feature_names=None, label_names=None, name: str = "arrays") -> Dataset:
    """Build a Dataset from numpy / scipy.sparse / pandas inputs (see :func:`coreselect.io.tabular.from_arrays`)."""
    from coreselect.io.tabular import from_arrays as _from_arrays

    return _from_arrays(X, Y, feature_names=feature_names, label_names=label_names, name=name)
