"""Building a column store from files, out of core and in parallel.

The data come as a *chunked source* (the :class:`coreselect.io.chunks.ChunkedDataset`
interface: ``files``, ``file_chunks(i)`` yielding row chunks with ``.X`` and ``.Y``,
``feature_names``/``label_names``/``n_features``/``n_labels``; picklable, so that a worker
opens the files itself). The unit of work is a *piece*: a file, or a byte range of a large
plain LIBSVM/XMC file (:data:`PIECE_BYTES`; the lines that start in it), so one big file
spreads over workers too. The build is five steps, each in its own module, run in this order
by :func:`build_store_from_source` (the count, encode and tile steps are maps of small tasks
over an engine):

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

With a checkpoint, :func:`_build_resumable` (the end of this module) wraps the same steps:
every finished task is kept and taken back on resume (:mod:`coreselect.store._resume`).

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
import pickle
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from coreselect.core.discretize import STRATEGIES
from coreselect.errors import CheckpointError, InputError, OutputError
from coreselect.io.files import atomic_dir
from coreselect.store import _read
from coreselect.store._commit import _finish
# the steps' names stay importable from here, the build's entry point
from coreselect.store._count import (  # noqa: F401
    Counted, Plan, _from_raw, _merge, count_raw_task, count_task,
)
from coreselect.store._encode import encode_task
from coreselect.store._format import StoreRef
from coreselect.store._plan import (  # noqa: F401
    PIECE_BYTES, SPILL, BuildOptions, InProcess, Progress, Shared, UrlSpill, _candidates,
    _dask_workers, _n_pieces, _piece_size, _shared, plan_groups, row_bounds,
)
from coreselect.store._spill import _PLANS, _row_block_prefix, _save_plan
from coreselect.store._read import SLICE_CELLS  # noqa: F401
from coreselect.store._tiles import tile_task
from coreselect.store._whole_file import FileChunk, WholeFileChunks  # noqa: F401

log = logging.getLogger(__name__)


def build_store_from_source(source: Any, path: str | os.PathLike, *,
                            options: BuildOptions = BuildOptions(), engine: Any = None,
                            progress: Progress | None = None,
                            storage_options: dict | None = None,
                            checkpoint: str | os.PathLike | None = None, _url: Any = None):
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
    from coreselect.store.build import _check_params, check_build_target

    path = fs.local_path(path)
    if fs.scheme(path) is not None:
        if checkpoint is not None:  # the kept tiles are local: build here, then publish
            return fs.build_at_url(path, lambda local: build_store_from_source(
                source, local, options=options, engine=engine, progress=progress,
                checkpoint=checkpoint), storage_options)
        return _build_at_url(source, path, options, engine, progress, storage_options)
    _check_params(options.block_size, options.row_block_size, options.seed)
    if options.strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {options.strategy!r}; choose one of "
                         f"{', '.join(STRATEGIES)}")
    if int(options.n_bins) < 2 or int(options.min_bin_count) < 1 or int(options.cap) < 1:
        raise InputError("n_bins must be at least 2, min_bin_count and cap at least 1")
    from coreselect.store._format import MAX_BINS

    if int(options.n_bins) > MAX_BINS:  # a code is a 32-bit integer: refused before any file
        raise InputError(f"n_bins must be an integer in [2, {MAX_BINS}] (codes are 32-bit "
                         f"integers), got {options.n_bins}")
    target = Path(path)
    if checkpoint is not None:  # a kill in the last cleanup left it: swept even if done
        from coreselect.store._resume import sweep_removed

        sweep_removed(checkpoint)
    check_build_target(target)
    n_files = len(source.files)
    if n_files == 0:
        raise InputError("no data files to build the store from")
    if engine is None:
        engine = InProcess()
    n_workers = int(getattr(engine, "n_workers", None) or _dask_workers(engine) or 1)
    if hasattr(source, "plan_pieces") and not source.scanned and not source.pieces_planned:
        source.plan_pieces(PIECE_BYTES)
    sizes = [_piece_size(source, k) for k in range(_n_pieces(source))]
    groups = plan_groups(sizes, n_workers)
    total_bytes = sum(sizes)
    start = time.perf_counter()
    # LIBSVM/XMC not scanned yet: the readers' first pass (widths, bases, rows of every piece)
    # runs inside the counting pass, one read of the text for both.
    raw = hasattr(source, "piece_raw") and source.sparse and not source.scanned
    from coreselect.store._resume import identities

    seen = identities(source)  # every file's size and time (ETag): checked after the reads
    if checkpoint is not None:
        if raw:  # a checkpoint keeps plain counts: the readers' first pass runs apart
            source.scan()
        try:
            _build_resumable(source, target, options, engine, progress, checkpoint, groups,
                             total_bytes, _candidates(source), seen)
        except OSError as exc:
            if isinstance(exc, OutputError):
                raise
            raise _os_error(exc, source, Path(str(exc.filename or target))) from exc
        finally:
            _PLANS.clear()
        from coreselect.store.opening import open_store

        return open_store(target)
    keep = None if raw else _candidates(source)
    try:
        with atomic_dir(target) as tmp:
            shared = _shared(source, options, tmp, keep, _url)
            counted = _run(engine, count_raw_task if raw else count_task, shared, groups,
                           "count", total_bytes, progress, lambda res: res.bytes)
            if raw:
                _from_raw(counted, source)
                shared = dataclasses.replace(shared, source=source)  # scanned: workers read only
            plan = _merge(counted, source, options, keep)
            _save_plan(shared, plan)
            _run(engine, encode_task, shared, groups, "encode", total_bytes, progress,
                 lambda res: res)
            _check_unchanged(source, seen)
            n_rb = plan.bounds.size - 1
            files: dict[str, list[int]] = {}
            for got in _run(engine, tile_task, shared, list(range(n_rb)), "tiles", n_rb,
                            progress, lambda res: 1):
                files.update(got)
            shutil.rmtree(tmp / SPILL, ignore_errors=True)  # a URL spill: with its prefix
            _PLANS.clear()
            _finish(tmp, plan, files, source, options, keep)
    except OutputError:
        raise
    except OSError as exc:
        raise _os_error(exc, source, target) from exc
    finally:
        _PLANS.clear()
    log.info("built store %s from %d files (%d pieces, %d bytes) in %.1fs", target, n_files,
             len(sizes), total_bytes, time.perf_counter() - start)
    if _url is not None:
        return None  # the tiles are at the URL: build_direct publishes and opens the store
    from coreselect.store.opening import open_store

    return open_store(target)


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


# -- the checkpoint: a wrapper that runs the same steps, every finished task kept -------------
def _build_resumable(source, target: Path, options: BuildOptions, engine, progress,
                     checkpoint, groups, total_bytes: int, keep, seen: list) -> None:
    """The three passes with every finished task kept under ``checkpoint``
    (:mod:`coreselect.store._resume`), the store assembled from the kept tiles at the end."""
    from coreselect.store._resume import BuildCheckpoint, fingerprint

    ck = BuildCheckpoint(checkpoint, fingerprint(source, options, keep, seen))
    mine = ck.ck.path.absolute()
    for p in (mine, mine.parent / f"{mine.name}.parts"):
        if p == target.absolute() or target.absolute() in p.parents or (
                p.name.endswith(".parts") and p in target.absolute().parents):
            raise InputError(f"checkpoint {ck.shown} and the store {target} overlap; give a "
                             "checkpoint path outside the store")
    ck.open()
    try:
        _passes(ck, source, target, options, engine, progress, groups, total_bytes, keep, seen)
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        if not any(ck.taken.values()):
            ck.drop_if_empty()
            raise
        # a manifest's result is not signed: a forged one that decodes but is of the wrong
        # shape fails where it is used
        raise CheckpointError(f"checkpoint {ck.shown} is damaged (a kept task's result is "
                              f"malformed: {type(exc).__name__}); delete it and its .parts "
                              "folder to start afresh") from None
    except BaseException:
        ck.drop_if_empty()  # a first attempt that finished nothing leaves nothing behind
        raise


def _passes(ck, source, target: Path, options: BuildOptions, engine, progress, groups,
            total_bytes: int, keep, seen: list) -> None:
    from coreselect.io.files import checkpoint as test_hold
    from coreselect.store._resume import _link

    work = ck.folder / "work"
    shared = Shared(source, options, str(work), keep)
    groups = ck.plan("groups", groups)
    counted = _run(engine, count_task, shared, groups, "count", total_bytes, progress,
                   lambda res: res.bytes, resume=(ck,))
    plan = _merge(counted, source, options, keep)
    (work / SPILL).mkdir(parents=True, exist_ok=True)
    plan_file = work / SPILL / "plan.pkl"
    with open(plan_file.with_suffix(".tmp"), "wb") as fh:
        pickle.dump(plan, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(plan_file.with_suffix(".tmp"), plan_file)
    common = ((f"{SPILL}/plan.pkl", str(plan_file)),)
    _run(engine, encode_task, shared, groups, "encode", total_bytes, progress,
         lambda res: res, resume=(ck, common))
    _check_unchanged(source, seen)
    pieces = tuple((rel, str(p)) for g in groups for rel, p in ck.files_of("encode", g))
    n_rb = plan.bounds.size - 1
    files: dict[str, list[int]] = {}
    for got in _run(engine, tile_task, shared, list(range(n_rb)), "tiles", n_rb, progress,
                    lambda res: 1, resume=(ck, common, pieces, _row_block_prefix)):
        files.update(got)
    test_hold("build-commit")  # tests kill the build here
    with atomic_dir(target) as tmp:
        for r in range(n_rb):
            for rel, kept in ck.files_of("tiles", r):
                _link(kept, tmp / rel)
        _finish(tmp, plan, files, source, options, keep)
    ck.remove()


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
        build_store_from_source(source, local, options=options, engine=engine,
                                progress=progress, _url=(target, spill))

    return fs.build_direct(url, build, storage_options,
                           settle=getattr(engine, "settle", None))


def _run(engine, func, shared, tasks, stage, total, progress, amount,
         resume: tuple | None = None) -> list:
    """``engine.map(func, shared, tasks)`` with the stage's progress; ``resume``:
    ``(BuildCheckpoint, common inputs, inputs, select)`` to take the finished tasks from a
    checkpoint and keep the others (:meth:`coreselect.store._resume.BuildCheckpoint.run`)."""
    done, live = [0], [0.0]

    def on_result(_i: int, result: Any) -> None:
        done[0] += amount(result)
        live[0] = float(done[0])
        if progress is not None:
            progress(stage, done[0], total)

    def on_chunk(nbytes: float) -> None:
        live[0] += nbytes
        progress(stage, int(min(live[0], total)), total)

    if progress is not None:
        progress(stage, 0, total)
    in_process = getattr(engine, "name", "") == "local" and not getattr(engine, "n_workers", None)
    _read._LIVE = on_chunk if progress is not None and in_process else None
    try:
        if resume is None:
            return engine.map(func, shared, tasks, on_result=on_result)
        ck, rest = resume[0], resume[1:]

        def announce(taken: int, redone: int) -> None:
            if progress is not None:
                progress(f"resumed:{stage}", taken, len(tasks))
                if redone:
                    progress(f"damaged:{stage}", redone, len(tasks))

        return ck.run(engine, func, shared, stage, tasks, on_result, *rest, announce=announce)
    finally:
        _read._LIVE = None


__all__ = ["BuildOptions", "WholeFileChunks", "build_store_from_source", "plan_groups"]
