"""Discretization: the fast vectorized path against the per-column reference."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from coreselect.core.discretize import discretize, discretize_labels
from coreselect.errors import InputError


def _random_matrix(rng, n, d, kind):
    if kind == "continuous":
        return rng.normal(size=(n, d))
    if kind == "sparse_tfidf":
        X = rng.exponential(size=(n, d)) * (rng.random((n, d)) < 0.2)
        return np.round(X, 2)
    if kind == "few_values":
        return rng.integers(0, 4, size=(n, d)).astype(float)
    if kind == "ties":
        return rng.integers(0, 12, size=(n, d)).astype(float)
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["continuous", "sparse_tfidf", "few_values", "ties"])
@pytest.mark.parametrize("strategy", ["auto", "quantile", "uniform"])
@pytest.mark.parametrize("as_sparse", [False, True])
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_matches_reference(kind, strategy, as_sparse, backend):
    rng = np.random.default_rng(zlib.crc32(f"{kind}{strategy}{as_sparse}".encode()))
    X = _random_matrix(rng, 120, 12, kind)
    X[:, 0] = 0.0  # constant
    X[:, 1] = X[:, 2]  # duplicate
    data = sp.csr_matrix(X) if as_sparse else X
    for n_bins, min_count in [(5, 10), (3, 1), (8, 25)]:
        dm = discretize(data, n_bins=n_bins, strategy=strategy, min_bin_count=min_count,
                        backend=backend)
        codes = dm.dense_codes()
        for j in range(X.shape[1]):
            expected = ref.discretize_column(X[:, j], n_bins, strategy, min_count, as_sparse)
            assert ref.same_partition(codes[:, j], expected), (j, n_bins, min_count)
            assert dm.n_codes[j] == len(set(expected.tolist()))


def test_code_zero_is_the_most_frequent_bin():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6))
    X[:150, 3] = -7.0
    dm = discretize(X)
    codes = dm.dense_codes()
    for j in range(6):
        counts = np.bincount(codes[:, j])
        assert counts[0] == counts.max()
    assert dm.nonzero_counts[3] == 200 - 150


def test_sparse_and_dense_inputs_agree():
    rng = np.random.default_rng(2)
    X = rng.exponential(size=(300, 20)) * (rng.random((300, 20)) < 0.1)
    a = discretize(X).dense_codes()
    b = discretize(sp.csc_matrix(X)).dense_codes()
    # Dense mostly-zero columns get the zero bin too ("auto"), so both agree.
    for j in range(20):
        assert ref.same_partition(a[:, j], b[:, j])


def test_small_word_is_not_split():
    x = np.zeros(100)
    x[[3, 10, 50, 60, 70, 80]] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    dm = discretize(sp.csr_matrix(x[:, None]))
    assert dm.n_codes[0] == 2  # present / absent: the six non-zeros are merged into one bin


def test_few_distinct_values_are_kept():
    x = np.array([0, 0, 0.3, 0.3, 0.9, 5.0] * 3)[:, None]
    dm = discretize(x, n_bins=5, min_bin_count=10)
    assert dm.n_codes[0] == 4  # rule 1 comes first: never re-binned, whatever the bin sizes


def test_strategy_none_requires_integers():
    with pytest.raises(InputError):
        discretize(np.array([[0.5], [1.0]]), strategy="none")
    dm = discretize(np.array([[7], [3], [7], [9]]), strategy="none")
    assert dm.n_codes[0] == 3


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_values_raise(bad):
    X = np.ones((5, 2))
    X[2, 1] = bad
    with pytest.raises(InputError, match="NaN or infinite"):
        discretize(X)


def test_labels_must_be_binary():
    with pytest.raises(InputError, match="binary"):
        discretize_labels(np.array([[0, 2], [1, 0]]))
    with pytest.raises(InputError):
        discretize_labels(np.zeros((3, 0)))
    dm = discretize_labels(sp.csr_matrix(np.array([[0, 1], [1, 1], [0, 0]])))
    assert list(dm.n_codes) == [2, 2]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 7.5, -1.0]),
                    min_size=1, max_size=60),
    n_bins=st.integers(2, 6),
    min_count=st.integers(1, 8),
    strategy=st.sampled_from(["auto", "quantile", "uniform"]),
)
def test_reference_property(values, n_bins, min_count, strategy):
    x = np.array(values)
    dm = discretize(x[:, None], n_bins=n_bins, strategy=strategy, min_bin_count=min_count)
    expected = ref.discretize_column(x, n_bins, strategy, min_count, False)
    assert ref.same_partition(dm.dense_codes()[:, 0], expected)
    # Equal values always share a bin.
    codes = dm.dense_codes()[:, 0]
    for v in np.unique(x):
        assert len(set(codes[x == v].tolist())) == 1


@pytest.mark.parametrize("as_sparse", [False, True])
def test_label_fast_path_equals_generic_discretization(as_sparse):
    rng = np.random.default_rng(5)
    Y = (rng.random((90, 7)) < [0.1, 0.5, 0.52, 0.7, 0.0, 1.0, 0.49]).astype(int)
    data = sp.csr_matrix(Y) if as_sparse else Y
    fast, generic = discretize_labels(data), discretize(Y, strategy="none")
    np.testing.assert_array_equal(fast.n_codes, generic.n_codes)
    np.testing.assert_array_equal(fast.dense_codes(), generic.dense_codes())


@settings(max_examples=80, deadline=None)
@given(n=st.sampled_from([0, 1, 2, 3, 8, 61]), d=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1), as_sparse=st.booleans())
def test_label_codes_against_their_definition(n, d, seed, as_sparse):
    """A label's code is 1 where it is on, except in a label on in more than half of the
    samples, where code 1 means off (so code 0, stored implicitly, is the frequent value);
    the store's chunk encoding with those labels turned gives the same codes."""
    from coreselect.store._binning import encode_labels

    rng = np.random.default_rng(seed)
    Y = (rng.random((n, d)) < rng.choice([0.0, 0.3, 0.5, 0.7, 1.0], size=d)).astype(int)
    turned = Y.sum(axis=0) * 2 > n
    want = np.where(turned, 1 - Y, Y)
    dm = discretize_labels(sp.csr_matrix(Y) if as_sparse else Y)
    assert dm.codes.has_sorted_indices and dm.codes.dtype == np.int8
    assert not (dm.codes.data == 0).any()
    np.testing.assert_array_equal(dm.codes.toarray(), want)
    np.testing.assert_array_equal(
        dm.n_codes, [1 if len(set(Y[:, j].tolist())) <= 1 else 2 for j in range(d)])
    chunk = encode_labels(sp.csr_matrix(Y) if as_sparse else Y, turned)
    np.testing.assert_array_equal(chunk.toarray(), want)
    assert chunk.has_sorted_indices and not (chunk.data == 0).any()


