"""Opening a column store at a path or a URL: the one place that knows both the local reader
(:mod:`coreselect.store.reader`) and the fsspec one (:mod:`coreselect.store.fs`), so that
neither of those imports the other."""

from __future__ import annotations

import json
import os
from pathlib import Path

from coreselect.store import fs
from coreselect.store._format import MAX_META_BYTES, META_FILE, StoreRef, store_error
from coreselect.store.reader import ColumnStore, _check_meta


def open_store(path: str | os.PathLike | StoreRef, check: bool = True,
               storage_options: dict | None = None) -> ColumnStore:
    """Open the column store at ``path``: a folder, or a URL that fsspec reads (``s3://``,
    ``gs://``, ``az://``, ``memory://``, ``file://``; see :mod:`coreselect.store.fs`) with
    ``storage_options``.

    Raises
    ------
    StoreError
        When ``path`` holds no store, a store of another format version, a damaged
        ``store.json``, or (``check=True``) a missing or resized file. Blocks are checksummed
        and checked when they are read.
    """
    if isinstance(path, StoreRef):
        path, storage_options = path.path, path.options
    path = fs.local_path(path)
    if fs.scheme(path) is not None:  # never a folder named "s3:"
        return fs.open_remote(path, storage_options, check)
    folder = Path(path)
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise store_error(f"{folder} is not a coreselect column store (no {META_FILE})",
                         block=META_FILE)
    try:
        with open(meta_path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_META_BYTES:  # a sparse file of gigabytes: refused unread
                raise store_error(f"{meta_path} is {size} bytes, more than a store.json holds "
                                  f"({MAX_META_BYTES}); not a coreselect column store",
                                  block=META_FILE)
            raw = fh.read(size + 1)  # read(n) allocates n bytes first: the size, not the cap
        if len(raw) > MAX_META_BYTES:
            raise store_error(f"{meta_path} is more than {MAX_META_BYTES} bytes; not a "
                              "coreselect column store", block=META_FILE)
        meta = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise store_error(f"cannot read {meta_path}: {exc}", block=META_FILE) from None
    _check_meta(meta, folder, meta_path)
    store = ColumnStore(folder, meta)
    if check:
        store.check()
    return store


__all__ = ["open_store"]
