"""Output sets are all or nothing, over the position and the kind of the output that fails.

``files.output_set`` writes 2, 3 or 4 outputs: some replace existing files, some are new,
some are special (standard output, a FIFO with a reader). When one of them fails -- at any
position, of any kind (``/dev/full``, a folder, a path that becomes a folder while the set is
written, a dangling symbolic link) -- every existing output keeps its previous content byte
for byte, new ones are removed, no temporary is left, and no special output received
anything unless it was committed before a failing *special* one (special files cannot be
rolled back, so they are written only after every regular output). These tests look only at
what a user sees (the files and the streams), not at how the module does it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from coreselect.io.files import output_set

#: kinds of an output that works
GOOD = ("existing", "new", "stdout", "fifo")
#: kinds of an output that fails; the second item: fails only once the outputs are committed
#: (as opposed to being refused when the set is entered), and whether it is a special file.
BAD = {
    "dev-full": "special",        # /dev/full: ENOSPC when written
    "becomes-folder": "regular",  # a new path that a folder takes while the set is written
    "folder": "regular",          # an existing folder
    "dangling-dev": "special",    # a link to a missing folder under /dev
    "dangling-file": "regular",   # a link to a path under a regular file
}


class Case:
    """A folder with the outputs of one set, and what each one was before."""

    def __init__(self, kinds: list[str]):
        self.root = Path(tempfile.mkdtemp(prefix="props-outputs-"))
        self.kinds = kinds
        self.paths: list[str] = []
        self.old: dict[int, bytes] = {}
        self.reader: dict[int, int] = {}
        for i, kind in enumerate(kinds):
            p = self.root / f"out{i}.txt"
            if kind == "existing":
                self.old[i] = f"old content of output {i}\n".encode() * (i + 1)
                p.write_bytes(self.old[i])
            elif kind == "stdout":
                p = Path("-")
            elif kind == "fifo":
                os.mkfifo(p)
                # A reader that never blocks: the set may open the FIFO, and what it wrote
                # can be read back afterwards.
                self.reader[i] = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
            elif kind == "dev-full":
                p = Path("/dev/full")
            elif kind == "folder":
                p.mkdir()
                (p / "keep").write_text("inside")
            elif kind == "dangling-dev":
                p.symlink_to(f"/dev/coreselect-missing-{os.getpid()}/x")
            elif kind == "dangling-file":
                (self.root / "plain").write_text("a file, not a folder")
                p.symlink_to(self.root / "plain" / "x")
            self.paths.append(str(p))
        self.before = self._listing()

    def _listing(self) -> dict[str, bytes | None]:
        out = {}
        for p in sorted(self.root.rglob("*")):
            if p.is_symlink() or not p.is_file():
                out[str(p.relative_to(self.root))] = None
            elif not p.name.startswith("out") or self.kinds[int(p.stem[3:])] != "fifo":
                out[str(p.relative_to(self.root))] = p.read_bytes()
        return out

    def new_content(self, i: int) -> bytes:
        return f"NEW {i} " .encode() * 50 + b"\n"

    def received(self, i: int) -> bytes:
        try:
            return os.read(self.reader[i], 1 << 20)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        for fd in self.reader.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.root, ignore_errors=True)


def _run(kinds: list[str], capfd) -> tuple[Case, BaseException | None, bytes]:
    case = Case(kinds)
    capfd.readouterr()
    error = None
    try:
        with output_set(case.paths) as tmps:
            for i, t in enumerate(tmps):
                Path(t).write_bytes(case.new_content(i))
            for i, kind in enumerate(kinds):
                if kind == "becomes-folder":
                    os.mkdir(case.paths[i])
                    Path(case.paths[i], "keep").write_text("inside")
    except (OSError, Exception) as exc:  # noqa: BLE001 - OutputError, or a raw OSError
        error = exc
    out = capfd.readouterr().out.encode()
    return case, error, out


def _check(kinds: list[str], capfd) -> None:
    case, error, out = _run(kinds, capfd)
    try:
        bad = [i for i, k in enumerate(kinds) if k in BAD]
        if not bad:
            assert error is None, error
            for i, kind in enumerate(kinds):
                if kind in ("existing", "new"):
                    assert Path(case.paths[i]).read_bytes() == case.new_content(i)
                elif kind == "fifo":
                    assert case.received(i) == case.new_content(i)
            if "stdout" in kinds:
                assert out == case.new_content(kinds.index("stdout"))
            assert not [p for p in os.listdir(case.root) if p.startswith(".")]  # no temporary
            return
        assert error is not None, f"{kinds}: the set succeeded"
        # Every regular output as it was: old content byte for byte, new ones absent; the
        # folders and links untouched; nothing else (no temporary, no backup) in the folder.
        after = case._listing()
        if "becomes-folder" in kinds:  # what the test itself put there
            for i, kind in enumerate(kinds):
                if kind == "becomes-folder":
                    after.pop(f"out{i}.txt", None)
                    after.pop(f"out{i}.txt/keep", None)
        assert after == case.before, kinds
        for i in case.old:
            assert Path(case.paths[i]).read_bytes() == case.old[i]
        # Special outputs received nothing, but those committed before a failing special one.
        first_bad_special = min((i for i in bad if BAD[kinds[i]] == "special"), default=None)
        regular_fails = any(BAD[kinds[i]] == "regular" for i in bad)
        for i, kind in enumerate(kinds):
            if kind not in ("stdout", "fifo"):
                continue
            may_have = (not regular_fails and first_bad_special is not None
                        and i < first_bad_special)
            got = out if kind == "stdout" else case.received(i)
            if not may_have:
                assert got == b"", f"{kinds}: output {i} ({kind}) received {got[:20]!r}"
    finally:
        case.close()


def _layouts():
    """Every position of every failing kind among 2, 3 and 4 outputs; the others cycle
    through existing files, new files and special outputs (at most one stdout)."""
    for n in (2, 3, 4):
        for pos in range(n):
            for bad in BAD:
                for shift in range(len(GOOD)):
                    kinds = []
                    for i in range(n):
                        if i == pos:
                            kinds.append(bad)
                        else:
                            kinds.append(GOOD[(i + shift) % len(GOOD)])
                    if kinds.count("stdout") <= 1:
                        yield kinds


@pytest.mark.parametrize("kinds", list(_layouts()), ids="-".join)
def test_a_failing_output_at_any_position_leaves_every_output_as_it_was(kinds, capfd):
    _check(kinds, capfd)


@pytest.mark.parametrize("kinds", [["existing", "existing"], ["new", "existing", "fifo"],
                                   ["stdout", "existing", "new", "fifo"], ["fifo", "new"]],
                         ids="-".join)
def test_a_set_that_works_writes_every_output(kinds, capfd):
    _check(kinds, capfd)


@settings(max_examples=60, deadline=None, derandomize=True, phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(GOOD + tuple(BAD)), min_size=2, max_size=5)
       .filter(lambda ks: ks.count("stdout") <= 1 and ks.count("dev-full") <= 1))
def test_output_sets_are_all_or_nothing(kinds, capfd):
    """Any mix, several failing outputs included."""
    _check(kinds, capfd)