def _codes(dm):
    return dm.codes.toarray(), np.asarray(dm.n_codes)


def test_explicitly_stored_zeros_are_zeros():
    # zero is not the most frequent value here: the stored zero lost its zero rule
    X = sp.csc_matrix((np.array([5.0, 0.0, 5.0]), np.array([0, 1, 2]), np.array([0, 3])),
                      shape=(3, 1))
    codes = discretize(X, min_bin_count=1).codes.toarray().ravel()
    assert codes.tolist() == [0, 1, 0]
    assert X.nnz == 3  # the caller's matrix is left as it was


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 2.5, -1.0, 7.0]),
                             min_size=3, max_size=3), min_size=2, max_size=25),
    stored=st.integers(0, 2**31 - 1),
    n_bins=st.integers(2, 5),
    min_count=st.integers(1, 4),
    strategy=st.sampled_from(["auto", "quantile", "uniform"]),
)
def test_explicit_zeros_equal_eliminated(values, stored, n_bins, min_count, strategy):
    """Some zero cells stored explicitly (a CSC or CSR matrix built from triplets) bin as the
    same matrix with them eliminated."""
    dense = np.array(values)
    rng = np.random.default_rng(stored)
    keep = (dense != 0) | (rng.random(dense.shape) < 0.5)  # store about half the zeros
    rows, cols = np.nonzero(keep)
    explicit = sp.coo_matrix((dense[rows, cols], (rows, cols)), shape=dense.shape)
    eliminated = sp.csc_matrix(explicit)
    eliminated.eliminate_zeros()
    params = dict(n_bins=n_bins, min_bin_count=min_count, strategy=strategy)
    expected = _codes(discretize(eliminated, **params))
    for X in (explicit.tocsc(), explicit.tocsr()):
        got = _codes(discretize(X, **params))
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])


