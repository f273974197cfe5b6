"""Issue 32, point 10: small API promises (set_output in transform_ordered, random_state
where it is used, NaN in one line)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from coreselect import GDSSelector
from coreselect.errors import InputError
from coreselect.selection import select


def _data(n=60, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, (n, d)).astype(float)
    Y = np.c_[X[:, 11] > 1, X[:, 6] + X[:, 11] > 3, X[:, 2] > 2].astype(int)
    return X, Y


def test_transform_ordered_honours_set_output():
    pd = pytest.importorskip("pandas")
    X, Y = _data()
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    sel = GDSSelector(k=4).fit(frame, Y)
    assert list(sel.selected_) != sorted(sel.selected_)  # the orders differ: the test bites
    plain = sel.transform_ordered(frame)
    assert isinstance(plain, np.ndarray)
    np.testing.assert_array_equal(plain, X[:, sel.selected_])
    sel.set_output(transform="pandas")
    out = sel.transform_ordered(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == [f"c{j}" for j in sel.selected_]
    np.testing.assert_array_equal(out.to_numpy(), X[:, sel.selected_])
    assert list(sel.transform(frame).columns) == [f"c{j}" for j in sorted(sel.selected_)]
    plain = GDSSelector(k=4).fit(X, Y)  # fitted without names: sparse input as before
    np.testing.assert_array_equal(plain.transform_ordered(sp.csr_matrix(X)).toarray(),
                                  X[:, plain.selected_])


@pytest.mark.parametrize("mode", ["centralized", "rows"])
def test_random_state_is_refused_where_no_partition_uses_it(mode):
    """The library refuses it as the CLI refuses --seed (coreselect.selection.spec.UNUSED); the
    estimator takes it on every mode, as scikit-learn's checks and searches expect."""
    X, Y = _data()
    with pytest.raises(InputError, match="random_state"):
        select(X, Y, k=3, mode=mode, random_state=7)
    ref = select(X, Y, k=3, mode=mode)
    est = GDSSelector(k=3, mode=mode, random_state=7).fit(X, Y)
    assert est.selected_.tolist() == ref.selected.tolist()
    # where there is a partition it is used
    select(X, Y, k=3, mode="distributed", partitions=2, random_state=7)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_in_the_api_is_one_typed_line(bad):
    X, Y = _data()
    X[5, 3] = bad
    with pytest.raises(InputError) as exc:
        GDSSelector(k=3).fit(X, Y)
    assert "\n" not in str(exc.value) and ("NaN" in str(exc.value) or "infinity" in str(exc.value))
    with pytest.raises(InputError) as exc:
        select(X, Y, k=3)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("n_labels", [1, 3])
@pytest.mark.parametrize("as_sparse", [False, True])
def test_feature_scores_are_each_columns_information_summed_over_the_labels(n_labels, as_sparse):
    """``select(...).scores``: sum over the labels of MI(x, l) in bits, for every column (one
    label too, where a sum over the wrong axis would still broadcast)."""
    import reference as ref

    rng = np.random.default_rng(7)
    X = (rng.random((80, 9)) < [0.1, 0.3, 0.5, 0.7, 0.2, 0.4, 0.6, 0.8, 0.5]).astype(float)
    Y = np.c_[X[:, 2] + X[:, 5] > 0, X[:, 7] > 0, rng.random(80) < 0.3][:, :n_labels].astype(int)
    result = select(sp.csr_matrix(X) if as_sparse else X, Y, k=3, calibration="information")
    want = [sum(ref.mutual_information(X[:, j], Y[:, l]) for l in range(n_labels))
            for j in range(X.shape[1])]
    np.testing.assert_allclose(result.scores, want, atol=1e-12)


@pytest.mark.parametrize("as_sparse", [False, True])
def test_scores_of_constant_and_left_out_columns(as_sparse):
    """A selection computes relevances for the columns it may pick only: a constant
    candidate scores 0 (it tells nothing about any label), a column that is no candidate
    scores NaN, and every other column its information summed over the labels; the picks
    equal those of the problem over every column, where constant ones are not selectable."""
    import reference as ref
    from coreselect.selection.sources.memory import InMemorySource
    from coreselect.selection.spec import Objective

    rng = np.random.default_rng(3)
    X = (rng.random((90, 12)) < 0.3).astype(float)
    X[:, [0, 4, 5, 6, 9, 10, 11]] = 0.0  # most columns constant, as on a sample of text data
    X[:, 10] = 2.5  # constant but stored in every row
    Y = np.c_[X[:, 2] + X[:, 3] > 0, X[:, 7] > 0, rng.random(90) < 0.4].astype(int)
    data = sp.csr_matrix(X) if as_sparse else X
    result = select(data, Y, k=3, calibration="information")
    varying = [1, 2, 3, 7, 8]
    want = [sum(ref.mutual_information(X[:, j], Y[:, l]) for l in range(3))
            if j in varying else 0.0 for j in range(12)]
    np.testing.assert_allclose(result.scores, want, atol=1e-12)
    assert np.all(result.scores[[0, 4, 5, 6, 9, 10, 11]] == 0.0)

    source = InMemorySource(data, Y, columns=[0, 1, 2, 3, 4, 7, 8, 10])
    objective = Objective(k=3, calibration="information")
    problem = source.problem(objective)
    assert problem.column_ids.tolist() == [1, 2, 3, 7, 8]  # the candidates that vary
    whole = InMemorySource(data, Y)._problem(objective, None, None, selectable_only=False)
    assert whole.n_columns == 12  # as the seeded partitions of a distributed run see them
    assert whole.run(3, alternate=False).selected.tolist() == result.selected.tolist()

    from coreselect.selection import feature_scores

    scores = feature_scores(source, objective)
    assert np.isnan(scores[[5, 6, 9, 11]]).all()  # no candidates
    assert np.all(scores[[0, 4, 10]] == 0.0)  # constant candidates
    np.testing.assert_allclose(scores[varying], np.asarray(want)[varying], atol=1e-12)
