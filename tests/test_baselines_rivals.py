"""The rivals of issue 30 against slow, obvious computations: ``max-chi2`` (the largest
per-label chi2), ``l1`` (L1 one-vs-rest logistic regression, C chosen on the rows it is given),
``trees`` (extra-trees impurity importances under the size cap); and their registration in
``coreselect evaluate``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_selection import chi2
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MaxAbsScaler

from coreselect.baselines import BASELINES
from coreselect.evaluation.protocol import METHOD_NAMES, method_factories, run_protocol


def _problem(seed=0, n=150, d=12, L=4):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    Y = (rng.random((n, L)) < 0.3).astype(int)
    X[:, 5] += 2 * Y[:, 0]  # one strong feature per label for two labels
    X[:, 9] += Y[:, 2]
    return X, Y


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 40), d=st.integers(1, 6), L=st.integers(1, 4))
def test_max_chi2_is_the_largest_per_label_chi2(seed, n, d, L):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    Y = (rng.random((n, L)) < 0.4).astype(int)
    expect = np.zeros(d)
    for j in range(L):
        if n and 0 < Y[:, j].sum() < n:
            with np.errstate(divide="ignore", invalid="ignore"):
                stat = np.nan_to_num(chi2(X, Y[:, j])[0], nan=0.0, posinf=0.0)
            expect = np.maximum(expect, stat)
    got = BASELINES["max-chi2"](k=d).fit(X, Y)
    np.testing.assert_allclose(got.scores_, expect, rtol=1e-9, atol=1e-12)
    assert got.ranking_.tolist() == np.argsort(-expect, kind="stable").tolist()
    sparse = BASELINES["max-chi2"](k=d).fit(sp.csr_matrix(X), sp.csr_matrix(Y))
    np.testing.assert_allclose(sparse.scores_, got.scores_)


def _l1_reference(X, Y, Cs, frac, seed):
    """The documented rule, written plainly: split once, pick C by held-out micro F1 (ties: the
    smaller C), refit on all rows, score = max |coef| over labels; zeros ordered by the largest
    C's fit on the split, then index."""
    Xs = MaxAbsScaler().fit_transform(X)
    n = X.shape[0]
    order = np.random.RandomState(seed).permutation(n)
    val, fit = order[:int(round(frac * n))], order[int(round(frac * n)):]

    def models(rows, C):
        out = []
        for j in range(Y.shape[1]):
            y = Y[rows, j]
            out.append(int(y[0]) if y.min() == y.max() else
                       LogisticRegression(l1_ratio=1.0, solver="liblinear", C=C, random_state=0).fit(Xs[rows], y))
        return out

    def coef(ms, d):
        return np.array([np.zeros(d) if isinstance(m, int) else m.coef_.ravel() for m in ms])

    best, best_f1 = None, -1
    for C in sorted(Cs):
        ms = models(fit, C)
        P = np.column_stack([np.full(len(val), m) if isinstance(m, int) else m.predict(Xs[val])
                             for m in ms])
        tp = np.sum((P == 1) & (Y[val] == 1))
        f1 = 2 * tp / (2 * tp + np.sum((P == 1) & (Y[val] == 0)) + np.sum((P == 0) & (Y[val] == 1))) if tp else 0
        if f1 > best_f1 + 1e-12:
            best, best_f1 = C, f1
        loose = np.abs(coef(ms, X.shape[1])).max(axis=0)
    score = np.abs(coef(models(np.arange(n), best), X.shape[1])).max(axis=0)
    return best, score, np.lexsort((-loose, -score))


@pytest.mark.parametrize("seed", [0, 1])
def test_l1_follows_its_rule(seed):
    X, Y = _problem(seed)
    est = BASELINES["l1"](k=5, random_state=seed).fit(X, Y)
    C, score, ranking = _l1_reference(X, Y, (0.1, 1.0, 10.0), 0.25, seed)
    assert est.C_ == C
    np.testing.assert_allclose(est.scores_, score, rtol=1e-8)
    assert est.ranking_.tolist() == ranking.tolist()
    assert set(est.selected_[:2]) == {5, 9}  # the two features that carry labels
    assert np.count_nonzero(BASELINES["l1"](k=5, Cs=(0.1,), random_state=0).fit(X, Y).scores_) < X.shape[1]


def test_l1_sees_only_its_rows():
    """C and the ranking come from the rows given to fit: other rows' labels do not matter."""
    X, Y = _problem(3, n=200)
    train = np.arange(150)
    a = BASELINES["l1"](k=4, random_state=0).fit(X[train], Y[train])
    Y2 = Y.copy()
    Y2[150:] = 1 - Y2[150:]
    b = BASELINES["l1"](k=4, random_state=0).fit(X[train], Y2[train])
    assert a.C_ == b.C_ and a.ranking_.tolist() == b.ranking_.tolist()


def test_trees_importances_and_cap():
    X, Y = _problem(0, n=300)
    est = BASELINES["trees"](k=3, n_estimators=20, random_state=0).fit(X, Y)
    assert set(est.selected_[:2]) == {5, 9}
    assert est.scores_.sum() == pytest.approx(1.0)  # normalized per tree, averaged
    again = BASELINES["trees"](k=3, n_estimators=20, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(est.scores_, again.scores_)
    sparse = BASELINES["trees"](k=3, n_estimators=20, random_state=0).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(sparse.scores_, est.scores_)
    # the row cap: a fit on 300 rows capped at 50 equals a fit on the same 50 rows
    capped = BASELINES["trees"](k=3, n_estimators=5, max_rows=50, random_state=4).fit(X, Y)
    rng = np.random.RandomState(4)
    rows = np.sort(rng.choice(300, size=50, replace=False))
    from sklearn.tree import ExtraTreeClassifier

    total = np.zeros(X.shape[1])
    for _ in range(5):
        t = ExtraTreeClassifier(max_features="sqrt", max_depth=12,
                                random_state=rng.randint(np.iinfo(np.int32).max)).fit(X[rows].astype(np.float32), Y[rows])
        total += t.feature_importances_
    np.testing.assert_allclose(capped.scores_, total / 5)


@pytest.mark.parametrize("name", ["max-chi2", "l1", "trees", "atr"])
def test_registered_in_evaluate(name):
    assert name in METHOD_NAMES
    X, Y = _problem(2, n=60, d=10)
    df = run_protocol(X, Y, method_factories([name]), [1, 3], n_folds=2)
    assert set(df.method) == {name} and set(df.k) == {1, 3}


def test_degenerate_inputs():
    X = np.zeros((0, 3))
    Y = np.zeros((0, 2), dtype=int)
    for name in ("max-chi2", "l1", "trees"):
        assert len(BASELINES[name](k=2).fit(X, Y).selected_) == 2
    X1, Y1 = np.ones((4, 3)), np.ones((4, 1), dtype=int)  # constant everything
    for name in ("max-chi2", "l1", "trees"):
        assert BASELINES[name](k=3).fit(X1, Y1).selected_.tolist() == [0, 1, 2]
