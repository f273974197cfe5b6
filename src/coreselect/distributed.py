"""Algorithm 3 of Ghadiri & Schmidt (2019), *Distributed Greedy*, and its streaming form.

1. Randomly partition the columns into ``m`` parts (``m = ceil(sqrt(d / k))`` by default).
2. On every part, Greedy (Algorithm 1) selects ``coreset_size`` columns (default ``k``).
3. On the union of those selections, AltGreedy (Algorithm 2) selects ``k``.

The algorithm is written once here; *where* step 2 runs is the engine's business
(:mod:`coreselect.engines`): in this process, a process pool, a Dask cluster, or one block
after another (``mode="streaming"``). A part task is a pure function of (data reference,
part, parameters) to the part's selection, so any engine, or a rerun after a worker died,
gives the same answer. The partition comes from one function, :func:`partition`, for every
engine and for the column store: the columns are shuffled with the seed and cut into ``m``
contiguous ranges. A store built with seed ``s`` is stored in that shuffled order, so its
parts are exactly the in-memory parts for ``random_state=s``.

Each part returns the codes and relevance rows of the few columns it selected (the paper's
slave-to-master message), so step 3 never touches the full data.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.objective import ObjectiveParams
from coreselect.core.problem import Problem, centralized
from coreselect.errors import InputError
from coreselect.store import ColumnStore, StoreRef, open_store, shuffled_order

log = logging.getLogger(__name__)

MODES = ("distributed", "streaming")
Progress = Callable[[str, int, int], None]


# -- results ---------------------------------------------------------------------------------
@dataclass
class PartSummary:
    """One part of the partition: its size, its selection (original ids) and its time."""

    index: int
    n_columns: int
    selected: np.ndarray
    seconds: float

    def to_dict(self) -> dict:
        return {"index": self.index, "n_columns": self.n_columns,
                "selected": [int(i) for i in self.selected], "seconds": round(self.seconds, 6)}


@dataclass
class DistributedResult:
    """Outcome of Algorithm 3 (also used for ``mode="centralized"`` on a store).

    ``selected`` holds original column ids in selection order; ``pair_distances`` the
    distances among them (k x k); ``parts`` each part's size, selection and time; ``union``
    the (sorted) ids AltGreedy chose from.
    """

    selected: np.ndarray
    objective: float
    relevance: float
    diversity: float
    pair_distances: np.ndarray
    parts: list[PartSummary]
    union: np.ndarray
    partitions: int
    coreset_size: int
    engine: str
    mode: str
    seconds: float
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-able summary (``--json`` output)."""
        return {
            "mode": self.mode,
            "engine": self.engine,
            "partitions": self.partitions,
            "coreset_size": self.coreset_size,
            "selected": [int(i) for i in self.selected],
            "objective": self.objective,
            "relevance": self.relevance,
            "diversity": self.diversity,
            "union_size": int(self.union.size),
            "parts": [p.to_dict() for p in self.parts],
            "seconds": round(self.seconds, 6),
            **{k: v for k, v in self.extra.items() if k not in ("engine_info",)},
            "engine_info": self.extra.get("engine_info", {}),
        }


# -- the partition ---------------------------------------------------------------------------
def n_partitions(partitions: str | int, n_columns: int, k: int) -> int:
    """``"auto"`` -> ``ceil(sqrt(d / k))`` (the paper's choice, equal work on every machine);
    an integer is checked against ``d``."""
    if partitions == "auto" or partitions is None:
        return max(1, math.ceil(math.sqrt(n_columns / max(k, 1))))
    try:
        m = int(partitions)
    except (TypeError, ValueError):
        raise InputError(f"partitions must be 'auto' or a positive integer, got {partitions!r}") from None
    if m < 1:
        raise InputError(f"partitions must be at least 1, got {m}")
    if m > n_columns:
        raise InputError(f"partitions={m} is more than the number of features ({n_columns})")
    return m


