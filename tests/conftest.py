"""Shared fixtures. Real datasets come from $COREDATA (default ../shared/data beside the repo).

Every test that needs real data goes through :func:`coredata` (or :func:`require_data_files`):
on a developer machine without the data they skip with the reason; where skipping would hide
a regression (``CORESELECT_REQUIRE_DATA=1``, which ``.ci/run`` exports, or ``CI=true`` as
set by hosted CI) they fail instead.

Hypothesis runs under one of two profiles (issue 16: the test command must pass every time
from a fresh clone):

* ``ci`` (the default): derandomized (the examples are a fixed function of each test), no
  example database (nothing a past run saved is replayed), ``print_blob=True`` (a failure
  prints the ``@reproduce_failure`` line), and nothing timed (no per-example deadline, no
  ``too_slow`` health check: a busy machine must not fail a test). ``python -m pytest -n 2 --dist loadfile -q`` runs
  the same examples on every machine and every run.
* ``explore``: random seeds on every run, 10x the default number of examples for tests that
  do not set their own, and a local example database (``.hypothesis/``, git-ignored) that
  replays what failed before. Run it as
  ``HYPOTHESIS_PROFILE=explore python -m pytest -q -m 'not slow'`` (or
  ``--hypothesis-profile=explore``); a failure it finds is fixed and then pinned with
  ``@example(...)`` so that ``ci`` runs it too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

REPO_ROOT = Path(__file__).resolve().parents[1]
_TRUE = ("1", "true", "yes", "on")

# No timing in ``ci``: a deadline per example and the too_slow health check are speed targets
# that a loaded machine misses (issue 32); hangs are bounded by the tests' own timeouts.
settings.register_profile("ci", database=None, derandomize=True, print_blob=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "explore", derandomize=False, print_blob=True, max_examples=1000,
    database=DirectoryBasedExampleDatabase(str(REPO_ROOT / ".hypothesis" / "examples")),
    suppress_health_check=[HealthCheck.too_slow])
# --hypothesis-profile=NAME (hypothesis' pytest plugin) is applied after this and wins.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# Progress lines in a log come every few seconds of a stage (coreselect.progress): tests that
# count the lines of stderr (one line per failure) must not depend on how slow the machine
# is. The tests of progress itself set the interval they need.
os.environ.setdefault("CORESELECT_PROGRESS_INTERVAL", "off")


def coredata_dir() -> Path:
    return Path(os.environ.get("COREDATA", REPO_ROOT.parent / "shared" / "data")).resolve()


def data_required() -> bool:
    """Whether a missing dataset must fail the run instead of skipping the test."""
    return (os.environ.get("CORESELECT_REQUIRE_DATA", "").lower() in _TRUE
            or os.environ.get("CI", "").lower() in _TRUE)


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason``, or fail when data tests must not skip."""
    if data_required():
        pytest.fail(f"{reason}; CORESELECT_REQUIRE_DATA/CI forbid skipping data tests",
                    pytrace=False)
    pytest.skip(reason)


def require_data_files(*relative: str) -> Path:
    """The data folder, after checking that the given files exist in it (else skip/fail)."""
    path = coredata_dir()
    if not (path / "SOURCES.md").is_file():
        skip_or_fail(f"real datasets not found at COREDATA={path} (set COREDATA to ../shared/data)")
    missing = [rel for rel in relative if not (path / rel).is_file()]
    if missing:
        skip_or_fail(f"missing in COREDATA={path}: {', '.join(missing)}")
    return path


@pytest.fixture(scope="session")
def coredata() -> Path:
    """The folder of real multi-label datasets; skips (or fails, see above) when absent."""
    return require_data_files()


