"""Every file a run on DATA will read, found before anything is read or downloaded.

The CLI checks its outputs against these (:func:`coreselect.io.files.check_outputs`) before any
work, so that no output replaces an input: the data file, the label XML found beside an ARFF
file (never named on the command line), a ``--labels`` file, every file of a column store,
and, for a dataset given by name, the files the name resolves to in ``$COREDATA`` and in the
download cache. It follows :func:`coreselect.datasets.load.load`'s order of lookup; after the
read, ``Dataset.metadata.files_read`` (what the reader actually read) is checked again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from coreselect.errors import DatasetError

__all__ = ["input_files"]


def input_files(data: str | os.PathLike, labels: Any = None) -> tuple[list[Path], list[Path]]:
    """``(files, to_download)``: the files a run on ``data`` reads that exist now, and the
    cache files a download would create (outputs must not be those either).

    Never reads a data file or touches the network; a name that resolves to nothing gives
    empty lists (the load reports it).
    """
    from coreselect.datasets import registry
    from coreselect.datasets.fetch import cache_dir, coredata_dir, label_file_under_coredata

    labels = label_file_under_coredata(labels)
    files: list[Path] = []
    later: list[Path] = []
    if isinstance(labels, (str, os.PathLike)) and Path(labels).is_file():
        files.append(Path(labels))
    from coreselect.io.chunks import is_url, names_files, resolve_files

    if names_files(data):
        # Row shards (a folder, a glob, a .list file): each local shard and the list file.
        try:
            shards = resolve_files(data)
        except DatasetError:
            return files, later  # the read reports it
        own = [Path(data)] if str(data).endswith(".list") and not is_url(str(data)) else []
        return files + own + [Path(f) for f in shards if not is_url(f)], later
    path = Path(data)
    if path.is_dir():
        # A column store: the folder (outputs inside it are refused) and each of its files
        # (a hard link or symlink elsewhere to a tile is still the store's tile).
        files.append(path)
        for root, _dirs, names in os.walk(path):
            files.extend(Path(root) / n for n in names)
        return files, later
    if path.exists():
        return files + [path, *_found_beside(path, labels)], later
    text = str(data)
    try:
        local = coredata_dir() if not path.is_absolute() else None
    except DatasetError:
        local = None
    if local is not None and (local / path).is_file():
        return files + [local / path, *_found_beside(local / path, labels)], later
    if text.lower() == "synthesized":
        return files, later
    info = registry.find(text)
    wanted: list[str] = []
    if info is not None:
        wanted = [*info.data, *([info.label_file] if info.label_file and labels is None else [])]
    else:
        hit = registry.find_file(text)
        if hit is not None:
            info, f = hit
            wanted = [f.path, *([info.label_file] if info.label_file and labels is None else [])]
    try:
        cache = cache_dir()
    except DatasetError:
        cache = None
    for rel in wanted:
        # Both places the loader may take a file from: $COREDATA, else the cache (or a download there).
        if local is not None and (local / rel).is_file():
            files.append(local / rel)
        if cache is not None:
            (files if (cache / rel).is_file() else later).append(cache / rel)
    return files, later


def _found_beside(path: Path, labels: Any) -> list[Path]:
    """The label XML an ARFF file is read with when no labels are given."""
    from coreselect.io import format_of
    from coreselect.io.arff import find_label_xml

    try:
        if labels is not None or format_of(path) != "arff":
            return []
        xml = find_label_xml(path)
    except DatasetError:
        return []  # the read reports it
    return [xml] if xml is not None else []


def check_run_outputs(data: str | os.PathLike, labels: Any,
                      outputs: dict[str, str | os.PathLike | None]) -> None:
    """Refuse (:class:`~coreselect.errors.InputError`) outputs of a run on ``data`` that are
    one of its inputs (:func:`input_files`) or each other; before any work."""
    from coreselect.io.files import check_outputs

    files, later = input_files(data, labels)
    named = {"DATA": data, "--labels": labels if isinstance(labels, (str, os.PathLike)) else None}
    found = {str(f): f for f in files}  # labelled by their own path in the message
    check_outputs({**named, **found}, outputs, downloads=later)


def check_read_outputs(dataset, outputs: dict[str, str | os.PathLike | None]) -> None:
    """The same check against the files the reader actually read (``metadata.files_read``)."""
    from coreselect.io.files import check_outputs

    check_outputs(list(dataset.metadata.files_read), outputs)
