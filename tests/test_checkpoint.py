"""Resumable runs (issue 21, item 4): ``select(..., checkpoint=...)`` / ``--checkpoint``.

* A run resumed from *every* record an uninterrupted run wrote (the relevances computed up
  front, mode rows' counts pass, the fixed calibration's ranges, each finished part, each
  greedy step) ends with that run's selection, objective, relevance, diversity and pair
  distances, bit for bit: every mode, a data array and a column store, sizes of one, a few
  and many steps (k = 1 included), the Dask engine, hypothesis over the data, the dense and
  the sparse relevance; and it computes nothing again that its record holds.
* A real ``python -m coreselect`` killed with SIGKILL right after its N-th record (the
  ``CORESELECT_TEST_HOLD`` hook, stage ``checkpointed-N``: no timing), then run again: the
  same JSON selection and objective as an uninterrupted run.
* Refusals, one line (exit 2 from the command line, :class:`CheckpointError` from Python):
  another dataset, store, k / lam / p, mode, coreselect version or format; a damaged file
  (truncated, altered, not a checkpoint, a folder; a part, relevance or statistics file
  missing or altered; recorded relevances that do not fit the data); never a silent
  restart.
* Checkpoints at URLs: ``memory://``, and S3 (a moto server) when s3fs and moto are there.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.selection.checkpoint import Checkpoint, decode, encode
from coreselect.cli import main
from coreselect.core.objective import P_ALL
from coreselect.errors import CheckpointError
from coreselect.selection import select as _select
# The checkpointed greedy is the weighing's: on these dense random codes the default
# ("auto") takes cmim, which records no checkpoint (refused: tests/test_conditional.py).
select = functools.partial(_select, calibration="information")

SRC = Path(__file__).resolve().parents[1] / "src"
MODES = ("centralized", "distributed", "streaming", "rows")


class Snapshots(Checkpoint):
    """A checkpoint in memory that keeps every record written (``records``) and reads back
    ``data`` (None: nothing recorded yet); part files in ``part_files``."""

    def __init__(self, data: bytes | None = None, part_files: dict | None = None):
        super().__init__("snapshots.ckpt")
        self.data, self.records = data, []
        self.part_files = dict(part_files or {})

    def read(self) -> bytes | None:
        return self.data

    def write(self, data: bytes) -> None:
        self.records.append(data)

    def read_part(self, name: str) -> bytes | None:
        return self.part_files.get(name)

    def write_part(self, name: str, data: bytes) -> None:
        self.part_files[name] = data


def _data(seed: int = 0, n: int = 80, d: int = 14, labels: int = 3):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, labels)) < 0.4).astype(int)
    X = rng.integers(0, 4, size=(n, d)) + (Y @ rng.integers(0, 2, size=(labels, d)))
    X[:, 1] = X[:, 0]  # a copy: the calibrated steps skip it
    return X, Y


def _kwargs(mode: str) -> dict:
    extra = {"random_state": 3, "partitions": 3} if mode in ("distributed", "streaming") else {}
    return {"mode": mode, "min_bin_count": 1, **extra}


def _same(a, b) -> None:
    """Bit-identical results (floats compared exactly)."""
    assert a.selected.tolist() == b.selected.tolist()
    for name in ("objective", "relevance", "diversity"):
        assert getattr(a, name) == getattr(b, name), name
    assert np.array_equal(a.pair_distances, b.pair_distances)
    assert np.array_equal(a.feature_relevance, b.feature_relevance)


def _resume_from_every_record(data, Y, k, **kwargs) -> int:
    """Run once recording, then resume from each record; returns how many records."""
    reference = select(data, Y, k=k, **kwargs)
    recorder = Snapshots()
    first = select(data, Y, k=k, checkpoint=recorder, **kwargs)
    _same(first, reference)
    assert first.engine_info["resumed_from_step"] == 0
    for record in recorder.records:
        header, _ = decode(record, "x")
        resumed = select(data, Y, k=k, checkpoint=Snapshots(record, recorder.part_files),
                         **kwargs)
        _same(resumed, reference)
        assert resumed.engine_info["resumed_from_step"] == (header["step"] or 0)
        if "partitions" in header["spec"]:
            assert resumed.engine_info["resumed_parts"] == len(header["parts"])
    last, _ = decode(recorder.records[-1], "x")
    assert last["complete"] and last["step"] == k
    return len(recorder.records)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 3, 9])
def test_resume_from_every_record_of_an_array_run(mode, k):
    X, Y = _data()
    n = _resume_from_every_record(X, Y, k, **_kwargs(mode))
    # one record per part (3), per greedy step, and one for the relevances computed up front
    # (mode rows: its counts pass)
    assert n == k + 1 + {"distributed": 3, "streaming": 3}.get(mode, 0)


@pytest.mark.parametrize("mode", MODES)
def test_resume_from_every_record_of_a_store_run(tmp_path, mode):
    from coreselect.store import build_store

    X, Y = _data(1, n=90, d=16)
    store = build_store(X, Y, tmp_path / "s", block_size=4, row_block_size=30, min_bin_count=1)
    kwargs = {"mode": mode, "partitions": 3} if mode in ("distributed", "streaming") else {
        "mode": mode}
    _resume_from_every_record(store, None, 4, **kwargs)


def _computed_again(*args, **kwargs):
    raise AssertionError("a resumed run computed again what its checkpoint recorded")


def _refuse_recomputing(monkeypatch) -> None:
    """From here on, computing relevances or mode rows' counts pass fails the test."""
    import coreselect.core.problem as problem_module
    import coreselect.engines.rowsharded as rowsharded
    import coreselect.selection.strategies as strategies
    from coreselect.core.sparse_relevance import SparseRelevance

    monkeypatch.setattr(problem_module, "relevance_matrix", _computed_again)
    monkeypatch.setattr(SparseRelevance, "_all_pairs", _computed_again)
    monkeypatch.setattr(rowsharded, "row_sharded_statistics", _computed_again)
    monkeypatch.setattr(strategies, "measure_ranges", _computed_again)


