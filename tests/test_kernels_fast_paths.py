"""The blocked, threaded count kernels against the per-pair histograms of tests/reference.py,
and their invariances: the same bits whatever the thread count, block size, bit-set threshold
or row sharding (integer counts are exact in any order; every cell is filled by one call)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import reference as ref
from coreselect.core import _threads
from coreselect.core.discretize import DiscreteMatrix, discretize_labels
from coreselect.core.entropy import DistanceOracle, joint_entropy, relevance_matrix
from coreselect.core.shards import (
    RowShardedOracle, merge, shard_counts, statistics, step_counts,
)
from coreselect.engines.rowsharded import row_slice

E = sys.modules["coreselect.core.entropy"]  # the module (the package exports a function)
pytest.importorskip("numba")


@st.composite
def problems(draw, max_n=300, max_d=6, max_labels=5):
    """Code matrices over the dimensions that vary: 0/1/many rows and columns, sparse to
    dense, columns with few or many codes, label columns binary or multi-valued."""
    n = draw(st.sampled_from([1, 2, 3, 17, 64, 257, max_n]))
    d = draw(st.integers(0, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    density = draw(st.sampled_from([0.0, 0.02, 0.3, 0.9, 1.0]))
    codes = draw(st.sampled_from([1, 2, 4, 12]))
    C = rng.integers(1, codes + 1, size=(n, d)) * (rng.random((n, d)) < density)
    n_labels = draw(st.integers(1, max_labels))
    label_codes = draw(st.sampled_from([2, 2, 3, 40]))
    if label_codes == 2:
        Y = (rng.random((n, n_labels)) < draw(st.sampled_from([0.0, 0.1, 0.5, 0.97]))).astype(int)
        labels = discretize_labels(Y)
    else:
        Y = rng.integers(0, label_codes, size=(n, n_labels))
        labels = DiscreteMatrix.from_dense_codes(Y)
    return DiscreteMatrix.from_dense_codes(C), C, labels, Y


# Every example sets every knob, so the fixture's state carries nothing between examples.
FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@pytest.fixture
def knobs(monkeypatch):
    """Set the kernels' block sizes, bit-set threshold and thread count."""
    def set_(*, bitset=None, block=None, threaded=None, part=None, threads=None):
        if bitset is not None:
            monkeypatch.setattr(E, "BITSET_MAX_SLOTS", bitset)
        if block is not None:
            monkeypatch.setattr(E, "RELEVANCE_BLOCK_CELLS", block)
        if threaded is not None:
            monkeypatch.setattr(E, "THREADED_MIN_CELLS", threaded)
        if part is not None:
            monkeypatch.setattr(E, "SLOT_ROWS_PART_CELLS", part)
        if threads is not None:
            monkeypatch.setattr(_threads, "n_threads", lambda: threads)
    return set_


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


SETTINGS = [  # (bit sets up to, relevance block cells, threaded from, slot-copy part, threads)
    (256, 1 << 18, 1 << 16, 1 << 20, 1),
    (0, 1, 0, 1, 2),         # CSR gather, one column per block, everything threaded
    (10**9, 7, 0, 5, 3),     # bit sets of several words, odd blocks, three threads
    (64, 1 << 18, 0, 1, 4),
]


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(problem=problems(), setting=st.sampled_from(SETTINGS))
def test_relevance_kernel_matches_reference_histograms(knobs, problem, setting):
    A, C, labels, Y = problem
    bitset, block, threaded, part, threads = setting
    knobs(bitset=bitset, block=block, threaded=threaded, part=part, threads=threads)
    H = joint_entropy(A, labels, "numba")
    assert H.shape == (A.n_columns, labels.n_columns)
    for i in range(A.n_columns):
        for j in range(labels.n_columns):
            assert H[i, j] == pytest.approx(ref.entropy(C[:, i], Y[:, j]), abs=1e-11)
    R = relevance_matrix(A, labels, "mi", "numba")
    for i in range(A.n_columns):
        for j in range(labels.n_columns):
            assert R[i, j] == pytest.approx(ref.mutual_information(C[:, i], Y[:, j]), abs=1e-11)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(problem=problems(max_d=8), setting=st.sampled_from(SETTINGS))
