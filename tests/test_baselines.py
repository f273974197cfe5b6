"""Baseline selectors: ReliefF against a slow reference, IG against a direct formula."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import mutual_info_score
from sklearn.utils import check_random_state

from coreselect.baselines import (
    BASELINES,
    BRInformationGain,
    BRReliefF,
    LPInformationGain,
    LPReliefF,
    RandomSelector,
    labelset_ids,
    relieff_scores,
)
from coreselect.errors import InputError


def reference_relieff(X, y, k=10, sample=None):
    """ReliefF straight from Robnik-Sikonja & Kononenko (2003), Fig. 3, with loops.

    Neighbours by the sum of diffs (Manhattan on range-normalized features), ties by index;
    weights divided by the number of neighbours actually found in a class (Weka).
    """
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    rng = X.max(axis=0) - X.min(axis=0)

    def diff(a, i, j):
        return 0.0 if rng[a] == 0 else abs(X[i, a] - X[j, a]) / rng[a]

    def dist(i, j):
        return sum(diff(a, i, j) for a in range(d))

    classes = sorted(set(y.tolist()))
    prior = {c: np.mean(y == c) for c in classes}
    idx = list(range(n)) if sample is None else list(sample)
    m = len(idx)
    W = np.zeros(d)
    for i in idx:
        for c in classes:
            cand = sorted((j for j in range(n) if j != i and y[j] == c), key=lambda j: (dist(i, j), j))
            near = cand[:k]
            if not near:
                continue
            for a in range(d):
                s = sum(diff(a, i, j) for j in near) / (m * len(near))
                if c == y[i]:
                    W[a] -= s
                else:
                    W[a] += prior[c] / (1 - prior[y[i]]) * s
    return W


@pytest.fixture
def small():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    X[:, 2] = 1.0  # constant feature
    X[:, 4] = rng.integers(0, 3, 40)  # a discrete feature with distance ties
    y = rng.integers(0, 3, 40)
    y[:2] = 3  # a class with only two members (fewer than k)
    return X, y


def test_relieff_matches_reference_multiclass(small):
    X, y = small
    ref = reference_relieff(X, y, k=4)
    assert np.allclose(relieff_scores(X, y, n_neighbors=4), ref, atol=1e-12)
    assert np.allclose(relieff_scores(sp.csr_matrix(X), y, n_neighbors=4), ref, atol=1e-12)
    assert ref[2] == 0.0


def test_relieff_matches_reference_default_k_and_binary(small):
    X, _ = small
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    assert np.allclose(relieff_scores(X, y), reference_relieff(X, y, k=10), atol=1e-12)


def test_relieff_several_columns_share_distances(small):
    X, _ = small
    Y = np.random.default_rng(1).integers(0, 2, (40, 3))
    W = relieff_scores(X, Y, n_neighbors=5)
    for t in range(3):
        assert np.allclose(W[:, t], reference_relieff(X, Y[:, t], k=5), atol=1e-12)


def test_relieff_sampling_m_instances(small):
    X, y = small
    sample = np.sort(check_random_state(3).choice(len(y), size=12, replace=False))
    got = relieff_scores(X, y, n_neighbors=4, n_samples=12, random_state=3)
    assert np.allclose(got, reference_relieff(X, y, k=4, sample=sample), atol=1e-12)


def test_relieff_finds_the_informative_feature():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(200, 8))
    y = (X[:, 3] > 0.5).astype(int)
    assert int(np.argmax(relieff_scores(X, y))) == 3


def test_relieff_sparse_equals_dense():
    # Speed belongs in benchmarks; here the sparse path must score exactly like the dense one.
    X = sp.random(60, 300, density=0.05, format="csr", random_state=0)
    Y = np.random.default_rng(0).integers(0, 2, (60, 4))
    sparse = BRReliefF(k=10).fit(X, Y)
    dense = BRReliefF(k=10).fit(X.toarray(), Y)
    assert sparse.scores_.shape == (300,)
    np.testing.assert_allclose(sparse.scores_, dense.scores_, rtol=1e-9, atol=1e-12)


def _mi_bits(a, b):
    return mutual_info_score(a, b) / np.log(2)


def test_information_gain_by_formula():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(120, 7)).astype(float)  # already discrete: bins = values
    Y = rng.integers(0, 2, size=(120, 3))
    Y[:, 0] = (X[:, 5] > 0).astype(int)
    br = BRInformationGain(k=3).fit(X, Y)
    expected = np.array([sum(_mi_bits(X[:, j], Y[:, l]) for l in range(3)) for j in range(7)])
    assert np.allclose(br.scores_, expected, atol=1e-9)
    assert br.selected_[0] == 5
    lp = LPInformationGain(k=3).fit(X, Y)
    ids = labelset_ids(Y)
    assert np.allclose(lp.scores_, [_mi_bits(X[:, j], ids) for j in range(7)], atol=1e-9)


def test_labelset_ids():
    Y = np.array([[1, 0], [0, 1], [1, 0], [0, 0]])
    ids = labelset_ids(Y)
    assert ids[0] == ids[2] and len(set(ids.tolist())) == 3


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_selector_interface(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 12))
    Y = rng.integers(0, 2, (60, 3))
    cls = BASELINES[name]
    sel = cls(k=4).fit(X, Y)
    assert sel.scores_.shape == (12,)
    assert list(sel.selected_) == list(sel.ranking_[:4])
    assert sorted(sel.ranking_) == list(range(12))
    assert sel.transform(X).shape == (60, 4)
    assert sel.get_support().sum() == 4
    assert np.all(np.diff(sel.scores_[sel.ranking_]) <= 0)
    with pytest.raises(InputError):
        cls(k=13).fit(X, Y)


def test_random_is_reproducible():
    X = np.zeros((5, 30))
    Y = np.ones((5, 2))
    a = RandomSelector(k=5, random_state=1).fit(X, Y).selected_
    b = RandomSelector(k=5, random_state=1).fit(X, Y).selected_
    assert list(a) == list(b)


def test_lp_relieff_uses_labelsets():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 5))
    Y = rng.integers(0, 2, (30, 2))
    lp = LPReliefF(k=2, n_neighbors=3).fit(X, Y)
    assert np.allclose(lp.scores_, reference_relieff(X, labelset_ids(Y), k=3), atol=1e-12)