# -- the compiled kernel (core/_numba_discretize.py) against the vectorized numpy path ------
def _same_bits(a, b) -> None:
    for x, y in ((a.codes.indptr, b.codes.indptr), (a.codes.indices, b.codes.indices),
                 (a.codes.data, b.codes.data), (a.n_codes, b.n_codes)):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


_CELLS = [0.0, 0.0, 0.0, 0.0, -0.0, 1.0, 2.0, 2.5, 3.0, -1.0, -4.5, 7.0, 0.125, 1e-300, 1e300]


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(0, 40),
    d=st.integers(0, 5),
    seed=st.integers(0, 2**31 - 1),
    n_bins=st.integers(2, 7),
    min_count=st.integers(1, 12),
    strategy=st.sampled_from(["auto", "quantile", "uniform", "none"]),
    layout=st.sampled_from(["dense", "csr", "csc", "dense_int", "continuous"]),
)
def test_compiled_equals_numpy(n, d, seed, n_bins, min_count, strategy, layout):
    """Same codes, same dtypes, bit for bit: sizes 0/1/many, sparse and dense, every strategy,
    implicit zeros that are and are not the most frequent bin."""
    rng = np.random.default_rng(seed)
    if layout == "continuous":
        X = rng.normal(size=(n, d)) * (rng.random((n, d)) < rng.random())
    else:
        X = rng.choice(_CELLS, size=(n, d)) * (rng.random((n, d)) < rng.random())
    if strategy == "none" or layout == "dense_int":
        X = np.round(np.clip(X, -50, 50))
    data = {"csr": sp.csr_matrix, "csc": sp.csc_matrix}.get(layout, np.asarray)(X)
    if layout == "dense_int":
        data = X.astype(np.int16)
    params = dict(n_bins=n_bins, strategy=strategy, min_bin_count=min_count)
    _same_bits(discretize(data, backend="numba", **params), discretize(data, backend="numpy", **params))


@pytest.mark.parametrize("strategy", ["auto", "quantile", "uniform"])
def test_compiled_equals_numpy_across_blocks(monkeypatch, strategy):
    """Wide sparse data in several column blocks and on several threads."""
    import sys

    monkeypatch.setattr(sys.modules["coreselect.core.discretize"], "BLOCK_CELLS", 500)
    rng = np.random.default_rng(7)
    X = sp.random(300, 400, density=0.05, random_state=rng, format="csr").toarray()
    X = np.round(X * 10, 1)
    X[:200, 5] = 3.0  # a column whose implicit zeros are not code 0
    X = sp.csr_matrix(X)
    for n_bins, min_count in [(5, 10), (3, 1), (9, 2)]:
        params = dict(n_bins=n_bins, strategy=strategy, min_bin_count=min_count)
        _same_bits(discretize(X, backend="numba", **params), discretize(X, backend="numpy", **params))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_bins=st.integers(2, 7), min_count=st.integers(1, 12),
       strategy=st.sampled_from(["auto", "quantile", "uniform"]),
       distinct=st.sampled_from([3, 20, 1000]))
