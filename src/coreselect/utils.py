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
