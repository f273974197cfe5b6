"""Greedy (Algorithm 1) and AltGreedy (Algorithm 2) of Ghadiri & Schmidt (2019).

Both start from the feature with the largest ``g({u})`` and then add, one at a time, the
candidate with the largest

    Greedy:     (1 - lam) c (g(S + u) - g(S))       + lam * sum_{x in S} d(x, u)
    AltGreedy:  (1 - lam) c (g(S + u) - g(S)) / 2   + lam * sum_{x in S} d(x, u)

with ``c = k (k - 1) / (2 p |L|)``. Ties go to the lowest original column index (the paper's
consistent tie-breaking, Definition 1), also inside a partition. That is the ``"paper"``
calibration; ``"fixed"`` is the same with other constant weights (:func:`first_ranges`); the
others rescale the two marginal gains at every step (:func:`step_scores`).

A step costs one distance oracle call (from the newly added feature to every candidate) plus
O(d) vector work; no d x d matrix is ever built.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.entropy import Backend, DistanceOracle, add_distances, shared_information
from coreselect.core.objective import (
    CALIBRATIONS,
    CONDITIONAL,
    FIXED_OBJECTIVE,
    SHARED_INFORMATION,
    TIE_RTOL,
    ObjectiveParams,
    argmax_first,
    relevance_gains,
)
from coreselect.errors import CheckpointError, InputError

#: Relevance gains below this fraction of the largest single-feature relevance are rounding
#: residue of the incremental updates (true gains there are 0).
GAIN_RTOL = 1e-9

#: Distances at most this are copies: the two columns split the samples identically, so a
#: copy of a selected feature adds no information at all.
COPY_ATOL = 1e-9

#: Called after each greedy step with (step, n_steps).
StepCallback = Callable[[int, int], None]


@dataclass
class GreedyState:
    """What a greedy run has done after ``step`` steps: with the same inputs, enough to go on
    and end bit-identically with the uninterrupted run (a resumable run records it; the core
    does no I/O). The relevance gains are not kept: they are replayed from ``selected`` (a
    cheap, exact update per step); the distance sums, which cost one oracle call per step,
    are.

    ``selected``: original column ids (``column_ids``) in selection order;
    ``diversity_to_s``: ``sum_{x in S} d(x, v)`` for every column ``v`` of the run;
    ``copies``: the columns at distance 0 from a selected one; ``pair``: the (step, step)
    distances among the selected; ``diversity``: ``D(S)`` as the run summed it;
    ``information_to_s``: ``sum_{x in S} I(x; v)`` for every column (the ``"information"``
    calibration only, else None). Inside a step callback the arrays are the run's own (copy
    them to keep them).
    """

    step: int
    selected: np.ndarray
    diversity_to_s: np.ndarray
    copies: np.ndarray
    pair: np.ndarray
    diversity: float
    information_to_s: np.ndarray | None = None
    #: What a refusal names (a checkpoint sets its own name).
    origin: str = field(default="the recorded greedy state", compare=False)


#: Called after each greedy step with the run's state (to record it).
StateCallback = Callable[[GreedyState], None]


def _spread_scaled(values: np.ndarray, live: np.ndarray, how: str,
                   floor: float = 0.0) -> np.ndarray:
    """``values`` divided by their spread over the ``live`` candidates (std, or max - min
    after subtracting the min, at least ``floor``); all zeros where the candidates do not
    differ."""
    vals = values[live]
    if how == "range":
        low = vals.min()
        spread = max(vals.max() - low, floor)
        return (values - low) / spread if spread > 0 else np.zeros_like(values)
    spread = vals.std()
    return values / spread if spread > 0 else np.zeros_like(values)


def span(values: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """``(min, max)`` of ``values`` over ``mask`` (``(inf, -inf)`` over nothing): parts' spans
    combine by min and max, so ranges over a partition equal the whole data's."""
    vals = np.asarray(values)[np.asarray(mask, dtype=bool)]
    return (float(vals.min()), float(vals.max())) if vals.size else (np.inf, -np.inf)


def range_of(spans) -> float:
    """``max - min`` of combined :func:`span` results (0 over nothing)."""
    spans = list(spans)
    low, high = min(s[0] for s in spans), max(s[1] for s in spans)
    return float(high - low) if high >= low else 0.0


