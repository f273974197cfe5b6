"""Calibrations of the greedy step (core/objective.CALIBRATIONS): the fast greedy against a
from-scratch reference, invariance to the unit of MI, and "paper" left exactly as eq. (2)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from coreselect.core import Problem
from coreselect.core.greedy import greedy, step_scores
from coreselect.core.objective import (
    CALIBRATIONS,
    DEFAULT_CALIBRATION,
    FIXED_OBJECTIVE,
    ObjectiveParams,
)
from coreselect.errors import InputError

CALIBRATED = [c for c in CALIBRATIONS if c != "paper"]
PER_STEP = [c for c in CALIBRATIONS if c not in FIXED_OBJECTIVE]  # weights change every step


def _problem(seed: int, n=80, d=16, n_labels=4, k=6, lam=0.5, p=2) -> Problem:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, d)).astype(float)
    X[:, 4] = X[:, 2]  # a duplicate
    Y = (rng.random((n, n_labels)) < 0.4).astype(int)
    Y[:, 0] = np.maximum(Y[:, 0], X[:, 1] > 1)
    return Problem.build(X, Y, k=k, lam=lam, p=p, min_bin_count=2)


def _with(problem: Problem, **changes) -> Problem:
    return dataclasses.replace(problem, params=dataclasses.replace(problem.params, **changes))


def _reference(problem: Problem, calibration: str) -> list[int]:
    """The calibrated greedy from scratch: marginal gains recomputed by set functions."""
    codes = problem.features.codes.toarray()
    params = problem.params
    d = problem.n_columns

    def g(subset):
        from coreselect.core.objective import relevance_of

        return relevance_of(problem.relevance, subset, params.p)

    def div(subset):
        if calibration == "information":  # minus the information the subset shares
            return -ref.redundancy(codes, subset)
        return sum(ref.distance(codes[:, a], codes[:, b])
                   for i, a in enumerate(subset) for b in subset[i + 1:])

    singles = [g([u]) for u in range(d)]
    first = int(np.argmax(singles))
    chosen = [first]
    while len(chosen) < params.k:
        live = np.array([u not in chosen for u in range(d)])
        dg = np.array([g(chosen + [u]) - g(chosen) for u in range(d)])
        dd = np.array([div(chosen + [u]) - div(chosen) for u in range(d)])
        scores = step_scores(params, dg, dd, len(chosen), live, alternate=True,
                             relevance_scale=max(singles))
        scores[~live] = -np.inf
        chosen.append(int(np.argmax(scores)))
    return chosen


@pytest.mark.parametrize("calibration", PER_STEP)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_calibrated_greedy_equals_reference(calibration, seed):
    problem = _with(_problem(seed), calibration=calibration)
    result = problem.run(alternate=True, backend="numpy")
    assert list(result.local) == _reference(problem, calibration)


def test_step_scores_by_hand():
    params = ObjectiveParams(k=3, lam=0.5, p=1, n_labels=1, calibration="spread")
    dg = np.array([1.0, 3.0, 5.0])
    dd = np.array([2.0, 2.0, 0.5])
    live = np.array([True, True, True])
    expected = 0.5 * dg / dg.std() + 0.5 * dd / dd.std()
    np.testing.assert_allclose(step_scores(params, dg, dd, 2, live), expected)
    rng = dataclasses.replace(params, calibration="range")
    np.testing.assert_allclose(step_scores(rng, dg, dd, 2, live),
                               0.5 * (dg - 1) / 4 + 0.5 * (dd - 0.5) / 1.5)
    ratio = dataclasses.replace(params, calibration="ratio")
    np.testing.assert_allclose(step_scores(ratio, dg, dd, 2, live),
                               0.5 * np.log(dg) + 0.5 * np.log(dd / 2))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([np.log(2.0), 1 / np.log(2.0), 1e-3, 250.0]),
       lam=st.sampled_from([0.1, 0.5, 0.9]))
def test_calibrations_invariant_to_mi_units(seed, scale, lam):
    """Bits or nats (any common factor on every MI) select the same features."""
    problem = _problem(seed, lam=lam)
    for calibration in CALIBRATED:
        params = dataclasses.replace(problem.params, calibration=calibration)
        a = greedy(problem.features, problem.relevance, params, alternate=True, backend="numpy")
        b = greedy(problem.features, problem.relevance * scale, params, alternate=True,
                   backend="numpy")
        assert list(a.selected) == list(b.selected), calibration


def test_paper_calibration_is_eq2_and_depends_on_units():
    """"paper" is the historical objective (the default field value), and it is not
    unit-free: that is what the calibrations fix."""
    problem = _problem(3, k=8, lam=0.5)
    assert problem.params.calibration == "paper"
    explicit = _with(problem, calibration="paper").run(alternate=True)
    default = problem.run(alternate=True)
    assert list(explicit.selected) == list(default.selected)
    assert explicit.objective == default.objective
    changed = any(
        list(greedy(problem.features, problem.relevance * s, problem.params, alternate=True).selected)
        != list(default.selected) for s in (1e-3, 1e3))
    assert changed


def test_default_calibration_is_known():
    from coreselect.core.objective import AUTO, CONDITIONAL, data_calibration

    assert DEFAULT_CALIBRATION == AUTO
    # what it stands for is always one of the others
    for share in (None, 0.0, 0.49, 0.5, 0.8, 1.0):
        assert data_calibration(share, 10, 3) in (*CALIBRATIONS, *CONDITIONAL)


def test_unknown_calibration_is_a_typed_error():
    problem = _with(_problem(0), calibration="nope")
    with pytest.raises(InputError, match="calibration"):
        problem.run(alternate=True)


@pytest.mark.parametrize("calibration", CALIBRATED)
def test_calibrated_selection_is_a_prefix_of_larger_k(calibration):
    """No calibrated score involves k, so the evaluation may rank once per fold."""
    small = _with(_problem(5, k=4), calibration=calibration).run(alternate=True)
    large = _with(_problem(5, k=9), calibration=calibration).run(alternate=True)
    assert list(large.selected[:4]) == list(small.selected)


@pytest.mark.parametrize("calibration", PER_STEP)
def test_calibrated_steps_skip_copies_of_selected_features(calibration):
    """A copy of a selected feature (distance 0) adds no information: while anything else is
    left a calibrated greedy never picks it (eq. (2) is left as the paper wrote it)."""
    rng = np.random.default_rng(7)
    n = 120
    base = rng.integers(0, 3, size=(n, 5)).astype(float)
    X = np.column_stack([base, base[:, :3], base[:, :3]])  # columns 5..10 copy columns 0..2
    Y = np.column_stack([base[:, 0] > 0, base[:, 1] > 1, rng.random(n) < 0.4]).astype(int)
    problem = _with(Problem.build(X, Y, k=5, p=10, min_bin_count=2), calibration=calibration)
    chosen = problem.run(5, alternate=True).selected
    originals = {int(c) if c < 5 else int((c - 5) % 3) for c in chosen}
    assert len(originals) == 5, chosen  # one column of each of the 5 originals
    # only copies left to pick: they are picked rather than failing
    assert len(problem.run(8, alternate=True).selected) == 8


def test_information_weighs_shared_bits_not_distances():
    """The "information" redundancy is the information shared with the selection in bits.
    Next to a rare selected feature ``s``, a rare feature on in a third of its rows is nearer
    by the distance ``1 - I/H`` (their joint entropy is small) than a frequent one that is on
    wherever ``s`` is, yet it shares fewer bits with ``s``: the two calibrations order them
    oppositely. The bits equal the reference's ``I(u; v)``."""
    from coreselect.core.discretize import discretize
    from coreselect.core.entropy import DistanceOracle, shared_information

    rng = np.random.default_rng(0)
    n = 400
    s = (rng.random(n) < 0.1).astype(float)
    for _ in range(3):  # the draws the construction was checked with
        rng.random(n)
    rare = np.where(rng.random(n) < 0.3, s, 0.0)
    frequent = np.where(s == 1, 1.0, (rng.random(n) < 0.3).astype(float))
    oracle = DistanceOracle(discretize(np.column_stack([s, rare, frequent]), min_bin_count=1))
    codes = oracle.matrix.codes.toarray()
    dist = oracle.distances_from(0)
    bits = shared_information(dist, float(oracle.entropies[0]), oracle.entropies)
    assert dist[1] < dist[2] and bits[1] < bits[2]  # nearer by d, yet fewer shared bits
    for u in range(3):
        got = shared_information(oracle.distances_from(u), float(oracle.entropies[u]),
                                 oracle.entropies)
        for v in range(3):
            assert got[v] == pytest.approx(ref.mutual_information(codes[:, u], codes[:, v]),
                                           abs=1e-12)