@pytest.fixture(autouse=True)
def _dask_logging_environment_restored():
    """A command sets ``DASK_LOGGING*`` in ``os.environ`` for its own Dask clients and workers
    (quiet by default, warnings with -v). ``main([...])`` puts the caller's back afterwards;
    a command invoked through click's ``CliRunner`` does not, and the variables would outlive
    the test and reach every subprocess a later test starts (a -v run made a later CLI
    subprocess print Dask's tracebacks)."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("DASK_LOGGING")}
    yield
    for key in [k for k in os.environ if k.startswith("DASK_LOGGING")]:
        if key not in saved:
            del os.environ[key]
    os.environ.update(saved)


# -- no process outlives the test module that started it (issue 32) --------------------------
#: Long-lived helpers that Python's and joblib's process pools keep on purpose for the whole
#: interpreter (one each, reused), not processes a test forgot.
_POOL_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver",
                 "multiprocessing.semaphore_tracker", "joblib.externals.loky", "loky.backend")
#: Seconds a process left by a module gets to end by itself (a cluster's workers shutting down
#: after their scheduler closed) before it is killed and reported.
_LEFTOVER_GRACE = 60.0


def _become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``): a
    server that a test's subprocess started and left behind is re-parented here instead of to
    init, where the check below sees it."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _take_back_sigint() -> None:
    """Tests interrupt the commands they start with SIGINT, as Ctrl-C does. A suite started
    where SIGINT is ignored (``&`` in a non-interactive shell, a runner that ignores it) would
    hand that to every child through exec, and the CLI rightly keeps an ignored SIGINT
    ignored: those tests would then wait on a run that goes on. Python's own handler here
    makes the children start with the default again (exec resets handlers, not ignores)."""
    import signal
    import threading

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _compile_kernels_once(config) -> None:
    """On the controller of an xdist run, before its workers start: compile (or load) the
    kernels of a default selection, of automatic k and of the BRkNN-b evaluator in one
    process. From a fresh clone the cache is empty, and every worker and every command a test
    starts would otherwise compile the same kernels at once: the quick benchmark runs alone
    took 143 s (275 CPU-seconds) that way against 70 s after this 12-second compile. A
    failure here is left to the tests to report."""
    import subprocess

    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    try:
        subprocess.run([sys.executable, "-c",
                        "import coreselect; coreselect.warm_up(); import numpy as np; "
                        "from coreselect.selection.autok import brknn_b_prefixes as b; "
                        "list(b(np.eye(3), np.eye(3) > 0, np.eye(3), np.array([1, 3]))); "
                        "from coreselect.evaluation.brknn import BRkNNb; "
                        "BRkNNb().fit(np.eye(3), np.eye(3)).predict(np.eye(3))"],
                       capture_output=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass


def pytest_configure(config):
    config._coreselect_subreaper = _become_subreaper()
    _take_back_sigint()
    _compile_kernels_once(config)
    if _slowest_first(config):
        # xdist's default hands out the files with the most tests first; ours go first instead
        # (see pytest_collection_modifyitems): its own order left a slow file of few tests
        # for the end, with the other worker idle.
        config.option.loadscopereorder = False


# -- the slowest files first under ``-n N --dist loadfile`` ---------------------------------
#: Test files that take the longest, slowest first (seconds of one worker, measured on a busy
#: two-core machine with ``--durations=0``). Under ``--dist loadfile`` a worker takes a whole
#: file; handing out the long ones first leaves only short files for the end, so that both
#: workers finish together. A file missing here runs after these; a name that no longer
#: exists is ignored.
_SLOWEST_FILES = (
    "test_docs.py", "test_benchmarks_smoke.py", "test_io_chunks.py", "test_store_ingest.py",
    "test_option_matrix.py", "test_cluster_failures.py", "test_docs_site.py", "test_remote_s3.py",
    "test_store_ingest_s3.py", "test_remote_hostile.py", "test_fetch_hostile.py",
    "test_hostile_campaign.py", "test_remote_cluster.py", "test_checkpoint.py",
    "test_outputs_signals.py", "test_hostile_tables.py", "test_hostile_store_forgery.py",
    "test_store_resume.py", "test_datasets_load.py", "test_safety_processes.py",
    "test_remote_tempdir.py", "test_cli_progress.py", "test_dask_deadlines.py",
    "test_reference_paths.py", "test_kernels_fast_paths.py", "test_hostile_dask_scheduler.py",
    "test_props_calibration.py", "test_evaluation_protocol.py", "test_distributed.py",
    "test_props_store.py", "test_baselines_mi_methods.py", "test_core_greedy.py",
    "test_safety_exits.py", "test_imports.py", "test_api_seams.py", "test_props_engines.py",
    "test_cli_seams.py", "test_hostile_readers.py", "test_extreme_core.py", "test_error_paths.py",
    "test_hostile_lifecycle.py", "test_dask_rows.py", "test_io_chunks_s3.py", "test_fixed_rate.py",
    "test_io_safety.py",
)


def _slowest_first(config) -> bool:
    """Whether this run hands out whole files (on the controller: its option; on a worker,
    where xdist resets the option, what the controller passed, below)."""
    if hasattr(config, "workerinput"):
        return bool(config.workerinput.get("coreselect_slowest_first"))
    return getattr(config.option, "dist", "no") == "loadfile"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist, on the controller: tell each worker whether to put the slowest files first."""
    node.workerinput["coreselect_slowest_first"] = _slowest_first(node.config)