def first_ranges(relevance, selectable: np.ndarray, distances_from: Callable[[int], np.ndarray],
                 ) -> tuple[tuple[float, float], int]:
    """The ``"fixed"`` calibration's ranges ``(R_g, R_D)`` of a whole problem, and its first
    pick ``u0``: ``R_g`` is the range of ``g({v})`` (the first step's relevance gains) over the
    selectable columns, ``R_D`` the range of ``d(u0, v)`` (the second step's diversity gains)
    over the other selectable columns. The greedy measures the same inline."""
    selectable = np.asarray(selectable, dtype=bool)
    singles = relevance_gains(relevance, 1).gains
    first = argmax_first(np.where(selectable, singles, -np.inf))
    others = selectable.copy()
    others[first] = False
    r_d = range_of([span(distances_from(first), others)]) if others.any() else 0.0
    return (range_of([span(singles, selectable)]), r_d), first


def step_scores(
    params: ObjectiveParams,
    relevance_gains: np.ndarray,
    diversity_gains: np.ndarray,
    n_selected: int,
    live: np.ndarray | None,
    *,
    alternate: bool = False,
    relevance_scale: float | None = None,
) -> np.ndarray:
    """Score of every candidate in one greedy step after the first (larger is better).

    ``relevance_gains`` is ``g(S + v) - g(S)``, ``diversity_gains`` is
    ``sum_{x in S} d(x, v)`` (``"information"``: ``-sum_{x in S} I(x; v)``, scaled as
    ``"range"`` scales the distances), ``n_selected = |S| >= 1`` and ``live`` marks the candidates
    still selectable (only they set the spreads). O(d), like the rest of the step.
    ``relevance_scale`` (the largest ``g({v})``; default the largest live gain) sets the
    size below which a relevance gain is float rounding and counts as 0: a spread or a
    logarithm would otherwise blow such residues up once every label's top-p is full.

    ``"paper"`` is eq. (2) (AltGreedy halves the relevance weight). The calibrated scores
    (``"spread"``, ``"range"``, ``"ratio"``; see :data:`CALIBRATIONS`) are unchanged when
    every MI is multiplied by the same constant (bits to nats), and AltGreedy's halving is
    not applied to them: its only purpose is the paper's approximation bound, which an
    adaptive per-step weight does not keep anyway.

    What the calibrations keep of the paper's structure: ``g`` is still the monotone
    submodular top-p relevance and ``D`` still a sum of metric distances; every step still
    adds the candidate that maximizes a non-negative combination of the two *marginal gains*.
    What they give up: the weights of the combination change from step to step (spreads
    over the candidates, or a product), so the selection no longer greedily maximizes one
    fixed set function ``h`` and the paper's bounds (1/2 for AltGreedy, 1/31 for
    Algorithm 3) do not apply.
    """
    how = params.calibration
    lam = params.lam
    if how == "paper":
        weight_g = (1.0 - lam) * params.coefficient * (0.5 if alternate else 1.0)
        return weight_g * relevance_gains + lam * diversity_gains
    if how == "fixed":  # eq. (2)'s form, weights fixed for the run (AltGreedy halves, too)
        weight_g, weight_d = params.weights
        return weight_g * (0.5 if alternate else 1.0) * relevance_gains + weight_d * diversity_gains
    if relevance_scale is None:
        relevance_scale = float(relevance_gains[live].max()) if live.any() else 0.0
    relevance_gains = np.where(relevance_gains > GAIN_RTOL * relevance_scale, relevance_gains, 0.0)
    if how in ("spread", "range", "information"):
        scaling = "spread" if how == "spread" else "range"
        return ((1.0 - lam) * _spread_scaled(relevance_gains, live, scaling)
                + lam * _spread_scaled(diversity_gains, live, scaling))
    if how == "balanced":
        # As "range", but the diversity gains are scaled by at least one distance unit (the
        # diversity one fully independent feature adds): candidates whose distance sums differ
        # by a fraction of a distance are nearly equally diverse, and min-max scaling alone
        # would blow that fraction up to the full weight of the term.
        return ((1.0 - lam) * _spread_scaled(relevance_gains, live, "range")
                + lam * _spread_scaled(diversity_gains, live, "range", floor=1.0))
    if how == "ratio":
        # log of dg^(1-lam) * mean_d^lam; a zero relevance gain scores -inf unless no
        # candidate gains anything, then the mean distance alone decides.
        mean_d = np.maximum(diversity_gains / n_selected, 1e-300)
        if lam >= 1.0 or not np.any(relevance_gains[live] > 0):
            return np.log(mean_d)
        with np.errstate(divide="ignore"):
            return (1.0 - lam) * np.log(relevance_gains) + lam * np.log(mean_d)
    raise ValueError(f"unknown calibration {how!r}; choose from {CALIBRATIONS}")


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
    start: GreedyState | None = None,
    on_step: StateCallback | None = None,
) -> GreedyResult:
    """Run Greedy (``alternate=False``) or AltGreedy (``alternate=True``).

    Parameters
    ----------
    features : DiscreteMatrix
        Discretized candidate columns.
    relevance : ndarray, shape (n_columns, n_labels), or SparseRelevance
        ``MI(x, l)`` of every candidate and label (see :func:`relevance_matrix`), dense or in
        the sparse form of :mod:`coreselect.core.sparse_relevance`.
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
    start : GreedyState, optional
        A state ``on_step`` gave in an earlier run on the same inputs: the run goes on from
        it and ends as the uninterrupted run would, bit for bit.
    on_step : callable, optional
        Called with the :class:`GreedyState` after every step.
    """
    began = time.perf_counter()
    d = features.n_columns
    n_select = params.k if n_select is None else int(n_select)
    ids = np.arange(d) if column_ids is None else np.asarray(column_ids, dtype=np.int64)
    if ids.size != d:
        raise ValueError("column_ids must have one id per column")
    if np.any(np.diff(ids) <= 0):
        raise ValueError("column_ids must be strictly increasing (tie-breaking needs it)")
    if not hasattr(relevance, "gains_state"):  # a SparseRelevance stays as it is
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
    # At most n_select features are ever selected, so the top-min(p, n_select) gains equal the
    # top-p ones without a table of p columns when p is huge (the default's p counts every
    # selected feature). Eq. (2) and "fixed" keep their table as it was: their reported g
    # stays the same sum, bit for bit.
    width = params.p if params.calibration in FIXED_OBJECTIVE else min(params.p, max(n_select, 1))
    gains = relevance_gains(relevance, width, use_numba=use_numba)
    if params.calibration in CONDITIONAL:  # no distance step: Problem.run runs it
        raise InputError(f"calibration={params.calibration!r} is not a weighing of a distance "
                         "greedy; only a centralized selection runs it")
    if params.calibration not in CALIBRATIONS:
        raise InputError(f"unknown calibration {params.calibration!r}; choose from {CALIBRATIONS}")
    # "information": the redundancy of a candidate is the information it shares with S, from
    # the same distance oracle calls (the entropies turn a distance into bits).
    informed = params.calibration in SHARED_INFORMATION
    information_to_s = np.zeros(d) if informed else None
    penalty = np.where(allowed, 0.0, -np.inf)
    # Per-step calibrations skip copies of selected features (distance 0) while anything else
    # is left: min-max scaling gives a copy of the most relevant feature the full relevance
    # score until its labels' top-p fill up, whatever its (zero) distance. A fixed objective
    # (eq. (2), "fixed") is maximized as the paper does, copies included.
    per_step = params.calibration not in FIXED_OBJECTIVE
    skip_copies = per_step
    # "fixed" without ranges: this run sees the whole data (a centralized run) and measures
    # them on its first two steps; Algorithm 3's parts get the whole data's from the caller.
    measure = params.calibration == "fixed" and params.ranges is None
    if measure:
        r_g = range_of([span(gains.gains, allowed)])
        params = dataclasses.replace(params, ranges=(r_g, 0.0))
    copies = np.zeros(d, dtype=bool)
    diversity_to_s = np.zeros(d)
    scale = float(gains.gains[allowed].max()) if n_allowed else 0.0

    chosen: list[int] = []
    pair = np.zeros((n_select, n_select))
    diversity = 0.0
    first = 0
    if start is not None:
        first, diversity = _resume(start, ids, d, n_select, allowed, penalty, gains, chosen,
                                   pair, diversity_to_s, copies, information_to_s)
        verify_state(start, features, oracle, chosen, skip_copies, informed)
        if measure and first > 0 and oracle is not None:  # R_D as step 0 measured it
            others = allowed.copy()
            others[chosen[0]] = False
            params = dataclasses.replace(params, ranges=(
                params.ranges[0], range_of([span(oracle.distances_from(chosen[0]), others)])))
    pick = _compiled_pick(params, use_numba, alternate)

    def spread_of() -> np.ndarray:
        # What the diversity term scores: the distances to S, or (information) minus the
        # bits shared with S.
        return -information_to_s if informed else diversity_to_s

    for step in range(first, n_select):
        if step == 0:
            u = argmax_first(gains.gains + penalty)  # the largest g({u})
        elif pick is not None:
            u = pick(gains.gains, spread_of(), penalty, copies, skip_copies, GAIN_RTOL * scale)
        else:
            live = penalty == 0.0 if per_step else None
            if skip_copies and np.any(live & ~copies):
                live &= ~copies
            scores = step_scores(params, gains.gains, spread_of(), step, live,
                                 alternate=alternate, relevance_scale=scale)
            u = argmax_first(scores + (penalty if live is None else np.where(live, 0.0, -np.inf)))
        diversity += diversity_to_s[u]
        chosen.append(u)
        penalty[u] = -np.inf
        gains.add(u)
        if oracle is not None:
            dist = _add_step(oracle, u, diversity_to_s, information_to_s,
                             copies if skip_copies else None)
            if measure and step == 0:
                params = dataclasses.replace(
                    params, ranges=(params.ranges[0], range_of([span(dist, penalty == 0.0)])))
            pair[step, :step] = dist[chosen[:-1]]
        if on_step is not None:
            on_step(GreedyState(step + 1, ids[np.asarray(chosen, dtype=np.int64)],
                                diversity_to_s, copies, pair[:step + 1, :step + 1], diversity,
                                information_to_s))
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
        seconds=time.perf_counter() - began,
        algorithm="altgreedy" if alternate else "greedy",
        extra={"backend": oracle.backend if oracle is not None else "none",
               "resumed_from_step": first,
               **({"ranges": params.ranges} if params.calibration == "fixed" else {})},
    )


