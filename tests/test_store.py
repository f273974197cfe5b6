"""The tiled column store: tiles, row-chunk builds, and reads that agree with discretizing
everything in memory (the slow, obviously correct reference)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from coreselect.core.discretize import discretize, discretize_labels
from coreselect.errors import InputError
from coreselect.store import (
    FORMAT_VERSION,
    TARGET_TILE_NNZ,
    build_store,
    build_store_from_chunks,
    open_store,
    shuffled_order,
)
from coreselect.store.build import auto_row_block_size, split_rows


def _data(n=150, d=40, seed=0, dense=False):
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=0.2, random_state=rng, format="csr")
    X.data = np.round(X.data * 30)  # many distinct values: split columns
    X.eliminate_zeros()
    Y = (rng.rand(n, 3) < 0.4).astype(np.int8)
    Y[:, 2] = 1  # a label that is always on (flipped codes)
    return (X.toarray() if dense else X), Y


def _reference(X, Y, seed, **kw):
    """Codes of the whole matrix in store order, and the labels, discretized in memory."""
    order = shuffled_order(X.shape[1], seed)
    if sp.issparse(X):  # see test_explicit_zeros
        X = sp.csr_matrix(X, copy=True)
        X.eliminate_zeros()
    return discretize(X[:, order], **kw), discretize_labels(Y), order


def _same(a, b) -> bool:
    return a.shape == b.shape and (sp.csc_matrix(a) != sp.csc_matrix(b)).nnz == 0


@pytest.mark.parametrize("dense", [False, True])
def test_tiles_agree_with_the_whole_matrix(tmp_path, dense):
    X, Y = _data(dense=dense)
    st = build_store(X, Y, tmp_path / "s", block_size=16, row_block_size=40, seed=3)
    assert (st.n_blocks, st.n_row_blocks, st.row_block_size) == (3, 4, 40)
    assert st.row_bounds.tolist() == [0, 40, 80, 120, 150]
    assert st.meta["version"] == FORMAT_VERSION
    full, labels, order = _reference(X, Y, 3)
    for r in range(st.n_row_blocks):
        a, z = st.row_bounds[r], st.row_bounds[r + 1]
        tile = st.read_tile(r, 5, 37)  # crosses column blocks
        assert _same(tile.codes, full.codes[a:z, 5:37])
        assert np.array_equal(tile.n_codes, full.n_codes[5:37])
        assert _same(st.labels_tile(r).codes, labels.codes[a:z])
        assert np.array_equal(st.labels_tile(r).n_codes, labels.n_codes)
    ids, part = st.read_range(7, 33)
    assert np.array_equal(ids, order[7:33]) and _same(part.codes, full.codes[:, 7:33])
    assert _same(st.labels().codes, labels.codes)
    # the same reads from a store with one row block
    one = build_store(X, Y, tmp_path / "one", block_size=16, row_block_size=10**6, seed=3)
    assert one.n_row_blocks == 1
    assert _same(one.read_all().codes, st.read_all().codes)
    assert _same(st.read_all().codes, discretize(X).codes)
    assert st.read_tile(0, 3, 3).codes.shape == (40, 0)
    with pytest.raises(InputError):
        st.read_tile(4, 0, 1)
    with pytest.raises(InputError):
        st.read_range(0, 41)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 30), d=st.integers(1, 12), rbs=st.integers(4, 35),
       bs=st.integers(3, 13), seed=st.integers(0, 3), density=st.floats(0, 1),
       dense=st.booleans())
def test_tiled_reads_property(tmp_path_factory, n, d, rbs, bs, seed, density, dense):
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X.data = np.round(X.data * 5)
    Y = (rng.rand(n, 2) < 0.5).astype(int)
    X = X.toarray() if dense else X
    st = build_store(X, Y, tmp_path_factory.mktemp("p") / "s", block_size=bs,
                     row_block_size=rbs, seed=seed, min_bin_count=1)
    full, labels, _ = _reference(X, Y, seed, min_bin_count=1)
    assert _same(st.read_range(0, d)[1].codes, full.codes)
    got = sp.vstack([st.read_tile(r, 0, d).codes for r in range(st.n_row_blocks)])
    assert _same(got, full.codes)
    assert _same(st.labels().codes, labels.codes)
    st.verify()


def test_split_rows_reference():
    rng = np.random.RandomState(1)
    codes = sp.random(57, 9, density=0.3, random_state=rng, format="csc")
    bounds = np.array([0, 10, 11, 40, 57])
    for r, (ptr, idx, dat) in enumerate(split_rows(codes, bounds)):
        tile = sp.csc_matrix((dat, idx, ptr), shape=(bounds[r + 1] - bounds[r], 9))
        assert _same(tile, codes[bounds[r]:bounds[r + 1]])


@pytest.mark.parametrize("dense", [False, True])
def test_build_from_row_chunks_equals_in_memory(tmp_path, dense):
    X, Y = _data(n=131, dense=dense)
    cuts = [0, 7, 50, 51, 131]  # uneven chunks, one of a single row
    chunks = ((X[a:z], Y[a:z]) for a, z in zip(cuts[:-1], cuts[1:]))
    a = build_store_from_chunks(chunks, tmp_path / "a", block_size=16, row_block_size=30,
                                seed=2)
    b = build_store(X, Y, tmp_path / "b", block_size=16, row_block_size=30, seed=2)
    assert a.meta["files"] == b.meta["files"]  # byte-identical files (size and crc32)
    assert _same(a.read_all().codes, b.read_all().codes)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_build_from_row_chunks_errors_leave_nothing(tmp_path):
    X, Y = _data()
    with pytest.raises(InputError, match="no samples"):
        build_store_from_chunks(iter([]), tmp_path / "s")
    bad = [(X[:10], Y[:10]), (X[10:20, :5], Y[10:20])]
    with pytest.raises(InputError, match="columns"):
        build_store_from_chunks(bad, tmp_path / "s")
    assert list(tmp_path.iterdir()) == []


def test_auto_row_block_size():
    assert auto_row_block_size(1000, 50, 5000, 65536) == 1000  # small: one row block
    n, d, nnz = 10_000_000, 100_000, 10**9
    rbs = auto_row_block_size(n, d, nnz, 65536)
    assert rbs % 4096 == 0 and rbs < n
    tile_nnz = nnz / n * rbs * 65536 / d
    assert TARGET_TILE_NNZ <= tile_nnz < TARGET_TILE_NNZ * 1.01


def test_default_build_chooses_row_blocks(tmp_path):
    X, Y = _data(n=150)
    st = build_store(X, Y, tmp_path / "s")
    assert (st.n_row_blocks, st.row_block_size) == (1, 150)
    info = st.info()
    assert info["n_row_blocks"] == 1 and info["version"] == FORMAT_VERSION


def test_old_version_is_refused(tmp_path):
    from coreselect.store import StoreError
    from coreselect.store._format import meta_checksum

    X, Y = _data()
    st = build_store(X, Y, tmp_path / "s")
    meta = json.loads((st.path / "store.json").read_text())
    meta["version"] = 1
    meta["checksum"] = meta_checksum(meta)
    (st.path / "store.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match="format version 1, this coreselect reads version 2"):
        open_store(st.path)


def test_store_ref_and_reopen(tmp_path):
    X, Y = _data()
    st = build_store(X, Y, tmp_path / "s", row_block_size=64)
    again = open_store(st.ref)
    assert again.n_row_blocks == 3 and os.path.samefile(again.path, st.path)


def test_explicit_zeros(tmp_path):
    """A stored zero in a column whose most frequent value is not zero: the store gives the
    codes of the matrix without it (as discretize does: test_explicitly_stored_zeros_are_zeros)."""
    X = sp.csr_matrix((np.array([4.0, 5.0, 0.0, 3.0, 5.0]), np.array([0, 1, 1, 0, 1]),
                       np.array([0, 2, 3, 5])), shape=(3, 2))  # [1, 1] is a stored zero
    Y = np.array([[1], [0], [1]])
    st = build_store(X, Y, tmp_path / "s", min_bin_count=1)
    assert _same(st.read_all().codes, discretize(X.toarray(), min_bin_count=1).codes)


def test_store_format_benchmark_runs():
    """Smoke test of benchmarks/store_format.py (no timing asserted)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "store_format.py"
    out = subprocess.run([sys.executable, str(script), "--quick", "--no-dense"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "| npy + crc32 (coreselect)" in out.stdout


def test_selection_is_the_same_on_a_tiled_store(tmp_path):
    from coreselect.selection import select

    X, Y = _data(n=200, d=60)
    one = build_store(X, Y, tmp_path / "one", block_size=16, seed=4)
    tiled = build_store(X, Y, tmp_path / "tiled", block_size=16, row_block_size=48, seed=4)
    assert (one.n_row_blocks, tiled.n_row_blocks) == (1, 5)
    for mode in ("distributed", "centralized"):
        parts = {"partitions": 3} if mode != "centralized" else {}  # else refused: unused
        a = select(one, k=5, mode=mode, **parts)
        b = select(tiled, k=5, mode=mode, **parts)
        assert np.array_equal(a.selected, b.selected)


def test_column_ids_number_selections_as_the_source(tmp_path):
    """A store of some columns of a matrix (as 'store build' leaves ID columns out) reports
    the matrix's column numbers: the same selection, parts included, as the in-memory source
    restricted to those columns."""
    from coreselect.errors import StoreError
    from coreselect.selection import select
    from coreselect.selection.sources import InMemorySource
    from coreselect.selection.spec import Binning

    X, Y = _data(n=120, d=30)
    keep = np.setdiff1d(np.arange(30), [0, 7, 8])
    names = [f"f{j}" for j in range(30)]
    st = build_store(X[:, keep], Y, tmp_path / "s", block_size=8, seed=3,
                     feature_names=[names[j] for j in keep], column_ids=keep)
    assert np.array_equal(st.column_ids, keep) and st.verify()["files"] > 0
    memory = InMemorySource(X, Y, Binning(), columns=keep, feature_names=names)
    for mode in ("distributed", "centralized"):
        parts = {"partitions": 2} if mode != "centralized" else {}  # else refused: unused
        seed = {"random_state": 3} if mode != "centralized" else {}  # else refused: unused
        a = select(st, k=4, mode=mode, **seed, **parts)
        b = select(memory, k=4, mode=mode, **seed, **parts)
        assert a.selected.tolist() == b.selected.tolist()
        assert set(a.selected.tolist()) <= set(keep.tolist())
        assert a.names == b.names == [names[j] for j in a.selected]
        assert [p.selected.tolist() for p in a.parts] == [p.selected.tolist() for p in b.parts]
    with pytest.raises(InputError, match="column_ids"):
        build_store(X, Y, tmp_path / "bad", column_ids=np.arange(30)[::-1])
    assert not (tmp_path / "bad").exists()
    # all columns, in order: nothing recorded
    assert build_store(X, Y, tmp_path / "all", column_ids=np.arange(30)).column_ids is None
    # damaged ids in store.json are refused (the checksum is recomputed to pass that check)
    from coreselect.store import META_FILE
    from coreselect.store._format import meta_checksum

    meta = json.loads((st.path / META_FILE).read_text())
    meta["column_ids"] = meta["column_ids"][:-1]
    meta["checksum"] = meta_checksum(meta)
    (st.path / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(StoreError, match="column_ids"):
        open_store(st.path).column_ids


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 70), d=st.integers(1, 30), block_size=st.integers(1, 12),
       row_block=st.integers(1, 40), density=st.sampled_from([0.0, 0.05, 0.4, 1.0]),
       seed=st.integers(0, 2**16))
def test_read_all_is_read_range_put_in_id_order(tmp_path_factory, n, d, block_size, row_block,
                                                 density, seed):
    """The one-copy ``read_all`` gives the arrays of the plain formula (every column in
    store order, stacked, then permuted into id order) bit for bit, dtypes included: uneven
    and single row blocks, a last short column block, empty columns, one column."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr")
    X.data = np.ceil(X.data * 9)
    Y = (rng.random((n, 2)) < 0.4).astype(np.int8)
    s = open_store(build_store(X, Y, tmp_path_factory.mktemp("s") / "s", block_size=block_size,
                               row_block_size=row_block, seed=seed, min_bin_count=1).path)
    ids, block = s.read_range(0, s.n_features)
    want = block.take(np.argsort(ids, kind="stable"))
    got = s.read_all()
    for a, b in ((got.codes.indptr, want.codes.indptr), (got.codes.indices, want.codes.indices),
                 (got.codes.data, want.codes.data), (got.n_codes, want.n_codes)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert got.codes.shape == want.codes.shape
