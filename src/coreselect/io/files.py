"""Output files that appear whole or not at all.

Every writer in coreselect (readers' exporters, evaluation reports, downloads, the column
store, the CLI) goes through these helpers, so an interrupted or failed write never leaves a
partial file under the user's name. The rules:

* **Regular files** (and new paths) are written to a hidden temporary file beside the target
  (``.NAME.p<pid>-XXXX.tmp``), flushed to disk, given the mode a plain ``open()`` would give
  (``0666 & ~umask``, or the mode of the file it replaces) and renamed over the target.
* **Symbolic links** the user named are followed: the link's final target is replaced
  atomically and the link itself is kept (as ``open(path, "w")`` would write through it).
* **Special files** (``/dev/stdout``, ``/dev/null``, ``/dev/full``, FIFOs, terminals) and
  ``-`` (standard output) are written directly; renaming over them would replace a device
  node or a link by a regular file and print nothing.
* **Write failures** (disk full, read-only folder, no permission) raise
  :class:`~coreselect.errors.OutputError` naming the user's path, never the temporary file.
* **Several outputs of one command** go through :func:`output_set`: all are renamed into
  place only when every one was written; on a failure none is left.
* **Stale temporaries** of a killed process (older than this process, and whose process is
  gone) are removed the next time anything is written in the same folder
  (:func:`clean_stale`).
* :func:`check_outputs` refuses an output that is an input, or another output.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import glob
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Iterable, Iterator, Mapping, Sequence, Union

from coreselect.io._scratch import (  # noqa: F401 - re-exported: files is where writers look
    _PF_EXITING, _PID_MARK, OWNED_MARK, STALE_PATTERNS, _exiting, _pid_alive, clean_stale, is_owned, mark_owned,
    process_start_time, scratch_dir, temp_name_prefix,
)
from coreselect.errors import InputError, OutputError

__all__ = [
    "atomic_output",
    "atomic_path",
    "atomic_dir",
    "output_set",
    "check_outputs",
    "check_writable",
    "checkpoint",
    "clean_stale",
    "scratch_dir",
    "temp_name_prefix",
    "file_mode",
    "dir_mode",
    "is_special",
    "STALE_PATTERNS",
]

PathLike = Union[str, os.PathLike]

# Errors that a failed write raises with no file name attached (write(2), close(2)).
_WRITE_ERRNOS = {
    _errno.ENOSPC, _errno.EDQUOT, _errno.EFBIG, _errno.EROFS, _errno.EACCES, _errno.EPERM,
    _errno.EIO, _errno.ENXIO, _errno.EBADF, _errno.EINVAL,
}

_umask_lock = threading.Lock()


def _umask() -> int:
    # Linux shows the umask in /proc; elsewhere os.umask can only be read by setting it
    # (briefly; the lock keeps two readers from restoring each other's value).
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """Mode of a new file as ``open()`` makes it: ``0666 & ~umask`` (mkstemp alone gives 0600)."""
    return 0o666 & ~_umask()


def dir_mode() -> int:
    """Mode of a new folder as ``mkdir`` makes it: ``0777 & ~umask`` (mkdtemp alone gives 0700)."""
    return 0o777 & ~_umask()


_STDOUT_NAMES = {"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"}
_STDERR_NAMES = {"/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"}


def _std_stream(path: PathLike) -> str | None:
    """"stdout"/"stderr" for names of the standard streams: they are written through Python's
    stream (re-opening /dev/stdout would truncate a redirected file and lose what was printed)."""
    text = str(path)
    if text in _STDOUT_NAMES:
        return "stdout"
    if text in _STDERR_NAMES:
        return "stderr"
    return None


def _through_dev_or_proc(path: PathLike) -> bool:
    # /dev/stdout -> /proc/self/fd/1 -> a *regular* file when stdout is redirected: renaming
    # over that file would detach it from the shell's descriptor. Any hop through /dev or
    # /proc therefore means "write directly".
    p = os.path.abspath(path)
    for _ in range(40):
        if p.startswith(("/dev/", "/proc/")):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.abspath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def is_special(path: PathLike) -> bool:
    """Whether ``path`` is written directly: ``-``, a path through /dev or /proc, or an
    existing file that is neither regular nor a folder (device, FIFO, socket, terminal)."""
    if _std_stream(path) or _through_dev_or_proc(path):
        return True
    try:
        st = os.stat(path)  # follows links
    except OSError:
        return False
    return not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def save_array(path: PathLike, array) -> None:
    """``np.save`` to a file, a short write (a full disk: numpy says "N requested and M
    written", with no errno) raised as :class:`~coreselect.errors.OutputError` (ENOSPC)."""
    import numpy as np

    try:
        np.save(path, array)
    except OSError as exc:
        if exc.errno is not None:
            raise
        raise OutputError(str(path), f"a short write ({exc}): no space left on the device",
                          _errno.ENOSPC) from None


def _clean_for(target: Path) -> None:
    esc = glob.escape(target.name)
    clean_stale(target.parent, (f".{esc}.p*-*.tmp", f".{esc}.p*-*.tmp.*"))


def _as_output_error(exc: BaseException, user_path: PathLike, tmp: str | None, own: bool) -> OutputError | None:
    """The OutputError for ``exc`` (naming the user's path), or None if it is not a write failure.

    ``own``: the error came from this module's own file operations, so any OSError is one.
    """
    if isinstance(exc, OutputError) or not isinstance(exc, OSError):
        return None
    fname = exc.filename
    about_tmp = tmp is not None and (fname == tmp or tmp in str(exc))
    if not (own or about_tmp or (fname is None and exc.errno in _WRITE_ERRNOS)):
        return None
    reason = exc.strerror or str(exc)
    if tmp is not None:
        reason = reason.replace(tmp, str(user_path))
    return OutputError(str(user_path), reason, exc.errno)


def _unlink(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _suffixes(name: str) -> str:
    # Keep every suffix (".arff.gz"), so writers that pick a format by name still do.
    return "".join(Path(name).suffixes)[:64]


def _open_special(path: PathLike) -> int | None:
    """Open a FIFO for writing now, without blocking: a FIFO with no reader (or a socket,
    which cannot be opened) is refused before anything is written, instead of hanging the
    commit (or failing it after the other outputs were replaced). Other special files and
    the standard streams are opened when committed (None)."""
    if _std_stream(path) is not None:
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISSOCK(mode):
        raise OSError(_errno.ENXIO, "is a socket, not a file", str(path))
    if not stat.S_ISFIFO(mode):
        return None
    deadline = time.monotonic() + FIFO_READER_WAIT
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != _errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise OSError(_errno.ENXIO, f"is a FIFO with no reader (waited {FIFO_READER_WAIT:g} s)",
                              str(path)) from None
            time.sleep(0.02)
    os.set_blocking(fd, True)
    return fd


#: Seconds a FIFO output may wait for its reader to open it (a reader started just after the
#: run, as in `coreselect ... --out fifo & cat fifo`), before it is refused rather than hung on.
FIFO_READER_WAIT = 5.0


def _check_regular_target(path: PathLike) -> None:
    """Refuse, before anything is written, an output that ``open(path, "w")`` could not
    write: a folder, a symbolic link into a missing folder, a read-only file. (Replacing by
    rename would otherwise succeed where the user protected the file.)"""
    if os.path.isdir(path):
        raise IsADirectoryError(_errno.EISDIR, "is a folder", str(path))
    real = os.path.realpath(path)
    if os.path.islink(path) and not os.path.isdir(os.path.dirname(real)):
        raise FileNotFoundError(_errno.ENOENT, f"is a symbolic link into a missing folder ({real})", str(path))
    try:
        st = os.stat(real)
    except OSError:
        return
    # Root may write anything: a file with no write bit at all is still the user's "do not touch".
    if stat.S_ISREG(st.st_mode) and (not os.access(real, os.W_OK) or not st.st_mode & 0o222):
        raise PermissionError(_errno.EACCES, "is read-only", str(path))


def check_writable(paths: Iterable[PathLike | None]) -> None:
    """Refuse, before a long run, outputs that :func:`output_set` would refuse at its end: a
    folder, a socket, a symbolic link into a missing folder, a read-only file
    (:class:`~coreselect.errors.OutputError` naming the path). Creates nothing; a FIFO is
    only checked when the outputs are written (its reader may start later)."""
    for p in paths:
        if p is None or _std_stream(p) is not None:
            continue
        try:
            if is_special(p):
                if stat.S_ISSOCK(os.stat(p).st_mode):
                    raise OSError(_errno.ENXIO, "is a socket, not a file", str(p))
            else:
                _check_regular_target(p)
                make_output_folder(Path(os.path.realpath(p)).parent, create=False)
        except OSError as exc:
            raise _as_output_error(exc, p, None, own=True) from exc


def make_output_folder(folder: Path, create: bool = True) -> None:
    """Create an output's folder, only under an existing one: ``--out results/x.json`` makes
    ``results``, a typo such as ``--out /nonexistent/dir/x.json`` makes no chain of folders
    from the filesystem's root (FileNotFoundError naming the first missing folder).
    ``create=False``: only check (before a long run)."""
    if folder.is_dir():
        return
    missing = folder
    while not missing.parent.is_dir() and missing.parent != missing:
        missing = missing.parent
    if missing != folder:
        raise FileNotFoundError(_errno.ENOENT, f"the folder {missing} does not exist (an "
                                "output's own folder is created, not the folders above it)",
                                str(missing))
    if create:
        folder.mkdir(exist_ok=True)


class _Pending:
    """One output in progress: the user's path, where its bytes go first, and how to commit."""

    def __init__(self, path: PathLike):
        self.user = path
        self.special = is_special(path)
        self.tmp: str | None = None
        self.target: Path | None = None
        name = Path(str(path)).name or "output"
        self.fd: int | None = None  # a FIFO opened (and kept open) when the set was entered
        self.made_folder: Path | None = None  # the output's folder, when this made it
        try:
            if self.special:
                self.fd = _open_special(path)
                # Writers that want a path write to a private scratch file, copied to the device.
                self.tmp = os.path.join(tempfile.mkdtemp(prefix="coreselect-"), f"out{_suffixes(name)}")
                Path(self.tmp).touch()
            else:
                _check_regular_target(path)
                # realpath: a symlink's target is replaced, the link kept; the temp sits
                # beside the real file so that the rename stays on one filesystem.
                self.target = Path(os.path.realpath(path))
                if not self.target.parent.is_dir():
                    self.made_folder = self.target.parent
                make_output_folder(self.target.parent)
                _clean_for(self.target)
                fd, self.tmp = tempfile.mkstemp(
                    prefix=temp_name_prefix(self.target.name), suffix=".tmp" + _suffixes(self.target.name),
                    dir=self.target.parent,
                )
                os.close(fd)
        except OSError as exc:
            self.discard()
            raise _as_output_error(exc, path, self.tmp, own=True) from exc

    def sync(self) -> None:
        """Flush the temporary file's bytes to disk before it gets the user's name."""
        if self.special or self.tmp is None:
            return
        try:
            fd = os.open(self.tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _as_output_error(exc, self.user, self.tmp, own=True) from exc

    def commit(self) -> None:
        try:
            if self.special:
                with open(self.tmp, "rb") as src:
                    std = _std_stream(self.user)
                    if std is not None:
                        stream = getattr(sys, std)
                        stream.flush()
                        shutil.copyfileobj(src, stream.buffer)
                        stream.buffer.flush()
                    elif self.fd is not None:
                        fd, self.fd = self.fd, None
                        with open(fd, "wb", closefd=True) as dst:
                            shutil.copyfileobj(src, dst)
                    else:
                        with open(self.user, "wb") as dst:
                            shutil.copyfileobj(src, dst)
                return
            assert self.target is not None
            try:
                mode = stat.S_IMODE(os.stat(self.target).st_mode)  # keep a replaced file's mode
            except FileNotFoundError:
                mode = file_mode()
            os.chmod(self.tmp, mode)
            os.replace(self.tmp, self.target)
            self.tmp = None
        except OSError as exc:
            raise _as_output_error(exc, self.user, self.tmp, own=True) from exc

    def discard(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        if self.tmp is None:
            return
        if self.special:
            shutil.rmtree(os.path.dirname(self.tmp), ignore_errors=True)
        else:
            _unlink(self.tmp)
        self.tmp = None


@contextlib.contextmanager
def atomic_output(path: PathLike, mode: str = "w", encoding: str | None = None) -> Iterator[IO]:
    """Open ``path`` for writing so that it appears whole or not at all.

    Yields a file object. A regular file is written to a temporary file and renamed into
    place only when the block succeeds; on any failure the temporary is removed and the
    target is untouched. ``-`` writes to standard output; special files are written
    directly. Write failures raise :class:`~coreselect.errors.OutputError` naming ``path``.
    """
    if "r" in mode or "a" in mode or "+" in mode:
        raise ValueError(f"atomic_output writes whole files; mode {mode!r} is not supported")
    std = _std_stream(path)
    if std is not None:
        stream = getattr(sys, std)
        stream = stream.buffer if "b" in mode else stream
        try:
            yield stream
            stream.flush()
        except OSError as exc:
            err = _as_output_error(exc, "standard output" if std == "stdout" else "standard error",
                                   None, own=False)
            if err is None:
                raise
            raise err from exc
        return
    if is_special(path):
        try:
            fd = _open_special(path)
            fh = open(path if fd is None else fd, mode, encoding=encoding)
        except OSError as exc:
            raise _as_output_error(exc, path, None, own=True) from exc
        try:
            with fh:  # closing flushes: /dev/full reports ENOSPC here
                yield fh
        except OSError as exc:
            err = _as_output_error(exc, path, None, own=False)
            if err is None:
                raise
            raise err from exc
        return
    pending = _Pending(path)
    try:
        try:
            with open(pending.tmp, mode, encoding=encoding) as fh:
                yield fh
        except OSError as exc:
            err = _as_output_error(exc, path, pending.tmp, own=False)
            if err is None:
                raise
            raise err from exc
        pending.sync()
        pending.commit()
    finally:
        pending.discard()


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Like :func:`atomic_output` for writers that want a path (pandas, pyarrow, matplotlib).

    The yielded path keeps every suffix of ``path`` (``.arff.gz``, ``.csv``), so writers
    that choose a format by name still do. For ``-`` and special files it is a private
    scratch file whose bytes are copied to the destination on success.
    """
    with output_set([path]) as (tmp,):
        yield tmp


_last_committed = False  # a command's last output set is in place (see output_set(last=True))


def last_outputs_committed(reset: bool = False) -> bool:
    """Whether an ``output_set(..., last=True)`` committed since the last reset: the run
    finished its outputs, so the CLI lets a signal that comes now end it with its code (0)
    rather than as an interrupted run (which must leave nothing new)."""
    global _last_committed
    was = _last_committed
    if reset:
        _last_committed = False
    return was


_final_scope = [False]


@contextlib.contextmanager
def final_outputs() -> Iterator[None]:
    """Every output set committed inside this block counts as the command's last
    (``output_set(..., last=True)``): for writers that do not take the flag themselves."""
    before, _final_scope[0] = _final_scope[0], True
    try:
        yield
    finally:
        _final_scope[0] = before


@contextlib.contextmanager
def output_set(paths: Sequence[PathLike | None], last: bool = False) -> Iterator[list[Path | None]]:
    """All-or-nothing writing of several outputs of one command.

    Yields one temporary path per entry of ``paths`` (None stays None). When the block
    succeeds every output is put in place; if the block or any commit fails, no output is
    left changed (outputs already renamed are rolled back to their previous content).
    The outputs must be distinct files (:func:`check_outputs`). Special files and ``-``
    are written last, as they cannot be rolled back. ``last=True``: these are the command's
    final outputs (:func:`last_outputs_committed`).
    """
    check_outputs((), [p for p in paths])
    pending: list[_Pending | None] = []
    committed = False
    try:
        for p in paths:
            pending.append(None if p is None else _Pending(p))
        yield [None if q is None else Path(q.tmp) for q in pending]
        for q in pending:
            if q is not None:
                q.sync()
        checkpoint("commit")
        _commit_all([q for q in pending if q is not None])
        committed = True
        if last or _final_scope[0]:
            global _last_committed
            _last_committed = True
            checkpoint("committed")
    except OSError as exc:
        live = [q for q in pending if q is not None and q.tmp is not None]
        for q in live:
            # The output the failed write was about (a writer's error names its file); a
            # nameless write error (ENOSPC from close) is attributable when there is one output.
            if exc.filename == q.tmp or q.tmp in str(exc) or len(live) == 1:
                err = _as_output_error(exc, q.user, q.tmp, own=False)
                if err is not None:
                    raise err from exc
        raise
    finally:
        for q in pending:
            if q is not None:
                q.discard()
        if not committed:  # a folder made for outputs that never came: not left empty
            for q in pending:
                if q is not None and q.made_folder is not None:
                    with contextlib.suppress(OSError):
                        os.rmdir(q.made_folder)


class _SignalDuringCommit(KeyboardInterrupt):
    """A signal came while outputs were being renamed into place: they were rolled back."""


@contextlib.contextmanager
def _signals_deferred() -> Iterator[list[int]]:
    """While outputs are renamed into place, SIGINT and SIGTERM are recorded instead of
    stopping the renames half way through a set. On leaving, the handlers of the time are
    restored and a recorded signal is raised again, so it acts as it would have (the CLI:
    exit 130/143); :func:`_commit_all` rolls the renames back first. Outside the main thread
    (no handlers can be set there) the list stays empty."""
    import signal

    got: list[int] = []
    previous: dict = {}
    if threading.current_thread() is threading.main_thread():
        def record(signum, frame):  # noqa: ARG001
            if previous.get(signum) is not signal.SIG_IGN:
                got.append(signum)

        with contextlib.suppress(ValueError, OSError):
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, record)
    global _DEFERRED
    _DEFERRED = got
    try:
        yield got
    finally:
        _DEFERRED = None
        for sig, h in previous.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)
        if got:
            signal.raise_signal(got[0])  # its own handler raises (KeyboardInterrupt, Terminated)
            raise _SignalDuringCommit()  # a handler that returned: the outputs are still rolled back


_DEFERRED: list[int] | None = None  # signals recorded during the current commit


def checkpoint(stage: str) -> None:
    """A test hook: when ``$CORESELECT_TEST_HOLD`` names ``stage``, write this process's pid
    to ``$CORESELECT_TEST_HOLD_FILE`` and wait (up to a minute, handling signals) so that a
    test can send a signal at exactly this moment. Costs one dictionary lookup otherwise."""
    if os.environ.get("CORESELECT_TEST_HOLD") != stage:
        return
    marker = os.environ.get("CORESELECT_TEST_HOLD_FILE")
    if marker:
        with open(marker + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.replace(marker + ".tmp", marker)
    deadline = time.monotonic() + 60
    seen = _SIGNALS_NOTED[0]
    # Ends on a signal, or when the test removes the file (to act on the world meanwhile).
    while (time.monotonic() < deadline and not _DEFERRED and _SIGNALS_NOTED[0] == seen
           and (not marker or os.path.exists(marker))):
        time.sleep(0.01)


def checkpoint_once(stage: str) -> None:
    """:func:`checkpoint` for code that runs in many processes (Dask workers): only the first
    process to get here (the one that creates ``$CORESELECT_TEST_HOLD_FILE.claim``) writes its
    pid and waits, up to a minute, for the test to kill it; every other one, and a later task
    in any worker, goes straight on."""
    if os.environ.get("CORESELECT_TEST_HOLD") != stage:
        return
    marker = os.environ.get("CORESELECT_TEST_HOLD_FILE")
    if not marker:
        return
    try:
        os.close(os.open(marker + ".claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    checkpoint(stage)  # the claimant holds as a single process would


_SIGNALS_NOTED = [0]


def note_signal() -> None:
    """A signal handler that does not raise (a finished run) tells :func:`checkpoint` to stop waiting."""
    _SIGNALS_NOTED[0] += 1


def _commit_all(items: list[_Pending]) -> None:
    regular = [q for q in items if not q.special]
    special = [q for q in items if q.special]
    backups: dict[int, str | None] = {}  # item -> hard link to the content it replaces (None: new file)
    done: list[_Pending] = []
    try:
        with _signals_deferred() as deferred:
            try:
                for i, q in enumerate(regular):
                    assert q.target is not None and q.tmp is not None
                    backups[i] = None
                    if q.target.is_file():
                        backups[i] = q.tmp + ".old"
                        try:
                            os.link(q.target, backups[i])
                        except OSError:
                            shutil.copy2(q.target, backups[i])
                for i, q in enumerate(regular):
                    q.commit()  # one rename: the target is either old or new, never partial
                    done.append(q)
                    if i == 0:
                        checkpoint("renamed")
                if deferred:
                    raise _SignalDuringCommit()  # roll the renames back before acting on it
            except _SignalDuringCommit:
                _roll_back(regular, done, backups)
                done.clear()
        # Special files last (they cannot be rolled back), with signals acting as usual: a
        # slow FIFO reader must not make the run deaf to Ctrl-C.
        for q in special:
            q.commit()
    except BaseException:
        _roll_back(regular, done, backups)
        raise
    finally:
        for backup in backups.values():
            _unlink(backup)


def _roll_back(regular: list[_Pending], done: list[_Pending], backups: dict[int, str | None]) -> None:
    for i, q in enumerate(regular):  # put back what was already renamed
        if q in done:
            with contextlib.suppress(OSError):
                if backups.get(i) is not None:
                    os.replace(backups[i], q.target)
                    backups[i] = None
                else:
                    os.unlink(q.target)


@contextlib.contextmanager
def atomic_dir(path: PathLike) -> Iterator[Path]:
    """Build a new folder under a hidden temporary name and rename it to ``path`` on success.

    ``path`` must not exist yet (or be an empty folder). The folder gets ``0777 & ~umask``.
    On failure the temporary folder is removed.
    """
    target = Path(os.path.realpath(path))
    try:
        make_output_folder(target.parent)
        clean_stale(target.parent, (f".{glob.escape(target.name)}.p*-*.tmp",))
        tmp = tempfile.mkdtemp(prefix=temp_name_prefix(target.name), suffix=".tmp", dir=target.parent)
        os.chmod(tmp, dir_mode())
    except OSError as exc:
        raise _as_output_error(exc, path, None, own=True) from exc
    try:
        yield Path(tmp)
        try:
            if target.is_dir() and not any(target.iterdir()):
                target.rmdir()
            os.rename(tmp, target)
        except OSError as exc:
            reason = "already exists" if exc.errno in (_errno.EEXIST, _errno.ENOTEMPTY) else (exc.strerror or str(exc))
            raise OutputError(str(path), reason, exc.errno) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _pairs(spec: Mapping[str, PathLike | None] | Iterable[PathLike | None]) -> list[tuple[str, PathLike]]:
    if isinstance(spec, Mapping):
        return [(str(k), v) for k, v in spec.items() if v is not None]
    return [(str(v), v) for v in spec if v is not None]


def _same(a: PathLike, b: PathLike) -> bool:
    try:
        return os.path.samefile(a, b)  # hard links, case-insensitive filesystems, bind mounts
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(
    inputs: Mapping[str, PathLike | None] | Iterable[PathLike | None],
    outputs: Mapping[str, PathLike | None] | Iterable[PathLike | None],
    downloads: Iterable[PathLike] = (),
) -> None:
    """Refuse outputs that would overwrite an input or each other, before any work starts.

    ``inputs`` and ``outputs`` are paths (None entries and input names that are not files,
    such as registry names, are skipped), or mappings from an option name (``"--out"``) to a
    path, used in the message. An output conflicts when it resolves (symlinks, hard links,
    ``..``) to an input, lies inside an input folder (a column store), or resolves to another
    output. ``-`` and special files (``/dev/null``) never conflict. ``downloads``: files the
    run creates before it writes (a dataset's download into the cache), compared by path.

    Raises
    ------
    InputError
        Naming both options and paths.
    """
    ins = [(label, p) for label, p in _pairs(inputs) if str(p) != "-" and os.path.exists(p)]
    outs = [(label, p) for label, p in _pairs(outputs) if not is_special(p)]

    def name(label: str, p: PathLike) -> str:
        return f"{label} {p}" if label != str(p) else str(p)

    for i, (olabel, out) in enumerate(outs):
        real = os.path.realpath(out)
        for ilabel, inp in ins:
            if _same(out, inp):
                raise InputError(f"output {name(olabel, out)} is the input {name(ilabel, inp)}; "
                                 "refusing to overwrite an input")
            if os.path.isdir(inp) and real.startswith(os.path.realpath(inp).rstrip(os.sep) + os.sep):
                raise InputError(f"output {name(olabel, out)} lies inside the input folder "
                                 f"{name(ilabel, inp)}; refusing to write into an input")
        for d in downloads:
            if real == os.path.realpath(d):
                raise InputError(f"output {name(olabel, out)} is where the input {d} is downloaded to; "
                                 "refusing to overwrite an input")
        for olabel2, out2 in outs[:i]:
            if _same(out, out2):
                raise InputError(f"outputs {name(olabel2, out2)} and {name(olabel, out)} are the same file; "
                                 "give each output its own path")