@pytest.mark.parametrize("form", ["dense", "sparse"])
@pytest.mark.parametrize("mode", MODES)
def test_resumed_runs_read_the_relevances_and_counts_they_recorded(monkeypatch, mode, form):
    """The relevances (computed up front: centralized, and distributed in memory), mode rows'
    counts pass and the fixed calibration's ranges are recorded once; a run resumed from any
    record computes none of them again and ends bit for bit as the uninterrupted run. The
    sparse relevance (many labels) is recorded as its pairs (mode rows: with the merged
    marginals)."""
    from coreselect.core import sparse_relevance

    if form == "sparse":
        monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", 0)
    X, Y = _data(7, labels=4)
    for calibration in ("range", "fixed"):
        kwargs = {"k": 4, "calibration": calibration, **_kwargs(mode)}
        reference = select(X, Y, **kwargs)
        assert (reference.engine_info.get("relevance_backend")
                or reference.data.get("relevance_backend")) == form
        recorder = Snapshots()
        _same(select(X, Y, checkpoint=recorder, **kwargs), reference)
        ranges = calibration == "fixed" and mode in ("distributed", "streaming")
        assert len(recorder.records) == 4 + 1 + 3 * ("partitions" in kwargs) + ranges
        with monkeypatch.context() as patched:
            _refuse_recomputing(patched)
            for record in recorder.records[1 + ranges:]:
                resumed = select(X, Y, checkpoint=Snapshots(record, recorder.part_files),
                                 **kwargs)
                _same(resumed, reference)


