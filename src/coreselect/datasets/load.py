"""``coreselect.load``: one entry point for files, built-in generators and registry names."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from coreselect.errors import DatasetError, InputTypeError
from coreselect.io.dataset import Dataset, stack  # stack: re-exported, its home is io.dataset

__all__ = ["load", "stack"]


def _is_arff(data: str | os.PathLike) -> bool:
    """Whether ``data`` names an ARFF file or a registry dataset (all of which are ARFF)."""
    from coreselect.io import format_of

    try:
        return format_of(data) == "arff"
    except DatasetError:
        # a registry name (the registry's files are ARFF); "synthesized" is generated
        return "." not in Path(str(data)).name and str(data).lower() != "synthesized"


def load(data: str | os.PathLike, labels: Any = None, verify: bool = True, progress=None, **options: Any) -> Dataset:
    """Load a dataset from a file, a built-in generator, or the registry.

    Parameters
    ----------
    data : str or path-like
        Looked up in this order:

        1. an existing file (any format :func:`coreselect.io.read` knows), or several read as
           row shards of one dataset (a folder that is not a column store, a glob, a ``.list``
           file, an fsspec URL of a file or a glob: :func:`coreselect.io.chunks.open_chunks`);
        2. a path relative to ``$COREDATA`` (``"rcv1v2/rcv1subset1.arff.gz"``); when
           ``COREDATA`` is unset, the local copy is ``../shared/data`` beside the source
           checkout, if there (:func:`coreselect.datasets.fetch.coredata_dir`; ``COREDATA=``,
           empty, means none);
        3. ``"synthesized"`` (:func:`~coreselect.datasets.make_synthesized`);
        4. a registry name such as ``"emotions"`` or ``"rcv1subset1"`` (``coreselect
           datasets list``): its files are taken from ``$COREDATA`` when there (offline),
           else from the cache, else downloaded into the cache;
        5. a registry file path (``"mulan/emotions/emotions-train.arff"``) not in
           ``$COREDATA``: that file and its label file, from the cache or a download.
    labels : optional
        Label specification for files (see :func:`coreselect.io.read`).
    verify : bool
        For registry names: check files against the registry's SHA-256.
    progress : callable, optional
        Download progress callback (see :func:`coreselect.datasets.fetch.fetch`).
    **options
        Passed to the reader (or to ``make_synthesized``); ARFF files and registry names
        take ``labels_as_features=True`` to keep the declared labels that ``labels`` leaves
        out as features (by default they are neither labels nor features).

    Raises
    ------
    InputTypeError
        ``data`` is not a string or path-like.
    DatasetError
        Unknown name (with the close matches that ``datasets list`` shows), unreadable or
        malformed file, failed download (:class:`~coreselect.errors.FetchError`).
    """
    if isinstance(data, bytes) or not isinstance(data, (str, os.PathLike)):
        raise InputTypeError(f"load() takes a file path or a dataset name (str or path-like), "
                             f"not {type(data).__name__}")
    if "labels_as_features" in options and not _is_arff(data):
        options.pop("labels_as_features")  # checked below, once the file is known
        raise DatasetError("labels_as_features applies to ARFF files only (the others declare "
                           "no labels beyond the ones you choose)", path=str(data))

    from coreselect import io as cio
    from coreselect.datasets import registry
    from coreselect.datasets.fetch import coredata_dir, fetch_files, label_file_under_coredata

    from coreselect.io.chunks import names_files, open_chunks

    labels = label_file_under_coredata(labels)  # under $COREDATA as the data path is
    if names_files(data):  # a folder of shards, a glob, a .list file, a data file's URL
        return open_chunks(data, labels=labels, **options).read()
    path = Path(data)
    if path.is_dir():
        raise DatasetError("is a folder, not a data file (a column store made by `coreselect store build` "
                           "is read by `coreselect select`; `coreselect.store.open_store` in Python)", path=str(path))
    if path.exists():
        return cio.read(path, labels=labels, **options)
    text = str(data)
    local = coredata_dir() if not path.is_absolute() else None
    if local is not None and (local / path).is_file():
        return cio.read(local / path, labels=labels, **options)
    if text.lower() == "synthesized":
        from coreselect.datasets.synthetic import make_synthesized

        return make_synthesized(**options)

    info = registry.find(text)
    if info is not None:
        # The label file also with a label spec: it declares which columns are labels, and
        # the ones the spec leaves out must not become features.
        wanted = [*info.data, *([info.label_file] if info.label_file else [])]
        found = fetch_files(info, wanted, verify=verify, progress=progress)
        xml = labels if labels is not None else (found[info.label_file] if info.label_file else None)
        parts = [cio.read(found[p], labels=xml, **options) for p in info.data]
        ds = parts[0] if len(parts) == 1 else stack(parts, info.name)
        ds.name = info.name
        ds.metadata = replace(ds.metadata, registry=info.name)
        return ds

    hit = registry.find_file(text)
    if hit is not None and hit[1].path != hit[0].label_file:
        info, f = hit
        wanted = [f.path, *([info.label_file] if info.label_file else [])]
        found = fetch_files(info, wanted, verify=verify, progress=progress)
        xml = labels if labels is not None else (found[info.label_file] if info.label_file else None)
        return cio.read(found[f.path], labels=xml, **options)

    looks_like_file = any(sep in text for sep in ("/", os.sep)) or "." in Path(text).name
    close = registry.close_names(text)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    if looks_like_file:
        where = f" (nor under $COREDATA={local})" if local is not None else " (no $COREDATA)"
        raise DatasetError(f"no such file{where}{hint}", path=text)
    raise DatasetError(
        f"{text!r} is neither a file, 'synthesized', nor a known dataset{hint} "
        "(`coreselect datasets list` shows the names)"
    )
