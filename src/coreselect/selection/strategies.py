"""How the objective is maximized: strategies run over sources.

As apricot keeps functions and optimizers apart, an :class:`~coreselect.selection.spec.Objective`
says what is maximized, a :class:`~coreselect.selection.sources.Source` holds the candidate columns,
and a :class:`Strategy` maximizes one over the other::

    result = DistributedGreedy(partitions=8).run(Objective(k=50), StoreSource("store/"))

* :class:`AltGreedy`: Algorithm 2 over every column (the paper's centralized CGDS);
* :class:`Greedy`: Algorithm 1 over every column;
* :class:`DistributedGreedy`: Algorithm 3 (DGDS): Greedy on each part of a random partition,
  on any engine (or one part after another with ``streaming=True``), then AltGreedy on the
  union of the parts' selections.

A new strategy subclasses :class:`Strategy`, sets ``name`` and implements ``_select``;
:meth:`Strategy.run` checks ``k`` against the source (the one place it is checked) and fills
in the result's timing, names and data description. Every strategy returns the same
:class:`SelectionResult`.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from coreselect.core.problem import Problem
from coreselect.selection.distributed import (
    PartOutput,
    PartSummary,
    PartTask,
    n_partitions,
    run_part,
    union_problem,
)
from coreselect.engines import make_engine
from coreselect.errors import InputError
from coreselect.engines.fixed_rate import measure_ranges, with_ranges
from coreselect.selection.sources import Source, StoreSource
from coreselect.core.objective import AUTO, CONDITIONAL, P_ALL, PAPER_P
from coreselect.selection.spec import Objective, Progress, check

log = logging.getLogger(__name__)


@dataclass
class SelectionResult:
    """A selection and what it is worth, from any strategy and source.

    Attributes
    ----------
    selected : ndarray of int
        Original column ids of the source, in selection order.
    objective, relevance, diversity : float
        ``h``, ``g`` and ``D`` of the selection.
    feature_relevance : ndarray
        ``sum_l MI(x, l)`` (or NMI, as the objective's relevance) of each selected feature.
    pair_distances : ndarray, shape (k, k)
        Distances among the selected features, selection order.
    strategy : str
        ``"altgreedy"``, ``"greedy"``, ``"distributed"`` or ``"streaming"``.
    parts : list of PartSummary
        Each part's size, selection and time (empty for centralized strategies).
    union_size : int or None
        Number of columns the final AltGreedy chose from (distributed only).
    partitions, coreset_size : int or None
        ``m`` and the columns kept per part (distributed only).
    engine : str or None
        ``"local"``, ``"dask"`` or ``"stream"`` (None for centralized strategies);
        ``engine_info`` describes it (workers, scheduler).
    timings : dict
        Seconds per stage: ``discretize``, ``load``, ``relevance``, ``select`` (centralized);
        ``engine_start``, ``parts``, ``union`` (distributed).
    seconds : float
        Wall time of the whole run.
    names : list of str or None
        Names of the selected features, when the source has names.
    data : dict
        The source: ``dataset`` name, ``n_samples``, ``n_features``, ``n_labels``.
    spec : dict
        The objective and binning the selection was made with (``k``, ``lam``, ``p``,
        ``relevance``, ``calibration``, ``n_bins``, ``strategy``, ``min_bin_count``,
        ``keep_constant``).
    """

    selected: np.ndarray
    objective: float
    relevance: float
    diversity: float
    feature_relevance: np.ndarray
    pair_distances: np.ndarray
    strategy: str
    parts: list[PartSummary] = field(default_factory=list)
    union_size: int | None = None
    partitions: int | None = None
    coreset_size: int | None = None
    engine: str | None = None
    engine_info: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    seconds: float = 0.0
    names: list[str] | None = None
    data: dict = field(default_factory=dict)
    spec: dict = field(default_factory=dict)
    label_relevance: np.ndarray | None = None  # (k, labels): relevance of each pick to each label
    label_names: list[str] | None = None  # the source's label names (None: unnamed)
    # The labels label_relevance's columns are (None: all); with more than
    # explain.MAX_FULL_LABELS labels, only the top labels by their term of g.
    label_ids: np.ndarray | None = None
    n_labels: int | None = None  # the data's number of labels (label_ids is some of them)
    # coreselect.select fills these: the greedy order computed (the selection; up to the cap
    # for k="auto"), the choice of k="auto" (coreselect.selection.autok.AutoK), and every data column's
    # relevance summed over the labels (centralized runs on in-memory data).
    ranking: np.ndarray | None = None
    label_classes: list | None = None  # the labels as given (label lists, class vectors)
    auto_k: Any = None
    scores: np.ndarray | None = None

    def shown_label_names(self, label_names: Sequence[str] | None = None) -> list[str] | None:
        """The names of ``label_relevance``'s columns (``label_names``: of every label)."""
        names = self.label_names if label_names is None else label_names
        if self.label_ids is None:
            return None if names is None else list(names)
        if names is None:
            return [f"label{int(j)}" for j in self.label_ids]
        return [str(names[int(j)]) for j in self.label_ids]

    def explain(self, label_names: Sequence[str] | None = None,
                min_share: float = 0.05) -> list:
        """Why each feature was picked, in selection order: the labels for which it is among
        the top-p of the selection, its share of ``g``, and its nearest selected neighbour by
        ``d`` (:func:`coreselect.selection.explain.explain_selection`). Labels are named as in the data
        (``label_names`` overrides)."""
        from coreselect.selection.explain import explain_selection

        if self.label_relevance is None:
            raise InputError("this result holds no per-label relevances to explain")
        # cmim has no top-p cut: every selected feature's relevance counts
        p = P_ALL if self.spec.get("calibration") in CONDITIONAL else self.spec.get("p", PAPER_P)
        return explain_selection(self.label_relevance, int(p),
                                 self.pair_distances,
                                 label_names=self.shown_label_names(label_names),
                                 feature_names=self.names, min_share=min_share)

    def __repr__(self) -> str:
        # Short: the arrays (k x k distances, k x L relevances) are attributes to look at.
        picked = [int(i) for i in np.asarray(self.selected)[:5]]
        more = ", ..." if len(self.selected) > 5 else ""
        return (f"SelectionResult(k={len(self.selected)}, strategy={self.strategy!r}, "
                f"objective={float(self.objective):.6g}, "
                f"selected=[{', '.join(map(str, picked))}{more}], "
                f"seconds={float(self.seconds):.3g})")

    @property
    def mean_distance(self) -> np.ndarray:
        """Mean distance of each selected feature to the other selected ones."""
        k = len(self.selected)
        pair = np.asarray(self.pair_distances)
        return pair.sum(axis=1) / (k - 1) if k > 1 else np.zeros(k)

    def to_dict(self) -> dict:
        """A JSON-able summary: every field but ``pair_distances`` (k x k numbers), which is
        summarized as ``mean_distance``."""
        out = {
            "strategy": self.strategy,
            "selected": [int(i) for i in self.selected],
        }
        if self.names is not None:
            out["names"] = [str(n) for n in self.names]
        out.update({
            "objective": float(self.objective),
            "relevance": float(self.relevance),
            "diversity": float(self.diversity),
            "feature_relevance": [round(float(x), 6) for x in self.feature_relevance],
            "mean_distance": [round(float(x), 6) for x in self.mean_distance],
            "partitions": self.partitions,
            "coreset_size": self.coreset_size,
            "union_size": self.union_size,
            "engine": self.engine,
            "engine_info": dict(self.engine_info),
            "parts": [p.to_dict() for p in self.parts],
            "timings": {k: round(float(v), 4) for k, v in self.timings.items()},
            "seconds": round(float(self.seconds), 4),
            "spec": dict(self.spec),
            **self.data,
        })
        if self.auto_k is not None:  # k="auto": the chosen k, the rule and the curve
            out["k_auto"] = self.auto_k.to_dict()
            out["ranking"] = [int(i) for i in self.ranking]
        if self.label_ids is not None:  # explain / coverage see the top labels only
            out["labels_explained"] = {"top": int(self.label_ids.size), "of": self.n_labels}
        return out


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None] | None:
    if progress is None:
        return None

    def callback(done: int, total: int) -> None:
        progress(stage, done, total)

    return callback


