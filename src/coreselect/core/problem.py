"""A selection problem: discretized features and labels, relevance matrix, objective
parameters. Engines (local, Dask, streaming) take parts of it and call the greedy on them."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix, Strategy, discretize, discretize_labels
from coreselect.core.entropy import (
    Backend,
    DistanceOracle,
    Relevance,
    pairwise_distances,
    relevance_matrix,
)
from coreselect.core.greedy import (
    GreedyResult,
    GreedyState,
    StateCallback,
    StepCallback,
    first_ranges,
    greedy,
)
from coreselect.core import objective as _objective
from coreselect.core.objective import ObjectiveParams, default_p, relevance_of
from coreselect.core.sparse_relevance import SparseRelevance, choose_backend
from coreselect.errors import InputError

log = logging.getLogger(__name__)


@dataclass
class Problem:
    """Everything the greedy needs about a set of candidate columns.

    ``column_ids`` are the columns' original indices (increasing); ``selectable`` marks the
    columns that may be picked (constant columns are not, unless ``keep_constant``).
    """

    features: DiscreteMatrix
    labels: DiscreteMatrix
    relevance: np.ndarray | SparseRelevance
    params: ObjectiveParams
    column_ids: np.ndarray
    selectable: np.ndarray
    timings: dict = field(default_factory=dict)  # seconds per preparation stage

    @property
    def relevance_backend(self) -> str:
        """``"sparse"`` (:mod:`coreselect.core.sparse_relevance`) or ``"dense"``."""
        return "sparse" if isinstance(self.relevance, SparseRelevance) else "dense"

    @classmethod
    def build(
        cls,
        X: np.ndarray | sp.spmatrix,
        Y: np.ndarray | sp.spmatrix,
        *,
        k: int,
        lam: float = 0.5,
        p: int | None = 10,
        relevance: Relevance = "mi",
        n_bins: int | str = "auto",
        strategy: Strategy = "auto",
        min_bin_count: int = 10,
        keep_constant: bool = False,
        calibration: str = "paper",
        labels: DiscreteMatrix | None = None,
        column_ids: np.ndarray | None = None,
        relevance_backend: str = "auto",
    ) -> "Problem":
        """Discretize ``X`` (and ``Y`` unless ``labels`` is given) and compute relevances."""
        if Y is not None and X.shape[0] != Y.shape[0]:
            raise InputError(f"X has {X.shape[0]} samples but Y has {Y.shape[0]}")
        start = time.perf_counter()
        features = discretize(X, n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count)
        if labels is None:
            labels = discretize_labels(Y)
        seconds = time.perf_counter() - start
        log.info("discretized %d x %d features in %.3f s", *features.codes.shape, seconds)
        problem = cls.from_discrete(features, labels, k=k, lam=lam, p=p, relevance=relevance,
                                    keep_constant=keep_constant, calibration=calibration,
                                    column_ids=column_ids, relevance_backend=relevance_backend)
        problem.timings["discretize"] = seconds
        return problem

    @classmethod
    def from_discrete(
        cls,
        features: DiscreteMatrix,
        labels: DiscreteMatrix,
        *,
        k: int,
        lam: float = 0.5,
        p: int | None = 10,
        relevance: Relevance = "mi",
        keep_constant: bool = False,
        calibration: str = "paper",
        column_ids: np.ndarray | None = None,
        relevance_backend: str = "auto",
        progress: Callable[[int, int], None] | None = None,
        known_relevance: Any = None,
    ) -> "Problem":
        """Compute the relevances of discretized columns. The core's default ``calibration``
        is the paper's eq. (2), as :class:`ObjectiveParams`'; the library's default
        (:data:`~coreselect.core.objective.DEFAULT_CALIBRATION`) is chosen one layer up, in
        :class:`coreselect.selection.spec.Objective`. ``relevance_backend``: ``"dense"`` (the features
        x labels matrix), ``"sparse"`` (co-occurring pairs plus closed forms, binary labels
        only; same selection) or ``"auto"``
        (:func:`~coreselect.core.sparse_relevance.choose_backend`). ``progress(done, total)``:
        called as the sparse relevance's blocks of labels are done. ``known_relevance``: the
        relevances of these features and labels computed before (a dense matrix or a
        :class:`SparseRelevance`, as this method makes them; a resumed run's), used as
        they are. ``p`` None: the calibration's for ``k`` and these labels
        (:func:`~coreselect.core.objective.default_p`)."""
        if features.n_samples != labels.n_samples:
            raise InputError(
                f"X has {features.n_samples} samples but Y has {labels.n_samples}"
            )
        ids = (np.arange(features.n_columns) if column_ids is None
               else np.asarray(column_ids, dtype=np.int64))
        selectable = np.ones(features.n_columns, dtype=bool)
        if not keep_constant:
            selectable &= ~features.is_constant
        start = time.perf_counter()
        if known_relevance is not None:
            if tuple(known_relevance.shape) != (features.n_columns, labels.n_columns):
                raise InputError("the known relevance does not fit the features and labels")
            matrix, how = known_relevance, "known"
        else:
            try:
                how = choose_backend(features, labels, relevance_backend)
            except ValueError as exc:
                raise InputError(str(exc)) from None
            if how == "sparse":
                matrix = SparseRelevance(features, labels, relevance, progress=progress)
            else:
                matrix = relevance_matrix(features, labels, relevance)
        seconds = time.perf_counter() - start
        log.info("relevance (%s, %s) of %d features to %d labels in %.3f s", relevance, how,
                 features.n_columns, labels.n_columns, seconds)
        return cls(
            features=features,
            labels=labels,
            relevance=matrix,
            params=ObjectiveParams(k=int(k), lam=float(lam),
                                   p=int(default_p(calibration, int(k), labels.n_columns)
                                         if p is None else p),
                                   n_labels=labels.n_columns, calibration=calibration),
            column_ids=ids,
            selectable=selectable,
            timings={"relevance": seconds},
        )

    @property
    def n_columns(self) -> int:
        return self.features.n_columns

    def subproblem(self, positions: np.ndarray) -> "Problem":
        """The problem restricted to some columns (positions into this problem, any order);
        columns are kept in increasing original-id order so tie-breaking stays consistent."""
        positions = np.asarray(positions, dtype=np.int64)
        positions = positions[np.argsort(self.column_ids[positions], kind="stable")]
        return Problem(
            features=self.features.take(positions),
            labels=self.labels,
            relevance=(self.relevance.take(positions)
                       if isinstance(self.relevance, SparseRelevance)
                       else take_rows(self.relevance, positions)),
            params=self.params,
            column_ids=self.column_ids[positions],
            selectable=self.selectable[positions],
        )

    def positions_of(self, ids: np.ndarray) -> np.ndarray:
        """Positions of the given original column ids in this problem."""
        pos = np.searchsorted(self.column_ids, ids)
        if np.any(pos >= self.column_ids.size) or np.any(self.column_ids[np.minimum(pos, self.column_ids.size - 1)] != ids):
            raise KeyError("some column ids are not in this problem")
        return pos

    def run(self, n_select: int | None = None, *, alternate: bool, backend: Backend = "auto",
            callback: StepCallback | None = None, start: GreedyState | None = None,
            on_step: StateCallback | None = None) -> GreedyResult:
        """Greedy or AltGreedy on all columns of this problem. Callers check ``n_select``
        against the selectable columns with a helpful message (the strategies do, in one
        place); the greedy itself only refuses. ``start`` / ``on_step``: resume from, and
        report, the greedy's state (:func:`~coreselect.core.greedy.greedy`)."""
        n_select = self.params.k if n_select is None else n_select
        # Columns that can never be picked play no part in g or D: leave them out entirely
        # (on text data most columns are constant, so this more than halves every step).
        # The sparse relevance's subproblem copies every co-occurring pair: worth it only when
        # most columns go (the greedy's selectable mask gives the same selection).
        keep_all = self.selectable.all() or (
            isinstance(self.relevance, SparseRelevance) and self.selectable.mean() > 0.5)
        problem = self if keep_all else self.subproblem(np.flatnonzero(self.selectable))
        if self.params.calibration in _objective.CONDITIONAL:
            if start is not None or on_step is not None:
                raise InputError(f"calibration={self.params.calibration!r} does not record or "
                                 "resume a greedy state (checkpoints)")
            result = problem._conditional(n_select, callback)
        else:
            result = greedy(problem.features, problem.relevance, problem.params, n_select,
                            alternate=alternate, column_ids=problem.column_ids,
                            selectable=problem.selectable, backend=backend, callback=callback,
                            start=start, on_step=on_step)
        if problem is not self:
            result.local = self.positions_of(result.selected)  # positions in this problem
        log.info("%s selected %d of %d columns in %.3f s (h = %.6g)", result.algorithm,
                 n_select, self.n_columns, result.seconds, result.objective)
        return result

    def _conditional(self, n_select: int, callback: StepCallback | None) -> GreedyResult:
        """The CMIM greedy (:mod:`coreselect.core.conditional`) as a :class:`GreedyResult`:
        ``objective`` the sum of the picks' criterion values (bits), ``relevance`` and
        ``diversity`` the selection's ``g`` and pairwise distance sum, as for the others."""
        from coreselect.core.conditional import cmim, conditional_result

        began = time.perf_counter()
        local, values = cmim(self.features, self.labels, n_select, selectable=self.selectable,
                             callback=callback)
        pair = pairwise_distances(self.features.take(local)) if local.size else np.zeros((0, 0))
        return conditional_result(self.column_ids[local], local, values, self.relevance,
                                  self.params.p, pair, time.perf_counter() - began,
                                  self.params.calibration)

    def with_ranges(self) -> "Problem":
        """This problem with the ``"fixed"`` calibration's ranges measured on its columns (call
        it on the whole data: a part must carry the whole data's); itself otherwise."""
        if self.params.calibration != "fixed" or self.params.ranges is not None:
            return self
        oracle = DistanceOracle(self.features)
        ranges, _ = first_ranges(self.relevance, self.selectable, oracle.distances_from)
        return dataclasses.replace(self, params=dataclasses.replace(self.params, ranges=ranges))

    def evaluate(self, ids: np.ndarray) -> tuple[float, float, float]:
        """``(h, g, D)`` of a set of original column ids, recomputed from scratch."""
        pos = self.positions_of(np.asarray(ids, dtype=np.int64))
        g_value = relevance_of(self.relevance, pos, self.params.p)
        dist = pairwise_distances(self.features.take(pos))
        diversity = float(np.triu(dist, 1).sum())
        return self.with_ranges().params.value(g_value, diversity), g_value, diversity


def take_rows(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``matrix[rows]`` in the matrix's memory order: a fancy index of a column-major matrix
    (the relevance, which the greedy reads one label at a time) returns it row-major, and
    the greedy would copy it back."""
    if matrix.ndim != 2 or not matrix.flags.f_contiguous or matrix.flags.c_contiguous:
        return matrix[rows]
    out = np.empty((matrix.shape[1], rows.size), dtype=matrix.dtype).T
    for column in range(matrix.shape[1]):
        np.take(matrix[:, column], rows, out=out[:, column])
    return out


def centralized(problem: Problem, *, backend: Backend = "auto",
                callback: StepCallback | None = None) -> GreedyResult:
    """The paper's centralized baseline (CGDS): AltGreedy over every feature."""
    return problem.run(alternate=True, backend=backend, callback=callback)
