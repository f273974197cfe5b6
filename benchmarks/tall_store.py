"""Tall data from a column store, out of core: build a store in row chunks, then the exact
row-sharded selection (streaming one tile at a time, or on a Dask LocalCluster).

    python benchmarks/tall_store.py [--n 2000000] [--d 100000] [--density 0.001]
        [--chunk 250000] [--row-block-size 262144] [--store PATH] [--cases build rows dask-1 dask-2]

The data follow ``make_sparse_multilabel``'s recipe (50 labels with prevalence 5-30 %,
background columns of ``Binomial(rows, density)`` non-zeros with values 1-3, 100 relevant
columns on 60 % of one label's positives, 200 noisy copies of them), drawn chunk by chunk
of rows with one seeded generator per chunk and the planted structure drawn once, so the
build never holds the whole ``X`` (rows are independent in the recipe: the same
distribution as one ``make_sparse_multilabel`` call, not the same matrix).

Every case runs in its own subprocess: its peak RSS (``ru_maxrss``; Dask workers:
``VmHWM``) is its own. ``rows`` is ``select(store, k, mode="rows")``'s run
(``SequentialRows`` over ``StoreRowShards``), timed per greedy step; ``fulltile`` times the
former step (every tile read whole and its columns permuted) for a few of the same features.
No timing is asserted anywhere.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402


def chunks(n: int, d: int, density: float, chunk: int, n_labels: int = 50,
           n_relevant: int = 100, n_redundant: int = 200, seed: int = 0):
    """Row chunks ``(X_k CSC float32, Y_k int8)`` of the sparse multi-label recipe."""
    import numpy as np
    import scipy.sparse as sp

    base = np.random.default_rng(seed)
    prevalence = base.uniform(0.05, 0.3, size=n_labels)
    planted = base.choice(d, size=n_relevant + n_redundant, replace=False)
    relevant, redundant = planted[:n_relevant], planted[n_relevant:]
    relevant_label = np.arange(n_relevant) % n_labels
    redundant_of = base.integers(0, n_relevant, size=n_redundant)
    is_planted = np.zeros(d, dtype=bool)
    is_planted[planted] = True
    for k, a in enumerate(range(0, n, chunk)):
        m = min(chunk, n - a)
        rng = np.random.default_rng([seed, k + 1])
        Y = (rng.random((m, n_labels)) < prevalence).astype(np.int8)
        counts = rng.binomial(m, density, size=d).astype(np.int64)
        counts[is_planted] = 0
        cols = [np.repeat(np.arange(d, dtype=np.int64), counts)]
        rows = [rng.integers(0, m, size=int(counts.sum()), dtype=np.int64)]
        rel_rows = []
        for j, label in zip(relevant, relevant_label):
            pos = np.flatnonzero(Y[:, label])
            r = np.union1d(pos[rng.random(pos.size) < 0.6],
                           rng.integers(0, m, size=rng.binomial(m, density)))
            rel_rows.append(r)
            rows.append(r)
            cols.append(np.full(r.size, j))
        for j, src in zip(redundant, redundant_of):
            b = rel_rows[src]
            r = np.union1d(b[rng.random(b.size) < 0.9],
                           rng.integers(0, m, size=rng.binomial(m, density)))
            rows.append(r)
            cols.append(np.full(r.size, j))
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        data = rng.integers(1, 4, size=rows.size).astype(np.float32)
        X = sp.csc_matrix((data, (rows.astype(np.int32), cols.astype(np.int32))), shape=(m, d))
        X.sum_duplicates()
        del rows, cols, data
        yield X, Y


class CountedChunks:
    """:func:`chunks` that counts the non-zeros it has yielded (``nnz``), for a build's report."""

    def __init__(self, n: int, d: int, density: float, chunk: int):
        self.args = (n, d, density, chunk)
        self.nnz = 0

    def __iter__(self):
        for X, Y in chunks(*self.args):
            self.nnz += int(X.nnz)
            yield X, Y


