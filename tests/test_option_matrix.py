"""The option matrix (coreselect.selection.spec.UNUSED, EVALUATE_UNUSED), walked cell by cell.

For every option of ``coreselect select`` x mode x source (data file, column store) x engine
(local, dask: for the modes that run on an engine), the option is either honoured (the report or
the output differs from the same run without it, or echoes its value where it cannot change the
selection: --workers, --backend, --scheduler) or refused with one line and exit 2. Which of the
two is read from the table, so the table and the behaviour cannot drift apart. The Dask cells
share one LocalCluster per module (--scheduler), plus one started run per cell for --workers.
The same walk covers ``evaluate`` and ``store build``, and the library's ``select`` refuses what
the command line refuses.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from coreselect.cli import main
from coreselect.errors import InputError
from coreselect.selection.spec import (
    ENGINE_MODES, ENGINES, MODES, SELECT_OPTIONS, SOURCES, evaluate_unused_reason, max_workers,
    unused_reason,
)

K = 3
N, D, LABELS = 120, 12, 4
#: Keys of the report that vary from run to run whatever the options.
VOLATILE = ("seconds", "timings", "total_seconds")


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """An ARFF file (labels in the Mulan XML beside it: 12 continuous features, 2 constant
    ones, 4 labels) and a store built from it (3 row blocks, seed 0)."""
    from coreselect.io import from_arrays, write
    from coreselect.store import build_store

    rng = np.random.default_rng(0)
    Y = (rng.random((N, LABELS)) < 0.4).astype(int)
    X = rng.normal(size=(N, D)) + Y @ rng.normal(size=(LABELS, D)) * 1.5
    X = np.column_stack([X, np.ones(N), np.full(N, 2.0)])  # constant columns (--keep-constant)
    folder = tmp_path_factory.mktemp("matrix")
    path = folder / "m.arff"
    write(from_arrays(X, Y, feature_names=[f"f{j}" for j in range(X.shape[1])],
                      label_names=[f"y{i}" for i in range(LABELS)], name="m"), path)
    # Mulan's layout of a given split beside the whole set (evaluate --test, --mulan-split).
    for part, rows in (("train", slice(0, 2 * N // 3)), ("test", slice(2 * N // 3, N))):
        write(from_arrays(X[rows], Y[rows], feature_names=[f"f{j}" for j in range(X.shape[1])],
                          label_names=[f"y{i}" for i in range(LABELS)], name="m"),
              folder / f"m-{part}.arff")
    store = folder / "store"
    build_store(X, Y, store, block_size=5, row_block_size=40, seed=0,
                feature_names=[f"f{j}" for j in range(X.shape[1])],
                label_names=[f"y{i}" for i in range(LABELS)], name="m")
    return {"file": path, "store": store, "test": folder / "m-test.arff"}


@pytest.fixture(scope="module")
def scheduler():
    from coreselect.engines.dask import local_cluster

    cluster = local_cluster(2, 1)
    try:
        yield cluster.scheduler_address
    finally:
        try:
            cluster.close()
        except TimeoutError:  # a busy machine: a nanny's 5 s to stop its worker ran out; the
            pass              # worker still ends (conftest.py checks that none outlives us)


def _cells():
    for mode in MODES:
        for source in SOURCES:
            for engine in (ENGINES if mode in ENGINE_MODES else ("local",)):
                yield mode, source, engine


CELLS = list(_cells())
#: The values given for each option (paths are filled in per test).
VALUES = {
    "k": ["-k", str(K + 1)], "lam": ["--lam", "0.95"], "p": ["--p", "1"],
    "relevance": ["--relevance", "nmi"], "calibration": ["--calibration", "paper"],
    "n_bins": ["--bins", "4"], "strategy": ["--strategy", "uniform"],
    "min_bin_count": ["--min-bin-count", "40"], "keep_constant": ["--keep-constant"],
    "partitions": ["--partitions", "2"], "coreset_size": ["--coreset-size", "5"],
    "row_shards": ["--row-shards", "3"], "n_workers": ["--workers", "2"],
    "random_state": ["--seed", "7"], "labels": ["--labels", "y0,y1"],
    "backend": ["--backend", "numpy"], "explain": ["--explain"], "quiet": ["--quiet"],
    "verbose": ["--verbose"], "labels_as_features": ["--labels-as-features"],
    # with the cell's -k: refused (give one); --k-curve without -k auto: refused
    "percentile": ["--percentile", "50"], "k_curve": ["--k-curve", "curve.png"],
    # a CSV reader's option: refused on the ARFF file and the store (CSV cells below)
    "header": ["--no-header"],
}
#: The format of the walk's data file (the rules of reader options read it).
FILE_FORMAT = "arff"
CLI_OPTIONS = [name for name, flag in SELECT_OPTIONS.items() if flag is not None]


def test_every_option_of_the_command_is_in_the_matrix():
    from coreselect.cli.select import select_cmd

    params = {p.name for p in select_cmd.params if p.expose_value} - {"data"}  # not --help-all
    assert params == set(CLI_OPTIONS)
    assert {"-" + f.lstrip("-") for p in select_cmd.params for f in p.opts} >= {
        "-" + SELECT_OPTIONS[n].lstrip("-") for n in CLI_OPTIONS}


def _base(data, mode, source, engine, address):
    args = ["select", data[source], "-k", K, "--json", "--mode", mode]
    if engine == "dask":
        args += ["--engine", "dask", "--scheduler", address]
    return args


def _given(option, engine):
    given = {"mode", "as_json", "k", option}  # _base gives -k
    if engine == "dask":
        given |= {"engine", "scheduler"}
    return given


def _comparable(out: str) -> dict:
    report = json.loads(out)
    for key in VOLATILE:
        report.pop(key, None)
    return report


@pytest.mark.parametrize("mode,source,engine", CELLS)
def test_select_matrix(capsys, monkeypatch, tmp_path, data, scheduler, mode, source, engine):
    from coreselect.cli import _common

    monkeypatch.setattr(_common, "_is_tty", lambda stream: True)  # progress bars are drawn
    base = _base(data, mode, source, engine, scheduler)
    code, out, err = run(capsys, *base)
    assert code == 0, err
    reference = _comparable(out)
    noisy_err = err  # progress bars on a "terminal"
    for option in CLI_OPTIONS:
        if option in ("mode", "as_json"):
            continue  # the cell's own: checked below
        args = list(base)
        if option == "engine":
            if engine == "local":
                args += ["--engine", "local"]
        elif option == "scheduler":
            if engine == "local":
                args += ["--scheduler", scheduler]
        elif option in ("out", "export", "coverage_png"):
            target = tmp_path / {"out": "o.json", "export": "x.csv",
                                 "coverage_png": "c.png"}[option]
            args += [SELECT_OPTIONS[option], target]
        elif option == "temp_dir":
            (tmp_path / "scratch").mkdir(exist_ok=True)
            args += ["--temp-dir", tmp_path / "scratch"]
        elif option == "checkpoint":
            # the weighing records checkpoints (on these dense codes "auto" takes cmim)
            args += ["--calibration", "information", "--checkpoint", tmp_path / "run.ckpt"]
        else:
            args += VALUES[option]
        why = unused_reason(option, mode, source, engine, _given(option, engine),
                            fmt=FILE_FORMAT if source == "file" else None)
        if (option == "random_state" and source == "store" and why is None):
            why = "the store's partition is its build seed (0), not 7"
        code, out, err = run(capsys, *args)
        cell = (option, mode, source, engine)
        if why is not None:
            assert code == 2, (cell, err)
            assert out == "" and len(err.strip().splitlines()) == 1, (cell, err)
            flag = VALUES[option][0] if option == "header" else SELECT_OPTIONS[option]
            assert flag in err or option == "random_state" and "random_state" in err, (cell, err)
            continue
        assert code == 0, (cell, err)
        report = _comparable(out)
        if option == "engine":
            assert report["engine"] == engine, cell
        elif option == "scheduler":
            assert report["engine_info"]["scheduler"] == scheduler, cell
        elif option == "n_workers":
            assert report["engine_info"]["n_workers"] == 2 != reference["engine_info"]["n_workers"]
        elif option == "backend":
            assert report["backend"] == "numpy" != reference["backend"], cell
        elif option == "row_shards":
            assert report["engine_info"]["row_shards"] == 3, cell
            assert reference["engine_info"]["row_shards"] != 3, cell
        elif option in ("out", "export", "coverage_png"):
            assert target.stat().st_size > 0, cell
            target.unlink()
            if option == "export":
                assert report["export"] == str(target)
        elif option == "temp_dir":  # echoed; the copies were made there and removed
            assert report["engine_info"]["temp_dir"] == str(tmp_path / "scratch"), cell
            assert list((tmp_path / "scratch").iterdir()) == [], cell
        elif option == "checkpoint":  # echoed, the record written, the selection the same
            assert report["engine_info"]["checkpoint"] == str(tmp_path / "run.ckpt"), cell
            assert report["engine_info"]["resumed_from_step"] == 0, cell
            _, weighed, _ = run(capsys, *base, "--calibration", "information")
            assert report["selected"] == _comparable(weighed)["selected"], cell
            (tmp_path / "run.ckpt").unlink()
        elif option == "quiet":
            assert err == "" != noisy_err, cell
        elif option == "verbose":
            assert "coreselect." in err and "coreselect." not in noisy_err, cell
        else:
            assert report != reference, cell
    assert reference["mode"] == mode
    assert reference["engine"] == (engine if mode in ENGINE_MODES else
                                   None if mode == "centralized" else "stream")
    code, out, err = run(capsys, *[a for a in base if a != "--json"])
    # the default on these dense codes is cmim, and the summary says it chose it
    assert code == 0 and not out.startswith("{")
    assert "cmim criterion, summed over the picks" in out and "the default on data" in out


def test_dask_workers_without_a_scheduler(capsys, data):
    """--workers sizes the LocalCluster a run starts; the documented distributed-store run
    (3 row blocks on 2 workers: 'auto' is the store's row blocks, whatever the workers). One
    cluster start: the other --workers cells of the walk run against --scheduler (refused)
    or on the local engine (a process pool, echoed)."""
    code, out, err = run(capsys, "select", data["store"], "-k", K, "--json", "--mode", "rows",
                         "--engine", "dask", "--workers", 1)
    assert code == 0, err
    report = json.loads(out)
    assert report["engine_info"]["n_workers"] == 1 and report["engine_info"]["row_shards"] == 3


@pytest.mark.parametrize("n_row_blocks", [1, 3])
def test_store_rows_on_dask_with_defaults(tmp_path, data, scheduler, n_row_blocks):
    """The library's run on a store of 1 or 3 row blocks, on a 2-worker cluster, with defaults
    (no row_shards): the selection of the centralized run."""
    from coreselect.io import read
    from coreselect.selection import select
    from coreselect.store import build_store

    ds = read(data["file"])
    store = build_store(ds.X, ds.Y, tmp_path / "s", row_block_size=N // n_row_blocks)
    central = select(store, k=K)
    rows = select(store, k=K, mode="rows", engine="dask", scheduler=scheduler)
    assert rows.selected.tolist() == central.selected.tolist()
    assert rows.engine_info["row_shards"] == n_row_blocks


# -- the library refuses what the command line refuses (rules with api=True) ----------------
API_VALUES = {"partitions": 2, "coreset_size": 5, "row_shards": 3, "engine": "dask",
              "n_workers": 2, "scheduler": "tcp://127.0.0.1:1", "n_bins": 4,
              "strategy": "uniform", "min_bin_count": 40, "temp_dir": ".", "random_state": 7}


@pytest.mark.parametrize("mode,source,engine", CELLS)
def test_api_refuses_what_the_matrix_refuses(data, mode, source, engine):
    from coreselect.selection import select
    from coreselect.store import open_store

    from coreselect.io import read

    obj = open_store(data["store"]) if source == "store" else read(data["file"])
    for option, value in API_VALUES.items():
        if option == "engine":
            continue  # the cell's own dimension
        params = {option: value}
        given = {option} | ({"engine"} if engine != "local" else set())
        why = unused_reason(option, mode, source, engine, given, api=True)
        if why is None:
            continue  # honoured: the command-line walk shows it
        with pytest.raises(InputError, match=option):
            select(obj, k=K, mode=mode, engine=engine, **params)


def test_labels_as_features(capsys, tmp_path, data, light_report):
    """--labels-as-features with --labels keeps the declared labels left out as candidates
    (select, evaluate and store build alike); without --labels, or on a file that declares no
    labels, it is one line and exit 2."""
    def selection(*extra):
        code, out, err = run(capsys, "select", data["file"], "-k", 2, "--json",
                             "--labels", "y0,y1", *extra)
        assert code == 0, err
        return json.loads(out)

    plain, kept = selection(), selection("--labels-as-features")
    assert (plain["n_features"], plain["n_labels"]) == (D + 2, 2)
    assert (kept["n_features"], kept["n_labels"]) == (D + 4, 2)
    assert set(kept["names"]) <= {f"f{j}" for j in range(D + 2)} | {"y2", "y3"}
    assert set(plain["names"]) <= {f"f{j}" for j in range(D + 2)}
    for command in (["select", data["file"], "-k", 2], ["evaluate", data["file"], "--k", 2,
                    "--out", tmp_path / "e"], ["store", "build", data["file"], tmp_path / "s"]):
        code, out, err = run(capsys, *command, "--labels-as-features")
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (command, err)
        assert "--labels-as-features" in err and "--labels" in err, err
    assert not (tmp_path / "e").exists() and not (tmp_path / "s").exists()
    code, _, err = run(capsys, "store", "build", data["file"], tmp_path / "s2", "--labels",
                       "y0,y1", "--labels-as-features", "--quiet")
    assert code == 0, err
    assert json.loads((tmp_path / "s2" / "store.json").read_text())["n_features"] == D + 4
    csv = tmp_path / "m.csv"
    csv.write_text("a,b,y\n1,2,0\n3,4,1\n5,6,0\n")
    code, out, err = run(capsys, "select", csv, "-k", 1, "--labels", "y",
                         "--labels-as-features")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "ARFF" in err, err


def test_limits_are_one_line(capsys, data):
    code, _, err = run(capsys, "select", data["file"], "-k", K, "--mode", "distributed",
                       "--workers", 10**6)
    assert code == 2 and "--workers must be" in err and str(max_workers()) in err
    code, _, err = run(capsys, "select", data["file"], "-k", K, "--p", 10**18)
    assert code == 2 and len(err.splitlines()) == 1
    code, out, err = run(capsys, "select", data["file"], "-k", K, "--p", 2**31 - 1, "--json")
    assert code == 0, err  # p beyond the candidates counts them all
    code, _, err = run(capsys, "select", data["file"], "-k", K, "--export", "x.txt")
    assert code == 2 and ".arff" in err and ".csv" in err and len(err.splitlines()) == 1


# -- evaluate ---------------------------------------------------------------------------------
EVAL_CONTEXTS = {"gds": ["--methods", "cgds"], "baselines": ["--methods", "br-chi2"],
                 "tuned": ["--methods", "gds-tuned"],  # chooses lambda and relevance itself
                 "sweep": ["--methods", "cgds", "--lam-sweep", "0,1"]}
EVAL_VALUES = {"lam": ["--lam", "0.9"], "relevance": ["--relevance", "nmi"],
               "seed": ["--seed", "3"], "folds": ["--folds", "3"], "k_spec": ["--k", "2,3"],
               "evaluator": ["--evaluator", "brknn"], "measures": ["--measures", "p@1,psndcg@3"],
               "labels": ["--labels", "y0,y1,y2"],
               "labels_as_features": ["--labels", "y0,y1", "--labels-as-features"],
               "jobs": ["--jobs", "2"], "quiet": ["--quiet"], "verbose": ["--verbose"],
               # a given split instead of the folds: m-test.arff, Mulan's m-train/m-test pair
               "test_data": ["--test", "TEST_FILE"], "mulan_split": ["--mulan-split"],
               "header": ["--no-header"]}  # CSV files only: refused on the ARFF file


def _evaluate(capsys, data, out, *extra):
    extra = [str(data["test"]) if e == "TEST_FILE" else e for e in extra]
    split = "--test" in extra or "--mulan-split" in extra  # scored once: no --folds
    return run(capsys, "evaluate", data["file"], "--k", "2", *([] if split else ["--folds", "2"]),
               "--evaluator", "linear", "--out", out, *extra)


def _results(out: Path) -> str:
    import pandas as pd

    frame = pd.read_csv(out / "results.csv").drop(columns=["select_seconds", "fit_seconds",
                                                           "predict_seconds"], errors="ignore")
    return frame.to_csv(index=False) + (out / "summary.md").read_text()  # notes: the echo


@pytest.fixture
def light_report(monkeypatch):
    """evaluate's report without its plots and tables (time): results.csv and the notes,
    which echo the run's parameters."""
    from coreselect.evaluation import report

    def write_report(df, out_dir, dataset="", notes="", evaluator="brknn"):
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        df.to_csv(out / "results.csv", index=False)
        (out / "summary.md").write_text(notes)
        return [out / "results.csv", out / "summary.md"]

    monkeypatch.setattr(report, "write_report", write_report)


class _ThreadPool:
    """A stand-in for evaluate's process pool (spawned interpreters take seconds each): the
    same tasks in threads, and a record of the pool size asked for."""

    sizes: list = []

    def __init__(self, max_workers, mp_context=None, initializer=None, initargs=()):
        from concurrent.futures import ThreadPoolExecutor

        _ThreadPool.sizes.append(max_workers)
        if initializer is not None:
            initializer(*initargs)
        self.pool = ThreadPoolExecutor(max_workers)

    def __getattr__(self, name):  # submit, shutdown: the thread pool's
        return getattr(self.pool, name)

    def __enter__(self):
        return self.pool.__enter__()

    def __exit__(self, *exc):
        return self.pool.__exit__(*exc)


@pytest.mark.parametrize("context", list(EVAL_CONTEXTS))
def test_evaluate_matrix(capsys, monkeypatch, tmp_path, data, light_report, context):
    from coreselect.cli.evaluate import evaluate_cmd

    assert {p.name for p in evaluate_cmd.params if p.expose_value} \
        - {"data", "methods", "out_dir", "lam_sweep"} == set(EVAL_VALUES)
    from coreselect.evaluation import protocol

    monkeypatch.setattr(protocol, "ProcessPoolExecutor", _ThreadPool)
    _ThreadPool.sizes.clear()
    base = EVAL_CONTEXTS[context]
    code, _, err = _evaluate(capsys, data, tmp_path / "ref", *base)
    assert code == 0, err
    reference = _results(tmp_path / "ref")
    methods = base[1].split(",")
    # Options that never depend on the context run in one context only (time).
    options = list(EVAL_VALUES) if context == "gds" else ["lam", "relevance"]
    for option in options:
        out = tmp_path / option
        code, _, err = _evaluate(capsys, data, out, *base, *EVAL_VALUES[option])
        why = evaluate_unused_reason(option, methods, context == "sweep", FILE_FORMAT)
        if why is not None:
            assert code == 2 and len(err.strip().splitlines()) == 1, (option, context, err)
            assert EVAL_VALUES[option][0] in err
            continue
        assert code == 0, (option, context, err)
        if option == "quiet":
            assert "wrote" not in err
        elif option == "verbose":
            assert "wrote" in err
        elif option == "jobs":
            assert "2 job(s)" in (out / "summary.md").read_text() and _ThreadPool.sizes == [2]
        else:
            assert _results(out) != reference, (option, context)


def test_evaluate_limits(capsys, tmp_path, data, light_report):
    code, _, err = _evaluate(capsys, data, tmp_path / "a", "--methods", "cgds", "--jobs", 10**6)
    assert code == 2 and len(err.splitlines()) == 1 and "--jobs" in err
    code, _, err = _evaluate(capsys, data, tmp_path / "b", "--methods", "cgds", "--seed", 2**64)
    assert code == 2 and len(err.splitlines()) == 1


# -- store build --------------------------------------------------------------------------------
BUILD_VALUES = {"block_size": ["--block-size", "4"], "row_block_size": ["--row-block-size", "50"],
                "seed": ["--seed", "3"], "labels": ["--labels", "y0,y1"],
                "labels_as_features": ["--labels", "y0,y1", "--labels-as-features"],
                "n_bins": ["--bins", "4"], "strategy": ["--strategy", "uniform"],
                "min_bin_count": ["--min-bin-count", "40"], "quiet": ["--quiet"],
                "verbose": ["--verbose"],
                # values kept to 10 bits move a cut point among five bins (the data have
                # 120 rows: "auto" takes three, where they move none)
                "cap": ["--exact-values", "2", "--bins", "5"],
                # how the build runs, not what it writes: the same store (tests/test_store_ingest.py)
                "n_workers": ["--workers", "2"], "chunk_rows": ["--chunk-rows", "7"],
                "scheduler": ["--scheduler", "tcp://127.0.0.1:1"],
                # kept tasks, removed on success (tests/test_store_resume.py)
                "checkpoint": ["--checkpoint", "build.ckpt"],
                # CSV files only: refused on the ARFF file (its CSV cell: test_header_on_csv)
                "header": ["--no-header"]}
#: Build options that change how the store is built, never the store.
SAME_STORE = ("n_workers", "chunk_rows", "checkpoint")


def test_store_build_matrix(capsys, monkeypatch, tmp_path, data):
    from coreselect.cli import _common
    from coreselect.cli.store import build_cmd

    assert {p.name for p in build_cmd.params} - {"data", "store_dir"} == set(BUILD_VALUES)
    monkeypatch.setattr(_common, "_is_tty", lambda stream: True)
    monkeypatch.chdir(tmp_path)  # --checkpoint build.ckpt

    def build(name, *extra):
        code, out, err = run(capsys, "store", "build", data["file"], tmp_path / name, *extra)
        assert code == 0, err
        meta = json.loads((tmp_path / name / "store.json").read_text())
        meta.pop("created", None)
        return json.dumps(meta, sort_keys=True), out, err

    reference, ref_out, ref_err = build("ref")
    for option, extra in BUILD_VALUES.items():
        if option in ("scheduler", "header"):  # scheduler: used (nothing listens there)
            code, _, err = run(capsys, "store", "build", data["file"], tmp_path / option, *extra)
            assert code == 2 and len(err.strip().splitlines()) == 1, (option, err)
            assert ("127.0.0.1:1" if option == "scheduler" else "--no-header") in err
            assert unused_reason("header", "centralized", "file", "local",
                                 fmt=FILE_FORMAT) in err or option == "scheduler"
            assert not (tmp_path / option).exists()
            continue
        meta, out, err = build(option, *extra)
        if option in SAME_STORE:
            assert meta == reference, option
            assert not Path("build.ckpt").exists() and not Path("build.ckpt.parts").exists()
        elif option == "quiet":
            assert err == "" != ref_err
        elif option == "verbose":
            assert "coreselect." in err and "coreselect." not in ref_err
        elif option == "cap":
            assert meta != build("ref-bins5", "--bins", "5")[0], option
        else:
            assert meta != reference, option
    code, _, err = run(capsys, "store", "build", data["file"], tmp_path / "big", "--seed", 2**64)
    assert code == 2 and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", [["store", "build"], ["store", "verify"], ["store", "info"],
                                     ["evaluate"], ["datasets", "fetch"], ["datasets", "info"],
                                     ["datasets", "list"], ["bench"], ["select"]])
