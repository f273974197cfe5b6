"""``calibration="cmim"`` (coreselect.core.conditional): the conditional information of every
(feature, label) pair given one feature against a slow reference written from the definition,
the CMIM greedy against a plain loop over that reference, and where the criterion runs (a
centralized selection, from arrays or a column store) and where it is refused."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect import GDSSelector, select
from coreselect.core.conditional import (
    ConditionalTables, cmim, conditional_counts, step_counts,
)
from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.objective import TIE_RTOL
from coreselect.errors import InputError


def reference_cmi(f, l, s) -> float:
    """I(f; l | s) in bits: sum over (a, b, c) of p(a,b,c) log p(a,b,c) p(c) / (p(a,c) p(b,c))."""
    n = len(f)
    abc, ac, bc, c = Counter(zip(f, l, s)), Counter(zip(f, s)), Counter(zip(l, s)), Counter(s)
    return sum(v / n * np.log2(v * c[z] / (ac[(x, z)] * bc[(y, z)]))
               for (x, y, z), v in abc.items())


def reference_cmim(F: np.ndarray, Y: np.ndarray, k: int, selectable=None) -> list[int]:
    """CMIM from the definition: first the largest sum_l I(f; l), then the largest
    sum_l min_{s in S} I(f; l | s); ties to the lowest column."""
    d = F.shape[1]
    ok = np.ones(d, bool) if selectable is None else np.asarray(selectable, bool)
    none = np.zeros(F.shape[0], dtype=int)
    chosen: list[int] = []
    for _ in range(k):
        scores = np.full(d, -np.inf)
        for f in range(d):
            if not ok[f] or f in chosen:
                continue
            given = chosen or [None]
            scores[f] = sum(min(reference_cmi(F[:, f], Y[:, j], none if s is None else F[:, s])
                                for s in given) for j in range(Y.shape[1]))
        best = scores.max()
        chosen.append(int(np.flatnonzero(scores >= best - TIE_RTOL * max(1.0, abs(best)))[0]))
    return chosen


def _tables(F: DiscreteMatrix, Y: DiscreteMatrix) -> ConditionalTables:
    return ConditionalTables(F.n_codes, Y.n_codes, conditional_counts(F, Y))


def _discrete(codes: np.ndarray) -> DiscreteMatrix:
    """Codes as a DiscreteMatrix (relabelled so that every column's codes are 0..m-1)."""
    out = np.zeros_like(codes)
    sizes = []
    for j in range(codes.shape[1]):
        _, out[:, j] = np.unique(codes[:, j], return_inverse=True)
        sizes.append(max(int(out[:, j].max(initial=0)) + 1, 1))
    return DiscreteMatrix(sp.csc_matrix(out), np.array(sizes))


@st.composite
def problems(draw, max_rows=60):
    n = draw(st.integers(1, max_rows))
    d = draw(st.integers(1, 7))
    L = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    m = draw(st.integers(1, 4))
    F = rng.integers(0, m, size=(n, d))
    if draw(st.booleans()):  # near-copies and labels made of the columns: redundancy matters
        for j in range(1, d):
            F[:, j] = np.where(rng.random(n) < 0.3, rng.integers(0, m, n), F[:, rng.integers(j)])
        Y = (F[:, rng.integers(d, size=L)] + F[:, rng.integers(d, size=L)]
             + (rng.random((n, L)) < 0.2)) % 2
    else:
        if d > 1 and draw(st.booleans()):
            F[:, -1] = F[:, 0]  # a copy
        Y = rng.integers(0, draw(st.integers(1, 3)), size=(n, L))
    return _discrete(F), _discrete(Y)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_conditional_information_matches_the_definition(problem):
    F, Y = problem
    Fd, Yd = F.codes.toarray(), Y.codes.toarray()
    tables = _tables(F, Y)
    none = np.zeros(F.n_samples, dtype=int)
    want = np.array([[reference_cmi(Fd[:, i], Yd[:, j], none) for j in range(Yd.shape[1])]
                     for i in range(Fd.shape[1])])
    np.testing.assert_allclose(tables.relevance(), want, atol=1e-9)
    for s in range(Fd.shape[1]):
        want = np.array([[reference_cmi(Fd[:, i], Yd[:, j], Fd[:, s])
                          for j in range(Yd.shape[1])] for i in range(Fd.shape[1])])
        np.testing.assert_allclose(tables.given(step_counts(F, Y, s)), want, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(problems(), st.data())
def test_cmim_picks_what_the_definition_picks(problem, data):
    F, Y = problem
    selectable = np.array(data.draw(st.lists(st.booleans(), min_size=F.n_columns,
                                             max_size=F.n_columns)))
    if not selectable.any():
        selectable[0] = True
    k = int(selectable.sum())  # the whole order: every step checked
    got, values = cmim(F, Y, k, selectable=selectable)
    assert list(got) == reference_cmim(F.codes.toarray(), Y.codes.toarray(), k, selectable)
    assert values.shape == (k,) and np.all(values >= 0)


@settings(max_examples=60, deadline=None)
@given(problems(max_rows=300), st.sampled_from([0.0, 0.1, 0.5, 1.0]), st.integers(0, 2**31 - 1))
def test_row_tables_equal_the_sparse_tables_bit_for_bit(problem, rate, seed):
    """The compiled tables of data in memory (counted from the rows) give the sparse
    products' values bit for bit, before any pick and given every column, over binary labels
    that are never, sometimes or always on; labels of more codes take the sparse path."""
    pytest.importorskip("numba")
    from coreselect.core.conditional import RowTables
    from coreselect.core.discretize import discretize_labels

    F, _ = problem
    rng = np.random.default_rng(seed)
    Y = discretize_labels((rng.random((F.n_samples, 3)) < rate).astype(int))
    rows, sparse = RowTables(F, Y), _tables(F, Y)
    assert rows.relevance().tobytes() == sparse.relevance().tobytes()
    for s in range(F.n_columns):
        assert rows.given(s).tobytes() == sparse.given(step_counts(F, Y, s)).tobytes()
    assert RowTables.applies(F, Y)
    three = _discrete(np.arange(6)[:, None] % 3)  # a three-valued label
    assert not RowTables.applies(_discrete(np.zeros((6, 1), dtype=int)), three)


def test_row_tables_give_way_to_the_sparse_path_past_their_size(monkeypatch):
    """Past the dense count table's bound CMIM keeps the sparse products (the same picks)."""
    pytest.importorskip("numba")
    import coreselect.core.conditional as conditional

    rng = np.random.default_rng(5)
    F = _discrete(rng.integers(0, 3, size=(80, 6)))
    Y = _discrete((rng.random((80, 2)) < 0.4).astype(int))
    assert conditional.RowTables.applies(F, Y)
    fast = cmim(F, Y, 4)
    monkeypatch.setattr(conditional, "ROW_TABLES_MAX_CELLS", 2 * 12 - 1)  # labels x codes
    assert not conditional.RowTables.applies(F, Y)
    built = []
    monkeypatch.setattr(conditional, "RowTables",
                        type("Spy", (conditional.RowTables,), {"__init__": lambda *a: built.append(a)}))
    slow = cmim(F, Y, 4)
    assert not built
    np.testing.assert_array_equal(fast[0], slow[0])
    assert fast[1].tobytes() == slow[1].tobytes()


def _rows(m: DiscreteMatrix, start: int, stop: int) -> DiscreteMatrix:
    return DiscreteMatrix(sp.csc_matrix(m.codes.tocsr()[start:stop]), m.n_codes)


def _same_counts(a, b) -> None:
    np.testing.assert_array_equal(a.M.toarray(), b.M.toarray())
    np.testing.assert_array_equal(a.e, b.e)
    np.testing.assert_array_equal(a.z, b.z)
    assert a.n == b.n


@settings(max_examples=40, deadline=None)
@given(problems(), st.lists(st.integers(0, 60), max_size=5))
def test_shard_counts_add_up_to_the_whole(problem, cuts):
    """The merge law: cut the rows anywhere (empty and one-row shards included), and the
    counts of the shards, and their step counts code by code, sum to the whole's."""
    F, Y = problem
    n = F.n_samples
    bounds = [0, *sorted(min(c, n) for c in cuts), n]
    shards = [(_rows(F, a, b), _rows(Y, a, b)) for a, b in zip(bounds[:-1], bounds[1:])]
    whole = conditional_counts(F, Y)
    total = None
    for f, y in shards:
        part = conditional_counts(f, y)
        total = part if total is None else total + part
    _same_counts(total, whole)
    for s in range(F.n_columns):
        want = step_counts(F, Y, s)
        got = None
        for f, y in shards:
            part = step_counts(f, y, s)
            got = part if got is None else got + part
        assert sorted(got) == sorted(want)
        for code in want:
            _same_counts(got[code], want[code])


def test_shards_binned_differently_do_not_add():
    """Two shards with the same number of indicators but other codes per column ([3, 2] and
    [2, 3]) would add into nonsense: refused."""
    Y = _discrete(np.array([[0], [1], [1]]))
    first = _discrete(np.array([[0, 0], [1, 1], [2, 0]]))
    second = _discrete(np.array([[0, 0], [1, 1], [0, 2]]))
    assert first.n_codes.tolist() == [3, 2] and second.n_codes.tolist() == [2, 3]
    with pytest.raises(ValueError, match="binned differently"):
        conditional_counts(first, Y) + conditional_counts(second, Y)


def test_rows_mode_keeps_constant_columns_when_asked():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(80, 4))
    X[:, 2] = 1.0
    Y = (rng.random((80, 2)) < 0.5).astype(int)
    central = select(X, Y, k=4, calibration="cmim", keep_constant=True)
    rows = select(X, Y, k=4, calibration="cmim", mode="rows", row_shards=2, keep_constant=True)
    assert 2 in central.selected and list(rows.selected) == list(central.selected)


def test_a_copy_of_a_selected_feature_tells_nothing_more():
    rng = np.random.default_rng(0)
    F = rng.integers(0, 3, size=(300, 6))
    Y = (F[:, [0]] + rng.integers(0, 2, size=(300, 2)) > 1).astype(int)
    F[:, 5] = F[:, 0]
    tables = _tables(_discrete(F), _discrete(Y))
    assert np.allclose(tables.given(step_counts(_discrete(F), _discrete(Y), 0))[5], 0.0,
                       atol=1e-12)
    chosen, _ = cmim(_discrete(F), _discrete(Y), 5)
    assert chosen[0] == 0 and 5 not in chosen  # the copy comes last, after every other column


def test_a_selection_is_the_prefix_of_a_longer_one():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 15))
    Y = (X[:, :3] + rng.normal(size=(200, 3)) > 0).astype(int)
    short = select(X, Y, k=4, calibration="cmim").selected
    long = select(X, Y, k=10, calibration="cmim").selected
    assert list(long[:4]) == list(short)


