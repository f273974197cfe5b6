"""Algorithm 3 of Ghadiri & Schmidt (2019), *Distributed Greedy*, and its streaming form.

1. Randomly partition the columns into ``m`` parts (``m = ceil(sqrt(d / k))`` by default).
2. On every part, Greedy (Algorithm 1) selects ``coreset_size`` columns (default ``k``).
3. On the union of those selections, AltGreedy (Algorithm 2) selects ``k``.

This module holds the pieces that run on workers (the partition, the pure part task, the
union); :class:`coreselect.selection.strategies.DistributedGreedy` runs them. *Where* step 2 runs is
the engine's business (:mod:`coreselect.engines`): in this process, a process pool, a Dask
cluster, or one block after another (``streaming=True``). A part task is a pure function of
(data reference, part, parameters) to the part's selection, so any engine, or a rerun after a
worker died, gives the same answer. The partition comes from one function, :func:`partition`, for every
engine and for the column store: the columns are shuffled with the seed and cut into ``m``
contiguous ranges. A store built with seed ``s`` is stored in that shuffled order, so its
parts are exactly the in-memory parts for ``random_state=s``.

Each part returns the codes and relevance rows of the few columns it selected (the paper's
slave-to-master message), so step 3 never touches the full data.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.objective import ObjectiveParams
from coreselect.core.problem import Problem
from coreselect.errors import InputError
from coreselect.selection.spec import Objective, check
from coreselect.store import StoreRef, open_store, shuffled_order


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


# -- the partition ---------------------------------------------------------------------------
def n_partitions(partitions: str | int, n_columns: int, k: int) -> int:
    """``"auto"`` -> ``ceil(sqrt(d / k))`` (the paper's choice, equal work on every machine);
    an integer is checked against ``d``."""
    check("partitions", partitions)
    if partitions == "auto":
        return max(1, math.ceil(math.sqrt(n_columns / max(k, 1))))
    if partitions > n_columns:
        raise InputError(f"partitions={partitions} is more than the number of features "
                         f"({n_columns})")
    return int(partitions)


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
class PartTask:
    """One part: Greedy selects up to ``n_select`` of the columns ``columns`` of the shared
    data (whatever its ``load`` takes: positions, or a range of store positions)."""

    index: int
    n_select: int
    columns: Any
    backend: str = "auto"


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


@dataclass
class ProblemParts:
    """Shared data of an in-memory run: the whole problem (discretized, relevances computed
    once); a part's ``columns`` are positions into it. Engines ship it to each worker once."""

    problem: Problem
    is_reference = False  # big: engines scatter it once rather than put it in every task

    def load(self, positions: np.ndarray) -> tuple[Problem, int]:
        return self.problem.subproblem(positions), int(np.asarray(positions).size)


@dataclass(frozen=True)
class StoreParts:
    """Shared data of a store run: the store's path and what a part needs to compute its
    relevances; a part's ``columns`` are a range ``(start, stop)`` of store positions."""

    ref: StoreRef
    objective: Objective
    keep_constant: bool
    ranges: tuple[float, float] | None = None  # calibration "fixed": the whole store's
    is_reference = True  # a few bytes: travels inside every task

    def load(self, columns: tuple[int, int]) -> tuple[Problem, int]:
        """The part's problem, columns in increasing original-id order (as the core's
        :meth:`Problem.subproblem` keeps them, so tie-breaking is identical). Columns that can
        never be selected are dropped before the relevances are computed (they take no part
        in Greedy)."""
        store = open_store(self.ref, check=False)
        ids, block = store.read_range(*columns)
        sort = np.argsort(ids, kind="stable")
        if not self.keep_constant:
            sort = sort[~block.is_constant[sort]]
        o = self.objective
        sub = Problem.from_discrete(block.take(sort), store.labels(), k=o.k, lam=o.lam, p=o.p,
                                    relevance=o.relevance, calibration=o.calibration,
                                    keep_constant=self.keep_constant, column_ids=ids[sort])
        if self.ranges is not None:
            sub.params = dataclasses.replace(sub.params, ranges=self.ranges)
        return sub, int(ids.size)


def run_part(shared: ProblemParts | StoreParts, task: PartTask) -> PartOutput:
    """Greedy (Algorithm 1) on one part: pure and idempotent."""
    start = time.perf_counter()
    sub, n_columns = shared.load(task.columns)
    # A part may hold fewer selectable columns than the coreset size: keep all of them.
    n = min(task.n_select, int(sub.selectable.sum()))
    if n == 0:
        local = np.zeros(0, dtype=np.int64)
    else:
        chosen = sub.run(n, alternate=False, backend=task.backend).selected
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


def union_problem(outputs: list[PartOutput], labels: DiscreteMatrix,
                  params: ObjectiveParams) -> Problem:
    """Step 3's problem: the columns the parts selected, assembled from what they sent back
    (in increasing original-id order), so step 3 never touches the full data."""
    ids = np.concatenate([o.selected for o in outputs])
    sort = np.argsort(ids, kind="stable")
    return Problem(
        features=DiscreteMatrix.hstack([o.features for o in outputs]).take(sort),
        labels=labels,
        relevance=np.concatenate([o.relevance for o in outputs])[sort],
        params=params,
        column_ids=ids[sort],
        selectable=np.concatenate([o.selectable for o in outputs])[sort],
    )
