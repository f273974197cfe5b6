"""Shared CLI plumbing: one-line errors with exit code 2, atomic output files, progress bars."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import click

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


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator:
    """Write to a temporary file beside ``path`` and rename it into place only on success.

    A failure (or exit) inside the block removes the temporary file, so a partial output
    file never exists under the final name.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Like :func:`atomic_output` for writers that want a path (pandas, pyarrow, matplotlib)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def progress_bar(total: int, desc: str, enabled: bool = True):
    """A tqdm bar on stderr; returns an object with ``update(n)`` and ``close()``."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False, file=sys.stderr)