def case_build(args) -> dict:
    from coreselect.store.build import build_store_from_chunks

    counted = CountedChunks(args["n"], args["d"], args["density"], args["chunk"])
    start = time.perf_counter()
    store = build_store_from_chunks(
        iter(counted), args["store"],
        block_size=args["block_size"], row_block_size=args["row_block_size"])
    seconds = time.perf_counter() - start
    size = sum(f.stat().st_size for f in Path(args["store"]).rglob("*") if f.is_file())
    return {"seconds": seconds, "peak_mib": _common.peak_rss_mib(), "disk_mib": size / 2**20,
            "nnz": counted.nnz, "row_blocks": store.n_row_blocks, "col_blocks": store.n_blocks}


def case_rows(args) -> dict:
    from coreselect.core.entropy import warm_up
    from coreselect.engines.rowsharded import SequentialRows, select_row_sharded, step_task
    from coreselect.selection.sources import StoreRowShards
    from coreselect.store import open_store

    warm_up()
    shards = StoreRowShards(open_store(args["store"]))
    rows = SequentialRows(shards)
    stamps, cb = _common.steps_timer()
    start = time.perf_counter()
    # what select(store, k=k, mode="rows") runs (calibration as the library default)
    from coreselect.selection.spec import Objective

    o = Objective(k=args["k"])
    run = select_row_sharded(rows, k=o.k, lam=o.lam, p=o.p, relevance=o.relevance,
                             calibration=o.calibration, callback=cb)
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "counts_s": run.timings["counts"], "step_ms": _common.step_ms(stamps),
           "peak_mib": _common.peak_rss_mib(), "selected": [int(v) for v in run.result.selected],
           "objective": run.result.objective}
    if args.get("fulltile"):
        # the former step: every tile read whole, permuted, its CSR built
        us = [int(v) for v in run.result.selected[:args["fulltile"]]]
        t0 = time.perf_counter()
        for u in us:
            rows.map_reduce(step_task, u, "auto")
        out["fulltile_step_ms"] = 1e3 * (time.perf_counter() - t0) / len(us)
        t0 = time.perf_counter()
        for u in us:
            rows.step(u, "auto")
        out["fast_same_steps_ms"] = 1e3 * (time.perf_counter() - t0) / len(us)
    return out


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # no _common on workers


def _warm() -> bool:
    from coreselect.core.entropy import warm_up

    return warm_up()


def case_dask(args) -> dict:
    from distributed import Client, wait

    from coreselect.engines.dask import local_cluster
    from coreselect.engines.dask_rows import DaskRows
    from coreselect.engines.rowsharded import select_row_sharded
    from coreselect.selection.sources import StoreRowShards
    from coreselect.selection.spec import Objective
    from coreselect.store import open_store

    shards = StoreRowShards(open_store(args["store"]))
    o = Objective(k=args["k"])
    with local_cluster(args["workers"]) as cluster, Client(cluster) as client:
        client.wait_for_workers(args["workers"])
        client.run(_warm)
        start = time.perf_counter()
        with DaskRows(client, shards) as rows:
            wait(rows.tiles)  # tiles read by the workers from the store
            t_load = time.perf_counter() - start
            stamps, cb = _common.steps_timer()
            t0 = time.perf_counter()
            run = select_row_sharded(rows, k=o.k, lam=o.lam, p=o.p, relevance=o.relevance,
                                     calibration=o.calibration, callback=cb)
            seconds = time.perf_counter() - t0
            worker_peak = client.run(_peak_mib)
    return {"seconds": seconds, "load_s": t_load, "counts_s": run.timings["counts"],
            "step_ms": _common.step_ms(stamps), "peak_mib": _common.peak_rss_mib(),
            "worker_peak_mib": max(worker_peak.values()),
            "selected": [int(v) for v in run.result.selected],
            "objective": run.result.objective}


