"""Out-of-core store build from a multi-label LIBSVM dataset in shards, timed.

Time and peak memory with 1 and 2 worker processes side by side, and the streamed path's
selection against the in-memory path on a prefix (issue 29, "store build" targets).

    python benchmarks/ingest_build.py --size-mb 1024 --shards 4 --workers 1,2 \\
        --prefix-nnz 10000000 --out docs/results/bench/ingest_build.md

Data: rows of ~``--row-nnz`` features drawn from a Zipf-like popularity over ``--features``
columns, integer counts 1..8 (so every column's value counts are exact), ``--labels`` labels
(1-3 per row, tied to the row's first feature so that selection has signal). ``--blocks``
distinct blocks of text are generated and repeated until the size is reached (generating
1 GB of text in Python costs more than building from it).

Each build is ``coreselect store build SHARDS STORE --workers W`` in its own process; peak
RSS is the largest process's (``ru_maxrss`` of the children, the pool workers included) and
the sum over the process tree sampled every 0.2 s. The prefix check writes the first rows
holding ``--prefix-nnz`` non-zeros to one file and compares ``select FILE --mode rows``
(transient store from chunks) with ``coreselect.select(load(FILE), mode="rows")``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def make_block(rng: np.random.Generator, rows: int, d: int, L: int, row_nnz: int) -> bytes:
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


def generate(folder: Path, size_mb: float, shards: int, d: int, L: int, row_nnz: int,
             blocks: int, seed: int) -> tuple[list[Path], int]:
    rng = np.random.default_rng(seed)
    texts = [make_block(rng, 4000, d, L, row_nnz) for _ in range(blocks)]
    nnz_of = [t.count(b":") for t in texts]
    target = int(size_mb * 2**20)
    per_shard = -(-target // shards)
    files, nnz, b = [], 0, 0
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(shards):
        path = folder / f"part{s:03d}.svm"
        written = 0
        with open(path, "wb") as fh:
            while written < per_shard:
                fh.write(texts[b % blocks])
                written += len(texts[b % blocks])
                nnz += nnz_of[b % blocks]
                b += 1
        files.append(path)
    return files, nnz


def run_measured(cmd: list[str], env: dict) -> dict:
    """Wall time, the largest process's peak RSS, and the sampled peak of the tree's sum."""
    import psutil

    # A wrapper process reports the largest ru_maxrss of its descendants (pool workers too).
    wrapper = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
               "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "print('MAXRSS', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); "
               "sys.exit(rc)")
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", wrapper, *cmd], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak_tree = [0]
    stop = threading.Event()

    def sample() -> None:
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not stop.is_set():
            try:
                total = root.memory_info().rss + sum(
                    c.memory_info().rss for c in root.children(recursive=True))
                peak_tree[0] = max(peak_tree[0], total)
            except psutil.Error:
                pass
            stop.wait(0.2)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = proc.communicate()
    stop.set()
    t.join()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    maxrss, cpu = [(int(line.split()[1]), float(line.split()[2]))
                   for line in err.decode().splitlines() if line.startswith("MAXRSS ")][-1]
    return {"wall_s": wall, "cpu_s": cpu, "max_rss_mib": maxrss / 1024,
            "tree_rss_mib": peak_tree[0] / 2**20, "stdout": out.decode()}


def prefix_file(files: list[Path], nnz: int, path: Path) -> int:
    got = 0
    with open(path, "wb") as out:
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    if got >= nnz:
                        return got
                    out.write(line)
                    got += line.count(b":")
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=256, help="total size of the generated LIBSVM shards, MB")
    ap.add_argument("--shards", type=int, default=4, help="number of shard files the data are cut into")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts of the builds compared side by side")
    ap.add_argument("--features", type=int, default=100_000, help="feature columns of the generated data")
    ap.add_argument("--labels", type=int, default=50, help="label columns of the generated data")
    ap.add_argument("--row-nnz", type=int, default=100, help="non-zeros per row")
    ap.add_argument("--blocks", type=int, default=8, help="row blocks of the built store")
    ap.add_argument("--prefix-nnz", type=float, default=1e7, help="non-zeros of the prefix on which the streamed and in-memory selections are compared")
    ap.add_argument("-k", type=int, default=20, help="features selected in the comparison")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    ap.add_argument("--tmp", default=None, help="scratch folder (default: the system's)")
    ap.add_argument("--out", default=None, help="write the markdown table here")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    tmp = Path(tempfile.mkdtemp(prefix="ingest-build-", dir=args.tmp))
    rows = []
    try:
        t0 = time.perf_counter()
        files, nnz = generate(tmp / "shards", args.size_mb, args.shards, args.features,
                              args.labels, args.row_nnz, args.blocks, args.seed)
        size = sum(f.stat().st_size for f in files)
        print(f"generated {size / 2**20:.0f} MiB, {nnz:.3g} non-zeros in {len(files)} shards "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        checksums = {}
        for w in [int(x) for x in args.workers.split(",")]:
            store = tmp / f"store-w{w}"
            cmd = [sys.executable, "-m", "coreselect", "store", "build", str(tmp / "shards"),
                   str(store), "--workers", str(w), "--quiet"]
            m = run_measured(cmd, env)
            checksums[w] = json.loads((store / "store.json").read_text())["files"]
            rows.append({"workers": w, **m, "mb_s": size / 2**20 / m["wall_s"],
                         "nnz_s": nnz / m["wall_s"]})
            print(f"workers {w}: {m['wall_s']:.1f} s ({m['cpu_s']:.1f} CPU s), "
                  f"{size / 2**20 / m['wall_s']:.1f} MiB/s, "
                  f"{nnz / m['wall_s']:.3g} nnz/s, max RSS {m['max_rss_mib']:.0f} MiB, tree "
                  f"{m['tree_rss_mib']:.0f} MiB", flush=True)
            shutil.rmtree(store)
        identical = all(c == next(iter(checksums.values())) for c in checksums.values())
        # The prefix: streamed (transient store) vs in memory, the same selection?
        prefix = tmp / "prefix.svm"
        pnnz = prefix_file(files, int(args.prefix_nnz), prefix)
        streamed = run_measured([sys.executable, "-m", "coreselect", "select", str(prefix),
                                 "-k", str(args.k), "--mode", "rows", "--json", "--quiet",
                                 "--temp-dir", str(tmp)], env)
        code = ("import json,sys; from coreselect import load, select; "
                f"r = select(load({str(prefix)!r}), k={args.k}, mode='rows'); "
                "print(json.dumps([int(i) for i in r.selected]))")
        memory = run_measured([sys.executable, "-c", code], env)
        same = json.loads(streamed["stdout"])["selected"] == json.loads(
            memory["stdout"].strip().splitlines()[-1])
        print(f"prefix {pnnz:.3g} nnz: streamed {streamed['wall_s']:.1f} s "
              f"{streamed['max_rss_mib']:.0f} MiB, in memory {memory['wall_s']:.1f} s "
              f"{memory['max_rss_mib']:.0f} MiB, identical selection: {same}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    lines = [
        f"Data: {size / 2**20:.0f} MiB of multi-label LIBSVM in {len(files)} shards, "
        f"{nnz:.3g} non-zeros, {args.features} features, {args.labels} labels; load average "
        f"{load[0]:.1f} at the end (times under load are several times a quiet run's).",
        "",
        "| workers | wall (s) | CPU (s) | MiB per CPU-s | non-zeros per CPU-s | "
        "peak RSS, largest process (MiB) | peak RSS, all processes (MiB) | "
        "10 GB on 2 free cores at this CPU cost (min) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        per_cpu = size / 2**20 / r["cpu_s"]
        lines.append(f"| {r['workers']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                     f"{per_cpu:.1f} | {nnz / r['cpu_s']:.3g} | {r['max_rss_mib']:.0f} | "
                     f"{r['tree_rss_mib']:.0f} | {10 * 1024 / per_cpu / 2 / 60:.0f} |")
    lines += ["", "Wall times are those of a machine shared with other work (load above); CPU "
              "seconds (the processes' user + system time) are the basis of the 10 GB "
              "column: the same work spread over 2 cores with nothing else running, a lower "
              "bound that assumes perfect scaling."]
    lines += [
        "",
        f"Stores identical across worker counts (every file's size and crc32): {identical}.",
        "",
        f"Prefix of {pnnz:.3g} non-zeros, `select FILE --mode rows -k {args.k}`: streamed "
        f"(transient store from chunks) {streamed['wall_s']:.1f} s, peak "
        f"{streamed['max_rss_mib']:.0f} MiB; in memory (`select(load(FILE), mode='rows')`) "
        f"{memory['wall_s']:.1f} s, peak {memory['max_rss_mib']:.0f} MiB; identical "
        f"selection: {same}.",
    ]
    from _common import emit  # the provenance line: command, date, machine

    emit("store build from files", "\n".join(lines), args.out)


if __name__ == "__main__":
    main()
