"""The sparse relevance in every in-memory mode: the same selection as the dense path.

``relevance_backend="auto"`` takes the sparse form when the dense matrix would exceed
``DENSE_RELEVANCE_MAX_BYTES``; setting that to 0 (or to infinity) forces one form or the other
through the public API, so distributed parts (Problem.subproblem -> SparseRelevance.take),
process pools (pickled problems) and streaming are exercised exactly as users run them.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import coreselect.core.sparse_relevance as sparse_relevance
from coreselect import select
from test_extreme_core import assert_sparse_matches_dense


def _data(seed, n=70, d=30, L=120):
    rng = np.random.default_rng(seed)
    X = rng.exponential(size=(n, d)) * (rng.random((n, d)) < 0.15)
    X[:, 5] = X[:, 4]
    freq = 1.0 / (1 + np.arange(L)) ** 0.8  # power-law label frequencies
    Y = (rng.random((n, L)) < 0.4 * freq).astype(int)
    Y[:, 7] = 0  # empty
    Y[:, 8] = 1  # all ones
    return sp.csr_matrix(X), Y


def _run(monkeypatch, limit, X, Y, **kw):
    monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", limit)
    return select(X, Y, min_bin_count=3, **kw)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("relevance", ["mi", "nmi"])
@pytest.mark.parametrize("run", [
    dict(mode="centralized"),
    dict(mode="distributed", partitions=3, random_state=5),
    dict(mode="distributed", partitions=4, coreset_size=3, random_state=1, n_workers=2),
    dict(mode="streaming", partitions=3, random_state=2),
])
def test_modes_equal_dense(monkeypatch, seed, relevance, run):
    X, Y = _data(seed)
    kw = dict(k=6, p=4, lam=0.4, relevance=relevance, **run)
    sparse = _run(monkeypatch, 0, X, Y, **kw)
    dense = _run(monkeypatch, float("inf"), X, Y, **kw)
    assert sparse.data["relevance_backend"] == "sparse"
    assert dense.data["relevance_backend"] == "dense"
    assert_sparse_matches_dense(sparse, dense)
    assert [p.selected.tolist() for p in sparse.parts] == [p.selected.tolist() for p in dense.parts]
