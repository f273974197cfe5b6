"""The files a dataset's ``data`` names: a file, a folder (every data file under it,
recursively, not entering linked folders), a glob (``**`` enters each real folder once), a
list file (suffix ``.list``), a list of those, or an fsspec URL; see
:mod:`coreselect.io.chunks` for the order and the rules. Every local file is checked by its
status before anything opens it (a dangling link, a FIFO or a device is an error naming it),
and a file reached twice (a link beside its target) is listed once."""

from __future__ import annotations

import glob as _glob
import os
from pathlib import Path
from typing import Any, Sequence

from coreselect.errors import DatasetError

__all__ = ["resolve_files", "is_many", "names_files", "is_url", "LIST_SUFFIX"]

LIST_SUFFIX = ".list"
_GLOB_CHARS = "*?["


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _data_suffix(name: str) -> bool:
    from coreselect.io import format_of

    try:
        format_of(name)
        return True
    except DatasetError:
        return False


def is_many(data: Any) -> bool:
    """Whether ``data`` names several files (a list, glob, list file, or a folder that is not a
    column store); a single existing data file is not."""
    if isinstance(data, (list, tuple)):
        return True
    if not isinstance(data, (str, os.PathLike)):
        return False
    text = os.fspath(data)
    if text.endswith(LIST_SUFFIX):
        return True
    if is_url(text):
        # s3://bucket/prefix (no pattern) stays a column store's URL
        return any(c in text for c in _GLOB_CHARS)
    p = Path(text)
    if p.is_dir():
        # a folder of data files; a store, or a folder without data, is not (the store's
        # reader, or load, says what it is)
        return not (p / "store.json").exists() and any(
            _data_suffix(f.name) and not f.is_dir() for f in p.rglob("*"))
    return not p.exists() and any(c in text for c in _GLOB_CHARS)


def names_files(data: Any) -> bool:
    """Whether ``data`` is read by :func:`open_chunks` rather than as a store, a single local
    file or a dataset name: several files (:func:`is_many`) or the URL of one data file."""
    if is_many(data):
        return True
    return isinstance(data, str) and is_url(data) and _data_suffix(data)


def resolve_files(data: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The shard files ``data`` names, in the order of the module docs; a name matching
    nothing is a DatasetError naming it."""
    if isinstance(data, (list, tuple)):
        out: list[str] = []
        for item in data:
            out.extend(resolve_files(item))
        if not out:
            raise DatasetError("an empty list of data files")
        return out
    text = os.fspath(data)
    if text.endswith(LIST_SUFFIX):
        return _from_list(text)
    if is_url(text):
        return _remote(text)
    p = Path(text)
    if p.is_dir():
        # pathlib's rglob does not enter linked folders: no loop
        files = _regular_once(sorted(str(f) for f in p.rglob("*") if _data_suffix(f.name)))
        if not files:
            raise DatasetError("the folder holds neither a column store (store.json) nor a data file (known "
                               "suffixes: .svm, .xmc, .csv, .parquet, "
                               ".arff, ...)", path=text)
        return files
    if p.exists() or p.is_symlink():
        return _regular_once([text])
    if any(c in text for c in _GLOB_CHARS):
        files = _regular_once(sorted(_glob_once(text)))
        if not files:
            raise DatasetError("the pattern matches no file", path=text)
        return files
    raise DatasetError("no such file", path=text)


def _regular_once(paths: list[str]) -> list[str]:
    """The regular files among ``paths`` (folders dropped), each file once (by its real
    path: a link beside its target, or a file reached twice, is read once); a dangling link
    or a special file (FIFO, device, socket) is an error naming it, before anything is read."""
    from coreselect.io.text import check_regular_input

    out: list[str] = []
    seen: set[str] = set()
    for f in paths:
        if os.path.isdir(f):
            continue
        check_regular_input(f)
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            out.append(f)
    return out


def _glob_once(pattern: str) -> list[str]:
    """``glob.glob(pattern, recursive=True)``, except that ``**`` enters each real folder
    once: a link to an ancestor (``ln -s . again``) would repeat every file below it, 40
    levels deep (two such links: 2^40 paths). Hidden names match as in :mod:`glob`."""
    if "**" not in pattern:
        return _glob.glob(pattern)
    import fnmatch

    absolute = pattern.startswith(os.sep)
    parts = [q for q in pattern.split(os.sep) if q]
    visited: set[str] = set()
    found: list[str] = []

    def entries(base: str):
        try:
            with os.scandir(base or os.curdir) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError:
            return []

    def join(base: str, name: str) -> str:
        return os.path.join(base, name) if base else name

    def walk(base: str, rest: list[str]) -> None:
        if not rest:
            found.append(base)
            return
        head, tail = rest[0], rest[1:]
        if head == "**":
            here = (os.path.realpath(base or os.curdir), len(rest))
            if here in visited:
                return
            visited.add(here)
            walk(base, tail)  # no folder at all
            for e in entries(base):
                if e.name.startswith("."):
                    continue
                if e.is_dir():
                    walk(join(base, e.name), rest)
                elif not tail:
                    found.append(join(base, e.name))
        elif any(c in head for c in _GLOB_CHARS):
            for e in entries(base):
                if e.name.startswith(".") and not head.startswith("."):
                    continue
                if fnmatch.fnmatchcase(e.name, head) and (not tail or e.is_dir()):
                    walk(join(base, e.name), tail)
        else:
            child = join(base, head)
            if tail and os.path.isdir(child) or not tail and os.path.lexists(child):
                walk(child, tail)

    walk(os.sep if absolute else "", parts)
    return list(dict.fromkeys(found))


def _from_list(path: str) -> list[str]:
    from coreselect.io.text import check_regular_input, read_bytes

    base = os.path.dirname(path)
    out: list[str] = []
    for raw in read_bytes(path).decode("utf-8", errors="replace").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        out.append(line if is_url(line) or os.path.isabs(line) else os.path.join(base, line))
        if not is_url(out[-1]):
            check_regular_input(out[-1])  # a FIFO or a dangling link: named now, before any read
    if not out:
        raise DatasetError("the list file names no data file", path=path)
    return out


def _remote(url: str) -> list[str]:
    from coreselect.io.text import url_fs

    fs, root = url_fs(url)
    try:
        proto = url.split("://", 1)[0]
        if any(c in root for c in _GLOB_CHARS):
            found = fs.glob(root)
        elif fs.isdir(root):
            found = [f for f in fs.find(root) if _data_suffix(f)]
        else:
            found = [root] if fs.exists(root) else []
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
        raise DatasetError(f"cannot list: {' '.join(str(exc).split()) or type(exc).__name__}", path=url) from None
    files = sorted(f if "://" in f else f"{proto}://{f}" for f in found)
    if not files:
        raise DatasetError("matches no file", path=url)
    return files


def _check_same_format(files: list[str]) -> str:
    from coreselect.io import format_of

    fmt = format_of(files[0])
    for f in files[1:]:
        other = format_of(f)
        if other != fmt:
            raise DatasetError(f"is a {other} file but {files[0]} is {fmt}; the shards of a dataset share "
                               "one format", path=f)
    return fmt
