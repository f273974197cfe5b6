"""``CalibratedGDS``: centralized GDS with a chosen calibration, for the evaluation harness.

It is :func:`coreselect.selection.select` in centralized mode with a chosen calibration, plus
what the protocol needs to treat a calibrated selection as a ranking (fit once per fold).
"""

from __future__ import annotations

import numpy as np

from coreselect.core.objective import (AUTO, DEFAULT_CALIBRATION, SHARED_INFORMATION,
                                       accepted_calibrations)
from coreselect.errors import InputError

__all__ = ["CalibratedGDS"]


class CalibratedGDS:
    """Minimal selector: ``fit(X, Y)`` sets ``selected_`` (selection order) and ``seconds_``.

    Parameters are those of :class:`coreselect.GDSSelector` (centralized mode) plus
    ``calibration`` (``"auto"``, the default, or one of
    :data:`coreselect.core.objective.CALIBRATIONS` and ``CONDITIONAL``).

    The calibrated step scores do not involve ``k`` (only the paper's coefficient
    ``k(k-1)/(2p|L|)`` does), so for a calibration other than ``"paper"`` with a given ``p``
    the selection of ``k`` features is exactly the first ``k`` of the selection of any larger
    number: the protocol may then treat it as a ranker (``ranking_``) and fit once per fold.
    ``"information"``'s own ``p`` grows with ``k`` on data with few labels
    (:func:`coreselect.core.objective.default_p`), so without a given ``p`` it (and ``"auto"``,
    which may take it) is fit for each ``k``, as a user asking for that ``k`` gets it.
    """

    def __init__(self, k: int = 10, *, lam: float | None = 0.5, p: int | None = None,
                 relevance: str | None = "mi",
                 calibration: str = DEFAULT_CALIBRATION, n_bins: int | str = "auto", strategy: str = "auto",
                 min_bin_count: int = 10, random_state=None):
        if calibration not in accepted_calibrations():
            raise InputError(f"unknown calibration {calibration!r}; choose from "
                             f"{accepted_calibrations()}")
        self.k, self.lam, self.p, self.relevance = k, lam, p, relevance
        self.calibration = calibration
        self.n_bins, self.strategy, self.min_bin_count = n_bins, strategy, min_bin_count
        self.random_state = random_state

    @property
    def is_ranker(self) -> bool:
        if self.calibration in (AUTO, *SHARED_INFORMATION) and self.p is None:
            return False
        return self.calibration != "paper"

    @property
    def ranking_(self) -> np.ndarray:
        return self.selected_

    def fit(self, X, Y) -> "CalibratedGDS":
        from coreselect.selection import select

        weights = {name: value for name, value in
                   (("lam", self.lam), ("p", self.p), ("relevance", self.relevance))
                   if value is not None}  # None: the calibration's own (cmim has none)
        result = select(X, Y, k=self.k, calibration=self.calibration, n_bins=self.n_bins,
                        strategy=self.strategy, min_bin_count=self.min_bin_count, **weights)
        self.result_ = result
        self.selected_ = np.asarray(result.selected, dtype=np.int64)
        self.seconds_ = result.seconds
        return self


class TunedGDS:
    """``gds-tuned``: centralized GDS whose objective's form is chosen on the training rows
    among :data:`coreselect.tuning.CANDIDATES` (:func:`coreselect.tuning.tune`); a ranker (the
    chosen candidate's order up to ``k``). ``k="auto"``: the cap of :mod:`coreselect.selection.autok`,
    then that module's rule on the chosen order."""

    is_ranker = True

    def __init__(self, k: int | str = 10, random_state=None):
        self.k, self.random_state = k, random_state

    @property
    def ranking_(self) -> np.ndarray:
        return self.order_

    def fit(self, X, Y) -> "TunedGDS":
        import time

        from coreselect.selection.autok import auto_cap, choose_k
        from coreselect.tuning import tune

        start = time.perf_counter()
        auto = self.k == "auto"
        cap = auto_cap(X) if auto else int(self.k)  # as for every ranking in evaluate
        self.tuned_ = tune(X, Y, cap)
        self.order_ = self.tuned_.order
        self.choice_ = self.tuned_.choice
        self.selected_ = (self.order_[:choose_k(X, Y, self.order_).k] if auto
                          else self.order_[:cap])
        self.seconds_ = time.perf_counter() - start
        return self
