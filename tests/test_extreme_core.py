"""The sparse relevance (core/sparse_relevance.py) against the dense path and the reference.

The sparse form never builds the features x labels matrix: non-co-occurring pairs are closed
forms of marginals, label thresholds are grouped by label count. These tests draw sparse data
with many labels, including labels that co-occur with nothing (empty, all-ones, on samples
where every feature is zero), features that co-occur with nothing, duplicate features (ties),
p larger than k, every calibration, lam 0 and 1, and check:

* every relevance entry equals the dense numpy kernel's bit for bit (same float operations),
  and the compiled kernel's up to rounding;
* the incremental gains equal the dense RelevanceGains' at every step of a greedy run;
* the selection is the dense path's and the objective equal up to rounding, and (tiny sizes)
  the reference's, written from the definitions.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference as ref
from coreselect.core.discretize import discretize, discretize_labels
from coreselect.core.entropy import relevance_matrix
from coreselect.core.objective import CALIBRATIONS, RelevanceGains
from coreselect.core.problem import Problem
from coreselect.core.sparse_relevance import SparseRelevance, choose_backend
from coreselect.errors import InputError


@st.composite
def extreme_data(draw, max_n=60, max_d=20, max_labels=60):
    """Sparse non-negative features and many sparse binary labels with the special columns."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    L = draw(st.integers(1, max_labels))
    density = draw(st.sampled_from([0.02, 0.1, 0.3, 0.7]))
    X = rng.exponential(size=(n, d)) * (rng.random((n, d)) < density)
    if d > 2:
        X[:, 1] = X[:, 0]  # a duplicate: ties
    label_density = draw(st.sampled_from([0.01, 0.05, 0.2, 0.6]))
    Y = (rng.random((n, L)) < label_density).astype(np.int8)
    specials = draw(st.lists(st.sampled_from(["empty", "full", "lonely", "majority"]),
                             max_size=min(L, 4)))
    empty_rows = np.flatnonzero((X != 0).sum(axis=1) == 0)
    for j, kind in enumerate(specials):
        if kind == "empty":
            Y[:, j] = 0
        elif kind == "full":
            Y[:, j] = 1
        elif kind == "lonely":  # on samples where no feature is non-zero: co-occurs with nothing
            Y[:, j] = 0
            Y[empty_rows, j] = 1
        else:
            Y[:, j] = rng.random(n) < 0.8
    if d > 3 and draw(st.booleans()):
        # A feature non-zero only where no label is on: co-occurs with nothing.
        quiet = np.flatnonzero(Y.sum(axis=1) == 0)
        X[:, d - 1] = 0.0
        X[quiet, d - 1] = 1.0 + rng.integers(0, 3, size=quiet.size)
    min_bin = draw(st.integers(1, 6))
    return sp.csr_matrix(X), Y, min_bin


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=extreme_data(), kind=st.sampled_from(["mi", "nmi"]))
def test_entries_equal_dense_kernel(data, kind):
    X, Y, min_bin = data
    F, Lb = discretize(X, min_bin_count=min_bin), discretize_labels(Y)
    sparse = SparseRelevance(F, Lb, kind)
    dense_numpy = relevance_matrix(F, Lb, kind, backend="numpy")
    np.testing.assert_array_equal(sparse.toarray(), dense_numpy)
    np.testing.assert_allclose(sparse.toarray(), relevance_matrix(F, Lb, kind, backend="numba"),
                               rtol=0, atol=1e-12)
    # Rows in any order, with repeats, and the feature subsets of a subproblem.
    rng = np.random.default_rng(F.n_columns)
    rows = rng.integers(0, F.n_columns, size=5)
    np.testing.assert_array_equal(sparse[rows], dense_numpy[rows])
    part = np.sort(rng.choice(F.n_columns, size=max(F.n_columns // 2, 1), replace=False))
    np.testing.assert_array_equal(sparse.take(part).toarray(), dense_numpy[part])
    # The compiled and the sparse-product builders store the same pairs, bit for bit, each
    # label's pairs sorted by max(value, closed) descending (the greedy's live prefixes).
    a, b = sparse._all_pairs_compiled(), sparse._all_pairs_sparse()
    np.testing.assert_array_equal(a[0], b[0])
    L = Lb.n_columns
    labels = np.repeat(np.arange(L), np.diff(a[0]))
    for built in (a, b):
        key = np.maximum(built[2], built[3])
        same_label = labels[1:] == labels[:-1]
        assert np.all(key[1:][same_label] <= key[:-1][same_label])
    oa, ob = np.lexsort((a[1], labels)), np.lexsort((b[1], labels))
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_array_equal(x[oa], y[ob])
    # Memory: only the co-occurring pairs are stored.
    cooc = (F.indicator.T @ Lb.indicator)
    assert sparse.n_pairs <= cooc.nnz


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=extreme_data(), kind=st.sampled_from(["mi", "nmi"]), p=st.integers(1, 12),
       seed=st.integers(0, 1000), use_numba=st.booleans())
def test_gains_equal_dense_state_at_every_step(data, kind, p, seed, use_numba):
    X, Y, min_bin = data
    F, Lb = discretize(X, min_bin_count=min_bin), discretize_labels(Y)
    sparse = SparseRelevance(F, Lb, kind)
    dense = relevance_matrix(F, Lb, kind, backend="numpy")
    a, b = RelevanceGains(dense, p), sparse.gains_state(p, use_numba=use_numba)
    scale = max(float(np.abs(dense).sum(axis=1).max(initial=0.0)), 1.0)
    order = np.random.default_rng(seed).permutation(F.n_columns)
    for u in order[: min(F.n_columns, 2 * p + 3)]:  # past p: thresholds rise
        np.testing.assert_allclose(b.gains, a.gains, rtol=0, atol=1e-9 * scale)
        a.add(int(u))
        b.add(int(u))
        np.testing.assert_allclose(b.value, a.value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.gains, a.gains, rtol=0, atol=1e-9 * scale)


def _problems(X, Y, **kw):
    return (Problem.build(X, Y, relevance_backend="dense", **kw),
            Problem.build(X, Y, relevance_backend="sparse", **kw))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=extreme_data(max_n=50, max_d=14, max_labels=40),
       kind=st.sampled_from(["mi", "nmi"]), calibration=st.sampled_from(CALIBRATIONS),
       lam=st.sampled_from([0.0, 0.3, 0.5, 1.0]), p=st.integers(1, 12), k=st.integers(1, 8),
       alternate=st.booleans(), keep=st.booleans())
def test_selection_equals_dense_path(data, kind, calibration, lam, p, k, alternate, keep):
    X, Y, min_bin = data
    dense, sparse = _problems(X, Y, k=k, lam=lam, p=p, relevance=kind, calibration=calibration,
                              min_bin_count=min_bin, keep_constant=keep)
    assert sparse.relevance_backend == "sparse" and dense.relevance_backend == "dense"
    k = min(k, int(dense.selectable.sum()))
    if k == 0:
        return
    a = dense.run(k, alternate=alternate)
    b = sparse.run(k, alternate=alternate)
    np.testing.assert_array_equal(b.selected, a.selected)
    np.testing.assert_allclose([b.objective, b.relevance, b.diversity],
                               [a.objective, a.relevance, a.diversity], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.evaluate(a.selected), dense.evaluate(a.selected),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["mi", "nmi"])
@pytest.mark.parametrize("calibration", ["paper", "range"])
def test_selection_equals_reference(seed, kind, calibration):
    X, Y, k, p, lam = tiny_case(seed)
    problem = Problem.build(X, Y, k=k, lam=lam, p=p, relevance=kind, calibration=calibration,
                            min_bin_count=3, relevance_backend="sparse")
    codes = ref.codes_of(X, min_bin_count=3)
    selectable = [len(set(codes[:, j].tolist())) > 1 for j in range(X.shape[1])]
    chosen, h = ref.greedy(codes, Y, k, lam=lam, p=p, kind=kind, selectable=selectable,
                           calibration=calibration)
    res = problem.run(k, alternate=False)
    assert list(res.selected) == chosen
    assert res.objective == pytest.approx(h, rel=1e-9, abs=1e-12)
    assert res.relevance == pytest.approx(ref.g(codes, Y, chosen, p, kind), rel=1e-9, abs=1e-12)


def test_backend_choice():
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((20, 5)) * (rng.random((20, 5)) < 0.3))
    F, Lb = discretize(X), discretize_labels((rng.random((20, 3)) < 0.3).astype(int))
    assert choose_backend(F, Lb, "auto") == "dense"  # small: the dense matrix fits
    assert choose_backend(F, Lb, "sparse") == "sparse"
    many = discretize(np.array([[0, 1, 2, 0]] * 5).T, strategy="none")  # a 3-valued label
    with pytest.raises(ValueError):
        choose_backend(discretize(np.eye(4)), many, "sparse")
    with pytest.raises(InputError):
        Problem.from_discrete(discretize(np.eye(4)), many, k=1, relevance_backend="sparse")
    import coreselect.core.sparse_relevance as sr
    old = sr.DENSE_RELEVANCE_MAX_BYTES
    try:
        sr.DENSE_RELEVANCE_MAX_BYTES = 0
        assert choose_backend(F, Lb, "auto") == "sparse"
        assert choose_backend(discretize(np.eye(4)), many, "auto") == "dense"
    finally:
        sr.DENSE_RELEVANCE_MAX_BYTES = old


