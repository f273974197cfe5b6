"""Streaming engine: the parts of Algorithm 3 run in this process, as many at a time as the
kernels have threads (``NUMBA_NUM_THREADS``; one: strictly one after another).

Each task loads its own block (from the column store: a memory-mapped slice), runs Greedy,
and returns only the few selected columns; the block is dropped as soon as its part is done.
So memory holds one block per thread plus the union of the selections so far, never the whole
matrix. Parts are independent and results come back in task order, so the selection is the
same bits with any number of threads.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from coreselect.engines.base import Engine, ResultCallback, TaskCallback, map_in_order


class StreamEngine(Engine):
    """A few blocks at a time (one per kernel thread), in this process, results in task
    order. A part's own kernels then run on its thread alone: the greedy steps of a part are
    too short to share out, and parts side by side keep every core busy."""

    name = "stream"

    def map(self, func: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any],
            callback: TaskCallback | None = None,
            on_result: ResultCallback | None = None) -> list[Any]:
        return map_in_order(func, shared, tasks, callback, on_result, threads=None)