@pytest.mark.parametrize("mode", MODES)
def test_a_store_run_resumed_computes_no_recorded_pass_again(tmp_path, monkeypatch, mode):
    """On a column store: the centralized relevances, mode rows' counts and the fixed
    calibration's ranges over Algorithm 3's parts (each part computes its own relevances)."""
    import coreselect.selection.strategies as strategies
    from coreselect.store import build_store

    X, Y = _data(8, n=90, d=16)
    store = build_store(X, Y, tmp_path / "s", block_size=4, row_block_size=30, min_bin_count=1)
    kwargs = {"k": 3, "mode": mode, "calibration": "fixed",
              **({"partitions": 3} if mode in ("distributed", "streaming") else {})}
    reference = select(store, **kwargs)
    recorder = Snapshots()
    select(store, checkpoint=recorder, **kwargs)
    assert len(recorder.records) == 3 + 1 + kwargs.get("partitions", 0)
    with monkeypatch.context() as patched:
        if "partitions" in kwargs:
            patched.setattr(strategies, "measure_ranges", _computed_again)
        else:
            _refuse_recomputing(patched)
        for record in recorder.records[1:]:
            _same(select(store, checkpoint=Snapshots(record, recorder.part_files), **kwargs),
                  reference)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(1, 6), mode=st.sampled_from(MODES),
       calibration=st.sampled_from(["paper", "range", "ratio"]))
def test_resume_is_bit_identical_on_random_data(seed, k, mode, calibration):
    X, Y = _data(seed, n=50, d=10)
    _resume_from_every_record(X, Y, k, calibration=calibration, **_kwargs(mode))


def test_resume_on_the_dask_engine(tmp_path):
    """A distributed run's parts recorded on a Dask cluster, resumed on the local engine and
    on Dask: the same result (the parts are pure; any engine may resume another)."""
    from coreselect.engines.dask import local_cluster

    X, Y = _data(2, d=18)
    kwargs = {"mode": "distributed", "random_state": 5, "partitions": 4, "min_bin_count": 1}
    reference = select(X, Y, k=4, **kwargs)
    cluster = local_cluster(2, 1)
    try:
        recorder = Snapshots()
        on_dask = select(X, Y, k=4, checkpoint=recorder, engine="dask",
                         scheduler=cluster.scheduler_address, **kwargs)
        _same(on_dask, reference)
        for record in recorder.records[:5]:  # after 1..4 parts, and the first union step
            for engine in ({}, {"engine": "dask", "scheduler": cluster.scheduler_address}):
                resumed = Snapshots(record, recorder.part_files)
                _same(select(X, Y, k=4, checkpoint=resumed, **kwargs, **engine), reference)
    finally:
        cluster.close()


def test_a_finished_run_keeps_its_record_and_returns_at_once(tmp_path):
    X, Y = _data()
    path = tmp_path / "run.ckpt"
    first = select(X, Y, k=4, checkpoint=path)
    header, _ = decode(path.read_bytes(), "x")
    assert header["complete"] and header["step"] == 4
    again = select(X, Y, k=4, checkpoint=str(path))
    _same(again, first)
    assert again.engine_info == {"checkpoint": str(path), "resumed_from_step": 4}
    # no temporary left; the relevances written once beside the record
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.ckpt", "run.ckpt.parts"]
    assert sorted(p.name for p in (tmp_path / "run.ckpt.parts").iterdir()) == [
        ".coreselect-owned", "relevance"]  # the mark: a folder coreselect made


# -- refusals ------------------------------------------------------------------------------------
def _record(path, X, Y, **kwargs):
    select(X, Y, checkpoint=path, **{"k": 3, **kwargs})


