"""Streaming engine: parts are processed strictly one after another in this process.

Each task loads its own block (from the column store: a memory-mapped slice), runs Greedy,
and returns only the few selected columns; the block is dropped before the next one is read.
So memory holds one block plus the union of the selections so far, never the whole matrix.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from coreselect.engines.base import Engine, ResultCallback, TaskCallback, map_in_order


class StreamEngine(Engine):
    """One block at a time, in this process, in task order."""

    name = "stream"

    def map(self, func: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any],
            callback: TaskCallback | None = None,
            on_result: ResultCallback | None = None) -> list[Any]:
        return map_in_order(func, shared, tasks, callback, on_result)
