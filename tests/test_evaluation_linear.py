"""BR logistic regression evaluator against scikit-learn directly, and its use in the protocol."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import MaxAbsScaler

from coreselect.errors import InputError
from coreselect.evaluation.linear import THRESHOLD_GRID, BRLogistic, best_thresholds
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
    pred = BRLogistic(C=0.7, threshold="fixed").fit(Xin[train], Y[train]).predict(Xin[test])
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


def test_thresholds_follow_their_rule():
    """Per label: the F1-best cut of the out-of-fold probabilities of the training rows (a
    3-fold split seeded 0; ties to the highest cut), models refitted on all training rows."""
    from sklearn.model_selection import KFold

    X, Y = _data(2, n=150)
    Y[:, 1] = (X[:, 1] > np.quantile(X[:, 1], 0.93)).astype(int)  # a rare label
    clf = BRLogistic(C=0.7).fit(X, Y)
    Xs = MaxAbsScaler().fit_transform(X)
    oof = np.zeros(Y.shape)
    for tr, te in KFold(3, shuffle=True, random_state=0).split(X):
        for j in range(Y.shape[1]):
            y = Y[tr, j]
            if y.min() == y.max():
                oof[te, j] = y[0]
            else:
                oof[te, j] = LogisticRegression(solver="liblinear", C=0.7).fit(Xs[tr], y).predict_proba(Xs[te])[:, 1]
    expect = np.full(Y.shape[1], 0.5)
    for j in range(Y.shape[1]):
        f1s = {}
        for t in THRESHOLD_GRID:
            p = oof[:, j] >= t
            tp = np.sum(p & (Y[:, j] == 1))
            if tp:
                f1s[t] = 2 * tp / (p.sum() + Y[:, j].sum())
        if f1s:
            top = max(f1s.values())
            expect[j] = max(t for t, v in f1s.items() if v >= top - 1e-12)
    np.testing.assert_allclose(clf.thresholds_, expect)
    assert clf.thresholds_[1] < 0.5  # the rare label is cut lower
    proba = clf.predict_proba(X)
    np.testing.assert_array_equal(clf.predict(X), (proba >= expect).astype(np.int8))
    assert best_thresholds(np.zeros((4, 1)), np.zeros((4, 1))).tolist() == [0.5]


def test_threshold_never_sees_the_test_fold(monkeypatch):
    """Alter the test fold's labels: the evaluator's predictions on it do not change (only the
    measures that compare them with the labels do)."""
    from coreselect.evaluation import protocol
    from coreselect.evaluation.protocol import make_folds

    X, Y = _data(4, n=90)
    Y[:, 2] = (X[:, 2] > np.quantile(X[:, 2], 0.9)).astype(int)
    seen = []
    real = BRLogistic.predict

    def spy(self, Xq):
        out = real(self, Xq)
        seen.append((Xq.shape[0], out.copy(), self.thresholds_.copy()))
        return out

    monkeypatch.setattr(BRLogistic, "predict", spy)
    folds = make_folds(90, 2, 0)
    _, test0 = folds[0]
    runs = []
    for flip in (False, True):
        Yx = Y.copy()
        if flip:  # fold 0's test labels: inverted and shuffled among its rows
            Yx[test0] = 1 - Yx[np.random.default_rng(0).permutation(test0)]
        seen.clear()
        protocol._init_state(X, Yx, folds, {"all": protocol._make_all}, ("linear",), None)
        try:
            protocol._run_task("all", (X.shape[1],), 0, 0)
        finally:
            protocol._STATE.clear()
        runs.append(seen[0])
    (n0, pred0, cut0), (n1, pred1, cut1) = runs
    assert n0 == n1 == len(test0)
    np.testing.assert_array_equal(pred0, pred1)
    np.testing.assert_array_equal(cut0, cut1)


def test_bad_threshold_option():
    X, Y = _data()
    with pytest.raises(InputError, match="threshold"):
        BRLogistic(threshold="median").fit(X, Y)
