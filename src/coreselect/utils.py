"""Small helpers shared across layers (kept free of scikit-learn so the CLI starts fast)."""

from __future__ import annotations

from numbers import Integral

import numpy as np


def check_random_state(seed: None | int | np.random.RandomState) -> np.random.RandomState:
    """The same contract as ``sklearn.utils.check_random_state``: None -> numpy's global
    RandomState, an int -> a new RandomState seeded with it, a RandomState -> itself."""
    if seed is None or seed is np.random:
        return np.random.mtrand._rand
    if isinstance(seed, Integral) and not isinstance(seed, bool):
        return np.random.RandomState(int(seed))
    if isinstance(seed, np.random.RandomState):
        return seed
    raise ValueError(f"{seed!r} cannot be used to seed a numpy.random.RandomState instance")


def die_with_parent(parent_pid: int) -> None:
    """In a pool worker: be killed (SIGKILL) when the process that started it dies, even by
    SIGKILL, which leaves it no chance to stop its pool (Linux ``PR_SET_PDEATHSIG``; the
    pool's own shutdown covers every other exit). A parent already gone: exit now."""
    import os
    import signal
    import sys

    if os.getpid() == parent_pid:  # run in the parent itself (a thread pool): nothing to outlive
        return
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass
    if os.getppid() != parent_pid:  # it died before prctl took effect
        os._exit(1)