def _add_step(oracle, u: int, diversity_to_s: np.ndarray, information_to_s: np.ndarray | None,
              copies: np.ndarray | None) -> np.ndarray:
    """The distances from the new pick ``u``, added to the step sums (``copies`` marks the
    candidates within COPY_ATOL of ``u``): in the oracle's own pass when it has one."""
    add = getattr(oracle, "add_distances_from", None)
    if add is not None:
        return add(u, diversity_to_s, information_to_s, copies, COPY_ATOL)
    dist = oracle.distances_from(u)
    add_distances(dist, float(oracle.entropies[u]), oracle.entropies, diversity_to_s,
                  information_to_s, copies, COPY_ATOL, use_numba=oracle.use_numba)
    return dist


def _compiled_pick(params: ObjectiveParams, use_numba: bool, alternate: bool):
    """The compiled form of a step's :func:`step_scores` and :func:`argmax_first` for the
    min-max calibrations (``"information"``, the default, passes minus its information sums
    as the diversity), or None: one pass over the candidates instead of a
    dozen numpy temporaries (the same bits and the same pick; a fifth of a step at 30,000
    candidates)."""
    if not use_numba or params.calibration not in ("range", "balanced", "information"):
        return None
    from coreselect.core._numba import range_pick

    floor_d = 1.0 if params.calibration == "balanced" else 0.0
    lam = float(params.lam)
    scores = np.empty(0)

    def pick(gains, diversity, penalty, copies, skip_copies, gain_floor) -> int:
        nonlocal scores
        if scores.size != gains.size:
            scores = np.empty(gains.size)
        return int(range_pick(gains, diversity, penalty, copies, skip_copies, gain_floor, lam,
                              floor_d, TIE_RTOL, scores))

    return pick


