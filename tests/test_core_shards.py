"""Row-shard count tables: the merge is a law (river style), and merged counts give the
unsharded core's entropies, relevances and distances."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from coreselect.core.discretize import DiscreteMatrix, discretize, discretize_labels
from coreselect.core.entropy import DistanceOracle, entropy, relevance_matrix
from coreselect.core.shards import (
    RowShardedOracle, merge, shard_counts, statistics, step_counts,
)
from coreselect.engines.rowsharded import row_slice

BACKENDS = ["numba", "numpy"]


def _data(seed: int, n: int = 60, d: int = 7, kind: str = "multi"):
    rng = np.random.default_rng(seed)
    if kind == "binary":
        X = (rng.random((n, d)) < 0.3).astype(float)
    elif kind == "dense":
        X = rng.normal(size=(n, d))
    elif kind == "sparse":
        X = sp.random(n, d, density=0.2, random_state=seed, format="csc")
    else:  # multi-valued small integers with many zeros
        X = rng.integers(0, 4, size=(n, d)) * (rng.random((n, d)) < 0.5)
    Y = (rng.random((n, 3)) < 0.3).astype(int)
    return discretize(X, min_bin_count=3), discretize_labels(Y)


def _counts(F, L, lo, hi, backend="numpy"):
    return shard_counts(row_slice(F, lo, hi), row_slice(L, lo, hi), backend)


cuts = st.lists(st.integers(0, 60), min_size=2, max_size=2).map(sorted)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cut=cuts, kind=st.sampled_from(["binary", "multi", "sparse"]))
def test_merge_of_two_shards_is_the_counts_of_their_union(seed, cut, kind):
    F, L = _data(seed, kind=kind)
    a, b = cut
    assert merge(_counts(F, L, 0, a), _counts(F, L, a, 60)) == _counts(F, L, 0, 60)
    assert merge(_counts(F, L, 0, a), _counts(F, L, a, b)) == _counts(F, L, 0, b)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cut=cuts)
def test_merge_is_associative_and_commutative(seed, cut):
    F, L = _data(seed)
    a, b = cut
    x, y, z = _counts(F, L, 0, a), _counts(F, L, a, b), _counts(F, L, b, 60)
    assert merge(x, y) == merge(y, x)
    assert merge(merge(x, y), z) == merge(x, merge(y, z))
    empty = _counts(F, L, 0, 0)
    assert merge(empty, x) == x  # the counts of no rows are the identity


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cut=cuts, backend=st.sampled_from(BACKENDS))
def test_in_place_sum_is_the_merge_and_leaves_the_added_part_alone(seed, cut, backend):
    """``total += part`` (what a reducer that owns its total does) is ``merge(total, part)``,
    shard after shard, and ``part`` is not changed."""
    F, L = _data(seed)
    a, b = cut
    parts = [_counts(F, L, lo, hi, backend) for lo, hi in ((0, a), (a, b), (b, 60))]
    copies = [_counts(F, L, lo, hi, backend) for lo, hi in ((0, a), (a, b), (b, 60))]
    total = parts[0]
    for part in parts[1:]:
        total += part
    assert total is parts[0]
    assert total == merge(merge(copies[0], copies[1]), copies[2]) == _counts(F, L, 0, 60)
    assert parts[1] == copies[1] and parts[2] == copies[2]
    other = DiscreteMatrix(F.codes, F.n_codes + 1)
    with pytest.raises(ValueError):
        total += shard_counts(other, L)


def test_merge_refuses_differently_discretized_columns():
    F, L = _data(0)
    other = DiscreteMatrix(F.codes, F.n_codes + 1)
    with pytest.raises(ValueError):
        merge(shard_counts(F, L), shard_counts(other, L))


@pytest.mark.parametrize("backend", BACKENDS)
def test_shard_counts_backends_agree(backend):
    F, L = _data(3, n=80, kind="sparse")
    assert shard_counts(F, L, backend) == shard_counts(F, L, "numpy")


@pytest.mark.parametrize("kind", ["binary", "dense", "sparse", "multi"])
@pytest.mark.parametrize("relevance", ["mi", "nmi"])
def test_merged_statistics_equal_the_unsharded_core(kind, relevance):
    F, L = _data(5, kind=kind)
    stats = statistics(merge(merge(_counts(F, L, 0, 13), _counts(F, L, 13, 13)),
                             _counts(F, L, 13, 60)), relevance)
    np.testing.assert_allclose(stats.entropies, entropy(F), atol=1e-12)
    np.testing.assert_allclose(stats.label_entropies, entropy(L), atol=1e-12)
    np.testing.assert_allclose(stats.relevance, relevance_matrix(F, L, relevance), atol=1e-12)


def test_statistics_match_the_slow_reference():
    F, L = _data(11, kind="multi")
    stats = statistics(shard_counts(F, L), "mi")
    C, Yc = F.dense_codes(), L.dense_codes()
    for i in range(C.shape[1]):
        for j in range(Yc.shape[1]):
            assert stats.relevance[i, j] == pytest.approx(ref.relevance(C[:, i], Yc[:, j], "mi"),
                                                          abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), cut=cuts, kind=st.sampled_from(["binary", "multi", "dense"]))
def test_sharded_distances_equal_the_oracle(seed, cut, kind):
    F, L = _data(seed, kind=kind)
    a, b = cut
    parts = [(0, a), (a, b), (b, 60)]
    stats = statistics(shard_counts(F, L))
    oracle = RowShardedOracle(
        stats, lambda u: sum(step_counts(row_slice(F, lo, hi), u) for lo, hi in parts))
    plain = DistanceOracle(F, backend="numpy")
    for u in range(F.n_columns):
        np.testing.assert_allclose(oracle.distances_from(u), plain.distances_from(u), atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_step_counts_are_the_cooccurrences(backend):
    F, _ = _data(2, kind="multi")
    C = F.dense_codes()
    for u in range(F.n_columns):
        table = step_counts(F, u, backend)
        for v in range(F.n_columns):
            for i in range(1, F.n_codes[u]):
                for j in range(1, F.n_codes[v]):
                    slot = F.offsets[v] + j - 1
                    assert table[i - 1, slot] == np.sum((C[:, u] == i) & (C[:, v] == j))
