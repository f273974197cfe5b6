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


# -- count data for the store build (parts build and big) ---------------------------------
def make_block(rng, rows: int, d: int, L: int, row_nnz: int) -> bytes:
    """``rows`` lines of multi-label LIBSVM count data: ~``row_nnz`` features per row from a
    Zipf-like popularity over ``d`` columns, integer values 1..8 (every column's value counts
    exact), 1-3 labels, the first tied to the row's first feature (selection has signal)."""
    import numpy as np

    ranks = np.arange(1, d + 1, dtype=np.float64)
    p = 1.0 / ranks ** 0.8
    p /= p.sum()
    perm = rng.permutation(d)
    ks = np.maximum(1, rng.poisson(row_nnz, rows))
    drawn = perm[rng.choice(d, size=int(ks.sum()), p=p)] + 1  # one draw for the block
    vals = rng.integers(1, 9, drawn.size)
    extra = rng.integers(0, 3, rows)
    more = rng.integers(0, L, (rows, 2))
    lines = []
    at = 0
    for r in range(rows):
        feats, first = np.unique(drawn[at:at + ks[r]], return_index=True)
        v = vals[at:at + ks[r]][first]
        at += ks[r]
        labs = {int(feats[0]) % L, *more[r, :extra[r]].tolist()}
        lines.append(",".join(map(str, sorted(labs))) + " "
                     + " ".join(f"{f}:{x}" for f, x in zip(feats.tolist(), v.tolist())))
    return ("\n".join(lines) + "\n").encode()


def generate_counts(path: Path, size_bytes: int, d: int = 100_000, L: int = 50, row_nnz: int = 100,
                    blocks: int = 64, seed: int = 0) -> Path:
    """One LIBSVM file of about ``size_bytes`` at ``path`` (kept: generated once, written
    under a temporary name and renamed when complete). ``blocks`` distinct blocks of 4000 rows
    are generated (Python text formatting is slower than the build it feeds) and repeated in a
    seeded order until the size is reached: deterministic for a seed."""
    import numpy as np

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    texts = [make_block(rng, 4000, d, L, row_nnz) for _ in range(blocks)]
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with open(tmp, "wb", buffering=1 << 24) as fh:
            while written < size_bytes:
                for b in rng.permutation(blocks):
                    fh.write(texts[b])
                    written += len(texts[b])
                    if written >= size_bytes:
                        break
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def counts_name(size_bytes: int, d: int, L: int, row_nnz: int, seed: int) -> str:
    return f"coreselect-counts-{size_bytes}-{d}x{L}-{row_nnz}-s{seed}.svm"


def _child(payload: dict) -> dict:
    case, path = payload["case"], payload["path"]
    warm = Path(payload["warm"])
    if case == "sklearn":
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


def main() -> int:
    p = _common.parser(__doc__)
    p.add_argument("--part", choices=["parse"], default="parse", help="which measurement")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the generated LIBSVM file")
    p.add_argument("--features", type=int, default=100_000, help="feature columns of the generated file")
    p.add_argument("--nnz-per-row", type=int, default=100, help="non-zeros per row (on average)")
    p.add_argument("--labels", type=int, default=50, help="label columns of the generated file")
    p.add_argument("--data-dir", default=None, help="where the generated file is kept (default: the temp folder)")
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0
    body = part_parse(args)
    _common.emit("Ingest: parse a multi-label LIBSVM file", body, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