def _resume(state: GreedyState, ids: np.ndarray, d: int, n_select: int, allowed: np.ndarray,
            penalty: np.ndarray, gains, chosen: list, pair: np.ndarray,
            diversity_to_s: np.ndarray, copies: np.ndarray,
            information_to_s: np.ndarray | None = None) -> tuple[int, float]:
    """Put the run where ``state`` left it: the relevance gains replayed (the same updates in
    the same order, so the same bits), the distance sums and pair distances restored."""
    step = int(state.step)
    selected = np.asarray(state.selected, dtype=np.int64)
    local = np.searchsorted(ids, selected)
    if (not 0 <= step <= n_select or selected.shape != (step,)
            or np.asarray(state.diversity_to_s).shape != (d,)
            or np.asarray(state.copies).shape != (d,)
            or np.asarray(state.pair).shape != (step, step)
            or np.any(local >= d) or np.any(ids[np.minimum(local, d - 1)] != selected)
            or np.unique(local).size != step or not np.all(allowed[local])
            or (information_to_s is not None
                and np.shape(state.information_to_s) != (d,))):
        raise CheckpointError(f"{state.origin} does not fit this run (other columns, repeated "
                              "picks or another number of steps)")
    if step and int(local[0]) != argmax_first(gains.gains + penalty):
        # the first pick is the most relevant column: checked against the relevances
        raise CheckpointError(f"{state.origin} is contradicted by the data (its first pick "
                              "is not the most relevant column); delete it to start afresh")
    for u in local:
        chosen.append(int(u))
        penalty[u] = -np.inf
        gains.add(int(u))
    diversity_to_s[:] = state.diversity_to_s
    if information_to_s is not None:
        information_to_s[:] = state.information_to_s
    copies[:] = state.copies
    pair[:step, :step] = state.pair
    return step, float(state.diversity)