@pytest.mark.parametrize("change,words", [
    ({"k": 4}, "k 3 there, 4 here"), ({"lam": 0.2}, "lam"), ({"p": 2}, r"p \d+ there, 2 here"),
    ({"mode": "rows"}, "mode"), ({"relevance": "nmi"}, "relevance"),
    ({"n_bins": 4}, "n_bins"), ({"keep_constant": True}, "keep_constant"),
])
def test_another_spec_is_refused(tmp_path, change, words):
    X, Y = _data()
    path = tmp_path / "run.ckpt"
    _record(path, X, Y)
    before = path.read_bytes()
    with pytest.raises(CheckpointError, match=words) as exc:
        select(X, Y, checkpoint=path, **{"k": 3, **change})
    assert "another run" in str(exc.value) and "\n" not in str(exc.value)
    assert path.read_bytes() == before  # never overwritten by a refused run


def test_another_partition_is_refused(tmp_path):
    X, Y = _data()
    path = tmp_path / "run.ckpt"
    _record(path, X, Y, mode="distributed", random_state=1, partitions=2)
    for change in ({"random_state": 2}, {"partitions": 3}, {"coreset_size": 5}):
        with pytest.raises(CheckpointError, match="another run"):
            _record(path, X, Y, **{"mode": "distributed", "random_state": 1, "partitions": 2,
                                   **change})
    with pytest.raises(CheckpointError, match="random_state"):  # no seed: parts not fixed
        select(X, Y, k=3, mode="distributed", checkpoint=tmp_path / "other.ckpt")


def test_other_data_and_another_store_are_refused(tmp_path):
    from coreselect.store import build_store

    X, Y = _data()
    path = tmp_path / "run.ckpt"
    _record(path, X, Y)
    X2 = X.copy()
    X2[0, 5] += 7
    _record(path, X2, Y)  # the same codes (three bins on 80 rows: the top one grew): accepted
    X2[:, 5] = X[::-1, 5]
    with pytest.raises(CheckpointError, match="other data"):
        _record(path, X2, Y)
    Y2 = Y.copy()
    Y2[0, 0] = 1 - Y2[0, 0]
    with pytest.raises(CheckpointError, match="other data"):
        _record(path, X, Y2)
    _record(path, X, 1 - Y)  # the same codes (code 0 is a label's commoner value): accepted
    a = build_store(X, Y, tmp_path / "a", min_bin_count=1)
    b = build_store(X2, Y, tmp_path / "b", min_bin_count=1)
    store_ckpt = tmp_path / "store.ckpt"
    select(a, k=3, checkpoint=store_ckpt)
    with pytest.raises(CheckpointError, match="other data"):
        select(b, k=3, checkpoint=store_ckpt)
    with pytest.raises(CheckpointError, match="other data"):  # the array is not the store
        select(X, Y, k=3, min_bin_count=1, checkpoint=store_ckpt)


def test_another_version_or_format_is_refused(tmp_path, monkeypatch):
    import coreselect

    X, Y = _data()
    path = tmp_path / "run.ckpt"
    _record(path, X, Y)
    monkeypatch.setattr(coreselect, "__version__", "99.0")
    with pytest.raises(CheckpointError, match="written by coreselect .* this is 99.0"):
        _record(path, X, Y)
    monkeypatch.undo()
    header, arrays = decode(path.read_bytes(), "x")
    path.write_bytes(encode({**header, "format": 0}, arrays))
    with pytest.raises(CheckpointError, match="format 0"):
        _record(path, X, Y)


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) - 100])
    elif how == "header-cut":
        path.write_bytes(data[:30])
    elif how == "flipped":
        b = bytearray(data)
        b[-50] ^= 0xFF
        path.write_bytes(bytes(b))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "foreign":
        path.write_text('{"selected": [1, 2, 3]}\n')
    elif how == "folder":
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("how", ["truncated", "header-cut", "flipped", "empty", "foreign",
                                 "folder"])
