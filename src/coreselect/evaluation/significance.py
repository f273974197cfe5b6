"""Comparing several methods over many cells (data sets, or data set x measure x k): average
ranks, the Friedman test and the Nemenyi critical difference (Demšar, JMLR 7, 2006).

Each cell ranks the methods by their score (1 = best; tied scores share the mean of the ranks
they span). With ``N`` cells and ``k`` methods of average ranks ``R_j``:

* Friedman's statistic ``chi2_F = 12 N / (k (k + 1)) * (sum_j R_j^2 - k (k + 1)^2 / 4)``,
  chi-square with ``k - 1`` degrees of freedom under the null hypothesis that all methods are
  equivalent; Iman and Davenport's ``F_F = (N - 1) chi2_F / (N (k - 1) - chi2_F)``, F with
  ``(k - 1, (k - 1)(N - 1))`` degrees of freedom (less conservative, what Demšar recommends);
* two methods differ significantly (Nemenyi post-hoc test) when their average ranks differ by
  at least ``CD = q_alpha sqrt(k (k + 1) / (6 N))``, where ``q_alpha`` is the studentized range
  statistic (infinite degrees of freedom) over ``sqrt 2``.

Cells are not independent when they share a data set (several measures, k or evaluators of one
set): the p-values then overstate the evidence; read them as a summary, as the field does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Friedman", "average_ranks", "cell_ranks", "friedman", "nemenyi_cd", "nemenyi_q"]


def cell_ranks(scores: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Ranks of the methods (columns) within every cell (row): 1 = best, ties share the mean."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError("scores must be 2-D (cells, methods)")
    if np.isnan(scores).any():
        raise ValueError("scores hold NaN: keep only cells where every method has a score")
    return stats.rankdata(-scores if higher_is_better else scores, axis=1)


def average_ranks(scores: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Mean over cells of :func:`cell_ranks`: one average rank per method."""
    return cell_ranks(scores, higher_is_better).mean(axis=0)


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """``q_alpha`` of the Nemenyi test for ``k`` methods (Demšar's Table 5a at alpha 0.05:
    1.960 for 2 methods, 3.164 for 10)."""
    if k < 2:
        raise ValueError("the Nemenyi test compares at least two methods")
    return float(stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2))


def nemenyi_cd(k: int, n_cells: int, alpha: float = 0.05) -> float:
    """The critical difference of average ranks for ``k`` methods over ``n_cells`` cells."""
    return nemenyi_q(k, alpha) * float(np.sqrt(k * (k + 1) / (6.0 * n_cells)))


@dataclass(frozen=True)
class Friedman:
    """The Friedman test and the Nemenyi critical difference of one table of scores."""

    ranks: np.ndarray  #: average rank per method (1 = best)
    n_cells: int
    chi2: float  #: Friedman's chi-square statistic
    p_chi2: float
    f: float  #: Iman and Davenport's F statistic
    p_f: float
    cd: float  #: Nemenyi critical difference at ``alpha``
    alpha: float


def friedman(scores: np.ndarray, higher_is_better: bool = True, alpha: float = 0.05) -> Friedman:
    """Average ranks, Friedman's test and the Nemenyi CD of ``scores`` (cells x methods)."""
    ranks = average_ranks(scores, higher_is_better)
    n, k = np.asarray(scores).shape
    if n < 2 or k < 2:
        raise ValueError("the Friedman test needs at least two cells and two methods")
    chi2 = 12.0 * n / (k * (k + 1)) * (float(np.sum(ranks ** 2)) - k * (k + 1) ** 2 / 4.0)
    den = n * (k - 1) - chi2
    f = (n - 1) * chi2 / den if den > 0 else np.inf
    p_f = float(stats.f.sf(f, k - 1, (k - 1) * (n - 1))) if np.isfinite(f) else 0.0
    return Friedman(ranks=ranks, n_cells=n, chi2=float(chi2), p_chi2=float(stats.chi2.sf(chi2, k - 1)),
                    f=float(f), p_f=p_f, cd=nemenyi_cd(k, n, alpha), alpha=alpha)