def pytest_collection_modifyitems(session, config, items):
    """Under ``--dist loadfile`` only: the files of :data:`_SLOWEST_FILES` first, in that
    order; every other file after them in the order xdist would use (most tests first); the
    tests of a file keep their order. Each worker collects the same order, which the
    controller follows."""
    if not _slowest_first(config):
        return
    rank = {name: i for i, name in enumerate(_SLOWEST_FILES)}
    counts: dict[str, int] = {}
    for item in items:
        counts[_file_of(item)] = counts.get(_file_of(item), 0) + 1
    first_seen = {f: i for i, f in enumerate(dict.fromkeys(_file_of(it) for it in items))}

    def key(pair):
        position, item = pair
        name = _file_of(item)
        known = rank.get(Path(name).name)
        return ((0, known, 0) if known is not None else (1, -counts[name], first_seen[name]),
                position)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]


def _file_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


def _is_pool_helper(proc) -> bool:
    try:
        return any(h in " ".join(proc.cmdline()) for h in _POOL_HELPERS)
    except Exception:  # noqa: BLE001 - gone, or no permission: not ours to judge
        return True


def _live_children() -> dict:
    """Descendants of this process that are running (zombies are reaped here on the way:
    orphans re-parented to this subreaper wait for it, as for init)."""
    import psutil

    live = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                if proc.ppid() == os.getpid():
                    try:
                        os.waitpid(proc.pid, os.WNOHANG)
                    except ChildProcessError:
                        pass
                continue
        except psutil.Error:
            continue
        live[proc.pid] = proc
    return live


@pytest.fixture(scope="module", autouse=True)
def _no_process_outlives_its_module(request):
    """After the last test of a module (and its module fixtures' finalizers), every process it
    started has ended; any left is killed (with its children) and fails the module's last test.
    Only where this process is a subreaper (Linux), so that orphans are seen too."""
    if not getattr(request.config, "_coreselect_subreaper", False):
        yield
        return
    import psutil

    before = set(_live_children())
    yield
    left = [p for pid, p in _live_children().items()
            if pid not in before and not _is_pool_helper(p)]
    if not left:
        return
    _, alive = psutil.wait_procs(left, timeout=_LEFTOVER_GRACE)
    if not alive:
        return
    described = []
    for proc in alive:
        try:
            described.append(f"{proc.pid}: {' '.join(proc.cmdline())[:160]}")
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=10)
    _live_children()  # reap them
    pytest.fail(f"{request.module.__name__} left {len(described)} process(es) running after its "
                "tests (killed now): " + "; ".join(described), pytrace=False)
