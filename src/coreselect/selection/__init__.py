"""One call from data to a selection, with flat parameters: :func:`select`.

It builds the spec (:class:`~coreselect.selection.spec.Objective`,
:class:`~coreselect.selection.spec.Binning`), the strategy (:func:`make_strategy`) and the
source (:func:`as_source`), and runs ``strategy.run(objective, source)``. ``GDSSelector.fit``
and the ``select`` command both call it. Nothing here imports scikit-learn, so the command
line starts fast.

The package's modules: :mod:`.spec` (what to select), :mod:`.sources` (where the data is),
:mod:`.strategies` (how), :mod:`.distributed` (Algorithm 3's parts), :mod:`.checkpoint`
(resumable runs), :mod:`.autok` (``k="auto"``) and :mod:`.explain`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from coreselect.errors import InputError
from coreselect.io.dataset import Dataset
from coreselect.selection.sources import InMemorySource, Source, StoreSource
from coreselect.selection.spec import (
    DEFAULT_K, Binning, Objective, Progress, check, check_used, default,
)
from coreselect.store import ColumnStore, open_store
from coreselect.selection.strategies import (
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


def as_source(data: Any, Y: Any = None, *, n_bins: int | str | None = None,
              strategy: str | None = None, min_bin_count: int | None = None,
              keep_constant: bool | None = None,
              temp_dir: str | os.PathLike | None = None) -> Source:
    """The source of ``data``:

    * a :class:`~coreselect.selection.sources.Source`: itself (binning parameters must be None);
    * a file path, a path under ``$COREDATA``, ``"synthesized"`` or a registry name
      (``"emotions"``): read with :func:`coreselect.load`, as the ``select`` command does
      (``Y`` must be None);
    * a :class:`~coreselect.store.ColumnStore`, or the folder of one: a
      :class:`~coreselect.selection.sources.StoreSource` (``Y`` must be None: the store holds its
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
    k: int | str | None = default("k"),
    percentile: float | None = default("percentile"),
    lam: float = default("lam"),
    p: int | None = default("p"),
    relevance: str = default("relevance"),
    calibration: str | None = default("calibration"),
    n_bins: int | str | None = None,
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

    How many: ``k`` (an integer); None (the default): ``DEFAULT_K`` = 10, or every selectable
    feature when there are fewer; ``percentile``: ``ceil(percentile / 100 * selectable)``
    (not with ``k``); ``k="auto"``: chosen by internal cross-validation of the greedy order's
    prefixes on the data given (:mod:`coreselect.selection.autok`: in-memory data, centralized mode;
    the result's ``auto_k`` holds the curve and ``ranking`` the order up to the cap).
    ``result.spec["k"]`` is the ``k`` selected.

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
    (:mod:`coreselect.selection.checkpoint`). The result's ``engine_info`` echoes it, with
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
    check("k", k)
    check("percentile", percentile)
    # Checked now (k is resolved once the data are read).
    objective = Objective(k=DEFAULT_K, lam=lam, p=p, relevance=relevance,
                          calibration=calibration)
    runner = make_strategy(mode, partitions=partitions, coreset_size=coreset_size,
                           row_shards=row_shards, engine=engine, n_workers=n_workers, client=client,
                           scheduler=scheduler, random_state=random_state)
    check("backend", backend)
    source = as_source(data, Y, n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count,
                       keep_constant=keep_constant, temp_dir=temp_dir)
    # An option this run would ignore is refused (the option matrix, coreselect.selection.spec.UNUSED).
    check_used(dict(k=k, percentile=percentile,
                    partitions=partitions, coreset_size=coreset_size, row_shards=row_shards,
                    engine=engine, n_workers=n_workers, client=client, scheduler=scheduler,
                    random_state=random_state, n_bins=n_bins, strategy=strategy,
                    min_bin_count=min_bin_count, temp_dir=temp_dir),
               mode=mode, source="store" if isinstance(source, StoreSource) else "file",
               engine=engine)
    auto = first = None
    if k == "auto":
        if mode != "centralized" or not isinstance(source, InMemorySource):
            raise InputError("k='auto' cross-validates on the data's values: it runs on a data "
                             "file or in-memory arrays with mode='centralized'")
        if checkpoint is not None:
            raise InputError("k='auto' records no checkpoint: give an integer k to resume")
        from coreselect.selection.autok import cap_for, choose_k

        cap = cap_for(_count_selectable(source, "auto"))
        # "auto" is decided once, for the order up to the cap: the chosen k's run is its prefix
        objective = source.decide(replace(objective, k=cap))
        first = runner.run(objective, source, backend=backend,
                           progress=progress)
        ids = np.asarray(first.selected, dtype=np.int64)
        positions = ids if source.column_ids is None else np.searchsorted(source.column_ids,
                                                                          ids)
        auto = choose_k(source.X, source.Y, positions)
        k = auto.k
    else:
        k = _resolve_k(k, percentile, source)
    if auto is not None and k == len(first.selected):
        result = dataclasses.replace(first)  # the order at the cap is the selection
    else:
        result = runner.run(replace(objective, k=int(k)), source, backend=backend,
                            progress=progress, checkpoint=checkpoint)
    if auto is not None:
        auto.order = np.asarray(first.selected, dtype=np.int64)  # data columns
        result.auto_k = auto
        result.ranking = auto.order
        reused = result.selected is first.selected
        result.timings = {**({} if reused else result.timings), "auto_k_order": first.seconds,
                          "auto_k_cv": auto.seconds}
        result.seconds = (0.0 if reused else result.seconds) + first.seconds + auto.seconds
    else:
        result.ranking = np.asarray(result.selected, dtype=np.int64)
    result.label_classes = getattr(source, "label_classes", None)
    if mode == "centralized" and isinstance(source, InMemorySource):
        # the run decided "auto" already: its spec says what (no second count of the codes)
        result.scores = feature_scores(source, replace(objective, k=int(k),
                                                       calibration=result.spec["calibration"]))
    if temp_dir is not None:
        result.engine_info["temp_dir"] = str(temp_dir)
    return result


def warm_up(auto_k: bool = True) -> bool:
    """Load the compiled kernels of a default selection from numba's on-disk cache (compiling
    them on the first run after an install), so that the first ``fit`` or ``select`` in this
    process does not wait for them: those of both defaults (the greedy of sparse data, CMIM
    on dense data; :func:`coreselect.core.conditional.warm_up`) and, with ``auto_k``, the
    inner cross-validation of ``k="auto"``. Call it where the wait does not matter, such as
    a service's start-up; it is safe in a thread. Returns whether the compiled kernels are in
    use (False: numba is missing or ``CORESELECT_NUMBA=0``, and the numpy kernels run)."""
    from coreselect.core.conditional import warm_up as warm_up_core

    if not warm_up_core():
        return False
    if auto_k:
        from coreselect.selection.autok import warm_up as warm_up_auto_k

        warm_up_auto_k()
    return True


def _resolve_k(k: int | None, percentile: float | None, source: Source) -> int:
    """The number of features to select (``k`` None: the default; or from ``percentile``)."""
    if percentile is not None:
        if percentile <= 0:
            raise InputError(f"percentile={percentile!r} selects no feature: give a "
                             "percentile in (0, 100]")
        n_ok = _count_selectable(source, f"percentile={percentile!r}")
        return max(1, math.ceil(percentile / 100 * n_ok - 1e-9))
    if k is None:
        return min(DEFAULT_K, _count_selectable(source, "k"))
    if isinstance(source, InMemorySource) and k > source.n_selectable():
        n_ok = source.n_selectable()
        why = ("" if n_ok == source.n_columns else  # nothing to explain when all may be
               f" ({source.n_columns - n_ok} constant columns are never selected; "
               f"keep_constant=True allows them): {unselectable_reason(source, fix=False)}")
        raise InputError(f"k={k} is larger than the number of selectable features ({n_ok}){why}")
    return int(k)


def _count_selectable(source: Source, what: str) -> int:
    n_ok = int(source.n_selectable())
    if n_ok == 0:
        reason = (unselectable_reason(source) if isinstance(source, InMemorySource)
                  else "every column is constant in the store's codes")
        raise InputError(f"no feature can be selected ({what}): {reason}")
    return n_ok


def unselectable_reason(source: InMemorySource, fix: bool = True) -> str:
    """Why columns of an in-memory source cannot be selected, in one clause: how many hold a
    single value, and how many were left with one bin by rule 4 (the smallest bin) of
    :mod:`coreselect.core.discretize`, with the bound it used and the fix."""
    import scipy.sparse as sp

    from coreselect.core.discretize import effective_min_bin_count

    features = source._discrete[0]
    constant = np.flatnonzero(features.is_constant)
    b = source.binning
    if b.keep_constant or constant.size == 0:
        return "every column may be selected"
    X = source.X[:, constant]
    n = source.n_samples
    if sp.issparse(X):
        X = sp.csc_matrix(X)
        full = np.diff(X.indptr) == n
        lo = np.where(full, X.min(axis=0).toarray().ravel(), np.minimum(0, X.min(axis=0).toarray().ravel()))
        hi = np.where(full, X.max(axis=0).toarray().ravel(), np.maximum(0, X.max(axis=0).toarray().ravel()))
    else:
        X = np.asarray(X, dtype=np.float64)
        lo, hi = (X.min(axis=0), X.max(axis=0)) if n else (np.zeros(constant.size),) * 2
    single = int(np.sum(lo == hi))
    merged = int(constant.size - single)
    m = effective_min_bin_count(b.min_bin_count, n, b.n_bins)  # resolved by the source
    parts = []
    if single:
        parts.append(f"{single} of the {source.n_columns} columns hold a single value")
    if merged:
        parts.append(f"{merged} have every sample in one bin after bins smaller than {m} "
                     f"samples were merged (min_bin_count={b.min_bin_count} on {n} samples, "
                     f"n_bins={b.n_bins}; a smaller min_bin_count or strategy='uniform' "
                     "keeps more bins)")
    return "; ".join(parts) + (" (keep_constant=True allows constant columns)" if fix else "")


def feature_scores(source: InMemorySource, objective: Objective) -> np.ndarray:
    """Every data column's relevance summed over the labels, ``sum_l MI(x, l)`` in bits
    (``relevance="nmi"``: the sum of the normalized form), NaN for the columns that are no
    candidates (ID columns); read from the relevances the selection computed (cached)."""
    problem = source.problem(objective)
    rel = problem.relevance
    d = int(rel.shape[0])
    if hasattr(rel, "feature_sums"):  # sparse: closed forms per label group plus the pairs
        sums = rel.feature_sums(np.arange(d))
    elif type(rel) is np.ndarray:  # in memory: a row sum reads it in place, with no copy
        sums = rel.sum(axis=1)
    else:
        sums = np.zeros(d)
        step = max(1, (1 << 22) // max(1, int(rel.shape[1])))  # rows of about 32 MiB at a time
        for a in range(0, d, step):
            pos = np.arange(a, min(d, a + step))
            sums[a:a + pos.size] = np.asarray(rel[pos], dtype=np.float64).reshape(
                pos.size, -1).sum(axis=1)
    out = np.full(source.n_features, np.nan)
    # Candidates the problem leaves out are constant: they tell nothing about any label.
    out[source.data_columns(np.arange(source.n_columns) if source.column_ids is None
                            else source.column_ids)] = 0.0
    cols = source.data_columns(np.asarray(problem.column_ids, dtype=np.int64))
    out[cols] = sums
    return out


__all__ = ["select", "make_strategy", "as_source", "feature_scores", "unselectable_reason",
           "warm_up"]
