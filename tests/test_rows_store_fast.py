"""A store's fast greedy step (column ``u`` + a mapped row-major copy of the tile) equals the
full-tile step (``step_counts`` of the whole tile read back), and streaming selection from a
store with it equals the in-memory run."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from coreselect.core.discretize import discretize, discretize_labels
from coreselect.core.problem import Problem
from coreselect.core.shards import step_counts
from coreselect.engines.rowsharded import SequentialRows, select_row_sharded
from coreselect.selection.sources import StoreRowShards
from coreselect.store import build_store


def _data(seed: int, sparse: bool, n: int = 157, d: int = 23):
    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random(n, d, density=0.15, random_state=seed, format="csr",
                      data_rvs=lambda m: rng.integers(1, 6, m).astype(float))
    else:
        X = rng.normal(size=(n, d))
        X[:, 3] = 0.0  # a constant column: a = 0
    Y = (rng.random((n, 4)) < 0.3).astype(int)
    return X, Y


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("seed,row_block_size", [(0, 40), (1, 61), (2, 157)])
def test_fast_step_equals_full_tile_step(tmp_path, sparse, seed, row_block_size):
    X, Y = _data(seed, sparse)
    store = build_store(X, Y, tmp_path / "s", row_block_size=row_block_size, block_size=7,
                        seed=seed)
    shards = StoreRowShards(store, cache_dir=tmp_path)
    for i in range(shards.n_row_shards):
        tile = shards.tile(i)[0]
        for u in range(X.shape[1]):
            for backend in ("numpy", "numba"):
                fast = shards.step_counts(i, u, backend)
                assert fast.dtype == np.int64
                np.testing.assert_array_equal(fast, step_counts(tile, u, backend))


@pytest.mark.parametrize("sparse", [True, False])
def test_store_streaming_selection_equals_in_memory(tmp_path, sparse):
    X, Y = _data(5, sparse, n=203, d=31)
    store = build_store(X, Y, tmp_path / "s", row_block_size=50, block_size=8, seed=3)
    shards = StoreRowShards(store, cache_dir=tmp_path)
    run = select_row_sharded(SequentialRows(shards), k=6)
    F, L = discretize(X), discretize_labels(Y)
    want = Problem.from_discrete(F, L, k=6).run(alternate=True)
    np.testing.assert_array_equal(run.result.selected, want.selected)
    assert run.result.objective == pytest.approx(want.objective, abs=1e-9)
    # the row-major copies live in the scratch folder, and go with the provider
    cache = shards._cache
    assert cache is not None and len(list(cache.glob("r*"))) == shards.n_row_shards
    del shards
    import gc

    gc.collect()
    assert not cache.exists()
