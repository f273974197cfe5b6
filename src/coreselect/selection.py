"""One call from data to a selection, with flat parameters: :func:`select`.

It builds the spec (:class:`~coreselect.spec.Objective`, :class:`~coreselect.spec.Binning`),
the strategy (:func:`make_strategy`) and the source (:func:`as_source`), and runs
``strategy.run(objective, source)``. ``GDSSelector.fit`` and the ``select`` command both call
it. Nothing here imports scikit-learn, so the command line starts fast.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from coreselect.errors import InputError
from coreselect.io.dataset import Dataset
from coreselect.sources import InMemorySource, Source, StoreSource
from coreselect.spec import Binning, Objective, Progress, check, check_used, default
from coreselect.store import ColumnStore, open_store
from coreselect.strategies import (
    AltGreedy, DistributedGreedy, RowSharded, SelectionResult, Strategy,
)


def make_strategy(
    mode: str = default("mode"),
    *,
    partitions: str | int = default("partitions"),
    coreset_size: int | None = default("coreset_size"),
    row_shards: str | int = default("row_shards"),
    engine: str = default("engine"),
    n_workers: int | None = default("n_workers"),
    client: Any = None,
    scheduler: str | None = None,
    random_state: Any = None,
) -> Strategy:
    """The strategy of a mode: ``"centralized"`` -> :class:`AltGreedy`; ``"distributed"`` /
    ``"streaming"`` -> :class:`DistributedGreedy`; ``"rows"`` -> :class:`RowSharded` (the
    centralized selection with the samples in shards). Every parameter is checked, also those
    a run does not use."""
    check("mode", mode)
    check("row_shards", row_shards)
    if mode == "rows":
        return RowSharded(row_shards=row_shards, engine=engine, n_workers=n_workers,
                          client=client, scheduler=scheduler)
    distributed = DistributedGreedy(partitions=partitions, coreset_size=coreset_size,
                                    engine=engine, n_workers=n_workers, client=client,
                                    scheduler=scheduler, random_state=random_state,
                                    streaming=mode == "streaming")
    return AltGreedy() if mode == "centralized" else distributed


def as_source(data: Any, Y: Any = None, *, n_bins: int | None = None,
              strategy: str | None = None, min_bin_count: int | None = None,
              keep_constant: bool | None = None,
              temp_dir: str | os.PathLike | None = None) -> Source:
    """The source of ``data``:

    * a :class:`~coreselect.sources.Source`: itself (binning parameters must be None);
    * a file path, a path under ``$COREDATA``, ``"synthesized"`` or a registry name
      (``"emotions"``): read with :func:`coreselect.load`, as the ``select`` command does
      (``Y`` must be None);
    * a :class:`~coreselect.store.ColumnStore`, or the folder of one: a
      :class:`~coreselect.sources.StoreSource` (``Y`` must be None: the store holds its
      labels; binning parameters other than ``keep_constant`` must be None or the store's);
    * a :class:`~coreselect.io.dataset.Dataset`: its candidate columns (ID columns left out,
      :meth:`~coreselect.io.dataset.Dataset.candidate_columns`) and labels;
    * otherwise a feature matrix, with the labels ``Y``.

    Binning parameters left at None take the default (or the store's).
    """
    given = {name: value for name, value in (("n_bins", n_bins), ("strategy", strategy),
                                               ("min_bin_count", min_bin_count),
                                               ("keep_constant", keep_constant))
             if value is not None}
    if isinstance(data, Source):
        if given or Y is not None:
            raise InputError("pass the labels and the binning to the source itself")
        return data
    if isinstance(data, (str, os.PathLike)):
        # As the command line: a folder is a column store, anything else goes to
        # coreselect.load (a file, a path under $COREDATA, "synthesized", a registry name).
        from coreselect.store.fs import scheme

        from coreselect.io.chunks import names_files  # shards of a dataset, not a store

        if (scheme(data) is not None or Path(data).is_dir()) and not names_files(data):  # a URL is never a path
            data = open_store(data)  # says so when the folder holds no store
        else:
            if Y is not None:
                raise InputError(f"{data} is read with its own labels; do not pass Y (load it "
                                 "with coreselect.load(data, labels=...) to choose them)")
            from coreselect.datasets.load import load

            data = load(data)
    if isinstance(data, ColumnStore):
        if Y is not None:
            raise InputError("a column store holds its own labels; do not pass Y")
        built = StoreSource.built_binning(data) or Binning()
        return StoreSource(data, replace(built, **given), temp_dir=temp_dir)
    binning = Binning(**given)
    if isinstance(data, Dataset):
        if Y is not None:
            raise InputError("a Dataset holds its own labels; do not pass Y")
        return InMemorySource(data.X, data.Y, binning, columns=data.candidate_columns(),
                              feature_names=data.feature_names,
                              label_names=data.label_names, name=data.name)
    return InMemorySource(data, Y, binning)


def select(
    data: Any,
    Y: Any = None,
    *,
    k: int = default("k"),
    lam: float = default("lam"),
    p: int | None = default("p"),
    relevance: str = default("relevance"),
    calibration: str | None = default("calibration"),
    n_bins: int | None = None,
    strategy: str | None = None,
    min_bin_count: int | None = None,
    keep_constant: bool | None = None,
    mode: str = default("mode"),
    partitions: str | int = default("partitions"),
    coreset_size: int | None = default("coreset_size"),
    row_shards: str | int = default("row_shards"),
    engine: str = default("engine"),
    n_workers: int | None = default("n_workers"),
    client: Any = None,
    scheduler: str | None = None,
    random_state: Any = None,
    backend: str = default("backend"),
    progress: Progress | None = None,
    temp_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
) -> SelectionResult:
    """Select ``k`` features of ``data``: a feature matrix with labels ``Y``, a
    :class:`~coreselect.io.dataset.Dataset`, or a column store (see :func:`as_source`).

    The parameters are those of :class:`coreselect.GDSSelector`, with ``calibration`` None for
    the library default, and binning parameters None for the defaults (or, on a store, the
    binning it was built with). Selected indices are columns of ``data``, in selection order.
    ``temp_dir``: the folder for the row-major copies of ``mode="rows"`` on a column store with
    the local engine (removed when the run ends, fails or is terminated; after a SIGKILL, by
    the next rows run in that folder, or taken over by the run that resumes ``checkpoint``).
    ``checkpoint``: a file or URL (``s3://``, ``memory://``, ...) where the run records its
    state after every greedy step and finished part; the same call made again after the run
    was killed resumes from it and returns the same selection and objective, bit for bit.
    It is kept when the run ends (the same call returns at once); a checkpoint of another
    dataset, spec or coreselect version, or a damaged one, is refused
    (:mod:`coreselect.checkpoint`). The result's ``engine_info`` echoes it, with
    ``resumed_from_step`` (and ``resumed_parts``).

    Raises
    ------
    InputError
        On bad data or parameters, in one line.
    CheckpointError
        When ``checkpoint`` is damaged, or of another run.
    EngineError
        When an engine or a column store fails.
    """
    objective = Objective(k=k, lam=lam, p=p, relevance=relevance, calibration=calibration)
    runner = make_strategy(mode, partitions=partitions, coreset_size=coreset_size,
                           row_shards=row_shards, engine=engine, n_workers=n_workers, client=client,
                           scheduler=scheduler, random_state=random_state)
    check("backend", backend)
    source = as_source(data, Y, n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count,
                       keep_constant=keep_constant, temp_dir=temp_dir)
    # An option this run would ignore is refused (the option matrix, coreselect.spec.UNUSED).
    check_used(dict(partitions=partitions, coreset_size=coreset_size, row_shards=row_shards,
                    engine=engine, n_workers=n_workers, client=client, scheduler=scheduler,
                    random_state=random_state, n_bins=n_bins, strategy=strategy,
                    min_bin_count=min_bin_count, temp_dir=temp_dir),
               mode=mode, source="store" if isinstance(source, StoreSource) else "file",
               engine=engine)
    result = runner.run(objective, source, backend=backend, progress=progress,
                        checkpoint=checkpoint)
    if temp_dir is not None:
        result.engine_info["temp_dir"] = str(temp_dir)
    return result


__all__ = ["select", "make_strategy", "as_source"]
