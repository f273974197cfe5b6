"""The ranking measures (coreselect.evaluation.ranking) against loops written from the formulas.

The reference ranks every label of a dense row by (-score, index) with Python's sort, computes
each measure one row and one position at a time, and the propensities one label at a time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.errors import InputError
from coreselect.evaluation.ranking import (
    RANKING_MEASURES, hits_at_k, inverse_propensity, parse_measures, ranking_measures, top_k,
)


# -- reference -------------------------------------------------------------------------------
def ref_ranking(row) -> list[int]:
    """All labels of one dense score row, best first; ties by the smaller index."""
    return sorted(range(len(row)), key=lambda j: (-float(row[j]), j))


def ref_inv_propensity(Ytrain, A=0.55, B=1.5) -> list[float]:
    n = len(Ytrain)
    C = max(math.log(n) - 1, 0.0) * (B + 1) ** A  # clamped: below e rows, all propensities 1
    out = []
    for label in range(len(Ytrain[0])):
        N_l = sum(1 for row in Ytrain if row[label])
        p = 1.0 / (1.0 + C * math.exp(-A * math.log(N_l + B)))
        out.append(1.0 / p)
    return out


def ref_measure(Y, S, name, inv) -> float:
    kind, k = name.split("@")
    k = int(k)
    n = len(Y)
    if n == 0:
        return float("nan")
    num = den = 0.0
    for i in range(n):
        true = {j for j, v in enumerate(Y[i]) if v}
        top = ref_ranking(S[i])[:k]
        if kind == "p":
            num += sum(1 for j in top if j in true) / k
        elif kind == "ndcg":
            dcg = sum(1 / math.log2(r + 2) for r, j in enumerate(top) if j in true)
            idcg = sum(1 / math.log2(r + 2) for r in range(min(k, len(true))))
            num += dcg / idcg if idcg > 0 else 0.0
        else:
            gain = [inv[j] if j in true else 0.0 for j in top]
            ideal = sorted((inv[j] for j in true), reverse=True)[:k]
            if kind == "psp":
                num += sum(gain)
                den += sum(ideal)
            else:
                num += sum(g / math.log2(r + 2) for r, g in enumerate(gain))
                den += sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    if kind in ("p", "ndcg"):
        return num / n
    return num / den if den > 0 else 0.0


# -- data --------------------------------------------------------------------------------------
@st.composite
def problems(draw):
    n = draw(st.integers(0, 8))
    L = draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    density = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    Y = (rng.random((n, L)) < density).astype(int)
    # few distinct values: many ties, zeros (absent in sparse form) and negatives
    values = draw(st.sampled_from([[0.0, 1.0], [-1.0, 0.0, 0.5, 2.0], [-2.0, -1.0], [0.0]]))
    S = rng.choice(values, size=(n, L)) if draw(st.booleans()) else rng.normal(size=(n, L))
    S = np.where(rng.random((n, L)) < draw(st.sampled_from([0.0, 0.5, 0.9])), 0.0, S)
    n_train = draw(st.integers(1, 10))
    Ytr = (rng.random((n_train, L)) < draw(st.sampled_from([0.0, 0.3, 0.8]))).astype(int)
    return Y, S, Ytr


@settings(max_examples=150, deadline=None)
@given(problems(), st.integers(1, 7))
def test_top_k_agrees_with_sorting_dense_and_sparse(problem, k):
    _, S, _ = problem
    ref = np.array([(ref_ranking(row)[:k] + [-1] * k)[:k] for row in S], dtype=np.int64).reshape(len(S), k)
    assert np.array_equal(top_k(S, k), ref)
    assert np.array_equal(top_k(sp.csr_matrix(S), k), ref)
    # explicit zeros stored in the sparse form change nothing
    Z = sp.csr_matrix(S)
    Z.data[::2] = 0.0
    Sz = Z.toarray()
    refz = np.array([(ref_ranking(row)[:k] + [-1] * k)[:k] for row in Sz], dtype=np.int64).reshape(len(S), k)
    assert np.array_equal(top_k(Z, k), refz)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_measures_agree_with_the_reference(problem):
    Y, S, Ytr = problem
    inv = ref_inv_propensity(Ytr.tolist())
    np.testing.assert_allclose(inverse_propensity(sp.csr_matrix(Ytr)), inv, rtol=1e-12)
    for scores in (S, sp.csr_matrix(S)):
        got = ranking_measures(sp.csr_matrix(Y), scores, Y_train=sp.csr_matrix(Ytr))
        for name in RANKING_MEASURES:
            want = ref_measure(Y.tolist(), S.tolist(), name, inv)
            if math.isnan(want):
                assert math.isnan(got[name])
            else:
                assert got[name] == pytest.approx(want, rel=1e-10, abs=1e-12), name
                assert -1e-12 <= got[name] <= 1 + 1e-12


@settings(max_examples=60, deadline=None)
@given(problems())
def test_ideal_scores_reach_one_and_rows_without_labels_count_zero(problem):
    Y, _, Ytr = problem
    if not Y.any():
        return
    inv = inverse_propensity(sp.csr_matrix(Ytr))
    # the true labels ranked by 1/p: ideal for every measure
    S = Y * (1.0 + inv)[None, :]
    got = ranking_measures(sp.csr_matrix(Y), S, inv_propensity=inv)
    labelled = Y.any(axis=1).mean()
    for name in RANKING_MEASURES:
        kind, k = name.split("@")
        if kind == "ndcg":  # rows with no true label score 0 and stay in the average
            assert got[name] == pytest.approx(labelled)
        elif kind.startswith("ps"):
            assert got[name] == pytest.approx(1.0)
        else:
            best = np.minimum(Y.sum(axis=1), int(k)).mean() / int(k)
            assert got[name] == pytest.approx(best)


def test_hits_without_densifying_and_duplicates():
    Y = sp.csr_matrix(np.array([[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]]))
    top = np.array([[3, 0], [1, 2], [0, -1]])
    assert hits_at_k(Y, top).tolist() == [[True, False], [False, False], [True, False]]


def test_large_label_space_stays_sparse():
    rng = np.random.default_rng(0)
    n, L = 200, 100_000
    Y = sp.random(n, L, density=5 / L, random_state=1, format="csr")
    S = sp.random(n, L, density=30 / L, random_state=2, format="csr")
    got = ranking_measures(Y, S, Y_train=Y)
    assert set(got) == set(RANKING_MEASURES)
    # a perfect scorer on its own training labels
    assert ranking_measures(Y, Y, ["p@1"])["p@1"] == pytest.approx((Y.getnnz(axis=1) > 0).mean())
    del rng


def test_errors_and_parsing():
    Y = sp.csr_matrix(np.eye(3))
    with pytest.raises(InputError):
        ranking_measures(Y, np.zeros((3, 4)))
    with pytest.raises(InputError):
        ranking_measures(Y, np.zeros((3, 3)), ["psp@1"])  # needs the training labels
    with pytest.raises(InputError):
        ranking_measures(Y, np.zeros((3, 3)), ["p@6"])
    with pytest.raises(InputError):
        top_k(np.full((2, 2), np.nan), 1)
    classic = ("micro_f1", "macro_f1")
    assert parse_measures("p@1..3,classic,p@1", classic) == ["p@1", "p@2", "p@3", "micro_f1", "macro_f1"]
    assert parse_measures("ranking", classic) == list(RANKING_MEASURES)
    for bad in ("p@9", "", "foo", "p@a..b"):
        with pytest.raises(InputError):
            parse_measures(bad, classic)
