"""Which kernels run: the compiled (numba) ones or the numpy twins.

Below both :mod:`coreselect.core.discretize` and :mod:`coreselect.core.entropy`, which each
ask it, so neither has to import the other for it.
"""

from __future__ import annotations

import os
from typing import Literal

Backend = Literal["auto", "numba", "numpy"]


def numba_enabled(backend: Backend) -> bool:
    """Whether ``backend`` runs the compiled kernels: ``"numpy"`` never; ``"auto"`` when numba
    imports and ``CORESELECT_NUMBA`` is not ``"0"``; ``"numba"`` always (its ImportError
    propagates)."""
    if backend == "numpy":
        return False
    if backend == "auto" and os.environ.get("CORESELECT_NUMBA", "1") == "0":
        return False
    try:
        from coreselect.core import _numba  # noqa: F401
    except ImportError:
        if backend == "numba":
            raise
        return False
    return True
