"""How the build's steps run: a *step runner*, picked by the build, runs each map of tasks and
owns the folder the tasks write into and the commit into the store's folder. The steps
(:func:`coreselect.store.ingest._steps`) are the same whichever runs them.

* :class:`PlainRunner`: ``engine.map`` with the stage's progress; the tasks write into the
  store being built (its spill, its tiles), which is renamed to the target when committed
  (:func:`coreselect.io.files.atomic_dir`).
* :class:`CheckpointRunner` (``checkpoint=``): wraps the plain one; a task finished by an
  earlier run is taken from the checkpoint, every other one runs in its own folder and is kept
  (:mod:`coreselect.store._resume`). It owns the checkpoint's work folder, the plan file linked
  into every task, the kept pieces a tile task reads, and the final linking of the kept tiles
  into the folder that becomes the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from coreselect.errors import CheckpointError, InputError
from coreselect.io.files import atomic_dir
from coreselect.store import _read
from coreselect.store._plan import SPILL, Progress, Shared, _shared
from coreselect.store._spill import _PLANS, _save_plan

#: What a step's task reads of an earlier step's files: ``(stage, prefix)``, the files that
#: stage's tasks wrote whose path starts with ``prefix(task)``.
Reads = tuple[str, Callable[[Any], str]] | None


class PlainRunner:
    """The steps' maps run by ``engine`` in the store being built (module docstring).
    ``url``: a build to a URL, ``(target, spill)`` (:func:`coreselect.store.ingest._build_at_url`)."""

    #: the LIBSVM/XMC readers' first pass runs inside the counting step (one read of the text)
    first_pass_in_count = True

    def __init__(self, engine: Any, progress: Progress | None, url: Any = None):
        self.engine, self.progress, self.url = engine, progress, url
        self._folder: Path | None = None

    def prepare(self) -> None:
        """Before the target is checked (nothing to do without a checkpoint)."""

    @contextlib.contextmanager
    def building(self, target: Path, shared: Shared, tasks: list,
                 seen: list) -> Iterator[tuple[Shared, list]]:
        """The tasks' :class:`Shared` (``shared`` with its folder) and the count and encode
        steps' tasks, while the store is built; the store is renamed to ``target`` at the end."""
        with atomic_dir(target) as tmp:
            self._folder = tmp
            yield _shared(shared.source, shared.options, tmp, shared.keep, self.url), tasks

    def save_plan(self, shared: Shared, plan: Any) -> None:
        """The plan, where every task of the encode and tile steps reads it."""
        _save_plan(shared, plan)

    def run(self, func: Callable[[Any, Any], Any], shared: Shared, tasks: Sequence[Any],
            stage: str, total: int, amount: Callable[[Any], int],
            reads: Reads = None) -> list:
        """``func(shared, task)`` of every task (results in order), with the stage's progress:
        ``amount(result)`` of ``total`` done per finished task; ``reads``: what each task
        reads of an earlier stage's files (here already in the spill)."""
        done, live = [0], [0.0]
        progress = self.progress

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
        engine = self.engine
        in_process = getattr(engine, "name", "") == "local" and not getattr(engine, "n_workers",
                                                                            None)
        _read._LIVE = on_chunk if progress is not None and in_process else None
        try:
            return self._map(func, shared, tasks, stage, on_result, reads)
        finally:
            _read._LIVE = None

    def _map(self, func, shared, tasks, stage, on_result, reads) -> list:
        return self.engine.map(func, shared, tasks, on_result=on_result)

    @contextlib.contextmanager
    def committing(self) -> Iterator[Path]:
        """The folder to write the small files and ``store.json`` into: the store being
        built, its spill gone (the rename follows when :meth:`building` ends)."""
        assert self._folder is not None
        shutil.rmtree(self._folder / SPILL, ignore_errors=True)  # a URL spill: with its prefix
        _PLANS.clear()
        yield self._folder

    def culprit(self, exc: OSError, target: Path) -> Path:
        """The path an output error names."""
        return target


