"""Step 1 of the build from files, **plan**: the build's options, what every task receives
(:class:`Shared`), the units of work (*pieces*: files, or byte ranges of a large plain
LIBSVM/XMC file) and their grouping into tasks of about equal bytes. Pure: no file is read
here beyond its size."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from coreselect.errors import InputError
from coreselect.store._binning import DEFAULT_CAP
from coreselect.store._format import DEFAULT_BLOCK_SIZE, StoreRef



#: ``progress(stage, done, total)``: stages ``"count"``, ``"encode"`` (bytes read of the
#: data files) and ``"tiles"`` (row blocks written); with a checkpoint, once per pass,
#: ``"resumed:STAGE"`` (tasks taken from the checkpoint, tasks of the pass) and, where kept
#: tasks failed their checksums (done again), ``"damaged:STAGE"`` (those tasks, the pass's).
Progress = Callable[[str, int, int], None]


SPILL = ".spill"


@dataclass(frozen=True)
class BuildOptions:
    """The store's layout and binning (as :func:`coreselect.store.build_store`)."""

    block_size: int = DEFAULT_BLOCK_SIZE
    row_block_size: int | None = None
    seed: int = 0
    n_bins: int | str = "auto"
    strategy: str = "auto"
    min_bin_count: int = 10
    cap: int = DEFAULT_CAP
    chunk_rows: int | None = None
    chunk_bytes: int | None = None
    name: str = "dataset"


@dataclass(frozen=True)
class UrlSpill:
    """A spill under a URL build's temporary prefix (``url``), shared by workers on any
    machine. ``key`` signs the plan there: a worker unpickles only the plan this build's
    driver wrote (the key travels in the tasks, never to the bucket)."""

    url: str
    options: dict = field(repr=False)
    key: bytes = field(repr=False)


@dataclass(frozen=True)
class Shared:
    """What every task receives: the source (files and reader options, never data), the
    options, and the folder of the store being built (or, a Dask build to a URL, its
    :class:`UrlSpill`). Small: travels inside each task."""

    source: Any
    options: BuildOptions
    root: str | UrlSpill
    keep: tuple[int, ...] | None = None  # the candidate columns when ID columns are left out
    is_reference: bool = field(default=True, repr=False)
    target: StoreRef | None = None  # a URL store: the tiles are written straight there


class InProcess:
    """The build's tasks one after another in this process: what runs them when the caller
    gives no engine (the engines live a layer above the store; this needs none of them).
    Named ``"local"`` as the in-process :class:`coreselect.engines.local.LocalEngine`, whose
    ``map`` it matches."""

    name = "local"
    n_workers = None

    def map(self, func: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any],
            callback: Callable[[int, int], None] | None = None,
            on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
        tasks = list(tasks)
        out = []
        for i, task in enumerate(tasks):
            out.append(func(shared, task))
            if on_result is not None:
                on_result(i, out[-1])
            if callback is not None:
                callback(i + 1, len(tasks))
        return out


def plan_groups(sizes: Sequence[int], n_workers: int, per_worker: int = 4) -> list[list[int]]:
    """Consecutive files grouped into tasks of about equal bytes: one task with one worker,
    else about ``per_worker`` tasks per worker (uneven files still spread), never more tasks
    than files. Deterministic; every file in exactly one group, in order."""
    n = len(sizes)
    if n == 0:
        return []
    if n_workers <= 1:
        return [list(range(n))]
    n_tasks = min(n, n_workers * per_worker)
    total = float(sum(max(int(s), 1) for s in sizes))
    cum = np.cumsum([max(int(s), 1) for s in sizes]) - 0.5 * np.array(
        [max(int(s), 1) for s in sizes])  # each file's middle byte
    group = np.minimum((cum / total * n_tasks).astype(np.int64), n_tasks - 1)
    return [list(np.flatnonzero(group == g)) for g in range(n_tasks) if (group == g).any()]


def row_bounds(n: int, rbs: int) -> np.ndarray:
    n_rb = -(-n // rbs)
    return np.minimum(np.arange(n_rb + 1, dtype=np.int64) * rbs, n)


#: A plain LIBSVM/XMC file larger than this is read as byte ranges of about this size (its
#: passes spread over the workers; rows stay in file order, the store is the same bytes).
PIECE_BYTES = 64 << 20


# The build's unit of work is a *piece*: a byte range of a file for sources that plan them
# (:meth:`coreselect.io.chunks.ChunkedDataset.plan_pieces`), else a whole file.
def _n_pieces(source) -> int:
    return len(source.pieces) if hasattr(source, "pieces") else len(source.files)


def _piece_size(source, k: int) -> int:
    return int(source.piece_size(k)) if hasattr(source, "piece_size") else _file_size(source, k)


def _piece_file(source, k: int) -> str:
    return source.files[source.pieces[k][0]] if hasattr(source, "pieces") else source.files[k]


def _file_size(source, i: int) -> int:
    sizes = getattr(source, "sizes", None)
    if sizes is not None:
        return int(sizes[i])
    try:
        return os.path.getsize(source.files[i])
    except (OSError, TypeError):
        return 0


def _candidates(source) -> tuple[int, ...] | None:
    """The columns a selection may pick when the source names ID columns (their width must
    then be known), else None (all)."""
    ids = tuple(getattr(source, "id_columns", None) or ())
    if not ids:
        return None
    d = getattr(source, "n_features", None)
    if d is None:
        raise InputError("ID columns need a known number of feature columns")
    return tuple(int(j) for j in np.setdiff1d(np.arange(int(d)), ids))


def _dask_workers(engine) -> int | None:
    client = getattr(engine, "client", None) or getattr(engine, "_client", None)
    try:
        return len(client.scheduler_info()["workers"]) if client is not None else None
    except Exception:  # noqa: BLE001 - only sizes the plan
        return None


def _shared(source, options: BuildOptions, tmp: Path, keep, url) -> Shared:
    """The tasks' :class:`Shared`: the spill in ``tmp`` (or a URL build's :class:`UrlSpill`),
    the tiles into ``tmp`` (or straight to a URL build's target)."""
    target, spill = url if url is not None else (None, None)
    if spill is None:
        (tmp / SPILL).mkdir()
    return Shared(source, options, str(tmp) if spill is None else spill, keep, target=target)
