"""Baselines on columns of every sign, as properties of their definitions.

The dimension that varies is the kind of each column: all positive with a positive minimum,
all negative, mixed sign, constant (positive, negative, zero), sparse (mostly zeros, with
positive or mixed-sign values), in dense and in sparse matrices, side by side in any order.

* ``br-chi2``: a column that is already non-negative scores sklearn's chi2 summed over the
  labels with NO shift, whatever the other columns hold; a column with a negative value
  scores the chi2 of the column minus its minimum; constants score 0; sparse = dense.
* ``br-rf`` / ``lp-rf`` (ReliefF): the weights do not change when a column is shifted by a
  constant or scaled by a positive constant (``diff`` and the distance use range-normalized
  differences), sparse = dense, and they equal the loop reference on mixed signs.
* ``br-ig`` / ``lp-ig``: equal a slow reference (the reference discretization, plug-in
  entropies), and do not change under a strictly increasing transform of a column that keeps
  0 and the signs (the bins depend on the ranks).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_selection import chi2

import reference as ref
from coreselect.baselines import (
    BRChi2, BRInformationGain, BRReliefF, LPInformationGain, LPReliefF, labelset_ids,
    relieff_scores,
)
from test_baselines import reference_relieff

PROPS = settings(max_examples=25, deadline=None, derandomize=True)
KINDS = ("positive", "negative", "mixed", "const-pos", "const-neg", "zero", "sparse-pos",
         "sparse-mixed")


def _column(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    x = np.round(rng.normal(size=n) * 3, 3)
    if kind == "positive":
        return np.abs(x) + 0.5 + rng.integers(0, 3)
    if kind == "negative":
        return -np.abs(x) - 0.25 - rng.integers(0, 3)
    if kind == "mixed":
        x[0], x[1] = -abs(x[0]) - 0.1, abs(x[1]) + 0.1  # both signs, whatever the draw
        return x
    if kind == "const-pos":
        return np.full(n, 2.5)
    if kind == "const-neg":
        return np.full(n, -1.75)
    if kind == "zero":
        return np.zeros(n)
    keep = rng.random(n) < 0.3
    keep[:2] = True
    x = np.where(keep, x, 0.0)
    if kind == "sparse-pos":
        return np.where(keep, np.abs(x) + 0.5, 0.0)
    x[0], x[1] = -abs(x[0]) - 0.1, abs(x[1]) + 0.1
    return x


@st.composite
def datasets(draw, min_n=20, max_n=50):
    seed = draw(st.integers(0, 2**31 - 1))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=2, max_size=7))
    n = draw(st.integers(min_n, max_n))
    n_labels = draw(st.integers(1, 5))
    rng = np.random.default_rng(seed)
    X = np.column_stack([_column(k, n, rng) for k in kinds])
    Y = (rng.random((n, n_labels)) < 0.4).astype(int)
    Y[0], Y[1] = 1, 0  # every label takes both values
    # signal: some columns follow a label
    X[:, 0] += 2.0 * Y[:, 0] * np.sign(X[:, 0] + 1e-9)
    sparse = draw(st.booleans())
    return X, Y, kinds, sparse


def _as(X, sparse):
    return sp.csr_matrix(X) if sparse else X


# -- chi2 -----------------------------------------------------------------------------------
def _chi2_reference(X, Y) -> np.ndarray:
    """Column by column: sklearn's chi2 summed over labels, on the column as it is when it has
    no negative value, else on the column minus its minimum; NaN (constants) counts 0."""
    out = np.zeros(X.shape[1])
    for j in range(X.shape[1]):
        col = X[:, j]
        col = col - col.min() if col.min() < 0 else col
        for l in range(Y.shape[1]):
            with np.errstate(divide="ignore", invalid="ignore"):
                stat, _ = chi2(col.reshape(-1, 1), Y[:, l])
            out[j] += 0.0 if not np.isfinite(stat[0]) else stat[0]
    return out


@PROPS
@given(data=datasets())
def test_chi2_shifts_only_columns_with_negative_values(data):
    X, Y, kinds, sparse = data
    scores = BRChi2(k=1).fit(_as(X, sparse), Y).scores_
    np.testing.assert_allclose(scores, _chi2_reference(X, Y), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(scores, BRChi2(k=1).fit(_as(X, not sparse), Y).scores_,
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("others", [["negative"], ["mixed"], ["sparse-mixed", "const-neg"],
                                    ["positive"], []])
def test_chi2_of_a_positive_column_ignores_the_other_columns(others):
    """A column with a positive minimum scores the same alone and beside negative columns."""
    rng = np.random.default_rng(1)
    n = 40
    Y = (rng.random((n, 3)) < 0.5).astype(int)
    pos = np.abs(rng.normal(size=n)) + 1.0 + 3.0 * Y[:, 1]
    X = np.column_stack([pos] + [_column(k, n, rng) for k in others])
    alone = BRChi2(k=1).fit(pos.reshape(-1, 1), Y).scores_[0]
    expected = sum(chi2(pos.reshape(-1, 1), Y[:, l])[0][0] for l in range(3))
    assert alone == pytest.approx(expected, rel=1e-12)
    for sparse in (False, True):
        assert BRChi2(k=1).fit(_as(X, sparse), Y).scores_[0] == pytest.approx(expected, rel=1e-12)


# -- ReliefF ----------------------------------------------------------------------------------
@st.composite
def transforms(draw, d):
    shifts = draw(st.lists(st.sampled_from([0.0, 7.0, -13.5, 1000.0, -0.25]), min_size=d, max_size=d))
    scales = draw(st.lists(st.sampled_from([1.0, 2.0, 0.5, 1000.0, 0.001]), min_size=d, max_size=d))
    return np.array(shifts), np.array(scales)


@PROPS
@given(data=datasets(), change=st.data())
def test_relieff_invariant_to_shift_and_positive_scale_of_any_column(data, change):
    X, Y, kinds, sparse = data
    shifts, scales = change.draw(transforms(X.shape[1]))
    X2 = X * scales + shifts
    for est in (BRReliefF(k=1, n_neighbors=3), LPReliefF(k=1, n_neighbors=3)):
        a = est.fit(_as(X, sparse), Y).scores_
        b = est.fit(X2, Y).scores_
        np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9)
        if sparse:  # scaling keeps the zeros, so it can stay sparse
            c = est.fit(_as(X * scales, True), Y).scores_
            np.testing.assert_allclose(c, a, rtol=1e-7, atol=1e-9)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(data=datasets(min_n=12, max_n=24))
def test_relieff_equals_the_loop_reference_on_mixed_signs(data):
    X, Y, kinds, sparse = data
    y = labelset_ids(Y)
    got = relieff_scores(_as(X, sparse), y, n_neighbors=3)
    np.testing.assert_allclose(got, reference_relieff(X, y, k=3), rtol=1e-7, atol=1e-9)


# -- information gain -------------------------------------------------------------------------
def _ig_reference(X, Y, sparse):
    codes = np.column_stack([ref.discretize_column(X[:, j], 5, sparse_input=sparse)
                             for j in range(X.shape[1])])
    br = np.array([sum(ref.mutual_information(codes[:, j], Y[:, l]) for l in range(Y.shape[1]))
                   for j in range(X.shape[1])])
    sets = {}
    cls = np.array([sets.setdefault(tuple(row), len(sets)) for row in Y.tolist()])
    lp = np.array([ref.mutual_information(codes[:, j], cls) for j in range(X.shape[1])])
    return br, lp


@PROPS
@given(data=datasets(min_n=30, max_n=60))
def test_information_gain_equals_plug_in_entropies(data):
    X, Y, kinds, sparse = data
    br, lp = _ig_reference(X, Y, sparse)
    np.testing.assert_allclose(BRInformationGain(k=1).fit(_as(X, sparse), Y).scores_, br,
                               atol=1e-9)
    np.testing.assert_allclose(LPInformationGain(k=1).fit(_as(X, sparse), Y).scores_, lp,
                               atol=1e-9)


@pytest.mark.parametrize("n_labels", [3, 5, 6])
def test_lp_information_gain_with_many_label_sets(n_labels):
    """More distinct label sets than bins: each label set is a class of its own."""
    rng = np.random.default_rng(n_labels)
    n = 120
    Y = (rng.random((n, n_labels)) < 0.5).astype(int)
    X = np.column_stack([_column(k, n, rng) for k in KINDS])
    X[:, 2] += Y @ (2.0 ** np.arange(n_labels))
    _, lp = _ig_reference(X, Y, False)
    np.testing.assert_allclose(LPInformationGain(k=1).fit(X, Y).scores_, lp, atol=1e-9)


@PROPS
@given(data=datasets(min_n=30, max_n=60), how=st.sampled_from(["cube", "double", "cube+x"]))
def test_information_gain_invariant_to_increasing_transforms(data, how):
    X, Y, kinds, sparse = data
    f = {"cube": lambda x: x ** 3, "double": lambda x: 2.0 * x,
         "cube+x": lambda x: x ** 3 + x}[how]
    for est in (BRInformationGain, LPInformationGain):
        a = est(k=1).fit(_as(X, sparse), Y).scores_
        b = est(k=1).fit(_as(f(X), sparse), Y).scores_
        np.testing.assert_allclose(b, a, atol=1e-12)
