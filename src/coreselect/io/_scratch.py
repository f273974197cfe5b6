"""Leftovers of killed writers, and scratch folders coreselect owns.

Temporary names carry the writer's pid (``.NAME.p<pid>-XXXX.tmp``), so that a later run can
tell a dead writer's leftovers from a live writer's work in progress (:func:`clean_stale`);
a folder coreselect made holds a mark (:data:`OWNED_MARK`), and only such a folder is ever
removed or taken over as scratch (:func:`scratch_dir`). :mod:`coreselect.io.files` re-exports
every name.
"""

from __future__ import annotations

import glob
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Iterable, Union

PathLike = Union[str, os.PathLike]

_IMPORTED_AT = time.time()


# Temporary names carry the writer's pid, so a later run can tell a dead writer's leftovers
# from a live writer's work in progress.
_PID_MARK = re.compile(r"\.p(\d+)-[^/]*\.(?:tmp|part)(?:\.|$)")
STALE_PATTERNS: tuple[str, ...] = (".*.p*-*.tmp", ".*.p*-*.tmp.*", ".*.p*-*.part")


def process_start_time() -> float:
    """When this process started using coreselect (the import of this module, seconds since
    the epoch); temporaries last modified before it are candidates for cleaning.

    The import time, not the kernel's start time: that one is only known to about a second
    (``/proc/stat``'s boot time is whole seconds), and a writer pid check guards the rest.
    """
    return _IMPORTED_AT


def temp_name_prefix(name: str) -> str:
    """Prefix of this process's temporary files for a target called ``name``."""
    return f".{name}.p{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid() or os.name != "posix":
        return True  # (on Windows os.kill(pid, 0) would send Ctrl-C: never judge by pid there)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or unknowable: keep the file
    return not _exiting(pid)


#: ``PF_EXITING`` in the flags of ``/proc/PID/stat`` (Linux): the process is being torn down.
_PF_EXITING = 0x4


def _exiting(pid: int) -> bool:
    """Whether ``pid`` is past writing anything (Linux; elsewhere False): a zombie not reaped
    yet, or a process being torn down. A killed run with gigabytes mapped takes seconds to
    exit, and a run started again at once (a resume) took its scratch for a live writer's and
    wrote every row copy again."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return False
    # pid (comm) state ppid pgrp session tty_nr tpgid flags ...; comm may hold any character
    fields = stat[stat.rfind(")") + 2:].split()
    try:
        return fields[0] in ("Z", "X", "x") or bool(int(fields[6]) & _PF_EXITING)
    except (IndexError, ValueError):
        return False


def clean_stale(folder: PathLike, patterns: Iterable[str] = STALE_PATTERNS,
                owned_only: bool = False) -> list[Path]:
    """Remove leftovers of killed writers in ``folder``; return what was removed.

    A file or folder matching one of the glob ``patterns`` is stale when it was last
    modified before this process started and, if its name carries a writer pid
    (``.p<pid>-``), that process no longer exists. A live writer's temporary is never
    touched. ``owned_only``: only folders coreselect marked as its own (:func:`is_owned`),
    never a file. Errors (a file vanished, no permission) are ignored: cleaning is best effort.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    started = process_start_time()
    removed: list[Path] = []
    seen: set[str] = set()
    for pattern in patterns:
        for p in folder.glob(pattern):
            if p.name in seen:
                continue
            seen.add(p.name)
            m = _PID_MARK.search(p.name)
            if m and _pid_alive(int(m.group(1))):
                continue
            if owned_only and (m is None or not is_owned(p)):
                continue
            try:
                st = p.lstat()
                if st.st_mtime >= started:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(p)
                else:
                    p.unlink()
                removed.append(p)
            except OSError:
                continue
    return removed


#: The file that marks a folder as made by coreselect: its first line, then a random token.
#: Only a folder holding it is ever removed or taken over as scratch; a user's folder or file
#: whose name looks like a scratch folder's is never touched.
OWNED_MARK = ".coreselect-owned"
_OWNED_LINE = "made by coreselect; removed by it when no longer needed\n"


def mark_owned(folder: PathLike) -> None:
    """Mark ``folder`` (just created by this process) as coreselect's."""
    token = secrets.token_hex(16)
    with open(Path(folder) / OWNED_MARK, "x", encoding="utf-8") as fh:
        fh.write(f"{_OWNED_LINE}{token}\n")


def is_owned(folder: PathLike) -> bool:
    """Whether ``folder`` is a real folder (not a link) that :func:`mark_owned` marked."""
    folder = Path(folder)
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return False
        with open(folder / OWNED_MARK, encoding="utf-8") as fh:
            text = fh.read(len(_OWNED_LINE) + 40)
    except OSError:
        return False
    line, _, token = text.partition("\n")
    return (line + "\n" == _OWNED_LINE and len(token.strip()) == 32
            and all(c in "0123456789abcdef" for c in token.strip()))


def scratch_dir(root: PathLike, name: str, keep_as: str | None = None) -> Path:
    """A new scratch folder of this process in ``root``: ``NAME[.KEEP_AS].p<pid>-XXXX.tmp``.

    The pid mark lets a later call remove the folder of a writer that was killed (SIGKILL:
    it cleaned nothing up), and first the leftovers of killed writers of ``NAME`` are
    removed (:func:`clean_stale`). With ``keep_as`` (a resumable run's key), a killed
    writer's folder of that key is not removed but taken over, renamed to this process's
    name (its contents are the caller's to check): a resumed run goes on with its scratch."""
    root = Path(root)
    tag = "" if keep_as is None else f".{keep_as}"

    def fresh() -> Path:
        folder = Path(tempfile.mkdtemp(prefix=f"{name}{tag}.p{os.getpid()}-", suffix=".tmp",
                                       dir=root))
        mark_owned(folder)
        return folder

    own = None
    if keep_as is not None:
        for old in sorted(root.glob(f"{glob.escape(name + tag)}.p*-*.tmp")):
            m = _PID_MARK.search(old.name)
            if m is None or _pid_alive(int(m.group(1))) or not is_owned(old):
                continue
            mine = fresh()
            try:
                os.unlink(mine / OWNED_MARK)
                os.rename(old, mine)  # onto the empty folder; another claimant may win
            except OSError:
                shutil.rmtree(mine, ignore_errors=True)
                continue
            own = mine
            break
    # leaves live writers' (and own) alone, and whatever coreselect did not mark as its own
    clean_stale(root, (f"{glob.escape(name)}.*.tmp",), owned_only=True)
    return own if own is not None else fresh()