def test_distance_kernel_matches_reference_distances(knobs, problem, setting):
    A, C, _, _ = problem
    bitset, block, threaded, part, threads = setting
    knobs(bitset=bitset, block=block, threaded=threaded, part=part, threads=threads)
    oracle = DistanceOracle(A, "numba")
    for u in range(A.n_columns):
        row = oracle.distances_from(u)
        for v in range(A.n_columns):
            assert row[v] == pytest.approx(ref.distance(C[:, u], C[:, v]), abs=1e-11)
    # The scratch tables are left clean: calling again gives the same bits.
    for u in range(A.n_columns):
        assert _bits(oracle.distances_from(u)) == _bits(oracle.distances_from(u))


@settings(max_examples=30, deadline=None, suppress_health_check=FIXTURE_OK)
@given(problem=problems(max_n=700, max_d=12, max_labels=9))
@example(problem=(  # 300 rows where feature and label are both on: a byte lane fills up
    DiscreteMatrix.from_dense_codes((np.arange(700) < 300).astype(int)[:, None]), None,
    discretize_labels(np.column_stack([np.arange(700) < 300, np.arange(700) % 2]).astype(int)),
    None))
def test_same_bits_whatever_threads_blocks_and_bitsets(knobs, problem):
    """Every setting of the knobs gives the first setting's results bit for bit."""
    A, _, labels, _ = problem
    first = None
    for setting in SETTINGS:
        bitset, block, threaded, part, threads = setting
        knobs(bitset=bitset, block=block, threaded=threaded, part=part, threads=threads)
        oracle = DistanceOracle(A, "numba")
        got = (_bits(relevance_matrix(A, labels, "nmi", "numba")),
               _bits(joint_entropy(A, labels, "numba")),
               [_bits(oracle.distances_from(u)) for u in range(A.n_columns)])
        if first is None:
            first = got
        assert got == first, setting


@settings(max_examples=25, deadline=None, suppress_health_check=FIXTURE_OK)
@given(problem=problems(max_d=8), cuts=st.lists(st.floats(0, 1), max_size=3),
       setting=st.sampled_from(SETTINGS))
def test_row_shards_give_the_in_memory_bits(knobs, problem, cuts, setting):
    """Merged shard counts and summed step counts go through the same fill as the in-memory
    kernels: relevance and distances equal to the last bit, whatever the row cuts (empty
    shards included)."""
    A, _, labels, _ = problem
    bitset, block, threaded, part, threads = setting
    knobs(bitset=bitset, block=block, threaded=threaded, part=part, threads=threads)
    n = A.n_samples
    bounds = [0] + sorted(int(c * n) for c in cuts) + [n]
    shards = [(row_slice(A, lo, hi), row_slice(labels, lo, hi))
              for lo, hi in zip(bounds[:-1], bounds[1:])]
    total = shard_counts(*shards[0], "numba")
    for f, l in shards[1:]:
        total = merge(total, shard_counts(f, l, "numba"))
    assert total == shard_counts(A, labels, "numpy")  # the counts themselves are exact
    stats = statistics(total, "nmi", "numba")
    assert _bits(stats.relevance) == _bits(relevance_matrix(A, labels, "nmi", "numba"))
    sharded = RowShardedOracle(stats, lambda u: sum(step_counts(f, u, "numba") for f, _ in shards),
                               "numba")
    oracle = DistanceOracle(A, "numba")
    for u in range(A.n_columns):
        assert _bits(sharded.distances_from(u)) == _bits(oracle.distances_from(u))
        np.testing.assert_array_equal(step_counts(A, u, "numba"), step_counts(A, u, "numpy"))


def test_numba_thread_setting_is_followed_and_changes_no_bit():
    numba = pytest.importorskip("numba")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core here")
    # Not a skip: a 1 here on a machine with more cores means something set
    # NUMBA_NUM_THREADS in this process (a Dask nanny's pre-spawn variables did, once).
    assert numba.config.NUMBA_NUM_THREADS >= 2, os.environ.get("NUMBA_NUM_THREADS")
    rng = np.random.default_rng(7)
    X = sp.random(3000, 400, density=0.1, random_state=8, format="csc")
    X.data = np.ceil(X.data * 3)
    A = DiscreteMatrix.from_dense_codes(X.toarray().astype(int))
    labels = discretize_labels((rng.random((3000, 20)) < 0.2).astype(int))
    before = numba.get_num_threads()
    results = {}
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            assert _threads.n_threads() == threads
            oracle = DistanceOracle(A, "numba")
            results[threads] = (_bits(relevance_matrix(A, labels, "mi", "numba")),
                                [_bits(oracle.distances_from(u)) for u in range(0, 400, 7)])
    finally:
        numba.set_num_threads(before)
    assert results[1] == results[2]