def test_p_larger_than_the_features_allocates_nothing_more():
    # S holds at most d features: p = 10**18 must neither allocate p columns per label nor
    # change the selection (every selected relevance counts).
    rng = np.random.default_rng(4)
    X = sp.csr_matrix(rng.exponential(size=(40, 6)) * (rng.random((40, 6)) < 0.3))
    Y = (rng.random((40, 30)) < 0.1).astype(int)
    dense, sparse = _problems(X, Y, k=4, lam=0.5, p=10**18, relevance="mi", min_bin_count=3)
    a, b = dense.run(4, alternate=True), sparse.run(4, alternate=True)
    np.testing.assert_array_equal(b.selected, a.selected)
    assert b.relevance == pytest.approx(a.relevance, rel=1e-12)
    assert b.relevance == pytest.approx(dense.relevance[a.local].sum(), rel=1e-12)


def tiny_case(seed: int):
    """30 x 8 sparse features (a duplicate pair) and 25 rare labels (one never set, one always
    set), with k, p and lambda that vary with the seed: small enough for tests/reference.py."""
    rng = np.random.default_rng(seed)
    n, d, L = 30, 8, 25
    X = rng.exponential(size=(n, d)) * (rng.random((n, d)) < 0.3)
    X[:, 3] = X[:, 2]
    Y = (rng.random((n, L)) < 0.08).astype(int)
    Y[:, 0], Y[:, 1] = 0, 1
    return sp.csr_matrix(X), Y, 4, [1, 3, 10][seed % 3], [0.0, 0.5, 1.0][seed % 3]


def assert_sparse_matches_dense(sparse, dense) -> None:
    """The sparse relevance's selection is the dense one's: same picks, same h, g, D, and the
    same per-label and per-feature relevances."""
    np.testing.assert_array_equal(sparse.selected, dense.selected)
    np.testing.assert_allclose([sparse.objective, sparse.relevance, sparse.diversity],
                               [dense.objective, dense.relevance, dense.diversity],
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.label_relevance, dense.label_relevance, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sparse.feature_relevance, dense.feature_relevance,
                               rtol=1e-12, atol=1e-12)
