"""The Dask engine's mapping of cancelled futures to an EngineError (mutation run,
tests/tools/mutation.py), without a cluster: a fake client and a patched result stream.
The real bug it found (the plural FuturesCancelledError escaping as a raw Dask error) is fixed;
the test keeps it fixed."""

from __future__ import annotations

import pytest

from coreselect.errors import EngineError

pytest.importorskip("distributed")
from distributed.client import FuturesCancelledError  # noqa: E402


class _Future:
    def __init__(self, key):
        self.key = key

    def release(self):
        pass


class _Client:
    def submit(self, func, ref, task, key, pure, retries):
        return _Future(key)


def _map_raising(monkeypatch, exc):
    import coreselect.engines.dask as dask_engine

    def cancelled(client, futures, grace=None):
        raise exc
        yield  # pragma: no cover

    monkeypatch.setattr(dask_engine, "as_completed_watched", cancelled)
    engine = dask_engine.DaskEngine.__new__(dask_engine.DaskEngine)
    engine.client = _Client()
    engine._runs = []  # what __init__ sets: the key prefixes settle() waits for
    with pytest.raises(EngineError, match="Dask cluster failed"):
        engine.map(lambda shared, task: task, None, [0, 1])


def test_cancelled_future_is_an_engine_error(monkeypatch):
    from distributed.client import FutureCancelledError

    _map_raising(monkeypatch, FutureCancelledError("coreselect-part-x-0", "cancelled"))


def test_plural_cancelled_error_is_an_engine_error(monkeypatch):
    _map_raising(monkeypatch, FuturesCancelledError([]))


class _DoneFuture(_Future):
    def __init__(self, key, value):
        super().__init__(key)
        self.value = value

    def result(self):
        return self.value


class _ValueClient:
    def submit(self, func, ref, task, key, pure, retries):
        return _DoneFuture(key, task * 10)


def test_results_come_back_in_task_order_whatever_the_completion_order(monkeypatch):
    """The futures finish last first: the results still follow the tasks (a mapping by the
    order of completion gave the parts back reversed, with no error)."""
    import coreselect.engines.dask as dask_engine

    monkeypatch.setattr(dask_engine, "as_completed_watched",
                        lambda client, futures, grace=None: iter(list(futures)[::-1]))
    engine = dask_engine.DaskEngine.__new__(dask_engine.DaskEngine)
    engine.client = _ValueClient()
    engine._runs = []
    monkeypatch.setattr(engine, "settle", lambda *a, **k: None, raising=False)
    assert engine.map(lambda shared, task: task, None, [0, 1, 2, 3]) == [0, 10, 20, 30]
