"""Typed exceptions of coreselect.

Every error a user can cause by bad input derives from :class:`CoreselectError`;
the CLI turns each into one line on stderr and exit code 2.
"""

from __future__ import annotations


class CoreselectError(Exception):
    """Base class of all errors that bad input or bad parameters cause."""


class InputError(CoreselectError, ValueError):
    """The data handed to an algorithm is unusable (NaN, no labels, k too large, ...)."""


class DatasetError(CoreselectError, ValueError):
    """A dataset file or name could not be read; the message names the file and line."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)


class EngineError(CoreselectError, RuntimeError):
    """A distributed engine or column store failed (unreachable scheduler, bad store, ...)."""