def test_every_command_has_quiet_and_verbose(capsys, command):
    code, out, err = run(capsys, *command, "--help")
    assert code == 0
    assert "-q, --quiet" in out and "-v, --verbose" in out, out


def test_datasets_list_json_is_json_lines(capsys):
    code, out, _ = run(capsys, "datasets", "list", "--json")
    lines = out.splitlines()
    assert code == 0 and len(lines) > 1
    assert all(isinstance(json.loads(line), dict) for line in lines)


def test_every_calibration_is_described_in_help_all(capsys):
    """``--help`` lists the calibrations a user picks among (the default, auto, and what it
    stands for, information and cmim; paper, fixed); ``--help-all`` describes every one,
    those kept for research too."""
    from coreselect.cli.select import shown_calibrations
    from coreselect.core.objective import AUTO, CONDITIONAL, DEFAULT_CALIBRATION
    from coreselect.core.objective import CALIBRATIONS as WEIGHINGS

    CALIBRATIONS = (AUTO, *WEIGHINGS, *CONDITIONAL)
    assert set(shown_calibrations()) == {DEFAULT_CALIBRATION, "information", "cmim", "paper",
                                         "fixed"}
    code, out, _ = run(capsys, "select", "--help-all")
    text = " ".join(out.split())
    assert code == 0
    for name in CALIBRATIONS:
        assert f"{name}:" in text, name
    code, out, _ = run(capsys, "select", "--help")
    text = " ".join(out.split())
    assert code == 0 and "--help-all" in text
    for name in CALIBRATIONS:
        assert (f"{name}:" in text) == (name in shown_calibrations()), name
    # Out of the main help, still accepted.
    code, out, err = run(capsys, "select", "synthesized", "-k", K, "--calibration", "spread",
                         "--relevance", "nmi", "--backend", "numpy", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["calibration"] == "spread" and report["relevance_kind"] == "nmi"


#: Switches kept for research or expert tuning: accepted, out of the main --help.
EXPERT_OPTIONS = {"select": ("--relevance", "--coreset-size", "--backend"),
                  "evaluate": ("--relevance",)}


@pytest.mark.parametrize("command", sorted(EXPERT_OPTIONS))
def test_expert_options_are_listed_by_help_all_only(capsys, command):
    code, short, _ = run(capsys, command, "--help")
    assert code == 0
    code, full, _ = run(capsys, command, "--help-all")
    assert code == 0
    for flag in EXPERT_OPTIONS[command]:
        assert f"{flag} " not in short and f"{flag} " in full, flag
    code, again, _ = run(capsys, command, "--help")
    assert again == short  # --help-all leaves the command's help as it was


@pytest.mark.parametrize("d", [1, 2, 7])
def test_p_beyond_the_candidates_counts_them_all(d):
    """RelevanceGains keeps at most d values per label: any p >= d selects as p = d + 1 and
    g is the sum of every selected feature's relevances (the reference formula)."""
    from coreselect.core.objective import relevance_of
    from coreselect.selection import select

    rng = np.random.default_rng(d)
    X = rng.integers(0, 3, size=(40, d))
    Y = (rng.random((40, 3)) < 0.5).astype(int)
    k = min(d, 3)
    small = select(X, Y, k=k, p=d + 1, min_bin_count=1, keep_constant=True)
    huge = select(X, Y, k=k, p=2**31 - 1, min_bin_count=1, keep_constant=True)
    assert huge.selected.tolist() == small.selected.tolist()
    assert huge.relevance == pytest.approx(small.relevance)
    assert huge.relevance == pytest.approx(
        relevance_of(huge.label_relevance, np.arange(k), 2**31 - 1))


@pytest.mark.parametrize("command", ["select", "evaluate"])
def test_every_option_of_the_main_help_is_in_the_options_table(command):
    """docs/options.md has a row for every option the main --help shows (those --help-all
    adds are for research and expert tuning)."""
    import re

    import click

    from coreselect.cli import cli

    table = (Path(__file__).resolve().parents[1] / "docs" / "options.md").read_text()
    cmd = cli.get_command(click.Context(cli), command)
    missing = [p.opts[0] for p in cmd.params
               if isinstance(p, click.Option) and not p.hidden
               and not set(p.opts) & {"--help", "--help-all"}
               and not any(re.search(rf"`{re.escape(opt)}[ `]", table) for opt in p.opts)]
    assert not missing, f"not in docs/options.md: {missing}"


# -- --header/--no-header: the CSV cells ------------------------------------------------------
def _csv(path: Path, first: str, rows: int = 60) -> Path:
    """A CSV file without a header row: ``first`` is its first line (data), then ``rows``
    rows of a colour, two numbers and two labels."""
    rng = np.random.default_rng(1)
    lines = [first] + [f"{rng.choice(['red', 'blue'])},{rng.normal():.3f},{rng.normal():.3f},"
                       f"{rng.integers(2)},{rng.integers(2)}" for _ in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("mode", MODES)
def test_header_on_csv(capsys, tmp_path, mode):
    """On a CSV file --no-header reads a first row of words as data and --header a first row
    of numbers as names, in every mode; the option matrix has no rule against either there."""
    words = _csv(tmp_path / "w.csv", "green,0.5,1.5,1,0")
    numbers = _csv(tmp_path / "n.csv", "7,0.5,1.5,1,0")
    for option in ("header",):
        assert unused_reason(option, mode, "file", "local", {option}, fmt="csv") is None

    def report(path, *extra):
        code, out, err = run(capsys, "select", path, "-k", 2, "--labels", 2, "--json",
                             "--mode", mode, "--min-bin-count", 1, *extra)
        assert code == 0, (mode, extra, err)
        return json.loads(out)

    plain, data = report(words), report(words, "--no-header")
    assert plain["n_samples"] == 60 and data["n_samples"] == 61, mode
    assert set(data["names"]) <= {"x0", "x1", "x2"} and "x" not in "".join(plain["names"])
    plain, names = report(numbers), report(numbers, "--header")
    assert plain["n_samples"] == 61 and names["n_samples"] == 60, mode
    assert set(names["names"]) <= {"7", "0.5", "1.5"}


def test_header_on_csv_in_every_command(capsys, tmp_path, light_report):
    """store build, evaluate and datasets info read --no-header as select does."""
    words = _csv(tmp_path / "w.csv", "green,0.5,1.5,1,0")
    code, _, err = run(capsys, "store", "build", words, tmp_path / "s", "--labels", 2,
                       "--no-header", "--min-bin-count", 1, "--quiet")
    assert code == 0, err
    assert json.loads((tmp_path / "s" / "store.json").read_text())["n_samples"] == 61
    code, out, err = run(capsys, "datasets", "info", words, "--labels", 2, "--no-header",
                         "--json")
    assert code == 0 and json.loads(out)["instances"] == 61, err
    code, out, err = run(capsys, "datasets", "info", words, "--labels", 2, "--json")
    assert code == 0 and json.loads(out)["instances"] == 60, err
    code, _, err = run(capsys, "evaluate", words, "--methods", "cgds", "--k", 2, "--folds", 2,
                       "--labels", 2, "--no-header", "--evaluator", "linear",
                       "--out", tmp_path / "e")
    assert code == 0, err
    # A column store: the columns were read when it was built.
    code, out, err = run(capsys, "select", tmp_path / "s", "-k", 1, "--header")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--header" in err and "store build" in err


@pytest.mark.parametrize("command", [["select", "-k", "2"], ["evaluate", "--k", "2"],
                                     ["datasets", "info"]])
def test_header_off_csv_is_one_line(capsys, tmp_path, data, command):
    """--header/--no-header on a file of another format, or a built-in dataset name, is
    refused in one line naming the flag as given, before anything is read or written."""
    for target, flag in ((data["file"], "--no-header"), ("emotions", "--header")):
        args = [*command[:-2], target, *command[-2:]] if len(command) == 3 else [*command, target]
        code, out, err = run(capsys, *args, flag)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (args, err)
        assert flag in err and "CSV" in err, err
