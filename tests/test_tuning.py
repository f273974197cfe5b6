"""The objective's form chosen on the training rows (coreselect.tuning, evaluate's gds-tuned):
the paired one-standard-error rule against a reference written from its statement, a choice
that must move when the default is made bad on purpose, and the nesting in evaluate's folds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from coreselect.cli import main
from coreselect.errors import InputError
from coreselect.tuning import CANDIDATES, pick, tune


def _reference_pick(areas: np.ndarray) -> int:
    """From the statement: keep candidate 0 unless some candidate's mean paired per-fold
    difference to it exceeds that difference's standard error; then the largest such mean."""
    folds, m = areas.shape
    best, best_gain = 0, None
    for j in range(1, m):
        d = [areas[f, j] - areas[f, 0] for f in range(folds)]
        mean = sum(d) / folds
        std = (sum((x - mean) ** 2 for x in d) / folds) ** 0.5
        if mean > std / folds ** 0.5 + 1e-12 and mean > 1e-12:
            if best_gain is None or mean > best_gain:
                best, best_gain = j, mean
    return best


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 6)),
              elements=st.floats(0, 1, allow_nan=False)))
def test_pick_agrees_with_the_reference(areas):
    assert pick(areas) == _reference_pick(areas)


def test_pick_keeps_the_default_on_noise_and_moves_on_a_clear_gain():
    noisy = np.array([[0.50, 0.52], [0.50, 0.47], [0.50, 0.53]])  # +0.007 ± 0.017: noise
    assert pick(noisy) == 0
    # +0.02 on every fold is a gain; +0.027 with a standard error of 0.030 is not
    clear = np.array([[0.50, 0.52, 0.60], [0.51, 0.53, 0.49], [0.49, 0.51, 0.49]])
    assert pick(clear) == 1
    assert pick(np.full((3, 4), 0.5)) == 0
    with pytest.raises(InputError):
        pick(np.zeros((3, 0)))


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, 3)) < 0.4).astype(int)
    informative = rng.normal(size=(n, 12)) + 1.5 * (Y @ rng.normal(size=(3, 12)))
    X = np.column_stack([informative, rng.normal(size=(n, 18))])
    return X, Y


def test_tune_leaves_a_default_made_bad_on_purpose():
    """Pure diversity (lam=1: relevance ignored) as the 'default' beside the library's form:
    the training data must choose the latter; the reverse order keeps the library's."""
    X, Y = _data()
    bad = dict(calibration="information", lam=1.0, relevance="mi")
    good = CANDIDATES["default"]
    got = tune(X, Y, 10, candidates={"bad": bad, "good": good})
    assert got.choice == "good" and got.params == good
    assert got.areas.shape[1] == 2 and got.areas[:, 1].mean() > got.areas[:, 0].mean()
    kept = tune(X, Y, 10, candidates={"good": good, "bad": bad})
    assert kept.choice == "good"
    from coreselect.selection import select

    want = [int(i) for i in select(X, Y, k=10, **good).selected]
    assert got.order.tolist() == want == kept.order.tolist()  # the chosen one's own order
    assert got.orders["bad"].tolist() != want


def test_tune_returns_the_chosen_candidates_own_selection():
    from coreselect.selection import select

    X, Y = _data(seed=1)
    got = tune(X, Y, 8)
    assert got.names == list(CANDIDATES)
    want = select(X, Y, k=8, **CANDIDATES[got.choice]).selected
    assert got.order.tolist() == [int(i) for i in want]
    summary = got.to_dict()
    assert summary["choice"] == got.choice and set(summary["candidates"]) == set(CANDIDATES)
    assert summary["candidates"]["default"]["diff"] == 0.0