def partition_bounds(n_columns: int, m: int) -> np.ndarray:
    """Boundaries of ``m`` contiguous ranges of nearly equal size over ``n_columns``
    positions (the sizes of ``np.array_split``)."""
    base, extra = divmod(n_columns, m)
    sizes = np.full(m, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def partition(n_columns: int, m: int, random_state: Any) -> list[np.ndarray]:
    """The seeded random partition of ``n_columns`` positions into ``m`` parts, used by every
    engine (and, through the store's column order, by the store)."""
    order = shuffled_order(n_columns, random_state)
    bounds = partition_bounds(n_columns, m)
    return [order[bounds[i]:bounds[i + 1]] for i in range(m)]


# -- the part task (pure) ---------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """Objective and run parameters a part task needs besides its data."""

    k: int
    lam: float
    p: int
    relevance: str
    keep_constant: bool
    backend: str


@dataclass(frozen=True)
class PartTask:
    """One part: positions into an in-memory problem, or a range of store positions."""

    index: int
    n_select: int
    settings: Settings
    positions: np.ndarray | None = None
    start: int = 0
    stop: int = 0


@dataclass
class PartOutput:
    """What a part sends back: its selection and the selected columns' data."""

    index: int
    n_columns: int
    selected: np.ndarray
    seconds: float
    features: DiscreteMatrix
    relevance: np.ndarray
    selectable: np.ndarray


def load_part(shared: Problem | StoreRef, task: PartTask) -> tuple[Problem, int]:
    """The part's problem, columns in increasing original-id order (as the core's
    :meth:`Problem.subproblem` keeps them, so tie-breaking is identical), and the part's
    column count. From a store, columns that can never be selected are dropped before the
    relevances are computed (they take no part in Greedy)."""
    if isinstance(shared, Problem):
        return shared.subproblem(task.positions), int(task.positions.size)
    store = open_store(shared, check=False)
    ids, block = store.read_range(task.start, task.stop)
    sort = np.argsort(ids, kind="stable")
    s = task.settings
    if not s.keep_constant:
        sort = sort[~block.is_constant[sort]]
    sub = Problem.from_discrete(block.take(sort), store.labels(), k=s.k, lam=s.lam, p=s.p,
                                relevance=s.relevance, keep_constant=s.keep_constant,
                                column_ids=ids[sort])
    return sub, int(ids.size)


def run_part(shared: Problem | StoreRef, task: PartTask) -> PartOutput:
    """Greedy (Algorithm 1) on one part: pure and idempotent."""
    start = time.perf_counter()
    sub, n_columns = load_part(shared, task)
    # A part may hold fewer selectable columns than the coreset size: keep all of them.
    n = min(task.n_select, int(sub.selectable.sum()))
    if n == 0:
        local = np.zeros(0, dtype=np.int64)
    else:
        chosen = sub.run(n, alternate=False, backend=task.settings.backend).selected
        local = sub.positions_of(chosen)  # positions in ``sub``, selection order
    return PartOutput(
        index=task.index,
        n_columns=n_columns,
        selected=sub.column_ids[local],
        seconds=time.perf_counter() - start,
        features=sub.features.take(local),
        relevance=sub.relevance[local],
        selectable=sub.selectable[local],
    )


# -- Algorithm 3 -------------------------------------------------------------------------------
def _run(shared: Problem | StoreRef, tasks: list[PartTask], labels: DiscreteMatrix,
         params: ObjectiveParams, *, mode: str, engine: str, n_workers: int | None,
         client: Any, scheduler: str | None, backend: str, progress: Progress | None,
         partitions: int, coreset_size: int, start: float) -> DistributedResult:
    from coreselect.engines import make_engine

    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if mode == "streaming" and (engine != "local" or client is not None or scheduler):
        log.info("streaming runs one block at a time in this process; engine %r is not used",
                 engine)
    t0 = time.perf_counter()
    callback = None
    if progress is not None:
        def callback(done: int, total: int) -> None:
            progress("parts", done, total)
        progress("parts", 0, len(tasks))
    with make_engine(engine, mode=mode, n_workers=n_workers, client=client,
                     scheduler=scheduler) as eng:
        engine_info = eng.describe()
        outputs: list[PartOutput] = eng.map(run_part, shared, tasks, callback=callback)
    t_parts = time.perf_counter() - t0
    log.info("parts: Greedy on %d parts (%s) in %.2fs", len(tasks), engine_info["engine"], t_parts)

    # Step 3: AltGreedy on the union, assembled from what the parts sent back.
    t1 = time.perf_counter()
    ids = np.concatenate([o.selected for o in outputs])
    sort = np.argsort(ids, kind="stable")
    union = Problem(
        features=DiscreteMatrix.hstack([o.features for o in outputs]).take(sort),
        labels=labels,
        relevance=np.concatenate([o.relevance for o in outputs])[sort],
        params=params,
        column_ids=ids[sort],
        selectable=np.concatenate([o.selectable for o in outputs])[sort],
    )
    step_cb = None
    if progress is not None:
        def step_cb(done: int, total: int) -> None:
            progress("union", done, total)
    final = union.run(params.k, alternate=True, backend=backend, callback=step_cb)
    t_union = time.perf_counter() - t1
    log.info("union: AltGreedy on %d columns in %.2fs", union.n_columns, t_union)
    return DistributedResult(
        selected=final.selected,
        objective=float(final.objective),
        relevance=float(final.relevance),
        diversity=float(final.diversity),
        pair_distances=final.pair_distances,
        parts=[PartSummary(o.index, o.n_columns, o.selected, o.seconds) for o in outputs],
        union=union.column_ids,
        partitions=partitions,
        coreset_size=coreset_size,
        engine="stream" if mode == "streaming" else engine_info["engine"],
        mode=mode,
        seconds=time.perf_counter() - start,
        extra={"seconds_parts": t_parts, "seconds_union": t_union, "engine_info": engine_info},
    )


def _coreset(coreset_size: int | None, k: int) -> int:
    if coreset_size is None:
        return int(k)
    if int(coreset_size) < 1:
        raise InputError(f"coreset_size must be at least 1, got {coreset_size}")
    return int(coreset_size)


def select_distributed(
    problem: Problem,
    *,
    mode: str = "distributed",
    partitions: str | int = "auto",
    coreset_size: int | None = None,
    engine: str = "local",
    n_workers: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
    random_state: Any = None,
    backend: str = "auto",
    progress: Progress | None = None,
) -> DistributedResult:
    """Algorithm 3 on an in-memory :class:`Problem`.

    Parameters
    ----------
    problem : Problem
        The discretized data (all ``d`` columns, constant ones included).
    mode : {"distributed", "streaming"}
        ``"streaming"`` processes the parts one after another in this process.
    partitions : "auto" or int
        ``m``; ``"auto"`` is ``ceil(sqrt(d / k))``.
    coreset_size : int, optional
        Columns Greedy keeps per part (default ``k``; clipped to a part's selectable count).
    engine : {"local", "dask"}
        Where the parts run (``mode="distributed"``).
    n_workers : int, optional
        Process-pool size (``local``) or LocalCluster size (``dask``).
    client : dask.distributed.Client, optional
    scheduler : str, optional
        Address of a running Dask scheduler.
    random_state : int, RandomState or None
        Seed of the random partition.
    backend : {"auto", "numba", "numpy"}
    progress : callable, optional
        ``progress(stage, done, total)`` with stages ``"parts"`` and ``"union"``.

    Returns
    -------
    DistributedResult

    Raises
    ------
    InputError
        On bad parameters or ``k`` larger than the selectable columns.
    EngineError
        When the engine fails (unreachable scheduler, workers dying).
    """
    start = time.perf_counter()
    params = problem.params
    problem.check_k(params.k)
    m = n_partitions(partitions, problem.n_columns, params.k)
    cs = _coreset(coreset_size, params.k)
    settings = Settings(k=params.k, lam=params.lam, p=params.p, relevance="mi",
                        keep_constant=False, backend=backend)  # unused for in-memory parts
    parts = partition(problem.n_columns, m, random_state)
    tasks = [PartTask(index=i, n_select=cs, settings=settings, positions=pos)
             for i, pos in enumerate(parts)]
    log.info("partition: %d columns into %d parts, coreset size %d", problem.n_columns, m, cs)
    return _run(problem, tasks, problem.labels, params, mode=mode, engine=engine,
                n_workers=n_workers, client=client, scheduler=scheduler, backend=backend,
                progress=progress, partitions=m, coreset_size=cs, start=start)


def select_store(
    store: ColumnStore | str,
    *,
    k: int,
    lam: float = 0.5,
    p: int = 10,
    relevance: str = "mi",
    keep_constant: bool = False,
    mode: str = "distributed",
    partitions: str | int = "auto",
    coreset_size: int | None = None,
    engine: str = "local",
    n_workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    random_state: Any = None,
    backend: str = "auto",
    progress: Progress | None = None,
) -> DistributedResult:
    """Algorithm 3 (or ``mode="centralized"``) on a column store; tasks receive only the
    store path and their range of store positions, and map their own blocks.

    The partition is fixed by the seed the store was built with (its column order); a
    different ``random_state`` is ignored with a log message. The result is identical to
    :func:`select_distributed` on the same data with ``random_state=store.seed``.
    ``mode="centralized"`` reads every block into memory and runs AltGreedy.
    See :func:`select_distributed` for the other parameters.
    """
    start = time.perf_counter()
    if not isinstance(store, ColumnStore):
        store = open_store(store)
    if random_state is not None and not (isinstance(random_state, (int, np.integer))
                                         and int(random_state) == store.seed):
        log.info("the partition of a store is fixed by its seed (%d); random_state=%r is not used",
                 store.seed, random_state)
    d = store.n_features
    n_ok = store.n_selectable(keep_constant)
    if k > n_ok:
        extra = "" if n_ok == d else (f" ({d - n_ok} constant columns are never selected;"
                                      " keep_constant=True allows them)")
        raise InputError(f"k={k} is larger than the number of selectable features ({n_ok}){extra}")
    labels = store.labels()
    if mode == "centralized":
        t0 = time.perf_counter()
        problem = Problem.from_discrete(store.read_all(), labels, k=k, lam=lam, p=p,
                                        relevance=relevance, keep_constant=keep_constant)
        log.info("load: %d columns from the store in %.2fs", d, time.perf_counter() - t0)
        cb = None
        if progress is not None:
            def cb(done: int, total: int) -> None:
                progress("select", done, total)
        res = centralized(problem, backend=backend, callback=cb)
        return DistributedResult(
            selected=res.selected, objective=float(res.objective),
            relevance=float(res.relevance), diversity=float(res.diversity),
            pair_distances=res.pair_distances, parts=[], union=np.arange(d), partitions=1,
            coreset_size=k, engine="local", mode="centralized",
            seconds=time.perf_counter() - start, extra={"engine_info": {"engine": "local"}})
    m = n_partitions(partitions, d, k)
    cs = _coreset(coreset_size, k)
    params = ObjectiveParams(k=int(k), lam=float(lam), p=int(p), n_labels=labels.n_columns)
    settings = Settings(k=int(k), lam=float(lam), p=int(p), relevance=relevance,
                        keep_constant=bool(keep_constant), backend=backend)
    bounds = partition_bounds(d, m)
    tasks = [PartTask(index=i, n_select=cs, settings=settings, start=int(bounds[i]),
                      stop=int(bounds[i + 1])) for i in range(m)]
    log.info("partition: store of %d columns into %d parts, coreset size %d", d, m, cs)
    return _run(store.ref, tasks, labels, params, mode=mode, engine=engine, n_workers=n_workers,
                client=client, scheduler=scheduler, backend=backend, progress=progress,
                partitions=m, coreset_size=cs, start=start)
