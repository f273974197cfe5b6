"""The CLI's error mapping: every expected failure is one line and exit 2, Ctrl-C 130, SIGTERM
143, a bug one line with "please report" and exit 1 (the traceback only with -v or
CORESELECT_DEBUG=1); progress bars only on a terminal."""

from __future__ import annotations

import errno
import io
import os

import click
import pytest
from click.testing import CliRunner

from coreselect.cli import _common, cli
from coreselect.cli._common import handle_errors, progress_bar
from coreselect.errors import (
    DatasetError,
    EngineError,
    FetchError,
    InputError,
    InputTypeError,
    LimitError,
    OutputError,
    ParameterError,
    StoreError,
)


def _invalid_parameter():
    validation = pytest.importorskip("sklearn.utils._param_validation")
    return validation.InvalidParameterError("The 'k' parameter of GDSSelector must be an int. Got 'x'.")


EXPECTED = {  # name: (exception factory, exit code, text in the line)
    "input": (lambda: InputError("k=5 is larger than 4"), 2, "k=5 is larger than 4"),
    "parameter": (lambda: ParameterError("lam must lie in [0, 1]"), 2, "lam must lie"),
    "type": (lambda: InputTypeError("X must be an array"), 2, "X must be an array"),
    "limit": (lambda: LimitError("declares 10^8 features; refusing"), 2, "refusing"),
    "dataset": (lambda: DatasetError("bad cell", path="x.arff", line=3), 2, "x.arff:3: bad cell"),
    "fetch": (lambda: FetchError("HTTP 404"), 2, "HTTP 404"),
    "output": (lambda: OutputError("/dev/full", "No space left on device", errno.ENOSPC), 2,
               "cannot write /dev/full"),
    "engine": (lambda: EngineError("no workers left"), 2, "no workers left"),
    "store": (lambda: StoreError("bad checksum", path="st", block=2), 2, "st (block 2): bad checksum"),
    "sklearn": (_invalid_parameter, 2, "must be an int"),
    "missing": (lambda: FileNotFoundError(errno.ENOENT, "No such file or directory", "in.arff"), 2,
                "no such file: in.arff"),
    "isdir": (lambda: IsADirectoryError(errno.EISDIR, "Is a directory", "folder"), 2, "folder: Is a directory"),
    "notdir": (lambda: NotADirectoryError(errno.ENOTDIR, "Not a directory", "a/b"), 2, "a/b: Not a directory"),
    "permission": (lambda: PermissionError(errno.EACCES, "Permission denied", "secret"), 2,
                   "secret: Permission denied"),
    "full": (lambda: OSError(errno.ENOSPC, "No space left on device"), 2, "No space left on device"),
    "readonly": (lambda: OSError(errno.EROFS, "Read-only file system", "/ro/x"), 2, "/ro/x: Read-only"),
    "quota": (lambda: OSError(errno.EDQUOT, "Disk quota exceeded"), 2, "Disk quota exceeded"),
    "memory": (lambda: MemoryError(), 2, "out of memory"),
    "decode": (lambda: b"ab\xffcd".decode("utf-8"), 2, "cannot decode the input as utf-8 (byte 2"),
    "network": (lambda: ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), 2, "Connection refused"),
    "timeout": (lambda: TimeoutError("timed out"), 2, "timed out"),
    "ctrl-c": (lambda: KeyboardInterrupt(), 130, "coreselect: interrupted"),
    "sigterm": (lambda: _common.Terminated(), 143, "coreselect: terminated"),
    "bug-value": (lambda: ValueError("operands could not be broadcast"), 1, "please report"),
    "bug-key": (lambda: KeyError("n_codes"), 1, "please report"),
    "bug-zero": (lambda: 1 / 0, 1, "please report"),
    "bug-os": (lambda: OSError(errno.EBADMSG, "Bad message"), 1, "please report"),
}


@click.command()
@click.argument("kind")
@click.option("--verbose", "-v", is_flag=True)
@handle_errors
def boom(kind: str, verbose: bool) -> None:
    factory = EXPECTED[kind][0]
    exc = factory()  # some factories raise by themselves (1 / 0, bytes.decode)
    raise exc


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch):
    monkeypatch.delenv("CORESELECT_DEBUG", raising=False)


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_every_failure_is_one_line_with_its_exit_code(kind):
    _, code, text = EXPECTED[kind]
    r = CliRunner().invoke(boom, [kind])
    assert r.exit_code == code, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], r.stderr
    assert lines[0].startswith("coreselect: ") and "Traceback" not in r.output and r.stdout == ""
    if code == 1:
        assert "-v" in lines[0] and "CORESELECT_DEBUG" in lines[0]


def test_traceback_only_when_asked(monkeypatch):
    r = CliRunner().invoke(boom, ["bug-key"])
    assert "Traceback" not in r.stderr
    r = CliRunner().invoke(boom, ["bug-key", "-v"])
    assert r.exit_code == 1 and "Traceback" in r.stderr and "KeyError" in r.stderr and "please report" in r.stderr
    assert not _common.VERBOSE  # restored after the command
    monkeypatch.setenv("CORESELECT_DEBUG", "1")
    r = CliRunner().invoke(boom, ["bug-zero"])
    assert r.exit_code == 1 and "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr
    r = CliRunner().invoke(boom, ["input"])
    assert r.exit_code == 2 and "Traceback" in r.stderr  # debugging shows expected ones too


def test_real_commands_map_their_failures(tmp_path, monkeypatch):
    runner = CliRunner()
    folder = tmp_path / "folder"
    folder.mkdir()
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"a,b,label\n1,2,0\n\xff\xfe,3,1\n")
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("COREDATA_HOME", str(afile))
    monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
    for args in (["datasets", "info", str(folder)],
                 ["datasets", "info", str(bad), "--labels", "label"],
                 ["datasets", "info", str(tmp_path / "none.arff")],
                 ["datasets", "fetch", "emotions"],
                 ["datasets", "info", "emotions"]):
        r = runner.invoke(cli, args)
        assert r.exit_code == 2, (args, r.output)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output, (args, r.stderr)


def test_progress_bars_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    bar = progress_bar(10, "work")
    assert bar.disable
    bar.update(3)
    bar.close()

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    bar = progress_bar(10, "work")
    assert not bar.disable
    bar.update(3)
    bar.close()
    assert "work" in tty.getvalue()
    assert progress_bar(10, "work", enabled=False).disable