def test_information_default_p_follows_the_labels():
    """``p`` None resolves to the calibration's: under "information" ``max(3, ceil(4 k /
    |L|))`` once the data's labels are known (every selected feature before), the paper's 10
    under the others; an explicit ``p`` is kept."""
    from coreselect.core.objective import P_ALL, PAPER_P, default_p
    from coreselect.selection.spec import Objective

    assert Objective(k=5).calibration == DEFAULT_CALIBRATION == "auto"
    assert Objective(k=5).p is None  # set by the calibration "auto" stands for on the data
    assert Objective(k=5, calibration="information").p is None  # set once the labels are known
    assert default_p("information") == P_ALL
    assert Objective(k=5).decided(0.1, 10, 3).p == 7 == default_p("information", 5, 3)
    assert Objective(k=5, calibration="information").decided(None, 10, 40).p == 3
    assert Objective(k=5, calibration="information").params(2).p == 10
    assert Objective(k=5).decided(0.8, 10, 3).p == PAPER_P  # cmim's (it has no top-p cut)
    for calibration in CALIBRATIONS:
        if calibration != "information":
            assert Objective(k=5, calibration=calibration).p == PAPER_P
            assert default_p(calibration, 5, 1) == PAPER_P
    assert Objective(k=5, p=3).p == 3
    assert Objective(k=5, p=3, calibration="paper").p == 3
    assert Objective(k=5, p=2, calibration="information").decided(None, 10, 1).p == 2


