"""The full-feature reference (``all``), the evaluator's timings and selection stability in the
evaluation protocol (issue 30)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.datasets import make_synthesized
from coreselect.errors import InputError
from coreselect.evaluation.protocol import (
    FULL_MODEL_COPIES,
    full_model_bytes,
    full_reference,
    jaccard_index,
    kuncheva_index,
    make_folds,
    method_factories,
    run_protocol,
    selection_stability,
)


def test_kuncheva_and_jaccard_by_hand():
    # d = 10, k = 4: A = {0,1,2,3}, B = {2,3,4,5}: r = 2
    assert kuncheva_index([0, 1, 2, 3], [2, 3, 4, 5], 10) == pytest.approx((2 * 10 - 16) / (4 * 6))
    assert jaccard_index([0, 1, 2, 3], [2, 3, 4, 5]) == pytest.approx(2 / 6)
    assert kuncheva_index([1, 2], [1, 2], 5) == 1.0 and jaccard_index([1, 2], [2, 1]) == 1.0
    # disjoint: the most negative Kuncheva for k = 2 of 4 is -1
    assert kuncheva_index([0, 1], [2, 3], 4) == -1.0
    assert np.isnan(kuncheva_index([0, 1, 2], [0, 1, 2], 3))  # k = d: undefined
    assert jaccard_index([], []) == 1.0
    with pytest.raises(InputError):
        kuncheva_index([0], [0, 1], 5)


def test_stability_table_by_hand():
    sets = {("m", 3): [[0, 1, 2], [0, 1, 3], [4, 5, 6]]}
    t = selection_stability(sets, n_features=10).iloc[0]
    pairs = [([0, 1, 2], [0, 1, 3]), ([0, 1, 2], [4, 5, 6]), ([0, 1, 3], [4, 5, 6])]
    # r = 2, 0, 0: Jaccard 2/4, 0, 0; Kuncheva (2*10-9)/(3*7), -9/21, -9/21
    assert t.jaccard == pytest.approx((0.5 + 0 + 0) / 3)
    assert t.kuncheva == pytest.approx((11 / 21 - 9 / 21 - 9 / 21) / 3)
    assert t.folds == 3 and t.k == 3
    one = selection_stability({("m", 2): [[0, 1]]}, 5).iloc[0]
    assert np.isnan(one.jaccard) and np.isnan(one.kuncheva)


@settings(max_examples=30, deadline=None)
@given(d=st.integers(2, 12), k=st.integers(1, 11), seeds=st.lists(st.integers(0, 999), min_size=2, max_size=4))
def test_kuncheva_matches_its_formula_on_random_sets(d, k, seeds):
    k = min(k, d - 1)
    sets = [np.random.default_rng(s).choice(d, size=k, replace=False).tolist() for s in seeds]
    got = selection_stability({("m", k): sets}, d).iloc[0]
    vals = [(len(set(a) & set(b)) * d - k * k) / (k * (d - k)) for a, b in itertools.combinations(sets, 2)]
    assert got.kuncheva == pytest.approx(np.mean(vals))
    assert -1.0 - 1e-12 <= got.kuncheva <= 1.0 + 1e-12


def test_protocol_records_stability_of_every_method():
    d = make_synthesized(n_samples=60, copies=2, random_state=0)
    df = run_protocol(d.X, d.Y, method_factories(["br-chi2", "random"]), [2, 5], n_folds=3)
    st_ = pd.DataFrame(df.attrs["stability"])
    assert set(zip(st_.method, st_.k)) == {("br-chi2", 2), ("br-chi2", 5), ("random", 2), ("random", 5)}
    # recompute br-chi2's by hand from its fits on the training folds
    from coreselect.baselines import BASELINES

    folds = make_folds(d.X.shape[0], 3, 0)
    for k in (2, 5):
        sets = [BASELINES["br-chi2"](k=5).fit(d.X[tr], d.Y[tr]).ranking_[:k].tolist() for tr, _ in folds]
        row = st_[(st_.method == "br-chi2") & (st_.k == k)].iloc[0]
        want = selection_stability({("br-chi2", k): sets}, d.X.shape[1]).iloc[0]
        assert row.jaccard == pytest.approx(want.jaccard) and row.kuncheva == pytest.approx(want.kuncheva)


def test_full_reference_rows_and_fractions():
    d = make_synthesized(n_samples=60, copies=2, random_state=1)
    df = run_protocol(d.X, d.Y, method_factories(["br-chi2", "all"]), [2, 4], n_folds=2,
                      evaluator=("brknn", "linear"))
    full = df[df.method == "all"]
    assert set(full.k) == {d.X.shape[1]} and set(full.fold) == {0, 1}
    assert (df[["fit_seconds", "predict_seconds"]] >= 0).all().all()
    assert "all" not in {r["method"] for r in df.attrs["stability"]}
    fr = full_reference(df)
    for (ev, ms), cell in fr.groupby(["evaluator", "measure"]):
        ref = df[(df.method == "all") & (df.evaluator == ev) & (df.measure == ms)]
        for r in cell.itertuples():
            mine = df[(df.method == r.method) & (df.k == r.k) & (df.evaluator == ev) & (df.measure == ms)]
            if ref.value.mean() > 0:
                assert r.fraction == pytest.approx(mine.value.mean() / ref.value.mean())
            assert r.fit_ratio == pytest.approx(mine.fit_seconds.mean() / ref.fit_seconds.mean())
    assert fr[fr.method == "all"].fraction.dropna().eq(1.0).all()
    # the "all" scores are the evaluator on every column, fold by fold
    from coreselect.evaluation.protocol import _score

    for f, (tr, te) in enumerate(make_folds(d.X.shape[0], 2, 0)):
        want = _score(d.X[tr], d.Y[tr], d.X[te], d.Y[te], np.arange(d.X.shape[1]), "linear")
        got = full[(full.fold == f) & (full.evaluator == "linear")].set_index("measure").value
        for m, v in want.items():
            assert got[m] == pytest.approx(v)


def test_full_reference_memory_rule():
    X = np.zeros((40, 7))
    assert full_model_bytes(X, 30) == FULL_MODEL_COPIES * 8 * 30 * 7
    S = sp.random(40, 100, density=0.1, format="csr", random_state=0)
    assert full_model_bytes(S, 20) == int(FULL_MODEL_COPIES * (12 * S.nnz * 0.5 + 8 * 21))
    d = make_synthesized(n_samples=40, copies=2, random_state=2)
    need = full_model_bytes(d.X, 20)
    kept = run_protocol(d.X, d.Y, method_factories(["random", "all"]), [2], n_folds=2, memory_budget=need)
    assert "all" in set(kept.method) and kept.attrs["notes"] == []
    cut = run_protocol(d.X, d.Y, method_factories(["random", "all"]), [2], n_folds=2, memory_budget=need - 1)
    assert set(cut.method) == {"random"}
    assert len(cut.attrs["notes"]) == 1 and "all: left out" in cut.attrs["notes"][0]
    with pytest.raises(InputError, match="left out"):
        run_protocol(d.X, d.Y, method_factories(["all"]), [2], n_folds=2, memory_budget=1)


def test_stability_of_auto_k_takes_kuncheva_over_equal_sizes_only():
    """k = "auto": folds choose different sizes; Jaccard over all pairs, Kuncheva over the
    pairs of equal size (the index is not defined across sizes)."""
    from coreselect.evaluation.protocol import selection_stability

    sets = [[0, 1], [0, 1, 2], [0, 2]]
    row = selection_stability({("gds", "auto"): sets}, 10).iloc[0]
    assert row["k"] == "auto" and row["folds"] == 3
    jac = np.mean([2 / 3, 1 / 3, 2 / 3])
    assert row["jaccard"] == pytest.approx(jac)
    assert row["kuncheva"] == pytest.approx((1 * 10 - 4) / (2 * 8))  # [0,1] vs [0,2] only
    alone = selection_stability({("gds", "auto"): [[0], [0, 1]]}, 10).iloc[0]
    assert np.isnan(alone["kuncheva"])
