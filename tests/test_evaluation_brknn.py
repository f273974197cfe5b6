"""BRkNN-b against a tiny hand-worked example (Mulan's BRkNN, ExtensionType.EXTB)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _knn_data import KINDS, neighbour_columns
from coreselect.evaluation.brknn import BRkNNb

# one feature, range [0, 10]; labels A, B, C
X = np.array([[0.0], [1.0], [2.0], [4.0], [8.0], [10.0]])
Y = np.array(
    [
        [1, 0, 0],  # x=0  {A}
        [1, 1, 0],  # x=1  {A,B}
        [1, 0, 0],  # x=2  {A}
        [0, 1, 1],  # x=4  {B,C}
        [0, 0, 1],  # x=8  {C}
        [0, 1, 1],  # x=10 {B,C}
    ]
)
N, L = 6, 3


def test_confidences_and_count_by_hand():
    # x=0.9, k=3: neighbours x=1, 0, 2 -> counts A=3, B=1, C=0; 4 labels in all.
    clf = BRkNNb(n_neighbors=3).fit(X, Y)
    conf = clf.predict_proba(np.array([[0.9]]))[0]
    denom = 3 + L / N  # Mulan's correction
    assert conf == pytest.approx([(3 + 1 / N) / denom, (1 + 1 / N) / denom, (0 + 1 / N) / denom])
    # round(4 / 3.5) = 1 label: the most confident one
    assert clf.predict(np.array([[0.9]])).tolist() == [[1, 0, 0]]


def test_plain_fractions_without_correction():
    clf = BRkNNb(n_neighbors=3, mulan_correction=False).fit(X, Y)
    assert clf.predict_proba(np.array([[0.9]]))[0] == pytest.approx([1, 1 / 3, 0])


def test_ties_at_kth_distance_are_included_and_rounding_is_java():
    # x=9, k=1: x=8 and x=10 are both at distance 1 -> both are neighbours (Weka).
    # counts C=2, B=1, 3 labels over 2 neighbours.
    clf = BRkNNb(n_neighbors=1).fit(X, Y)
    conf = clf.predict_proba(np.array([[9.0]]))[0]
    assert conf == pytest.approx(np.array([0, 1, 2]) / (2 + L / N) + (1 / N) / (2 + L / N))
    # Mulan: round(3 / 2.5) = 1 -> {C}
    assert clf.predict(np.array([[9.0]])).tolist() == [[0, 0, 1]]
    # plain mean 3/2 = 1.5 rounds half up (Java Math.round) to 2 -> {B, C}
    plain = BRkNNb(n_neighbors=1, mulan_correction=False).fit(X, Y)
    assert plain.predict(np.array([[9.0]])).tolist() == [[0, 1, 1]]


def test_label_count_rounds_an_even_half_up():
    # n = 2 training rows, L = 2 labels, k = 1: the one neighbour has one label, so Mulan's
    # mean label count is 1 / (1 + L/n) = 0.5. Java's Math.round gives 1 (numpy's round
    # half to even would give 0 and predict nothing).
    clf = BRkNNb(n_neighbors=1).fit(np.array([[0.0], [1.0]]), np.array([[1, 0], [0, 0]]))
    assert clf.predict(np.array([[0.0]])).tolist() == [[1, 0]]
    # plain mean 5/2 = 2.5 -> 3 labels (half to even would give 2)
    Xp = np.array([[0.0], [0.0], [5.0]])
    Yp = np.array([[1, 1, 1], [1, 1, 0], [0, 0, 0]])
    plain = BRkNNb(n_neighbors=2, mulan_correction=False).fit(Xp, Yp)
    assert plain.predict(np.array([[0.0]])).tolist() == [[1, 1, 1]]


def test_exactly_k_without_ties():
    clf = BRkNNb(n_neighbors=1, include_ties=False).fit(X, Y)
    conf = clf.predict_proba(np.array([[9.0]]))[0]
    assert np.isclose(conf.max(), (1 + 1 / N) / (1 + L / N))


def test_tie_at_cutoff_is_random_but_reproducible():
    # x=3.2, k=3: neighbours x=4, 2, 1 -> A=2, B=2, C=1; round(5/3.5) = 1 label, A and B tied.
    preds = {tuple(BRkNNb(n_neighbors=3, random_state=s).fit(X, Y).predict(np.array([[3.2]]))[0]) for s in range(20)}
    assert preds <= {(1, 0, 0), (0, 1, 0)}
    assert len(preds) == 2  # both tie outcomes occur across seeds
    a = BRkNNb(n_neighbors=3, random_state=7).fit(X, Y).predict(np.array([[3.2]] * 5))
    b = BRkNNb(n_neighbors=3, random_state=7).fit(X, Y).predict(np.array([[3.2]] * 5))
    assert (a == b).all()


def test_minmax_normalization_uses_training_ranges():
    # feature 1 is feature 0 times 1000 plus noise-free offset; a constant feature is ignored
    X3 = np.column_stack([X[:, 0], 1000 * X[:, 0] + 5, np.full(N, 3.0)])
    q = np.array([[0.9, 905.0, 7.0], [9.0, 9005.0, 3.0], [12.0, 12005.0, 3.0]])
    clf = BRkNNb(n_neighbors=3).fit(X3, Y)
    assert clf.ranges_.tolist() == [10.0, 10000.0, 0.0]
    ref = BRkNNb(n_neighbors=3).fit(X, Y).predict(q[:, :1])
    assert (clf.predict(q) == ref).all()
    # same answer on sparse input
    assert (BRkNNb(n_neighbors=3).fit(sp.csr_matrix(X3), Y).predict(sp.csr_matrix(q)) == ref).all()


def test_zero_predicted_labels():
    Y0 = np.zeros_like(Y)
    Y0[0] = [1, 0, 0]
    pred = BRkNNb(n_neighbors=5).fit(X, Y0).predict(np.array([[9.0]]))
    assert pred.tolist() == [[0, 0, 0]]


def test_the_protocol_builds_a_five_neighbour_brknn_b(monkeypatch):
    """The classifier the protocol actually builds (not the class default) has 5 neighbours,
    Weka's ties and Mulan's correction, and is fit on the selected columns only."""
    from coreselect.evaluation import protocol

    built = []

    class Spy(BRkNNb):
        def fit(self, X, Y):
            built.append((self.get_params(), X.shape[1]))
            return super().fit(X, Y)

    monkeypatch.setattr(protocol, "BRkNNb", Spy)
    rng = np.random.default_rng(0)
    Xr, Yr = rng.normal(size=(50, 4)), rng.integers(0, 2, (50, 5))
    protocol._score(Xr[:40], Yr[:40], Xr[40:], Yr[40:], np.array([2, 0]))
    assert len(built) == 1
    params, n_features = built[0]
    assert params["n_neighbors"] == 5 and params["include_ties"] and params["mulan_correction"]
    assert n_features == 2
    p = Spy().fit(Xr, Yr).predict(Xr[:7])
    assert p.shape == (7, 5) and set(np.unique(p)) <= {0, 1}


def _naive(Xtr, Ytr, Xte, k):
    """Per query: all training rows within the k-th smallest distance (Weka's ties)."""
    lo, hi = Xtr.min(0), Xtr.max(0)
    sc = np.where(hi > lo, 1 / np.where(hi > lo, hi - lo, 1), 0)
    A, B = (Xtr - lo) * sc, (Xte - lo) * sc
    out = []
    for q in B:
        d = ((A - q) ** 2).sum(1)
        kth = np.sort(d)[k - 1]
        nb = np.flatnonzero(d <= kth + 1e-12)
        c = Ytr[nb].sum(0)
        out.append((c + 1 / len(A)) / (len(nb) + Ytr.shape[1] / len(A)))
    return np.array(out)


def test_binary_features_with_many_ties_match_naive():
    rng = np.random.default_rng(3)
    Xtr, Xte = rng.integers(0, 2, (80, 4)).astype(float), rng.integers(0, 2, (30, 4)).astype(float)
    Ytr = rng.integers(0, 2, (80, 5))
    clf = BRkNNb(n_neighbors=5).fit(Xtr, Ytr)
    assert np.allclose(clf.predict_proba(Xte), _naive(Xtr, Ytr, Xte, 5))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_tr=st.integers(1, 60), n_q=st.integers(1, 20),
       d=st.integers(1, 10), L=st.integers(1, 30),
       kind=st.sampled_from(KINDS), sparse=st.booleans(),
       density=st.floats(0.0, 1.0), neighbours=st.integers(1, 8))
