"""Shared CLI plumbing: one-line errors with exit codes, progress bars.

Exit codes: 0 success; 2 an expected failure (bad input or parameters, a missing or
unreadable file, a full disk or read-only folder, no memory, a download that failed);
1 an unexpected failure, i.e. a bug ("please report"); 130 interrupted (Ctrl-C); 143
terminated (SIGTERM; temporary files are removed on the way out).
Every failure is one line on stderr; the traceback of an unexpected one is printed only
with ``-v``/``--verbose`` (commands with that option) or ``CORESELECT_DEBUG=1``.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import sys
import threading
import traceback
from typing import Callable, NoReturn

import click


EXIT_BAD_INPUT = 2

#: One label-spec convention for every format (coreselect.io.labels).
LABELS_HELP = ("Labels: N = the last N columns, -N = the first N, names a,b,c, a name prefix, "
               "or a Mulan XML file (every format).")
LABELS_AS_FEATURES_HELP = ("With --labels on an ARFF file: keep the declared labels that --labels "
                           "leaves out as candidate features (by default they are neither "
                           "labels nor features).")
HEADER_HELP = ("CSV files: whether the first row names the columns (--header) or is data "
               "(--no-header; the columns are named x0, x1, ...). Default: it names them, "
               "unless every field in it is a number (then it is data, with a warning).")
#: -q/--quiet and -v/--verbose mean the same in every command.
QUIET_HELP = ("No progress bars, progress lines or notes on stderr (results, warnings and errors "
              "only). Without it a terminal gets a bar per stage, a log a line per stage every "
              "$CORESELECT_PROGRESS_INTERVAL seconds (default 10; 'off': none).")
VERBOSE_HELP = ("Log each stage with its time on stderr, and print the traceback of an "
                "internal error.")
EXIT_BUG = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

# Set by a command's -v/--verbose (handle_errors reads a "verbose" argument by itself).
VERBOSE = False

# OSErrors that the environment causes, not coreselect: one line, exit 2.
_ENVIRONMENT_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "no such file or folder",
    errno.EISDIR: "is a folder",
    errno.ENOTDIR: "not a folder",
    errno.EEXIST: "already exists",
    errno.ENOTEMPTY: "folder not empty",
    errno.ENAMETOOLONG: "file name too long",
    errno.ELOOP: "too many levels of symbolic links",
    errno.EMFILE: "too many open files",
    errno.EIO: "input/output error",
    errno.ENOMEM: "out of memory",
}


def set_verbose(flag: bool) -> None:
    """Show tracebacks of unexpected errors (the command's ``-v``)."""
    global VERBOSE
    VERBOSE = bool(flag)


def _debug() -> bool:
    return VERBOSE or os.environ.get("CORESELECT_DEBUG", "").strip() not in ("", "0")


def _line(message: str) -> str:
    return " ".join(str(message).split())


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print one line on stderr and exit with ``code`` (2: bad input; never a traceback)."""
    click.echo(f"coreselect: error: {_line(message)}", err=True)
    sys.exit(code)


def _command_flags() -> dict[str, str]:
    """The running command's parameters: Python name -> the option a user types (``k`` ->
    ``-k``, ``n_bins`` -> ``--bins``, ``keep_constant`` -> ``--keep-constant``)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return {}
    flags = {}
    for param in ctx.command.params:
        if isinstance(param, click.Option) and param.opts and param.name:
            flags[param.name] = param.opts[0]
    return flags


_VALUE = r"('[^']*'|\"[^\"]*\"|[^\s,;:()]+)"


def cli_words(message: str, flags: dict[str, str] | None = None) -> str:
    """``message`` of the library in the words of the command line: its parameter names
    become the command's options (``keep_constant=True`` -> ``--keep-constant``,
    ``k=500`` -> ``-k 500``, ``n_bins must be`` -> ``--bins must be``), and Python's
    spellings go (``'auto'`` -> ``auto``; "or None": an option left out)."""
    import re

    flags = _command_flags() if flags is None else flags
    text = str(message)
    hit = False
    for name in sorted(flags, key=len, reverse=True):
        flag = flags[name]
        before = text

        def assign(m: re.Match, flag: str = flag) -> str:
            value = m.group(1).strip("'\"")
            if value == "True":
                return flag
            if value == "False":
                return f"no {flag}"
            return f"{flag} {value}"

        text = re.sub(rf"(?<![\w./-]){re.escape(name)}={_VALUE}", assign, text)
        # "k must be ...", "n_workers must be ...": the subject of a refusal
        text = re.sub(rf"(^|[;:(]\s*|\s-\s)({re.escape(name)})(?= (must|needs|cannot|is)\b)",
                      lambda m, flag=flag: m.group(1) + flag, text)
        if "_" in name:  # a Python identifier anywhere ("a smaller min_bin_count")
            text = re.sub(rf"(?<![\w./-]){re.escape(name)}(?![\w=])", flag, text)
        hit = hit or text != before
    if hit:
        text = re.sub(r"\s+or None\b", "", text)
        # Python's quotes around the word a user types: 'auto' -> auto, got 'foo' -> got foo
        # (other quoted words, such as column names, keep theirs)
        text = re.sub(r"(?<![\w])'(auto|all)'(?![\w])", r"\1", text)
        text = re.sub(r"\bgot '([^'\s]*)'", r"got \1", text)
    return text


