"""GDSSelector: scikit-learn conformance, pipelines, dense/sparse agreement, errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.multioutput import MultiOutputClassifier
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from coreselect import GDSSelector
from coreselect.core.objective import DEFAULT_CALIBRATION, default_p
from coreselect.datasets import make_synthesized
from coreselect.errors import InputError

@parametrize_with_checks([GDSSelector(), GDSSelector(k="auto"), GDSSelector(percentile=50)])
def test_sklearn_compatible(estimator, check):
    """The default estimator (k: 10, at most the selectable features; the smallest bin shrinks
    on the checks' tiny data), the automatic k and a percentile: no expected failure."""
    check(estimator)


def test_fitted_attributes():
    ds = make_synthesized()
    sel = GDSSelector(k=16).fit(ds.X, ds.Y)
    assert sel.selected_.shape == (16,)
    assert sel.support_.sum() == 16 and sel.get_support().sum() == 16
    p = sel.result_.spec["p"]  # the default calibration's for 16 features and 8 labels
    assert sel.result_.spec["calibration"] == "information"  # binary columns: the weighing
    assert p == default_p("information", 16, 8) == 8
    assert sel.objective_ == pytest.approx((1 - 0.5) * 16 * 15 / (2 * p * 8) * sel.relevance_
                                           + 0.5 * sel.diversity_)
    paper = GDSSelector(k=16, calibration="paper").fit(ds.X, ds.Y)
    assert paper.objective_ == pytest.approx((1 - 0.5) * 16 * 15 / (2 * 10 * 8) * paper.relevance_
                                             + 0.5 * paper.diversity_)
    assert sel.transform(ds.X).shape == (256, 16)
    np.testing.assert_array_equal(sel.transform(ds.X), ds.X[:, np.sort(sel.selected_)])
    assert sorted((sel.selected_ // 50).tolist()) == list(range(16))
    assert sel.pair_distances_.shape == (16, 16)
    assert sel.feature_relevance_.shape == (16,)


def test_dense_and_sparse_select_the_same():
    rng = np.random.default_rng(0)
    X = rng.exponential(size=(200, 40)) * (rng.random((200, 40)) < 0.2)
    Y = (rng.random((200, 5)) < 0.3).astype(int)
    a = GDSSelector(k=8).fit(X, Y)
    b = GDSSelector(k=8).fit(sp.csr_matrix(X), sp.csr_matrix(Y))
    np.testing.assert_array_equal(a.selected_, b.selected_)
    assert a.objective_ == pytest.approx(b.objective_, abs=1e-9)


def test_backends_select_the_same():
    ds = make_synthesized(random_state=3)
    a = GDSSelector(k=20, backend="numba").fit(ds.X, ds.Y)
    b = GDSSelector(k=20, backend="numpy").fit(ds.X, ds.Y)
    np.testing.assert_array_equal(a.selected_, b.selected_)


def test_in_a_pipeline():
    ds = make_synthesized()
    y = np.asarray(ds.Y)
    pipe = make_pipeline(GDSSelector(k=16), MultiOutputClassifier(KNeighborsClassifier(5)))
    pipe.fit(ds.X, y)
    assert pipe.predict(ds.X).shape == y.shape
    assert pipe[0].get_feature_names_out().shape == (16,)


def test_feature_names_from_dataframe():
    pd = pytest.importorskip("pandas")
    ds = make_synthesized()
    frame = pd.DataFrame(ds.X, columns=ds.feature_names)
    sel = GDSSelector(k=4).fit(frame, ds.Y)
    assert set(sel.get_feature_names_out()) <= set(ds.feature_names)


@pytest.mark.parametrize("params", [dict(k=0), dict(lam=1.5), dict(lam=-0.1), dict(p=0),
                                    dict(relevance="x"), dict(strategy="x"), dict(n_bins=1)])
def test_bad_parameters(params):
    ds = make_synthesized()
    with pytest.raises(InvalidParameterError):
        GDSSelector(**params).fit(ds.X, ds.Y)


@pytest.mark.parametrize("params", [dict(k="many"), dict(percentile=120), dict(percentile=-1),
                                    dict(k=1.5)])
def test_bad_k_and_percentile(params):
    ds = make_synthesized()
    with pytest.raises(InvalidParameterError):
        GDSSelector(**params).fit(ds.X, ds.Y)


def test_k_and_percentile_are_exclusive_and_percentile_zero_is_refused():
    ds = make_synthesized()
    with pytest.raises(InputError, match="give one"):
        GDSSelector(k=5, percentile=10).fit(ds.X, ds.Y)
    with pytest.raises(InputError, match="selects no feature"):
        GDSSelector(percentile=0).fit(ds.X, ds.Y)


def test_default_k_is_ten_capped_at_the_selectable_features():
    ds = make_synthesized()
    assert GDSSelector().fit(ds.X, ds.Y).k_ == 10
    rng = np.random.default_rng(0)
    X = rng.random((30, 4))
    X[:, 1] = 3.0  # constant: never selected
    sel = GDSSelector().fit(X, (rng.random((30, 2)) < 0.5).astype(int))
    assert sel.k_ == 3 and 1 not in sel.selected_


def test_tiny_data_are_not_all_constant():
    """Issue 32: on 20 samples the default min_bin_count=10 used to leave one bin per column,
    and every column was called constant."""
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(20, 5)), (rng.random((20, 3)) < 0.5).astype(int)
    assert GDSSelector().fit(X, Y).k_ == 5


def test_nothing_selectable_says_why():
    Y = np.tile([[0, 1], [1, 0]], (10, 1))
    with pytest.raises(InputError, match="3 of the 3 columns hold a single value"):
        GDSSelector().fit(np.ones((20, 3)), Y)
    # 6 distinct values, 55 of 60 zero: the five others (bin 4) are fewer than the smallest
    # bin, min(10, 60 // 10) = 6, and join the zeros
    X = np.zeros((60, 2))
    X[:5] = np.arange(1.0, 6.0)[:, None]
    with pytest.raises(InputError, match="2 have every sample in one bin after bins smaller "
                                         "than 6 samples"):
        GDSSelector(strategy="quantile", n_bins=5).fit(X, np.tile([[0, 1], [1, 0]], (30, 1)))
    with pytest.raises(InputError, match=r"k=4 is larger .*hold a single value"):
        GDSSelector(k=4).fit(np.column_stack([np.ones(20), np.arange(20.0)]), Y)


def test_percentile_scores_and_ranking():
    ds = make_synthesized()
    sel = GDSSelector(percentile=2).fit(ds.X, ds.Y)
    from coreselect.core.discretize import discretize

    n_ok = int((~discretize(ds.X).is_constant).sum())
    assert sel.k_ == int(np.ceil(0.02 * n_ok)) == len(sel.selected_)
    assert sel.scores_.shape == (ds.X.shape[1],)
    # scores_ are the selected features' relevances (summed over labels), in bits
    np.testing.assert_allclose(sel.scores_[sel.selected_], sel.feature_relevance_)
    np.testing.assert_array_equal(sel.ranking_, sel.selected_)
    # the first pick is the most relevant feature
    assert sel.scores_[sel.selected_[0]] == pytest.approx(sel.scores_.max())


def test_automatic_k_keeps_its_curve_and_a_prefix_of_its_order():
    ds = make_synthesized(random_state=2)
    sel = GDSSelector(k="auto").fit(ds.X, ds.Y)
    cv = sel.cv_results_
    assert sel.k_ in cv["n_features"] and sel.k_ == len(sel.selected_)
    assert len(sel.ranking_) == min(100, ds.X.shape[1])
    np.testing.assert_array_equal(sel.ranking_[:sel.k_], sel.selected_)
    best = int(np.argmax(cv["mean_test_score"]))
    from coreselect.selection.autok import INNER_FOLDS

    se = (np.std([cv[f"split{i}_test_score"][best] for i in range(INNER_FOLDS)])
          / np.sqrt(INNER_FOLDS))
    chosen = int(np.flatnonzero(cv["n_features"] == sel.k_)[0])
    assert cv["mean_test_score"][chosen] >= cv["mean_test_score"][best] - se - 1e-12
    assert sel.result_.to_dict()["k_auto"]["k"] == sel.k_
    # the same k as the library call, which the CLI makes
    from coreselect import select

    assert select(ds.X, ds.Y, k="auto").spec["k"] == sel.k_


def test_bad_input():
    ds = make_synthesized()
    X = ds.X.astype(float)
    with pytest.raises(InputError, match="selectable"):
        GDSSelector(k=10_000).fit(X, ds.Y)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        GDSSelector(k=3).fit(bad, ds.Y)
    bad[0, 0] = np.inf
    with pytest.raises(InputError):
        GDSSelector(k=3).fit(bad, ds.Y)
    with pytest.raises(InputError, match="binary"):
        GDSSelector(k=3).fit(X, np.asarray(ds.Y) * 2)
    with pytest.raises(InputError, match="samples"):
        GDSSelector(k=3).fit(X, np.asarray(ds.Y)[:10])
    with pytest.raises(InputError, match="no label"):
        GDSSelector(k=3).fit(X, np.zeros((256, 0)))


def test_progress_callback():
    calls = []
    ds = make_synthesized()
    GDSSelector(k=5, progress=lambda *a: calls.append(a)).fit(ds.X, ds.Y)
    assert calls[-1] == ("select", 5, 5)


def test_selection_order_and_column_order():
    ds = make_synthesized()
    sel = GDSSelector(k=6).fit(ds.X, ds.Y)
    # transform keeps the column order of X; transform_ordered the selection order
    np.testing.assert_array_equal(sel.transform(ds.X), ds.X[:, np.sort(sel.selected_)])
    np.testing.assert_array_equal(sel.transform_ordered(ds.X), ds.X[:, sel.selected_])
    assert not np.array_equal(sel.selected_, np.sort(sel.selected_))  # the orders differ here
    np.testing.assert_array_equal(sel.transform_ordered(sp.csr_matrix(ds.X)).toarray(),
                                  ds.X[:, sel.selected_])


def test_parameter_constraints_come_from_the_spec_table():
    from coreselect.selection.spec import CONSTRAINTS

    sel = GDSSelector()
    assert set(sel._parameter_constraints) == set(sel.get_params())
    assert set(sel.get_params()) <= set(CONSTRAINTS)
    for name, value in sel.get_params().items():
        assert value == CONSTRAINTS[name].default, name


def test_calibration_is_passed_to_the_objective():
    from coreselect.core.objective import DEFAULT_CALIBRATION

    ds = make_synthesized()
    sel = GDSSelector(k=4).fit(ds.X, ds.Y)
    assert DEFAULT_CALIBRATION == "auto"
    assert sel.result_.spec["calibration"] == "information"  # what "auto" takes on binary columns
    again = GDSSelector(k=4, calibration=DEFAULT_CALIBRATION).fit(ds.X, ds.Y)
    np.testing.assert_array_equal(sel.selected_, again.selected_)
    with pytest.raises(InvalidParameterError):
        GDSSelector(calibration="nope").fit(ds.X, ds.Y)


def test_fit_equals_the_library_call():
    from coreselect import select

    ds = make_synthesized(random_state=1)
    sel = GDSSelector(k=7, lam=0.3, p=4, relevance="nmi").fit(ds.X, ds.Y)
    res = select(ds.X, ds.Y, k=7, lam=0.3, p=4, relevance="nmi")
    np.testing.assert_array_equal(sel.selected_, res.selected)
    np.testing.assert_array_equal(sel.feature_relevance_, res.feature_relevance)
    assert sel.objective_ == res.objective
