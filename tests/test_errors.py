"""Every coreselect error type is also the builtin a Python user expects (as scikit-learn's are),
so that both `except coreselect.errors.X` and `except ValueError` (etc.) catch it; all pickle."""

from __future__ import annotations

import errno
import pickle

import pytest

from coreselect import errors
from coreselect.errors import (
    CheckpointError,
    CoreselectError,
    DatasetError,
    EngineError,
    FetchError,
    InputError,
    InputTypeError,
    LimitError,
    OutputError,
    ParameterError,
    StoreError,
)

EXPECTED = {
    InputError: (ValueError,),
    ParameterError: (ValueError, TypeError, InputError),
    CheckpointError: (ValueError, InputError),
    InputTypeError: (TypeError,),
    LimitError: (ValueError, MemoryError, InputError),
    DatasetError: (ValueError,),
    FetchError: (ValueError, OSError, DatasetError),
    OutputError: (OSError,),
    EngineError: (RuntimeError,),
    StoreError: (RuntimeError, EngineError),
}

SAMPLES = [
    InputError("k=5 is larger than the number of features (4)"),
    ParameterError("lam must lie in [0, 1], got 2"),
    InputTypeError("X must be an array, got str"),
    CheckpointError("checkpoint run.ckpt is of another run (k 3 there, 4 here)"),
    LimitError("declares 100000000 features but holds 1 value; refusing"),
    DatasetError("not a number: 'abc'", path="data.arff", line=12),
    FetchError("checksum mismatch"),
    OutputError("/dev/full", "No space left on device", errno.ENOSPC),
    EngineError("scheduler unreachable"),
    StoreError("checksum mismatch", path="st", block=3),
]


def test_every_public_type_is_listed():
    public = {getattr(errors, n) for n in errors.__all__}
    assert public == set(EXPECTED) | {CoreselectError}


@pytest.mark.parametrize("exc", SAMPLES, ids=lambda e: type(e).__name__)
def test_both_except_clauses_catch(exc):
    for base in (CoreselectError, type(exc), *EXPECTED[type(exc)]):
        with pytest.raises(base):
            raise exc


@pytest.mark.parametrize("exc", SAMPLES, ids=lambda e: type(e).__name__)
def test_pickles_with_message_and_fields(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc)
    for field in ("path", "line", "block", "errno", "filename", "strerror"):
        if hasattr(exc, field):
            assert getattr(back, field) == getattr(exc, field), field


def test_messages_name_the_place():
    assert str(DatasetError("bad cell", path="x.csv", line=3)) == "x.csv:3: bad cell"
    assert str(DatasetError("bad")) == "bad"
    e = StoreError("indptr not monotone", path="/data/st", block="b00002")
    assert str(e) == "/data/st (block b00002): indptr not monotone" and e.block == "b00002"
    assert str(StoreError("truncated", block=7)) == "block 7: truncated"
    out = OutputError("/mnt/ro/out.json", "Read-only file system", errno.EROFS)
    assert str(out) == "cannot write /mnt/ro/out.json: Read-only file system"
    assert out.errno == errno.EROFS and out.filename == "/mnt/ro/out.json"
    assert str(FetchError("download failed")) == "download failed"  # not OSError's "[Errno ...]"


def test_sklearn_and_coreselect_parameter_errors_agree():
    validation = pytest.importorskip("sklearn.utils._param_validation")
    for base in validation.InvalidParameterError.__mro__[1:3]:
        assert issubclass(ParameterError, base)
