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
Part ``tables``: a generated numeric CSV (~200 MB by default) and the same table as Parquet,
read whole by ``pandas.read_csv``, by the old whole-file readers (pandas / ``ParquetFile.read``,
now tests/reference_readers.py), by ``coreselect.load`` (pyarrow's streamed batches
concatenated) and streamed by ``open_chunks(...).chunks()``; CPU seconds and peak RSS, each
in a fresh child, side by side in one run.
"""

from __future__ import annotations

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
    p.add_argument("--part", choices=["parse", "tables"], default="parse", help="which measurement")
    p.add_argument("--table-rows", type=int, default=1_100_000, help="rows of the generated table (part tables)")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the generated LIBSVM file")
    p.add_argument("--features", type=int, default=100_000, help="feature columns of the generated file")
    p.add_argument("--nnz-per-row", type=int, default=100, help="non-zeros per row (on average)")
    p.add_argument("--labels", type=int, default=50, help="label columns of the generated file")
    p.add_argument("--data-dir", default=None, help="where the generated file is kept (default: the temp folder)")
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0
    if args.part == "tables":
        _common.emit("Ingest: read a CSV and a Parquet file", part_tables(args), args.out)
        return 0
    body = part_parse(args)
    _common.emit("Ingest: parse a multi-label LIBSVM file", body, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
