"""The out-of-core, parallel store build from files (store/ingest.py, store/_binning.py).

* binning from value counts gives :func:`discretize`'s codes (the reference) on random data,
  dense and sparse, every strategy, any cut into chunks; a sketched column's codes are
  ``discretize`` of its truncated values;
* value counts merge: any split of the rows and any order give the same counts (the merge law
  that makes a parallel build identical);
* a store built from files in chunks equals ``build_store`` on the whole data (every file's
  size and crc32), and so does one built by 2 worker processes and by a Dask cluster;
* with or without a checkpoint (the two step runners), the store is the same bytes and holds
  only its files (nothing of the build: no spill, no plan);
* a build that fails (data that change between the passes, also under a reader that cannot
  tell, bad options) leaves nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.core.discretize import discretize
from coreselect.errors import InputError
from coreselect.io import Dataset, write
from coreselect.io.dataset import IndexedNames
from coreselect.store import build_store
from coreselect.store._binning import ColumnCounts, bin_table, encode_chunk, truncate
from coreselect.store.ingest import (
    BuildOptions, WholeFileChunks, build_store_from_source, plan_groups,
)

PROPS = settings(max_examples=60, deadline=None)


@dataclass(frozen=True)
class Chunk:
    X: object
    Y: object
    file: str
    first_row: int


@dataclass
class MemorySource:
    """Row chunks of in-memory parts (one "file" each), cut every ``step`` rows."""

    parts: list
    step: int = 7
    feature_names: object = None
    label_names: object = None
    n_features: int | None = None
    n_labels: int | None = None

    @property
    def files(self):
        return [f"part{i}" for i in range(len(self.parts))]

    def file_chunks(self, i, chunk_rows=None, chunk_bytes=None):
        X, Y = self.parts[i]
        for a in range(0, X.shape[0], self.step):
            yield Chunk(X[a:a + self.step], Y[a:a + self.step], f"part{i}", a)


def _matrix(draw_rng, n, d, kind, zeros):
    if kind == 0:
        X = draw_rng.integers(-3, 6, (n, d)).astype(float)
    elif kind == 1:
        X = draw_rng.normal(size=(n, d)).round(1)
    else:
        X = draw_rng.poisson(2, (n, d)).astype(float)
    X[draw_rng.random((n, d)) < zeros] = 0
    return X


def _codes_of(counts_parts, X_parts, n_bins, strategy, mbc, sparse, cap):
    counts = ColumnCounts(cap=cap)
    for Xp in X_parts:
        part = ColumnCounts(cap=cap)
        part.add_chunk(Xp, strategy)
        counts.merge(part)
    table = bin_table(counts, n_bins, strategy, mbc)
    d = counts.d
    codes = sp.vstack([encode_chunk(table, Xp, d) for Xp in X_parts], format="csc")
    codes.sort_indices()
    return table, codes, counts


@PROPS
@given(seed=st.integers(0, 2**31 - 1), n=st.sampled_from([1, 2, 9, 40]),
       d=st.integers(1, 6), kind=st.integers(0, 2), zeros=st.floats(0, 1),
       sparse=st.booleans(), strategy=st.sampled_from(["auto", "quantile", "uniform", "none"]),
       n_bins=st.sampled_from([2, 3, 4, 5, "auto"]), mbc=st.integers(1, 6),
       cap=st.sampled_from([1, 3, 10**6]))
def test_binning_from_counts_is_discretize(seed, n, d, kind, zeros, sparse, strategy, n_bins,
                                           mbc, cap):
    rng = np.random.default_rng(seed)
    X = _matrix(rng, n, d, kind, zeros)
    if strategy == "none":
        X = np.round(X)
    cuts = sorted(rng.integers(0, n + 1, 3))  # uneven chunks, some empty
    bounds = list(zip([0, *cuts], [*cuts, n]))
    parts = [(sp.csr_matrix(X[a:b]) if sparse else X[a:b]) for a, b in bounds]
    table, codes, counts = _codes_of(None, parts, n_bins, strategy, mbc, sparse, cap)
    # Reference: discretize on the whole matrix, the sketched columns' values truncated.
    Xr = X.copy()
    Xr[:, counts.sketched] = truncate(Xr[:, counts.sketched])
    ref = discretize(sp.csc_matrix(Xr) if sparse else Xr, n_bins=n_bins, strategy=strategy,
                     min_bin_count=mbc)
    assert counts.sketched.sum() == sum(len(np.unique(X[:, j][X[:, j] != 0])) > cap
                                        for j in range(d))
    np.testing.assert_array_equal(table.n_codes, ref.n_codes)
    want = ref.codes.copy()
    want.eliminate_zeros()
    assert (codes != want).nnz == 0


@PROPS
@given(seed=st.integers(0, 2**31 - 1), cap=st.sampled_from([1, 2, 5, 10**6]),
       n_parts=st.integers(1, 5))
def test_counts_merge_in_any_split_and_order(seed, cap, n_parts):
    rng = np.random.default_rng(seed)
    X = _matrix(rng, 30, 4, int(rng.integers(3)), 0.4)
    whole = ColumnCounts(cap=cap)
    whole.add_chunk(X)
    whole.flush()
    cuts = sorted(rng.integers(0, 31, n_parts - 1))
    parts = []
    for a, b in zip([0, *cuts], [*cuts, 30]):
        p = ColumnCounts(cap=cap)
        p.add_chunk(X[a:b])
        parts.append(p)
    merged = ColumnCounts(cap=cap)
    for p in rng.permutation(len(parts)):
        merged.merge(parts[p])
    for name in ("cols", "vals", "counts", "sketched"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    assert merged.n_rows == whole.n_rows == 30


def test_plan_groups_cover_every_file_once_in_order():
    for sizes in ([], [5], [1, 1, 1], [100, 1, 1, 1, 1, 50], [0] * 9):
        for workers in (1, 2, 3, 8):
            groups = plan_groups(sizes, workers)
            assert [i for g in groups for i in g] == list(range(len(sizes)))
            assert all(g for g in groups)
            assert len(groups) <= max(1, len(sizes))
            if workers == 1:
                assert len(groups) == min(1, len(sizes))


# -- stores: streamed == in memory, whatever the workers --------------------------------
def _data(n=400, d=60, L=5, seed=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.1, random_state=seed, format="csr",
                  data_rvs=lambda k: rng.integers(1, 12, k)).astype(float)
    X = X.tolil()
    X[:, 7] = rng.normal(size=(n, 1)).round(2)  # a continuous column (rule 2 split)
    X = sp.csr_matrix(X)
    Y = (rng.random((n, L)) < 0.3).astype(float)
    Y[:, 1] = 1.0 - (rng.random(n) < 0.1)  # on in most samples: its codes are flipped
    return X, sp.csr_matrix(Y)


def _files(tmp_path, X, Y, cuts):
    files = []
    d, L = X.shape[1], Y.shape[1]
    for i, (a, b) in enumerate(zip([0, *cuts], [*cuts, X.shape[0]])):
        ds = Dataset(X[a:b], Y[a:b], feature_names=IndexedNames(d, "f"),
                     label_names=IndexedNames(L, "l"), name="shards")
        path = tmp_path / f"part{i:02d}.svm"
        write(ds, path)
        files.append(str(path))
    return files


OPTS = dict(block_size=16, row_block_size=96, seed=5)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    X, Y = _data()
    files = _files(tmp, X, Y, [1, 150, 151, 300])  # a 1-row file, uneven files
    ref = build_store(X, Y, tmp / "memory", feature_names=IndexedNames(X.shape[1], "f"), **OPTS)
    return tmp, X, Y, files, ref


def _same_store(a, b):
    assert a.meta["files"] == b.meta["files"]  # every tile's size and crc32
    skip = {"files", "checksum", "name", "label_names"}
    assert {k: v for k, v in a.meta.items() if k not in skip} == \
        {k: v for k, v in b.meta.items() if k not in skip}


def test_streamed_build_equals_in_memory_build(shards, tmp_path):
    _, X, Y, files, ref = shards
    src = WholeFileChunks(files, chunk_rows=37)
    seen = []
    st_ = build_store_from_source(src, tmp_path / "s", options=BuildOptions(**OPTS),
                                  progress=lambda *a: seen.append(a))
    _same_store(st_, ref)
    size = sum(Path(f).stat().st_size for f in files)  # both passes count the bytes read
    for stage in ("count", "encode"):
        done = [d for s, d, t in seen if s == stage and t == size]
        assert done[0] == 0 and done[-1] == size and done == sorted(done)
    assert seen[-1] == ("tiles", st_.n_row_blocks, st_.n_row_blocks)
    assert st_.n_row_blocks > 1 and st_.n_blocks > 1
    mem = build_store_from_source(MemorySource([(X[:200], Y[:200]), (X[200:], Y[200:])], 13,
                                               feature_names=IndexedNames(X.shape[1], "f")),
                                  tmp_path / "m", options=BuildOptions(**OPTS))
    _same_store(mem, ref)


def test_a_build_given_no_engine_imports_none(shards, tmp_path):
    """The store sits below the engines: given no engine, the build runs its tasks in this
    process (with the progress inside a file) without importing any engine module."""
    import subprocess
    import sys

    _, _, _, files, ref = shards
    code = ("import sys\n"
            "from coreselect.store.ingest import BuildOptions, WholeFileChunks, "
            "build_store_from_source\n"
            f"build_store_from_source(WholeFileChunks({files!r}, chunk_rows=37), "
            f"{str(tmp_path / 's')!r}, options=BuildOptions(**{OPTS!r}), "
            "progress=lambda *a: None)\n"
            "print(sorted(m for m in sys.modules if m.startswith('coreselect.engines')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    from coreselect.store import open_store

    _same_store(open_store(tmp_path / "s"), ref)


def test_dense_parts_equal_in_memory_build(tmp_path):
    rng = np.random.default_rng(0)
    X = _matrix(rng, 120, 9, 1, 0.5)
    Y = sp.csr_matrix((rng.random((120, 3)) < 0.4).astype(float))
    ref = build_store(X, Y, tmp_path / "ref", **OPTS)
    got = build_store_from_source(MemorySource([(X[:1], Y[:1]), (X[1:], Y[1:])], 11),
                                  tmp_path / "got", options=BuildOptions(**OPTS))
    _same_store(got, ref)


def test_parallel_and_dask_builds_are_identical(shards, tmp_path):
    from coreselect.engines.dask import DaskEngine
    from coreselect.engines.local import LocalEngine

    _, _, _, files, ref = shards
    opts = BuildOptions(chunk_rows=29, **OPTS)
    with LocalEngine(2) as engine:
        two = build_store_from_source(WholeFileChunks(files), tmp_path / "two",
                                      options=opts, engine=engine)
    _same_store(two, ref)
    with DaskEngine(n_workers=2) as engine:
        dask = build_store_from_source(WholeFileChunks(files), tmp_path / "dask",
                                       options=opts, engine=engine)
    _same_store(dask, ref)


@dataclass
class ChangingSource(MemorySource):
    """Its second reading differs from its first (a file rewritten during the build)."""

    reads: list = None

    def file_chunks(self, i, chunk_rows=None, chunk_bytes=None):
        self.reads.append(i)
        for c in super().file_chunks(i):
            if len(self.reads) > len(self.parts):
                c = Chunk(c.X * 1.5, c.Y, c.file, c.first_row)
            yield c


def test_data_that_change_between_passes_leave_nothing(tmp_path):
    X, Y = _data(n=60)
    src = ChangingSource([(X, Y)], 17, reads=[])
    with pytest.raises(InputError, match="changed between"):
        build_store_from_source(src, tmp_path / "s", options=BuildOptions(**OPTS))
    assert list(tmp_path.iterdir()) == []


@dataclass
class OnDiskSource(MemorySource):
    """In-memory parts named by a file on disk, which the reader never looks at."""

    path: str = ""

    @property
    def files(self):
        return [self.path]


@pytest.mark.parametrize("ck", [False, True])
def test_a_file_changed_under_a_reader_that_cannot_tell_is_refused(tmp_path, ck):
    """The reader reads the same rows twice, but the file changed while the build read it:
    refused (the store would mix two versions of the data), with or without a checkpoint."""
    X, Y = _data(n=60)
    named = tmp_path / "part0"
    named.write_text("rows\n")

    def progress(stage, done, total):
        if stage == "encode" and done == 0:
            named.write_text("other rows\n")

    with pytest.raises(InputError, match="part0: changed during the build"):
        build_store_from_source(OnDiskSource([(X, Y)], 17, path=str(named)), tmp_path / "s",
                                options=BuildOptions(**OPTS), progress=progress,
                                checkpoint=tmp_path / "ck" if ck else None)
    assert {p.name for p in tmp_path.iterdir()} <= {"part0", "ck", "ck.parts"}


@pytest.mark.parametrize("ck", [False, True])
def test_a_store_holds_its_files_and_nothing_of_the_build(shards, tmp_path, ck):
    """With or without a checkpoint, the store has the same bytes, and holds store.json and
    the files it lists, nothing more (no spill, no plan); a checkpoint is gone."""
    _, _, _, files, ref = shards
    got = build_store_from_source(WholeFileChunks(files, chunk_rows=37), tmp_path / "s",
                                  options=BuildOptions(**OPTS),
                                  checkpoint=tmp_path / "ck" if ck else None)
    _same_store(got, ref)
    held = {p.relative_to(tmp_path / "s").as_posix() for p in (tmp_path / "s").rglob("*")
            if not p.is_dir()}
    assert held == {*got.meta["files"], "store.json"}
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_cli_build_from_file_and_seams(shards, tmp_path):
    from paths import run_cli

    _, X, Y, _, ref = shards
    one = Path(_files(tmp_path, X, Y, [])[0])
    run_cli(["store", "build", one, tmp_path / "st", "--block-size", "16", "--row-block-size",
             "96", "--seed", "5", "--workers", "2", "--chunk-rows", "50"], expect=0)
    meta = json.loads((tmp_path / "st" / "store.json").read_text())
    assert meta["files"] == ref.meta["files"]
    # issue 31: a block size beyond store.json's integers is refused before anything is written
    run = run_cli(["store", "build", one, tmp_path / "big" / "st", "--block-size", 10**18],
                  expect=2)
    assert "block size" in run.stderr
    run = run_cli(["store", "build", one, tmp_path / "w", "--workers", 2, "--scheduler",
                   "tcp://127.0.0.1:1"], expect=2)
    assert "--workers" in run.stderr and not (tmp_path / "w").exists()
    assert not (tmp_path / "big").exists() or list((tmp_path / "big").iterdir()) == []


def test_store_fs_and_reader_do_not_import_each_other():
    import ast

    import coreselect.store as store

    folder = Path(store.__file__).parent

    def imports(name):
        tree = ast.parse((folder / name).read_text())
        return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}

    assert "coreselect.store.fs" not in imports("reader.py")
    assert not any(m == "coreselect.store" for m in imports("reader.py"))
    assert "coreselect.store.reader" in imports("fs.py")  # one direction only


# -- select straight from a file: a transient store, the in-memory selection ------------------
@pytest.mark.parametrize("mode", ["rows", "streaming"])
def test_select_file_in_chunks_is_the_in_memory_selection(shards, tmp_path, mode):
    from paths import run_cli

    from coreselect.datasets.load import load
    from coreselect.selection import select

    _, X, Y, _, _ = shards
    one = _files(tmp_path, X, Y, [])[0]
    scratch = tmp_path / "scratch"
    run = run_cli(["select", one, "-k", "6", "--mode", mode, "--json", "--temp-dir", scratch,
                   "--quiet"], expect=0)
    got = json.loads(run.stdout)["selected"]
    want = select(load(one), k=6, mode=mode, random_state=0 if mode == "streaming" else None)
    assert got == [int(i) for i in want.selected]
    assert list(scratch.iterdir()) == []  # the transient store is gone


def test_default_mode_says_when_a_file_cannot_fit(shards, tmp_path, monkeypatch):
    from paths import run_cli

    import coreselect.cli.select as cli_select

    _, X, Y, _, _ = shards
    one = _files(tmp_path, X, Y, [])[0]
    monkeypatch.setattr(cli_select, "_available_memory", lambda: 1000)
    run = run_cli(["select", one, "-k", "3"], expect=2)
    assert len(run.stderr.strip().splitlines()) == 1 and "--mode rows" in run.stderr
    run_cli(["select", one, "-k", "3", "--mode", "rows", "--quiet"], expect=0)  # chunks: fine


# -- memory: bounded by the chunk and the tile, not the file -------------------------------
_BOUND_CHILD = r"""
import os, resource, sys
import psutil
from coreselect.io.chunks import open_chunks
from coreselect.store.ingest import BuildOptions, build_store_from_source