CASES = {"build": case_build, "rows": case_rows, "dask": case_dask}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        payload = json.loads(sys.argv[2])
        print(json.dumps(CASES[payload["case"]](payload)))
        return
    p = _common.parser(__doc__)
    p.add_argument("--n", type=int, default=2_000_000, help="samples (rows) of the store")
    p.add_argument("--d", type=int, default=100_000, help="features (columns)")
    p.add_argument("--density", type=float, default=0.001,
                   help="share of non-zero background cells")
    p.add_argument("--k", type=int, default=100, help="features to select")
    p.add_argument("--chunk", type=int, default=250_000,
                   help="rows drawn and written per chunk while building (bounds its memory)")
    p.add_argument("--block-size", type=int, default=16384, help="columns per column block of the store")
    p.add_argument("--row-block-size", type=int, default=262144,
                   help="rows per row block (tile) of the store")
    p.add_argument("--store", default=None,
                   help="store folder to build or reuse (default: a temporary folder, removed)")
    p.add_argument("--fulltile", type=int, default=3,
                   help="features for which the former full-tile step is timed (0: none)")
    p.add_argument("--cases", nargs="+", default=["build", "rows", "dask-1", "dask-2"],
                   help="cases to run, each in its own process (build the store; rows: "
                   "streaming row-sharded selection; dask-1/dask-2: on 1 or 2 Dask workers)")
    args = p.parse_args()
    base = {"n": args.n, "d": args.d, "density": args.density, "k": args.k,
            "chunk": args.chunk, "block_size": args.block_size,
            "row_block_size": args.row_block_size, "fulltile": args.fulltile}
    if args.quick:
        base.update(n=20_000, d=2_000, density=0.01, k=10, chunk=6000, block_size=512,
                    row_block_size=5000)
    import tempfile

    tmp = None
    if args.store is None:
        tmp = tempfile.TemporaryDirectory(prefix="tall-store-")
        args.store = os.path.join(tmp.name, "store")
    base["store"] = args.store
    table, results = [], {}
    for name in args.cases:
        kind, _, num = name.partition("-")
        payload = dict(base, case=kind, workers=int(num or 1))
        load = os.getloadavg()[0]
        res = _common.run_case(__file__, payload)
        results[name] = res
        if "error" in res:
            table.append([name, "error: " + res["error"][:80], "", "", "", "", ""])
            continue
        same = ""
        if kind == "dask" and "selected" in results.get("rows", {}):
            same = "same selection; " if results["rows"]["selected"] == res["selected"] else "DIFFERENT selection; "
        extra = ""
        if kind == "build":
            extra = (f"{res['nnz']:,} nnz, {res['row_blocks']} row blocks x "
                     f"{res['col_blocks']} col blocks, {res['disk_mib']:.0f} MiB on disk")
        elif "fulltile_step_ms" in res:
            extra = (f"former full-tile step {res['fulltile_step_ms']:.0f} ms vs "
                     f"{res['fast_same_steps_ms']:.0f} ms (same {base['fulltile']} features)")
        elif kind == "dask":
            extra = f"tiles to workers {res['load_s']:.1f} s"
        peak = f"{res['peak_mib']:.0f}" + (f" (workers {res['worker_peak_mib']:.0f})"
                                            if "worker_peak_mib" in res else "")
        table.append([name, _common.fmt(res["seconds"]), _common.fmt(res.get("counts_s")),
                      _common.fmt(res.get("step_ms")), peak, f"{load:.1f}", same + extra])
    if "seconds" in results.get("dask-1", {}) and "seconds" in results.get("dask-2", {}):
        table.append(["dask speed-up 2 vs 1 worker",
                      _common.fmt(results["dask-1"]["seconds"] / results["dask-2"]["seconds"]),
                      "", "", "", "", ""])
    title = (f"tall store: n={base['n']:,}, d={base['d']:,}, density={base['density']}, "
             f"k={base['k']}")
    _common.emit(title, _common.md_table(["case", "seconds", "counts s", "ms/step",
                                          "peak RSS MiB", "load (1 min)", "notes"], table),
                 args.out)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