def error_message(exc: BaseException) -> tuple[str, int] | None:
    """The one-line message and exit code of an expected failure, or None for a bug."""
    from coreselect.errors import CoreselectError, DatasetError

    if isinstance(exc, CoreselectError):
        text = str(exc)
        if isinstance(exc, DatasetError) and exc.path is not None:
            head = text[:len(str(exc.path))]  # the path stays as the user wrote it
            return head + cli_words(text[len(head):]), EXIT_BAD_INPUT
        return cli_words(text), EXIT_BAD_INPUT
    # scikit-learn's parameter errors (InvalidParameterError is a ValueError); sklearn is not
    # imported here so that commands that do not need it start fast.
    validation = sys.modules.get("sklearn.utils._param_validation")
    if validation is not None and isinstance(exc, validation.InvalidParameterError):
        return str(exc), EXIT_BAD_INPUT
    if isinstance(exc, UnicodeDecodeError):
        return (f"cannot decode the input as {exc.encoding} (byte {exc.start}: "
                f"{exc.object[exc.start:exc.start + 1]!r}); is it a text file in that encoding?"), EXIT_BAD_INPUT
    if isinstance(exc, MemoryError):
        return ("out of memory; try the streaming or distributed mode, fewer features per block, "
                "or a machine with more memory"), EXIT_BAD_INPUT
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return f"network: {exc.strerror or exc}", EXIT_BAD_INPUT
    if isinstance(exc, OSError):
        if isinstance(exc, FileNotFoundError):
            return f"no such file: {exc.filename or exc}", EXIT_BAD_INPUT
        reason = _ENVIRONMENT_ERRNOS.get(exc.errno)
        if reason is not None:
            where = exc.filename if exc.filename is not None else ""
            if getattr(exc, "filename2", None):
                where = f"{where} -> {exc.filename2}"
            detail = exc.strerror or reason
            return (f"{where}: {detail}" if where else detail), EXIT_BAD_INPUT
    return None


