"""Dense, CSR and CSC input of the same values give the same codes and the same selection
(issue 32: the zero-bin rule reads the values, not the container), and the tiny-data bound on
the smallest bin (rule 4 of coreselect.core.discretize)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import coreselect
from coreselect.core.discretize import discretize, effective_min_bin_count

import reference as ref
from conftest import require_data_files

CONTAINERS = {"dense": np.asarray, "csr": sp.csr_matrix, "csc": sp.csc_matrix}


@st.composite
def mixed_matrices(draw, min_n=0, max_n=40, max_d=6):
    """Columns of every kind the zero rule distinguishes: mostly zero, exactly half zero, some
    zeros, no zeros, negative values, few distinct values."""
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, max_d))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    cols = []
    for _ in range(d):
        zero_share = draw(st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.95]))
        values = np.round(rng.exponential(3.0, n), draw(st.sampled_from([0, 1])))
        if draw(st.booleans()):
            values -= draw(st.sampled_from([0.0, 1.0]))  # some negative columns
        values[rng.random(n) < zero_share] = 0.0
        cols.append(values)
    return np.column_stack(cols) if n else np.zeros((0, d))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=mixed_matrices(), n_bins=st.integers(2, 6), min_count=st.integers(1, 12),
       backend=st.sampled_from(["numba", "numpy"]))
def test_dense_csr_csc_give_the_same_codes(X, n_bins, min_count, backend):
    out = {name: discretize(make(X), n_bins=n_bins, min_bin_count=min_count, backend=backend)
           for name, make in CONTAINERS.items()}
    dense = out["dense"]
    for name in ("csr", "csc"):
        np.testing.assert_array_equal(out[name].dense_codes(), dense.dense_codes(), err_msg=name)
        np.testing.assert_array_equal(out[name].n_codes, dense.n_codes, err_msg=name)
    for j in range(X.shape[1]):  # and the slow reference agrees (as a partition)
        assert ref.same_partition(dense.dense_codes()[:, j],
                                  ref.discretize_column(X[:, j], n_bins, "auto", min_count))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=mixed_matrices(min_n=2, max_n=60, max_d=8), seed=st.integers(0, 1000),
       k=st.integers(1, 4))
def test_dense_csr_csc_select_the_same(X, seed, k):
    rng = np.random.default_rng(seed)
    Y = (rng.random((X.shape[0], 3)) < 0.4).astype(np.int8)
    picks = []
    for make in CONTAINERS.values():
        try:
            picks.append(coreselect.select(make(X), Y, k=k).selected.tolist())
        except coreselect.errors.InputError as exc:  # too few selectable: the same refusal
            picks.append(str(exc))
    assert picks[0] == picks[1] == picks[2]


def test_emotions_dense_and_sparse_agree_and_keep_the_dense_selection():
    """The issue's example: CSR used to give [1, 47, 3, 57, 64, 52, 0, 43, 39, 2]; every
    container now gives the dense selection, which did not change."""
    folder = require_data_files("mulan/emotions/emotions.arff")
    ds = coreselect.load(folder / "mulan/emotions/emotions.arff")
    X = np.asarray(ds.X.toarray() if sp.issparse(ds.X) else ds.X)
    for make in CONTAINERS.values():
        assert coreselect.select(make(X), ds.Y, k=10, calibration="information", p=2**31 - 1,
                                 ).selected.tolist() == [1, 47, 3, 57, 52, 43, 0, 2, 39, 71]
    # the default decides from the codes, which every container gives alike
    picks = {name: coreselect.select(make(X), ds.Y, k=10) for name, make in CONTAINERS.items()}
    assert {r.spec["calibration"] for r in picks.values()} == {"cmim"}
    assert len({tuple(r.selected.tolist()) for r in picks.values()}) == 1


@pytest.mark.parametrize("n, n_bins, expected", [
    (0, 5, 1), (1, 5, 1), (19, 5, 1), (20, 5, 2), (99, 5, 9), (100, 5, 10), (194, 5, 10),
    (10**6, 5, 10), (194, 10, 9), (40, 2, 10),
])
def test_effective_min_bin_count(n, n_bins, expected):
    assert effective_min_bin_count(10, n, n_bins) == expected


def test_tiny_data_keep_split_bins():
    """20 samples of distinct values: 5 bins of 4 (min_bin_count=10 used to merge them all
    into one and call every column constant); the default, on fewer than 240 rows, three."""
    X = np.arange(40.0).reshape(20, 2)
    dm = discretize(X, n_bins=5)
    assert dm.n_codes.tolist() == [5, 5]
    assert discretize(X).n_codes.tolist() == [3, 3]
