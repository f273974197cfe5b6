"""All or nothing (issue 17): when one output of a command cannot be written, none is replaced.

The property: an output set whose output at position ``i`` (of ``n``) is a special file of
each kind (folder, FIFO with or without a reader, socket, ``/dev/full``, ``/dev/null``, a
symbolic link into a missing folder or an existing one, a read-only file) either writes every
output (the kinds that can be written) or raises OutputError with every regular output as it
was before (old content, or absent), no temporary left, and never hangs. Then the same for
``evaluate``'s report (results.csv, summary.md, the PNGs) and its refusal before the run.
"""

from __future__ import annotations

import os
import socket
import stat
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coreselect.errors import OutputError
from coreselect.io.files import check_writable, output_set

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX special files")

# kind -> whether an output of that kind can be written
KINDS = {
    "folder": False,
    "fifo-no-reader": False,
    "fifo-reader": True,
    "socket": False,
    "dev-full": False,
    "dev-null": True,
    "link-into-missing-folder": False,
    "link-into-folder": True,
    "read-only": False,
}


class _Reader:
    """A FIFO's reader that is there before the writer (no race): the read end is opened at
    once, and a second write end keeps it from seeing end-of-file before the test is done."""

    def __init__(self, path: Path):
        self.rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.wfd = os.open(path, os.O_WRONLY)

    def close(self) -> bytes:
        os.close(self.wfd)
        try:
            return os.read(self.rfd, 1 << 16)
        except BlockingIOError:
            return b""
        finally:
            os.close(self.rfd)


def _make_special(folder: Path, kind: str, name: str) -> tuple[Path, object]:
    """The path of an output of ``kind`` in ``folder``, and what must be cleaned up."""
    p = folder / name
    if kind == "folder":
        p.mkdir()
    elif kind.startswith("fifo"):
        os.mkfifo(p)
        if kind == "fifo-reader":
            return p, _Reader(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        return p, s
    elif kind == "dev-full":
        return Path("/dev/full"), None
    elif kind == "dev-null":
        return Path("/dev/null"), None
    elif kind == "link-into-missing-folder":
        p.symlink_to(folder / "missing" / "x.out")
    elif kind == "link-into-folder":
        (folder / "elsewhere").mkdir()
        p.symlink_to(folder / "elsewhere" / "x.out")
    elif kind == "read-only":
        p.write_text("protected")
        p.chmod(0o444)
    return p, None


@pytest.fixture(autouse=True, scope="module")
def _no_long_wait_for_fifo_readers():
    import coreselect.io.files as files

    before, files.FIFO_READER_WAIT = files.FIFO_READER_WAIT, 0.05
    yield
    files.FIFO_READER_WAIT = before


def _hidden(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob(".*")]


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(KINDS)), n=st.integers(1, 4), data=st.data())
def test_output_set_with_a_special_file_at_any_position(kind, n, data):
    position = data.draw(st.integers(0, n - 1), label="position")
    existing = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="existing")
    folder = Path(tempfile.mkdtemp())
    try:
        paths: list[Path] = []
        cleanup = None
        for i in range(n):
            if i == position:
                p, cleanup = _make_special(folder, kind, f"o{i}.png")
            else:
                p = folder / f"o{i}.csv"
                if existing[i]:
                    p.write_text(f"old {i}")
            paths.append(p)
        regular = [p for i, p in enumerate(paths) if i != position]
        before = {p: (p.read_text() if p.exists() else None) for p in regular}
        try:
            with output_set(paths) as tmps:
                for i, t in enumerate(tmps):
                    t.write_text(f"new {i}")
        except OutputError as exc:
            assert not KINDS[kind], (kind, exc)
            assert str(paths[position]) in str(exc)
            assert {p: (p.read_text() if p.exists() else None) for p in regular} == before
        else:
            assert KINDS[kind], kind
            assert all(p.read_text() == f"new {paths.index(p)}" for p in regular)
            if isinstance(cleanup, _Reader):
                assert cleanup.close() == f"new {position}".encode()
                cleanup = None
            if kind == "link-into-folder":
                assert (folder / "elsewhere" / "x.out").read_text() == f"new {position}"
        assert _hidden(folder) == []
        assert not (folder / "missing").exists()  # nothing created through a dangling link
    finally:
        if isinstance(cleanup, socket.socket):
            cleanup.close()
        elif isinstance(cleanup, _Reader):
            cleanup.close()
        for p in folder.rglob("*"):
            if not p.is_symlink() and p.exists() and not stat.S_ISDIR(p.stat().st_mode):
                p.chmod(0o644)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