def test_select_runs_the_core_criterion_on_the_binned_data():
    from coreselect.core.discretize import discretize, discretize_labels

    rng = np.random.default_rng(2)
    X = rng.normal(size=(250, 12))
    X[:, 4] = 1.0  # constant: never selected
    Y = (X[:, :2] @ rng.normal(size=(2, 3)) + rng.normal(size=(250, 3)) > 0).astype(int)
    result = select(X, Y, k=6, calibration="cmim")
    F = discretize(X)
    want, values = cmim(F, discretize_labels(Y), 6, selectable=F.n_codes > 1)
    assert list(result.selected) == list(want) and 4 not in result.selected
    assert result.objective == pytest.approx(values.sum())
    assert list(GDSSelector(k=6, calibration="cmim").fit(X, Y).selected_) == list(want)


def test_a_column_store_selects_what_the_arrays_select(tmp_path):
    from coreselect.store import build_store

    rng = np.random.default_rng(3)
    X = sp.random(180, 30, density=0.4, random_state=4, format="csr")
    X.data = np.round(X.data * 9) + 1
    Y = (rng.random((180, 4)) < 0.35).astype(np.int8)
    store = build_store(X, Y, tmp_path / "s", block_size=8, row_block_size=50, seed=0)
    from_store = select(str(store.path), k=7, calibration="cmim")
    assert list(from_store.selected) == list(select(X, Y, k=7, calibration="cmim").selected)


