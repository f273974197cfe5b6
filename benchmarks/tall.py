"""Tall data: the lean core and the row-sharded greedy (in memory, streaming, Dask).

    python benchmarks/tall.py [--quick] [--n 200000] [--d 20000] [--density 0.005] [--shards 4]

Every case runs in its own subprocess so that its peak RSS (``ru_maxrss``) is its own:

* ``fit``: ``GDSSelector(k=100).fit`` on ``make_sparse_multilabel(n, d, 50 labels, density)``
  (the 26.2 M non-zero case by default), with the time of each stage;
* ``unsharded`` / ``rows-r``: the discretized problem's AltGreedy, unsharded (the core's
  ``Problem``) and row-sharded in memory over ``r`` shards (same selection asserted);
* ``dask-w``: the row-sharded run on a LocalCluster of ``w`` single-threaded workers (tiles
  persisted on the workers), with what the client sent per greedy step.

Prints a Markdown table; no timing is asserted anywhere.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402


def _data(args):
    from coreselect.datasets.synthetic import make_sparse_multilabel

    return make_sparse_multilabel(n_samples=args["n"], n_features=args["d"], n_labels=50,
                                  density=args["density"], random_state=0)


def _discrete(args):
    from coreselect.core.discretize import discretize, discretize_labels

    ds = _data(args)
    F, L = discretize(ds.X), discretize_labels(ds.Y)
    del ds
    return F, L


def case_fit(args) -> dict:
    import coreselect
    from coreselect.core.entropy import warm_up

    warm_up()
    ds = _data(args)
    rss_data = _common.peak_rss_mib()
    start = time.perf_counter()
    sel = coreselect.GDSSelector(k=args["k"]).fit(ds.X, ds.Y)
    seconds = time.perf_counter() - start
    timings = getattr(sel, "timings_", None) or getattr(sel, "selection_", None)
    timings = getattr(timings, "timings", timings) if timings is not None else {}
    return {"seconds": seconds, "peak_mib": _common.peak_rss_mib(), "data_mib": rss_data,
            "nnz": int(ds.X.nnz), "selected": [int(v) for v in sel.selected_],
            "stages": {k: float(v) for k, v in dict(timings).items()
                       if isinstance(v, (int, float))}}


def case_unsharded(args) -> dict:
    from coreselect.core.entropy import warm_up
    from coreselect.core.problem import Problem

    warm_up()
    F, L = _discrete(args)
    start = time.perf_counter()
    problem = Problem.from_discrete(F, L, k=args["k"])
    t_counts = time.perf_counter() - start
    stamps, cb = _common.steps_timer()
    result = problem.run(alternate=True, callback=cb)
    return {"seconds": time.perf_counter() - start, "counts_s": t_counts,
            "step_ms": _common.step_ms(stamps),
            "peak_mib": _common.peak_rss_mib(), "selected": [int(v) for v in result.selected],
            "objective": result.objective}


def case_rows(args) -> dict:
    from coreselect.core.entropy import warm_up
    from coreselect.engines.rowsharded import InMemoryRowShards, SequentialRows, select_row_sharded

    warm_up()
    F, L = _discrete(args)
    shards = InMemoryRowShards.split(F, L, args["shards"])
    del F, L
    stamps, cb = _common.steps_timer()
    start = time.perf_counter()
    run = select_row_sharded(SequentialRows(shards), k=args["k"], callback=cb)
    seconds = time.perf_counter() - start
    # Per-step costs behind the timings: cells gathered (rows of u times their lengths) and
    # the size of one shard's step table (what a worker sends per step).
    import numpy as np

    from coreselect.core.shards import step_counts

    cells, table_bytes = [], []
    for u in run.result.selected:
        for i in range(shards.n_row_shards):
            f = shards.features(i)
            rows = f.codes.indices[f.codes.indptr[u]:f.codes.indptr[u + 1]]
            cells.append(int(np.diff(f.row_major.indptr)[rows].sum()))
            table_bytes.append(step_counts(f, int(u)).nbytes)
    per_step = {"cells_per_step": float(np.sum(cells)) / len(run.result.selected),
                "shard_table_kib": float(np.mean(table_bytes)) / 1024}
    return {**per_step, "seconds": seconds, "counts_s": run.timings["counts"],
            "step_ms": _common.step_ms(stamps),
            "peak_mib": _common.peak_rss_mib(), "selected": [int(v) for v in run.result.selected],
            "objective": run.result.objective}


def _peak_mib() -> float:
    """This process's peak resident set (VmHWM), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # no _common on workers


def _warm() -> bool:
    from coreselect.core.entropy import warm_up

    return warm_up()


