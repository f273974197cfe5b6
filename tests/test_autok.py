"""Automatic k (coreselect.selection.autok): the vectorized prefix evaluator against BRkNN-b fitted on
each prefix, the one-standard-error rule by hand, the command line (-k auto, --k-curve, the
chosen k in every output) and evaluate --k auto (nested in the outer folds)."""

from __future__ import annotations

import json

import numpy as np
import scipy.sparse as sp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _knn_data import KINDS, neighbour_columns
from coreselect.selection.autok import (
    brknn_b_prefixes, example_f1, k_grid, one_standard_error,
)
from coreselect.cli import main
from coreselect.evaluation.brknn import BRkNNb
from coreselect.evaluation.measures import example_f1 as sk_example_f1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_tr=st.integers(1, 40), n_va=st.integers(1, 15),
       d=st.integers(1, 8), L=st.integers(1, 5), integer=st.booleans())
def test_prefix_evaluator_equals_brknn_b_on_each_prefix(seed, n_tr, n_va, d, L, integer):
    """Same neighbours (ties included), confidences and label counts as BRkNNb; BRkNNb draws
    labels tied at the cut-off at random, so rows with such a tie are compared on the labels
    above it only."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (n_tr + n_va, d)).astype(float) if integer else rng.random(
        (n_tr + n_va, d))
    Y = rng.random((n_tr + n_va, L)) < 0.4
    grid = k_grid(d)
    for g, pred in zip(grid, brknn_b_prefixes(X[:n_tr], Y[:n_tr], X[n_tr:], grid)):
        clf = BRkNNb(n_neighbors=5).fit(X[:n_tr, :g], Y[:n_tr])
        conf, n_pred = clf._confidences(X[n_tr:, :g])
        want = clf.predict(X[n_tr:, :g])
        np.testing.assert_array_equal(pred.sum(axis=1), n_pred)
        for r in range(n_va):
            m = n_pred[r]
            if m == 0:
                continue
            cut = np.sort(conf[r])[::-1][m - 1]
            above = conf[r] > cut
            np.testing.assert_array_equal(pred[r][above], 1)
            if (conf[r] == cut).sum() + above.sum() == m:  # no tie at the cut-off
                np.testing.assert_array_equal(pred[r], want[r])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_tr=st.integers(1, 60), n_va=st.integers(1, 20),
       d=st.integers(1, 30), L=st.integers(1, 40), kind=st.sampled_from(KINDS),
       density=st.floats(0.0, 1.0), neighbours=st.integers(1, 8))
def test_compiled_prefix_step_equals_the_numpy_form(seed, n_tr, n_va, d, L, kind, density,
                                                    neighbours):
    """The compiled step (one pass per row: distances, k-th smallest, label counts, top
    labels) gives the numpy form's predictions bit for bit: binary and few-valued columns (ties
    at the k-th distance, many neighbours), constant columns (every training row a
    neighbour), fewer training rows than neighbours, rows without labels and labels of every
    density, label ties at the cut-off (taken in label order by both)."""
    from coreselect.core._backend import numba_enabled

    if not numba_enabled("auto"):
        pytest.skip("the numpy kernels run here (CORESELECT_NUMBA=0)")
    rng = np.random.default_rng(seed)
    X = neighbour_columns(rng, (n_tr + n_va, d), kind)
    Y = rng.random((n_tr + n_va, L)) < density
    grid = k_grid(d)
    fast = list(brknn_b_prefixes(X[:n_tr], Y[:n_tr], X[n_tr:], grid, neighbours))
    slow = list(brknn_b_prefixes(X[:n_tr], Y[:n_tr], X[n_tr:], grid, neighbours,
                                 backend="numpy"))
    assert len(fast) == len(slow) == grid.size
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and a.shape == b.shape == (n_va, L)
        np.testing.assert_array_equal(a, b)


def test_the_compiled_prefix_step_is_the_one_that_runs():
    """With the compiled kernels in use, ``brknn_b_prefixes`` calls the compiled step (a
    dispatch that fell back to numpy everywhere would pass the equality test above)."""
    from coreselect.core._backend import numba_enabled
    from coreselect.selection import autok
    from coreselect.selection._knn_kernels import prefix_step

    if not numba_enabled("auto"):
        pytest.skip("the numpy kernels run here (CORESELECT_NUMBA=0)")
    # the skip is not decided by the function under test: inverted, it would skip this test
    assert autok._compiled_step() is prefix_step
    calls = []
    real = prefix_step
    rng = np.random.default_rng(0)
    X, Y = rng.random((30, 6)), rng.random((30, 3)) < 0.5
    import unittest.mock as mock

    with mock.patch.object(autok, "_compiled_step",
                           return_value=lambda *a: (calls.append(1), real(*a))):
        got = list(brknn_b_prefixes(X[:20], Y[:20], X[20:], k_grid(6)))
    assert len(calls) == k_grid(6).size == len(got)
    # float32 columns: the kernel's float64 sums would differ from numpy's, so numpy runs
    calls.clear()
    with mock.patch.object(autok, "_compiled_step",
                           return_value=lambda *a: (calls.append(1), real(*a))):
        list(brknn_b_prefixes(X[:20].astype(np.float32), Y[:20], X[20:].astype(np.float32),
                              k_grid(6)))
    assert calls == []
    # backend="numpy" runs the reference (else the equality test compares the kernel with
    # itself)
    with mock.patch.object(autok, "_compiled_step",
                           return_value=lambda *a: (calls.append(1), real(*a))):
        list(brknn_b_prefixes(X[:20], Y[:20], X[20:], k_grid(6), backend="numpy"))
        # no neighbour asked for: the kernel's buffer would have no slot (and no bounds check)
        list(brknn_b_prefixes(X[:20], Y[:20], X[20:], k_grid(6), 0))
    assert calls == []


def test_the_numpy_kernels_leave_the_prefix_step_uncompiled(monkeypatch):
    """Under ``CORESELECT_NUMBA=0`` the numpy form runs (no compiled step)."""
    from coreselect.selection import autok

    monkeypatch.setenv("CORESELECT_NUMBA", "0")
    assert autok._compiled_step() is None


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 30), L=st.integers(1, 6))
def test_example_f1_equals_the_measure(seed, n, L):
    rng = np.random.default_rng(seed)
    T, P = rng.random((n, L)) < 0.3, rng.random((n, L)) < 0.3
    if L > 1:  # scikit-learn's samplewise F1 needs two labels or more
        assert example_f1(T, P) == pytest.approx(sk_example_f1(T, P))
    per = [1.0 if not (t.any() or p.any()) else 2 * (t & p).sum() / (t.sum() + p.sum())
           for t, p in zip(T, P)]
    assert example_f1(T, P) == pytest.approx(np.mean(per))


def test_one_standard_error_rule_by_hand():
    grid = np.array([1, 2, 3, 5])
    scores = np.array([[0.50, 0.60, 0.71, 0.72],
                       [0.52, 0.62, 0.71, 0.70],
                       [0.48, 0.58, 0.72, 0.74]])
    # best mean 0.72 at k = 5, its std over folds (ddof 0) 0.0163, se 0.0094: the mean
    # 0.7133 of k = 3 is within (>= 0.7106), the 0.60 of k = 2 is not
    assert one_standard_error(grid, scores) == (3, 5)
    assert one_standard_error(grid, scores[:, [0, 1]]) == (2, 2)


def test_grid():
    assert k_grid(0).tolist() == []
    assert k_grid(1).tolist() == [1]
    assert k_grid(12).tolist() == [1, 2, 3, 5, 7, 10, 12]
    assert k_grid(100).tolist() == [1, 2, 3, 5, 7, 10, 20, 30, 50, 70, 100]


def _run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture(scope="module")
def arff(tmp_path_factory):
    from coreselect.io import from_arrays, write

    rng = np.random.default_rng(0)
    Y = (rng.random((150, 3)) < 0.4).astype(int)
    X = np.column_stack([rng.normal(size=(150, 14)) + Y @ rng.normal(size=(3, 14)),
                         rng.normal(size=(150, 6))])
    path = tmp_path_factory.mktemp("autok") / "a.arff"
    write(from_arrays(X, Y, feature_names=[f"f{j}" for j in range(20)],
                      label_names=["a", "b", "c"], name="a"), path)
    return path


def test_select_k_auto_puts_the_chosen_k_everywhere(capsys, tmp_path, arff):
    curve, out = tmp_path / "curve.png", tmp_path / "r.json"
    code, stdout, err = _run(capsys, "select", arff, "--k", "auto", "--k-curve", curve,
                             "--json", "--out", out, "--explain")
    assert code == 0, err
    report = json.loads(stdout)
    auto = report["k_auto"]
    assert report["k"] == auto["k"] == len(report["selected"]) == len(report["explanations"])
    assert report["spec"]["k"] == auto["k"] and auto["cap"] == 20
    assert report["ranking"][:auto["k"]] == report["selected"] and len(report["ranking"]) == 20
    assert auto["curve"]["n_features"] == k_grid(20).tolist()
    assert json.loads(out.read_text())["k_auto"] == auto
    assert curve.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, stdout, err = _run(capsys, "select", arff, "-k", "auto")
    assert code == 0 and f"k=auto -> {auto['k']} (best mean at" in stdout


@pytest.mark.parametrize("args, words", [
    (["-k", "auto", "--mode", "distributed"], "--mode centralized"),
    (["-k", "5", "--k-curve", "c.png"], "--k-curve"),
    (["-k", "5", "--percentile", "10"], "--percentile"),
    (["-k", "many"], "auto or an integer"),
    (["--percentile", "0"], "selects no feature"),
])
def test_select_refusals_are_one_line(capsys, arff, args, words):
    code, out, err = _run(capsys, "select", arff, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and words in err, err


def test_select_percentile(capsys, arff):
    code, out, err = _run(capsys, "select", arff, "--percentile", "25", "--json")
    assert code == 0, err
    assert json.loads(out)["k"] == 5  # ceil(0.25 * 20)


def test_evaluate_k_auto_is_nested_in_the_outer_folds(capsys, tmp_path, arff, monkeypatch):
    """Each outer training fold chooses its own k, from its rows only."""
    import coreselect.selection as selection

    seen = []
    real = selection.select

    def spy(data, Y=None, **kw):
        if kw.get("k") == "auto":
            seen.append(data.shape[0])
        return real(data, Y, **kw)

    monkeypatch.setattr(selection, "select", spy)
    code, out, err = _run(capsys, "evaluate", arff, "--k", "auto", "--methods", "gds",
                          "--folds", "3", "--out", tmp_path / "ev", "-q")
    assert code == 0, err
    assert seen == [100, 100, 100]  # the training folds: 2 of 3 parts of 150 rows
    import pandas as pd

    df = pd.read_csv(tmp_path / "ev" / "results.csv")
    assert set(df["k"]) == {"auto"} and df["k_chosen"].between(1, 20).all()
    assert "k auto (chosen on each training fold): gds" in (tmp_path / "ev" /
                                                            "summary.md").read_text()


def test_evaluate_k_auto_gives_every_ranker_the_same_rule(tmp_path, arff, monkeypatch):
    """--k auto on a rival: its ranking on the training fold, cut by autok's rule run on that
    fold's rows only (the same choose_k as GDS), and the chosen k in the results."""
    import coreselect.selection.autok as autok
    from coreselect import load
    from coreselect.evaluation.protocol import make_folds, method_factories, run_protocol

    ds = load(arff)
    X, Y = np.asarray(ds.X), np.asarray(ds.Y)
    calls = []
    real = autok.choose_k

    def spy(Xtr, Ytr, order, **kw):
        got = real(Xtr, Ytr, order, **kw)
        calls.append((Xtr.shape[0], np.asarray(order).copy(), got.k))
        return got

    monkeypatch.setattr(autok, "choose_k", spy)
    df = run_protocol(X, Y, method_factories(["br-chi2", "all"]), ["auto"], n_folds=3, seed=0)
    folds = make_folds(X.shape[0], 3, 0)
    assert [c[0] for c in calls] == [len(tr) for tr, _ in folds]  # training rows only
    for (tr, _), (_, order, _k) in zip(folds, calls):
        ranking = method_factories(["br-chi2"])["br-chi2"](20, 0).fit(X[tr], Y[tr]).ranking_
        assert order.size == 20 and order.tolist() == list(ranking[:20])
    chosen = df[df.method == "br-chi2"].groupby("fold")["k_chosen"].first().tolist()
    assert chosen == [c[2] for c in calls]
    assert (df[df.method == "all"]["k_chosen"] == X.shape[1]).all()  # the reference: every feature
    assert set(df[df.method == "br-chi2"]["k"]) == {"auto"}
    sparse = run_protocol(sp.csr_matrix(X), Y, method_factories(["br-chi2"]), ["auto"],
                          n_folds=3, seed=0)  # the cap counts varying columns of a sparse fold
    assert sparse["k_chosen"].tolist() == df[df.method == "br-chi2"]["k_chosen"].tolist()


