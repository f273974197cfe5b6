"""Ingestion of a file a user has: parse a multi-label LIBSVM file (part ``parse``).

Generates a multi-label LIBSVM file (rows x features, non-zeros per row, labels; cached in
the temporary folder) and parses it, each reader in a fresh child process: scikit-learn's
``load_svmlight_file(multilabel=True)``, ``coreselect.load`` (the whole file), and
``open_chunks(...).chunks()`` (streamed, each chunk dropped). Reported: CPU seconds of the
parse (user + system, all threads; the compiled parser's one-time load is done before on a
tiny file), MB/s per CPU second, peak RSS of the child (``ru_maxrss``, the interpreter and
imports included), and both as ratios to scikit-learn's, side by side in one run.
Targets (issue 29): throughput >= 10x scikit-learn's, load's peak <= 1.5x.
Part ``build`` (the out-of-core store build) is added by the store build's work.

Part ``s3`` (:func:`part_s3`): 16 generated shard files in a bucket of a local moto S3 server,
built into a store in the same bucket by a Dask ``LocalCluster`` of 1, then of 2 worker
processes (1 thread each; the workers read the shards and write the tiles themselves, the
spill under the build's temporary prefix), side by side: wall and CPU seconds (workers,
driver with the scheduler, and the moto server's own, which shares the cores), the speed-up,
and whether the two stores are the same objects byte for byte (every object's crc32).
Target (issue 29): >= 1.7x faster with 2 workers than with 1, identical store.
Part ``tables``: a generated numeric CSV (~200 MB by default) and the same table as Parquet,
read whole by ``pandas.read_csv``, by the old whole-file readers (pandas / ``ParquetFile.read``,
now tests/reference_readers.py), by ``coreselect.load`` (pyarrow's streamed batches
concatenated) and streamed by ``open_chunks(...).chunks()``; CPU seconds and peak RSS, each
in a fresh child, side by side in one run.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402


def _generate(path: Path, rows: int, features: int, per_row: int, labels: int, seed: int = 0) -> None:
    """Rows of ``per_row`` distinct 1-based feature indices with 1-3 decimal values and 1-4 labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "w") as fh:
        block = 5000
        for r0 in range(0, rows, block):
            n = min(block, rows - r0)
            idx = np.sort(rng.integers(1, features + 1, (n, per_row)), axis=1)
            vals = rng.integers(1, 1000, (n, per_row)) / 100.0
            nl = rng.integers(1, 5, n)
            lines = []
            for i in range(n):
                row = np.unique(idx[i])
                labs = ",".join(map(str, sorted(set(rng.integers(1, labels + 1, nl[i]).tolist()))))
                lines.append(labs + " " + " ".join(f"{a}:{b:g}" for a, b in zip(row.tolist(), vals[i].tolist())))
            fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def _table_run(case: str, path: str, warm: str):
    """The reader of part ``tables`` (warmed up on a small file first)."""
    if case == "pandas":
        import pandas as pd

        pd.read_csv(warm)
        return lambda: pd.read_csv(path).shape[0]
    if case.startswith("old"):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import reference_readers

        read = reference_readers.read_parquet if path.endswith(".parquet") else reference_readers.read_csv
        read(warm.replace(".csv", Path(path).suffix) if path.endswith(".parquet") else warm, labels=2)
        return lambda: read(path, labels=2).X.shape[0]
    if case.startswith("load"):
        import coreselect

        coreselect.load(warm, labels=2)
        return lambda: coreselect.load(path, labels=2).X.shape[0]
    from coreselect.io.chunks import open_chunks

    list(open_chunks(warm, labels=2).chunks())
    return lambda: sum(c.X.shape[0] for c in open_chunks(path, labels=2).chunks())


def _child(payload: dict) -> dict:
    case, path = payload["case"], payload["path"]
    warm = Path(payload["warm"])
    if payload.get("part") == "tables":
        rows_of = _table_run(case, path, str(warm))

        def run():
            return rows_of(), 0
    elif case == "sklearn":
        from sklearn.datasets import load_svmlight_file

        load_svmlight_file(str(warm), multilabel=True)

        def run():
            X, y = load_svmlight_file(path, multilabel=True)
            return X.shape[0], X.nnz
    elif case == "load":
        import coreselect

        coreselect.load(str(warm))

        def run():
            ds = coreselect.load(path)
            return ds.X.shape[0], ds.X.nnz
    else:
        from coreselect.io.chunks import open_chunks

        list(open_chunks(str(warm)).chunks())

        def run():
            rows = nnz = 0
            for c in open_chunks(path).chunks():
                rows += c.X.shape[0]
                nnz += c.X.nnz
            return rows, nnz
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    rows, nnz = run()
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu": cpu, "wall": wall, "peak_mib": after.ru_maxrss / 1024, "rows": rows, "nnz": nnz}


