"""Tests written for mutants of the range calibration that survived the mutation run
(tests/tools/mutation.py): the rounding-residue floor and the copy rule's tolerance."""

from __future__ import annotations

import dataclasses

import numpy as np

from coreselect.core import Problem
from coreselect.core.entropy import DistanceOracle
from coreselect.core.greedy import COPY_ATOL, step_scores
from coreselect.core.objective import ObjectiveParams


def test_relevance_residue_counts_as_zero_in_range_scores():
    """Gains of 1e-17 (rounding residue once every top-p is full) are 0: min-max scaling must
    not blow them up to the full relevance weight."""
    params = ObjectiveParams(k=3, lam=0.5, p=1, n_labels=1, calibration="range")
    dg = np.array([1e-17, 0.0, 2e-17])
    dd = np.array([1.0, 2.0, 3.0])
    live = np.ones(3, dtype=bool)
    scores = step_scores(params, dg, dd, 2, live, relevance_scale=1.0)
    np.testing.assert_allclose(scores, 0.5 * (dd - 1.0) / 2.0)


def test_range_scores_are_min_max_scaled():
    """A constant offset on every gain changes nothing (the min is subtracted)."""
    params = ObjectiveParams(k=3, lam=0.3, p=1, n_labels=1, calibration="range")
    dg = np.array([0.2, 0.5, 0.9])
    dd = np.array([4.0, 4.5, 6.0])
    live = np.ones(3, dtype=bool)
    expected = 0.7 * (dg - 0.2) / 0.7 + 0.3 * (dd - 4.0) / 2.0
    np.testing.assert_allclose(step_scores(params, dg, dd, 2, live, relevance_scale=1.0), expected)
    np.testing.assert_allclose(step_scores(params, dg, dd + 10.0, 2, live, relevance_scale=1.0),
                               expected)


def test_only_exact_copies_are_skipped():
    """A column that differs from the selected one in a single sample of 50 000 is close
    (distance far below 1e-3) but not a copy (distance above COPY_ATOL): its relevance still
    counts, and at lam = 0.3 it beats the unrelated columns."""
    rng = np.random.default_rng(0)
    n = 50_000
    x0 = rng.integers(0, 2, n)
    x1 = x0.copy()
    x1[0] = 1 - x1[0]
    X = np.column_stack([x0, x1, rng.integers(0, 2, n), rng.integers(0, 2, n)]).astype(float)
    Y = x0[:, None].astype(int)
    problem = Problem.build(X, Y, k=2, lam=0.3, p=10, min_bin_count=1)
    problem = dataclasses.replace(
        problem, params=dataclasses.replace(problem.params, calibration="range"))
    d01 = DistanceOracle(problem.features, backend="numpy").distances_from(0)[1]
    assert COPY_ATOL < d01 < 1e-3
    assert list(problem.run(alternate=True).selected) == [0, 1]


def test_ratio_scores_weigh_relevance_by_one_minus_lam():
    """lam != 0.5, so swapping the two weights shows (the older by-hand test uses 0.5)."""
    params = ObjectiveParams(k=3, lam=0.2, p=1, n_labels=1, calibration="ratio")
    dg = np.array([1.0, 3.0, 5.0])
    dd = np.array([2.0, 2.0, 0.5])
    live = np.ones(3, dtype=bool)
    np.testing.assert_allclose(step_scores(params, dg, dd, 2, live, relevance_scale=5.0),
                               0.8 * np.log(dg) + 0.2 * np.log(dd / 2))