big, small, out, headroom, mode = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
opts = BuildOptions(block_size=4096, row_block_size=4096, chunk_bytes=1 << 20)
# The readers' first pass (widths, rows) reads 32 MiB blocks of text whatever the chunk size:
# the same 1 MiB here (it has no option for it yet).
from coreselect.io import libsvm
libsvm.scan_file.__defaults__ = (1 << 20, *libsvm.scan_file.__defaults__[1:])
# Warm up on a small file (compiled parser, kernels, thread pools), then cap the address
# space at what this process holds now plus the headroom.
build_store_from_source(open_chunks(small), out + "-warm", options=opts)
limit = psutil.Process().memory_info().vms + headroom
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    if mode == "stream":
        build_store_from_source(open_chunks(big), out, options=opts)
    else:
        from coreselect.datasets.load import load
        from coreselect.store import build_store
        ds = load(big)
        build_store(ds.X, ds.Y, out, block_size=4096, row_block_size=4096)
except MemoryError:
    print("MemoryError")
    sys.exit(3)
print("ok")
"""


def _big_libsvm(path: Path, blocks: int, seed: int = 0) -> int:
    """A multi-label LIBSVM file: one block of 4000 rows (~60 counts each over 20000
    features), repeated; returns its non-zeros."""
    rng = np.random.default_rng(seed)
    lines = []
    nnz = 0
    for _ in range(4000):
        feats = np.unique(rng.zipf(1.3, 60) % 20000) + 1
        vals = rng.integers(1, 9, feats.size)
        nnz += feats.size
        lines.append(f"{feats[0] % 7},{rng.integers(7, 12)} "
                     + " ".join(f"{f}:{v}" for f, v in zip(feats.tolist(), vals.tolist())))
    text = ("\n".join(lines) + "\n").encode()
    with open(path, "wb") as fh:
        for _ in range(blocks):
            fh.write(text)
    return nnz * blocks


def test_build_memory_is_bounded_by_chunk_and_tile_not_file(tmp_path):
    """The bound: one chunk of text (1 MiB here) and its codes, one tile (4096 rows x 4096
    columns here), the value counts (20000 columns x 8 values). Under an address-space limit
    of (what the process holds after a warm-up) + 64 MiB, the streamed build of a 42 MB
    LIBSVM file (7.6e6 non-zeros) succeeds; reading that file whole fails even with 3 x that
    headroom (it peaks at ~470 MB RSS against ~200 MB for the streamed build, measured)."""
    import os
    import subprocess
    import sys

    small, big = tmp_path / "small.svm", tmp_path / "big.svm"
    _big_libsvm(small, 1)
    nnz = _big_libsvm(big, 60)
    assert big.stat().st_size > 4 * 10**7 and nnz > 7 * 10**6
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "NUMBA_NUM_THREADS": "1"}

    def child(mode, headroom):
        return subprocess.run([sys.executable, "-c", _BOUND_CHILD, str(big), str(small),
                               str(tmp_path / mode), str(headroom), mode],
                              capture_output=True, text=True, env=env, timeout=600)

    got = child("stream", 64 << 20)
    assert got.returncode == 0, got.stderr[-2000:]
    whole = child("whole", 192 << 20)
    assert whole.returncode != 0 and not (tmp_path / "whole").exists(), whole.stdout


@pytest.mark.parametrize("fmt", [".svm", ".xmc"])
def test_one_file_in_byte_ranges_over_1_2_3_workers_is_the_same_store(shards, tmp_path, fmt):
    """One file cut into byte ranges (ending mid-line, an empty one, one inside the header
    line of the XMC file): the pieces spread over 1, 2 and 3 worker processes, the same store
    as the in-memory build (every file's size and crc32)."""
    from coreselect.engines.local import LocalEngine
    from coreselect.io.chunks import open_chunks

    _, X, Y, files, ref = shards
    one = tmp_path / f"one{fmt}"
    d, L = X.shape[1], Y.shape[1]
    write(Dataset(X, Y, feature_names=IndexedNames(d, "f"), label_names=IndexedNames(L, "l"),
                  name="one"), one)
    text = one.read_text()
    size = len(text)
    cuts = [5, size // 7, size // 7, size // 3 + 1, size // 2, size - 1]
    assert text[size // 3] != "\n"
    for w in (1, 2, 3):
        src = open_chunks(str(one))
        assert len(src.plan_pieces(1, bounds={0: cuts})) == 7
        with LocalEngine(w if w > 1 else None) as engine:
            got = build_store_from_source(src, tmp_path / f"w{w}", options=BuildOptions(chunk_rows=29, **OPTS),
                                          engine=engine)
        _same_store(got, ref)


# -- the compiled fast paths against the definition ----------------------------------------
def _counts_by_definition(X, cap):
    """Per column, each distinct non-zero value's number of rows (columns with more than
    ``cap`` distinct values: of the truncated values), sorted by column then value."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
    cols, vals, counts, sketched = [], [], [], []
    for j in range(X.shape[1]):
        v = X[:, j][X[:, j] != 0]
        sk = len(set(v.tolist())) > cap
        sketched.append(sk)
        if sk:
            v = truncate(v)
        for value in sorted(set(v.tolist())):
            cols.append(j)
            vals.append(value)
            counts.append(int((v == value).sum()))
    return np.array(cols, np.int64), np.array(vals, float), np.array(counts, np.int64), np.array(sketched, bool)


_VALUES = st.sampled_from([1.0, 2.0, 3.0, 8.0, 23.0, 24.0, -1.0, -8.0, -9.0, 0.5, -2.25, 1e6, 7.0, 1.0])


@PROPS
@given(data=st.data(), n=st.sampled_from([0, 1, 2, 13, 60]), d=st.integers(1, 7),
       cap=st.sampled_from([1, 3, 10**6]), n_chunks=st.integers(1, 4))
def test_value_counts_equal_the_definition(data, n, d, cap, n_chunks):
    """ColumnCounts on CSR chunks (small integers counted by the compiled dense table, the other
    values by the general path; mixed signs, fractions, large values, sketched columns, any cut
    into chunks) equals counting from the definition."""
    cells = data.draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, d - 1), _VALUES),
                               max_size=3 * n * d if n else 0))
    X = np.zeros((n, d))
    for r, c, v in cells:
        X[r, c] = v
    cuts = sorted(data.draw(st.lists(st.integers(0, n), min_size=n_chunks - 1, max_size=n_chunks - 1)))
    counts = ColumnCounts(cap=cap)
    for a, b in zip([0, *cuts], [*cuts, n]):
        counts.add_chunk(sp.csr_matrix(X[a:b]))
    counts.flush()
    cols, vals, cnt, sketched = _counts_by_definition(X, cap)
    np.testing.assert_array_equal(counts.cols, cols)
    np.testing.assert_array_equal(counts.vals, vals)
    np.testing.assert_array_equal(counts.counts, cnt)
    np.testing.assert_array_equal(counts.sketched, sketched)
    assert counts.n_rows == n


@PROPS
@given(data=st.data(), n=st.sampled_from([0, 1, 2, 17, 50]), d=st.integers(1, 9),
       n_bins=st.integers(2, 4), kind=st.sampled_from([0, 2]))
def test_compiled_coder_equals_the_general_path(data, n, d, n_bins, kind):
    """encode_rows (the compiled coder of count data) on any row range of a CSR chunk, columns
    in a shuffled order, equals encode_chunk (the general path) on those rows; a value the
    table does not hold goes to the general path (None), which reports it."""
    from coreselect.store._binning import encode_rows

    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    X = _matrix(rng, n, d, kind, data.draw(st.floats(0, 1)))
    counts = ColumnCounts()
    counts.add_chunk(sp.csr_matrix(X))
    table = bin_table(counts, n_bins, "auto", 1)
    position = rng.permutation(d)
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    Xc = sp.csr_matrix(X)
    got = encode_rows(table, Xc, d, position, a, b)
    want = encode_chunk(table, Xc[a:b], d, position)
    if table.zero_code.any() or table.sketched.any():
        assert got is None
        return
    assert got is not None and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)
    if Xc.nnz:  # a value the first pass never saw
        Xc.data[rng.integers(Xc.nnz)] = 1000.5
        assert encode_rows(table, Xc, d, position) is None
        with pytest.raises(InputError, match="changed between"):
            encode_chunk(table, Xc, d, position)
