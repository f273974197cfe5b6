"""Error paths that matter: the Dask LocalCluster path of the CLI, cancelled futures, store
validation and failed-build clean-up, the numba fallback, and the input guards of the greedy
and of the selection entry point."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

import paths
from _assertions import assert_same_selection
from coreselect.errors import EngineError, InputError


def _small(n=40, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    X[:, 3] = 0.0  # constant
    Y = (rng.random((n, 3)) < 0.4).astype(int)
    Y[:, 0] |= (X[:, 1] > 1).astype(int)
    return X, Y


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    from coreselect.io import from_arrays, write

    X, Y = _small()
    path = tmp_path_factory.mktemp("data") / "small.arff"
    write(from_arrays(X, Y, name="small"), path)
    return path


# -- Dask without a scheduler: the CLI starts (and stops) a LocalCluster --------------------------
@pytest.mark.dask
def test_cli_dask_without_scheduler_starts_a_local_cluster(small_file):
    X, Y = _small()
    report = paths.run_cli_json(small_file, k=3, mode="distributed", partitions=3, seed=2,
                                engine="dask", n_workers=1)
    assert report["engine"] == "dask"
    assert_same_selection(report, paths.run_local(X, Y, k=3, partitions=3, seed=2))


# -- cancelled futures ----------------------------------------------------------------------------
def _slow(shared, task):
    time.sleep(3)
    return task


@pytest.mark.dask
def test_cancelled_futures_are_one_engine_error():
    from distributed import Client, Future, LocalCluster

    from coreselect.engines.dask import DaskEngine

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:

        def cancel_parts():
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                keys = [k for k in list(client.futures) if str(k).startswith("coreselect-part-")]
                if keys:
                    client.cancel([Future(k, client) for k in keys])
                    return
                time.sleep(0.05)

        canceller = threading.Thread(target=cancel_parts)
        canceller.start()
        with DaskEngine(client=client) as engine:
            with pytest.raises(EngineError, match="Dask cluster failed"):
                engine.map(_slow, None, [0, 1])
        canceller.join()


# -- the column store ----------------------------------------------------------------------------
def test_store_validation(tmp_path):
    from coreselect.errors import StoreError
    from coreselect.store import META_FILE, open_store

    X, Y = _small()
    store = paths.build_store(X, Y, tmp_path / "s", seed=1, block_size=5)
    with pytest.raises(StoreError, match="not a coreselect column store"):
        open_store(tmp_path)
    meta = json.loads((store.path / META_FILE).read_text())
    bad = tmp_path / "version"
    bad.mkdir()
    (bad / META_FILE).write_text(json.dumps({**meta, "version": 99}))
    with pytest.raises(StoreError, match="format version 99"):
        open_store(bad)
    (bad / META_FILE).write_text("{not json")
    with pytest.raises(StoreError, match="cannot read"):
        open_store(bad)
    (bad / META_FILE).write_text(json.dumps({**meta, "format": "other"}))
    with pytest.raises(StoreError, match="not a coreselect column store"):
        open_store(bad)
    (store.path / "blocks" / "b000001" / "r000000" / "data.npy").unlink()
    with pytest.raises(StoreError, match="missing block 1"):
        open_store(store.path)
    with pytest.raises(StoreError, match="missing block 1"):
        paths.run_store_path(store.path, k=3)
    result = paths.run_cli(paths.cli_args(store.path, k=3), expect=2)
    assert len(result.stderr.strip().splitlines()) == 1 and "missing block 1" in result.stderr


@pytest.mark.parametrize("kwargs, match", [
    (dict(block_size=0), "block size"),
    (dict(seed=-1), "seed"),
])
def test_store_build_rejects_bad_parameters(tmp_path, kwargs, match):
    X, Y = _small()
    with pytest.raises(InputError, match=match):
        paths.build_store(X, Y, tmp_path / "s", **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_store_build_rejects_bad_shapes_and_names(tmp_path):
    from coreselect.store import build_store

    X, Y = _small()
    with pytest.raises(InputError, match="samples"):
        build_store(X, Y[:-1], tmp_path / "a")
    with pytest.raises(InputError, match="names"):
        build_store(X, Y, tmp_path / "b", feature_names=["x"])
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="already exists"):
        build_store(X, Y, tmp_path / "c")
    assert (tmp_path / "c" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    """A build that fails after writing some blocks removes its temporary folder, and the
    target never appears."""
    import coreselect.store.build as store_mod

    real = store_mod.discretize
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("simulated failure in the second block")
        return real(*args, **kwargs)

    monkeypatch.setattr(store_mod, "discretize", failing)
    X, Y = _small()
    with pytest.raises(MemoryError):
        paths.build_store(X, Y, tmp_path / "s", block_size=4)
    assert len(calls) == 2  # the first block was written before the failure
    assert list(tmp_path.iterdir()) == []


def test_store_k_too_large_and_bad_mode(tmp_path):
    X, Y = _small()
    paths.build_store(X, Y, tmp_path / "s", seed=1)
    with pytest.raises(InputError, match="constant columns"):
        paths.run_store_path(tmp_path / "s", k=12)
    with pytest.raises(InputError, match="mode"):
        paths.run_store_path(tmp_path / "s", k=3, mode="sideways")
    with pytest.raises(InputError, match="partitions"):
        paths.run_store_path(tmp_path / "s", k=3, partitions=0)


# -- the numba fallback ---------------------------------------------------------------------------
def test_numba_switched_off_gives_the_same_selection(small_file):
    X, Y = _small()
    expected = paths.run_centralized(X, Y, k=4, relevance="nmi", backend="numba")
    from coreselect.core import Problem

    # The same run in the core says which kernels ran: numba, so the CLI below compares the
    # numpy fallback with numba.
    core = Problem.build(X, Y, k=4, relevance="nmi").run(alternate=True, backend="numba")
    assert core.extra["backend"] == "numba"
    assert list(core.selected) == list(expected.selected)
    off = paths.run_cli_json(small_file, k=4, relevance="nmi",
                             subprocess_env={"CORESELECT_NUMBA": "0"})
    assert_same_selection(off, expected)
    import subprocess
    import sys

    probe = subprocess.run(
        [sys.executable, "-c", "from coreselect.core.entropy import _numba_enabled;"
         "print(_numba_enabled('auto'))"], capture_output=True, text=True,
        env={**__import__("os").environ, "CORESELECT_NUMBA": "0"}, timeout=60)
    assert probe.stdout.strip() == "False", probe.stderr


def test_numpy_backend_equals_numba_backend():
    X, Y = _small(seed=3)
    a = paths.run_local(X, Y, k=4, partitions=2, seed=1, backend="numpy")
    b = paths.run_local(X, Y, k=4, partitions=2, seed=1, backend="numba")
    assert_same_selection(a, b)


# -- input guards ---------------------------------------------------------------------------------
def _greedy_inputs():
    from coreselect.core import Problem

    X, Y = _small()
    return Problem.build(X, Y, k=3, keep_constant=True)


def test_greedy_input_guards():
    from coreselect.core.greedy import greedy

    pb = _greedy_inputs()
    d = pb.n_columns
    with pytest.raises(ValueError, match="one id per column"):
        greedy(pb.features, pb.relevance, pb.params, column_ids=np.arange(d - 1))
    with pytest.raises(ValueError, match="strictly increasing"):
        greedy(pb.features, pb.relevance, pb.params, column_ids=np.arange(d)[::-1].copy())
    with pytest.raises(ValueError, match="strictly increasing"):
        greedy(pb.features, pb.relevance, pb.params, column_ids=np.r_[0, 0, np.arange(2, d)])
    with pytest.raises(ValueError, match="one row per column"):
        greedy(pb.features, pb.relevance[:-1], pb.params)
    only_two = np.zeros(d, dtype=bool)
    only_two[[1, 5]] = True
    with pytest.raises(InputError, match="only 2 are selectable"):
        greedy(pb.features, pb.relevance, pb.params, selectable=only_two)
    # exactly as many as selectable is fine, and never picks an unselectable column
    res = greedy(pb.features, pb.relevance, pb.params, 2, selectable=only_two)
    assert sorted(res.selected.tolist()) == [1, 5]


def test_problem_guards():
    from coreselect.core import Problem
    from coreselect.core.discretize import discretize, discretize_labels

    X, Y = _small()
    with pytest.raises(InputError, match="samples"):
        Problem.build(X, Y[:-1], k=2)
    with pytest.raises(InputError, match="samples"):
        Problem.from_discrete(discretize(X), discretize_labels(Y[:-1]), k=2)
    with pytest.raises(InputError, match="only 11 are selectable"):
        Problem.build(X, Y, k=12).run(alternate=True)
    # What a user sees (the one k check, in the strategies) names the cause and the way out.
    for run in (paths.run_centralized, paths.run_local):
        with pytest.raises(InputError, match=r"selectable features \(11\) \(1 constant "
                           r"columns are never selected; keep_constant=True allows them\)"):
            run(X, Y, k=12)
    assert len(paths.run_centralized(X, Y, k=12, keep_constant=True).selected) == 12


BAD_DATA = {
    "1-D X": (lambda X, Y: (X[:, 0], Y), "2-D"),
    "3-D X": (lambda X, Y: (X[None], Y), "2-D"),
    "one sample": (lambda X, Y: (X[:1], Y[:1]), "at least 2 samples"),
    "no columns": (lambda X, Y: (X[:, :0], Y), "no feature columns"),
    "text X": (lambda X, Y: (np.array([["a", "b"]] * 4), Y[:4]), "numeric"),
    "rows differ": (lambda X, Y: (X, Y[:-1]), "samples"),
    "3-D Y": (lambda X, Y: (X, Y[None]), "1-D or 2-D"),
    "no labels": (lambda X, Y: (X, None), "no labels"),
    "no label columns": (lambda X, Y: (X, Y[:, :0]), "no label columns"),
    "NaN class vector": (lambda X, Y: (X, np.r_[np.nan, np.ones(len(Y) - 1)]), "NaN"),
    "NaN in X": (lambda X, Y: (np.where(X == 1, np.nan, X), Y), "NaN"),
    "inf in sparse X": (lambda X, Y: (sp.csr_matrix(np.where(X == 1, np.inf, X)), Y), "infinite"),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
@pytest.mark.parametrize("run", ["centralized", "local"])
def test_select_rejects_bad_data(case, run):
    make, match = BAD_DATA[case]
    X, Y = make(*_small())
    fn = paths.run_centralized if run == "centralized" else paths.run_local
    with pytest.raises(InputError, match=match):
        fn(X, Y, k=2)


BAD_PARAMS = {
    "k": dict(k=0), "k bool": dict(k=True), "k float": dict(k=2.0), "lam": dict(lam=1.5),
    "lam<0": dict(lam=-0.1), "p": dict(p=0), "relevance": dict(relevance="x"),
    "n_bins": dict(n_bins=1), "strategy": dict(strategy="x"), "min_bin_count": dict(min_bin_count=0),
    "partitions": dict(partitions=0), "coreset_size": dict(coreset_size=0),
    "n_workers": dict(n_workers=0), "backend": dict(backend="x"), "engine": dict(engine="spark"),
    "k > selectable": dict(k=12),
}


@pytest.mark.parametrize("case", sorted(BAD_PARAMS))
def test_select_rejects_bad_parameters(case):
    X, Y = _small()
    params = {"k": 2, **BAD_PARAMS[case]}
    with pytest.raises(InputError):
        paths.run_local(X, Y, **params)


def test_class_vector_labels_are_accepted():
    X, Y = _small()
    classes = Y[:, 0] + 2 * Y[:, 1]  # up to four classes -> one binary label per class
    one_hot = np.eye(classes.max() + 1, dtype=int)[classes]
    assert_same_selection(paths.run_centralized(X, classes, k=3),
                          paths.run_centralized(X, one_hot, k=3))
    binary = paths.run_centralized(X, Y[:, 0], k=3)  # two classes: one label
    assert_same_selection(binary, paths.run_centralized(X, Y[:, :1], k=3))
