"""A checkpointed store build resumes (store/_resume.py, ``store build --checkpoint``).

* killed (SIGKILL, the driver and its pool workers) during each pass and just before the
  commit, the same command again takes the finished tasks (it says how many) and ends with a
  store whose every file has the bytes of an uninterrupted build's; the checkpoint is then
  removed, and nothing but the checkpoint was left beside the target after the kill;
* a resumed build with another --workers runs the recorded tasks: the same store;
* a changed, vanished or added file, or other options: refused in one line naming what
  differs (exit 2, CheckpointError from the library), the checkpoint kept;
* a kept piece or tile that fails its checksum, or a damaged manifest: that task is done
  again (said so), the store the same;
* the results' codec (JSON and arrays, never a pickle) gives back what it was given.
"""

from __future__ import annotations

import hashlib
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

from coreselect.cli import main
from coreselect.errors import CheckpointError

SRC = Path(__file__).resolve().parents[1] / "src"
BUILD = ["--row-block-size", "100", "--workers", "2", "--bins", "3"]


def _shards(folder: Path, n_files: int = 3, rows: int = 300, seed: int = 0,
            n_features: int = 30, per_row: int = 6) -> None:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = []
        for _ in range(rows):
            labels = ",".join(map(str, sorted(set(rng.integers(0, 4, 2).tolist()))))
            cols = sorted(set(rng.integers(0, n_features, per_row).tolist()))
            lines.append(labels + " " + " ".join(f"{j}:{rng.integers(1, 6)}" for j in cols))
        (folder / f"part-{f:02d}.svm").write_text("\n".join(lines) + "\n")


def _digests(store: Path) -> dict[str, str]:
    return {p.relative_to(store).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(store.rglob("*")) if p.is_file()}