def test_a_damaged_checkpoint_is_refused_in_one_line(tmp_path, capsys, how):
    from coreselect.io import from_arrays, write

    X, Y = _data()
    data = tmp_path / "d.arff"
    write(from_arrays(X, Y, name="d"), data)
    path = tmp_path / "run.ckpt"
    with pytest.raises(SystemExit) as exc:
        main(["select", str(data), "-k", "3", "--json", "--calibration", "information", "--checkpoint", str(path)])
    assert exc.value.code == 0
    capsys.readouterr()
    _damage(path, how)
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(SystemExit) as exc:
        main(["select", str(data), "-k", "3", "--json", "--calibration", "information", "--checkpoint", str(path)])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and "checkpoint" in err, err
    assert "Traceback" not in err
    if before is not None:
        assert path.read_bytes() == before  # left as it was: never silently restarted


@pytest.mark.parametrize("how", ["missing", "altered"])
@pytest.mark.parametrize("mode,name", [("streaming", "part-000001"), ("streaming", "relevance"),
                                       ("centralized", "relevance"), ("rows", "statistics")])
def test_a_damaged_part_file_is_refused(tmp_path, how, mode, name):
    X, Y = _data()
    path = tmp_path / "run.ckpt"
    kwargs = _kwargs(mode)
    first = select(X, Y, k=3, checkpoint=path, **kwargs)
    part = tmp_path / "run.ckpt.parts" / name
    assert sorted(p.name for p in part.parent.iterdir() if p.name != ".coreselect-owned") == {
        "streaming": ["part-000000", "part-000001", "part-000002", "relevance"],
        "centralized": ["relevance"], "rows": ["statistics"]}[mode]
    if how == "missing":
        part.unlink()
    else:
        part.write_bytes(part.read_bytes()[:-1] + b"x")
    with pytest.raises(CheckpointError, match=f"{name} is {how}"):
        select(X, Y, k=3, checkpoint=path, **kwargs)
    (tmp_path / "run.ckpt").unlink()  # deleted: the run starts afresh
    _same(select(X, Y, k=3, checkpoint=path, **kwargs), first)


@pytest.mark.parametrize("form", ["dense", "sparse"])
def test_recorded_relevances_of_another_shape_are_refused(form):
    """A relevance file that passes its checksum but does not fit the data (a record made by
    hand, or by a bug): refused in one line, never used."""
    from coreselect.selection.checkpoint import Resumable
    from coreselect.core.discretize import discretize, discretize_labels
    from coreselect.core.sparse_relevance import SparseRelevance

    X, Y = _data()
    features, labels = discretize(X, min_bin_count=1), discretize_labels(Y)
    other = discretize(X[:, :5], min_bin_count=1)
    written = Resumable(Snapshots(), {"k": 3}, "data")
    from coreselect.core.entropy import relevance_matrix

    written.record_relevance(relevance_matrix(other, labels, "mi") if form == "dense"
                             else SparseRelevance(other, labels))
    again = Resumable(Snapshots(written.checkpoint.records[-1], written.checkpoint.part_files),
                      {"k": 3}, "data")
    with pytest.raises(CheckpointError, match="damaged .*relevance does not fit"):
        again.restore_relevance(features, labels)
    assert again.restore_relevance(other, labels) is not None


def test_cli_refuses_a_mismatch_in_one_line(tmp_path, capsys):
    from coreselect.io import from_arrays, write

    X, Y = _data()
    data = tmp_path / "d.arff"
    write(from_arrays(X, Y, name="d"), data)
    path = tmp_path / "run.ckpt"
    base = ["select", str(data), "--json", "--calibration", "information", "--checkpoint", str(path)]
    with pytest.raises(SystemExit) as exc:
        main([*base, "-k", "3"])
    assert exc.value.code == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([*base, "-k", "4"])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "k 3 there, 4 here" in err
    for clash in (["--out", str(path)], ["--checkpoint", str(data)]):
        with pytest.raises(SystemExit) as exc:
            main([*base, "-k", "3", *clash])
        out, err = capsys.readouterr()
        assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err


