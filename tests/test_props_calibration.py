"""Calibrations of the greedy step against a slow reference written from their definitions
(tests/reference.py ``calibrated_scores``, ``greedy_calibrated``), never from ``step_scores``.

The dimensions that vary: which candidates are live (selected ones, dead, hold extreme gains
that must not set any spread), how spread the live gains are (a diversity spread below one
distance, where ``balanced``'s floor acts; no live relevance gain at all, where ``ratio``
falls back to the mean distance; rounding residues of relevance), lam (0 to 1), |S|, and
AltGreedy or Greedy. Then whole selections under each calibration on random data.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from coreselect.core import Problem
from coreselect.core.greedy import step_scores
from coreselect.core.objective import CALIBRATIONS, FIXED_OBJECTIVE, ObjectiveParams

PROPS = settings(max_examples=150, deadline=None, derandomize=True)
CALIBRATED = [c for c in CALIBRATIONS if c != "paper"]
# dead (selected) candidates hold values no live one has
EXTREMES = (0.0, 1e6, -1e6, 1e-300, 50.0)


@st.composite
def steps(draw, how=None):
    d = draw(st.integers(2, 12))
    live = np.array(draw(st.lists(st.booleans(), min_size=d, max_size=d)))
    if not live.any():
        live[draw(st.integers(0, d - 1))] = True
    if live.all() and d > 1:
        live[draw(st.integers(0, d - 1))] = False
    gain = st.floats(0.0, 5.0, allow_nan=False, allow_infinity=False)
    dg = np.array(draw(st.lists(gain, min_size=d, max_size=d)))
    dd = np.array(draw(st.lists(st.floats(0.0, 8.0), min_size=d, max_size=d)))
    shape = draw(st.sampled_from(["plain", "no-relevance", "residue", "narrow-diversity",
                                  "zeros", "equal"]))
    if shape == "no-relevance":  # no live candidate gains relevance (the dead ones do)
        dg[live] = 0.0
    elif shape == "residue":  # rounding residues of gains that are really 0
        dg[live] = draw(st.sampled_from([1e-17, 3e-12, 0.0]))
        dg[np.flatnonzero(live)[0]] = draw(st.sampled_from([0.0, 2e-16, 0.7]))
    elif shape == "narrow-diversity":  # live distance sums within less than one distance
        base = draw(st.floats(0.0, 6.0))
        width = draw(st.sampled_from([0.0, 0.01, 0.3, 0.9, 0.999]))
        dd[live] = base + width * np.linspace(0.0, 1.0, int(live.sum()))[
            np.argsort(dd[live], kind="stable")]
    elif shape == "zeros":
        dg[live & (np.arange(d) % 2 == 0)] = 0.0
    elif shape == "equal":  # live gains all equal (dyadic: the spreads are exactly 0)
        dg[live] = draw(st.sampled_from([0.0, 0.5, 2.0]))
        dd[live] = draw(st.sampled_from([0.0, 1.0, 1.5]))
    for arr in (dg, dd):
        arr[~live] = draw(st.sampled_from(EXTREMES))
    lam = draw(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.75, 1.0]))
    n_selected = draw(st.integers(1, 6))
    scale = draw(st.sampled_from([None, 1.0, 4.0]))
    alternate = draw(st.booleans())
    return dg, dd, live, lam, n_selected, scale, alternate


def _compare(how, dg, dd, live, lam, n_selected, scale, alternate, k=6, p=2, n_labels=3,
             ranges=(0.7, 1.3)):
    params = ObjectiveParams(k=k, lam=lam, p=p, n_labels=n_labels, calibration=how,
                             ranges=ranges)
    fast = step_scores(params, dg.copy(), dd.copy(), n_selected,
                       live if how not in FIXED_OBJECTIVE else None, alternate=alternate,
                       relevance_scale=scale)
    ids = np.flatnonzero(live)
    slow = ref.calibrated_scores(how, {int(u): float(dg[u]) for u in ids},
                                 {int(u): float(dd[u]) for u in ids}, n_selected, lam,
                                 params.coefficient, alternate, relevance_scale=scale,
                                 ranges=ranges)
    expected = np.array([slow[int(u)] for u in ids])
    np.testing.assert_allclose(fast[ids], expected, rtol=1e-9, atol=1e-9,
                               err_msg=f"{how}: dg={dg}, dd={dd}, live={live}, lam={lam}")


@pytest.mark.parametrize("how", CALIBRATIONS)
@PROPS
@given(step=steps(), ranges=st.sampled_from([(0.7, 1.3), (0.0, 0.25), (3.0, 0.0)]))
def test_step_scores_equal_the_definitions(how, step, ranges):
    _compare(how, *step, ranges=ranges)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")  # dead ones, huge
@pytest.mark.parametrize("how", CALIBRATED)
@PROPS
@given(step=steps())
def test_dead_candidates_set_no_spread(how, step):
    """Changing what the dead candidates hold changes no live score."""
    dg, dd, live, lam, n_selected, scale, alternate = step
    params = ObjectiveParams(k=6, lam=lam, p=2, n_labels=3, calibration=how, ranges=(0.7, 1.3))
    scale = 1.0 if scale is None else scale  # (by default the scale is a live maximum too)
    a = step_scores(params, dg, dd, n_selected, live, alternate=alternate, relevance_scale=scale)
    dg2, dd2 = dg.copy(), dd.copy()
    dg2[~live] = 1e9
    dd2[~live] = -1e9
    b = step_scores(params, dg2, dd2, n_selected, live, alternate=alternate,
                    relevance_scale=scale)
    np.testing.assert_array_equal(a[live], b[live])


# -- the cases the docstrings single out, each over the dimension that varies ---------------
@pytest.mark.parametrize("width", [0.0, 0.2, 0.5, 0.99])
@pytest.mark.parametrize("lam", [0.25, 0.5, 0.9])
def test_balanced_floor_of_one_distance(width, lam):
    """Live distance sums within ``width < 1`` of each other weigh ``width`` at most (the
    floor of one distance), not the full diversity weight as min-max scaling would."""
    params = ObjectiveParams(k=5, lam=lam, p=1, n_labels=1, calibration="balanced")
    dg = np.array([0.4, 0.1, 0.9, 7.0])
    dd = np.array([3.0, 3.0 + width, 3.0 + width / 2, 100.0])
    live = np.array([True, True, True, False])
    s = step_scores(params, dg, dd, 2, live, relevance_scale=1.0)
    np.testing.assert_allclose(s[:3], (1 - lam) * (dg[:3] - 0.1) / 0.8 + lam * (dd[:3] - 3.0))


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("residue", [0.0, 1e-18, 1e-12])
def test_ratio_falls_back_to_the_mean_distance(lam, residue):
    """No live candidate gains relevance (dead ones may): the mean distance decides."""
    params = ObjectiveParams(k=5, lam=lam, p=1, n_labels=1, calibration="ratio")
    dg = np.array([residue, 0.0, residue, 3.0])
    dd = np.array([1.0, 2.5, 0.5, 9.0])
    live = np.array([True, True, True, False])
    s = step_scores(params, dg, dd, 2, live, relevance_scale=1.0)
    np.testing.assert_allclose(s[:3], np.log(dd[:3] / 2))
    assert int(np.argmax(np.where(live, s, -np.inf))) == 1


@pytest.mark.parametrize("dead", [0.0, 50.0, -50.0])
def test_spread_std_over_live_candidates_only(dead):
    params = ObjectiveParams(k=5, lam=0.5, p=1, n_labels=1, calibration="spread")
    dg = np.array([1.0, 2.0, 3.0, dead])
    dd = np.array([2.0, 4.0, 4.0, dead])
    live = np.array([True, True, True, False])
    s = step_scores(params, dg, dd, 2, live, relevance_scale=1.0)
    np.testing.assert_allclose(s[:3], 0.5 * dg[:3] / np.std(dg[:3]) + 0.5 * dd[:3] / np.std(dd[:3]))


# -- whole selections --------------------------------------------------------------------------
def _data(seed: int, n=60, d=9, n_labels=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, d)).astype(float)
    Y = (rng.random((n, n_labels)) < 0.4).astype(int)
    X[:, 0] = Y[:, 0] * 2 + (rng.random(n) < 0.2)
    X[:, 3] = X[:, 0]  # a copy of a relevant column
    if seed % 2:
        X[:, 5] = Y[:, 1]  # a label itself: its top-p fills and gains stop
        X[:, 6] = Y[:, 1]
    return X, Y


@pytest.mark.parametrize("calibration", CALIBRATIONS)
@pytest.mark.parametrize("alternate", [True, False])
@pytest.mark.parametrize("seed,lam,p,k", [(0, 0.5, 1, 5), (1, 0.3, 2, 6), (2, 0.8, 1, 6),
                                          (3, 0.5, 3, 7), (4, 0.1, 1, 5), (5, 0.95, 2, 8)])
def test_selection_equals_reference(calibration, alternate, seed, lam, p, k):
    X, Y = _data(seed)
    problem = Problem.build(X, Y, k=k, lam=lam, p=p, min_bin_count=1)
    problem = dataclasses.replace(
        problem, params=dataclasses.replace(problem.params, calibration=calibration))
    result = problem.run(alternate=alternate, backend="numpy")
    codes = problem.features.codes.toarray()
    expected = ref.greedy_calibrated(np.asarray(problem.relevance), codes, k, lam, p,
                                     calibration, alternate)
    assert list(result.local) == expected
