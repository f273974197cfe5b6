"""The ``"fixed"`` calibration's ranges for Algorithm 3, measured on the whole data before
the parts run (a pre-pass over the same partition, on the same engine).

Algorithm 3's bound is about one objective ``h = a g + b D``: every part's Greedy and the final
AltGreedy must use the same ``a, b``. They are set by two ranges of the whole data
(:func:`coreselect.core.greedy.first_ranges`): ``R_g``, the range of ``g({v})``, and ``R_D``,
the range of ``d(u0, v)`` with ``u0`` the whole data's first pick. Both are statistics that
split over the columns: each part reports the ``min`` and ``max`` over its own columns
(:func:`coreselect.core.greedy.span`), which combine exactly. Two small maps do it:

1. every part sends ``g({v})`` of its selectable columns (one float per column) and the codes
   of its own best column; the caller finds ``u0`` as a centralized run would (the largest
   ``g({u})``, ties to the lowest original id) and ``R_g``;
2. every part receives ``u0``'s codes and sends the span of ``d(u0, v)`` over its columns.

In memory the parts slice the whole problem; from a store each part reads its columns and
computes its relevances (so a store run reads every part twice more).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.entropy import DistanceOracle
from coreselect.core.greedy import range_of, span
from coreselect.core.objective import argmax_first, relevance_gains


@dataclass(frozen=True)
class SinglesTask:
    """Pass 1 on one part (``columns`` as in :class:`coreselect.selection.distributed.PartTask`)."""

    index: int
    columns: Any


@dataclass(frozen=True)
class DistanceTask:
    """Pass 2 on one part: the span of ``d(first, v)`` over the part's selectable columns."""

    index: int
    columns: Any
    first_id: int
    first: DiscreteMatrix  # the first pick's codes (one column)
    backend: str = "auto"


def part_singles(shared: Any, task: SinglesTask) -> tuple[np.ndarray, np.ndarray, DiscreteMatrix | None]:
    """``(ids, g({v}))`` of the part's selectable columns and the codes of its best one."""
    sub, _ = shared.load(task.columns)
    ok = np.asarray(sub.selectable, dtype=bool)
    singles = relevance_gains(sub.relevance, 1).gains
    best = sub.features.take([argmax_first(np.where(ok, singles, -np.inf))]) if ok.any() else None
    return sub.column_ids[ok], singles[ok], best


def part_distance_span(shared: Any, task: DistanceTask) -> tuple[float, float]:
    """``(min, max)`` of ``d(first, v)`` over the part's selectable columns other than
    ``first``."""
    sub, _ = shared.load(task.columns)
    others = np.asarray(sub.selectable, dtype=bool) & (sub.column_ids != task.first_id)
    if not others.any():
        return span(np.zeros(0), np.zeros(0, dtype=bool))
    oracle = DistanceOracle(DiscreteMatrix.hstack([task.first, sub.features]), backend=task.backend)
    return span(oracle.distances_from(0)[1:], others)


def measure_ranges(engine: Any, shared: Any, columns: list[Any],
                   backend: str = "auto") -> tuple[float, float]:
    """``(R_g, R_D)`` of the whole data, over the parts ``columns`` of ``shared``, on
    ``engine`` (anything with ``map(func, shared, tasks)``)."""
    singles = engine.map(part_singles, shared, [SinglesTask(i, c) for i, c in enumerate(columns)])
    ids = np.concatenate([s[0] for s in singles])
    values = np.concatenate([s[1] for s in singles])
    if ids.size == 0:
        return 0.0, 0.0
    order = np.argsort(ids, kind="stable")  # a centralized run's column order: ties to low ids
    first_id = int(ids[order][argmax_first(values[order])])
    owner = next(i for i, s in enumerate(singles) if first_id in set(s[0].tolist()))
    first = singles[owner][2]
    if int(singles[owner][0][argmax_first(singles[owner][1])]) != first_id:
        # The part's own best differs (a near-tie across parts): fetch u0's column itself.
        sub, _ = shared.load(columns[owner])
        first = sub.features.take(sub.positions_of(np.array([first_id])))
    spans = engine.map(part_distance_span, shared,
                       [DistanceTask(i, c, first_id, first, backend) for i, c in enumerate(columns)])
    return range_of([(float(values.min()), float(values.max()))]), range_of(spans)


def with_ranges(shared: Any, ranges: tuple[float, float]) -> Any:
    """``shared`` whose parts' objective carries ``ranges`` (in-memory or store parts)."""
    if hasattr(shared, "problem"):
        problem = shared.problem
        params = dataclasses.replace(problem.params, ranges=ranges)
        return dataclasses.replace(shared, problem=dataclasses.replace(problem, params=params))
    return dataclasses.replace(shared, ranges=ranges)
