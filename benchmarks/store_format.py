"""The column store's format: the hand-made ``.npy`` tiles (with crc32) against Zarr v3.

Usage: python benchmarks/store_format.py [--quick] [--n N] [--d D] [--density P]

The same discretized codes, cut into the same tiles (row block x column block), are written
three ways:

- ``npy``: coreselect's store (a CSC triplet of ``.npy`` files per tile, crc32 of each file
  in ``store.json``; reads memory-map, checksum each file once per process and check the
  structure). Reads here clear the "already verified" cache first, so every read pays the
  checksum, like Zarr's codec does.
- ``zarr-sparse``: a Zarr v3 group with the same CSC triplet per tile, one chunk per array,
  codecs ``bytes + zstd(1) + crc32c`` (Zarr has no sparse arrays: ragged tiles need an array
  each).
- ``zarr-dense``: one Zarr v3 int8 array (n x d) with chunks = tiles, ``zstd(1) + crc32c``;
  a read decompresses the dense tile and converts it to CSC (what the kernels need).

Columns: write time (codes already discretized; the discretization itself is the same for
all and excluded), size on disk, read of one tile, read of one column block over all rows
(a task of Algorithm 3), and the read of every tile in turn (a streaming pass): the best
of ``--repeat`` interleaved runs.
Zarr is optional (``pip install zarr``); without it only the ``npy`` row is printed.

``--s3`` adds reads from object storage: a local S3-compatible server (moto's server mode on
127.0.0.1, never a real cloud; needs ``pip install 'moto[server]' s3fs``), holding the same
tiles as Zarr (``FsspecStore``) and as the npy files (read whole through ``s3fs`` and
checksummed, since object storage cannot be memory-mapped).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_of, describe, emit, fmt, md_table, seconds_str  # noqa: E402


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _codes(n: int, d: int, density: float, seed: int = 0):
    """Codes like a discretized sparse dataset: 1..4 on ~density of the cells."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csc", dtype=np.float32)
    X.data = np.ceil(X.data * 4).astype(np.float32)
    Y = (rng.random((n, 5)) < 0.2).astype(np.int8)
    return X, Y


def _tiles(store):
    """Every tile's CSC triplet, read back from the npy store (the shared input)."""
    return {(b, r): store._tile_cols(b, r, 0, min(store.block_size,
                                                 store.n_features - b * store.block_size))
            for b in range(store.n_blocks) for r in range(store.n_row_blocks)}


def _npy_reads(store):
    import coreselect.store.reader as reader

    def fresh():
        reader._VERIFIED.clear()  # pay the crc32, like Zarr's codec does on every read
        return store

    bs, mid = store.block_size, store.n_row_blocks // 2
    return {
        "tile": lambda: fresh().read_tile(mid, 0, bs),
        "block": lambda: fresh().read_range(0, bs),
        "stream": lambda: [fresh().read_tile(r, b * bs, min((b + 1) * bs, store.n_features))
                           for b in range(store.n_blocks) for r in range(store.n_row_blocks)],
    }


def _zarr_sparse(path: Path, store, tiles):
    import zarr
    from zarr.codecs import Crc32cCodec, ZstdCodec

    def write():
        g = zarr.open_group(str(path), mode="w")
        for (b, r), arrays in tiles.items():
            for name, arr in zip(("indptr", "indices", "data"), arrays):
                z = g.create_array(f"b{b}/r{r}/{name}", shape=arr.shape,
                                   chunks=(max(arr.size, 1),), dtype=arr.dtype,
                                   compressors=[ZstdCodec(level=1), Crc32cCodec()])
                z[:] = arr
        return g

    t_write, _ = best_of(lambda: (shutil.rmtree(path, ignore_errors=True), write()), repeat=1)
    g = zarr.open_group(str(path), mode="r")
    rows = store.row_bounds

    def tile(b, r):
        ptr, idx, dat = (g[f"b{b}/r{r}/{a}"][:] for a in ("indptr", "indices", "data"))
        return sp.csc_matrix((dat, idx, ptr), shape=(rows[r + 1] - rows[r], ptr.size - 1))

    mid = store.n_row_blocks // 2
    reads = {
        "tile": lambda: tile(0, mid),
        "block": lambda: sp.vstack([tile(0, r) for r in range(store.n_row_blocks)],
                                   format="csc"),
        "stream": lambda: [tile(b, r) for b in range(store.n_blocks)
                           for r in range(store.n_row_blocks)],
    }
    return t_write, reads


