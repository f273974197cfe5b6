"""A local process pool gives its results back in the order of the tasks, whatever order they
finish in (the selection's parts are merged by position)."""

from __future__ import annotations

import time

from coreselect.engines.local import LocalEngine


def _sleep_then_name(shared, task):
    name, seconds = task
    time.sleep(seconds)
    return name


def test_local_pool_results_follow_the_tasks_not_the_finish_order():
    # the first task finishes last on two workers
    tasks = [("a", 1.0), ("b", 0.0), ("c", 0.0), ("d", 0.0)]
    assert LocalEngine(n_workers=2).map(_sleep_then_name, None, tasks) == ["a", "b", "c", "d"]
