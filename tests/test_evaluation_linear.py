"""BR logistic regression evaluator against scikit-learn directly, and its use in the protocol."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MaxAbsScaler

from coreselect.errors import InputError
from coreselect.evaluation.linear import BRLogistic
from coreselect.evaluation.measures import MEASURES
from coreselect.evaluation.protocol import method_factories, run_protocol


def _data(seed=0, n=120, d=8, n_labels=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 50, size=d)
    W = rng.normal(size=(d, n_labels))
    Y = (X / X.std(axis=0) @ W + rng.normal(size=(n, n_labels)) > 0.5).astype(int)
    Y[:, -1] = 0  # a label never on in training
    return X, Y


@pytest.mark.parametrize("sparse", [False, True])
def test_matches_sklearn_per_label(sparse):
    X, Y = _data()
    Xin = sp.csr_matrix(np.abs(X)) if sparse else X
    train, test = slice(0, 90), slice(90, None)
    pred = BRLogistic(C=0.7).fit(Xin[train], Y[train]).predict(Xin[test])
    scaler = MaxAbsScaler().fit(Xin[train])
    for j in range(Y.shape[1] - 1):
        lr = LogisticRegression(solver="liblinear", C=0.7).fit(scaler.transform(Xin[train]), Y[train, j])
        np.testing.assert_array_equal(pred[:, j], lr.predict(scaler.transform(Xin[test])))
    assert not pred[:, -1].any()  # constant label predicted constant


def test_protocol_scores_with_both_evaluators():
    X, Y = _data(1)
    Y[:, -1] = (X[:, 0] > 0).astype(int)
    methods = method_factories(["gds", "br-ig"])
    both = run_protocol(X, Y, methods, [3, 5], n_folds=2, evaluator=("brknn", "linear"))
    assert set(both["evaluator"]) == {"brknn", "linear"}
    assert len(both) == 2 * 2 * 2 * 2 * len(MEASURES)
    lin = run_protocol(X, Y, methods, [3, 5], n_folds=2, evaluator="linear")
    assert "evaluator" not in lin.columns
    mine = both[both.evaluator == "linear"].drop(columns="evaluator").reset_index(drop=True)
    np.testing.assert_allclose(mine["value"], lin["value"])
    with pytest.raises(InputError, match="evaluator"):
        run_protocol(X, Y, methods, [3], n_folds=2, evaluator="svm")
