"""Scale benchmark: centralized vs streaming vs distributed (2-worker Dask LocalCluster) on
huge sparse synthetic data, from a column store.

    python benchmarks/scale.py --sizes 2000000 10000000 [--modes centralized streaming distributed]

Every mode runs in its own subprocess, so peak RSS (``ru_maxrss``) is that mode's alone; for
``distributed`` the peak RSS of each Dask worker process is measured inside the worker.
Prints a Markdown table and writes ``results.json`` in the work folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import describe, emit, write_atomic, wrote  # noqa: E402

def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def child_build(store: Path, d: int, n: int, labels: int, density: float, seed: int,
                block_size: int) -> dict:
    from coreselect.datasets.synthetic import make_sparse_multilabel
    from coreselect.store import build_store

    t = time.perf_counter()
    ds = make_sparse_multilabel(n_samples=n, n_features=d, n_labels=labels, density=density,
                                n_relevant=100, n_redundant=200, random_state=seed)
    t_gen = time.perf_counter() - t
    t = time.perf_counter()
    build_store(ds.X, ds.Y, store, block_size=block_size, seed=seed,
                feature_names=ds.feature_names, label_names=ds.label_names, name=ds.name)
    return {"nnz": int(ds.X.nnz), "seconds_generate": t_gen,
            "seconds_build": time.perf_counter() - t, "peak_rss_mb": _maxrss_mb()}


def child_run(store: Path, mode: str, k: int, workers: int) -> dict:
    from coreselect.selection import select
    from coreselect.store import open_store

    st = open_store(store)
    t = time.perf_counter()
    out: dict = {}
    if mode == "distributed":
        from distributed import Client

        from coreselect.engines.dask import local_cluster

        with local_cluster(workers, 1) as cluster, Client(cluster) as client:
            t = time.perf_counter()  # cluster start-up is not selection time
            res = select(st, k=k, mode="distributed", engine="dask", client=client)
            out["seconds"] = time.perf_counter() - t
            out["worker_peak_rss_mb"] = sorted(client.run(_maxrss_mb).values())
    else:
        res = select(st, k=k, mode=mode)
        out["seconds"] = time.perf_counter() - t
    parts = [p.seconds for p in res.parts]
    out.update({
        "mode": mode, "objective": res.objective, "partitions": res.partitions,
        "coreset_size": res.coreset_size, "union": res.union_size or 0,
        "part_seconds_mean": sum(parts) / len(parts) if parts else None,
        "part_seconds_max": max(parts) if parts else None,
        "seconds_union": res.timings.get("union"),
        "selected": [int(i) for i in res.selected],
        "peak_rss_mb": _maxrss_mb(),
    })
    return out


def _spawn(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1], "rc": proc.returncode}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=describe(__doc__))
    ap.add_argument("--sizes", type=int, nargs="+", default=[2_000_000, 10_000_000],
                    help="numbers of features d (one store each)")
    ap.add_argument("--modes", nargs="+", default=["centralized", "streaming", "distributed"],
                    choices=["centralized", "streaming", "distributed"],
                    help="selection modes, each in its own process")
    ap.add_argument("--n-samples", type=int, default=20_000, help="samples (rows)")
    ap.add_argument("--labels", type=int, default=50, help="labels")
    ap.add_argument("--density", type=float, default=0.0005,
                    help="share of non-zero background cells")
    ap.add_argument("--k", type=int, default=100, help="features to select")
    ap.add_argument("--workers", type=int, default=2,
                    help="Dask workers of the distributed mode (one thread each)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the data and of the partition")
    ap.add_argument("--block-size", type=int, default=65536, help="columns per column block of the store")
    ap.add_argument("--workdir", type=Path,
                    default=Path(os.environ.get("TMPDIR", "/tmp")) / "coreselect-scale",
                    help="folder for the stores and results.json (kept: a store is reused)")
    ap.add_argument("--out", default=None,
                    help="also write the Markdown (with the command and date) to this file")
    ap.add_argument("--_child", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a._child:
        kind, store = a._child[0], Path(a._child[1])
        if kind == "build":
            res = child_build(store, a.sizes[0], a.n_samples, a.labels, a.density, a.seed,
                              a.block_size)
        else:
            res = child_run(store, kind, a.k, a.workers)
        print(json.dumps(res))
        return

    a.workdir.mkdir(parents=True, exist_ok=True)
    results = []
    common = ["--n-samples", str(a.n_samples), "--labels", str(a.labels), "--density",
              str(a.density), "--k", str(a.k), "--workers", str(a.workers), "--seed",
              str(a.seed), "--block-size", str(a.block_size)]
    for d in a.sizes:
        store = a.workdir / f"store_d{d}_n{a.n_samples}_s{a.seed}"
        if not (store / "store.json").is_file():
            b = _spawn(["--sizes", str(d), *common, "--_child", "build", str(store)])
            print(f"# d={d}: store build {json.dumps(b)}", file=sys.stderr, flush=True)
            results.append({"d": d, "mode": "build", **b})
        for mode in a.modes:
            r = _spawn(["--sizes", str(d), *common, "--_child", mode, str(store)])
            r.update({"d": d, "mode": mode})
            print(f"# d={d} {mode}: " + json.dumps({k: v for k, v in r.items() if k != "selected"}),
                  file=sys.stderr, flush=True)
            results.append(r)
            # rewritten after every run, so a failure later keeps the runs before it; said once
            write_atomic(a.workdir / "results.json", json.dumps(results, indent=1), announce=False)
    if (a.workdir / "results.json").is_file():
        wrote(a.workdir / "results.json")

    body = [f"n = {a.n_samples:,}, density = {a.density:.4%}, {a.labels} labels, k = {a.k}, "
            f"{a.workers}-worker LocalCluster for distributed", "",
            "| d | mode | wall s | peak RSS MB (driver) | worker peak RSS MB | objective | m | "
            "mean / max part s | union s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r["mode"] == "build":
            body.insert(1, f"Store build, d = {r['d']:,}: generated in {r['seconds_generate']:.1f} s, "
                        f"stored in {r['seconds_build']:.1f} s, peak {r['peak_rss_mb']:.0f} MB.")
            continue
        if "error" in r:
            body.append(f"| {r['d']:,} | {r['mode']} | failed: {r['error']} | | | | | | |")
            continue
        w = ", ".join(f"{x:.0f}" for x in r.get("worker_peak_rss_mb", [])) or "-"
        ps = (f"{r['part_seconds_mean']:.2f} / {r['part_seconds_max']:.2f}"
              if r.get("part_seconds_mean") is not None else "-")
        us = f"{r['seconds_union']:.2f}" if r.get("seconds_union") is not None else "-"
        body.append(f"| {r['d']:,} | {r['mode']} | {r['seconds']:.1f} | {r['peak_rss_mb']:.0f} | {w} | "
                    f"{r['objective']:.4f} | {r['partitions']} | {ps} | {us} |")
    for d in a.sizes:
        sel = {r["mode"]: r.get("selected") for r in results if r["d"] == d and "selected" in r}
        if "streaming" in sel and "distributed" in sel:
            body += ["", f"d = {d:,}: streaming and distributed selections identical: "
                     f"{sel['streaming'] == sel['distributed']}"]
        if "centralized" in sel and "distributed" in sel:
            ov = len(set(sel["centralized"]) & set(sel["distributed"])) / a.k
            body.append(f"d = {d:,}: overlap of distributed with centralized selection: {ov:.2f}")
    emit("Scale: streaming and distributed selection from a column store", "\n".join(body),
         a.out)


if __name__ == "__main__":
    main()