def part_parse(args) -> str:
    rows, features, per_row, labels = ((3000, 5000, 20, 10) if args.quick else
                                       (args.rows, args.features, args.nnz_per_row, args.labels))
    folder = Path(args.data_dir or tempfile.gettempdir())
    path = folder / f"coreselect-ingest-{rows}x{features}-{per_row}-{labels}.svm"
    if not path.exists():
        _generate(path, rows, features, per_row, labels)
    warm = folder / "coreselect-ingest-warm.svm"
    if not warm.exists():
        _generate(warm, 20, 50, 3, 3)
    size_mb = path.stat().st_size / 1e6
    results = {}
    for case in ("sklearn", "load", "chunks"):
        results[case] = _common.run_case(__file__, {"case": case, "path": str(path), "warm": str(warm)})
    base = results["sklearn"]
    names = {"sklearn": "scikit-learn load_svmlight_file(multilabel=True)", "load": "coreselect.load",
             "chunks": "open_chunks(...).chunks() (streamed)"}
    table = []
    for case, r in results.items():
        if "error" in r:
            table.append([names[case], "failed: " + r["error"], "", "", "", "", ""])
            continue
        speed = size_mb / r["cpu"] if r["cpu"] > 0 else float("inf")
        ok = "error" not in base
        table.append([names[case], f"{r['cpu']:.2f}", f"{speed:.0f}",
                      f"{(base['cpu'] / r['cpu']):.1f}x" if ok and r["cpu"] > 0 else "",
                      f"{r['peak_mib']:.0f}", f"{(r['peak_mib'] / base['peak_mib']):.2f}x" if ok else "",
                      f"{r['nnz']:,}"])
    body = (f"A {size_mb:.0f} MB multi-label LIBSVM file: {rows:,} rows x {features:,} features, about "
            f"{per_row} non-zeros per row, {labels} labels. Load average at start: "
            f"{os.getloadavg()[0]:.2f}.\n\n"
            + _common.md_table(["reader", "parse CPU s", "MB/s per CPU s", "speed vs sklearn", "peak RSS MiB",
                                "peak vs sklearn", "non-zeros"], table, align="lrrrrrr"))
    return body


def _scan_file(source, i: int):
    return source.file_scan(i)