@settings(max_examples=30, deadline=None)
@given(problems(), st.lists(st.integers(0, 60), max_size=5), st.booleans())
def test_row_shards_select_what_one_matrix_selects(problem, cuts, threads):
    """Uneven shards (empty and one-row ones included), one after another or on threads:
    the counts summed over the shards give the centralized order, bit for bit."""
    from coreselect.engines.rowsharded import (
        InMemoryRowShards, SequentialRows, select_conditional,
    )

    F, Y = problem
    n = F.n_samples
    selectable = F.n_codes > 1
    if not selectable.any():
        return
    bounds = [0, *sorted(min(c, n) for c in cuts), n]
    rows = SequentialRows(InMemoryRowShards(F, Y, bounds), threads=2 if threads else 1)
    k = int(selectable.sum())
    run = select_conditional(rows, k=k, p=10)
    want, values = cmim(F, Y, k, selectable=selectable)
    assert list(run.result.selected) == list(want)
    np.testing.assert_allclose(run.result.extra["criterion_values"], values, atol=1e-9)


@pytest.mark.parametrize("shards", [1, 2, 7])
def test_select_in_rows_mode_equals_the_centralized_selection(shards, tmp_path):
    from coreselect.store import build_store

    rng = np.random.default_rng(8)
    X = rng.normal(size=(230, 14))
    Y = (X[:, :3] @ rng.normal(size=(3, 4)) + rng.normal(size=(230, 4)) > 0).astype(int)
    central = select(X, Y, k=8, calibration="cmim")
    rows = select(X, Y, k=8, calibration="cmim", mode="rows", row_shards=shards)
    assert list(rows.selected) == list(central.selected)
    assert rows.objective == pytest.approx(central.objective)
    assert rows.relevance == pytest.approx(central.relevance)
    assert rows.diversity == pytest.approx(central.diversity)
    if shards == 2:  # a column store's row blocks are the shards
        store = build_store(X, Y, tmp_path / "s", row_block_size=60, seed=0)
        from_store = select(str(store.path), k=8, calibration="cmim", mode="rows")
        assert list(from_store.selected) == list(select(str(store.path), k=8,
                                                        calibration="cmim").selected)