FIT = textwrap.dedent("""
    import json, numpy as np
    from coreselect import GDSSelector
    from coreselect.datasets.synthetic import make_sparse_multilabel
    from coreselect.core import _threads
    ds = make_sparse_multilabel(n_samples=4000, n_features=600, n_labels=12, density=0.1,
                                n_relevant=20, n_redundant=30, random_state=3)
    s = GDSSelector(k=25).fit(ds.X, ds.Y)
    print(json.dumps({"threads": _threads.n_threads(), "selected": s.selected_.tolist(),
                      "objective": float(s.objective_).hex()}))
""")


def test_whole_fit_is_identical_with_one_or_two_numba_threads():
    import json

    out = {}
    for threads in ("1", "2"):
        env = {**os.environ, "NUMBA_NUM_THREADS": threads}
        run = subprocess.run([sys.executable, "-c", FIT], capture_output=True, text=True,
                             env=env, timeout=600)
        assert run.returncode == 0, run.stderr
        out[threads] = json.loads(run.stdout.strip().splitlines()[-1])
        assert out[threads]["threads"] == int(threads)
    assert out["1"]["selected"] == out["2"]["selected"]
    assert out["1"]["objective"] == out["2"]["objective"]


def test_threads_run_every_block_once_and_serially_inside_a_pool_thread():
    seen = []
    _threads.run_blocks(seen.append, 50, threads=3)
    assert sorted(seen) == list(range(50))
    nested = []

    def outer(b):
        inner = []
        _threads.run_blocks(inner.append, 4, threads=3)  # no nested pool: in order, here
        nested.append(inner)

    _threads.run_blocks(outer, 3, threads=2)
    assert nested == [[0, 1, 2, 3]] * 3

    def fails(b):
        if b == 5:
            raise ValueError("block 5")

    with pytest.raises(ValueError, match="block 5"):
        _threads.run_blocks(fails, 8, threads=2)


@pytest.mark.parametrize("threads, ahead", [(1, None), (2, 1), (3, 2), (2, None), (4, 3)])
def test_map_ordered_yields_in_order_and_holds_at_most_ahead_results(threads, ahead):
    """Results in the items' order; with ``ahead``, never more items started and not yet
    yielded than that (what bounds the row shards' count tables held at once)."""
    import threading as th

    lock, held, most = th.Lock(), [0], [0]

    def fn(i):
        with lock:
            held[0] += 1
            most[0] = max(most[0], held[0])
        time.sleep(0.002 * (i % 3))  # uneven work per item
        return i * i

    out = []
    for r in _threads.map_ordered(fn, range(23), threads, ahead=ahead):
        with lock:
            held[0] -= 1
        out.append(r)
    assert out == [i * i for i in range(23)]
    if ahead is not None:
        assert most[0] <= max(ahead, 1)


def test_map_ordered_raises_in_place_and_leaves_nothing_running():
    import threading as th

    started, finished, lock = [], [], th.Lock()

    def fn(i):
        with lock:
            started.append(i)
        time.sleep(0.05 if i == 6 else 0.001)
        with lock:
            finished.append(i)
        if i == 5:
            raise ValueError("item 5")
        return i

    got = []
    with pytest.raises(ValueError, match="item 5"):
        for r in _threads.map_ordered(fn, range(40), 3, ahead=3):
            got.append(r)
    assert got == [0, 1, 2, 3, 4]
    assert sorted(started) == sorted(finished)  # every started item ended before the raise
    assert max(started) <= 5 + 3  # the items past the window were never started


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_blocks_on_its_own_threads():
    _threads.run_blocks(lambda b: None, 4, threads=2)  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        seen = []
        try:
            _threads.run_blocks(seen.append, 6, threads=2)
            os._exit(0 if sorted(seen) == list(range(6)) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_labels=st.integers(0, 7), p=st.integers(1, 6),
       steps=st.integers(1, 12), levels=st.sampled_from([2, 3, 1000]))