def _check_k(k: int, source: Source) -> None:
    """``k`` against the selectable columns of the source: the one place it is checked."""
    n_ok, d = source.n_selectable(), source.n_columns
    if k > n_ok:
        extra = "" if n_ok == d else (f" ({d - n_ok} constant columns are never selected;"
                                      " keep_constant=True allows them)")
        raise InputError(f"k={k} is larger than the number of selectable features ({n_ok}){extra}")


class Strategy(abc.ABC):
    """Maximizes an objective over a source; subclasses implement :meth:`_select`."""

    name: str = "strategy"

    #: Whether :meth:`run` takes a ``checkpoint`` (the strategy records and resumes its state).
    resumable: bool = False

    def run(self, objective: Objective, source: Source, *, backend: str = "auto",
            progress: Progress | None = None, checkpoint: Any = None) -> SelectionResult:
        """Select ``objective.k`` columns of ``source``.

        Parameters
        ----------
        objective : Objective
        source : Source
        backend : {"auto", "numba", "numpy"}
            Kernel implementation; every backend selects the same features.
        progress : callable, optional
            ``progress(stage, done, total)`` as work proceeds.
        checkpoint : str, path or :class:`~coreselect.selection.checkpoint.Checkpoint`, optional
            A file or URL where the run records its state after every greedy step and
            finished part, and from which the same run, started again, resumes (the same
            result, bit for bit; :mod:`coreselect.selection.checkpoint`).

        Raises
        ------
        InputError
            On bad parameters, or ``k`` larger than the selectable columns.
        CheckpointError
            When the checkpoint is damaged, or of another dataset, spec or version.
        EngineError
            When an engine fails (unreachable scheduler, workers dying).
        """
        check("backend", backend)
        start = time.perf_counter()
        decided = source.decide(objective)  # "auto": the same criterion in every mode
        if decided.calibration in CONDITIONAL and checkpoint is not None:
            if objective.calibration == AUTO:  # not silently another criterion than without
                raise InputError(
                    f"the default criterion on this data is {decided.calibration!r} (most "
                    "cells of its binned columns are non-zero: dense numeric data), which "
                    "records no checkpoints; give calibration='information' to record one")
            raise InputError(f"calibration={objective.calibration!r} does not record "
                             "checkpoints (its selection is fast on the data it suits)")
        objective = decided
        _check_k(objective.k, source)
        if checkpoint is not None:
            from coreselect.selection.checkpoint import as_checkpoint

            if not self.resumable:
                raise InputError(f"the {self.name} strategy does not record checkpoints")
            result = self._select(objective, source, backend, progress,
                                  checkpoint=as_checkpoint(checkpoint))
        else:
            result = self._select(objective, source, backend, progress)
        result.seconds = time.perf_counter() - start
        result.names = source.names(result.selected)
        result.label_names = getattr(source, "label_names", None)
        result.selected = source.data_columns(result.selected)
        for part in result.parts:
            part.selected = source.data_columns(part.selected)
        result.data = source.describe()
        result.spec = {**asdict(objective), **asdict(source.binning)}
        return result

    @abc.abstractmethod
    def _select(self, objective: Objective, source: Source, backend: str,
                progress: Progress | None) -> SelectionResult:
        """The selection; ``k`` is already checked."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _resumable(checkpoint: Any, objective: Objective, source: Source, backend: str,
               **run: Any):
    """The record of this run at ``checkpoint`` (None without one): its spec is everything
    the result depends on (:class:`coreselect.selection.checkpoint.Resumable`)."""
    if checkpoint is None:
        return None
    from coreselect.selection.checkpoint import Resumable

    spec = {**asdict(objective), **asdict(source.binning), "backend": backend, **run}
    checkpoint.refuse_inside(getattr(source, "store", None))  # never write into the input
    return Resumable(checkpoint, spec, source.fingerprint)


def _seed_spec(random_state: Any, source: Source) -> Any:
    """The partition's seed as a checkpoint records it: a resumed run must cut the same parts."""
    if isinstance(source, StoreSource):
        return "store"  # the store's build seed (its fingerprint holds it)
    if isinstance(random_state, np.random.RandomState):
        from coreselect.selection.checkpoint import hash_arrays

        kind, keys, pos, has_gauss, cached = random_state.get_state()
        return "RandomState:" + hash_arrays(keys, np.asarray([pos, has_gauss]),
                                            np.asarray([cached]))
    if random_state is None:
        from coreselect.errors import CheckpointError

        raise CheckpointError("a checkpointed distributed run needs a fixed random_state (the "
                              "seed of its partition): without one a resumed run would cut "
                              "other parts")
    return int(random_state)


