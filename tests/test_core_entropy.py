"""Entropy kernels: closed-form fast paths (numba and numpy) against per-pair histograms."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import reference as ref
from coreselect.core.discretize import DiscreteMatrix, discretize, discretize_labels
from coreselect.core.entropy import (
    DistanceOracle,
    entropy,
    joint_entropy,
    pairwise_distances,
    relevance_matrix,
)

BACKENDS = ["numba", "numpy"]


def _codes(rng, n=80, d=10, k=4, density=0.4):
    C = rng.integers(1, k, size=(n, d)) * (rng.random((n, d)) < density)
    C[:, 0] = 0  # constant
    C[:, 1] = C[:, 2]  # duplicate
    C[:, 3] = rng.integers(0, 2, size=n)  # binary, dense
    return C


@pytest.mark.parametrize("backend", BACKENDS)
def test_joint_entropy_matches_histograms(backend):
    rng = np.random.default_rng(0)
    C = _codes(rng)
    L = rng.integers(0, 2, size=(80, 4))
    A = DiscreteMatrix.from_dense_codes(C)
    B = discretize_labels(L)
    H = joint_entropy(A, B, backend)
    for i in range(C.shape[1]):
        for j in range(L.shape[1]):
            assert H[i, j] == pytest.approx(ref.entropy(C[:, i], L[:, j]), abs=1e-12)
    np.testing.assert_allclose(entropy(A), [ref.entropy(C[:, i]) for i in range(10)], atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["nmi", "mi"])
def test_relevance_matrix_matches_reference(backend, kind):
    rng = np.random.default_rng(1)
    C = _codes(rng, n=60, d=8)
    L = rng.integers(0, 2, size=(60, 3))
    L[:, 2] = 0  # constant label: no relevance
    R = relevance_matrix(DiscreteMatrix.from_dense_codes(C), discretize_labels(L), kind, backend)
    for i in range(8):
        for j in range(3):
            assert R[i, j] == pytest.approx(ref.relevance(C[:, i], L[:, j], kind), abs=1e-12)
    assert np.all(R[:, 2] == 0)


def test_relevance_with_multivalued_label_column():
    rng = np.random.default_rng(2)
    C = _codes(rng, n=50, d=5)
    cls = rng.integers(0, 5, size=50)
    R = relevance_matrix(DiscreteMatrix.from_dense_codes(C),
                         DiscreteMatrix.from_dense_codes(cls[:, None]), "mi")
    for i in range(5):
        assert R[i, 0] == pytest.approx(ref.mutual_information(C[:, i], cls), abs=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_distance_oracle_matches_reference(backend):
    rng = np.random.default_rng(3)
    C = _codes(rng, n=70, d=12, k=5)
    A = DiscreteMatrix.from_dense_codes(C)
    oracle = DistanceOracle(A, backend=backend)
    assert oracle.backend == backend
    for u in range(12):
        row = oracle.distances_from(u)
        for v in range(12):
            assert row[v] == pytest.approx(ref.distance(C[:, u], C[:, v]), abs=1e-12)
    # The oracle's scratch buffer is left clean: calling again gives the same answer.
    np.testing.assert_array_equal(oracle.distances_from(4), oracle.distances_from(4))


def test_backends_agree_on_sparse_text_like_data():
    rng = np.random.default_rng(4)
    X = sp.random(400, 300, density=0.03, random_state=5, format="csr")
    X.data = np.round(X.data * 10, 1)
    A = discretize(X)
    o1, o2 = DistanceOracle(A, "numba"), DistanceOracle(A, "numpy")
    for u in rng.choice(300, 20, replace=False):
        np.testing.assert_allclose(o1.distances_from(u), o2.distances_from(u), atol=1e-12)
    L = discretize_labels((rng.random((400, 7)) < 0.2).astype(int))
    np.testing.assert_allclose(relevance_matrix(A, L, "nmi", "numba"),
                               relevance_matrix(A, L, "nmi", "numpy"), atol=1e-12)


def test_constant_column_is_at_distance_one():
    C = np.array([[0, 1], [0, 0], [0, 1], [0, 1]])
    D = pairwise_distances(DiscreteMatrix.from_dense_codes(C))
    assert D[0, 1] == pytest.approx(1.0) and D[0, 0] == 0 and D[1, 1] == 0


columns = arrays(np.int64, st.integers(2, 25), elements=st.integers(0, 3))


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_distance_is_a_metric(data):
    n = data.draw(st.integers(2, 25))
    col = arrays(np.int64, n, elements=st.integers(0, 3))
    C = np.column_stack([data.draw(col), data.draw(col), data.draw(col)])
    backend = data.draw(st.sampled_from(BACKENDS))
    D = pairwise_distances(DiscreteMatrix.from_dense_codes(C), backend)
    assert np.all((D >= 0) & (D <= 1))
    np.testing.assert_allclose(D, D.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(D), 0, atol=1e-12)
    for a in range(3):
        for b in range(3):
            for c in range(3):
                assert D[a, c] <= D[a, b] + D[b, c] + 1e-9
    # identity of indiscernibles: d = 0 exactly when the columns determine each other
    for a in range(3):
        for b in range(3):
            if ref.same_partition(C[:, a], C[:, b]):
                assert D[a, b] == pytest.approx(0, abs=1e-12)
            else:
                assert D[a, b] > 1e-12