def report_exception(exc: BaseException) -> NoReturn:
    """Print ``exc`` as one line (plus a traceback for bugs under -v) and exit."""
    if isinstance(exc, KeyboardInterrupt):
        terminated = isinstance(exc, Terminated)
        click.echo(f"coreselect: {'terminated' if terminated else 'interrupted'}", err=True)
        sys.exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
    if isinstance(exc, BrokenPipeError):
        # `coreselect ... | head`: the reader left; say nothing, and keep Python from
        # complaining about the unflushable stdout at exit.
        with _suppress():
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_BUG)
    expected = error_message(exc)
    if expected is not None:
        if _debug():
            traceback.print_exception(exc, file=sys.stderr)
        fail(*expected)
    if _debug():
        traceback.print_exception(exc, file=sys.stderr)
    hint = "" if _debug() else "; rerun with -v or CORESELECT_DEBUG=1 for the traceback"
    click.echo(f"coreselect: internal error: {type(exc).__name__}: {_line(exc) or '(no message)'} "
               f"(this is a bug; please report it with the command line{hint})", err=True)
    sys.exit(EXIT_BUG)


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that it unwinds like Ctrl-C."""


def _on_sigterm(signum, frame):  # noqa: ARG001
    # Unwind like Ctrl-C, so that `finally` blocks remove temporary files and folders.
    raise Terminated


_FINISHED: list[int] = []  # the exit code of a command that returned (main() sets it)
_IN_COMMAND: list[bool] = []  # one entry per command body running (handle_errors)
_LATE: list[int] = []  # signals that came after the command's last outputs were in place


def _on_signal(signum, frame):
    """SIGINT and SIGTERM for a CLI command: an interrupted run exits 130/143 and leaves no new
    output (it unwinds, so `finally` blocks remove temporaries and roll back output sets).
    Once the command's last outputs are in place (files.last_outputs_committed) or it has
    returned, the run is finished: it ends with its own code, promptly on a second signal."""
    # No import here: a signal can land while a module is half imported (numpy, pathlib), and
    # importing anything that needs it would fail with a traceback instead of the one line.
    # Until coreselect.io.files is loaded whole, no output can have been committed.
    files = sys.modules.get("coreselect.io.files")
    committed = getattr(files, "last_outputs_committed", None)
    if _FINISHED or (committed is not None and committed()):
        _LATE.append(signum)
        noted = getattr(files, "note_signal", None)
        if noted is not None:
            noted()
        if _FINISHED or len(_LATE) > 1:
            with _suppress():
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(_FINISHED[0] if _FINISHED else 128 + signum)
        return
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        # In the import machinery's own code (between taking its lock and its `try`, or in the
        # weakref callback that drops a module's lock, where an exception is printed and
        # dropped), an interrupt can leave the import lock held: the interrupt lost, the
        # next import in any thread waits for ever. Ask again in a moment, from another
        # thread (sent from here, the signal would be handled at once, still in there).
        again = threading.Timer(0.01, os.kill, (os.getpid(), signum))
        again.daemon = True
        again.start()
        return
    interrupt = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    if own_process() and not _IN_COMMAND:
        # Start-up (click parsing, a command's module loading), outside any command's body:
        # nothing to unwind, so the run ends here with the one line (raised, the interrupt
        # would reach click, which adds an empty line before its own "Aborted!").
        report_exception(interrupt)
    raise interrupt


def install_process_signals() -> None:
    """For the ``coreselect`` process (not for commands run in-process by tests): the
    handlers stay for the whole process, so no signal falls between a command's handlers
    and Python's defaults (where one could be lost, or kill a finished run)."""
    if threading.current_thread() is threading.main_thread():
        with _suppress():
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup / `&` in a script
                    signal.signal(sig, _on_signal)
        # Registered first, so it runs after every other exit handler: from there on Python
        # tears itself down and puts back the default handlers, where a signal would kill the
        # finished run (-15, its outputs in place); its exit code stands instead.
        import atexit

        # Leaving early skips no exit handler only if none was registered before this one
        # (a wrapper's, coverage's): ask CPython, and keep the teardown when it cannot say.
        _EARLY_EXIT[:] = [getattr(atexit, "_ncallbacks", lambda: 1)() == 0]
        atexit.register(_end_of_process)


_EARLY_EXIT: list[bool] = []  # whether the process may leave before the interpreter's teardown


def own_process() -> bool:
    """Whether this is the ``coreselect`` process itself (:func:`install_process_signals`
    ran), not a caller's process running a command in-process (tests, scripts)."""
    return bool(_EARLY_EXIT)


def _end_of_process() -> None:
    """The process's last exit handler. Signals are ignored from here on, and a command that
    finished leaves at once with its code, streams flushed: every other exit handler has run
    and the threads are joined; what is left, the interpreter's teardown of its modules,
    takes 0.15-0.25 s once numba's kernels are loaded (numba's registries, LLVM) and nothing
    of a finished run needs it."""
    with _suppress():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    if _FINISHED and _EARLY_EXIT == [True]:
        with _suppress():
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(_FINISHED[0])


def finished(code: int) -> None:
    """The command returned with ``code``: a signal from now on ends the process with it."""
    _FINISHED[:] = [code]