def _from_problem(problem: Problem, res, strategy: str, **extra) -> SelectionResult:
    from coreselect.selection.explain import selected_label_relevance

    pos = problem.positions_of(np.asarray(res.selected, dtype=np.int64))
    # Once: with a sparse relevance the rows are built on demand (top labels only when many).
    rows, sums, label_ids = selected_label_relevance(problem.relevance, pos, problem.params.p)
    return SelectionResult(
        selected=np.asarray(res.selected, dtype=np.int64),
        objective=float(res.objective),
        relevance=float(res.relevance),
        diversity=float(res.diversity),
        feature_relevance=sums,
        label_relevance=rows, label_ids=label_ids, n_labels=int(problem.relevance.shape[1]),
        pair_distances=np.asarray(res.pair_distances),
        strategy=strategy,
        **extra,
    )


class _Centralized(Strategy):
    alternate: bool
    resumable = True

    def _select(self, objective, source, backend, progress, checkpoint=None):
        record = _resumable(checkpoint, objective, source, backend, mode=self.name)
        problem = source.problem(objective, progress=_stage(progress, "relevance"),
                                 recorded=None if record is None else record.restore_relevance)
        if record is not None:
            record.record_relevance(problem.relevance)  # once: a resumed run reads them
            record.n_steps = objective.k
        res = problem.run(objective.k, alternate=self.alternate, backend=backend,
                          callback=_stage(progress, "select"),
                          start=None if record is None else record.state,
                          on_step=None if record is None else record.record_step)
        return _from_problem(problem, res, self.name,
                             timings={**problem.timings, "select": float(res.seconds)},
                             engine_info={} if record is None else record.describe())


