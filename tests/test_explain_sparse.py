"""A selection's per-label explanation and every column's score over many sparse labels:
read from the sparse relevance's closed forms and stored pairs, never from dense rows of
every label, with the numbers of the dense rows (the slow reference).

Why: with ~10^6 labels a dense relevance row is 8 MB, and the explanation used to build the
selected rows (plus a labels x p table) and the scores every column's row, several at a time.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.core.discretize import discretize, discretize_labels
from coreselect.core.sparse_relevance import SparseRelevance
from coreselect.selection.explain import selected_label_relevance


def _sparse_problem(n, d, n_labels, per_row, seed, kind="mi"):
    """``n`` rows of small integer features and ``per_row`` label ids each out of
    ``n_labels`` (most labels absent: all-zero columns)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, random_state=rng, data_rvs=lambda k: rng.integers(1, 4, k))
    cols = np.concatenate([rng.choice(n_labels, per_row, replace=False) for _ in range(n)])
    Y = sp.csr_matrix((np.ones(n * per_row), (np.repeat(np.arange(n), per_row), cols)),
                      shape=(n, n_labels))
    F = discretize(sp.csc_matrix(X), min_bin_count=1, strategy="none")
    return SparseRelevance(F, discretize_labels(Y), kind)


def _no_dense_rows(monkeypatch):
    def refuse(self, positions):
        raise AssertionError("a dense row of every label was built")

    monkeypatch.setattr(SparseRelevance, "__getitem__", refuse)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 25), d=st.integers(1, 8),
       n_labels=st.integers(1, 300), m=st.integers(1, 6), p=st.integers(1, 8),
       top=st.integers(1, 40), kind=st.sampled_from(["mi", "nmi"]))
def test_top_labels_equal_the_dense_rows(seed, n, d, n_labels, m, p, top, kind):
    """Above ``max_full`` labels: the same rows (bit for bit), the same label ids, and sums
    equal to the dense rows' up to rounding."""
    per_row = min(n_labels, 1 + seed % 5)
    rel = _sparse_problem(n, d, n_labels, per_row, seed, kind)
    dense = rel.toarray()
    positions = np.random.default_rng(seed).permutation(d)[:min(m, d)]
    want = selected_label_relevance(dense, positions, p, max_full=0, top=top)
    got = selected_label_relevance(rel, positions, p, max_full=0, top=top)
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rel.feature_sums(np.arange(d)), dense.sum(axis=1),
                               rtol=1e-12, atol=1e-12)


def test_many_labels_without_dense_rows(monkeypatch):
    """200,000 labels of which ~2,400 are present: the explanation and the column sums never
    build a dense row, and their memory stays well under one (labels x p) table."""
    n_labels, p = 200_000, 5
    rel = _sparse_problem(40, 20, n_labels, 60, seed=3)
    positions = np.array([4, 0, 11, 7, 19])
    want_rows, want_sums, want_ids = selected_label_relevance(rel, positions, p, top=100)
    _no_dense_rows(monkeypatch)
    tracemalloc.start()
    try:
        rows, sums, ids = selected_label_relevance(rel, positions, p, top=100)
        rel.feature_sums(np.arange(20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_allclose(sums, want_sums, rtol=1e-12)
    # A labels x p table alone is 8 MB here; the terms (one float per label) and their
    # order are 3.2 MB.
    assert peak < 4 * 8 * n_labels, peak


def test_selection_on_many_labels_without_dense_rows(monkeypatch, tmp_path):
    """A selection on many sparse labels with the sparse relevance: its scores (every
    column's summed relevance) and its explanation come from the closed forms and the pairs
    (no dense row of more than one feature is built: the greedy reads one at a time), with
    the numbers of the same selection on the dense relevance (the slow reference)."""
    import coreselect.core.sparse_relevance as sparse_relevance
    from coreselect.io import from_arrays, read
    from coreselect.io.xmc import write_xmc
    from coreselect.selection import select

    rng = np.random.default_rng(0)
    n, d, n_labels = 30, 12, 60_000
    X = rng.integers(0, 3, size=(n, d)).astype(float)
    cols = np.concatenate([rng.choice(n_labels, 40, replace=False) for _ in range(n)])
    Y = sp.csr_matrix((np.ones(cols.size), (np.repeat(np.arange(n), 40), cols)),
                      shape=(n, n_labels))
    path = tmp_path / "many.xmc"
    write_xmc(from_arrays(sp.csr_matrix(X), Y), path)
    monkeypatch.setattr("coreselect.selection.explain.MAX_FULL_LABELS", 1000)
    # the weighing's greedy (on these dense codes the default would take cmim)
    reference = select(read(path), k=3, min_bin_count=1, calibration="information")
    assert reference.engine_info.get("relevance_backend", "dense") == "dense"
    monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", 0)
    one_row = SparseRelevance.__getitem__

    def one_at_a_time(self, positions):
        assert np.size(positions) == 1, "dense rows of several features were built"
        return one_row(self, positions)

    monkeypatch.setattr(SparseRelevance, "__getitem__", one_at_a_time)
    result = select(read(path), k=3, min_bin_count=1, calibration="information")
    assert result.selected.tolist() == reference.selected.tolist()
    np.testing.assert_array_equal(result.label_ids, reference.label_ids)
    # The dense kernels may add in another order than the closed forms: last bits.
    np.testing.assert_allclose(result.label_relevance, reference.label_relevance, rtol=1e-12)
    np.testing.assert_allclose(result.scores, reference.scores, rtol=1e-12)
    np.testing.assert_allclose(result.feature_relevance, reference.feature_relevance,
                               rtol=1e-12)


@pytest.mark.parametrize("p", [1, 3, 2**31 - 1])
def test_gains_table_grows_with_the_selection(p):
    """The greedy's per-label table holds the selection's values, not p (or d) columns from
    the start: after 4 of 40 features it is at most 10 wide (doubling), with the gains and value of the
    dense reference (full table) at every step."""
    from coreselect.core.objective import RelevanceGains

    rel = _sparse_problem(30, 40, 5_000, 20, seed=5)
    sparse, dense = rel.gains_state(p), RelevanceGains(rel.toarray(), p)
    for u in (7, 0, 31, 12):
        sparse.add(u)
        dense.add(u)
        np.testing.assert_allclose(sparse.gains, dense.gains, rtol=1e-12, atol=1e-12)
        assert sparse.value == pytest.approx(dense.value, rel=1e-12)
    assert sparse.top.shape[1] <= min(p, 2 * (4 + 1))  # doubling: at most twice |S| + 1


def test_dense_integer_labels_are_checked_without_a_float_copy():
    """Dense 0/1 labels of many columns (as the LIBSVM/XMC readers return under 50 million
    cells, int8) are coded without a float64 copy (8 bytes per cell)."""
    rng = np.random.default_rng(0)
    n, n_labels = 60, 200_000
    Y = np.zeros((n, n_labels), dtype=np.int8)
    Y[np.repeat(np.arange(n), 500), rng.integers(0, n_labels, n * 500)] = 1
    want = discretize_labels(sp.csr_matrix(Y))
    tracemalloc.start()
    try:
        got = discretize_labels(Y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (got.codes != want.codes).nnz == 0
    np.testing.assert_array_equal(got.n_codes, want.n_codes)
    assert peak < 4 * Y.size, peak  # a float64 copy alone is 8 bytes per cell
    with pytest.raises(Exception, match="binary"):
        discretize_labels(np.full((3, 2), 2, dtype=np.int64))
