"""Greedy (Algorithm 1) and AltGreedy (Algorithm 2) of Ghadiri & Schmidt (2019).

Both start from the feature with the largest ``g({u})`` and then add, one at a time, the
candidate with the largest

    Greedy:     (1 - lam) c (g(S + u) - g(S))       + lam * sum_{x in S} d(x, u)
    AltGreedy:  (1 - lam) c (g(S + u) - g(S)) / 2   + lam * sum_{x in S} d(x, u)

with ``c = k (k - 1) / (2 p |L|)``. Ties go to the lowest original column index (the paper's
consistent tie-breaking, Definition 1), also inside a partition.

A step costs one distance oracle call (from the newly added feature to every candidate) plus
O(d) vector work; no d x d matrix is ever built.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.entropy import Backend, DistanceOracle
from coreselect.core.objective import ObjectiveParams, RelevanceGains, argmax_first
from coreselect.errors import InputError

#: Called after each greedy step with (step, n_steps).
StepCallback = Callable[[int, int], None]


@dataclass
class GreedyResult:
    """Outcome of one Greedy or AltGreedy run.

    ``selected`` holds original column ids (``column_ids[local]``) in selection order;
    ``local`` the positions within the matrix the run saw.
    """

    selected: np.ndarray
    local: np.ndarray
    objective: float
    relevance: float
    diversity: float
    pair_distances: np.ndarray  # (m, m) distances among the selected, selection order
    seconds: float
    algorithm: str
    extra: dict = field(default_factory=dict)


def greedy(
    features: DiscreteMatrix,
    relevance: np.ndarray,
    params: ObjectiveParams,
    n_select: int | None = None,
    *,
    alternate: bool = False,
    column_ids: np.ndarray | None = None,
    selectable: np.ndarray | None = None,
    backend: Backend = "auto",
    callback: StepCallback | None = None,
    oracle: DistanceOracle | None = None,
) -> GreedyResult:
    """Run Greedy (``alternate=False``) or AltGreedy (``alternate=True``).

    Parameters
    ----------
    features : DiscreteMatrix
        Discretized candidate columns.
    relevance : ndarray, shape (n_columns, n_labels)
        ``MI(x, l)`` of every candidate and label (see :func:`relevance_matrix`).
    params : ObjectiveParams
        ``k`` (for the coefficient), ``lam``, ``p``, ``|L|``.
    n_select : int, optional
        Number of features to pick (default ``params.k``; a distributed part may pick more).
    column_ids : ndarray of int, optional
        Original ids of the columns, used for tie-breaking and in the result; they must be
        increasing so that "lowest local index" is "lowest original index".
    selectable : ndarray of bool, optional
        Columns that may be picked (default: all). Others still count for nothing here.
    oracle : optional
        Distance oracle to use instead of ``DistanceOracle(features)`` (same interface, e.g.
        a row-sharded one).
    """
    start = time.perf_counter()
    d = features.n_columns
    n_select = params.k if n_select is None else int(n_select)
    ids = np.arange(d) if column_ids is None else np.asarray(column_ids, dtype=np.int64)
    if ids.size != d:
        raise ValueError("column_ids must have one id per column")
    if np.any(np.diff(ids) <= 0):
        raise ValueError("column_ids must be strictly increasing (tie-breaking needs it)")
    relevance = np.asarray(relevance, dtype=np.float64)
    if relevance.shape[0] != d:
        raise ValueError("relevance must have one row per column")
    allowed = np.ones(d, dtype=bool) if selectable is None else np.asarray(selectable, bool).copy()
    n_allowed = int(allowed.sum())
    if n_select > n_allowed:
        raise InputError(
            f"cannot select {n_select} features: only {n_allowed} are selectable"
        )

    if oracle is None and n_select > 1:
        oracle = DistanceOracle(features, backend=backend)
    use_numba = oracle.use_numba if oracle is not None else False
    gains = RelevanceGains(relevance, params.p, use_numba=use_numba)
    weight_g = (1.0 - params.lam) * params.coefficient * (0.5 if alternate else 1.0)
    penalty = np.where(allowed, 0.0, -np.inf)
    diversity_to_s = np.zeros(d)

    chosen: list[int] = []
    pair = np.zeros((n_select, n_select))
    diversity = 0.0
    for step in range(n_select):
        if step == 0:
            u = argmax_first(gains.gains + penalty)  # the largest g({u})
        else:
            u = argmax_first(weight_g * gains.gains + params.lam * diversity_to_s + penalty)
        diversity += diversity_to_s[u]
        chosen.append(u)
        penalty[u] = -np.inf
        gains.add(u)
        if oracle is not None:
            dist = oracle.distances_from(u)
            diversity_to_s += dist
            pair[step, :step] = dist[chosen[:-1]]
        if callback is not None:
            callback(step + 1, n_select)
    pair = np.maximum(pair, pair.T)
    local = np.asarray(chosen, dtype=np.int64)
    g_value = gains.value
    return GreedyResult(
        selected=ids[local],
        local=local,
        objective=params.value(g_value, diversity),
        relevance=g_value,
        diversity=diversity,
        pair_distances=pair,
        seconds=time.perf_counter() - start,
        algorithm="altgreedy" if alternate else "greedy",
        extra={"backend": oracle.backend if oracle is not None else "none"},
    )