def test_evaluate_k_auto_refuses_a_lambda_sweep(capsys, tmp_path, arff):
    code, out, err = _run(capsys, "evaluate", arff, "--k", "auto", "--lam-sweep", "0,1",
                          "--methods", "gds", "--out", tmp_path / "ev")
    assert code == 2 and "--lam-sweep" in err and len(err.strip().splitlines()) == 1


def _rule_by_statement(cv: dict, half: int, folds: int) -> int:
    """The rule as docs state it, by loops: per measure the best mean's k (the first on ties),
    but at most ``half`` unless the best beyond it clears the best at or below it plus the
    larger of the two's standard errors; the larger over example F1 and macro F1."""
    grid = [int(g) for g in cv["n_features"]]
    picks = []
    for m in ("example_f1", "macro_f1"):
        runs = [[cv[f"split{i}_test_{m}"][j] for i in range(folds)] for j in range(len(grid))]
        means = [sum(r) / folds for r in runs]
        top = max(range(len(grid)), key=lambda j: (means[j], -j))
        low = [j for j in range(len(grid)) if grid[j] <= half]
        if grid[top] > half and low:
            b = max(low, key=lambda j: (means[j], -j))
            se = max(float(np.std(runs[b])), float(np.std(runs[top]))) / folds ** 0.5
            if means[top] <= means[b] + se:
                top = b
        picks.append(grid[top])
    return max(picks)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_choose_k_follows_its_stated_rule(seed):
    from coreselect.selection.autok import choose_k

    rng = np.random.default_rng(seed)
    Y = (rng.random((160, 4)) < 0.3).astype(int)
    X = np.column_stack([rng.normal(size=(160, 6)) + Y @ rng.normal(size=(4, 6)),
                         rng.normal(size=(160, 10))])
    order = rng.permutation(16)
    got = choose_k(X, Y, order)
    assert got.half == 8
    assert got.k == _rule_by_statement(got.cv_results, 8, got.folds)
    assert got.k == max(p["k"] for p in got.per_measure.values())
    d = got.to_dict()
    assert set(d["measures"]) == {"example_f1", "macro_f1"} and d["half"] == 8