@example(seed=0, n_labels=3, p=2, steps=6, levels=2)
def test_compiled_top_table_is_numpys_bit_for_bit(seed, n_labels, p, steps, levels):
    """New relevances entering the per-label top-p table: the compiled insertion leaves the
    table numpy's merge and sort leaves, and reports the same labels whose p-th value rose,
    with the same values before and after (ties, zeros, values equal to the p-th included)."""
    from coreselect.core._numba import enter_top as compiled
    from coreselect.core.objective import enter_top

    rng = np.random.default_rng(seed)
    want, got = np.zeros((n_labels, p)), np.zeros((n_labels, p))
    relevance = np.asfortranarray(rng.integers(0, levels, (steps, n_labels)) / (levels - 1))
    raised, old, new = np.empty(n_labels, np.int64), np.empty(n_labels), np.empty(n_labels)
    for row in relevance:  # rows of a column-major matrix, as the greedy reads them
        labels, before, after = enter_top(want, row)
        count = compiled(got, row, raised, old, new)
        assert _bits(got) == _bits(want)
        assert raised[:count].tolist() == labels.tolist()
        assert _bits(old[:count]) == _bits(before[labels])
        assert _bits(new[:count]) == _bits(after[labels])


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 60),
       calibration=st.sampled_from(["range", "balanced", "information"]),
       lam=st.sampled_from([0.0, 0.3, 0.5, 1.0]), skip_copies=st.booleans(),
       levels=st.sampled_from([2, 5, 1000]))
def test_compiled_range_step_is_numpys_step_bit_for_bit(seed, d, calibration, lam, skip_copies,
                                                       levels):
    """The compiled step of the min-max calibrations (the default's, with minus its shared
    information as the diversity) against step_scores and
    argmax_first: the same score bits for every candidate and the same pick, with ties (few
    distinct values), picked and copied columns, gains below the rounding floor and equal
    gains (zero spread)."""
    from coreselect.core._numba import range_pick
    from coreselect.core.greedy import GAIN_RTOL, step_scores
    from coreselect.core.objective import TIE_RTOL, ObjectiveParams, argmax_first

    rng = np.random.default_rng(seed)
    gains = rng.integers(0, levels, d) / (levels - 1) * rng.choice([1e-12, 1.0, 7.5])
    diversity = rng.integers(0, levels, d) / (levels - 1) * rng.choice([0.5, 3.0, 40.0])
    if calibration == "information":  # minus the shared bits: zeros and negatives
        diversity = -diversity
    penalty = np.where(rng.random(d) < 0.3, -np.inf, 0.0)
    penalty[rng.integers(d)] = 0.0  # a candidate is left
    copies = rng.random(d) < rng.choice([0.0, 0.2, 1.0])
    scale = float(gains.max()) if gains.max() > 0 else 0.0
    params = ObjectiveParams(k=10, lam=lam, p=3, n_labels=4, calibration=calibration)
    live = penalty == 0.0
    if skip_copies and np.any(live & ~copies):
        live &= ~copies
    expected = step_scores(params, gains, diversity, 3, live, relevance_scale=scale)
    expected = expected + np.where(live, 0.0, -np.inf)
    scores = np.empty(d)
    got = range_pick(gains, diversity, penalty, copies, skip_copies, GAIN_RTOL * scale, lam,
                     1.0 if calibration == "balanced" else 0.0, TIE_RTOL, scores)
    assert got == argmax_first(expected)
    assert _bits(scores) == _bits(expected)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), d=st.integers(2, 40),
       density=st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]), levels=st.sampled_from([2, 3, 6]))
def test_distance_step_with_and_without_slot_marks_is_the_same_bits(monkeypatch, seed, n, d,
                                                                    density, levels):
    """A distance step marks the slots it gathered (sparse data) or not (dense data): the
    fill that skips unmarked columns and the one that reads every column give the same bits,
    and both equal the numpy backend's distances."""
    import importlib

    from coreselect.core.discretize import discretize

    entropy = importlib.import_module("coreselect.core.entropy")  # the module, not the function

    rng = np.random.default_rng(seed)
    X = rng.integers(1, levels, (n, d)) * (rng.random((n, d)) < density)
    a = discretize(sp.csc_matrix(X.astype(float)), n_bins=5, min_bin_count=1)
    u = int(rng.integers(d))
    got = {}
    for cut in (0.0, np.inf):  # never mark, always mark
        monkeypatch.setattr(entropy, "MARK_CELLS_PER_SLOT", cut)
        got[cut] = entropy.DistanceOracle(a, backend="numba").distances_from(u)
    assert _bits(got[0.0]) == _bits(got[np.inf])
    np.testing.assert_allclose(got[0.0],
                               entropy.DistanceOracle(a, backend="numpy").distances_from(u),
                               rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([1, 2, 9, 64, 200]),
       d=st.integers(0, 30), constant=st.sampled_from([0.0, 0.5, 0.8, 1.0]),
       backend=st.sampled_from(["numba", "numpy"]))