#: How far a recorded distance or sum may be from the one recomputed (other kernels and
#: another order of additions round differently; a distance lies in [0, 1]).
STATE_ATOL = 1e-7


def verify_state(state: GreedyState, features, oracle, local: list, skip_copies: bool,
                 informed: bool) -> None:
    """Refuse a recorded state that the data contradict (:class:`CheckpointError`): what is
    cheap to check against the data, O(k^2) joint counts (in memory: the picks' pairwise
    distances; row-sharded: one step's counts, the last pick's distances). Finite sums, a
    lower-triangular pair table of distances in [0, 1] that the data give again, every pick
    at distance 0 from itself (a copy), ``D`` and the picks' distance (and shared-information)
    sums equal to what the pair table adds up to. What it cannot see: sums over the columns
    not picked (each would cost a pass over the data per pick)."""
    step = len(local)

    def refuse(why: str) -> CheckpointError:
        return CheckpointError(f"{state.origin} is contradicted by the data ({why}); delete "
                               "it to start the run afresh")

    arrays = [np.asarray(state.diversity_to_s, dtype=np.float64),
              np.asarray(state.pair, dtype=np.float64), np.float64(state.diversity)]
    if informed:
        arrays.append(np.asarray(state.information_to_s, dtype=np.float64))
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise refuse("sums that are not finite")
    pair = arrays[1]
    if np.any(pair < 0) or np.any(pair > 1 + STATE_ATOL) or np.any(np.triu(pair) != 0):
        raise refuse("a pair table that is not of distances between earlier and later picks")
    if np.any(arrays[0] < -STATE_ATOL):
        raise refuse("negative distance sums")
    full = pair + pair.T
    picks = np.asarray(local, dtype=np.int64)
    if step and oracle is not None:
        if isinstance(features, DiscreteMatrix):
            from coreselect.core.entropy import pairwise_distances

            again = pairwise_distances(features.take(picks))
            if not np.allclose(again, full, rtol=0, atol=STATE_ATOL):
                raise refuse("the picks' pairwise distances differ from the data's")
        elif step >= 2:  # row-sharded: one step's counts give the last pick's distances
            again = np.asarray(oracle.distances_from(int(picks[-1])))[picks]
            if not np.allclose(again, full[-1], rtol=0, atol=STATE_ATOL):
                raise refuse("the last pick's distances differ from the data's")
        if not np.allclose(arrays[0][picks], full.sum(axis=0), rtol=1e-9, atol=STATE_ATOL):
            raise refuse("the picks' distance sums differ from their pair distances")
        if skip_copies and not np.all(np.asarray(state.copies, dtype=bool)[picks]):
            raise refuse("a pick not marked as a copy of itself")
        if informed:
            h = np.asarray(oracle.entropies, dtype=np.float64)[picks]
            shared = sum(shared_information(full[i], float(h[i]), h) for i in range(step))
            if not np.allclose(arrays[3][picks], shared, rtol=1e-9, atol=STATE_ATOL):
                raise refuse("the picks' shared-information sums differ from their distances")
    if not np.isclose(float(arrays[2]), float(np.tril(pair).sum()), rtol=1e-9,
                      atol=STATE_ATOL * max(step, 1) ** 2):
        raise refuse("D differs from the sum of the pair distances")