# --- evaluate's report -------------------------------------------------------------------

def _results() -> pd.DataFrame:
    from coreselect.evaluation.measures import MEASURES

    rows = []
    for method in ("gds", "br-ig"):
        for k in (2, 3):
            for fold in (0, 1):
                for m in MEASURES:
                    rows.append(dict(method=method, k=k, fold=fold, measure=m,
                                     value=float(np.random.default_rng(k + fold).random()),
                                     select_seconds=0.01))
    return pd.DataFrame(rows)


REPORT_KINDS = ["folder", "fifo-no-reader", "socket", "link-into-missing-folder", "read-only"]


@pytest.mark.parametrize("kind", REPORT_KINDS)
@pytest.mark.parametrize("position", [0, 1, 4, 6])
def test_report_is_all_or_nothing(tmp_path, kind, position):
    from coreselect.evaluation.report import report_paths, write_report

    df = _results()
    names = [p.name for p in report_paths(tmp_path, sweep=False)]
    for name in names:  # an earlier report: it must survive whole
        (tmp_path / name).write_bytes(b"old " + name.encode())
    victim = tmp_path / names[position]
    victim.unlink()
    _, cleanup = _make_special(tmp_path, kind, names[position])
    before = {n: (tmp_path / n).read_bytes() for n in names if n != names[position]}
    try:
        with pytest.raises(OutputError, match=names[position]):
            write_report(df, tmp_path, dataset="toy")
        if kind != "fifo-no-reader":  # (its reader may start later) the CLI refuses before the run
            with pytest.raises(OutputError, match=names[position]):
                check_writable(report_paths(tmp_path, sweep=False))
    finally:
        if isinstance(cleanup, socket.socket):
            cleanup.close()
        if kind == "read-only":
            victim.chmod(0o644)
    assert {n: (tmp_path / n).read_bytes() for n in names if n != names[position]} == before
    assert _hidden(tmp_path) == []


def test_report_written_whole(tmp_path):
    from coreselect.evaluation.report import report_paths, write_report

    paths = write_report(_results(), tmp_path / "ev", dataset="toy")
    assert paths == report_paths(tmp_path / "ev", sweep=False)
    assert all(p.stat().st_size > 0 for p in paths)
    assert pd.read_csv(paths[0]).shape[0] == len(_results())
    assert _hidden(tmp_path) == []


def test_evaluate_refuses_an_unwritable_output_before_the_run(tmp_path, monkeypatch, capsys):
    from coreselect.cli import main
    from coreselect.io import from_arrays, write

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (30, 5)).astype(float)
    write(from_arrays(X, (X[:, :2] > 0).astype(int)), tmp_path / "d.csv")
    (tmp_path / "ev" / "macro_f1.png").mkdir(parents=True)
    (tmp_path / "ev" / "results.csv").write_text("old")
    import coreselect.evaluation.protocol as protocol

    def never(*a, **k):
        raise AssertionError("the run started")

    monkeypatch.setattr(protocol, "run_protocol", never)
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(tmp_path / "d.csv"), "--labels", "2", "--methods", "gds", "--k", "2",
              "--folds", "2", "--out", str(tmp_path / "ev"), "--quiet"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "macro_f1.png" in err and "folder" in err, err
    assert (tmp_path / "ev" / "results.csv").read_text() == "old"