class CheckpointRunner(PlainRunner):
    """The plain runner with every finished task kept under ``checkpoint`` (module docstring)."""

    #: a checkpoint keeps plain counts: the readers' first pass runs apart, before the count
    first_pass_in_count = False

    def __init__(self, engine: Any, progress: Progress | None, checkpoint: str | os.PathLike):
        super().__init__(engine, progress)
        self.location = checkpoint
        self.ck: Any = None
        self._target: Path | None = None
        self._common: tuple = ()  # linked into every task: the plan, once saved
        self._tasks: dict[str, list] = {}

    def prepare(self) -> None:
        """A kill in the last cleanup left ``PATH.parts.removed``: swept even if done."""
        from coreselect.store._resume import sweep_removed

        sweep_removed(self.location)

    @contextlib.contextmanager
    def building(self, target: Path, shared: Shared, tasks: list,
                 seen: list) -> Iterator[tuple[Shared, list]]:
        """The checkpoint opened (refused when of another build, or overlapping ``target``);
        the tasks work in its folder and run the recorded tasks; on a failure a first attempt
        that finished nothing leaves nothing behind."""
        from coreselect.store._resume import BuildCheckpoint, fingerprint

        ck = self.ck = BuildCheckpoint(self.location, fingerprint(
            shared.source, shared.options, shared.keep, seen))
        self._target = target
        mine = ck.ck.path.absolute()
        for p in (mine, mine.parent / f"{mine.name}.parts"):
            if p == target.absolute() or target.absolute() in p.parents or (
                    p.name.endswith(".parts") and p in target.absolute().parents):
                raise InputError(f"checkpoint {ck.shown} and the store {target} overlap; give a "
                                 "checkpoint path outside the store")
        ck.open()
        try:
            yield (dataclasses.replace(shared, root=str(ck.folder / "work")),
                   ck.plan("groups", tasks))
        except (TypeError, AttributeError, KeyError, IndexError) as exc:
            if not any(ck.taken.values()):
                ck.drop_if_empty()
                raise
            # a manifest's result is not signed: a forged one that decodes but is of the
            # wrong shape fails where it is used
            raise CheckpointError(f"checkpoint {ck.shown} is damaged (a kept task's result is "
                                  f"malformed: {type(exc).__name__}); delete it and its .parts "
                                  "folder to start afresh") from None
        except BaseException:
            ck.drop_if_empty()  # a first attempt that finished nothing leaves nothing behind
            raise

    def save_plan(self, shared: Shared, plan: Any) -> None:
        """The plan in the work folder (written whole), linked into every later task's own."""
        work = Path(shared.root)
        (work / SPILL).mkdir(parents=True, exist_ok=True)
        plan_file = work / SPILL / "plan.pkl"
        with open(plan_file.with_suffix(".tmp"), "wb") as fh:
            pickle.dump(plan, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(plan_file.with_suffix(".tmp"), plan_file)
        self._common = ((f"{SPILL}/plan.pkl", str(plan_file)),)

    def _map(self, func, shared, tasks, stage, on_result, reads) -> list:
        """The finished tasks taken from the checkpoint, the others run and kept
        (:meth:`coreselect.store._resume.BuildCheckpoint.run`)."""
        progress, ck = self.progress, self.ck
        self._tasks[stage] = list(tasks)
        inputs: tuple = ()
        select = None
        if reads is not None:  # the files an earlier stage's tasks kept, linked where read
            earlier, select = reads
            inputs = tuple((rel, str(p)) for t in self._tasks[earlier]
                           for rel, p in ck.files_of(earlier, t))

        def announce(taken: int, redone: int) -> None:
            if progress is not None:
                progress(f"resumed:{stage}", taken, len(tasks))
                if redone:
                    progress(f"damaged:{stage}", redone, len(tasks))

        return ck.run(self.engine, func, shared, stage, tasks, on_result, self._common, inputs,
                      select, announce=announce)

    @contextlib.contextmanager
    def committing(self) -> Iterator[Path]:
        """A new folder holding links to the kept tiles, renamed to the target once the small
        files and ``store.json`` are in it; then the checkpoint goes."""
        from coreselect.io.files import checkpoint as test_hold
        from coreselect.store._resume import _link

        assert self._target is not None
        test_hold("build-commit")  # tests kill the build here
        with atomic_dir(self._target) as tmp:
            for task in self._tasks["tiles"]:
                for rel, kept in self.ck.files_of("tiles", task):
                    _link(kept, tmp / rel)
            yield tmp
        self.ck.remove()

    def culprit(self, exc: OSError, target: Path) -> Path:
        return Path(str(exc.filename or target))  # the checkpoint's files as well as the store's