@pytest.mark.parametrize("mode", ["distributed", "streaming"])
def test_distributed_runs_cmim_on_each_part_then_on_the_union(mode, tmp_path):
    """Algorithm 3's scheme with CMIM in both steps: on each part of the seeded partition,
    then on the union of the parts' picks (built here from the core, part by part)."""
    from coreselect.core.discretize import discretize, discretize_labels
    from coreselect.selection.distributed import partition
    from coreselect.store import build_store

    rng = np.random.default_rng(10)
    X = rng.normal(size=(200, 24))
    Y = (X[:, :4] @ rng.normal(size=(4, 3)) + rng.normal(size=(200, 3)) > 0).astype(int)
    F, L = discretize(X), discretize_labels(Y)
    k, m = 5, 3
    union: list[int] = []
    for part in partition(F.n_columns, m, 0):
        cols = np.sort(part)
        picked, _ = cmim(F.take(cols), L, k)
        union += list(cols[picked])
    union = np.sort(np.asarray(union))
    picked, _ = cmim(F.take(union), L, k)
    want = list(union[picked])
    got = select(X, Y, k=k, calibration="cmim", mode=mode, partitions=m, random_state=0)
    assert list(got.selected) == want
    assert list(select(X, Y, k=k, calibration="cmim", mode=mode, partitions=1,
                       random_state=0).selected) == list(select(X, Y, k=k,
                                                                calibration="cmim").selected)
    if mode == "distributed":  # a store built with the partition's seed holds the same parts
        store = build_store(X, Y, tmp_path / "s", seed=0)
        assert list(select(str(store.path), k=k, calibration="cmim", mode=mode, partitions=m,
                           random_state=0).selected) == want


@pytest.mark.parametrize("run", [dict(lam=0.3), dict(p=3), dict(relevance="nmi")],
                         ids=["lam", "p", "relevance"])
def test_refused_where_it_would_not_run_or_would_ignore_an_option(run):
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(60, 6)), (rng.random((60, 2)) < 0.5).astype(int)
    with pytest.raises(InputError, match="cmim"):
        select(X, Y, k=3, calibration="cmim", **run)


def test_refused_with_a_checkpoint(tmp_path):
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(60, 6)), (rng.random((60, 2)) < 0.5).astype(int)
    with pytest.raises(InputError, match="checkpoints"):
        select(X, Y, k=3, calibration="cmim", checkpoint=tmp_path / "ck")
    assert not (tmp_path / "ck").exists()