def _warm(path: str) -> None:
    """A worker's one-time costs (imports, the compiled parser and coders) paid before timing:
    a tiny store built from a tiny file."""
    import shutil
    import tempfile as tf

    from coreselect.io.chunks import open_chunks
    from coreselect.store.ingest import build_store_from_source

    folder = tf.mkdtemp()
    try:
        build_store_from_source(open_chunks(path), Path(folder) / "s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def part_s3(args) -> str:
    """See the module docstring (part ``s3``). Every process it starts (the moto server, the
    clusters' workers) is stopped before it returns, on an error or Ctrl-C too."""
    import zlib

    import psutil
    import s3fs

    from coreselect.engines.dask import DaskEngine, local_cluster
    from coreselect.io.chunks import open_chunks
    from coreselect.store.ingest import BuildOptions, build_store_from_source

    n_shards, per_row, features, labels = args.shards, args.nnz_per_row, args.features, args.labels
    total_mb = 4.0 if args.quick else args.s3_mb
    rows = max(1, int(total_mb * 1e6 / n_shards / (per_row * 10.6 + 8)))  # ~bytes per row
    folder = Path(args.data_dir or tempfile.gettempdir()) / (
        f"coreselect-ingest-s3-{n_shards}x{rows}-{features}-{per_row}-{labels}")
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_shards):
        if not (folder / f"part{i:02d}.svm").exists():
            _generate(folder / f"part{i:02d}.svm", rows, features, per_row, labels, seed=i)
    size = sum(f.stat().st_size for f in folder.glob("part*.svm"))
    warm = folder.parent / "coreselect-ingest-warm.svm"
    if not warm.exists():
        _generate(warm, 20, 50, 3, 3)
    # Row blocks of about one shard each, column blocks of 16384: pass 3 has tasks enough
    # for every worker (the automatic row blocks would give 256 MB two or three).
    options = BuildOptions(name="shards", block_size=16384, row_block_size=rows)
    key, secret = "AKIDBENCH", "bench-secret"
    env = {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
           "AWS_DEFAULT_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in [*env, "AWS_ENDPOINT_URL", "CORESELECT_STORAGE_OPTIONS"]}
    moto, url = _common.start_moto({**os.environ, **env}, timeout=300)
    load_start = os.getloadavg()[0]
    rows_out, stores = [], {}
    try:
        os.environ.update(env)  # the workers, spawned below, inherit them
        os.environ["AWS_ENDPOINT_URL"] = url
        os.environ["CORESELECT_STORAGE_OPTIONS"] = json.dumps({"endpoint_url": url})
        fs = s3fs.S3FileSystem(key=key, secret=secret, endpoint_url=url, skip_instance_cache=True)
        fs.mkdir("bench")
        fs.put(str(folder) + "/", "bench/shards/", recursive=True)
        server = psutil.Process(moto.pid)
        for n in args.s3_workers:
            from distributed import Client

            cluster, client = local_cluster(n, 1), None
            try:
                client = Client(cluster)
                client.wait_for_workers(n)
                engine = DaskEngine(client=client)
                client.run(_warm, str(warm))
                _warm(str(warm))
                workers = [psutil.Process(pid) for pid in engine.worker_pids]
                before = ([w.cpu_times() for w in workers], server.cpu_times(),
                          resource.getrusage(resource.RUSAGE_SELF))
                t0 = time.perf_counter()
                source = open_chunks("s3://bench/shards/*.svm")
                source.scan(file_scans=engine.map(_scan_file, source, range(len(source.files))))
                t1 = time.perf_counter()
                target = f"s3://bench/store-{n}"
                build_store_from_source(source, target, engine=engine, options=options)
                t2 = time.perf_counter()
                after = ([w.cpu_times() for w in workers], server.cpu_times(),
                         resource.getrusage(resource.RUSAGE_SELF))
            finally:
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()
                cluster.close()
            cpu = lambda a, b: (b.user - a.user) + (b.system - a.system)  # noqa: E731
            work = sum(cpu(a, b) for a, b in zip(before[0], after[0]))
            driver = (after[2].ru_utime - before[2].ru_utime) + (after[2].ru_stime - before[2].ru_stime)
            rows_out.append((n, t2 - t0, t1 - t0, work, driver, cpu(before[1], after[1])))
            fs.invalidate_cache()
            stores[n] = {k.split("/", 2)[2]: zlib.crc32(fs.cat_file(k)) for k in fs.find(target[5:])}
    finally:
        moto.kill()
        moto.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    base = rows_out[0][1]
    table = [[n, f"{wall:.1f}", f"{scan:.1f}", f"{work:.1f}", f"{driver:.1f}", f"{srv:.1f}",
              f"{base / wall:.2f}x"] for n, wall, scan, work, driver, srv in rows_out]
    same = all(v == stores[args.s3_workers[0]] for v in stores.values())
    n_objects = len(next(iter(stores.values())))
    return (f"Data: {n_shards} LIBSVM shards, {size / 1e6:.0f} MB in all ({rows:,} rows each, "
            f"{features:,} features, about {per_row} non-zeros per row, {labels} labels), in a "
            f"bucket of a local moto S3 server; built into `s3://bench/store-N` by a Dask "
            f"LocalCluster of N worker processes of 1 thread (row blocks of {rows:,} rows, column blocks of 16384; workers warmed up on a tiny file first). Load average {load_start:.2f} at the "
            f"start, {os.getloadavg()[0]:.2f} at the end (2 cores, shared with the moto server).\n\n"
            + _common.md_table(["workers", "wall s (scan + build)", "of which scan s",
                                "workers' CPU s", "driver + scheduler CPU s", "moto server CPU s",
                                "speed-up"], table, align="rrrrrrr")
            + f"\n\nThe stores are the same {n_objects} objects byte for byte (every object's "
              f"crc32, store.json included): {same}.\n")
def _table_files(folder: Path, rows: int) -> tuple[Path, Path, Path]:
    """A numeric CSV (30 columns of 2-decimal values, 2 label columns), the same as Parquet,
    and a small warm-up CSV (with its Parquet)."""
    import numpy as np
    import pandas as pd

    csv, pq, warm = (folder / f"coreselect-tables-{rows}.csv", folder / f"coreselect-tables-{rows}.parquet",
                     folder / "coreselect-tables-warm.csv")
    if not (csv.exists() and pq.exists() and warm.exists()):
        rng = np.random.default_rng(0)
        cols = {f"x{j}": np.round(rng.normal(size=rows) * 10, 2) for j in range(30)}
        cols.update({f"y{j}": (rng.random(rows) < 0.3).astype(np.int8) for j in range(2)})
        df = pd.DataFrame(cols)
        df.to_csv(csv, index=False)
        df.to_parquet(pq, index=False)
        df.head(50).to_csv(warm, index=False)
        df.head(50).to_parquet(warm.with_suffix(".parquet"), index=False)
    return csv, pq, warm


def part_tables(args) -> str:
    rows = 20_000 if args.quick else args.table_rows
    folder = Path(args.data_dir or tempfile.gettempdir())
    csv, pq, warm = _table_files(folder, rows)
    cases = [("pandas", csv, "pandas.read_csv"), ("old-csv", csv, "old coreselect CSV reader (pandas)"),
             ("load-csv", csv, "coreselect.load (pyarrow batches)"), ("chunks-csv", csv, "open_chunks(...).chunks()"),
             ("old-parquet", pq, "old coreselect Parquet reader (ParquetFile.read)"),
             ("load-parquet", pq, "coreselect.load (iter_batches)"), ("chunks-parquet", pq, "open_chunks(...).chunks()")]
    table = []
    base: dict = {}
    for case, path, label in cases:
        r = _common.run_case(__file__, {"case": case, "path": str(path), "warm": str(warm), "part": "tables"})
        if case.startswith("old"):
            base = r
        if "error" in r:
            table.append([path.suffix, label, "failed: " + r["error"], "", "", ""])
            continue
        ok = "error" not in base and base.get("cpu")
        table.append([path.suffix, label, f"{r['cpu']:.2f}", f"{r['peak_mib']:.0f}",
                      f"{r['cpu'] / base['cpu']:.2f}x" if ok and not case.startswith("pandas") else "",
                      f"{r['peak_mib'] / base['peak_mib']:.2f}x" if ok and not case.startswith("pandas") else ""])
    return (f"A {csv.stat().st_size / 1e6:.0f} MB CSV ({rows:,} rows x 32 columns) and the same table as a "
            f"{pq.stat().st_size / 1e6:.0f} MB Parquet file. Each reader in a fresh child process (warmed up "
            f"on a 50-row file); CPU seconds of the read (all threads) and the child's peak RSS; ratios to "
            f"the old coreselect reader of the same format. Load average at start: {os.getloadavg()[0]:.2f}.\n\n"
            + _common.md_table(["file", "reader", "CPU s", "peak RSS MiB", "CPU vs old", "peak vs old"], table,
                               align="llrrrr"))


def main() -> int:
    p = _common.parser(__doc__)
    p.add_argument("--part", choices=["parse", "s3", "tables"], default="parse", help="which measurement")
    p.add_argument("--table-rows", type=int, default=1_100_000, help="rows of the generated table (part tables)")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the generated LIBSVM file")
    p.add_argument("--features", type=int, default=100_000, help="feature columns of the generated file")
    p.add_argument("--nnz-per-row", type=int, default=100, help="non-zeros per row (on average)")
    p.add_argument("--labels", type=int, default=50, help="label columns of the generated file")
    p.add_argument("--data-dir", default=None, help="where the generated file is kept (default: the temp folder)")
    p.add_argument("--s3-mb", type=float, default=96,
                   help="part s3: MB of shards in all (96: a 1-worker build takes about a minute quiet)")
    p.add_argument("--shards", type=int, default=16, help="part s3: shard files")
    p.add_argument("--s3-workers", type=lambda t: [int(x) for x in t.split(",")], default=[1, 2],
                   help="part s3: Dask worker processes, one build each (default 1,2)")
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0
    if args.part == "s3":
        _common.emit("Ingest: 16 shards on S3, built by 1 and 2 Dask workers", part_s3(args), args.out)
        return 0
    if args.part == "tables":
        _common.emit("Ingest: read a CSV and a Parquet file", part_tables(args), args.out)
        return 0
    body = part_parse(args)
    _common.emit("Ingest: parse a multi-label LIBSVM file", body, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
