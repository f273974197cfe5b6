"""Row-sharded runs with many binary labels: sparse co-occurrence counts that add over shards.

``mode="rows"`` (local shards, Dask tiles, a store's row blocks) takes the sparse relevance
when the centralized run would (core/shards.py ``SparseShardCounts``): the (label, feature
code) co-occurrences of each shard are a sparse matrix, the merge is their sum, and the
relevance comes from the merged counts in closed form (``MergedSparseRelevance``). Checked:

* the merge law: the counts of all rows equal the sum of any split's counts (uneven and empty
  shards, one-row shards, shards where no label is on), and equal the dense tables';
* the relevance from merged counts equals the centralized sparse form bit for bit and the
  dense kernel up to rounding, and the selection is the centralized dense one (and the
  reference's on tiny data);
* every route to it (public ``select`` in memory, on a store, on Dask) and the bounded
  per-label relevance of a selection (top labels only, past ``MAX_FULL_LABELS``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import coreselect.core.sparse_relevance as sparse_relevance
import coreselect.selection.explain as explain
import reference as ref
from coreselect import select
from coreselect.core.discretize import discretize, discretize_labels
from coreselect.core.problem import Problem
from coreselect.core.shards import (
    SparseShardCounts, shard_counts, sparse_shard_counts, sparse_statistics,
)
from coreselect.core.sparse_relevance import MergedSparseRelevance
from coreselect.engines.rowsharded import (
    InMemoryRowShards, SequentialRows, row_slice, select_row_sharded,
)
from test_extreme_core import assert_sparse_matches_dense, extreme_data, tiny_case


@st.composite
def splits(draw, n):
    """Row shard bounds: uneven, with empty and one-row shards."""
    cuts = draw(st.lists(st.integers(0, n), max_size=6))
    return np.array([0, *sorted(cuts), n], dtype=np.int64)


def _discrete(X, Y, min_bin):
    return discretize(X, min_bin_count=min_bin), discretize_labels(Y)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=extreme_data(), draw=st.data())
def test_counts_of_the_whole_are_the_sum_of_the_shards(data, draw):
    X, Y, min_bin = data
    F, L = _discrete(X, Y, min_bin)
    bounds = draw.draw(splits(X.shape[0]))
    whole = sparse_shard_counts(F, L)
    parts = [sparse_shard_counts(row_slice(F, a, b), row_slice(L, a, b))
             for a, b in zip(bounds[:-1], bounds[1:])]
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    assert isinstance(total, SparseShardCounts)
    assert total == whole
    # Any order of the sum (associative and commutative).
    backwards = parts[-1]
    for part in parts[-2::-1]:
        backwards = part + backwards
    assert backwards == whole
    # The same numbers as the dense tables: label l's row is its code-1 slot's column.
    dense = shard_counts(F, L, "numpy")
    expected = np.zeros((L.n_columns, int(F.offsets[-1])), dtype=np.int64)
    expected[L.expanded_owner] = dense.joint.T
    np.testing.assert_array_equal(whole.joint.toarray(), expected)
    np.testing.assert_array_equal(total.feature_counts, dense.feature_counts)
    np.testing.assert_array_equal(total.label_counts, dense.label_counts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=extreme_data(), kind=st.sampled_from(["mi", "nmi"]), draw=st.data())
def test_relevance_from_merged_counts(data, kind, draw):
    X, Y, min_bin = data
    F, L = _discrete(X, Y, min_bin)
    bounds = draw.draw(splits(X.shape[0]))
    rows = SequentialRows(InMemoryRowShards(F, L, bounds))
    from coreselect.engines.rowsharded import counts_task

    stats = sparse_statistics(rows.map_reduce(counts_task, "auto", "sparse"), kind)
    merged = stats.relevance
    assert isinstance(merged, MergedSparseRelevance)
    central = Problem.from_discrete(F, L, k=1, relevance=kind, relevance_backend="sparse")
    # Bit for bit the centralized sparse form (same sums in the same order).
    np.testing.assert_array_equal(merged.toarray(), central.relevance.toarray())
    def canonical(rel):  # pairs by (label, feature): ties of the live order may differ
        label = np.repeat(np.arange(rel.n_labels), np.diff(rel.indptr))
        order = np.lexsort((rel.pair_feature, label))
        return rel.indptr, rel.pair_feature[order], rel.pair_value[order], rel.pair_closed[order]

    for a, b in zip(canonical(merged), canonical(central.relevance)):
        np.testing.assert_array_equal(a, b)
    dense = Problem.from_discrete(F, L, k=1, relevance=kind, relevance_backend="dense")
    np.testing.assert_allclose(merged.toarray(), dense.relevance, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(stats.entropies, central.relevance.h_x)
    # A restriction to some columns is the restriction of the matrix.
    some = np.flatnonzero(draw.draw(st.lists(st.booleans(), min_size=F.n_columns,
                                             max_size=F.n_columns)))
    np.testing.assert_array_equal(merged.take(some).toarray(), merged.toarray()[some])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=extreme_data(max_n=50, max_d=14, max_labels=40),
       kind=st.sampled_from(["mi", "nmi"]), lam=st.sampled_from([0.0, 0.4, 1.0]),
       p=st.integers(1, 12), k=st.integers(1, 8), keep=st.booleans(), draw=st.data())
def test_rows_selection_equals_centralized_dense(data, kind, lam, p, k, keep, draw):
    X, Y, min_bin = data
    F, L = _discrete(X, Y, min_bin)
    dense = Problem.from_discrete(F, L, k=k, lam=lam, p=p, relevance=kind, keep_constant=keep,
                                  relevance_backend="dense")
    k = min(k, int(dense.selectable.sum()))
    if k == 0:
        return
    dense = replace(dense, params=replace(dense.params, k=k))  # the objective's c reads k
    expected = dense.run(k, alternate=True)
    bounds = draw.draw(splits(X.shape[0]))
    run = select_row_sharded(SequentialRows(InMemoryRowShards(F, L, bounds)), k=k, lam=lam,
                             p=p, relevance=kind, keep_constant=keep, relevance_backend="sparse")
    assert isinstance(run.stats.relevance, MergedSparseRelevance)
    np.testing.assert_array_equal(run.result.selected, expected.selected)
    np.testing.assert_allclose([run.result.objective, run.result.relevance],
                               [expected.objective, expected.relevance], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["mi", "nmi"])
def test_rows_selection_equals_reference(seed, kind):
    X, Y, k, p, lam = tiny_case(seed)
    F, Lb = _discrete(X, Y, 3)
    run = select_row_sharded(SequentialRows(InMemoryRowShards(F, Lb, [0, 1, 1, 17, 30])), k=k,
                             lam=lam, p=p, relevance=kind, relevance_backend="sparse")
    codes = ref.codes_of(X, min_bin_count=3)
    selectable = [len(set(codes[:, j].tolist())) > 1 for j in range(X.shape[1])]
    chosen, h = ref.greedy(codes, Y, k, lam=lam, p=p, kind=kind, alternate=True,
                           selectable=selectable)
    assert list(run.result.selected) == chosen
    assert run.result.objective == pytest.approx(h, rel=1e-9, abs=1e-12)


def _data(seed, n=90, d=30, L=150):
    rng = np.random.default_rng(seed)
    X = rng.exponential(size=(n, d)) * (rng.random((n, d)) < 0.15)
    X[:, 5] = X[:, 4]
    freq = 1.0 / (1 + np.arange(L)) ** 0.8
    Y = (rng.random((n, L)) < 0.4 * freq).astype(int)
    Y[:, 7], Y[:, 8] = 0, 1
    return sp.csr_matrix(X), Y


def _pair(monkeypatch, run, **kw):
    """The same run with the sparse and with the dense relevance."""
    monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", 0)
    sparse = run(**kw)
    monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", float("inf"))
    dense = run(**kw)
    assert sparse.engine_info["relevance_backend"] == "sparse"
    assert dense.engine_info["relevance_backend"] == "dense"
    assert_sparse_matches_dense(sparse, dense)
    return sparse


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("shards", [1, 4])
def test_select_rows_in_memory(monkeypatch, seed, shards):
    X, Y = _data(seed)
    central = select(X, Y, k=6, p=4, min_bin_count=3)
    rows = _pair(monkeypatch, lambda **kw: select(X, Y, **kw), k=6, p=4, min_bin_count=3,
                 mode="rows", row_shards=shards)
    np.testing.assert_array_equal(rows.selected, central.selected)


def test_select_rows_on_a_store(monkeypatch, tmp_path):
    from coreselect.store import build_store

    X, Y = _data(2)
    build_store(X, Y, tmp_path / "s", min_bin_count=3, row_block_size=25)
    central = select(X, Y, k=5, min_bin_count=3)
    rows = _pair(monkeypatch, lambda **kw: select(str(tmp_path / "s"), **kw), k=5,
                 mode="rows")
    assert rows.engine_info["row_shards"] == 4
    np.testing.assert_array_equal(rows.selected, central.selected)


@pytest.mark.dask
def test_dask_rows_sparse_counts():
    from distributed import Client, LocalCluster

    from coreselect.engines.dask_rows import DaskRows

    X, Y = _data(3)
    F, L = _discrete(X, Y, 3)
    expected = Problem.from_discrete(F, L, k=6, relevance_backend="dense").run(alternate=True)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with DaskRows(client, InMemoryRowShards(F, L, [0, 10, 10, 50, 90])) as rows:
            run = select_row_sharded(rows, k=6, relevance_backend="sparse")
    assert isinstance(run.stats.relevance, MergedSparseRelevance)
    np.testing.assert_array_equal(run.result.selected, expected.selected)


@pytest.mark.parametrize("mode", ["centralized", "rows"])
def test_many_labels_keep_the_top_labels_only(monkeypatch, mode):
    X, Y = _data(4)
    full = select(X, Y, k=5, p=3, min_bin_count=3, mode=mode)
    assert full.label_ids is None and full.label_relevance.shape == (5, Y.shape[1])
    monkeypatch.setattr(explain, "MAX_FULL_LABELS", 40)
    monkeypatch.setattr(explain, "TOP_LABELS", 12)
    monkeypatch.setattr(explain, "_CHUNK_BYTES", 8 * Y.shape[1] * 2)  # 2 rows at a time
    top = select(X, Y, k=5, p=3, min_bin_count=3, mode=mode)
    np.testing.assert_array_equal(top.selected, full.selected)
    np.testing.assert_allclose(top.feature_relevance, full.feature_relevance, rtol=1e-12)
    assert top.label_relevance.shape == (5, 12) and top.n_labels == Y.shape[1]
    # The kept labels are those with the largest terms of g, and their columns are exact.
    terms = np.where(explain.coverage(full.label_relevance, 3), full.label_relevance, 0).sum(0)
    assert set(top.label_ids) == set(np.argsort(-terms, kind="stable")[:12])
    np.testing.assert_array_equal(top.label_relevance, full.label_relevance[:, top.label_ids])
    assert top.to_dict()["labels_explained"] == {"top": 12, "of": Y.shape[1]}
    names = [f"L{j}" for j in range(Y.shape[1])]
    why = top.explain(names)
    assert all(set(e.labels) <= {names[j] for j in top.label_ids} for e in why)
    wide = full.explain(names)
    for a, b in zip(why, wide):  # a kept label is listed as with every label kept
        assert [n for n in b.labels if n in {names[j] for j in top.label_ids}] == list(a.labels)


@pytest.mark.parametrize("seed", [0, 1])
def test_grid_sparse_equals_dense(seed):
    """Algorithm 3 on a 2-D grid: the parts restrict the merged sparse relevance (take, never
    dense rows) and select what the dense tables select."""
    from coreselect.engines.rowsharded import select_grid

    X, Y = _data(seed)
    F, L = _discrete(X, Y, 3)
    parts = [np.arange(0, 12), np.arange(12, 30)]
    runs = [select_grid(SequentialRows(InMemoryRowShards.split(F, L, 3)), parts, k=5,
                        relevance_backend=how) for how in ("sparse", "dense")]
    assert isinstance(runs[0].stats.relevance, MergedSparseRelevance)
    np.testing.assert_array_equal(runs[0].result.selected, runs[1].result.selected)
    assert [p.tolist() for p in runs[0].result.extra["parts"]] == \
        [p.tolist() for p in runs[1].result.extra["parts"]]


def test_checkpointed_rows_with_sparse_counts(monkeypatch, tmp_path):
    """A checkpointed rows run with the sparse relevance: its statistics are recorded (the
    pairs and the merged marginals), a second call does not count again and returns the
    same selection."""
    import coreselect.engines.rowsharded as rowsharded

    monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", 0)
    X, Y = _data(5)
    first = select(X, Y, k=4, mode="rows", min_bin_count=3, checkpoint=tmp_path / "ck")
    monkeypatch.setattr(rowsharded, "row_sharded_statistics", None)  # calling it fails
    again = select(X, Y, k=4, mode="rows", min_bin_count=3, checkpoint=tmp_path / "ck")
    assert first.engine_info["relevance_backend"] == "sparse"
    np.testing.assert_array_equal(again.selected, first.selected)
    np.testing.assert_array_equal(first.selected, select(X, Y, k=4, min_bin_count=3).selected)