@settings(max_examples=200, deadline=None)
@given(k=st.integers(1, 10**6), n_labels=st.integers(1, 10**7))
def test_information_default_p_leaves_room_for_four_times_the_selection(k, n_labels):
    """The smallest ``p`` of at least 3 whose per-label lists hold ``4 k`` features in all."""
    from coreselect.core.objective import default_p

    p = default_p("information", k, n_labels)
    assert p >= 3 and p * n_labels >= 4 * k
    assert p == 3 or (p - 1) * n_labels < 4 * k


def test_information_default_p_spreads_the_picks_over_the_labels():
    """Under "information" a label already holding ``p`` good features stops drawing picks:
    with many labels the default ``p`` picks features for labels no one serves yet, where
    counting every selected feature piles more onto the label with the most information."""
    import coreselect

    rng = np.random.default_rng(3)
    n, n_rare = 2000, 30
    Z = (rng.random((n, 5)) < 0.5).astype(float)  # independent: no redundancy among them
    R = rng.random((n, n_rare)) < 0.005
    Y = np.hstack([(Z.sum(axis=1) >= 3)[:, None], R]).astype(np.int8)  # a vote, rare labels
    X = np.hstack([Z, R.astype(float)])  # each rare label told exactly by its own column
    every = coreselect.select(X, Y, k=7, calibration="information", p=10**6).selected
    spread = coreselect.select(X, Y, k=7, calibration="information")
    assert spread.spec["p"] == 3
    assert set(range(5)) <= set(every)  # the vote's five voters first, then two rare labels
    assert len(set(spread.selected) & set(range(5))) == 3  # three voters, four rare labels


def test_huge_p_selects_as_p_equal_to_the_selection_size():
    """The greedy keeps min(p, n_select) values per label: the same selection and g as a
    table of p columns would give (only n_select features are ever selected). (Under
    "paper" p also sets the coefficient c, so there it is another objective.)"""
    problem = _problem(4, k=7)
    for calibration in PER_STEP:
        big = _with(problem, calibration=calibration, p=10**9).run(alternate=True)
        exact = _with(problem, calibration=calibration, p=7).run(alternate=True)
        assert list(big.selected) == list(exact.selected)
        assert big.relevance == exact.relevance


def test_the_core_problem_takes_information_p_from_its_labels():
    """``Problem.build(p=None)`` under "information" gets the calibration's p for its ``k`` and
    its labels (not its features or rows); a given p is kept."""
    rng = np.random.default_rng(0)
    X = (rng.random((120, 40)) < 0.3).astype(float)
    Y = (rng.random((120, 2)) < 0.4).astype(np.int8)
    assert Problem.build(X, Y, k=5, p=None, calibration="information").params.p == \
        ref.information_p(5, 2) == 10
    assert Problem.build(X, Y, k=5, p=4, calibration="information").params.p == 4
    assert Problem.build(X, Y, k=5, p=None, calibration="range").params.p == 10


def test_k_auto_decides_information_p_at_its_cap():
    """``k="auto"`` builds one order up to its cap: p is the cap's, so the chosen k's
    selection is that order's prefix."""
    import coreselect
    from coreselect.selection.autok import cap_for

    rng = np.random.default_rng(1)
    X = (rng.random((300, 60)) < 0.3).astype(float)
    Y = (rng.random((300, 2)) < 0.4).astype(np.int8)
    result = coreselect.select(X, Y, k="auto", calibration="information")
    cap = cap_for(60)
    assert result.spec["p"] == ref.information_p(cap, 2) != ref.information_p(10, 2)
    assert list(result.selected) == list(result.ranking[:len(result.selected)])
