"""``--temp-dir`` / ``temp_dir=``: the row copies of ``--mode rows`` on a column store go
there, and are removed when the run ends: on success, on failure and on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from coreselect import select
from coreselect.cli import main
from coreselect.errors import InputError
from coreselect.store import build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    Y = (rng.random((240, 3)) < 0.4).astype(int)
    X = rng.normal(size=(240, 25)) + Y @ rng.normal(size=(3, 25))
    path = tmp_path_factory.mktemp("tempdir") / "store"
    build_store(X, Y, path, block_size=9, row_block_size=80)
    return path


def test_copies_go_to_temp_dir_and_are_removed(store, tmp_path):
    seen = []

    def progress(stage, done, total):
        seen.append(sorted(p.name for p in tmp_path.iterdir()))

    a = select(store, k=5, mode="rows")
    b = select(store, k=5, mode="rows", temp_dir=tmp_path, progress=progress)
    assert list(a.selected) == list(b.selected) and a.objective == b.objective
    assert any(names and names[0].startswith("coreselect-rows-") for names in seen)
    assert list(tmp_path.iterdir()) == []
    assert b.engine_info["temp_dir"] == str(tmp_path)


def test_copies_are_removed_when_the_run_fails(store, tmp_path):
    def progress(stage, done, total):
        if done == 2:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError):
        select(store, k=5, mode="rows", temp_dir=tmp_path, progress=progress)
    assert list(tmp_path.iterdir()) == []


def test_copies_are_removed_on_sigterm(store, tmp_path):
    """The command is terminated while a greedy step reads the copies."""
    script = textwrap.dedent(f"""
        import sys, time
        import coreselect.sources as sources
        from coreselect.cli import main

        real = sources.StoreRowShards.step_counts

        def slow(self, *args, **kwargs):
            out = real(self, *args, **kwargs)
            print("READY", flush=True)
            time.sleep(120)
            return out

        sources.StoreRowShards.step_counts = slow
        main(["select", {str(store)!r}, "-k", "4", "--mode", "rows", "--temp-dir",
              {str(tmp_path)!r}, "-q"])
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        assert any(tmp_path.iterdir())
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode not in (0, None) and "terminated" in err, err
    assert list(tmp_path.iterdir()) == []


def test_temp_dir_must_be_a_folder(store, tmp_path, capsys):
    with pytest.raises(InputError, match="temp_dir"):
        select(store, k=3, mode="rows", temp_dir=tmp_path / "absent")
    with pytest.raises(SystemExit) as exc:
        main(["select", str(store), "-k", "3", "--mode", "rows", "--temp-dir",
              str(tmp_path / "absent")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "temp_dir" in err
