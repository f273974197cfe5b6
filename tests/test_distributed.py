"""Algorithm 3 (distributed / streaming) on every engine, the column store, and its errors."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from coreselect.core.problem import Problem
from coreselect.selection.distributed import (
    PartTask,
    ProblemParts,
    StoreParts,
    n_partitions,
    partition,
    partition_bounds,
    run_part,
)
from coreselect.errors import EngineError, InputError
from coreselect.selection.sources import InMemorySource, StoreSource
from coreselect.selection.spec import Binning, Objective
from coreselect.store import build_store, open_store, shuffled_order
from coreselect.selection.strategies import AltGreedy, DistributedGreedy, Greedy

K = 6
OBJ = Objective(k=K, calibration="information")  # the weighing's parts


def _data(n=240, d=300, seed=0, density=0.08, n_informative=8):
    """Sparse count-like features with a few informative columns and exact duplicates
    (duplicates make ties, which exercise the lowest-original-id rule across parts)."""
    rng = np.random.RandomState(seed)
    Y = (rng.rand(n, 4) < 0.3).astype(np.int8)
    X = sp.random(n, d, density=density, random_state=rng, format="csc")
    X.data = np.ceil(X.data * 4)
    X = X.tolil()
    for j in range(n_informative):
        col = (Y[:, j % 4] * (rng.rand(n) < 0.7)).astype(float)
        X[:, 10 * j] = col[:, None]
        X[:, 10 * j + 5] = col[:, None]  # an exact copy
    X[:, 7] = 0.0  # a constant column
    return sp.csr_matrix(X), Y


@pytest.fixture(scope="module")
def data():
    return _data()


@pytest.fixture(scope="module")
def problem(data):
    X, Y = data
    return Problem.build(X, Y, k=K, p=OBJ.p, calibration=OBJ.calibration)


@pytest.fixture(scope="module")
def source(data):
    X, Y = data
    return InMemorySource(X, Y)


@pytest.fixture(scope="module")
def store(data, tmp_path_factory):
    X, Y = data
    path = tmp_path_factory.mktemp("store") / "s"
    return build_store(X, Y, path, block_size=37, seed=5, name="toy")


def _same(a, b):
    assert np.array_equal(a.selected, b.selected)
    assert a.objective == b.objective
    assert a.relevance == b.relevance and a.diversity == b.diversity
    assert np.array_equal(a.feature_relevance, b.feature_relevance)
    assert np.array_equal(a.pair_distances, b.pair_distances)
    assert a.union_size == b.union_size and a.partitions == b.partitions
    assert [list(p.selected) for p in a.parts] == [list(p.selected) for p in b.parts]


# -- partition ----------------------------------------------------------------------------------
def test_partition_is_seeded_and_covers_everything():
    parts = partition(103, 7, 1)
    assert len(parts) == 7
    assert sorted(np.concatenate(parts).tolist()) == list(range(103))
    assert [p.size for p in parts] == [p.size for p in np.array_split(np.arange(103), 7)]
    assert all(np.array_equal(a, b) for a, b in zip(parts, partition(103, 7, 1)))
    assert not all(np.array_equal(a, b) for a, b in zip(parts, partition(103, 7, 2)))
    assert np.array_equal(partition_bounds(103, 7), np.r_[0, np.cumsum([p.size for p in parts])])


def test_auto_partitions():
    assert n_partitions("auto", 2_000_000, 100) == math.ceil(math.sqrt(20_000))
    assert n_partitions("auto", 5, 10) == 1
    assert n_partitions(3, 10, 2) == 3
    with pytest.raises(InputError):
        n_partitions(11, 10, 2)
    with pytest.raises(InputError):
        n_partitions(0, 10, 2)


# -- each part's Greedy is the core's Greedy ----------------------------------------------------
def test_each_part_is_core_greedy_on_the_submatrix(data, problem, store):
    X, Y = data
    m = 4
    bounds = partition_bounds(problem.n_columns, m)
    for i, positions in enumerate(partition(problem.n_columns, m, 5)):
        ids = np.sort(positions)
        sub = Problem.build(sp.csc_matrix(X)[:, ids], Y, k=K, column_ids=ids,
                            calibration=OBJ.calibration)
        expected = sub.run(K, alternate=False)
        got = run_part(ProblemParts(problem), PartTask(i, K, positions))
        assert np.array_equal(got.selected, expected.selected)
        # the same part read from the store (built with the same seed)
        got_store = run_part(StoreParts(store.ref, OBJ, keep_constant=False),
                             PartTask(i, K, (int(bounds[i]), int(bounds[i + 1]))))
        assert np.array_equal(got_store.selected, expected.selected)
        assert got.n_columns == got_store.n_columns == ids.size


# -- engines agree --------------------------------------------------------------------------------
def test_local_streaming_pool_and_store_identical(source, problem, store):
    ref = DistributedGreedy(partitions=4, random_state=5).run(OBJ, source)
    assert ref.strategy == "distributed" and ref.engine == "local"
    assert ref.partitions == 4 and ref.coreset_size == K and len(ref.parts) == 4
    assert len(ref.selected) == K and ref.pair_distances.shape == (K, K)
    stream = DistributedGreedy(partitions=4, random_state=5, streaming=True).run(OBJ, source)
    assert stream.strategy == "streaming" and stream.engine == "stream"
    _same(ref, stream)
    _same(ref, DistributedGreedy(partitions=4, random_state=5, n_workers=2).run(OBJ, source))
    _same(ref, DistributedGreedy(partitions=4).run(OBJ, StoreSource(store)))
    _same(ref, DistributedGreedy(partitions=4, streaming=True).run(OBJ, StoreSource(store.path)))
    # the objective is h of the selection recomputed from scratch on the whole problem
    h, g, D = problem.evaluate(ref.selected)
    assert h == pytest.approx(ref.objective) and D == pytest.approx(ref.diversity)
    # feature relevance is each selected feature's row sum in the full problem
    np.testing.assert_array_equal(
        ref.feature_relevance, problem.relevance[problem.positions_of(ref.selected)].sum(axis=1))
    # json summary: the union's size, not the union
    js = json.loads(json.dumps(ref.to_dict()))
    assert js["partitions"] == 4 and len(js["parts"]) == 4 and "seconds" in js["parts"][0]
    assert js["union_size"] == ref.union_size == sum(len(p.selected) for p in ref.parts)
    assert "union" not in js and {"engine_start", "parts", "union"} <= set(js["timings"])


def _with_numba_threads(threads, run):
    numba = pytest.importorskip("numba")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(threads)
        return run()
    finally:
        numba.set_num_threads(before)


def test_streaming_runs_parts_side_by_side_in_order_and_the_same_bits(source, store):
    import threading
    import time

    from coreselect.engines.stream import StreamEngine

    if len(__import__("os").sched_getaffinity(0)) < 2:
        pytest.skip("one core here")
    run = lambda: DistributedGreedy(partitions=5, streaming=True).run(  # noqa: E731
        OBJ, StoreSource(store.path))
    _same(_with_numba_threads(1, run), _with_numba_threads(2, run))
    active, peak, lock = [0], [0], threading.Lock()

    def task(shared, t):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05 if t % 2 else 0.01)  # later parts may finish first
        if t == 6:
            raise ValueError("part 6")
        with lock:
            active[0] -= 1
        return shared + t

    for threads, expected_peak in ((1, 1), (2, 2)):
        peak[0] = 0
        seen = []
        got = _with_numba_threads(threads, lambda: StreamEngine().map(
            task, 100, range(6), callback=lambda d, n: seen.append(("done", d, n)),
            on_result=lambda i, r: seen.append((i, r))))
        assert got == [100 + t for t in range(6)] and peak[0] == expected_peak
        assert seen == [x for i in range(6) for x in ((i, 100 + i), ("done", i + 1, 6))]
    with pytest.raises(ValueError, match="part 6"):
        _with_numba_threads(2, lambda: StreamEngine().map(task, 0, range(12)))


def test_store_centralized_equals_in_memory(source, store):
    mem = AltGreedy().run(OBJ, source)
    res = AltGreedy().run(OBJ, StoreSource(store))
    _same(mem, res)  # feature relevance too: no more NaN for store runs
    assert res.strategy == "altgreedy" and res.parts == [] and res.engine is None
    assert res.data["dataset"] == "toy" and res.names == [f"x{i}" for i in res.selected]
    _same(Greedy().run(OBJ, source), Greedy().run(OBJ, StoreSource(store)))


def test_store_honours_relevance_keep_constant_and_calibration(data, store):
    X, Y = data
    for obj, binning in ((Objective(k=K, relevance="nmi", lam=0.3, p=3), Binning()),
                         (Objective(k=K, calibration="paper"), Binning(keep_constant=True))):
        for strategy in (AltGreedy(), DistributedGreedy(partitions=3, random_state=5)):
            mem = strategy.run(obj, InMemorySource(X, Y, binning))
            _same(mem, strategy.run(obj, StoreSource(store, binning)))
            assert mem.spec["relevance"] == obj.relevance
            assert mem.spec["keep_constant"] == binning.keep_constant


def test_store_refuses_what_it_cannot_honour(store):
    with pytest.raises(InputError, match="built with n_bins=5"):
        StoreSource(store, Binning(n_bins=3))
    with pytest.raises(InputError, match="fixed by the seed it was built with"):
        DistributedGreedy(random_state=1).run(OBJ, StoreSource(store))
    from coreselect.selection import select

    with pytest.raises(InputError, match="labels"):
        select(store, np.zeros((240, 2)), k=K)
    with pytest.raises(InputError, match="built with"):
        select(store.path, k=K, n_bins=7)
    # random_state equal to the store's seed is fine
    DistributedGreedy(random_state=5).run(OBJ, StoreSource(store))


@pytest.mark.dask
def test_dask_identical(source, store):
    from distributed import Client, LocalCluster

    ref = DistributedGreedy(partitions=4, random_state=5).run(OBJ, source)
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        _same(ref, DistributedGreedy(partitions=4, random_state=5, engine="dask",
                                     client=client).run(OBJ, source))
        res = DistributedGreedy(partitions=4, engine="dask", client=client).run(
            OBJ, StoreSource(store))
        _same(ref, res)
        assert res.engine == "dask"
        # by scheduler address, as `select --scheduler` does
        _same(ref, DistributedGreedy(partitions=4, engine="dask",
                                     scheduler=cluster.scheduler_address).run(
            OBJ, StoreSource(store)))


def test_progress_and_selector(data, source):
    from coreselect.selector import GDSSelector

    X, Y = data
    seen = []
    sel = GDSSelector(k=K, mode="distributed", partitions=3, random_state=2,
                      progress=lambda s, d, t: seen.append((s, d, t))).fit(X, Y)
    ref = DistributedGreedy(partitions=3, random_state=2).run(OBJ, source)
    assert np.array_equal(sel.selected_, ref.selected)
    _same(sel.result_, ref)
    assert ("parts", 3, 3) in seen and ("union", K, K) in seen


# -- coreset size ---------------------------------------------------------------------------------
def test_coreset_size(source):
    res = DistributedGreedy(partitions=3, coreset_size=2 * K, random_state=1).run(OBJ, source)
    assert res.coreset_size == 2 * K
    assert all(len(p.selected) == 2 * K for p in res.parts)
    assert res.union_size == 3 * 2 * K
    # a part with fewer selectable columns than the coreset size keeps all it has, and the
    # constant column 7 is never selected
    big = DistributedGreedy(partitions=50, coreset_size=20, random_state=1).run(OBJ, source)
    for part, positions in zip(big.parts, partition(source.n_columns, 50, 1)):
        assert sorted(part.selected) == sorted(set(positions.tolist()) - {7})
    with pytest.raises(InputError):
        DistributedGreedy(coreset_size=0)


def test_coresets_smaller_than_k_say_so(data):
    X, Y = data
    src = InMemorySource(X, Y)
    with pytest.raises(InputError, match="coresets of 2 parts x 2 features hold at most 4"):
        DistributedGreedy(partitions=2, coreset_size=2).run(Objective(k=5), src)
    # m * c >= k, but the parts hold fewer selectable columns than that: two informative
    # columns and four constant ones, both informative in one part of a seeded partition
    Z = np.zeros((X.shape[0], 6))
    Z[:, 0], Z[:, 1] = Y[:, 0], Y[:, 1]
    seed = next(s for s in range(100)
                if any({0, 1} <= set(p.tolist()) for p in partition(6, 3, s)))
    with pytest.raises(InputError, match="coresets hold only 1 selectable"):
        DistributedGreedy(partitions=3, coreset_size=1, random_state=seed).run(
            Objective(k=2), InMemorySource(Z, Y))


def test_k_too_large(data):
    X, Y = data
    # columns 5..8 hold the constant column 7: only 3 are selectable
    for strategy in (AltGreedy(), DistributedGreedy(partitions=2)):
        with pytest.raises(InputError, match=r"k=4 is larger .* selectable features \(3\)"):
            strategy.run(Objective(k=4), InMemorySource(X[:, 5:9], Y))


# -- the store ------------------------------------------------------------------------------------
def test_store_round_trip(data, store, problem):
    X, Y = data
    st = open_store(store.path)
    assert (st.n_samples, st.n_features, st.n_labels) == (240, 300, 4)
    assert st.n_blocks == math.ceil(300 / 37) and st.seed == 5
    assert np.array_equal(np.asarray(st.order), shuffled_order(300, 5))
    full = st.read_all()
    assert (full.codes != problem.features.codes).nnz == 0
    assert np.array_equal(full.n_codes, problem.features.n_codes)
    assert (st.labels().codes != problem.labels.codes).nnz == 0
    assert list(st.feature_names[:3]) == ["x0", "x1", "x2"]
    ids, part = st.read_range(30, 80)  # crosses block boundaries
    assert np.array_equal(ids, st.order[30:80])
    assert (part.codes != problem.features.take(ids).codes).nnz == 0
    assert st.info()["n_blocks"] == st.n_blocks


def test_store_names_and_existing_target(data, tmp_path):
    X, Y = data
    names = [f"f{i}" for i in range(X.shape[1])]
    st = build_store(X, Y, tmp_path / "named", feature_names=names, label_names=list("abcd"))
    assert st.feature_names == names and st.label_names == list("abcd")
    with pytest.raises(InputError):
        build_store(X, Y, tmp_path / "named")


def test_store_missing_block_and_wrong_version(data, tmp_path):
    X, Y = data
    st = build_store(X, Y, tmp_path / "s", block_size=100, seed=0)
    shutil.rmtree(st.path / "blocks" / "b000001")
    with pytest.raises(EngineError, match="missing block 1"):
        open_store(st.path)
    # a worker meeting the hole (store opened without the check) fails the same way
    with pytest.raises(EngineError, match="missing"):
        DistributedGreedy(partitions=3).run(OBJ, StoreSource(open_store(st.path, check=False)))

    st2 = build_store(X, Y, tmp_path / "v", seed=0)
    meta = json.loads((st2.path / "store.json").read_text())
    meta["version"] = 999
    (st2.path / "store.json").write_text(json.dumps(meta))
    with pytest.raises(EngineError, match="version 999"):
        open_store(st2.path)
    with pytest.raises(EngineError, match="not a coreselect column store"):
        open_store(tmp_path)


def test_unreachable_scheduler(source, monkeypatch):
    import coreselect.engines.dask as dask_engine

    monkeypatch.setattr(dask_engine, "CONNECT_TIMEOUT", 1.0)
    with pytest.raises(EngineError, match="cannot reach the Dask scheduler"):
        DistributedGreedy(engine="dask", scheduler="tcp://127.0.0.1:9").run(OBJ, source)
    with pytest.raises(EngineError, match="cannot reach"):
        dask_engine.connect("tcp://127.0.0.1:9")
    with pytest.raises(InputError):
        DistributedGreedy(engine="local", scheduler="tcp://127.0.0.1:9").run(OBJ, source)
    with pytest.raises(InputError):
        DistributedGreedy(engine="spark")


# -- synthetic generator --------------------------------------------------------------------------
def test_make_sparse_multilabel():
    from coreselect.datasets.synthetic import make_sparse_multilabel

    ds = make_sparse_multilabel(n_samples=500, n_features=5000, n_labels=5, density=0.01,
                                n_relevant=10, n_redundant=20, random_state=3)
    assert ds.X.shape == (500, 5000) and ds.Y.shape == (500, 5) and sp.isspmatrix_csc(ds.X)
    assert ds.X.indices.dtype == np.int32 and ds.X.data.dtype == np.float32
    assert ds.feature_names[4999] == "x4999" and len(ds.feature_names) == 5000
    again = make_sparse_multilabel(n_samples=500, n_features=5000, n_labels=5, density=0.01,
                                   n_relevant=10, n_redundant=20, random_state=3)
    assert (ds.X != again.X).nnz == 0
    # planted relevant features are far more relevant than the background
    pb = Problem.build(ds.X, ds.Y, k=10)
    rel = pb.relevance.max(axis=1)
    assert rel[ds.meta["relevant"]].min() > np.quantile(rel, 0.99)


# -- CLI ------------------------------------------------------------------------------------------
def _cli(args):
    from click.testing import CliRunner

    from coreselect.cli import cli

    return CliRunner().invoke(cli, args)


def test_cli_store_build_info_and_errors(data, tmp_path):
    from coreselect.io import from_arrays, write

    X, Y = data
    src = tmp_path / "d.arff"
    write(from_arrays(X.toarray(), Y), src)
    out = tmp_path / "st"
    r = _cli(["store", "build", str(src), str(out), "--block-size", "50", "--seed", "5",
              "--labels", str(tmp_path / "d.xml"), "--quiet"])
    assert r.exit_code == 0, r.output
    st = open_store(out)
    assert st.n_features == 300 and st.n_blocks == 6
    r = _cli(["store", "info", str(out), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["seed"] == 5
    # errors: one line, exit 2, no partial output
    r = _cli(["store", "build", str(src), str(out), "--labels", str(tmp_path / "d.xml")])
    assert r.exit_code == 2
    shutil.rmtree(out / "blocks" / "b000002")
    r = _cli(["store", "info", str(out)])
    assert r.exit_code == 2 and "missing block 2" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_cli_select_on_store_and_unreachable_scheduler(store, monkeypatch):
    import coreselect.engines.dask as dask_engine

    r = _cli(["select", str(store.path), "-k", str(K), "--mode", "distributed",
              "--partitions", "4", "--json", "--quiet"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    ref = DistributedGreedy(partitions=4).run(OBJ, StoreSource(store))
    assert out["selected"] == ref.selected.tolist() and out["partitions"] == 4
    # the store's JSON: real feature relevance, the union's size, the store's name
    assert out["feature_relevance"] == [round(float(x), 6) for x in ref.feature_relevance]
    assert all(math.isfinite(x) for x in out["feature_relevance"])
    assert out["union_size"] == ref.union_size and "union" not in out
    assert out["dataset"] == "toy" and out["names"] == ref.names
    assert len(r.output) < 4000
    monkeypatch.setattr(dask_engine, "CONNECT_TIMEOUT", 1.0)
    r = _cli(["select", str(store.path), "-k", str(K), "--mode", "distributed",
              "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9", "--quiet"])
    assert r.exit_code == 2 and "cannot reach the Dask scheduler" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_calibration_reaches_every_greedy_run(data, store, monkeypatch):
    """In memory and from a store, in the parts and in the union: the core sees the
    objective's calibration (here one that is neither the default nor the paper's)."""
    import coreselect.core.objective as objective
    import coreselect.core.problem as problem_module

    other = next(c for c in objective.CALIBRATIONS
                 if c not in ("paper", objective.DEFAULT_CALIBRATION))
    seen = []
    real = problem_module.greedy

    def spy(features, relevance, params, *args, **kwargs):
        seen.append(params.calibration)
        return real(features, relevance, params, *args, **kwargs)

    monkeypatch.setattr(problem_module, "greedy", spy)
    X, Y = data
    obj = Objective(k=K, calibration=other)
    for src in (InMemorySource(X, Y), StoreSource(store)):
        for strategy in (AltGreedy(), DistributedGreedy(partitions=3, random_state=5)):
            seen.clear()
            res = strategy.run(obj, src)
            assert seen and set(seen) == {other} and res.spec["calibration"] == other
