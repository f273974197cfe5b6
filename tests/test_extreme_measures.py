"""Ranking measures of extreme classification (P@k, nDCG@k, PSP@k, PSnDCG@k) against a slow
reference written from the definitions, on random data with ties, empty rows, k > labels and
sparse candidate scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.evaluation.measures import (jain_propensities, ndcg_at_k, precision_at_k,
                                            ranking_measures, top_k_labels)


def _ranking(row_scores, k):
    """Labels by score descending, ties to the lower index; only candidates (not None)."""
    cands = [(-s, l) for l, s in enumerate(row_scores) if s is not None]
    return [l for _, l in sorted(cands)[:k]]


def _ref(Y, S, k, prop=None):
    n = len(Y)
    p_sum = n_sum = 0.0
    for y, s in zip(Y, S):
        ranked = _ranking(s, k)
        true = {l for l, v in enumerate(y) if v}
        w = [(1.0 / prop[l] if prop is not None else 1.0) if l in true else 0.0 for l in ranked]
        p_sum += sum(w) / k
        dcg = sum(v / math.log2(r + 2) for r, v in enumerate(w))
        if prop is not None:
            ideal = sum(1 / math.log2(r + 2) for r in range(k))
        else:
            ideal = sum(1 / math.log2(r + 2) for r in range(min(k, len(true))))
        n_sum += dcg / ideal if ideal > 0 else 0.0
    return p_sum / n, n_sum / n


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 12), L=st.integers(1, 15), k=st.integers(1, 7),
       seed=st.integers(0, 10**6), sparse_scores=st.booleans(), propensity=st.booleans())
def test_ranking_measures_equal_reference(n, L, k, seed, sparse_scores, propensity):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, L)) < 0.3).astype(int)
    S = rng.integers(0, 4, size=(n, L)).astype(float)  # many ties
    if sparse_scores:
        keep = rng.random((n, L)) < 0.5
        S = np.where(keep, S + 1.0, 0.0)  # stored candidates are > 0
        scores = sp.csr_matrix(S)
        rows = [[v if v != 0 else None for v in r] for r in S]
    else:
        scores = S
        rows = [list(r) for r in S]
    prop = jain_propensities(Y) if propensity else None
    p_ref, n_ref = _ref(Y.tolist(), rows, k, prop)
    assert precision_at_k(sp.csr_matrix(Y), scores, k, prop) == pytest.approx(p_ref)
    assert ndcg_at_k(Y, scores, k, prop) == pytest.approx(n_ref)
    top = top_k_labels(scores, k)
    for i in range(n):
        expect = _ranking(rows[i], k)
        assert top[i, :len(expect)].tolist() == expect
        assert (top[i, len(expect):] == -1).all()


def test_propensities_and_summary():
    Y = np.zeros((100, 3), dtype=int)
    Y[:50, 0] = 1
    Y[:2, 1] = 1
    p = jain_propensities(Y)
    assert p[0] > p[1] > p[2] > 0  # frequent labels are more likely observed
    out = ranking_measures(Y, np.tile([3.0, 2.0, 1.0], (100, 1)), propensities=p)
    assert set(out) == {f"{m}@{k}" for m in ("P", "nDCG", "PSP", "PSnDCG") for k in (1, 3, 5)}
    assert out["P@1"] == 0.5
