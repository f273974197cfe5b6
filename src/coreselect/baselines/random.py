"""The ``random`` baseline: a uniformly random ranking (a sanity floor for the others)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from coreselect.baselines.transform import RankingSelector

__all__ = ["RandomSelector"]


class RandomSelector(RankingSelector):
    """Select ``k`` features uniformly at random.

    Parameters
    ----------
    k : int, default=10
    random_state : int, RandomState or None
    """

    def __init__(self, k: int = 10, random_state=None):
        super().__init__(k=k)
        self.random_state = random_state

    def _scores(self, X, Y) -> np.ndarray:
        return check_random_state(self.random_state).permutation(X.shape[1]).astype(np.float64)
