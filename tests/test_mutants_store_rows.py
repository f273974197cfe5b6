"""Tests written for mutants that survived the mutation run (tests/tools/mutation.py): a
store tile's indptr length checked exactly, and RowSharded mapping the selected shard
positions back to the candidates' original column ids."""

from __future__ import annotations

import numpy as np
import pytest
from test_store_integrity import _forge, _load, _tile

from coreselect.selection.sources import InMemorySource
from coreselect.selection.spec import Objective
from coreselect.store import StoreError, open_store
from coreselect.selection.strategies import AltGreedy, RowSharded


@pytest.fixture
def st(tmp_path):
    import scipy.sparse as sp

    from coreselect.store import build_store

    rng = np.random.RandomState(0)
    X = sp.random(60, 20, density=0.3, random_state=rng, format="csr")
    X.data = np.round(X.data * 30) + 1
    Y = (rng.rand(60, 2) < 0.4).astype(np.int8)
    return build_store(X, Y, tmp_path / "s", block_size=8, row_block_size=30, seed=1).path


@pytest.mark.parametrize("change", [lambda a: np.append(a, a[-1]), lambda a: a[:-1]],
                         ids=["one entry too many", "one entry short"])
def test_indptr_of_the_wrong_length_is_damage(st, change):
    rel = _tile(None, 1, 1, "indptr")
    _forge(st, rel, change(_load(st, rel)))
    with pytest.raises(StoreError, match="block 1, row block 1"):
        open_store(st).verify()
    # Read without the opening check (one extra trailing entry is otherwise ignored by a
    # slice): the tile itself is refused, not read as if it were whole.
    for read in (lambda s: s.read_tile(1, 0, s.n_features), lambda s: s.read_all()):
        with pytest.raises(StoreError, match=r"block 1, row block 1 is damaged \(indptr has"):
            read(open_store(st, check=False))


def test_row_sharded_selection_reports_original_column_ids():
    """With ID columns left out (candidates 1, 3, 4, ...), the row-sharded strategy reports
    the same original ids as the centralized one, not positions among the candidates."""
    rng = np.random.default_rng(3)
    n, d = 90, 12
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    Y = (rng.random((n, 3)) < 0.4).astype(int)
    Y[:, 0] |= X[:, 7] > 1
    columns = [1, 3, 4, 5, 7, 8, 10, 11]
    source = InMemorySource(X, Y, columns=columns)
    objective = Objective(k=4, p=2)
    rows = RowSharded(row_shards=3).run(objective, source, backend="numpy")
    central = AltGreedy().run(objective, source, backend="numpy")
    assert list(rows.selected) == list(central.selected)
    assert set(rows.selected) <= set(columns)
