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

EXPECTED_FAILED = {
    # Selecting k features of a 1-feature matrix is the documented error "k > selectable".
    "check_fit2d_1feature": "k larger than the number of features is an error by design",
}


@parametrize_with_checks([GDSSelector(k=2, min_bin_count=1)], expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_fitted_attributes():
    ds = make_synthesized()
    sel = GDSSelector(k=16).fit(ds.X, ds.Y)
    assert sel.selected_.shape == (16,)
    assert sel.support_.sum() == 16 and sel.get_support().sum() == 16
    p = sel.result_.spec["p"]  # the default calibration's: every selected feature counts
    assert p == default_p(DEFAULT_CALIBRATION)
    # p "all" counts at most k features per label: the reported h's coefficient uses k
    assert sel.objective_ == pytest.approx((1 - 0.5) * 16 * 15 / (2 * 16 * 8) * sel.relevance_
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
    from coreselect.spec import CONSTRAINTS

    sel = GDSSelector()
    assert set(sel._parameter_constraints) == set(sel.get_params())
    assert set(sel.get_params()) <= set(CONSTRAINTS)
    for name, value in sel.get_params().items():
        assert value == CONSTRAINTS[name].default, name


def test_calibration_is_passed_to_the_objective():
    from coreselect.core.objective import DEFAULT_CALIBRATION

    ds = make_synthesized()
    sel = GDSSelector(k=4).fit(ds.X, ds.Y)
    assert sel.result_.spec["calibration"] == DEFAULT_CALIBRATION
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