def test_relevance_of_mostly_constant_columns_against_the_reference(seed, n, d, constant,
                                                                   backend):
    """When most columns are constant (a sample of text data) only the others' joint tables
    are counted: every value still equals the per-pair histogram's, a constant column's row
    is exactly 0, and the matrix is column-major as the greedy reads it."""
    rng = np.random.default_rng(seed)
    C = rng.integers(1, 4, (n, d)) * (rng.random((n, d)) < 0.3)
    still = rng.random(d) < constant
    C[:, still] = np.where(rng.random(d) < 0.5, 0, 2)[still]  # all 0, or one code everywhere
    Y = (rng.random((n, 3)) < 0.4).astype(int)
    A, labels = DiscreteMatrix.from_dense_codes(C), discretize_labels(Y)
    for kind in ("mi", "nmi"):
        R = relevance_matrix(A, labels, kind, backend)
        assert R.shape == (d, 3)
        for i in range(d):
            for j in range(3):
                want = ref.relevance(C[:, i], Y[:, j], kind)
                assert R[i, j] == pytest.approx(want, abs=1e-11)
        assert np.all(R[A.is_constant] == 0.0)
        if backend == "numba":
            assert R.flags.f_contiguous


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([3, 40, 300]),
       d=st.integers(2, 25), density=st.sampled_from([0.01, 0.1, 0.5]))
def test_distance_steps_in_any_order_equal_fresh_ones(monkeypatch, seed, n, d, density):
    """A one-thread marked step keeps its table and marks between steps and clears what it
    wrote: steps in any order, a column again included, give the bits of a fresh oracle."""
    monkeypatch.setattr(E, "MARK_CELLS_PER_SLOT", np.inf)  # always mark
    monkeypatch.setattr(E, "THREADED_MIN_CELLS", 1 << 62)  # one thread
    rng = np.random.default_rng(seed)
    C = rng.integers(1, 5, (n, d)) * (rng.random((n, d)) < density)
    A = DiscreteMatrix.from_dense_codes(C)
    oracle = DistanceOracle(A, "numba")
    for u in rng.integers(0, d, 2 * d):
        got = oracle.distances_from(int(u))
        assert _bits(got) == _bits(DistanceOracle(A, "numba").distances_from(int(u)))
        for v in rng.integers(0, d, 3):
            assert got[v] == pytest.approx(ref.distance(C[:, u], C[:, v]), abs=1e-11)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([1, 3, 40, 300]),
       d=st.integers(1, 25), density=st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]),
       threads=st.sampled_from([1, 2]), mark=st.sampled_from([0.0, np.inf]),
       informed=st.booleans(), copies=st.booleans())