def _zarr_dense(path: Path, store, tiles):
    import zarr
    from zarr.codecs import Crc32cCodec, ZstdCodec

    n, d, bs, rbs = store.n_samples, store.n_features, store.block_size, store.row_block_size
    rows = store.row_bounds

    def write():
        z = zarr.create_array(str(path), shape=(n, d), chunks=(rbs, bs), dtype="int8",
                              fill_value=0, compressors=[ZstdCodec(level=1), Crc32cCodec()])
        for (b, r), (ptr, idx, dat) in tiles.items():
            w = ptr.size - 1
            dense = sp.csc_matrix((dat, idx, ptr), shape=(rows[r + 1] - rows[r], w)).toarray()
            z[rows[r]:rows[r + 1], b * bs:b * bs + w] = dense.astype(np.int8)
        return z

    t_write, _ = best_of(lambda: (shutil.rmtree(path, ignore_errors=True), write()), repeat=1)
    z = zarr.open_array(str(path), mode="r")
    mid = store.n_row_blocks // 2
    reads = {
        "tile": lambda: sp.csc_matrix(z[rows[mid]:rows[mid + 1], 0:bs]),
        "block": lambda: sp.csc_matrix(z[:, 0:bs]),
        "stream": lambda: [sp.csc_matrix(z[rows[r]:rows[r + 1], b * bs:(b + 1) * bs])
                           for b in range(store.n_blocks) for r in range(store.n_row_blocks)],
    }
    return t_write, reads


