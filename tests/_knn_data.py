"""Columns for the neighbour-search tests (BRkNN-b's evaluator and automatic k's step): the
kinds that make a k-nearest-neighbour search hard to get exactly right."""

from __future__ import annotations

import numpy as np

#: binary and few-valued columns (many ties at the k-th distance), real columns of scales
#: 1e-3 to 1e3, constant columns (every training row at distance 0: all are neighbours)
KINDS = ("binary", "codes", "real", "constant")


def neighbour_columns(rng: np.random.Generator, shape: tuple[int, int], kind: str) -> np.ndarray:
    """A float64 matrix of ``shape`` whose columns are of ``kind`` (one of :data:`KINDS`)."""
    make = {"binary": lambda: rng.random(shape) < 0.3,
            "codes": lambda: rng.integers(0, 4, shape),
            "real": lambda: rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4, shape[1]),
            "constant": lambda: np.ones(shape)}[kind]
    return make().astype(np.float64)