@example(seed=1, n=300, d=20, density=0.01, threads=1, mark=np.inf, informed=True, copies=True)
@example(seed=2, n=40, d=9, density=0.1, threads=1, mark=0.0, informed=False, copies=False)
def test_step_sums_are_the_numpy_sums_and_the_reference(monkeypatch, seed, n, d, density,
                                                        threads, mark, informed, copies):
    """A greedy's step adds its distances to the candidates' sums in the oracle's own pass
    (one thread) or after it (threads): steps in any order, a column again included, give
    the distances of a fresh oracle and the sums numpy adds from them, bit for bit; the
    sums equal the reference's distances and shared information; a copy is marked."""
    from coreselect.core.entropy import add_distances

    monkeypatch.setattr(E, "MARK_CELLS_PER_SLOT", mark)
    monkeypatch.setattr(E, "THREADED_MIN_CELLS", 1 if threads == 2 else 1 << 62)
    monkeypatch.setattr(_threads, "n_threads", lambda: threads)
    rng = np.random.default_rng(seed)
    C = rng.integers(1, 5, (n, d)) * (rng.random((n, d)) < density)
    C[:, -1] = C[:, 0]  # a copy of column 0 (itself when d = 1)
    A = DiscreteMatrix.from_dense_codes(C)
    oracle = DistanceOracle(A, "numba")
    h = oracle.entropies
    sums = [np.zeros(d), np.zeros(d) if informed else None,
            np.zeros(d, bool) if copies else None]
    want = [np.zeros(d), np.zeros(d) if informed else None,
            np.zeros(d, bool) if copies else None]
    steps = [int(u) for u in rng.integers(0, d, 2 * d)]
    for u in steps:
        got = oracle.add_distances_from(u, *sums, copy_atol=1e-9)
        fresh = DistanceOracle(A, "numba").distances_from(u)
        assert _bits(got) == _bits(fresh)
        want[0] += fresh
        if informed:
            want[1] += E.shared_information(fresh, float(h[u]), h)
        if copies:
            want[2] |= fresh <= 1e-9
        # the compiled sums of distances computed elsewhere: the same bits again
        again = [np.zeros(d), np.zeros(d), np.zeros(d, bool)]
        add_distances(fresh, float(h[u]), h, *again, copy_atol=1e-9, use_numba=True)
        assert _bits(again[0]) == _bits(fresh)
    assert _bits(sums[0]) == _bits(want[0])
    if informed:
        assert _bits(sums[1]) == _bits(want[1])
    if copies:
        assert np.array_equal(sums[2], want[2])
        if 0 in steps:
            assert sums[2][-1]
    for v in range(d):
        ref_d = sum(ref.distance(C[:, u], C[:, v]) for u in steps)
        assert sums[0][v] == pytest.approx(ref_d, abs=1e-9)
        if informed:
            ref_i = sum(ref.mutual_information(C[:, u], C[:, v]) for u in steps)
            assert sums[1][v] == pytest.approx(ref_i, abs=1e-9)


@pytest.mark.parametrize("order", ["F", "C"])
def test_a_sub_problem_keeps_the_relevance_column_major(order):
    """Rows taken for a sub-problem are the same values in the matrix's own order (a
    row-major copy of the column-major relevance would be copied back by the greedy)."""
    from coreselect.core.problem import take_rows

    rng = np.random.default_rng(1)
    M = np.asarray(rng.random((50, 7)), order=order)
    for rows in (np.array([], dtype=np.int64), np.array([3]), np.array([0, 4, 9, 49]),
                 np.arange(50)):
        got = take_rows(M, rows)
        np.testing.assert_array_equal(got, M[rows])
        assert got.flags.f_contiguous if order == "F" else got.flags.c_contiguous


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.sampled_from([0, 1, 2, 7, 40]),
       n_labels=st.sampled_from([0, 1, 3, 8]), kind=st.sampled_from(["mi", "nmi"]),
       order=st.sampled_from("CF"))
def test_compiled_relevance_transform_is_numpys_bit_for_bit(seed, d, n_labels, kind, order):
    """Relevance from entropies in one compiled pass: numpy's six passes' bits, whatever the
    memory order, with constant columns and labels (entropy 0), joint entropies above the sum
    of the marginals (a negative MI, clipped), values that normalize above 1, signed zeros and
    NaN."""
    rng = np.random.default_rng(seed)
    h_x = rng.choice([-0.0, 0.0, 1e-13, 0.5, 1.0, 2.7], d) * rng.random(d).round(1)
    h_l = rng.choice([-0.0, 0.0, 0.3, 1.0], n_labels) * rng.random(n_labels).round(1)
    h_xl = h_x[:, None] + h_l[None, :] - rng.choice([0.0, 0.25, -0.5, 2.0], (d, n_labels))
    h_xl[rng.random((d, n_labels)) < 0.1] = np.nan
    h_xl[rng.random((d, n_labels)) < 0.1] = -0.0
    h_xl[rng.random((d, n_labels)) < 0.1] = 0.0
    h_xl = np.asarray(h_xl, order=order)
    want = E.relevance_from_entropies(h_x, h_l, h_xl.copy(order=order), kind, "numpy")
    got = E.relevance_from_entropies(h_x, h_l, h_xl.copy(order=order), kind, "numba")
    assert _bits(got) == _bits(want)
