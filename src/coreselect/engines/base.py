"""The small interface every execution engine implements.

Algorithm 3 (:mod:`coreselect.selection.distributed`) is written once against :class:`Engine`: it maps
a pure part task over the parts and gets the results back in task order. An engine only
decides *where* the tasks run (this process, a process pool, a Dask cluster, later Ray or
Spark). Engines are context managers so that clusters they start are always shut down.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, Sequence

#: ``progress(done, total)`` after each finished task.
TaskCallback = Callable[[int, int], None]
#: ``on_result(task_index, result)`` as each task finishes, in this process (to record it).
ResultCallback = Callable[[int, Any], None]


class Engine(abc.ABC):
    """Runs ``func(shared, task)`` for every task and returns the results in task order.

    ``shared`` is the read-only data every task needs (a column store reference, or an
    in-memory problem). Engines ship it to their workers once, not once per task; shared data
    with a true ``is_reference`` attribute is small enough to travel inside every task.
    """

    name: str = "engine"

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release what the engine started (pools, clusters). Idempotent."""

    @abc.abstractmethod
    def map(self, func: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any],
            callback: TaskCallback | None = None,
            on_result: ResultCallback | None = None) -> list[Any]:
        """``[func(shared, t) for t in tasks]``, possibly in parallel, results in task order;
        ``on_result(i, result)`` is called in this process as task ``i`` finishes."""

    def describe(self) -> dict:
        """A small JSON-able description for results and logs."""
        return {"engine": self.name}


def map_in_order(func: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any],
                 callback: TaskCallback | None = None,
                 on_result: ResultCallback | None = None, threads: int = 1) -> list[Any]:
    """Run the tasks in this process, ``threads`` at a time (one: one after another; None:
    one per kernel thread, :func:`coreselect.core._threads.n_threads`), results and callbacks
    in task order. A task's arrays are freed by reference counting as soon as it returns, so
    memory holds ``threads`` tasks' data at a time (a full ``gc.collect()`` per task cost two
    thirds of a streaming run at d = 10^6)."""
    from coreselect.core._threads import map_ordered

    tasks = list(tasks)
    out = []
    for i, result in enumerate(map_ordered(lambda task: func(shared, task), tasks, threads)):
        out.append(result)
        if on_result is not None:
            on_result(i, result)
        if callback is not None:
            callback(i + 1, len(tasks))
    return out
