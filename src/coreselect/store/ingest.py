"""Building a column store from files, out of core and in parallel.

The data come as a *chunked source* (the :class:`coreselect.io.chunks.ChunkedDataset`
interface: ``files``, ``file_chunks(i)`` yielding row chunks with ``.X`` and ``.Y``,
``feature_names``/``label_names``/``n_features``/``n_labels``; picklable, so that a worker
opens the files itself). The unit of work is a *piece*: a file, or a byte range of a large
plain LIBSVM/XMC file (:data:`PIECE_BYTES`; the lines that start in it), so one big file
spreads over workers too. The build is five steps, each in its own module, run in this order
by :func:`_build` (the count, encode and tile steps, :func:`_steps`, are maps of small tasks
over an engine, run by a *step runner*, :mod:`coreselect.store._runner`):

1. **plan** (:mod:`coreselect.store._plan`): the options, the pieces and their grouping into
   tasks of about equal bytes.
2. **count** (:mod:`coreselect.store._count`; a task per group of pieces, chunks read by
   :mod:`coreselect.store._read`; for LIBSVM/XMC files not scanned yet, the readers' first
   pass in the same read, indices counted as written and shifted once every piece's scan has
   decided the bases): exact value counts per column
   (:class:`~coreselect.store._binning.ColumnCounts`; the cap's sketch for columns with more
   distinct values than ``cap``), label ones, rows per file. The driver merges them (counts
   add, so the merge is independent of the split) into the :class:`Plan`: each value's code
   (:func:`~coreselect.store._binning.bin_table`), the column order and the row blocks.
3. **encode** (:mod:`coreselect.store._encode`; a task per group of pieces): every chunk's
   codes, cut at column blocks and row blocks, written as pieces into a spill folder inside
   the store being built (:mod:`coreselect.store._spill`).
4. **tiles** (:mod:`coreselect.store._tiles`; a task per row block): the pieces of a row
   block stacked into its tiles (column block x row block) and its label tile, each written
   with its checksum.
5. **commit** (:mod:`coreselect.store._commit`): the small files and ``store.json`` last.

With a checkpoint, the same steps are run by a
:class:`~coreselect.store._runner.CheckpointRunner` instead of the plain runner: every finished
task is kept and taken back on resume (:mod:`coreselect.store._resume`).

The driver writes the small files and ``store.json`` last; the whole store appears at its path
only when complete (:func:`coreselect.io.files.atomic_dir`). At a URL (object storage), the tile
step's tasks write their tiles straight under the target (:class:`coreselect.store.fs.UrlWriter`:
no tile passes through the driver) and the driver uploads the small files and ``store.json``
last (:func:`coreselect.store.fs.build_direct`: a prefix without it is no store; on failure
nothing is left). The spill stays on the local disk, except with a Dask engine, whose workers
may run on other machines: then it goes under the build's temporary prefix beside the target
(:class:`UrlSpill`), where every worker reads it. Tiles depend only on the rows and
the codes, so the store is the same bytes whatever the grouping, the number of workers or
the engine. Where no column is sketched, it equals
:func:`~coreselect.store.build_store` on the whole data.

Memory (per process): one chunk and its codes (a few times the chunk), the value counts
(at most ``min(nnz, d * (cap + 1))`` entries of 24 bytes, plus one chunk's cells pending), and
in the tile step one tile with its pieces (about ``TARGET_TILE_NNZ`` codes: ~100 MB at 6 bytes a
code, plus scipy's stacking copy). Never the file. Disk: the spill holds the codes once
(about the store's size) beside the store being written.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import time
from pathlib import Path
from typing import Any

from coreselect.core.discretize import STRATEGIES, resolve_n_bins
from coreselect.errors import InputError, OutputError
from coreselect.store._commit import _finish
# the steps' names stay importable from here, the build's entry point
from coreselect.store._count import (  # noqa: F401
    Counted, Plan, _from_raw, _merge, count_raw_task, count_task,
)
from coreselect.store._encode import encode_task
from coreselect.store._format import StoreRef
from coreselect.store._plan import (  # noqa: F401
    PIECE_BYTES, BuildOptions, InProcess, Progress, Shared, UrlSpill, _candidates,
    _dask_workers, _n_pieces, _piece_size, plan_groups, row_bounds,
)
from coreselect.store._runner import CheckpointRunner, PlainRunner
from coreselect.store._spill import _PLANS, _row_block_prefix
from coreselect.store._read import SLICE_CELLS  # noqa: F401
from coreselect.store._tiles import tile_task
from coreselect.store._whole_file import FileChunk, WholeFileChunks  # noqa: F401

log = logging.getLogger(__name__)


def build_store_from_source(source: Any, path: str | os.PathLike, *,
                            options: BuildOptions = BuildOptions(), engine: Any = None,
                            progress: Progress | None = None,
                            storage_options: dict | None = None,
                            checkpoint: str | os.PathLike | None = None):
    """Build a column store at ``path`` from the chunked ``source`` (module docstring), the
    tasks run by ``engine`` (a :class:`coreselect.engines.base.Engine`; None: in this
    process). ``path`` may be a URL: the workers write the tiles there, the driver the rest,
    ``store.json`` last (:func:`coreselect.store.fs.build_direct`; ``storage_options`` reach
    the workers with the tasks). ``checkpoint``: a local path where every finished task is
    kept, so that the same call after an interruption skips them
    (:mod:`coreselect.store._resume`; removed when the store is committed); with a URL target
    the checkpointed build is made locally, then published (:func:`coreselect.store.fs.build_at_url`).

    Raises
    ------
    InputError
        Bad options, a target that is not free, data that break the binning rules, or files
        that change between the passes; nothing is left at ``path``.
    CheckpointError
        A checkpoint of another build (other files, sizes, times or options), or a damaged
        record; one line naming what differs.
    """
    from coreselect.store import fs

    path = fs.local_path(path)
    if fs.scheme(path) is not None:
        if checkpoint is not None:  # the kept tiles are local: build here, then publish
            return fs.build_at_url(path, lambda local: _build(
                source, Path(local), options, engine, progress, checkpoint=checkpoint),
                storage_options)
        return _build_at_url(source, path, options, engine, progress, storage_options)
    return _build(source, Path(path), options, engine, progress, checkpoint=checkpoint)


def _check_options(options: BuildOptions) -> None:
    """Refuse bad options before any file is read or written."""
    from coreselect.store.build import _check_params

    _check_params(options.block_size, options.row_block_size, options.seed)
    if options.strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {options.strategy!r}; choose one of "
                         f"{', '.join(STRATEGIES)}")
    resolve_n_bins(options.n_bins, 0)  # "auto" or [2, MAX_BINS]: refused before any file
    if int(options.min_bin_count) < 1 or int(options.cap) < 1:
        raise InputError("min_bin_count and cap must be at least 1")


def _build(source: Any, target: Path, options: BuildOptions, engine: Any,
           progress: Progress | None, checkpoint: str | os.PathLike | None = None,
           url: tuple[StoreRef, UrlSpill | None] | None = None):
    """The build into the local folder ``target``: step 1 (plan), the steps run by the
    runner the build picks (a :class:`~coreselect.store._runner.CheckpointRunner` with a
    ``checkpoint``, else the plain one), step 5 (commit). ``url``: the tiles written straight
    to a URL build's target (:func:`_build_at_url`; the store is then published by
    :func:`coreselect.store.fs.build_direct`, and this returns None), else the store opened."""
    from coreselect.store._resume import identities
    from coreselect.store.build import check_build_target

    _check_options(options)
    if engine is None:
        engine = InProcess()
    runner = (PlainRunner(engine, progress, url) if checkpoint is None
              else CheckpointRunner(engine, progress, checkpoint))
    runner.prepare()
    check_build_target(target)
    n_files = len(source.files)
    if n_files == 0:
        raise InputError("no data files to build the store from")
    n_workers = int(getattr(engine, "n_workers", None) or _dask_workers(engine) or 1)
    if hasattr(source, "plan_pieces") and not source.scanned and not source.pieces_planned:
        source.plan_pieces(PIECE_BYTES)
    sizes = [_piece_size(source, k) for k in range(_n_pieces(source))]
    groups = plan_groups(sizes, n_workers)
    total_bytes = sum(sizes)
    start = time.perf_counter()
    # LIBSVM/XMC not scanned yet: the readers' first pass (widths, bases, rows of every piece)
    # runs inside the counting pass, one read of the text for both, where the runner keeps
    # such counts; else apart, first.
    raw = hasattr(source, "piece_raw") and source.sparse and not source.scanned
    seen = identities(source)  # every file's size and time (ETag): checked after the reads
    if raw and not runner.first_pass_in_count:
        source.scan()
        raw = False
    keep = None if raw else _candidates(source)
    try:
        # the tasks' Shared, its folder the runner's
        with runner.building(target, Shared(source, options, "", keep), groups,
                             seen) as (shared, groups):
            plan, files = _steps(runner, shared, groups, total_bytes, raw, seen)
            with runner.committing() as folder:
                _finish(folder, plan, files, source, options, keep)
    except OSError as exc:
        if isinstance(exc, OutputError):
            raise
        raise _os_error(exc, source, runner.culprit(exc, target)) from exc
    finally:
        _PLANS.clear()
    if checkpoint is None:  # a resumed build's time is not the build's: no such line
        log.info("built store %s from %d files (%d pieces, %d bytes) in %.1fs", target,
                 n_files, len(sizes), total_bytes, time.perf_counter() - start)
    if url is not None:
        return None  # the tiles are at the URL: build_direct publishes and opens the store
    from coreselect.store.opening import open_store

    return open_store(target)


def _steps(runner: PlainRunner, shared: Shared, groups: list, total_bytes: int, raw: bool,
           seen: list) -> tuple[Plan, dict[str, list[int]]]:
    """Steps 2 to 4 (count, encode, tiles), each a map of tasks run by ``runner``: the plan
    and the tiles written (relative path -> size and checksum)."""
    source, options, keep = shared.source, shared.options, shared.keep
    counted = runner.run(count_raw_task if raw else count_task, shared, groups, "count",
                         total_bytes, lambda res: res.bytes)
    if raw:
        _from_raw(counted, source)
        shared = dataclasses.replace(shared, source=source)  # scanned: workers read only
    plan = _merge(counted, source, options, keep)
    runner.save_plan(shared, plan)
    runner.run(encode_task, shared, groups, "encode", total_bytes, lambda res: res)
    _check_unchanged(source, seen)
    n_rb = plan.bounds.size - 1
    files: dict[str, list[int]] = {}
    for got in runner.run(tile_task, shared, list(range(n_rb)), "tiles", n_rb, lambda res: 1,
                          reads=("encode", _row_block_prefix)):  # a row block's pieces
        files.update(got)
    return plan, files


def _os_error(exc: OSError, source, target: Path) -> Exception:
    """An input file that vanished or cannot be read mid-build, said so (InputError); any
    other failure is the store's (OutputError)."""
    name = getattr(exc, "filename", None)
    if name is not None:
        inputs = {os.path.abspath(str(f)) for f in source.files if "://" not in str(f)}
        if os.path.abspath(str(name)) in inputs:
            why = ("vanished during the build" if isinstance(exc, FileNotFoundError)
                   else f"cannot be read ({exc.strerror or exc})")
            return InputError(f"{name}: {why}; nothing was written, build again")
    return OutputError(str(target), exc.strerror or str(exc), exc.errno)


