"""Exact selection over row shards: the greedy on counts summed over shards of the samples.

The rows of a dataset are cut into shards (tiles of all columns over a block of rows, already
discretized with cut points found over all rows). Every statistic is a sum over shards of
:mod:`coreselect.core.shards` count tables, so the selection is the unsharded one:

1. one map-reduce of :func:`~coreselect.core.shards.shard_counts` gives entropies and the
   relevance matrix (with many binary labels, of
   :func:`~coreselect.core.shards.sparse_shard_counts`: (label, feature code) co-occurrences
   as a sparse matrix, and the relevance in the sparse form of
   :mod:`coreselect.core.sparse_relevance`, as the centralized run chooses);
2. each greedy step is one map-reduce of :func:`~coreselect.core.shards.step_counts` of the
   newly chosen feature (an ``a_u x slots`` count table per shard, whatever its rows).

Where shards live and how the sum is taken is a :class:`RowMapReduce`:
:class:`SequentialRows` visits the shards of a :class:`RowShards` provider one after another
(in memory, or read one at a time from disk: streaming), and
:class:`coreselect.engines.dask_rows.DaskRows` keeps them on Dask workers.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from coreselect.core.conditional import (
    ConditionalTables, StepCounts, cmim_order, conditional_counts, conditional_result,
)
from coreselect.core.conditional import step_counts as conditional_step_counts
from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.entropy import Backend, Relevance
from coreselect.core.greedy import GreedyResult, GreedyState, StateCallback, StepCallback, greedy
from coreselect.core.objective import ObjectiveParams
from coreselect.core.shards import (
    RowShardedOracle, ShardCounts, SparseShardCounts, Statistics, shard_counts,
    sparse_shard_counts, sparse_statistics, statistics, step_counts,
)
from coreselect.core.sparse_relevance import choose_backend
from coreselect.errors import InputError

log = logging.getLogger(__name__)

#: ``fn(features_shard, labels_shard, *args)``, summed over shards by a :class:`RowMapReduce`.
ShardFunction = Callable[..., Any]


class RowShards(Protocol):
    """Tiles of all columns over blocks of rows (a store's row blocks, or in-memory shards).

    ``features(i)`` / ``labels(i)`` are :class:`DiscreteMatrix` of shard ``i``'s rows with the
    global number of codes per column; ``loader(i)`` is a small picklable zero-argument
    callable returning ``(features(i), labels(i))`` (what a remote worker runs to get a tile).
    """

    n_row_shards: int

    def features(self, shard: int) -> DiscreteMatrix: ...

    def labels(self, shard: int) -> DiscreteMatrix: ...

    def loader(self, shard: int) -> Callable[[], tuple[DiscreteMatrix, DiscreteMatrix]]: ...

    # Optional: ``step_counts(shard, u, backend)``, the shard's :func:`step_counts` of ``u``
    # without building ``features(shard)`` (see :meth:`SequentialRows.step`).


class RowMapReduce(Protocol):
    """Apply a function to every shard and return the sum of the results."""

    n_row_shards: int

    def map_reduce(self, fn: ShardFunction, *args: Any) -> Any: ...


def row_slice(matrix: DiscreteMatrix, start: int, stop: int) -> DiscreteMatrix:
    """Rows ``start:stop`` of a discretized matrix, keeping its (global) numbers of codes."""
    return DiscreteMatrix(matrix.codes[start:stop], matrix.n_codes)


def _pair(features: DiscreteMatrix, labels: DiscreteMatrix):
    return features, labels


class InMemoryRowShards:
    """A discretized matrix cut into row shards at ``bounds`` (``0 = b_0 < ... = n``)."""

    def __init__(self, features: DiscreteMatrix, labels: DiscreteMatrix,
                 bounds: Sequence[int]):
        bounds = np.asarray(bounds, dtype=np.int64)
        if (bounds.size < 2 or bounds[0] != 0 or bounds[-1] != features.n_samples
                or np.any(np.diff(bounds) < 0)):
            raise InputError("row shard bounds must rise from 0 to the number of samples")
        if labels.n_samples != features.n_samples:
            raise InputError(f"X has {features.n_samples} samples but Y has {labels.n_samples}")
        self.bounds = bounds
        self._features = [row_slice(features, a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        self._labels = [row_slice(labels, a, b) for a, b in zip(bounds[:-1], bounds[1:])]

    @classmethod
    def split(cls, features: DiscreteMatrix, labels: DiscreteMatrix,
              n_shards: int) -> "InMemoryRowShards":
        """``n_shards`` shards of (nearly) equal numbers of rows."""
        if n_shards < 1:
            raise InputError(f"n_shards must be >= 1, got {n_shards}")
        return cls(features, labels, np.linspace(0, features.n_samples, n_shards + 1).astype(int))

    @property
    def n_row_shards(self) -> int:
        return len(self._features)

    def features(self, shard: int) -> DiscreteMatrix:
        return self._features[shard]

    def labels(self, shard: int) -> DiscreteMatrix:
        return self._labels[shard]

    def loader(self, shard: int) -> Callable[[], tuple[DiscreteMatrix, DiscreteMatrix]]:
        return functools.partial(_pair, self._features[shard], self._labels[shard])


class SequentialRows:
    """Map-reduce over the shards in this process, one per kernel thread at a time
    (:func:`coreselect.core._threads.n_threads`; ``threads=1``: one after another), summed in
    shard order (integer counts: the same bits either way). A provider that reads tiles from
    disk (streaming) holds one tile and its count tables per thread at a time: each thread
    reads its shard's tile and counts it, and the tile-bound work (reading, putting columns in
    id order, a store's row-major copy) is not left to one core while the other waits.
    ``progress(done, total)`` is called after each shard of the count tables' pass."""

    def __init__(self, shards: RowShards,
                 progress: Callable[[int, int], None] | None = None,
                 threads: int | None = None):
        self.shards = shards
        self.n_row_shards = shards.n_row_shards
        self.progress = progress
        self.threads = threads

    def map_reduce(self, fn: ShardFunction, *args: Any) -> Any:
        from coreselect.core._threads import map_ordered, n_threads

        threads = n_threads() if self.threads is None else self.threads

        def one(i: int) -> Any:
            return fn(self.shards.features(i), self.shards.labels(i), *args)

        total = None
        parts = map_ordered(one, range(self.n_row_shards), threads, ahead=threads)
        for i, part in enumerate(parts):
            # The first part is this loop's own (fn made it): summed into in place after.
            if total is None:
                total = part
            else:
                total += part
            del part
            if fn in COUNT_PASSES and self.progress is not None:
                self.progress(i + 1, self.n_row_shards)
        return total

    def step(self, u: int, backend: Backend = "auto") -> np.ndarray:
        """The summed :func:`step_counts` of ``u``. A provider with its own
        ``step_counts(shard, u, backend)`` (a store: column ``u`` and a mapped row-major copy,
        not the whole tile) gives it; otherwise each shard's tile is asked for."""
        own = getattr(self.shards, "step_counts", None)
        if own is None:
            return self.map_reduce(step_task, u, backend)
        total = None
        for i in range(self.n_row_shards):
            part = own(i, u, backend)
            if total is None:
                total = part
            else:
                total += part
        return total


# -- functions run on each shard (module level: they travel to workers by reference) --------
def counts_task(features: DiscreteMatrix, labels: DiscreteMatrix,
                backend: Backend = "auto", relevance_backend: str = "auto",
                ) -> ShardCounts | SparseShardCounts:
    """The shard's count tables: sparse co-occurrences where the centralized run would take
    the sparse relevance (:func:`choose_backend` reads only the global numbers of codes, so
    every shard chooses alike)."""
    if choose_backend(features, labels, relevance_backend) == "sparse":
        return sparse_shard_counts(features, labels)
    return shard_counts(features, labels, backend)


def step_task(features: DiscreteMatrix, labels: DiscreteMatrix, u: int,
              backend: Backend = "auto"):
    return step_counts(features, u, backend)


class _Columns:
    """The greedy reads only ``n_columns`` from its features argument when given an oracle."""

    def __init__(self, n_columns: int):
        self.n_columns = n_columns


class _Restricted:
    """An oracle over some columns only (``positions``) of another oracle."""

    def __init__(self, oracle: RowShardedOracle, positions: np.ndarray):
        self.oracle, self.positions = oracle, positions
        self.use_numba, self.backend = oracle.use_numba, oracle.backend
        self.entropies = oracle.entropies[positions]

    def distances_from(self, u: int) -> np.ndarray:
        return self.oracle.distances_from(int(self.positions[u]))[self.positions]


@dataclass
class RowShardedRun:
    """A row-sharded selection: the greedy's result, the merged statistics, and timings."""

    result: GreedyResult
    stats: Statistics
    params: ObjectiveParams
    timings: dict = field(default_factory=dict)


def select_row_sharded(
    source: RowMapReduce,
    *,
    k: int,
    lam: float = 0.5,
    p: int = 10,
    relevance: Relevance = "mi",
    keep_constant: bool = False,
    alternate: bool = True,
    backend: Backend = "auto",
    callback: StepCallback | None = None,
    calibration: str = "paper",
    relevance_backend: str = "auto",
    start: GreedyState | None = None,
    on_step: StateCallback | None = None,
    stats: Statistics | None = None,
    on_stats: Callable[[Statistics], None] | None = None,
) -> RowShardedRun:
    """Greedy (``alternate=False``) or AltGreedy over all columns, rows in shards.

    Selects what ``Problem.from_discrete(features, labels, ...).run(alternate=...)`` selects
    on the unsharded matrix, with the same objective (up to float rounding). A resumed run
    passes the ``stats`` an earlier run gave ``on_stats`` (no counts pass), and its greedy
    ``start`` (``on_step``: as :func:`~coreselect.core.greedy.greedy`).
    """
    began = time.perf_counter()
    if stats is None:
        stats, params = row_sharded_statistics(source, k=k, lam=lam, p=p, relevance=relevance,
                                               backend=backend, calibration=calibration,
                                               relevance_backend=relevance_backend)
        if on_stats is not None:
            on_stats(stats)
    else:
        params = ObjectiveParams(k=int(k), lam=float(lam), p=int(p),
                                 n_labels=stats.relevance.shape[1], calibration=calibration)
    t_counts = time.perf_counter() - began
    result = greedy_on_columns(source, stats, params, None, k, alternate=alternate,
                               keep_constant=keep_constant, backend=backend, callback=callback,
                               start=start, on_step=on_step)
    return RowShardedRun(result, stats, params,
                         {"counts": t_counts, "greedy": result.seconds,
                          "total": time.perf_counter() - began})


def row_sharded_statistics(source: RowMapReduce, *, k: int, lam: float = 0.5, p: int = 10,
                           relevance: Relevance = "mi", backend: Backend = "auto",
                           calibration: str = "paper", relevance_backend: str = "auto",
                           ) -> tuple[Statistics, ObjectiveParams]:
    """One map-reduce of the shards' count tables: entropies, relevance, objective params."""
    start = time.perf_counter()
    try:
        merged = source.map_reduce(counts_task, backend, relevance_backend)
    except ValueError as exc:  # relevance_backend="sparse" with labels that are not binary
        if "binary" not in str(exc):
            raise
        raise InputError(str(exc)) from None
    return _statistics_of(merged, k=k, lam=lam, p=p, relevance=relevance, backend=backend,
                          calibration=calibration, start=start, n_shards=source.n_row_shards)


def _statistics_of(merged, *, k: int, lam: float, p: int, relevance: Relevance,
                   backend: Backend, calibration: str, start: float, n_shards: int,
                   ) -> tuple[Statistics, ObjectiveParams]:
    if isinstance(merged, SparseShardCounts):
        stats = sparse_statistics(merged, relevance)
    else:
        stats = statistics(merged, relevance, backend)
    del merged
    log.info("row-sharded counts of %d shards in %.3f s", n_shards, time.perf_counter() - start)
    params = ObjectiveParams(k=int(k), lam=float(lam), p=int(p), n_labels=stats.relevance.shape[1],
                             calibration=calibration)
    return stats, params


def _oracle(source: RowMapReduce, stats: Statistics, backend: Backend) -> RowShardedOracle:
    """The distances from a column to all, each step's counts summed over the shards (by the
    provider's own ``step`` where it has one: a store reads one column, not whole tiles)."""
    step = getattr(source, "step", None)
    if step is None:
        def step(u: int, backend: Backend) -> np.ndarray:
            return source.map_reduce(step_task, u, backend)
    return RowShardedOracle(stats, lambda u: step(int(u), backend), backend)


def greedy_on_columns(source: RowMapReduce, stats: Statistics, params: ObjectiveParams,
                      columns: np.ndarray | None, n_select: int, *, alternate: bool,
                      keep_constant: bool = False, backend: Backend = "auto",
                      callback: StepCallback | None = None, start: GreedyState | None = None,
                      on_step: StateCallback | None = None) -> GreedyResult:
    """Greedy or AltGreedy over some columns (ids; default all), rows in shards. As
    ``Problem.run``, columns that can never be picked play no part at all (``start`` /
    ``on_step``: as :func:`~coreselect.core.greedy.greedy`)."""
    columns = (np.arange(stats.n_columns) if columns is None
               else np.unique(np.asarray(columns, dtype=np.int64)))
    if not keep_constant:
        columns = columns[~stats.is_constant[columns]]
    if n_select > columns.size:
        raise InputError(
            f"k={n_select} is larger than the number of selectable features ({columns.size})")
    oracle = _oracle(source, stats, backend)
    if not isinstance(stats.relevance, np.ndarray) and 2 * columns.size > stats.n_columns:
        # A sparse relevance restricted to the columns would copy every pair: run over all
        # columns with the others not selectable (the same selection, as Problem.run).
        allowed = np.zeros(stats.n_columns, dtype=bool)
        allowed[columns] = True
        result = greedy(_Columns(stats.n_columns), stats.relevance, params, n_select,
                        alternate=alternate, backend=backend, callback=callback,
                        oracle=oracle, selectable=allowed, start=start, on_step=on_step)
        result.local = result.selected.copy()
        return result
    relevance = (stats.relevance[columns] if isinstance(stats.relevance, np.ndarray)
                 else stats.relevance.take(columns))  # sparse: its pairs, not dense rows
    result = greedy(_Columns(columns.size), relevance, params, n_select,
                    alternate=alternate, column_ids=columns, backend=backend,
                    callback=callback, oracle=_Restricted(oracle, columns), start=start,
                    on_step=on_step)
    result.local = result.selected.copy()
    return result


def select_grid(
    source: RowMapReduce,
    parts: Sequence[np.ndarray],
    *,
    k: int,
    coreset_size: int | None = None,
    lam: float = 0.5,
    p: int = 10,
    relevance: Relevance = "mi",
    keep_constant: bool = False,
    backend: Backend = "auto",
    relevance_backend: str = "auto",
) -> RowShardedRun:
    """Algorithm 3 on a 2-D grid: Greedy on each column part (given as column ids), every part
    row-sharded, then AltGreedy on the union of the parts' selections. The counts are taken
    once for all parts."""
    start = time.perf_counter()
    stats, params = row_sharded_statistics(source, k=k, lam=lam, p=p, relevance=relevance,
                                           backend=backend, relevance_backend=relevance_backend)
    cs = int(k if coreset_size is None else coreset_size)
    chosen = []
    for part in parts:
        part = np.asarray(part, dtype=np.int64)
        n_ok = int(part.size if keep_constant else (~stats.is_constant[part]).sum())
        if min(cs, n_ok):
            chosen.append(greedy_on_columns(source, stats, params, part, min(cs, n_ok),
                                            alternate=False, keep_constant=keep_constant,
                                            backend=backend).selected)
    union = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    result = greedy_on_columns(source, stats, params, union, k, alternate=True,
                               keep_constant=keep_constant, backend=backend)
    result.extra["parts"] = chosen
    return RowShardedRun(result, stats, params, {"total": time.perf_counter() - start})


# -- calibration="cmim": the conditional tables' counts, summed over the shards ----------------
class _Both(tuple):
    """A shard's two kinds of counts, merged kind by kind (``+``, as each merges)."""

    def __add__(self, other: "_Both") -> "_Both":  # type: ignore[override]
        return _Both(a + b for a, b in zip(self, other))


def statistics_and_conditional_task(features: DiscreteMatrix, labels: DiscreteMatrix,
                                    backend: Backend) -> _Both:
    """One visit of a shard for the conditional criterion: the counts of the statistics
    (entropies, relevance, what the result reports) and those of its tables."""
    return _Both((counts_task(features, labels, backend, "auto"),
                  conditional_counts(features, labels)))


#: The passes over every shard that count its tables whole (seconds each: their progress is
#: reported shard by shard), as against the greedy steps' small ones.
COUNT_PASSES = (counts_task, statistics_and_conditional_task)


def conditional_step_task(features: DiscreteMatrix, labels: DiscreteMatrix, s: int
                          ) -> StepCounts:
    return conditional_step_counts(features, labels, s)


def select_conditional(source: RowMapReduce, *, k: int, p: int,
                       calibration: str = "cmim", keep_constant: bool = False,
                       backend: Backend = "auto",
                       callback: StepCallback | None = None) -> RowShardedRun:
    """``calibration="cmim"`` (:mod:`coreselect.core.conditional`) with the rows in shards:
    its tables' counts, of all rows and of each step's conditioning feature, are sums over
    the shards, so the order is the centralized one's. The statistics pass gives the relevance
    ``g`` and the distances the result reports, as for the other calibrations."""
    began = time.perf_counter()
    # one pass over the shards for both kinds of counts (a store's tiles are read once)
    merged, whole = source.map_reduce(statistics_and_conditional_task, backend)
    stats, params = _statistics_of(merged, k=k, lam=0.5, p=p, relevance="mi", backend=backend,
                                   calibration=calibration, start=began,
                                   n_shards=source.n_row_shards)
    del merged
    t_counts = time.perf_counter() - began
    tables = ConditionalTables(whole.features_n_codes, whole.labels_n_codes, whole)
    chosen, values = cmim_order(
        tables, lambda s: source.map_reduce(conditional_step_task, int(s)), k,
        selectable=np.ones(stats.n_columns, bool) if keep_constant else ~stats.is_constant,
        callback=callback)
    oracle = _oracle(source, stats, backend)
    pair = np.zeros((chosen.size, chosen.size))
    for i, u in enumerate(chosen[:-1]):
        pair[i, i + 1:] = oracle.distances_from(int(u))[chosen[i + 1:]]
    pair = np.maximum(pair, pair.T)
    result = conditional_result(chosen, chosen.copy(), values, stats.relevance, params.p, pair,
                                time.perf_counter() - began - t_counts, calibration)
    return RowShardedRun(result, stats, params,
                         {"counts": t_counts, "greedy": result.seconds,
                          "total": time.perf_counter() - began})


class RowShardedGreedy:
    """The row-sharded run as a strategy object: ``run(objective, source)``.

    ``objective`` needs ``k``, ``lam`` and ``p`` (an :class:`ObjectiveParams` will do; its
    ``relevance`` / ``keep_constant`` attributes are used when present); ``source`` is a
    :class:`RowMapReduce` (:class:`SequentialRows` over a provider, or ``DaskRows``).
    """

    def __init__(self, *, alternate: bool = True, relevance: Relevance = "mi",
                 keep_constant: bool = False, backend: Backend = "auto",
                 callback: StepCallback | None = None):
        self.alternate, self.relevance, self.keep_constant = alternate, relevance, keep_constant
        self.backend, self.callback = backend, callback

    def run(self, objective: Any, source: RowMapReduce) -> RowShardedRun:
        return select_row_sharded(
            source, k=objective.k, lam=objective.lam, p=objective.p,
            relevance=getattr(objective, "relevance", self.relevance),
            keep_constant=getattr(objective, "keep_constant", self.keep_constant),
            alternate=self.alternate, backend=self.backend, callback=self.callback)
