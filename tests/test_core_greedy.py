"""Greedy and AltGreedy: the fast path against the from-scratch reference, and the
mathematical properties the paper relies on."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from coreselect.core import Problem, relevance_of
from coreselect.core.discretize import DiscreteMatrix, discretize_labels
from coreselect.core.objective import RelevanceGains, top_p_sum
from coreselect.datasets import make_synthesized
from coreselect.errors import InputError


def _data(rng, kind, n=60, d=14, n_labels=4):
    if kind == "binary":
        X = (rng.random((n, d)) < 0.3).astype(float)
    elif kind == "multivalued":
        X = rng.integers(0, 4, size=(n, d)).astype(float)
    elif kind == "dense":
        X = rng.normal(size=(n, d))
    else:  # sparse non-negative, tf-idf like
        X = rng.exponential(size=(n, d)) * (rng.random((n, d)) < 0.35)
    X[:, 0] = 0.0  # constant
    X[:, 5] = X[:, 3]  # duplicate
    Y = (rng.random((n, n_labels)) < 0.4).astype(int)
    Y[:, 0] = np.maximum(Y[:, 0], X[:, 1] > 0)  # one label tied to a feature
    return X, Y


@pytest.mark.parametrize("kind", ["binary", "multivalued", "dense", "sparse"])
@pytest.mark.parametrize("alternate", [False, True])
@pytest.mark.parametrize("relevance", ["nmi", "mi"])
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_fast_greedy_equals_reference(kind, alternate, relevance, backend):
    rng = np.random.default_rng(zlib.crc32(f"{kind}{alternate}{relevance}".encode()))
    X, Y = _data(rng, kind)
    data = sp.csr_matrix(X) if kind == "sparse" else X
    for k, lam, p, keep in [(5, 0.5, 2, False), (4, 0.2, 10, True), (6, 0.9, 1, False)]:
        problem = Problem.build(data, Y, k=k, lam=lam, p=p, relevance=relevance,
                                keep_constant=keep, min_bin_count=5)
        result = problem.run(alternate=alternate, backend=backend)
        codes = np.column_stack([
            ref.discretize_column(X[:, j], "auto", "auto", 5, kind == "sparse") for j in range(X.shape[1])
        ])
        selectable = [keep or len(set(codes[:, j])) > 1 for j in range(X.shape[1])]
        expected, value = ref.greedy(codes, Y, k, lam, p, relevance, alternate, selectable)
        assert list(result.selected) == expected
        assert result.objective == pytest.approx(value, abs=1e-9)
        h, g, D = problem.evaluate(result.selected)
        assert h == pytest.approx(result.objective, abs=1e-9)
        assert g == pytest.approx(result.relevance, abs=1e-9)
        assert D == pytest.approx(result.diversity, abs=1e-9)


def test_pair_distances_are_those_of_the_selection():
    rng = np.random.default_rng(7)
    X, Y = _data(rng, "multivalued")
    problem = Problem.build(X, Y, k=6)
    result = problem.run(alternate=True)
    assert np.triu(result.pair_distances, 1).sum() == pytest.approx(result.diversity)


def test_synthesized_selects_one_copy_of_each_original():
    ds = make_synthesized()
    problem = Problem.build(ds.X, ds.Y, k=16)
    result = problem.run(alternate=True)
    originals = result.selected // ds.meta["copies"]
    assert sorted(originals.tolist()) == list(range(16))


def test_ties_go_to_the_lowest_column_index():
    rng = np.random.default_rng(8)
    base = (rng.random((50, 3)) < 0.5).astype(float)
    X = np.repeat(base, 4, axis=1)  # every column four times
    Y = base[:, :2].astype(int)
    result = Problem.build(X, Y, k=3).run(alternate=True)
    assert all(i % 4 == 0 for i in result.selected)


def test_constant_columns_are_never_selected_by_default():
    rng = np.random.default_rng(9)
    X = np.zeros((40, 6))
    X[:, 1:3] = rng.integers(0, 2, size=(40, 2))
    Y = X[:, 1:2].astype(int)
    with pytest.raises(InputError, match="selectable"):
        Problem.build(X, Y, k=3).run(alternate=True)
    assert len(Problem.build(X, Y, k=3, keep_constant=True).run(alternate=True).selected) == 3


# -- properties ----------------------------------------------------------------------------
rel_matrix = st.integers(2, 9).flatmap(
    lambda d: st.lists(st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=d, max_size=d)
)


@settings(max_examples=100, deadline=None)
@given(rel=rel_matrix, p=st.integers(1, 4), data=st.data())
def test_g_is_monotone_and_submodular(rel, p, data):
    R = np.array(rel)
    d = R.shape[0]
    B = data.draw(st.sets(st.integers(0, d - 1), max_size=d - 1))
    A = data.draw(st.sets(st.sampled_from(sorted(B)), max_size=len(B))) if B else set()
    x = data.draw(st.sampled_from([i for i in range(d) if i not in B]))
    g = lambda S: relevance_of(R, sorted(S), p)  # noqa: E731
    assert g(A) <= g(B) + 1e-12  # monotone
    assert g(A | {x}) - g(A) >= g(B | {x}) - g(B) - 1e-12  # diminishing returns
    assert g(set()) == 0


@settings(max_examples=60, deadline=None)
@given(rel=rel_matrix, p=st.integers(1, 4), data=st.data())
def test_incremental_gains_equal_recomputed_gains(rel, p, data):
    R = np.array(rel)
    order = data.draw(st.permutations(range(R.shape[0])))
    plain = RelevanceGains(R, p)
    for use_numba in (False, True):
        gains = RelevanceGains(R, p, use_numba=use_numba)
        chosen = []
        for step, u in enumerate(order[:-1]):
            gains.add(u)
            if use_numba:  # the compiled update gives numpy's bits, step by step
                plain.add(order[step])
                assert np.array_equal(gains.gains, plain.gains)
            chosen.append(u)
            base = relevance_of(R, chosen, p)
            expected = [relevance_of(R, chosen + [v], p) - base for v in range(R.shape[0])]
            rest = [v for v in range(R.shape[0]) if v not in chosen]
            np.testing.assert_allclose(gains.gains[rest], np.array(expected)[rest], atol=1e-12)
            assert gains.value == pytest.approx(base)


def test_top_p_sum():
    v = np.array([[3.0, 1], [1, 2], [2, 0]])
    np.testing.assert_allclose(top_p_sum(v, 2), [5, 3])
    np.testing.assert_allclose(top_p_sum(v, 5), [6, 3])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(4, 8), k=st.integers(2, 4),
       lam=st.floats(0, 1), p=st.integers(1, 3))
def test_altgreedy_reaches_half_of_the_optimum(seed, d, k, lam, p):
    """The paper's Theorem: AltGreedy is a 1/2-approximation. The optimum is brute force over
    every k-subset with the reference objective (no product code), and the objective the
    greedy reports is the reference's value of its selection."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(30, d)).astype(float)
    Y = rng.integers(0, 2, size=(30, 2))
    problem = Problem.build(X, Y, k=k, lam=lam, p=p, keep_constant=True)
    result = problem.run(alternate=True)
    codes = ref.codes_of(X)
    value = ref.h(codes, Y, list(result.selected), k, lam, p, "mi")
    assert result.objective == pytest.approx(value, abs=1e-9)
    best = max(ref.h(codes, Y, list(S), k, lam, p, "mi") for S in itertools.combinations(range(d), k))
    assert value >= 0.5 * best - 1e-9


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), data=st.data())
def test_removing_an_unselected_feature_does_not_change_greedy(seed, data):
    rng = np.random.default_rng(seed)
    d = 12
    X = rng.integers(0, 3, size=(40, d)).astype(float)
    X[:, 4] = X[:, 2]  # duplicates make ties
    Y = rng.integers(0, 2, size=(40, 3))
    problem = Problem.build(X, Y, k=4, p=2)
    result = problem.run(alternate=False)
    dropped = data.draw(st.sampled_from([i for i in range(d) if i not in result.selected]))
    rest = problem.subproblem(np.array([i for i in range(d) if i != dropped]))
    again = rest.run(alternate=False)
    assert list(again.selected) == list(result.selected)
    assert again.objective == pytest.approx(result.objective, abs=1e-12)