def test_compiled_neighbour_counts_equal_the_numpy_form(seed, n_tr, n_q, d, L, kind, sparse,
                                                        density, neighbours):
    """The compiled neighbour search (k-th smallest distance, Weka's ties, label counts from
    the labels' CSR rows) gives the numpy form's counts and neighbour numbers exactly: binary
    and few-valued columns (many ties at the k-th distance), constant columns (every training
    row a neighbour), fewer training rows than neighbours, sparse input, rows without labels."""
    from coreselect.core._backend import numba_enabled
    from coreselect.evaluation.brknn import _minmax_scale

    if not numba_enabled("auto"):
        pytest.skip("the numpy kernels run here (CORESELECT_NUMBA=0)")
    rng = np.random.default_rng(seed)
    X = neighbour_columns(rng, (n_tr + n_q, d), kind)
    if sparse:
        X = sp.csr_matrix(X)
    Y = rng.random((n_tr + n_q, L)) < density
    clf = BRkNNb(n_neighbors=neighbours).fit(X[:n_tr], Y[:n_tr])
    Xq = _minmax_scale(X[n_tr:], clf.mins_, clf._scale)
    counts, sizes = clf._neighbour_counts(Xq)
    want_counts, want_sizes = clf._neighbour_counts(Xq, backend="numpy")
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(sizes, want_sizes)
    assert counts.dtype == want_counts.dtype and sizes.dtype == want_sizes.dtype


