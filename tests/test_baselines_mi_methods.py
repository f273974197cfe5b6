"""The published multi-label MI selectors against their slow references (tests/reference_mlfs.py).

Properties over random small discrete data: every method selects exactly the reference's
features, in the same order, for several k; sparse and dense input agree; the selection for k
is the prefix of the selection for a larger k (what lets ``evaluate`` fit once per fold).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_mlfs as ref
from coreselect.baselines import BASELINES, PUBLISHED_MI, PYIT_MLFS
from coreselect.errors import InputError


@st.composite
def problems(draw, max_d=6, max_labels=4):
    n = draw(st.integers(2, 30))
    d = draw(st.integers(1, max_d))
    n_labels = draw(st.integers(1, max_labels))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    levels = rng.integers(1, 5, size=d)  # <= 5 values: the discretization keeps them as they are
    X = np.stack([rng.integers(0, lv, size=n) for lv in levels], axis=1) if d else np.zeros((n, 0))
    density = rng.uniform(0.05, 0.9)
    Y = (rng.random((n, n_labels)) < density).astype(np.int64)
    if draw(st.booleans()) and d > 1:  # duplicated and label-copy columns: exact ties
        X[:, -1] = X[:, 0]
        X[:, 0] = Y[:, 0] * (X[:, 0] % 2 + 1)
    if draw(st.booleans()) and n_labels > 1:
        Y[:, -1] = Y[:, 0]
    ks = sorted({draw(st.integers(1, d)), d})
    return X, Y, ks


@pytest.mark.parametrize("name", PYIT_MLFS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prob=problems())
def test_matches_reference(name, prob):
    X, Y, ks = prob
    for k in ks:
        fast = BASELINES[name](k=k).fit(X, Y).selected_.tolist()
        assert fast == ref.select(name, X.tolist(), Y.tolist(), k), (name, k)


@pytest.mark.parametrize("name", PYIT_MLFS)
@settings(max_examples=15, deadline=None)
@given(prob=problems())
def test_sparse_input_and_prefix(name, prob):
    X, Y, ks = prob
    full = BASELINES[name](k=ks[-1]).fit(X, Y).selected_
    sparse = BASELINES[name](k=ks[-1]).fit(sp.csr_matrix(X), sp.csr_matrix(Y)).selected_
    assert full.tolist() == sparse.tolist()
    for k in ks:
        assert BASELINES[name](k=k).fit(X, Y).selected_.tolist() == full[:k].tolist()


@pytest.mark.parametrize("name", PYIT_MLFS)
def test_larger_problem_matches_reference(name):
    """More labels and features than the property test draws (label pairs, many steps)."""
    rng = np.random.default_rng(7)
    n, d, L = 60, 9, 5
    Y = (rng.random((n, L)) < 0.35).astype(int)
    X = rng.integers(0, 4, size=(n, d))
    X[:, 2] = Y[:, 1] + Y[:, 2]
    X[:, 5] = Y[:, 3] ^ Y[:, 4]
    X[:, 7] = X[:, 2]
    fast = BASELINES[name](k=d).fit(X, Y).selected_.tolist()
    assert fast == ref.select(name, X.tolist(), Y.tolist(), d)


def test_statistics_against_formulas():
    """The building blocks one by one: I(f;l), I(f;s), I(f;l|s), I(f;l_i|l_j)."""
    from coreselect.baselines._mi_stats import MIStatistics

    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(50, 5))
    Y = (rng.random((50, 3)) < 0.4).astype(int)
    st_ = MIStatistics(X, Y)
    F, L = ref.cols_of(X.tolist()), ref.cols_of(Y.tolist())
    for f in range(5):
        for j, lab in enumerate(L):
            assert st_.relevance[f, j] == pytest.approx(ref.I(F[f], lab), abs=1e-12)
    for s in range(5):
        mi = st_.mi_with(s)
        cond = st_.given_feature(s)
        for f in range(5):
            assert mi[f] == pytest.approx(ref.I(F[f], F[s]), abs=1e-12)
            for j, lab in enumerate(L):
                assert cond[f, j] == pytest.approx(ref.Ic(F[f], lab, F[s]), abs=1e-12)
    for j in range(3):
        cond = st_.given_label(j)
        for f in range(5):
            for i in range(3):
                assert cond[f, i] == pytest.approx(ref.Ic(F[f], L[i], L[j]), abs=1e-12)


def test_ppt_prunes_rare_labelsets():
    rng = np.random.default_rng(0)
    Y = np.zeros((40, 2), dtype=int)
    Y[:20, 0] = 1  # labelset (1,0) x20, (0,0) x17, (1,1) x3 (pruned at tau = 6)
    Y[37:, :] = 1
    X = rng.integers(0, 3, size=(40, 4))
    est = BASELINES["ppt-mi"](k=2).fit(X, Y)
    assert est.n_rows_kept_ == 37 and est.prune_threshold_ == 6
    # every label set unique: tau drops until two classes remain (plain label powerset)
    Yu = np.array([[int(b) for b in f"{i:06b}"] for i in range(40)])
    est = BASELINES["ppt-mi"](k=2).fit(X, Yu)
    assert est.prune_threshold_ == 1 and est.n_rows_kept_ == 40


@pytest.mark.parametrize("name", PYIT_MLFS)
def test_bad_k(name):
    X = np.zeros((5, 3))
    Y = np.ones((5, 2))
    with pytest.raises(InputError):
        BASELINES[name](k=4).fit(X, Y)
    with pytest.raises(InputError):
        BASELINES[name](k=0).fit(X, Y)


def test_evaluate_runs_every_published_method():
    """`coreselect evaluate --methods pmu,...` goes through run_protocol: names accepted,
    one fit per fold (rankers), a selection per k."""
    from coreselect.evaluation.protocol import method_factories, run_protocol

    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(40, 6))
    Y = (rng.random((40, 3)) < 0.4).astype(int)
    df = run_protocol(X, Y, method_factories(list(PUBLISHED_MI)), [1, 3], n_folds=2)
    assert set(df.method) == set(PUBLISHED_MI)
    assert set(df.k) == {1, 3}


def test_pyit_mlfs_readings_of_lsmfs_differ():
    """docs/results/README.md says PyIT-MLFS reads LSMFS and MLSMFS differently: on this data
    its criteria (tests/reference_mlfs.py, ``J_*_pyit``) select in another order than ours."""
    rng = np.random.default_rng(7)
    n, d, L = 60, 9, 5
    Y = (rng.random((n, L)) < 0.35).astype(int)
    X = rng.integers(0, 4, size=(n, d))
    X[:, 2] = Y[:, 1] + Y[:, 2]
    X[:, 5] = Y[:, 3] ^ Y[:, 4]
    X[:, 7] = X[:, 2]
    for ours, theirs in (("lsmfs", ref.J_lsmfs_pyit), ("mlsmfs", ref.J_mlsmfs_pyit)):
        mine = BASELINES[ours](k=d).fit(X, Y).selected_.tolist()
        assert mine == ref.select(ours, X.tolist(), Y.tolist(), d)
        assert ref.greedy(X.tolist(), Y.tolist(), d, theirs) != mine
