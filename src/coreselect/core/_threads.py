"""Independent blocks of a compiled (``nogil``) kernel run on several threads.

Python threads rather than numba's ``parallel=True``: no threading layer to pick (the OpenMP
one is not fork-safe, the work-queue one aborts on concurrent calls, as Dask's threads make),
and a kernel stays an ordinary function that the row-sharded and Dask paths call too. Every
block writes its own outputs and nothing is summed across threads, so the results are the same
bits whatever the number of threads.
"""

from __future__ import annotations

import collections
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_lock = threading.Lock()
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_inside = threading.local()


def _after_fork_in_child() -> None:
    # The parent's pool threads do not exist here, and its lock may have been held by one.
    global _lock
    _lock = threading.Lock()
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def n_threads() -> int:
    """Threads the kernels may use: numba's setting (``NUMBA_NUM_THREADS``, or
    ``numba.set_num_threads`` in this thread), without starting numba's threading layer when
    nobody has asked for it (that costs tens of milliseconds)."""
    try:
        import numba
        from numba.np.ufunc import parallel
    except ImportError:  # pragma: no cover - numba is a dependency
        return 1
    if getattr(parallel, "_is_initialized", True):
        return max(1, int(numba.get_num_threads()))
    return max(1, int(numba.config.NUMBA_NUM_THREADS))


def _pool(threads: int) -> ThreadPoolExecutor:
    key = (os.getpid(), threads)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(threads, thread_name_prefix="coreselect",
                                                    initializer=_mark_inside)
        return pool


def _mark_inside() -> None:
    _inside.active = True


def run_blocks(fn: Callable[[int], None], n_blocks: int, threads: int | None = None) -> None:
    """``fn(b)`` for every block ``b < n_blocks``, on up to ``threads`` threads (default
    :func:`n_threads`); serially inside a pool thread (no nested pools) or for one block."""
    threads = n_threads() if threads is None else threads
    threads = min(threads, n_blocks)
    if threads <= 1 or getattr(_inside, "active", False):
        for b in range(n_blocks):
            fn(b)
        return
    for _ in _pool(threads).map(fn, range(n_blocks)):
        pass


def map_ordered(fn: Callable[[T], R], items: Iterable[T], threads: int | None = None,
                ahead: int | None = None) -> Iterator[R]:
    """``fn(item)`` for every item, up to ``threads`` at once (default :func:`n_threads`),
    yielded in the items' order; each call's own blocks run serially (no nested pools).
    Serially, one after another, for one thread or inside a pool thread.

    ``ahead``: at most this many items started and not yet yielded (default: no limit), so
    that at most that many results (a row shard's count tables) are held at once.

    An error is raised where its item's result would have been; the items not started by
    then are not run, and those running are waited for (none writes after this returns)."""
    threads = n_threads() if threads is None else threads
    if threads <= 1 or getattr(_inside, "active", False):
        for item in items:
            yield fn(item)
        return
    pool = _pool(threads)
    limit = max(1, ahead) if ahead is not None else None
    pending: collections.deque = collections.deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if limit is not None and len(pending) >= limit:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        wait(pending)
