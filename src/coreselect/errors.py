"""Typed exceptions of coreselect.

Every error a user can cause by bad input, bad parameters or a bad environment derives
from :class:`CoreselectError`; the CLI turns each into one line on stderr and exit code 2.

As in scikit-learn (whose ``InvalidParameterError`` is both a ``ValueError`` and a
``TypeError``), each type also subclasses the builtin a Python user expects, so both
``except coreselect.errors.DatasetError`` and ``except ValueError`` catch a malformed file:

==========================  =====================================
coreselect type             also a
==========================  =====================================
``InputError``              ``ValueError``
``ParameterError``          ``ValueError``, ``TypeError`` (like sklearn's)
``CheckpointError``         ``ValueError`` (via InputError)
``InputTypeError``          ``TypeError``
``LimitError``              ``ValueError``, ``MemoryError``
``DatasetError``            ``ValueError``
``FetchError``              ``ValueError`` (via DatasetError), ``OSError``
``OutputError``             ``OSError``
``EngineError``             ``RuntimeError``
``StoreError``              ``RuntimeError`` (via EngineError)
==========================  =====================================
"""

from __future__ import annotations

__all__ = [
    "CoreselectError",
    "InputError",
    "ParameterError",
    "CheckpointError",
    "InputTypeError",
    "LimitError",
    "DatasetError",
    "FetchError",
    "OutputError",
    "EngineError",
    "StoreError",
]


class CoreselectError(Exception):
    """Base class of all errors that bad input, bad parameters or the environment cause."""


class InputError(CoreselectError, ValueError):
    """The data handed to an algorithm is unusable (NaN, no labels, k too large, ...)."""


class ParameterError(InputError, TypeError):
    """A parameter has a wrong value or type (scikit-learn's ``InvalidParameterError`` role)."""


class CheckpointError(InputError):
    """A run's checkpoint cannot be resumed: written for another dataset, spec, coreselect
    version or format, or damaged (truncated, altered). The message names what differs."""


class InputTypeError(CoreselectError, TypeError):
    """An argument has the wrong type (e.g. a string where an array is expected)."""


class LimitError(InputError, MemoryError):
    """An input declares more than it can plausibly hold, or more than memory allows.

    Raised *before* allocating ("declares 10^8 features but holds 1 value; refusing").
    """


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

    def __reduce__(self):  # picklable across processes (Dask workers, joblib)
        return (_rebuild, (type(self), self.__dict__.copy(), str(self)))


class FetchError(DatasetError, OSError):
    """A download failed: network error, HTTP status, deadline, size cap or checksum."""

    def __str__(self) -> str:  # OSError's __str__ would print "[Errno ...]" forms
        return Exception.__str__(self)


class OutputError(CoreselectError, OSError):
    """An output file could not be written; the message names the user's path, never a temp file.

    ``errno`` and ``filename`` are those of the failed write, with ``filename`` the path the
    user named.
    """

    def __init__(self, path: str, reason: str, errno: int | None = None):
        super().__init__(f"cannot write {path}: {reason}")
        self.errno = errno
        self.strerror = reason
        self.filename = str(path)

    def __str__(self) -> str:
        return Exception.__str__(self)

    def __reduce__(self):
        state = {**self.__dict__, "errno": self.errno, "strerror": self.strerror, "filename": self.filename}
        return (_rebuild, (type(self), state, str(self)))


class EngineError(CoreselectError, RuntimeError):
    """A distributed engine or column store failed (unreachable scheduler, bad store, ...)."""


class StoreError(EngineError):
    """A column store is missing, corrupt or inconsistent; the message names the block."""

    def __init__(self, message: str, path: str | None = None, block: str | int | None = None):
        self.path = path
        self.block = block
        where = ""
        if path is not None:
            where = f"{path}"
            if block is not None:
                where += f" (block {block})"
            where += ": "
        elif block is not None:
            where = f"block {block}: "
        super().__init__(where + message)

    def __reduce__(self):
        return (_rebuild, (type(self), self.__dict__.copy(), str(self)))


def _rebuild(cls: type, state: dict, message: str) -> BaseException:
    # Exceptions with keyword-only state do not survive the default pickling (args != init args).
    exc = (OSError if issubclass(cls, OSError) else BaseException).__new__(cls)
    BaseException.__init__(exc, message)
    for key, value in state.items():
        setattr(exc, key, value)
    return exc