def _run(capsys, *args):
    from coreselect.cli import main

    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_the_command_line_refuses_in_one_line(capsys):
    code, out, err = _run(capsys, "select", "emotions", "--calibration", "cmim", "-k", "3",
                          "--lam", "0.3")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "--lam 0.3 does not apply" in err
    code, out, err = _run(capsys, "select", "emotions", "--calibration", "cmim", "-k", "3")
    assert code == 0, err
    assert "cmim criterion" in out and "lam=" not in out
    code, out, err = _run(capsys, "select", "emotions", "--calibration", "cmim", "-k", "3",
                          "--json")
    import json

    report = json.loads(out)
    assert report["calibration"] == "cmim" and report["lam"] is None and report["p"] is None
    assert report["relevance_kind"] is None


def test_the_reported_diversity_sums_each_pair_once():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 8))
    Y = (X[:, :2] + rng.normal(size=(120, 2)) > 0).astype(int)
    result = select(X, Y, k=4, calibration="cmim")
    pair = np.asarray(result.pair_distances)
    assert pair.shape == (4, 4) and np.allclose(pair, pair.T)
    assert result.diversity == pytest.approx(np.triu(pair, 1).sum()) and result.diversity > 0


def test_evaluate_runs_gds_cmim_beside_gds_with_their_options():
    """``evaluate --methods gds,gds-cmim --lam 0.3 --relevance nmi``: the options reach gds;
    gds-cmim, which has no weight or measure, runs as it is and selects what select does."""
    from coreselect.evaluation.gds import CalibratedGDS
    from coreselect.evaluation.protocol import method_factories

    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 7))
    Y = (X[:, :2] + rng.normal(size=(90, 2)) > 0).astype(int)
    made = method_factories(["gds", "gds-cmim"], lam=0.3, relevance="nmi")
    assert made["gds"](3, 0).fit(X, Y).result_.spec["lam"] == 0.3
    fitted = made["gds-cmim"](3, 0).fit(X, Y)
    want = select(X, Y, k=3, calibration="cmim").selected
    assert list(fitted.selected_) == list(want)
    assert list(CalibratedGDS(k=3, calibration="cmim").fit(X, Y).selected_) == list(want)


def test_rows_mode_reads_each_shard_once_before_its_steps():
    """The statistics the result reports and the criterion's tables come from one visit of
    every shard (a store's tiles are read once, not twice), then one per greedy step."""
    from coreselect.core.discretize import discretize, discretize_labels
    from coreselect.engines.rowsharded import (
        InMemoryRowShards, SequentialRows, select_conditional,
    )

    rng = np.random.default_rng(12)
    X = rng.normal(size=(90, 7))
    Y = (X[:, :2] + rng.normal(size=(90, 2)) > 0).astype(int)
    F, L = discretize(X), discretize_labels(Y)
    shards = InMemoryRowShards(F, L, [0, 20, 50, 90])
    visits = []
    features = shards.features
    shards.features = lambda i: visits.append(i) or features(i)
    run = select_conditional(SequentialRows(shards, threads=1), k=1, p=10)
    assert sorted(visits) == [0, 1, 2]  # k = 1: no step, no distance
    assert list(run.result.selected) == list(cmim(F, L, 1)[0])
    np.testing.assert_allclose(run.stats.relevance, _tables(F, L).relevance(), atol=1e-12)


def test_stored_zero_codes_are_the_zeros_left_implicit():
    """Codes given with some zeros stored (a matrix built by hand) are the same matrix as
    with them left implicit: the same tables, distances and picks."""
    from coreselect.core.conditional import RowTables
    from coreselect.core.entropy import DistanceOracle

    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, size=(40, 4))
    Y = _discrete((rng.random((40, 2)) < 0.5).astype(int))
    implicit = _discrete(codes)
    stored = sp.csc_matrix(implicit.codes.toarray() + 1)  # every cell stored...
    stored.data -= 1  # ...the zeros too
    assert (stored.data == 0).any()
    given = DiscreteMatrix(stored, implicit.n_codes)
    assert given.codes.nnz == implicit.codes.nnz
    for backend in ("numba", "numpy"):
        for u in range(4):
            assert (DistanceOracle(given, backend).distances_from(u).tobytes()
                    == DistanceOracle(implicit, backend).distances_from(u).tobytes())
    if RowTables.applies(implicit, Y):
        assert RowTables(given, Y).given(1).tobytes() == RowTables(implicit, Y).given(1).tobytes()
    np.testing.assert_array_equal(cmim(given, Y, 3)[0], cmim(implicit, Y, 3)[0])
