"""Malformed sparse input at the API boundary (issue 17): every corruption of a CSR/CSC/COO
matrix's arrays gives a typed error, never a crash, a hang or a 22 GiB allocation.

Scipy checks the arrays of a sparse matrix only when it is made, and not even the index ranges
of CSR/CSC; arrays changed afterwards reach its C++ conversions (and the kernels) as they are,
where an index out of range writes past the end of an array: a segmentation fault. The
generators below make a valid random matrix and then corrupt one of its arrays in place
(out-of-range, negative, ``indptr`` past the end of ``indices``, decreasing ``indptr``, wrong
``indptr`` length, a huge declared width), or shuffle it validly (unsorted, repeated indices,
arrays longer than ``indptr`` says), for the features and for the labels, through
``coreselect.select`` and ``GDSSelector.fit``.

The property runs in a child process with an address-space limit, so that a segmentation
fault or a runaway allocation fails this test instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.errors import CoreselectError, InputError, InputTypeError, LimitError

REPO = Path(__file__).resolve().parents[1]

#: Corruptions that make the matrix invalid (a typed error is due) ...
BAD = ("index_high", "index_negative", "indptr_past_end", "indptr_decreasing", "indptr_first",
       "indptr_short", "huge_width", "coo_row_high", "coo_col_negative")
#: ... and changes that keep it valid (the selection must equal the canonical matrix's).
GOOD = ("unsorted", "duplicates", "long_arrays")


@st.composite
def corrupted(draw, kinds=BAD + GOOD):
    """(matrix, canonical dense copy or None when invalid, kind, role, samples of the data)."""
    n = draw(st.integers(4, 12))
    d = draw(st.integers(3, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    role = draw(st.sampled_from(["X", "Y"]))
    if role == "X":
        dense = np.where(rng.random((n, d)) < 0.5, rng.integers(1, 5, (n, d)), 0).astype(float)
    else:
        dense = (rng.random((n, d)) < 0.4).astype(float)
    dense[0] = 1  # at least one value per column and row, so every corruption has a target
    kind = draw(st.sampled_from(kinds))
    fmt = "coo" if kind.startswith("coo") else draw(st.sampled_from(["csr", "csc"]))
    M = sp.coo_matrix(dense) if fmt == "coo" else (sp.csr_matrix(dense) if fmt == "csr"
                                                    else sp.csc_matrix(dense))
    if fmt != "coo":
        M.indices = M.indices.astype(draw(st.sampled_from([np.int32, np.int64])))
        M.indptr = M.indptr.astype(M.indices.dtype)
    n_minor = dense.shape[1] if fmt == "csr" else dense.shape[0]
    r = draw(st.integers(0, 10**6))
    expect = None
    if kind == "index_high":
        M.indices[draw(st.integers(0, M.nnz - 1))] = n_minor + r % (2**31 - n_minor - 1)
    elif kind == "index_negative":
        M.indices[draw(st.integers(0, M.nnz - 1))] = -1 - r
    elif kind == "indptr_past_end":
        M.indptr[draw(st.integers(1, M.indptr.size - 1)):] = M.nnz + 1 + r % 1000
    elif kind == "indptr_decreasing":
        i = draw(st.integers(1, M.indptr.size - 2))
        M.indptr[i] = M.indptr[i + 1] + 1 + r % 5
    elif kind == "indptr_first":
        M.indptr[0] = 1 + r % M.nnz
    elif kind == "indptr_short":
        M.indptr = M.indptr[:-1 - r % (M.indptr.size - 1)]
    elif kind == "huge_width":
        M = sp.csr_matrix((M.tocsr().data, M.tocsr().indices, M.tocsr().indptr),
                          shape=(dense.shape[0], 3_000_000_000 + r)) if fmt == "csr" else \
            sp.csc_matrix((M.tocsc().data, M.tocsc().indices, M.tocsc().indptr),
                          shape=(3_000_000_000 + r, dense.shape[1]))
    elif kind == "coo_row_high":
        M.row[draw(st.integers(0, M.nnz - 1))] = dense.shape[0] + r
    elif kind == "coo_col_negative":
        M.col[draw(st.integers(0, M.nnz - 1))] = -1 - r
    elif kind == "unsorted":
        for i in range(M.indptr.size - 1):
            a, b = M.indptr[i], M.indptr[i + 1]
            order = a + rng.permutation(b - a)
            M.indices[a:b], M.data[a:b] = M.indices[order], M.data[order]
        M.has_sorted_indices = False
        expect = dense
    elif kind == "duplicates":
        # Split every value v into v - 1 and 1 at the same place: scipy's meaning is their sum.
        rows = np.repeat(np.arange(M.indptr.size - 1), np.diff(M.indptr))
        ones = M.data >= 2 if role == "X" else np.zeros(M.nnz, dtype=bool)
        data = np.concatenate([M.data - ones, np.ones(ones.sum())])
        idx = np.concatenate([M.indices, M.indices[ones]])
        major = np.concatenate([rows, rows[ones]])
        order = np.argsort(major, kind="stable")
        ptr = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=M.indptr.size - 1))])
        M = type(M)((data[order], idx[order], ptr), shape=M.shape)
        expect = dense
    elif kind == "long_arrays":
        M.indices = np.concatenate([M.indices, np.full(3, -7, dtype=M.indices.dtype)])
        M.data = np.concatenate([M.data, np.full(3, 99.0)])
        expect = dense
    return M, expect, kind, role, dense.shape[0]


def _run(M, role: str, n: int, d: int, how: str):
    rng = np.random.default_rng(0)
    other_X = rng.integers(0, 4, (n, d)).astype(float)
    other_X[:, 0] = np.arange(n) % 3
    other_Y = np.zeros((n, 2))
    other_Y[::2, 0] = 1
    other_Y[:3, 1] = 1
    X, Y = (M, other_Y) if role == "X" else (other_X, M)
    if how == "select":
        import coreselect

        return coreselect.select(X, Y, k=2, n_bins=3, min_bin_count=1).selected
    from coreselect import GDSSelector

    return GDSSelector(k=2, n_bins=3, min_bin_count=1).fit(X, Y).selected_


def check_one(M, expect, kind, role, n) -> None:
    """The property: a typed error for a bad matrix; the canonical matrix's selection else."""
    for how in ("select", "fit"):
        if expect is None:
            try:
                _run(M, role, n, 5, how)
            except (InputError, InputTypeError, LimitError) as exc:
                assert "\n" not in str(exc), str(exc)
                continue
            except CoreselectError as exc:  # pragma: no cover - a typed error, but not input's
                raise AssertionError(f"{kind}/{role}/{how}: {type(exc).__name__}: {exc}")
            raise AssertionError(f"{kind}/{role}/{how}: a malformed matrix was accepted")
        else:
            got = _run(M, role, n, 5, how)
            want = _run(sp.csr_matrix(expect), role, n, 5, how)
            np.testing.assert_array_equal(got, want, err_msg=f"{kind}/{role}/{how}")


