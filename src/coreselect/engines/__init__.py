"""Execution engines for Algorithm 3: ``local`` (in-process or process pool), ``stream``
(a block per kernel thread at a time, in this process), ``dask`` (dask.distributed). New engines (Ray, Spark) implement
:class:`~coreselect.engines.base.Engine` and register in :func:`make_engine`."""

from __future__ import annotations

from typing import Any

from coreselect.engines.base import Engine
from coreselect.errors import InputError

ENGINES = ("local", "dask")


def make_engine(engine: str, *, mode: str = "distributed", n_workers: int | None = None,
                client: Any = None, scheduler: str | None = None) -> Engine:
    """The engine for a mode: ``streaming`` always runs in this process, a block per kernel thread at a time;
    ``distributed`` uses ``engine``."""
    if mode == "streaming":
        from coreselect.engines.stream import StreamEngine

        return StreamEngine()
    if engine == "local":
        if client is not None or scheduler:
            raise InputError("a Dask client or scheduler address needs engine='dask'")
        from coreselect.engines.local import LocalEngine

        return LocalEngine(n_workers)
    if engine == "dask":
        from coreselect.engines.dask import DaskEngine

        return DaskEngine(client=client, scheduler=scheduler, n_workers=n_workers)
    raise InputError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


__all__ = ["Engine", "ENGINES", "make_engine"]
