"""In-process engine, or a local process pool when ``n_workers`` is given."""

from __future__ import annotations

import contextlib
import os
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Sequence

from coreselect.engines.base import Engine, ResultCallback, TaskCallback, map_in_order

_SHARED: Any = None  # the shared data reference inside a pool worker


def _init_worker(shared: Any, parent_pid: int | None = None) -> None:
    global _SHARED
    _SHARED = shared
    if parent_pid is not None:  # a SIGKILLed parent must not leave its workers running
        from coreselect.utils import die_with_parent

        die_with_parent(parent_pid)
    # A forked worker inherits the CLI's SIGTERM handler (raise, unwind, clean up): in a
    # worker that makes SIGTERM (a process-group kill, or the pool's own terminate()) raise
    # inside the pool's queue code, where it can die holding the result queue's lock and hang
    # the parent. Workers die at once on SIGTERM and leave Ctrl-C (SIGINT, sent to the whole
    # group) to the parent, which stops them.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # One task per process: keep BLAS/OpenMP pools from oversubscribing the cores.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:  # pools already loaded (a forked worker) are limited directly
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover - comes with scikit-learn
        pass


def _call(func: Callable, task: Any) -> Any:
    return func(_SHARED, task)


class LocalEngine(Engine):
    """Run tasks one after another in this process (``n_workers`` None or 1), or in a pool of
    ``n_workers`` processes that each receive the shared data once (at start-up)."""

    name = "local"

    def __init__(self, n_workers: int | None = None):
        self.n_workers = None if n_workers is None or int(n_workers) <= 1 else int(n_workers)

    def map(self, func: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any],
            callback: TaskCallback | None = None,
            on_result: ResultCallback | None = None) -> list[Any]:
        tasks = list(tasks)
        if self.n_workers is None or len(tasks) <= 1:
            return map_in_order(func, shared, tasks, callback, on_result)
        results: list[Any] = [None] * len(tasks)
        pool = ProcessPoolExecutor(max_workers=self.n_workers, initializer=_init_worker,
                                   initargs=(shared, os.getpid()))
        try:
            futures = {pool.submit(_call, func, t): i for i, t in enumerate(tasks)}
            for done, fut in enumerate(as_completed(futures), start=1):
                results[futures[fut]] = fut.result()
                if on_result is not None:
                    on_result(futures[fut], results[futures[fut]])
                if callback is not None:
                    callback(done, len(tasks))
        except BaseException:
            # Interrupted or failed: stop the workers now rather than wait for their tasks.
            procs = list((getattr(pool, "_processes", None) or {}).values())
            for proc in procs:
                with contextlib.suppress(Exception):
                    proc.terminate()
            for proc in procs:  # gone before the caller cleans up what the tasks wrote
                with contextlib.suppress(Exception):
                    proc.join(10)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return results

    def describe(self) -> dict:
        return {"engine": self.name, "n_workers": self.n_workers or 1}