def case_dask(args) -> dict:
    from distributed import Client

    from coreselect.engines.dask import local_cluster
    from coreselect.engines.dask_rows import DaskRows
    from coreselect.engines.rowsharded import InMemoryRowShards, select_row_sharded

    F, L = _discrete(args)
    shards = InMemoryRowShards.split(F, L, args["shards"])
    del F, L
    with local_cluster(args["workers"]) as cluster, Client(cluster) as client:
        client.wait_for_workers(args["workers"])
        client.run(_warm)
        start = time.perf_counter()
        with DaskRows(client, shards) as rows:
            __import__("distributed").wait(rows.tiles)  # tiles on the workers: a one-off transfer, timed apart
            t_load = time.perf_counter() - start
            stamps, cb = _common.steps_timer()
            t0 = time.perf_counter()
            run = select_row_sharded(rows, k=args["k"], callback=cb)
            seconds = time.perf_counter() - t0
            per_step = rows.bytes_sent / rows.n_calls
            worker_peak = client.run(_peak_mib)
    return {"seconds": seconds, "load_s": t_load, "counts_s": run.timings["counts"],
            "step_ms": _common.step_ms(stamps),
            "sent_per_step_b": per_step, "setup_mib": rows.setup_bytes / 2**20,
            "peak_mib": _common.peak_rss_mib(), "worker_peak_mib": max(worker_peak.values()),
            "selected": [int(v) for v in run.result.selected],
            "objective": run.result.objective}


CASES = {"fit": case_fit, "unsharded": case_unsharded, "rows": case_rows, "dask": case_dask}


def child(payload: dict) -> dict:
    return CASES[payload["case"]](payload)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    p = _common.parser(__doc__)
    p.add_argument("--n", type=int, default=200_000, help="samples (rows) of the synthetic data")
    p.add_argument("--d", type=int, default=20_000, help="features (columns)")
    p.add_argument("--density", type=float, default=0.005,
                   help="share of non-zero background cells")
    p.add_argument("--k", type=int, default=100, help="features to select")
    p.add_argument("--shards", type=int, default=4, help="row shards (tiles) of the sharded cases")
    p.add_argument("--cases", nargs="+", default=["fit", "unsharded", "rows-1", "rows",
                                                  "dask-1", "dask-2"],
                   help="cases to run, each in its own process (fit: GDSSelector.fit; "
                   "unsharded: the core Problem; rows-1/rows: 1 or --shards in-memory row "
                   "shards; dask-1/dask-2: row shards on a Dask cluster of 1 or 2 workers)")
    args = p.parse_args()
    base = {"n": args.n, "d": args.d, "density": args.density, "k": args.k,
            "shards": args.shards}
    if args.quick:
        base.update(n=5000, d=2000, density=0.01, k=10)
    rows, results = [], {}
    for name in args.cases:
        kind, _, num = name.partition("-")
        payload = dict(base, case=kind)
        if kind == "rows" and num:
            payload["shards"] = int(num)
        if kind == "dask":
            payload["workers"] = int(num or 2)
        res = _common.run_case(__file__, payload)
        results[name] = res
        label = name if num or kind not in ("rows",) else f"rows-{payload['shards']}"
        if "error" in res:
            rows.append([label, "error: " + res["error"][:60], "", "", "", "", ""])
            continue
        same = ""
        ref = results.get("unsharded") or results.get("fit")
        if ref and "selected" in ref and ref is not res:
            same = "yes" if ref["selected"] == res["selected"] else "NO"
        rows.append([label, _common.fmt(res["seconds"]), _common.fmt(res.get("counts_s")),
                     _common.fmt(res.get("step_ms")), f"{res['peak_mib']:.0f}"
                     + (f" (workers {res['worker_peak_mib']:.0f})" if "worker_peak_mib" in res
                        else ""),
                     _common.fmt(res.get("sent_per_step_b")), same])
    if "dask-1" in results and "dask-2" in results and "seconds" in results["dask-2"]:
        speedup = results["dask-1"]["seconds"] / results["dask-2"]["seconds"]
        rows.append(["dask speed-up 2 vs 1 worker", _common.fmt(speedup), "", "", "", "", ""])
    title = (f"tall: n={base['n']:,}, d={base['d']:,}, density={base['density']}, k={base['k']}, "
             f"{base['shards']} row shards")
    table = _common.md_table(["case", "seconds", "counts s", "ms/step", "peak RSS MiB",
                              "client bytes/step", "same selection"], rows)
    _common.emit(title, table + "\n\n```json\n" + json.dumps(
        {k: {kk: vv for kk, vv in v.items() if kk != "selected"} for k, v in results.items()},
        indent=1) + "\n```", args.out)


if __name__ == "__main__":
    main()
