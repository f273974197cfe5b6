"""Label lists as users hold them (issue 32.7): lists, tuples, sets and a pandas Series of
them, read as scikit-learn's MultiLabelBinarizer reads them; 0/1 matrices stay matrices; the
case that reads both ways is refused in one typed line that names the fix."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.preprocessing import MultiLabelBinarizer

from coreselect import GDSSelector
from coreselect.errors import InputTypeError
from coreselect.selection.sources import as_label_matrix

RNG = np.random.default_rng(0)
X = RNG.random((24, 5))
LISTS = [["rock", "pop"], ["jazz"], [], ("pop",), ["rock"], ["jazz", "rock", "pop"]] * 4


@pytest.mark.parametrize("wrap", [list, tuple, lambda y: np.array(y + [None], dtype=object)[:-1],
                                  lambda y: __import__("pandas").Series(y)])
def test_label_lists_read_as_multilabel_binarizer(wrap):
    mlb = MultiLabelBinarizer().fit(LISTS)
    sel = GDSSelector(k=3).fit(X, wrap(LISTS))
    assert list(sel.classes_) == list(mlb.classes_)
    np.testing.assert_array_equal(as_label_matrix(wrap(LISTS), 24), mlb.transform(LISTS))
    # the explanations name the labels
    assert {name for e in sel.explanations_ for name in e.labels} <= set(mlb.classes_)
    np.testing.assert_array_equal(
        sel.selected_, GDSSelector(k=3).fit(X, mlb.transform(LISTS)).selected_)


@pytest.mark.parametrize("Y, kind", [
    ([[1, 2], [2, 3]] * 12, "lists"),          # values other than 0/1: labels
    ([[0, 1], [1]] * 12, "lists"),             # different lengths
    ([{0, 1}, {1}] * 12, "lists"),             # sets
    ([[0, 1, 1], [1, 0, 0]] * 12, "matrix"),   # a row holds a value twice: a 0/1 matrix
    ([[0, 0], [1, 0]] * 12, "matrix"),
    (np.array([[0, 1], [1, 0]] * 12), "matrix"),  # an array is always a matrix
])
def test_the_rule(Y, kind):
    M = as_label_matrix(Y, 24)
    if kind == "matrix":
        np.testing.assert_array_equal(M, np.asarray(Y))
    else:
        np.testing.assert_array_equal(M, MultiLabelBinarizer().fit_transform(Y))


@pytest.mark.parametrize("Y", [[[0, 1], [1, 0]] * 12, [[1], [0]] * 12, [(True, False)] * 24])
def test_lists_that_read_both_ways_are_refused_with_the_fix(Y):
    with pytest.raises(InputTypeError, match=r"np.asarray\(Y\).*MultiLabelBinarizer") as exc:
        GDSSelector(k=2).fit(X, Y)
    assert "\n" not in str(exc.value)


def test_deeper_nesting_is_refused():
    with pytest.raises(InputTypeError, match="nested"):
        GDSSelector(k=2).fit(X, [[[1]], [[2]]] * 12)


@pytest.mark.parametrize("Y", [[["0", "1"], ["1", "0"]] * 12, [["1", "1"], ["0", "1"]] * 12])
def test_lists_of_the_strings_0_and_1_are_refused_with_the_fix(Y):
    with pytest.raises(InputTypeError, match=r"dtype=int"):
        GDSSelector(k=2).fit(X, Y)


def test_sets_and_lists_mixed_are_label_lists():
    rows = [{"a"}, ["b", "a"], ("c",), set()] * 6
    np.testing.assert_array_equal(as_label_matrix(rows, 24),
                                  MultiLabelBinarizer().fit_transform(rows))
