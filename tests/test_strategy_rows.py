"""``mode="rows"`` (the RowSharded strategy) selects exactly what the centralized AltGreedy
selects, in memory and from a store's row blocks, and both equal the slow reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import reference
from _assertions import assert_same_selection
from paths import run_centralized, run_rows, run_store_rows

from coreselect.errors import InputError


def _data(seed: int, sparse: bool):
    rng = np.random.default_rng(seed)
    n, d, L = 120, 14, 4
    X = rng.integers(0, 4, size=(n, d)).astype(float) * (rng.random((n, d)) < 0.5)
    X[:, 3] = 0.0  # a constant column
    Y = (rng.random((n, L)) < 0.3).astype(int)
    Y[:, 0] = X[:, 1] > 0  # a label some feature explains
    return (sp.csr_matrix(X) if sparse else X), Y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("shards", [1, 2, 7])
@pytest.mark.parametrize("relevance", ["mi", "nmi"])
def test_rows_equal_centralized_and_reference(sparse, shards, relevance):
    X, Y = _data(shards, sparse)
    params = dict(k=5, lam=0.4, p=2, relevance=relevance, min_bin_count=1)
    central = run_centralized(X, Y, **params)
    rows = run_rows(X, Y, row_shards=shards, **params)
    assert_same_selection(rows, central)
    ref = reference.centralized(reference.codes_of(X, min_bin_count=1), np.asarray(Y), k=5,
                                lam=0.4, p=2, kind=relevance)
    assert_same_selection(rows, ref)
    assert rows.engine_info["row_shards"] == shards


@pytest.mark.parametrize("row_block_size", [17, 50, 500])
def test_store_row_blocks_equal_centralized(tmp_path, row_block_size):
    X, Y = _data(3, True)
    params = dict(k=4, lam=0.5, p=3, relevance="mi", min_bin_count=1)
    central = run_centralized(X, Y, **params)
    rows = run_store_rows(X, Y, tmp_path / "s", row_block_size=row_block_size, **params)
    assert_same_selection(rows, central)
    assert rows.engine_info["row_shards"] == -(-X.shape[0] // row_block_size)


def test_store_row_shards_are_its_row_blocks(tmp_path):
    X, Y = _data(4, False)
    with pytest.raises(InputError, match="row block"):
        run_store_rows(X, Y, tmp_path / "s", row_block_size=40, row_shards=2, k=3,
                       min_bin_count=1)