class AltGreedy(_Centralized):
    """Algorithm 2 (AltGreedy) over every candidate column: the paper's centralized CGDS,
    a 1/2-approximation of ``h``."""

    name = "altgreedy"
    alternate = True


class Greedy(_Centralized):
    """Algorithm 1 (Greedy) over every candidate column."""

    name = "greedy"
    alternate = False


class DistributedGreedy(Strategy):
    """Algorithm 3 (DGDS): Greedy on each of ``partitions`` random parts, then AltGreedy on
    the union of the parts' selections (see :mod:`coreselect.selection.distributed`).

    Parameters
    ----------
    partitions : "auto" or int, default="auto"
        ``m``; ``"auto"`` is ``ceil(sqrt(d / k))``.
    coreset_size : int, optional
        Columns Greedy keeps per part (default ``k``; a part with fewer selectable columns
        keeps all of them).
    engine : {"local", "dask"}, default="local"
        Where the parts run.
    n_workers : int, optional
        Process-pool size (``local``; default: in this process) or LocalCluster size
        (``dask``).
    client : dask.distributed.Client, optional
        An existing Dask client (``engine="dask"``; not closed here).
    scheduler : str, optional
        Address of a running Dask scheduler (``engine="dask"``).
    random_state : int, RandomState or None
        Seed of the random partition. A column store's partition is fixed by the seed it
        was built with: any other value is refused.
    streaming : bool, default=False
        Process the parts in this process, one per kernel thread at a time (memory holds
        that many parts; ``NUMBA_NUM_THREADS=1``: one after another), whatever the engine.

    Notes
    -----
    With ``engine="dask"`` and no ``client``, a ``LocalCluster`` is started: scripts that do
    so must guard their entry point with ``if __name__ == "__main__":`` (its workers are new
    processes that import the script).
    """

    def __init__(self, partitions: str | int = "auto", coreset_size: int | None = None,
                 engine: str = "local", n_workers: int | None = None, client: Any = None,
                 scheduler: str | None = None, random_state: Any = None,
                 streaming: bool = False):
        for name, value in (("partitions", partitions), ("coreset_size", coreset_size),
                            ("engine", engine), ("n_workers", n_workers),
                            ("scheduler", scheduler), ("random_state", random_state)):
            check(name, value)
        self.partitions = partitions
        self.coreset_size = coreset_size
        self.engine = engine
        self.n_workers = n_workers
        self.client = client
        self.scheduler = scheduler
        self.random_state = random_state
        self.streaming = bool(streaming)

    @property
    def name(self) -> str:  # type: ignore[override]
        return "streaming" if self.streaming else "distributed"

    def __repr__(self) -> str:
        return (f"DistributedGreedy(partitions={self.partitions!r}, "
                f"coreset_size={self.coreset_size!r}, engine={self.engine!r}, "
                f"streaming={self.streaming})")

    resumable = True

    def _select(self, objective, source, backend, progress, checkpoint=None):
        k = objective.k
        m = n_partitions(self.partitions, source.n_columns, k)
        cs = k if self.coreset_size is None else int(self.coreset_size)
        if m * cs < k:
            raise InputError(
                f"the coresets of {m} parts x {cs} features hold at most {m * cs} features, "
                f"fewer than k={k}; raise the coreset size or use fewer partitions")
        if self.streaming and (self.engine != "local" or self.client is not None
                               or self.scheduler or self.n_workers):
            log.info("streaming runs the parts in this process; engine %r is not used",
                     self.engine)
        log.info("partition: %d columns into %d parts, coreset size %d", source.n_columns, m, cs)
        # Streaming and distributed runs, on any engine, cut and select the same parts: one
        # may resume the other.
        record = (None if checkpoint is None else _resumable(
            checkpoint, objective, source, backend, mode="distributed", partitions=m,
            coreset_size=cs, seed=_seed_spec(self.random_state, source)))
        parts = source.column_parts(objective, m, self.random_state,
                                    recorded=None if record is None else record.restore_relevance)
        if record is not None and parts.relevance is not None:
            record.record_relevance(parts.relevance)
        tasks = [PartTask(index=i, n_select=cs, columns=c, backend=backend)
                 for i, c in enumerate(parts.columns)]
        timings = dict(parts.timings)
        done: dict[int, PartOutput] = {} if record is None else dict(record.parts)
        if any(not 0 <= i < len(tasks) for i in done):
            from coreselect.errors import CheckpointError

            raise CheckpointError("the checkpoint's parts do not fit this partition")
        todo = [t for t in tasks if t.index not in done]

        t0 = time.perf_counter()
        if progress is not None:  # a cluster may take seconds to start: say so
            progress("engine", 0, 1)
        engine = make_engine(self.engine, mode="streaming" if self.streaming else "distributed",
                             n_workers=self.n_workers, client=self.client,
                             scheduler=self.scheduler)
        timings["engine_start"] = time.perf_counter() - t0
        if progress is not None:
            progress("engine", 1, 1)
        with engine:
            info = engine.describe()
            ranges = None
            if objective.calibration == "fixed":  # one objective for the parts and the union
                t3 = time.perf_counter()
                ranges = (record.ranges if record is not None and record.ranges is not None
                          else measure_ranges(engine, parts.shared, parts.columns, backend))
                if record is not None:
                    record.record_ranges(ranges)  # a pass over every part: done once
                parts.shared = with_ranges(parts.shared, ranges)
                timings["ranges"] = time.perf_counter() - t3
            if progress is not None:
                progress("parts", len(done), len(tasks))
            t1 = time.perf_counter()
            outputs: list[PartOutput] = list(done.values()) + _map_parts(
                engine, parts.shared, todo, progress, len(done), len(tasks), record)
            outputs.sort(key=lambda o: o.index)
            timings["parts"] = time.perf_counter() - t1
        log.info("parts: Greedy on %d parts (%s) in %.2fs (engine start %.2fs)", len(tasks),
                 info["engine"], timings["parts"], timings["engine_start"])

        # Step 3: AltGreedy on the union, assembled from what the parts sent back.
        t2 = time.perf_counter()
        params = dataclasses.replace(objective.params(parts.labels.n_columns), ranges=ranges)
        union = union_problem(outputs, parts.labels, params)
        if union.n_columns < k:
            raise InputError(
                f"the parts' coresets hold only {union.n_columns} selectable features, fewer "
                f"than k={k} ({m} parts x coreset size {cs}); raise the coreset size or use "
                "fewer partitions")
        if record is not None:
            record.n_steps = k
        final = union.run(k, alternate=True, backend=backend, callback=_stage(progress, "union"),
                          start=None if record is None else record.state,
                          on_step=None if record is None else record.record_step)
        timings["union"] = time.perf_counter() - t2
        log.info("union: AltGreedy on %d columns in %.2fs", union.n_columns, timings["union"])
        return _from_problem(
            union, final, self.name,
            parts=[PartSummary(o.index, o.n_columns, o.selected, o.seconds) for o in outputs],
            union_size=int(union.n_columns), partitions=m, coreset_size=cs,
            engine=info["engine"], timings=timings,
            engine_info={**info, **({} if record is None else record.describe())})