def test_the_compiled_neighbour_counts_run_where_they_apply(monkeypatch):
    """Ties included (the default) and numba in use: the compiled counts run (a dispatch that
    fell back to numpy everywhere would pass the equality test above); ``backend="numpy"``,
    exactly k neighbours (``include_ties=False``) and ``CORESELECT_NUMBA=0`` run the numpy
    form; fewer than one neighbour is refused with a typed error."""
    import coreselect.evaluation.brknn as brknn
    from coreselect.core._backend import numba_enabled
    from coreselect.selection._knn_kernels import neighbour_label_counts

    if not numba_enabled("auto"):
        pytest.skip("the numpy kernels run here (CORESELECT_NUMBA=0)")
    assert brknn._compiled_counts("auto") is neighbour_label_counts
    calls = []
    monkeypatch.setattr(brknn, "_compiled_counts", lambda backend: (
        None if backend == "numpy" else
        lambda *a: (calls.append(1), neighbour_label_counts(*a))))
    rng = np.random.default_rng(0)
    X, Y = rng.random((30, 4)), rng.random((30, 3)) < 0.5
    clf = BRkNNb().fit(X[:20], Y[:20])
    clf.predict(X[20:])
    assert calls, "the compiled counts did not run"
    calls.clear()
    Xq = brknn._minmax_scale(X[20:], clf.mins_, clf._scale)
    clf._neighbour_counts(Xq, backend="numpy")
    BRkNNb(include_ties=False).fit(X[:20], Y[:20]).predict(X[20:])
    assert calls == []
    from coreselect.errors import InputError

    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="n_neighbors"):
            BRkNNb(n_neighbors=bad).fit(X[:20], Y[:20])
    monkeypatch.undo()
    monkeypatch.setenv("CORESELECT_NUMBA", "0")
    assert brknn._compiled_counts("auto") is None


def test_a_near_duplicate_at_distance_zero_is_a_tied_neighbour():
    """Weka's tolerance is absolute below 1: with the k-th distance exactly 0, a training row
    1e-14 away (squared) is still a neighbour, in both forms (a tolerance relative to the
    k-th distance would drop it)."""
    from coreselect.evaluation.brknn import _minmax_scale

    Xtr, Ytr = np.array([[0.0], [1e-7], [1.0]]), np.array([[1, 0], [0, 1], [0, 0]])
    clf = BRkNNb(n_neighbors=1).fit(Xtr, Ytr)
    Xq = _minmax_scale(np.array([[0.0]]), clf.mins_, clf._scale)
    for backend in ("auto", "numpy"):
        counts, sizes = clf._neighbour_counts(Xq, backend=backend)
        assert sizes.tolist() == [2.0] and counts.tolist() == [[1.0, 1.0]], backend


def test_query_rows_over_several_blocks(monkeypatch):
    """Query rows are searched a block at a time: with blocks of three rows, every block's
    counts land on its own rows (compiled and numpy forms alike, and as the naive search)."""
    import coreselect.evaluation.brknn as brknn

    rng = np.random.default_rng(5)
    Xtr, Xte = rng.random((20, 3)), rng.random((11, 3))
    Ytr = rng.integers(0, 2, (20, 4))
    monkeypatch.setattr(brknn, "_BLOCK_BYTES", 8 * 20 * 3 * 3)
    clf = BRkNNb(n_neighbors=3).fit(Xtr, Ytr)
    Xq = brknn._minmax_scale(Xte, clf.mins_, clf._scale)
    fast, slow = clf._neighbour_counts(Xq), clf._neighbour_counts(Xq, backend="numpy")
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    assert np.allclose(clf.predict_proba(Xte), _naive(Xtr, Ytr, Xte, 3))


def test_a_numpy_integer_number_of_neighbours_is_accepted():
    """``n_neighbors`` from a numpy grid (``np.int64``) is an integer like any other."""
    rng = np.random.default_rng(6)
    X, Y = rng.random((30, 3)), rng.integers(0, 2, (30, 4))
    a = BRkNNb(n_neighbors=np.int64(5)).fit(X[:20], Y[:20])
    b = BRkNNb(n_neighbors=5).fit(X[:20], Y[:20])
    np.testing.assert_array_equal(a.predict(X[20:]), b.predict(X[20:]))
    np.testing.assert_array_equal(a.predict_proba(X[20:]), b.predict_proba(X[20:]))
