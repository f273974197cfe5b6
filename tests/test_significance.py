"""Average ranks, the Friedman test and the Nemenyi critical difference against slow
references written from the formulas (Demšar, JMLR 2006), and against the paper's own numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coreselect.evaluation.significance import cell_ranks, friedman, nemenyi_cd, nemenyi_q


def _slow_ranks(row: list[float]) -> list[float]:
    """Rank of each score: 1 + the number of better scores + half the number of equal others."""
    return [1 + sum(o > s for o in row) + 0.5 * (sum(o == s for o in row) - 1) for s in row]


def _slow_friedman(scores: list[list[float]]) -> tuple[list[float], float, float]:
    """Average ranks, chi2_F in its sum-of-rank-sums form and F_F, by loops."""
    n, k = len(scores), len(scores[0])
    sums = [0.0] * k
    for row in scores:
        for j, r in enumerate(_slow_ranks(row)):
            sums[j] += r
    chi2 = 12.0 / (n * k * (k + 1)) * sum(s * s for s in sums) - 3.0 * n * (k + 1)
    f = (n - 1) * chi2 / (n * (k - 1) - chi2) if n * (k - 1) - chi2 > 0 else math.inf
    return [s / n for s in sums], chi2, f


@given(st.integers(2, 12).flatmap(lambda k: st.lists(
    st.lists(st.integers(0, 4), min_size=k, max_size=k), min_size=2, max_size=15)))
def test_friedman_matches_the_formulas(scores):
    """Small integer scores, so ties are common: the mean-rank rule and both statistics."""
    ranks, chi2, f = _slow_friedman(scores)
    got = friedman(np.array(scores, dtype=float))
    np.testing.assert_allclose(got.ranks, ranks, atol=1e-12)
    assert got.chi2 == pytest.approx(chi2, abs=1e-9)
    if math.isfinite(f):
        assert got.f == pytest.approx(f, rel=1e-9, abs=1e-9)
    k = len(scores[0])
    assert got.cd == pytest.approx(nemenyi_q(k) * math.sqrt(k * (k + 1) / (6 * len(scores))))


def test_lower_is_better_reverses_the_ranks():
    s = np.array([[0.1, 0.5, 0.3], [0.2, 0.2, 0.9]])
    np.testing.assert_allclose(cell_ranks(s), [[3, 1, 2], [2.5, 2.5, 1]])
    np.testing.assert_allclose(cell_ranks(s, higher_is_better=False), [[1, 3, 2], [1.5, 1.5, 3]])


def test_nemenyi_q_is_demsar_table_5a():
    table = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    # the table's third decimals are cut, not rounded, in two places (2.3437, 2.9483)
    np.testing.assert_allclose([nemenyi_q(k) for k in range(2, 11)], table, atol=1e-3)


def test_demsar_worked_example():
    """Section 3.2.4 of the paper: four methods on 14 data sets with average ranks 3.143, 2.000,
    2.893 and 1.964 give chi2_F = 9.28, F_F = 3.69 and CD = 1.25 at alpha 0.05."""
    ranks = np.array([3.143, 2.000, 2.893, 1.964])
    n, k = 14, 4
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(ranks ** 2) - k * (k + 1) ** 2 / 4)
    assert round(chi2, 2) == 9.28
    assert round((n - 1) * chi2 / (n * (k - 1) - chi2), 2) == 3.69
    assert round(nemenyi_cd(k, n), 2) == 1.25
    # the p-values the paper quotes: 0.026 for chi2_F (3 df), about 0.02 for F_F (3, 39 df)
    from scipy import stats
    assert round(float(stats.chi2.sf(9.28, 3)), 3) == 0.026


def test_refuses_nan_and_degenerate_tables():
    with pytest.raises(ValueError):
        friedman(np.array([[0.1, np.nan], [0.2, 0.3]]))
    with pytest.raises(ValueError):
        friedman(np.array([[0.1, 0.2]]))