class _RecordFailed(Exception):
    """Writing a part's record failed inside an engine's map (whose own handlers would take
    an OSError for a cluster failure): carried out, then raised as it was."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def _map_parts(engine, shared, tasks: list, progress: Progress | None, before: int,
               total: int, record) -> list:
    """The engine's map over the parts still to do, each finished part recorded."""
    def callback(done: int, _: int) -> None:
        if progress is not None:
            progress("parts", before + done, total)

    def on_result(_: int, output) -> None:
        try:
            record.record_part(output)
        except BaseException as exc:  # noqa: BLE001 - raised again as it was, below
            raise _RecordFailed(exc) from None

    if not tasks:
        return []
    try:
        return engine.map(run_part, shared, tasks, callback=callback,
                          on_result=None if record is None else on_result)
    except _RecordFailed as failed:
        raise failed.error from None


class RowSharded(Strategy):
    """AltGreedy over every candidate column with the samples cut into row shards: every
    count table (relevance, entropies, each step's joint counts of the new feature with all
    candidates) is a sum over shards, so the selection is :class:`AltGreedy`'s, exactly
    (see :mod:`coreselect.engines.rowsharded`). For data taller than one machine's memory.

    Parameters
    ----------
    row_shards : "auto" or int, default="auto"
        Shards of the rows of an in-memory source (``"auto"``: one, or one per Dask worker);
        a column store's shards are its row blocks (``"auto"``, on any engine and any number
        of workers: the blocks are spread over the workers).
    engine : {"local", "dask"}, default="local"
        ``"local"`` visits the shards one after another in this process (a store's tiles are
        read one at a time: out of core); ``"dask"`` keeps the tiles on the workers and runs
        one small map-reduce per greedy step.
    n_workers, client, scheduler
        As for :class:`DistributedGreedy` (``engine="dask"``).
    """

    name = "rows"
    resumable = True

    def __init__(self, row_shards: str | int = "auto", engine: str = "local",
                 n_workers: int | None = None, client: Any = None,
                 scheduler: str | None = None):
        for name, value in (("row_shards", row_shards), ("engine", engine),
                            ("n_workers", n_workers), ("scheduler", scheduler)):
            check(name, value)
        self.row_shards, self.engine, self.n_workers = row_shards, engine, n_workers
        self.client, self.scheduler = client, scheduler

    def __repr__(self) -> str:
        return f"RowSharded(row_shards={self.row_shards!r}, engine={self.engine!r})"

    def _select(self, objective, source, backend, progress, checkpoint=None):
        from coreselect.engines.rowsharded import SequentialRows, select_row_sharded

        # Counts are integers summed over shards: any sharding and engine give the same bits.
        record = _resumable(checkpoint, objective, source, backend, mode=self.name)
        if record is not None:
            record.n_steps = objective.k
        timings: dict = {}
        cluster = None
        n_shards = self.row_shards
        if self.engine == "dask":
            from coreselect.engines.dask import DaskEngine

            t0 = time.perf_counter()
            if progress is not None:
                progress("engine", 0, 1)
            cluster = DaskEngine(client=self.client, scheduler=self.scheduler,
                                 n_workers=self.n_workers)
            timings["engine_start"] = time.perf_counter() - t0
            if progress is not None:
                progress("engine", 1, 1)
            if n_shards == "auto" and not isinstance(source, StoreSource):
                # In memory, 'auto' is one shard per worker; a store's shards are its row
                # blocks, whatever the workers (DaskRows spreads them: 1 block on 2 workers
                # and 4 blocks on 2 workers both run).
                n_shards = max(1, len(cluster.client.scheduler_info()["workers"]))
        shards = None
        try:
            # A checkpointed run's scratch (a store's row copies) outlives a kill: the run
            # that resumes it takes it over.
            shards, ids = source.row_shards(
                n_shards, keep_as=None if record is None else "ck" + record.scratch_key())
            if cluster is not None:
                from coreselect.engines.dask_rows import DaskRows

                rows = DaskRows(cluster.client, shards, progress=_stage(progress, "counts"))
                info = cluster.describe()
            else:
                rows = SequentialRows(shards, progress=_stage(progress, "counts"))
                info = {"engine": "local"}
            if objective.calibration in CONDITIONAL:  # its own counts, summed alike
                from coreselect.engines.rowsharded import select_conditional

                run = select_conditional(
                    rows, k=objective.k, p=objective.p, calibration=objective.calibration,
                    keep_constant=source.binning.keep_constant, backend=backend,
                    callback=_stage(progress, "select"))
            else:
                run = select_row_sharded(
                    rows, k=objective.k, lam=objective.lam, p=objective.p,
                    relevance=objective.relevance, calibration=objective.calibration,
                    keep_constant=source.binning.keep_constant, alternate=True,
                    backend=backend, callback=_stage(progress, "select"),
                    start=None if record is None else record.state,
                    on_step=None if record is None else record.record_step,
                    stats=None if record is None else record.stats,
                    on_stats=None if record is None else record.record_stats)
        finally:
            if cluster is not None:
                cluster.close()
            if hasattr(shards, "close"):  # a store's row-major copies (temp_dir)
                shards.close()
        res = run.result
        positions = np.asarray(res.selected, dtype=np.int64)
        selected = positions if ids is None else np.asarray(ids, dtype=np.int64)[positions]
        timings.update(run.timings)
        from coreselect.selection.explain import selected_label_relevance

        rel = run.stats.relevance
        label_rows, sums, label_ids = selected_label_relevance(rel, positions, objective.p)
        form = "dense" if isinstance(rel, np.ndarray) else "sparse"
        return SelectionResult(
            selected=selected, objective=float(res.objective), relevance=float(res.relevance),
            diversity=float(res.diversity), feature_relevance=sums,
            label_relevance=label_rows, label_ids=label_ids, n_labels=int(rel.shape[1]),
            pair_distances=np.asarray(res.pair_distances), strategy=self.name,
            engine=info["engine"], engine_info={**info, "row_shards": rows.n_row_shards,
                                                "relevance_backend": form,
                                                **({} if record is None else record.describe())},
            timings=timings)


__all__ = ["Strategy", "AltGreedy", "Greedy", "DistributedGreedy", "RowSharded",
           "SelectionResult"]
