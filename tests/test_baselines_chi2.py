"""br-chi2 against scikit-learn's chi2 summed over labels."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_selection import chi2

from coreselect.baselines import BASELINES, BRChi2


def test_scores_are_sklearn_chi2_summed_over_labels():
    rng = np.random.default_rng(0)
    X = rng.poisson(1.0, size=(80, 12)).astype(float)
    Y = (rng.random((80, 3)) < 0.4).astype(int)
    Y[:, 1] = (X[:, 4] > 1).astype(int)
    expected = sum(chi2(X, Y[:, j])[0] for j in range(3))
    for data in (X, sp.csr_matrix(X)):
        sel = BRChi2(k=4).fit(data, Y)
        np.testing.assert_allclose(sel.scores_, expected)
        assert list(sel.selected_) == list(np.argsort(-expected, kind="stable")[:4])
    assert BASELINES["br-chi2"] is BRChi2


def test_constant_columns_and_labels_score_zero_and_negatives_are_shifted():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 5))
    X[:, 2] = 3.0
    Y = np.column_stack([(X[:, 0] > 0).astype(int), np.zeros(50, int)])
    sel = BRChi2(k=2).fit(X, Y)
    assert np.all(np.isfinite(sel.scores_)) and sel.scores_[2] == 0.0
    np.testing.assert_allclose(sel.scores_, np.nan_to_num(chi2(X - X.min(axis=0), Y[:, 0])[0]))
    assert sel.selected_[0] == 0


def test_k_larger_than_features_is_a_typed_error():
    from coreselect.errors import InputError

    with pytest.raises(InputError):
        BRChi2(k=9).fit(np.ones((4, 3)), np.ones((4, 1)))