@settings(max_examples=150, deadline=None)
@given(corrupted())
def property_malformed_sparse(case):
    check_one(*case)


_CHILD = textwrap.dedent("""
    import resource, sys
    limit = 6 << 30  # a 22 GiB allocation fails here instead of swapping the machine
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.path.insert(0, {tests!r})
    from hypothesis import settings
    settings.register_profile("child", database=None, derandomize={derandomize},
                              print_blob=True)
    settings.load_profile("child")
    import test_api_fuzz_sparse as t
    t.property_malformed_sparse()
    print("fuzz ok")
""")


def test_malformed_sparse_input_gives_typed_errors_in_a_child():
    derandomize = bool(settings().derandomize)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD.format(tests=str(REPO / "tests"), derandomize=derandomize)],
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0 and "fuzz ok" in proc.stdout, (
        f"child exited {proc.returncode} (negative: killed by a signal, -11 a segfault)\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")


@pytest.mark.parametrize("kind", BAD + GOOD)
def test_each_corruption_in_process(kind):
    """A few examples of each kind in this process too (the child has shown that none
    crashes), so that a failure shows its traceback here."""

    @settings(max_examples=8, deadline=None)
    @given(corrupted(kinds=(kind,)))
    def check(case):
        check_one(*case)

    check()


@pytest.mark.parametrize("make", [
    lambda: np.ones((4, 3)) * (1 + 1j),
    lambda: sp.csr_matrix(np.eye(4, 3) * 1j),
])
def test_complex_features_are_refused(make):
    import coreselect

    Y = np.array([[1], [0], [1], [0]])
    with pytest.raises(InputTypeError, match="complex"):
        coreselect.select(make(), Y, k=1, min_bin_count=1)
    from coreselect import GDSSelector

    with pytest.raises(InputError):  # scikit-learn's validation refuses it first, typed
        GDSSelector(k=1, min_bin_count=1).fit(make(), Y)
