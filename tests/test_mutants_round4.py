"""Tests for the mutants of the fourth mutation round that survived (docs/mutation-round4.md):
each checks the behaviour a survivor broke, on the input that shows it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from coreselect.errors import DatasetError
from coreselect.selection import autok


def test_iman_davenport_uses_k_minus_1_times_n_minus_1_degrees_of_freedom():
    """Demšar (2006), eq. for F_F: (N-1) chi2 / (N (k-1) - chi2) with (k-1) and (k-1)(N-1)
    degrees of freedom, computed here from the ranks."""
    from coreselect.evaluation.significance import friedman

    scores = np.array([[.9, .8, .7], [.9, .8, .7], [.8, .9, .7]])
    n, k = scores.shape
    ranks = np.array([stats.rankdata(-row) for row in scores]).mean(axis=0)
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(ranks ** 2) - k * (k + 1) ** 2 / 4)
    f = (n - 1) * chi2 / (n * (k - 1) - chi2)
    got = friedman(scores)
    assert got.f == pytest.approx(f)
    assert got.p_f == pytest.approx(stats.f.sf(f, k - 1, (k - 1) * (n - 1)))


def _curves(monkeypatch, example, macro):
    """choose_k with the inner cross-validation replaced by these (folds, grid) curves."""
    def fake(X, Y, order, grid, measures, **kwargs):
        return {"example_f1": np.asarray(example, float), "macro_f1": np.asarray(macro, float)}, 0
    monkeypatch.setattr(autok, "score_curves", fake)


def test_auto_k_keeps_the_larger_of_the_measures_picks(monkeypatch):
    # grid 1, 2, 3, 5, 7, 10: example F1 best at 2, macro F1 best at 5 (10 varying columns)
    example = [[.5, .7, .6, .6, .6, .6]] * 3
    macro = [[.3, .4, .45, .5, .48, .47]] * 3
    _curves(monkeypatch, example, macro)
    X = np.random.default_rng(0).normal(size=(40, 10))
    got = autok.choose_k(X, np.zeros((40, 2), int), np.arange(10))
    assert got.k == 5


def test_auto_k_halves_the_varying_columns_not_all_columns(monkeypatch):
    # 4 varying columns of 10: half is 2. The best mean, at 4, beats the best at or below 2
    # by less than that one's standard error: no real rise beyond the half.
    curve = [[.5, .6, .62, .63], [.5, .7, .62, .63], [.5, .5, .62, .63]]
    _curves(monkeypatch, curve, curve)
    X = np.zeros((40, 10))
    X[:, :4] = np.random.default_rng(1).normal(size=(40, 4))
    got = autok.choose_k(X, np.zeros((40, 2), int), np.arange(4))
    assert got.half == 2 and got.k == 2


def test_a_measure_pick_on_a_tie_is_the_smaller_k():
    got = autok.measure_pick(np.array([[.5, .6, .6], [.5, .6, .6]]), np.array([1, 2, 3]), "best")
    assert got["k"] == 2


def test_macro_f1_scores_a_label_neither_present_nor_predicted_one():
    T = np.array([[1, 0], [1, 0]])
    assert autok.label_scores(T, T, ("macro_f1",))["macro_f1"] == 1.0


def test_inner_folds_train_on_the_other_rows_only():
    folds = autok._inner_folds(10, 5, 0)
    for train, valid in folds:
        assert not set(train) & set(valid)
        assert sorted([*train, *valid]) == list(range(10))
    assert sorted(np.concatenate([v for _, v in folds])) == list(range(10))


def test_a_csv_header_with_a_number_in_its_first_cell_is_a_header(tmp_path):
    from coreselect.io.csvfile import read_csv

    path = tmp_path / "d.csv"
    path.write_text("1,a,y\n0.5,1,0\n0.7,0,1\n0.2,1,1\n")
    data = read_csv(path, labels=["y"])
    assert list(data.feature_names) == ["1", "a"] and data.X.shape == (3, 2)


def test_a_nominal_declaration_with_a_repeated_value_is_refused():
    from coreselect.io.arff import parse_arff_text

    text = "@relation r -C -1\n@attribute c {a,b,a}\n@attribute y {0,1}\n@data\na,1\nb,0\n"
    with pytest.raises(DatasetError, match="repeated value"):
        parse_arff_text(text)
