"""Shared fixtures. Real datasets come from $COREDATA (default ../shared/data beside the repo).

Every test that needs real data goes through :func:`coredata` (or :func:`require_data_files`):
on a developer machine without the data they skip with the reason; where skipping would hide
a regression (``CORESELECT_REQUIRE_DATA=1``, which ``.ci/run`` exports, or ``CI=true`` as
set by hosted CI) they fail instead.

Hypothesis runs under one of two profiles (issue 16: the test command must pass every time
from a fresh clone):

* ``ci`` (the default): derandomized (the examples are a fixed function of each test), no
  example database (nothing a past run saved is replayed), ``print_blob=True`` (a failure
  prints the ``@reproduce_failure`` line). ``python -m pytest -n 2 --dist loadfile -q`` runs
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
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

REPO_ROOT = Path(__file__).resolve().parents[1]
_TRUE = ("1", "true", "yes", "on")

settings.register_profile("ci", database=None, derandomize=True, print_blob=True)
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