def test_compiled_equals_numpy_around_the_insertion_sort_cut(seed, n_bins, min_count, strategy,
                                                            distinct):
    """Sparse columns of 0, 1, 2, 31 to 34 and 90 stored values (short ones sorted by
    insertion, long ones by a general sort), with ties and mixed signs: the numpy path's
    codes, bit for bit, and the reference's partition."""
    from coreselect.core import _numba_discretize as kernel

    rng = np.random.default_rng(seed)
    cut = kernel.INSERTION_MAX
    sizes = [0, 1, 2, cut - 1, cut, cut + 1, cut + 2, 90]
    n = 120
    X = np.zeros((n, len(sizes)))
    for j, m in enumerate(sizes):
        rows = rng.choice(n, m, replace=False)
        X[rows, j] = rng.integers(1, distinct + 1, m) * rng.choice([-1.0, 1.0, 0.5], m)
    params = dict(n_bins=n_bins, strategy=strategy, min_bin_count=min_count)
    got = discretize(sp.csc_matrix(X), backend="numba", **params)
    _same_bits(got, discretize(sp.csc_matrix(X), backend="numpy", **params))
    codes = got.dense_codes()
    for j in range(len(sizes)):
        expected = ref.discretize_column(X[:, j], n_bins, strategy, min_count, True)
        assert ref.same_partition(codes[:, j], expected), (j, sizes[j])


def test_compiled_refuses_like_numpy():
    for backend in ("numba", "numpy"):
        with pytest.raises(InputError, match="NaN or infinite"):
            discretize(sp.csr_matrix(np.array([[np.nan, 1.0]])), backend=backend)
        with pytest.raises(InputError, match="integer codes"):
            discretize(np.array([[0.5], [1.0]]), strategy="none", backend=backend)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("zeros", [9, 10, 11])
def test_zero_bin_needs_more_than_half_zeros(backend, zeros):
    """A dense column keeps zero as its own bin only when more than half its samples are zero
    (exactly half is not "mostly zero": then 1..4 | 5..10, with the zero bin 1..5 | 6..10)."""
    x = np.concatenate([np.zeros(zeros), np.arange(1.0, 21.0 - zeros)])
    dm = discretize(x[:, None], n_bins=3, min_bin_count=1, backend=backend)
    expected = ref.discretize_column(x, 3, "auto", 1, False)
    assert ref.same_partition(dm.dense_codes()[:, 0], expected)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([0, 1, 2, 9, 130]),
       n_labels=st.sampled_from([1, 2, 5, 70]), density=st.sampled_from([0.0, 0.05, 0.5, 1.0]),
       dtype=st.sampled_from([np.int8, np.int64, np.uint8, np.float32, np.float64, bool]),
       order=st.sampled_from("CF"))
def test_dense_labels_become_the_matrix_scipy_makes_of_them(seed, n, n_labels, density, dtype,
                                                            order):
    """A dense 0/1 label matrix read label by label from its transpose: the CSC matrix
    scipy builds from it (the same index types, sorted rows, no stored zero), flipped where
    a label is on in more than half of the rows, and what the sparse form of it gives."""
    rng = np.random.default_rng(seed)
    Y = np.asarray(rng.random((n, n_labels)) < density, dtype=dtype, order=order)
    got = discretize_labels(Y)
    want = discretize_labels(sp.csr_matrix(Y))
    plain = sp.csc_matrix(Y, dtype=np.int8)
    plain.eliminate_zeros()
    from coreselect.core.discretize import _ones_by_column

    ones = _ones_by_column(Y)
    for a, b in ((ones, plain), (got.codes, want.codes)):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert a.indices.dtype == b.indices.dtype and a.indptr.dtype == b.indptr.dtype
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
        assert np.array_equal(a.data, b.data)
    assert ones.has_canonical_format
    assert np.array_equal(got.n_codes, want.n_codes)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_bins=st.integers(2, 7), min_count=st.integers(1, 12),
       strategy=st.sampled_from(["auto", "quantile", "uniform"]),
       values=st.sampled_from(["fractions", "wide integers", "few", "signed zeros"]),
       dense=st.booleans())