def _check_unchanged(source, seen: list) -> None:
    """Refuse a build whose files changed while it read them (a reader that reads a file
    whole per pass cannot tell; a chunked one checks at the start of each pass): the store
    would mix two versions of the data."""
    from coreselect.store._resume import identities

    for i, (was, now) in enumerate(zip(seen, identities(source))):
        if was != now:
            what = ("vanished" if now[1] is None else
                    f"was {was[1]} bytes, now {now[1]}" if was[1] != now[1] else "was modified")
            raise InputError(f"{source.files[i]}: changed during the build ({what}); nothing "
                             "was written, build again")


# -- the build to a URL; a step's tasks run over the engine -------------------------------------
def _build_at_url(source, url: str, options: BuildOptions, engine, progress,
                  storage_options: dict | None):
    """The build to a URL (:func:`coreselect.store.fs.build_direct`): tiles written by the
    workers under the target, the spill local except with Dask (under the temporary
    prefix: the workers may be on other machines)."""
    from coreselect.store import fs

    distributed = getattr(engine, "name", "") == "dask"

    def build(local: Path, target: StoreRef, staging: StoreRef) -> None:
        spill = (UrlSpill(staging.path, dict(staging.options or {}), secrets.token_bytes(32))
                 if distributed else None)
        _build(source, Path(local), options, engine, progress, url=(target, spill))

    return fs.build_direct(url, build, storage_options,
                           settle=getattr(engine, "settle", None))


__all__ = ["BuildOptions", "WholeFileChunks", "build_store_from_source", "plan_groups"]
