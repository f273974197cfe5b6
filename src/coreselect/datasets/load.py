"""``coreselect.load``: one entry point for files, built-in generators and registry names."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset

__all__ = ["load", "stack"]


def stack(parts: list[Dataset], name: str) -> Dataset:
    """Stack datasets with the same columns row-wise (e.g. a train and a test split)."""
    first = parts[0]
    for p in parts[1:]:
        if p.feature_names != first.feature_names or p.label_names != first.label_names:
            raise DatasetError(f"the parts of {name!r} do not have the same attributes")
    if any(sp.issparse(p.X) for p in parts):
        X = sp.vstack([sp.csr_matrix(p.X) for p in parts], format="csr")
    else:
        X = np.vstack([p.X for p in parts])
    Y = np.vstack([p.Y.toarray() if sp.issparse(p.Y) else p.Y for p in parts]).astype(np.int8)
    meta = dict(first.meta)
    meta["parts"] = [p.meta.get("source") for p in parts]
    return Dataset(X=X, Y=Y, feature_names=list(first.feature_names), label_names=list(first.label_names),
                   name=name, meta=meta)


def load(data: str | os.PathLike, labels: Any = None, verify: bool = True, progress=None, **options: Any) -> Dataset:
    """Load a dataset from a file, a built-in generator, or the registry.

    Parameters
    ----------
    data : str or path-like
        An existing file (any format :func:`coreselect.io.read` knows); ``"synthesized"``
        (:func:`~coreselect.datasets.make_synthesized`); or a registry name such as
        ``"emotions"`` or ``"rcv1subset1"``, fetched into the cache on first use.
    labels : optional
        Label specification for files (see :func:`coreselect.io.read`).
    verify : bool
        For registry names: check downloads against the registry's SHA-256.
    progress : callable, optional
        Download progress callback (see :func:`coreselect.datasets.fetch.fetch`).
    **options
        Passed to the reader (or to ``make_synthesized``).

    Raises
    ------
    DatasetError
        Unknown name (with close matches), unreadable or malformed file.
    """
    from coreselect import io as cio

    path = Path(data)
    if path.exists():
        return cio.read(path, labels=labels, **options)
    text = str(data)
    if text.lower() == "synthesized":
        from coreselect.datasets.synthetic import make_synthesized

        return make_synthesized(**options)
    from coreselect.datasets import registry
    from coreselect.datasets.fetch import fetch

    info = registry.find(text)
    if info is None:
        looks_like_file = any(sep in text for sep in ("/", os.sep)) or "." in Path(text).name
        close = registry.close_names(text)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        if looks_like_file:
            raise DatasetError(f"no such file{hint}", path=text)
        raise DatasetError(
            f"{text!r} is neither a file, 'synthesized', nor a known dataset{hint} "
            "(`coreselect datasets list` shows the names)"
        )
    files = fetch(info.name, verify=verify, progress=progress)
    xml = labels
    if xml is None and info.label_file:
        from coreselect.datasets.fetch import cache_dir

        xml = cache_dir() / info.label_file
    parts = [cio.read(f, labels=xml, **options) for f in files]
    ds = parts[0] if len(parts) == 1 else stack(parts, info.name)
    ds.name = info.name
    ds.meta["registry"] = info.name
    return ds