def _cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted build's files and checksums (built once: the shards are the same
    bytes in every test)."""
    from click.testing import CliRunner

    from coreselect.cli import cli

    folder = tmp_path_factory.mktemp("reference")
    _shards(folder / "d")
    result = CliRunner().invoke(cli, ["store", "build", str(folder / "d"), str(folder / "ref"),
                                      *BUILD, "-q"])
    assert result.exit_code == 0, result.output
    return _digests(folder / "ref")


@pytest.fixture
def shards(tmp_path, monkeypatch, reference):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CORESELECT_TEST_HOLD", raising=False)
    _shards(tmp_path / "d")
    return reference


def _killed(tmp_path: Path, hold: str, *extra: str) -> None:
    """``store build d s --checkpoint ck`` in a subprocess, SIGKILLed (with its pool workers)
    when it reaches the hold point ``hold``."""
    marker = tmp_path / "held"
    marker.unlink(missing_ok=True)
    Path(str(marker) + ".claim").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(SRC), "CORESELECT_TEST_HOLD": hold,
           "CORESELECT_TEST_HOLD_FILE": str(marker)}
    proc = subprocess.Popen([sys.executable, "-m", "coreselect", "store", "build", "d", "s",
                             *BUILD, "--checkpoint", "ck", "-q", *extra], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"{hold} never reached"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    marker.unlink(missing_ok=True)
    Path(str(marker) + ".claim").unlink(missing_ok=True)


def _beside(tmp_path: Path) -> set[str]:
    return {p.name for p in tmp_path.iterdir()} - {"d", "ref"}


@pytest.mark.parametrize("hold,stage", [("build-kept-count", "read 1/2"),
                                        ("build-kept-encode", "read 2/2"),
                                        ("build-kept-tiles", "tiles"),
                                        ("build-commit", "tiles")])
def test_killed_build_resumes_to_the_same_store(tmp_path, capsys, shards, hold, stage):
    _killed(tmp_path, hold)
    assert _beside(tmp_path) == {"ck", "ck.parts"}  # no store, nothing under the target
    code, out, err = _cli(capsys, "store", "build", "d", "s", *BUILD, "--checkpoint", "ck")
    assert code == 0, err
    taken = [line for line in err.splitlines() if "taken from the checkpoint" in line]
    assert len(taken) == 3, err
    line = next(x for x in taken if x.startswith(stage))
    assert not line.split(": ")[1].startswith("0 of"), err  # the held task at least
    if hold == "build-commit":
        assert all(x.split(": ")[1].split()[0] == x.split(" of ")[1].split()[0]
                   for x in taken), err  # everything taken
    assert _digests(tmp_path / "s") == shards
    assert _beside(tmp_path) == {"s"}  # the checkpoint removed on success


def test_resume_with_other_workers_runs_the_recorded_tasks(tmp_path, capsys, shards):
    _killed(tmp_path, "build-kept-encode")
    other = [a for a in BUILD if a not in ("--workers", "2")]
    code, _, err = _cli(capsys, "store", "build", "d", "s", *other, "--checkpoint", "ck")
    assert code == 0, err
    assert "read 1/2 (counts): 3 of 3 tasks taken" in err, err
    assert _digests(tmp_path / "s") == shards


def _refused(capsys, *extra, data="d") -> str:
    code, _, err = _cli(capsys, "store", "build", data, "s", *BUILD, "--checkpoint", "ck",
                        *extra)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    return err


def test_changed_vanished_or_other_options_are_refused(tmp_path, capsys, shards):
    _killed(tmp_path, "build-kept-encode")
    culprit = tmp_path / "d" / "part-01.svm"
    text = culprit.read_bytes()
    culprit.write_bytes(text + b"1 3:1\n")
    assert "part-01.svm was" in _refused(capsys) and "bytes, now" in _refused(capsys)
    culprit.write_bytes(text.replace(b"1", b"2", 1))  # same size, other bytes (a new mtime)
    os.utime(culprit, ns=(1, 1))
    assert "part-01.svm was modified since" in _refused(capsys)
    culprit.unlink()
    assert "part-01.svm was read, now it is not among the data" in _refused(capsys)
    culprit.write_bytes(text)
    os.utime(culprit, ns=(1, 1))
    assert "part-01.svm" in _refused(capsys)  # restored, but not the same file (its time)
    assert not (tmp_path / "s").exists() and (tmp_path / "ck").is_file()


def test_other_options_are_refused(tmp_path, capsys, shards):
    _killed(tmp_path, "build-kept-count")
    err = _refused(capsys, "--seed", "4")
    assert "option seed 0 there, 4 here" in err, err
    err = _refused(capsys, "--exact-values", "3")
    assert "option cap" in err, err
    assert not (tmp_path / "s").exists()


def test_library_raises_checkpoint_error(tmp_path, shards):
    from coreselect.cli.store import open_source
    from coreselect.store.ingest import BuildOptions, build_store_from_source

    _killed(tmp_path, "build-kept-count")
    source = open_source("d", None, False)
    with pytest.raises(CheckpointError, match="option n_bins 3 there, 4 here"):
        build_store_from_source(source, tmp_path / "s", checkpoint=tmp_path / "ck",
                                options=BuildOptions(n_bins=4, row_block_size=100,
                                                     name=source.name))
    with pytest.raises(CheckpointError, match="local path"):
        build_store_from_source(source, tmp_path / "s", checkpoint="s3://b/ck")
    assert not (tmp_path / "s").exists()


def test_damaged_kept_files_are_done_again(tmp_path, capsys, shards):
    _killed(tmp_path, "build-commit")
    parts = tmp_path / "ck.parts"
    piece = next(p for p in sorted((parts / "encode").rglob("*.npz")))
    data = bytearray(piece.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte: its checksum
    piece.write_bytes(bytes(data))
    tile = next(p for p in sorted((parts / "tiles").rglob("*.npy")))
    tile.unlink()
    manifest = next(p for p in sorted((parts / "count").rglob("manifest")))
    manifest.write_bytes(b"junk")
    code, _, err = _cli(capsys, "store", "build", "d", "s", *BUILD, "--checkpoint", "ck")
    assert code == 0, err
    for stage, n in (("read 1/2 (counts)", 3), ("read 2/2 (codes)", 3), ("tiles", 9)):
        assert f"{stage}: {n - 1} of {n} tasks taken" in err, err
        assert f"{stage}: 1 of {n} tasks kept damaged in the checkpoint" in err, err
    assert _digests(tmp_path / "s") == shards


def test_checkpoint_refusals(tmp_path, capsys, shards):
    assert "local path" in _refused(capsys, "--checkpoint", "s3://bucket/ck")
    assert "overlap" in _refused(capsys, "--checkpoint", "s/ck")
    assert "--checkpoint" in _refused(capsys, "--checkpoint", "d/part-00.svm")
    (tmp_path / "mine.parts").mkdir()
    assert "did not make it" in _refused(capsys, "--checkpoint", "mine")
    (tmp_path / "junk").write_text("not a checkpoint")
    assert "not a coreselect checkpoint" in _refused(capsys, "--checkpoint", "junk")
    assert not (tmp_path / "s").exists()


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=5)
    | st.floats(allow_nan=False) | st.builds(np.arange, st.integers(0, 5)),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.integers(0, 9) | st.text(max_size=3), inner, max_size=3),
    max_leaves=12)


@settings(max_examples=25, deadline=None)
@given(VALUES)
def test_codec_round_trip(value):
    from coreselect.store._resume import from_tree, to_tree

    arrays: dict = {}
    back = from_tree(to_tree(value, arrays), arrays)

    def same(a, b):
        if isinstance(a, np.ndarray):
            return isinstance(b, np.ndarray) and np.array_equal(a, b) and a.dtype == b.dtype
        if isinstance(a, (list, tuple)):
            return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
        if isinstance(a, dict):
            return (isinstance(b, dict) and list(a) == list(b)
                    and all(same(a[k], b[k]) for k in a))
        return type(a) is type(b) and a == b

    assert same(value, back)


def test_codec_keeps_count_results_and_refuses_other_classes():
    from coreselect.store._binning import ColumnCounts
    from coreselect.store._resume import from_tree, to_tree
    from coreselect.store.ingest import Counted

    counts = ColumnCounts(cap=3)
    counts.add_chunk(np.array([[1.0, 0.0], [2.0, 5.0]]))
    c = Counted(counts, np.array([1, 2]), {0: 2, 4: 0}, 3, False, 2, 10)
    arrays: dict = {}
    back = from_tree(to_tree(c, arrays), arrays)
    assert back.rows == {0: 2, 4: 0} and back.counts.n_rows == 2
    np.testing.assert_array_equal(back.counts.counts, counts.counts)
    merged = ColumnCounts(cap=3).merge(back.counts)  # usable as the driver uses it
    assert merged.n_rows == 2
    with pytest.raises(ValueError):
        from_tree({"@c": "os:system", "f": {}}, {})
    with pytest.raises(TypeError):
        to_tree(object(), {})
