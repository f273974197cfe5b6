"""Shared CLI plumbing: one-line errors with exit code 2, progress bars."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Callable

import click

from coreselect.files import atomic_output, atomic_path  # noqa: F401 - re-exported for the commands

EXIT_BAD_INPUT = 2


def fail(message: str) -> None:
    """Print one line on stderr and exit with code 2 (never a traceback)."""
    click.echo(f"coreselect: error: {' '.join(str(message).split())}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def handle_errors(func: Callable) -> Callable:
    """Turn every user-caused error into one line on stderr and exit code 2."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from coreselect.errors import CoreselectError

        try:
            return func(*args, **kwargs)
        except CoreselectError as exc:
            fail(str(exc))
        except ValueError as exc:
            # scikit-learn's parameter errors (InvalidParameterError is a ValueError); sklearn
            # is not imported here so that commands that do not need it start fast.
            validation = sys.modules.get("sklearn.utils._param_validation")
            if validation is not None and isinstance(exc, validation.InvalidParameterError):
                fail(str(exc))
            raise
        except FileNotFoundError as exc:
            fail(f"no such file: {exc.filename or exc}")
        except (IsADirectoryError, PermissionError) as exc:
            fail(f"cannot read {exc.filename or ''}: {exc.strerror or exc}")
        except MemoryError:
            fail("out of memory; try the streaming or distributed mode, or fewer features per block")

    return wrapper


def progress_bar(total: int, desc: str, enabled: bool = True):
    """A tqdm bar on stderr; returns an object with ``update(n)`` and ``close()``."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False, file=sys.stderr)