def handle_errors(func: Callable) -> Callable:
    """Turn every failure of a command into one line on stderr and an exit code (see module doc).

    A command's ``verbose`` argument, when it has one, turns on tracebacks for bugs.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        global VERBOSE
        was_verbose = VERBOSE
        if kwargs.get("verbose"):
            VERBOSE = True
        previous = {}
        from coreselect.io.files import last_outputs_committed

        last_outputs_committed(reset=True)
        if threading.current_thread() is threading.main_thread():
            with _suppress():
                for sig in (signal.SIGINT, signal.SIGTERM):
                    if signal.getsignal(sig) is not signal.SIG_IGN:
                        previous[sig] = signal.signal(sig, _on_signal)
        _IN_COMMAND.append(True)
        try:
            return func(*args, **kwargs)
        except (SystemExit, click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except BaseException as exc:  # noqa: BLE001 - every failure gets one line and a code
            report_exception(exc)
        finally:
            _IN_COMMAND.pop()
            VERBOSE = was_verbose
            _stop_logging()
            for sig, handler in previous.items():
                with _suppress():
                    signal.signal(sig, handler)

    return wrapper


class ShownChoice(click.Choice):
    """A choice that accepts every value but lists only ``shown`` in ``--help`` (the others,
    kept for research, are listed by ``--help-all``)."""

    def __init__(self, choices, shown, case_sensitive: bool = True):
        super().__init__(list(choices), case_sensitive=case_sensitive)
        self.shown = [c for c in choices if c in set(shown)]
        self.revealed = False

    def get_metavar(self, param, *args, **kwargs) -> str:
        listed = self.choices if self.revealed else self.shown
        return "[" + "|".join(map(str, listed)) + "]"


def expert_option(*decls, help_all: str | None = None, **attrs) -> Callable:
    """An option kept out of the main ``--help`` (``hidden``), listed by ``--help-all``
    (with ``help_all`` as its text there, when given); still accepted everywhere."""
    def decorator(func: Callable) -> Callable:
        func = click.option(*decls, hidden=True, **attrs)(func)
        param = func.__click_params__[-1]
        param.expert = True
        if help_all is not None:
            param.help_all = help_all
        return func
    return decorator


def _print_help_all(ctx: click.Context, _param, value) -> None:
    """``--help-all``: the help with the research and expert options and choices too."""
    if not value or ctx.resilient_parsing:
        return
    changed = []
    for param in ctx.command.params:
        saved = (param, getattr(param, "hidden", False), getattr(param, "help", None))
        if getattr(param, "expert", False):
            param.hidden = False
        if getattr(param, "help_all", None) is not None:
            param.help = param.help_all
        if isinstance(param.type, ShownChoice):
            param.type.revealed = True
        changed.append(saved)
    try:
        click.echo(ctx.get_help())
    finally:  # the command objects live for the process (tests run many commands)
        for param, hidden, text in changed:
            if hasattr(param, "hidden"):
                param.hidden = hidden
            param.help = text
            if isinstance(param.type, ShownChoice):
                param.type.revealed = False
    ctx.exit()


def help_all_option(func: Callable) -> Callable:
    """``--help-all``: ``--help`` with every option and choice, those kept for research too."""
    return click.option("--help-all", is_flag=True, expose_value=False, is_eager=True,
                        callback=_print_help_all,
                        help="Show every option and choice, those kept for research and "
                             "expert tuning too, and exit.")(func)


def quiet_option(func: Callable) -> Callable:
    """The ``-q/--quiet`` flag (argument ``quiet``)."""
    return click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)(func)


def labels_as_features_option(func: Callable) -> Callable:
    """The ``--labels-as-features`` flag (argument ``labels_as_features``)."""
    return click.option("--labels-as-features", "labels_as_features", is_flag=True,
                        help=LABELS_AS_FEATURES_HELP)(func)


def header_option(func: Callable) -> Callable:
    """``--header/--no-header`` (argument ``header``: None when neither is given)."""
    return click.option("--header/--no-header", "header", default=None, help=HEADER_HELP)(func)


def header_flag(header: bool | None) -> str:
    """The spelling of ``--header/--no-header`` that gave ``header``."""
    return "--header" if header else "--no-header"


def data_format(data: str) -> str | None:
    """What DATA is for the rules of a reader option (``--header``): a data file's format
    (the first of several files), ``"dataset"`` for a built-in name, None when only reading
    it tells (a column store, a URL without a known suffix, a path that does not resolve)."""
    from coreselect.errors import DatasetError
    from coreselect.io import format_of
    from coreselect.io.paths import is_many, is_url, resolve_files

    try:
        if is_many(data) and not is_url(data):
            return format_of(resolve_files(data)[0])
        return format_of(data)
    except DatasetError:
        pass
    from coreselect.datasets.registry import find

    if data == "synthesized" or find(data) is not None:
        return "dataset"
    return None


def refuse_header_off_csv(data: str, header: bool | None) -> None:
    """One line and exit 2 for ``--header/--no-header`` on data that is no CSV file (the
    option matrix's rule, :data:`coreselect.selection.spec.UNUSED`)."""
    if header is None:
        return
    from coreselect.selection.spec import unused_reason

    fmt = data_format(data)
    why = unused_reason("header", "centralized", "file", "local", {"header"}, fmt=fmt)
    if why is not None:
        on = "a built-in dataset" if fmt == "dataset" else f"a data file ({fmt})"
        fail(f"{header_flag(header)} does not apply to {data}, {on}: {why}")


def load_options(labels: str | None, labels_as_features: bool,
                 header: bool | None = None) -> dict:
    """The reader options of ``--labels``, ``--labels-as-features`` and ``--header`` (one
    line and exit 2 for the flag without ``--labels``: every declared label is then a
    label)."""
    if labels_as_features and not labels:
        fail("--labels-as-features needs --labels: only --labels leaves declared labels out "
             "(without it every declared label is a label)")
    if labels:
        from coreselect.datasets.fetch import label_file_under_coredata

        labels = label_file_under_coredata(labels)  # under $COREDATA as the data path is
    options: dict = {"labels": labels} if labels else {}
    if labels_as_features:
        options["labels_as_features"] = True
    if header is not None:
        options["header"] = header
    return options


def verbose_option(func: Callable) -> Callable:
    """The ``-v/--verbose`` flag (argument ``verbose``; :func:`handle_errors` reads it for
    tracebacks, and :func:`log_to_stderr` starts the stage log)."""
    return click.option("--verbose", "-v", is_flag=True, help=VERBOSE_HELP)(func)


def _dask_logging(level: str) -> str:
    # The whole `logging` table of Dask's config as one literal (DASK_LOGGING): distributed's
    # own defaults set distributed.client apart, which DASK_LOGGING__DISTRIBUTED does not reach.
    names = ("distributed", "distributed.client", "distributed.scheduler", "distributed.worker",
             "distributed.nanny", "tornado", "bokeh")
    return repr({name: level for name in names})


#: Dask's own logs in a command without -v: its client and workers would otherwise print their
#: errors (a lost scheduler, with tracebacks) beside our one line.
QUIET_DASK = _dask_logging("critical")


def quiet_dask() -> None:
    """Keep Dask's logs off stderr unless the user configured them (read when Dask is imported,
    also by worker processes, which inherit the environment)."""
    if not any(k.startswith("DASK_LOGGING") for k in os.environ):
        os.environ["DASK_LOGGING"] = QUIET_DASK


def log_to_stderr() -> None:
    """What ``-v`` turns on: coreselect's stage log (INFO) on stderr."""
    import logging

    # A handler on coreselect's own logger, on the stderr of this command (not a global
    # basicConfig, which a second command in the same process, or pytest, would not see).
    logger = logging.getLogger("coreselect")
    _stop_logging()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
    handler._coreselect_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    # -v is about our stages: Dask's scheduler and workers log their internals at INFO. Dask
    # reads this when it is imported (also in worker processes, which inherit it).
    if os.environ.get("DASK_LOGGING") == QUIET_DASK:
        os.environ["DASK_LOGGING"] = _dask_logging("warning")
    elif not any(k.startswith("DASK_LOGGING") for k in os.environ):
        os.environ["DASK_LOGGING__DISTRIBUTED"] = "warning"
    for name in ("distributed", "tornado", "bokeh"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _stop_logging() -> None:
    """Undo :func:`log_to_stderr` (at the end of a command: a later command in the same
    process, such as a test, starts without it)."""
    logging = sys.modules.get("logging")  # not loaded: nothing to undo (and no import after Ctrl-C)
    if logging is None:
        return
    logger = logging.getLogger("coreselect")
    ours = [h for h in logger.handlers if getattr(h, "_coreselect_cli", False)]
    for handler in ours:
        logger.removeHandler(handler)
    if ours:
        logger.setLevel(logging.NOTSET)


def reporter(quiet: bool, labels: dict | None = None, units: dict | None = None):
    """The progress of a command's stages (:class:`coreselect.progress.Reporter`): a bar per
    stage on a terminal, a line per stage every few seconds in a log, nothing with ``-q``.
    Close it (or use it as a context manager) when the command ends."""
    from coreselect.progress import Reporter

    return Reporter(enabled=not quiet, tty=_is_tty(sys.stderr), labels=labels, units=units)


def progress_bar(total: int, desc: str, enabled: bool = True, **options):
    """A tqdm bar on stderr, shown only when stderr is a terminal (log files get no ``\\r``).

    Returns an object with ``update(n)``, ``refresh()`` and ``close()`` (a disabled bar when
    hidden).
    """
    from tqdm.auto import tqdm

    shown = enabled and _is_tty(sys.stderr)
    return tqdm(total=total, desc=desc, disable=not shown, leave=False, file=sys.stderr,
                **options)  # e.g. unit="B", unit_scale=True: bytes and MB/s


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def __getattr__(name: str):
    """``atomic_output`` and ``atomic_path``, kept importable from here, loaded on first use:
    importing :mod:`coreselect.io` pulls numpy and scipy (and with them ``logging``, whose exit
    handler, registered before :func:`install_process_signals`, would keep a finished run from
    leaving before the interpreter's teardown)."""
    if name in ("atomic_output", "atomic_path"):
        from coreselect.io import files

        return getattr(files, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def int_or_auto(value: str) -> str | int:
    """'auto' or an integer; anything else goes on to the one check (coreselect.selection.spec,
    or the store build's)."""
    try:
        return int(value)
    except ValueError:
        return value