def test_half_cap_by_hand():
    from coreselect.selection.autok import measure_pick

    grid = np.array([1, 2, 5, 10])
    flat = np.array([[0.50, 0.70, 0.71, 0.715],
                     [0.52, 0.72, 0.70, 0.713],
                     [0.48, 0.68, 0.72, 0.714]])
    # best mean 0.714 at k = 10 (> half = 5); best at or below half: 0.71 at k = 5, its se
    # 0.0082 / sqrt(3) = 0.0047: 0.714 <= 0.7147, no real rise, so k = 5
    got = measure_pick(flat, grid, "best", half=5)
    assert got["k"] == 5 and got["threshold"] == pytest.approx(0.71 + np.std([0.71, 0.70, 0.72]) / np.sqrt(3))
    rising = flat.copy()
    rising[:, 3] += 0.05  # now it clears the threshold: the curve still rises beyond half
    assert measure_pick(rising, grid, "best", half=5)["k"] == 10
    # a rise carried by one inner fold: the mean beyond half (0.733) clears the lower point
    # plus its error (0.7147) but not plus its own (0.0471 / sqrt(3) = 0.0272): not a rise
    noisy = flat.copy()
    noisy[:, 3] = [0.70, 0.70, 0.80]
    got = measure_pick(noisy, grid, "best", half=5)
    assert got["k"] == 5
    assert got["threshold"] == pytest.approx(0.71 + np.std([0.70, 0.70, 0.80]) / np.sqrt(3))
    # the upper end is the best mean above half, not the cap: here the cap (k = 20) is lower
    # and steady (no error), the rise at k = 10 is still one fold's
    wide = np.array([1, 2, 5, 10, 20])
    beyond = np.column_stack([noisy, [0.72, 0.72, 0.72]])
    got = measure_pick(beyond, wide, "best", half=5)
    assert got["k"] == 5
    assert got["threshold"] == pytest.approx(0.71 + np.std([0.70, 0.70, 0.80]) / np.sqrt(3))
    assert measure_pick(flat, grid, "best", half=None)["k"] == 10
    assert measure_pick(flat, grid, "se", half=None)["k"] == one_standard_error(grid, flat)[0]


def test_a_near_duplicate_at_distance_zero_is_a_tied_neighbour_of_every_prefix():
    """As BRkNNb: with the k-th distance exactly 0, a training row 1e-14 away (squared) is a
    neighbour too (an absolute tolerance below 1), in the compiled step and the numpy form."""
    Xtr, Ytr = np.array([[0.0], [1e-7], [1.0]]), np.array([[0, 0], [1, 1], [0, 0]]) > 0
    for backend in ("auto", "numpy"):
        (pred,) = brknn_b_prefixes(Xtr, Ytr, np.array([[0.0]]), np.array([1]), 1,
                                   backend=backend)
        # two neighbours, two labels between them: round(2 / (2 + 2/3)) = 1 label, the first
        # of the tie; the exact match alone has none (0 labels)
        assert pred.tolist() == [[1, 0]], backend