def test_evaluate_gds_tuned_is_nested_in_the_outer_folds(monkeypatch):
    """Each outer training fold tunes on its own rows; the ranking scored is the chosen
    candidate's order fitted on that fold."""
    import coreselect.tuning as tuning
    from coreselect.evaluation.gds import TunedGDS
    from coreselect.evaluation.protocol import make_folds, method_factories, run_protocol

    X, Y = _data(n=150, seed=2)
    seen = []
    real = tuning.tune

    def spy(Xtr, Ytr, cap, **kw):
        got = real(Xtr, Ytr, cap, **kw)
        seen.append((Xtr.shape[0], cap, got.order.tolist()))
        return got

    monkeypatch.setattr(tuning, "tune", spy)
    df = run_protocol(X, Y, method_factories(["gds-tuned"]), [3, 6], n_folds=3, seed=0)
    folds = make_folds(X.shape[0], 3, 0)
    assert [s[0] for s in seen] == [len(tr) for tr, _ in folds]
    assert [s[1] for s in seen] == [6, 6, 6]  # one ranking per fold, at the largest k
    monkeypatch.setattr(tuning, "tune", real)
    for (tr, _), (_, _, order) in zip(folds, seen):
        assert TunedGDS(k=6).fit(X[tr], Y[tr]).ranking_.tolist() == order
    assert set(df.k) == {3, 6} and set(df.method) == {"gds-tuned"}


def _run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture(scope="module")
def arff(tmp_path_factory):
    from coreselect.io import from_arrays, write

    X, Y = _data(n=120, seed=3)
    path = tmp_path_factory.mktemp("tuning") / "t.arff"
    write(from_arrays(X, Y, feature_names=[f"f{j}" for j in range(X.shape[1])],
                      label_names=["a", "b", "c"], name="t"), path)
    return path


@pytest.mark.parametrize("flag,value", [("--lam", "0.3"), ("--relevance", "nmi")])
def test_evaluate_refuses_an_objective_option_gds_tuned_would_ignore(capsys, tmp_path, arff,
                                                                      flag, value):
    code, out, err = _run(capsys, "evaluate", arff, "--methods", "gds-tuned", flag, value,
                          "--out", tmp_path / "ev")
    assert code == 2 and flag in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ev").exists()


def test_evaluate_gds_tuned_with_k_auto(capsys, tmp_path, arff):
    code, out, err = _run(capsys, "evaluate", arff, "--methods", "gds,gds-tuned", "--k", "auto",
                          "--folds", "2", "--out", tmp_path / "ev", "-q")
    assert code == 0, err
    df = pd.read_csv(tmp_path / "ev" / "results.csv")
    tuned = df[df.method == "gds-tuned"]
    assert set(tuned.k) == {"auto"} and tuned.k_chosen.between(1, 30).all()


def test_candidates_are_scored_on_the_same_prefix_sizes(monkeypatch):
    """An order that stops early (fewer columns) bounds every candidate's grid: the areas are
    means over the same prefix sizes, none beyond a candidate's order."""
    import coreselect.selection.autok as autok
    import coreselect.selection as selection

    X, Y = _data(seed=4)
    real_select, real_score = selection.select, autok.score_prefixes
    grids = []

    def short(X, Y, k, **kw):
        got = real_select(X, Y, k=k, **kw)
        if kw.get("lam") == 0.75:
            got.selected = list(got.selected)[:5]
        return got

    def spy(X, Y, order, grid, **kw):
        grids.append((len(order), list(grid)))
        return real_score(X, Y, order, grid, **kw)

    monkeypatch.setattr(selection, "select", short)
    monkeypatch.setattr(autok, "score_prefixes", spy)
    tune(X, Y, 10)
    assert len(grids) == len(CANDIDATES)
    assert all(g == grids[0][1] for _, g in grids) and max(grids[0][1]) == 5
    assert all(max(g) <= n for n, g in grids)


def test_tuned_gds_auto_caps_at_the_columns_that_vary_and_applies_the_rule():
    from coreselect.selection.autok import choose_k
    from coreselect.evaluation.gds import TunedGDS

    X, Y = _data(n=150, seed=5)
    X[:, :6] = 1.0  # constant columns: never selectable
    m = TunedGDS(k="auto").fit(X, Y)
    assert m.tuned_.cap == X.shape[1] - 6 == m.order_.size
    assert m.selected_.tolist() == m.order_[:choose_k(X, Y, m.order_).k].tolist()
    assert 0 < m.selected_.size < m.order_.size  # the rule cut the order
