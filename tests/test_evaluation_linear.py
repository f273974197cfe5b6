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


def _mostly_empty(seed=0, n=900):
    """Four rare, weakly predictable labels: about 63 % of the rows have no label at all."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 12))
    Y = (X[:, :4] + 1.5 * rng.normal(size=(n, 4)) > 2.3).astype(np.int8)
    return X, Y


def test_empty_label_sets_do_not_sink_example_f1():
    """Each rare label's F1-best cut is low, so without a model of the empty set most empty rows
    get a label and score 0 in example F1 (0.51 here); the empty-set model lifts it (0.59),
    and macro F1, scored on each label's own cut, is what it was."""
    from coreselect.evaluation.protocol import _score

    X, Y = _mostly_empty()
    tr, te = np.arange(600), np.arange(600, 900)
    got = _score(X[tr], Y[tr], X[te], Y[te], np.arange(12), evaluator="linear",
                 measures=["example_f1", "macro_f1"])
    plain = BRLogistic(empty="none").fit(X[tr], Y[tr])
    before = MEASURES["example_f1"](Y[te], plain.predict(X[te]))
    assert got["example_f1"] > before + 0.05
    assert got["macro_f1"] == MEASURES["macro_f1"](Y[te], plain.predict(X[te]))
    empty_rows = Y[te].sum(axis=1) == 0
    fitted = BRLogistic().fit(X[tr], Y[tr])
    assert np.isfinite(fitted.empty_cut_)
    assert fitted.predict(X[te])[empty_rows].any(axis=1).mean() < \
        plain.predict(X[te])[empty_rows].any(axis=1).mean()


def test_best_empty_cut_is_the_example_f1_best_of_its_grid():
    """Against a loop over the grid with the library's example F1."""
    from coreselect.evaluation.linear import EMPTY_GRID, best_empty_cut

    rng = np.random.default_rng(3)
    for _ in range(20):
        Y = (rng.random((40, 3)) < 0.15).astype(int)
        P = (rng.random((40, 3)) < 0.4).astype(int)
        p_empty = rng.random(40)
        scores = [MEASURES["example_f1"](Y, P * (p_empty < t)[:, None]) for t in EMPTY_GRID]
        best = max(scores)
        want = max(t for t, s in zip(EMPTY_GRID, scores) if s >= best - 1e-12)  # highest cut
        assert best_empty_cut(Y, P, p_empty) == want


def test_no_empty_row_in_training_predicts_as_before():
    X, Y = _mostly_empty()
    Y[:, 0] = 1  # every row has a label
    a, b = BRLogistic().fit(X, Y), BRLogistic(empty="none").fit(X, Y)
    assert a.empty_model_ is None and a.empty_cut_ == np.inf
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.predict(X), a.predict_per_label(X))


def test_bad_empty_option():
    X, Y = _data()
    with pytest.raises(InputError, match="empty"):
        BRLogistic(empty="always").fit(X, Y)


def test_empty_model_needs_the_cv_threshold():
    """The empty-set cut is chosen on out-of-fold probabilities: a fixed cut has none, so the
    combination is refused rather than ignored; the default follows the threshold."""
    X, Y = _mostly_empty()
    with pytest.raises(InputError, match="threshold='cv'"):
        BRLogistic(threshold="fixed", empty="model").fit(X, Y)
    assert BRLogistic(threshold="fixed").fit(X, Y).empty_model_ is None
