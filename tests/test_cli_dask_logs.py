"""Without -v, Dask's own logs stay off stderr (a lost scheduler is our one line, not Dask's
tracebacks); with -v they come back at WARNING; a user's own Dask logging config is kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = """
import logging, sys
from coreselect.cli._common import quiet_dask, log_to_stderr
quiet_dask()
if sys.argv[1] == "verbose":
    log_to_stderr()
import distributed  # noqa: F401 - reads the logging config when imported
print(min(logging.getLogger(n).getEffectiveLevel() for n in
          ("distributed", "distributed.client", "distributed.scheduler", "distributed.worker")))
"""


def _level(how: str, **env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DASK_LOGGING")}
    out = subprocess.run([sys.executable, "-c", _PROBE, how], capture_output=True, text=True,
                         env={**clean, **env}, timeout=120, check=True)
    return int(out.stdout.strip())


@pytest.mark.parametrize("how, expected", [("quiet", 50), ("verbose", 30)])
def test_dask_logs_follow_verbosity(how, expected):
    assert _level(how) == expected


def test_a_users_dask_logging_is_kept():
    assert _level("quiet", DASK_LOGGING__DISTRIBUTED="debug") <= 10


def test_a_command_called_from_python_leaves_the_environment(tmp_path, capsys):
    """``main([...])`` from a script: the Dask logging variables a command sets (quietly, or
    with -v) are gone afterwards, and one the caller had set is as it was."""
    from coreselect.cli import main

    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "".join(f"{i % 3},{i % 5},{i % 2}\n" for i in range(40)))
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("DASK_LOGGING")}
    try:
        for extra, before in (([], {}), (["-v"], {}),
                              (["-v"], {"DASK_LOGGING__DISTRIBUTED": "debug"})):
            os.environ.update(before)
            with pytest.raises(SystemExit) as exc:
                main(["select", str(data), "--labels", "y", "-k", "1", "--json", *extra])
            assert exc.value.code == 0, capsys.readouterr().err
            assert {k: v for k, v in os.environ.items() if k.startswith("DASK_LOGGING")} == before
            for key in before:
                del os.environ[key]
    finally:
        os.environ.update(saved)