def _s3_rows(store, tiles, repeat):
    """Read one tile and one column block from a moto S3 server on 127.0.0.1."""
    import io
    import zlib

    import s3fs
    import zarr
    from moto.server import ThreadedMotoServer
    from zarr.codecs import Crc32cCodec, ZstdCodec
    from zarr.storage import FsspecStore

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        opts = {"key": "test", "secret": "test",
                "client_kwargs": {"endpoint_url": f"http://{host}:{port}",
                                  "region_name": "us-east-1"}}
        fs = s3fs.S3FileSystem(**opts)
        fs.call_s3("create_bucket", Bucket="bench")
        rows = store.row_bounds
        files = store.meta["files"]
        for (b, r), arrays in tiles.items():  # the npy files as they are on disk
            for name in ("indptr", "indices", "data"):
                rel = f"blocks/b{b:06d}/r{r:06d}/{name}.npy"
                fs.pipe(f"bench/npy/{rel}", (store.path / rel).read_bytes())
        zs = FsspecStore.from_url("s3://bench/zarr", storage_options=opts, read_only=False)
        g = zarr.open_group(zs, mode="w")
        for (b, r), arrays in tiles.items():
            for name, arr in zip(("indptr", "indices", "data"), arrays):
                z = g.create_array(f"b{b}/r{r}/{name}", shape=arr.shape,
                                   chunks=(max(arr.size, 1),), dtype=arr.dtype,
                                   compressors=[ZstdCodec(level=1), Crc32cCodec()])
                z[:] = arr

        def npy_tile(b, r):
            out = []
            for name in ("indptr", "indices", "data"):
                rel = f"blocks/b{b:06d}/r{r:06d}/{name}.npy"
                raw = fs.cat(f"bench/npy/{rel}")
                assert zlib.crc32(raw) == files[rel][1]
                out.append(np.load(io.BytesIO(raw)))
            ptr, idx, dat = out
            return sp.csc_matrix((dat, idx, ptr), shape=(rows[r + 1] - rows[r], ptr.size - 1))

        def zarr_tile(b, r):
            ptr, idx, dat = (g[f"b{b}/r{r}/{a}"][:] for a in ("indptr", "indices", "data"))
            return sp.csc_matrix((dat, idx, ptr), shape=(rows[r + 1] - rows[r], ptr.size - 1))

        mid = store.n_row_blocks // 2
        out = []
        for name, tile in (("npy + crc32 via s3fs (moto S3)", npy_tile),
                           ("zarr v3 sparse via FsspecStore (moto S3)", zarr_tile)):
            t_tile = best_of(lambda: tile(0, mid), repeat=repeat)[0]
            t_block = best_of(lambda: [tile(0, r) for r in range(store.n_row_blocks)],
                              repeat=repeat)[0]
            out.append([name, seconds_str(t_tile), seconds_str(t_block)])
        return out
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=describe(__doc__))
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    ap.add_argument("--n", type=int, default=200_000, help="samples (rows)")
    ap.add_argument("--d", type=int, default=20_000, help="features (columns)")
    ap.add_argument("--density", type=float, default=0.0025, help="share of non-zero cells")
    ap.add_argument("--block-size", type=int, default=4096, help="columns per column block")
    ap.add_argument("--row-block-size", type=int, default=50_000, help="rows per row block")
    ap.add_argument("--repeat", type=int, default=7, help="reads timed per layout: best of this many")
    ap.add_argument("--no-dense", action="store_true", help="skip the dense Zarr layout")
    ap.add_argument("--out", default=None, help="also write the Markdown to this file")
    ap.add_argument("--s3", action="store_true",
                    help="also read from a local moto S3 server (needs moto[server], s3fs)")
    args = ap.parse_args()
    if args.quick:
        args.n, args.d, args.block_size, args.row_block_size, args.repeat = 2000, 300, 128, 700, 1

    from coreselect.store import build_store

    X, Y = _codes(args.n, args.d, args.density)
    title = (f"store formats: n={args.n:,} d={args.d:,} nnz={X.nnz:,}, tiles of "
             f"{args.row_block_size:,} rows x {args.block_size:,} columns")
    body: list[str] = []  # printed once, with the title and machine line, by emit()
    root = Path(tempfile.mkdtemp(prefix="store_format."))
    try:
        t0 = time.perf_counter()
        store = build_store(X, Y, root / "npy", block_size=args.block_size,
                            row_block_size=args.row_block_size, strategy="none")
        t_build = time.perf_counter() - t0
        tiles = _tiles(store)
        # the npy write alone: rewrite the same tiles with the store's writer
        from coreselect.store.build import _Writer
        from coreselect.store._format import tile_dir

        def npy_write():
            shutil.rmtree(root / "npy-w", ignore_errors=True)
            (root / "npy-w").mkdir()
            w = _Writer(root / "npy-w")
            for (b, r), arrays in tiles.items():
                w.save_csc(tile_dir(b, r), *arrays)

        t_npy_write, _ = best_of(npy_write, repeat=1)
        results = [("npy + crc32 (coreselect)", t_npy_write, _du(root / "npy"),
                    _npy_reads(store), "numpy only; ~150 lines of layout + checks")]
        try:
            import zarr  # noqa: F401

            have_zarr = True
        except ImportError:
            have_zarr = False
            body.append("zarr is not installed: only the npy row\n")
        if have_zarr:
            t, reads = _zarr_sparse(root / "zarr-sparse", store, tiles)
            results.append(("zarr v3 sparse tiles, zstd + crc32c", t,
                            _du(root / "zarr-sparse"), reads, "3 arrays per tile"))
            if not args.no_dense:
                t, reads = _zarr_dense(root / "zarr-dense", store, tiles)
                results.append(("zarr v3 dense int8, chunks = tiles, zstd + crc32c", t,
                                _du(root / "zarr-dense"), reads, "1 array; CSC on read"))
        # interleaved repeats, best of each: a busy shared machine hits every format alike
        # (CPU time too: all threads of the process, so Zarr's thread pools count)
        best = [{k: [float("inf")] * 2 for k in r[3]} for r in results]
        for _ in range(args.repeat):
            for (name, t_write, size, reads, note), times in zip(results, best):
                for k, fn in reads.items():
                    t0, c0 = time.perf_counter(), time.process_time()
                    fn()
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    times[k] = [min(times[k][0], wall), min(times[k][1], cpu)]
        rows = []
        for (name, t_write, size, reads, note), times in zip(results, best):
            rows.append([name, seconds_str(t_write), f"{size / 2**20:.1f} MiB"]
                        + [f"{seconds_str(times[k][0])} / {seconds_str(times[k][1])}"
                           for k in ("tile", "block", "stream")] + [note])
        body.append("reads: best wall / best CPU time\n")
        body.append(md_table(["format", "write tiles", "on disk", "read 1 tile",
                        "read 1 column block (all rows)", "read all tiles", "notes"], rows,
                       align="lrrrrrl"))
        if args.s3 and have_zarr:
            body.append("\nfrom object storage (moto S3 server on 127.0.0.1; tile bytes as "
                        "above):\n")
            body.append(md_table(["format", "read 1 tile", "read 1 column block (all rows)"],
                           _s3_rows(store, tiles, args.repeat), align="lrr"))
        body.append(f"\nnpy build including discretization: {seconds_str(t_build)}; "
                    f"codes in memory: {fmt((X.nnz * 6) / 2**20)} MiB (int32 rows + int16 "
                    "codes)")
        emit(title, "\n".join(body), args.out)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