def test_compiled_equals_numpy_on_columns_numpy_sorts(seed, n_bins, min_count, strategy, values,
                                                      dense):
    """Long columns (more stored values than the insertion sort takes) are sorted by numpy in
    rows padded to a power of two: columns of every length around the widths (33, 63 to 65,
    127 to 129, 200, and 300 alone in its width), fractions, integers over a span too wide to count, few distinct values,
    zeros of both signs, beside short and integer columns that the kernel handles itself:
    the numpy path's codes, bit for bit, and the reference's partition."""
    from coreselect.core import _numba_discretize as kernel

    rng = np.random.default_rng(seed)
    cut = kernel.INSERTION_MAX
    sizes = [cut + 1, 63, 64, 65, 127, 128, 129, 200, 300, 5, 0]  # 300: alone in its width
    n = 320
    X = np.zeros((n, len(sizes) + 1))
    for j, m in enumerate(sizes):
        rows = rng.choice(n, m, replace=False)
        if values == "fractions":
            X[rows, j] = rng.normal(size=m).round(rng.integers(1, 4))
        elif values == "wide integers":
            X[rows, j] = rng.integers(-10**6, 10**6, m)
        elif values == "few":
            X[rows, j] = rng.choice([-2.5, 0.5, 1.5, 7.25], m)
        else:
            X[rows, j] = rng.choice([-0.0, 0.0, -1.5, 2.5, 3.75], m)
    X[:, -1] = rng.integers(0, 4, n)  # a counted column beside them
    params = dict(n_bins=n_bins, strategy=strategy, min_bin_count=min_count)
    data = X if dense else sp.csc_matrix(X)
    got = discretize(data, backend="numba", **params)
    _same_bits(got, discretize(data, backend="numpy", **params))
    codes = got.dense_codes()
    for j in range(X.shape[1]):
        expected = ref.discretize_column(X[:, j], n_bins, strategy, min_count, not dense)
        assert ref.same_partition(codes[:, j], expected), (j, values)


def test_numpy_sorts_exactly_the_long_columns_the_kernel_would_sort():
    """The plan of the presorting: a column is handed to numpy's sort when it has more stored
    values than the insertion sort takes and is not counted (integers over a small span), so a
    slip in the plan cannot leave the path unused (or flag a column the kernel counts)."""
    from coreselect.core._numba_discretize import INSERTION_MAX, sort_plan

    rng = np.random.default_rng(0)
    long_ = INSERTION_MAX + 1
    columns = {  # name: (values, expected flag)
        "empty": (np.zeros(0), 0),
        "short fractions": (rng.random(INSERTION_MAX) + 0.5, 0),
        "long fractions": (rng.random(long_) + 0.5, 1),
        "long small-span integers": (rng.integers(1, 5, 90).astype(float), 0),
        "long wide-span integers": (rng.integers(1, 10**6, 90).astype(float), 1),
        "long mixed": (np.r_[rng.integers(1, 5, 60), 0.5].astype(float), 1),
    }
    vals = np.concatenate([v for v, _ in columns.values()])
    indptr = np.r_[0, np.cumsum([v.size for v, _ in columns.values()])].astype(np.int64)
    flags = np.full(len(columns), 7, dtype=np.uint8)
    sort_plan(0, len(columns), indptr, vals, flags)
    assert dict(zip(columns, flags.tolist())) == {k: f for k, (_, f) in columns.items()}


@pytest.mark.parametrize("strategy", ["auto", "uniform"])
def test_a_tall_column_numpy_sorts_in_place_gives_the_numpy_paths_codes(strategy):
    """A column longer than the padded rows take (PAD_MAX_WIDTH) is sorted where it lands:
    the numpy path's codes, bit for bit, beside a column of 40 stored values (sparse input:
    in padded rows) or of every row (dense input: sorted in place too)."""
    from coreselect.core.discretize import PAD_MAX_WIDTH

    rng = np.random.default_rng(3)
    n = PAD_MAX_WIDTH + 4465
    short = np.zeros(n)
    short[rng.choice(n, 40, replace=False)] = rng.random(40) + 0.5  # sparse: 40 stored values
    X = np.c_[rng.normal(size=n).round(3), short]
    for data in (X, sp.csc_matrix(X)):
        _same_bits(discretize(data, strategy=strategy, backend="numba"),
                   discretize(data, strategy=strategy, backend="numpy"))