# -- a real process killed, then run again ------------------------------------------------------
def _as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _csv(folder: Path) -> Path:
    X, Y = _data(4, n=120, d=20)
    path = folder / "d.csv"
    header = ",".join([f"f{i}" for i in range(X.shape[1])] + ["y0", "y1", "y2"])
    np.savetxt(path, np.hstack([X, Y]), delimiter=",", fmt="%d", header=header, comments="")
    return path


KILLS = [  # (mode args, record after which the run is killed)
    (["--mode", "centralized"], 1), (["--mode", "centralized"], 4),
    (["--mode", "distributed", "--partitions", "3"], 2),  # a part still to do
    (["--mode", "distributed", "--partitions", "3", "--workers", "2"], 5),  # in the union
    (["--mode", "streaming", "--partitions", "3"], 3),  # parts done, no union step
    (["--mode", "rows", "--row-shards", "2"], 3),
]


@pytest.mark.parametrize("mode,after", KILLS, ids=[f"{' '.join(m[1:])}-{a}" for m, a in KILLS])
def test_killed_run_resumes_with_the_same_result(tmp_path, capsys, monkeypatch, mode, after):
    _csv(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CORESELECT_TEST_HOLD", raising=False)
    arguments = ["select", "d.csv", "--labels", "3", "-k", "5", "--json", "--quiet",
                 "--min-bin-count", "1", "--calibration", "information", *mode]
    command = [sys.executable, "-m", "coreselect", *arguments]
    env = {**os.environ, "PYTHONPATH": str(SRC)}

    def finish(*extra):  # in this process: the killed run is the one that needs its own
        with pytest.raises(SystemExit) as exc:
            main([*arguments, *extra])
        out, err = capsys.readouterr()
        assert exc.value.code == 0, err
        return json.loads(out)

    reference = finish()
    marker = tmp_path / "held"
    (tmp_path / "scratch").mkdir()
    proc = subprocess.Popen([*command, "--checkpoint", "run.ckpt"], cwd=tmp_path,
                            # TMPDIR: the scratch a killed run leaves goes with tmp_path
                            env={**env, "CORESELECT_TEST_HOLD": f"checkpointed-{after}",
                                 "CORESELECT_TEST_HOLD_FILE": str(marker),
                                 "TMPDIR": str(tmp_path / "scratch")},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"record {after} never written"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and any pool workers
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    header, _ = decode((tmp_path / "run.ckpt").read_bytes(), "x")
    assert not header["complete"]
    resumed = finish("--checkpoint", "run.ckpt")
    for key in ("selected", "objective", "relevance", "diversity", "feature_relevance",
                "mean_distance"):
        assert resumed[key] == reference[key], key
    info = resumed["engine_info"]
    assert info["checkpoint"] == "run.ckpt"
    assert info["resumed_from_step"] == (header["step"] or 0)
    if "--partitions" in mode:
        assert info["resumed_parts"] == len(header["parts"])
    leftovers = [p.name for p in tmp_path.rglob(".*") if p.name != ".coreselect-owned"]
    assert leftovers == [], leftovers


# -- URLs ------------------------------------------------------------------------------------------
def test_memory_url_checkpoint():
    import fsspec

    X, Y = _data()
    url = f"memory://ckpt-{os.getpid()}/run.ckpt"
    fs = fsspec.filesystem("memory")
    try:
        first = select(X, Y, k=4, mode="rows", checkpoint=url)
        assert fs.cat_file(url[len("memory://"):]).startswith(b"coreselect-checkpoint\n")
        again = select(X, Y, k=4, mode="rows", checkpoint=url)
        _same(again, first)
        assert again.engine_info["resumed_from_step"] == 4
        with pytest.raises(CheckpointError, match="another run"):
            select(X, Y, k=3, mode="rows", checkpoint=url)
        fs.pipe_file(url[len("memory://"):], b"coreselect-checkpoint\n{")
        with pytest.raises(CheckpointError, match="damaged"):
            select(X, Y, k=4, mode="rows", checkpoint=url)
    finally:
        fs.rm(f"ckpt-{os.getpid()}", recursive=True)


def test_s3_checkpoint(monkeypatch):
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    from _remote import KEY, SECRET, Server

    server = Server()
    try:
        server.fs().mkdir("ckpt")
        for name, value in (("AWS_ACCESS_KEY_ID", KEY), ("AWS_SECRET_ACCESS_KEY", SECRET),
                            ("AWS_DEFAULT_REGION", "us-east-1"),
                            ("AWS_ENDPOINT_URL", server.url)):
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("CORESELECT_STORAGE_OPTIONS", raising=False)
        X, Y = _data()
        kwargs = {"mode": "distributed", "random_state": 0, "partitions": 3}
        reference = select(X, Y, k=4, **kwargs)
        recorder = Snapshots()
        select(X, Y, k=4, checkpoint=recorder, **kwargs)
        # the relevances, 3 parts and 1 step
        server.fs().pipe_file("ckpt/run.ckpt", recorder.records[4])
        for name, data in recorder.part_files.items():
            server.fs().pipe_file(f"ckpt/run.ckpt.parts/{name}", data)
        resumed = select(X, Y, k=4, checkpoint="s3://ckpt/run.ckpt", **kwargs)
        _same(resumed, reference)
        assert resumed.engine_info["resumed_parts"] == 3
        assert resumed.engine_info["resumed_from_step"] == 1
        header, _ = decode(server.fs().cat_file("ckpt/run.ckpt"), "x")
        assert header["complete"]
    finally:
        server.stop()


# -- the core: greedy from a recorded state -------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), n_select=st.integers(1, 7), alternate=st.booleans(),
       calibration=st.sampled_from(["paper", "spread", "range", "balanced", "ratio",
                                    "information"]),
       backend=st.sampled_from(["numpy", "auto"]))
def test_greedy_goes_on_from_any_state_bit_for_bit(seed, n_select, alternate, calibration,
                                                   backend):
    """The pure core: ``greedy(start=state)`` from the state after any step ends as the
    uninterrupted run (selection, h, g, D, pair distances), Greedy and AltGreedy alike."""
    import copy

    from coreselect.core.problem import Problem

    X, Y = _data(seed, n=40, d=9)
    problem = Problem.build(X, Y, k=n_select, calibration=calibration, min_bin_count=1,
                            keep_constant=True)
    states = []
    whole = problem.run(alternate=alternate, backend=backend,
                        on_step=lambda s: states.append(copy.deepcopy(s)))
    assert [s.step for s in states] == list(range(1, n_select + 1))
    for state in states:
        again = problem.run(alternate=alternate, backend=backend, start=state)
        assert again.selected.tolist() == whole.selected.tolist()
        assert (again.objective, again.relevance, again.diversity) == (
            whole.objective, whole.relevance, whole.diversity)
        assert np.array_equal(again.pair_distances, whole.pair_distances)
        assert again.extra["resumed_from_step"] == state.step


def test_greedy_refuses_a_state_of_another_run():
    import copy
    from dataclasses import replace

    from coreselect.core.problem import Problem
    from coreselect.errors import InputError

    X, Y = _data(0, n=40, d=9)
    problem = Problem.build(X, Y, k=3, min_bin_count=1, keep_constant=True)
    states = []
    problem.run(alternate=True, on_step=lambda s: states.append(copy.deepcopy(s)))
    bad = [replace(states[1], selected=np.array([0, 99])),
           replace(states[1], diversity_to_s=np.zeros(3)),
           replace(states[1], step=5)]
    for state in bad:
        with pytest.raises(InputError, match="does not fit"):
            problem.run(alternate=True, start=state)
    # an "information" run needs the shared-information sums a state of another calibration
    # lacks (the distance sums alone would resume it with a redundancy of zero)
    informed = replace(problem, params=replace(problem.params, calibration="information"))
    with pytest.raises(InputError, match="does not fit"):
        informed.run(alternate=True, start=states[1])
