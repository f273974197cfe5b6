"""Extreme multi-label: selection with thousands to a million labels (sparse relevance).

    python benchmarks/extreme.py [--quick] [--shapes eurlex-4k wiki10-31k] [--k 200]
                                 [--backends auto dense sparse] [--out FILE]
                                 [--modes centralized rows store-rows] [--row-shards 4]

Each case (a shape of ``make_extreme_multilabel`` and a relevance backend) runs in its own
subprocess, so its peak RSS (``ru_maxrss`` of that child) is its own. A case generates the
data, then times ``coreselect.select(X, Y, k=k)`` (centralized AltGreedy, MI, the default
calibration) by stage: ``discretize``, ``relevance`` (the dense features x labels matrix, or
the co-occurring pairs of :mod:`coreselect.core.sparse_relevance`), ``select`` (the greedy).
``dense`` is skipped where its matrix alone would exceed ``--dense-max-gib``. The table says
which backend ``auto`` chose, the co-occurring pairs, whether the sparse and dense selections
agree, and the machine's load average (the machine may be shared: compare rows of one run).
``--modes``: ``centralized`` (above), ``rows`` (``mode="rows"``: the samples in
``--row-shards`` shards, sparse co-occurrence counts summed over them, stage ``counts``), and
``store-rows`` (a column store of ``--row-block-size`` rows per block built first, then
``mode="rows"`` over its row blocks, read one at a time: stage ``build`` is the store's),
and ``cli`` (the data written as an XMC file by one process, then ``coreselect select
FILE.xmc -k K --json`` timed as a command: reading, relevance and greedy, peak RSS).
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
import numpy as np  # noqa: E402

QUICK = {"n_samples": 600, "n_features": 400, "n_labels": 2000, "n_signal_labels": 20}


def store_child(payload: dict) -> dict:
    """``mode="rows"`` on a built store, in a process of its own (its peak RSS is the run's,
    not the data generator's)."""
    import coreselect.core.sparse_relevance as sparse_relevance
    from coreselect import select
    from coreselect.core.entropy import warm_up

    warm_up()
    if payload["backend"] in ("sparse", "dense"):
        sparse_relevance.DENSE_RELEVANCE_MAX_BYTES = (
            0 if payload["backend"] == "sparse" else float("inf"))
    stamps, callback = _common.steps_timer()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    res = select(payload["store"], k=payload["k"], mode="rows",
                 progress=lambda stage, i, n: callback(i, n))
    seconds = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return {"seconds": seconds, "cpu_s": cpu,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "used": res.engine_info.get("relevance_backend"),
            "stages": {k: float(v) for k, v in res.timings.items()},
            "step_ms": _common.step_ms(stamps) if len(stamps) > 1 else None,
            "signal_share": float(np.isin(res.selected, payload["signal"]).mean()),
            "objective": float(res.objective), "selected": [int(v) for v in res.selected]}


def child(payload: dict) -> dict:
    if payload.get("phase") == "select":
        return store_child(payload)

    import coreselect.core.sparse_relevance as sparse_relevance
    from coreselect import select
    from coreselect.core.entropy import warm_up
    from coreselect.datasets.synthetic import make_extreme_multilabel

    warm_up()
    start = time.perf_counter()
    extra = QUICK if payload["quick"] else {
        key: payload[key] for key in ("n_samples", "n_features") if payload.get(key)}
    ds = make_extreme_multilabel(shape=payload["shape"], random_state=0, **extra)
    gen = time.perf_counter() - start
    data_mib = _common.peak_rss_mib()
    x_nnz = int(ds.X.nnz)
    backend = payload["backend"]
    if backend == "sparse":
        sparse_relevance.DENSE_RELEVANCE_MAX_BYTES = 0
    elif backend == "dense":
        sparse_relevance.DENSE_RELEVANCE_MAX_BYTES = float("inf")
    stamps, callback = _common.steps_timer()
    mode = payload.get("mode", "centralized")
    data, kw, build_s = ds.X, {}, None
    if mode == "rows":
        kw = {"mode": "rows", "row_shards": payload.get("row_shards", 4)}
    elif mode == "cli":
        from coreselect.io.xmc import write_xmc

        t0 = time.perf_counter()
        write_xmc(ds, payload["store"])
        return {"build_s": time.perf_counter() - t0, "x_nnz": x_nnz, "y_nnz": int(ds.Y.nnz),
                "shape": list(ds.X.shape) + [ds.Y.shape[1]], "generate_s": gen,
                "signal": [int(v) for v in ds.meta["signal"]],
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    elif mode == "store-rows":
        from coreselect.store import build_store

        t0 = time.perf_counter()
        build_store(ds.X, ds.Y, payload["store"], row_block_size=payload.get("row_block_size"))
        return {"build_s": time.perf_counter() - t0, "x_nnz": x_nnz, "y_nnz": int(ds.Y.nnz),
                "shape": list(ds.X.shape) + [ds.Y.shape[1]], "generate_s": gen,
                "signal": [int(v) for v in ds.meta["signal"]],
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    res = select(data, ds.Y, k=payload["k"], progress=lambda stage, i, n: callback(i, n), **kw)
    seconds = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    signal = np.asarray(ds.meta["signal"])
    return {"seconds": seconds, "cpu_s": cpu, "generate_s": gen,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "data_mib": data_mib, "shape": list(ds.X.shape) + [ds.Y.shape[1]],
            "x_nnz": x_nnz, "y_nnz": int(ds.Y.nnz),
            "used": res.data.get("relevance_backend") or res.engine_info.get("relevance_backend"),
            "stages": {k: float(v) for k, v in res.timings.items()}, "build_s": build_s,
            "step_ms": _common.step_ms(stamps) if len(stamps) > 1 else None,
            "signal_share": float(np.isin(res.selected, signal).mean()),
            "objective": float(res.objective), "selected": [int(v) for v in res.selected]}


def cli_case(payload: dict, backend: str, k: int, signal: list) -> dict:
    """``coreselect select FILE.xmc -k K --json`` as a command: wall time and peak RSS."""
    if backend != "auto":
        return {"error": "the cli mode runs the library's own choice (--backends auto)"}
    cmd = [sys.executable, "-m", "coreselect", "select", payload["store"], "-k", str(k),
           "--json", "--quiet"]
    try:
        seconds, peak, out, cpu = _common.run_command(cmd)
    except RuntimeError as exc:
        return {"error": str(exc).splitlines()[-1]}
    report = json.loads(out)
    return {"seconds": seconds, "cpu_s": cpu, "peak_mib": peak,
            "used": report.get("relevance_backend"),
            "stages": {key: float(v) for key, v in report.get("timings", {}).items()},
            "step_ms": None, "signal_share": float(np.isin(report["selected"], signal).mean()),
            "objective": float(report["objective"]), "selected": report["selected"]}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=["eurlex-4k", "wiki10-31k"],
                   help="shapes of coreselect.datasets.synthetic.EXTREME_SHAPES to run, each in its own process")
    p.add_argument("--backends", nargs="+", default=["auto", "sparse", "dense"],
                   help="relevance forms to run: auto (the library's choice), sparse, dense")
    p.add_argument("--k", type=int, default=200, help="features to select")
    p.add_argument("--dense-max-gib", type=float, default=2.0,
                   help="skip the dense form when its features x labels table exceeds this many GiB")
    p.add_argument("--n-samples", type=int, default=None, help="override the shapes' samples")
    p.add_argument("--n-features", type=int, default=None, help="override the shapes' features")
    p.add_argument("--modes", nargs="+", default=["centralized"],
                   choices=["centralized", "rows", "store-rows", "cli"],
                   help="centralized, rows (in-memory row shards) or store-rows (a store's row blocks)")
    p.add_argument("--row-shards", type=int, default=4, help="row shards of --modes rows")
    p.add_argument("--row-block-size", type=int, default=None,
                   help="rows per block of the store of --modes store-rows (default: the store's)")
    args = p.parse_args()
    from coreselect.datasets.synthetic import EXTREME_SHAPES

    k = 10 if args.quick else args.k
    rows, results = [], {}
    for shape in args.shapes:
        n, d, L = EXTREME_SHAPES[shape][:3]
        if args.quick:
            n, d, L = QUICK["n_samples"], QUICK["n_features"], QUICK["n_labels"]
        n, d = args.n_samples or n, args.n_features or d
        for mode, backend in [(m, b) for m in args.modes for b in args.backends]:
            name = f"{shape}/{backend}" + ("" if mode == "centralized" else f"/{mode}")
            if backend == "dense" and 8 * d * L > args.dense_max_gib * 2**30:
                rows.append([name, f"skipped: dense matrix {8 * d * L / 2**30:.1f} GiB",
                             "", "", "", "", "", "", "", "", ""])
                continue
            load = os.getloadavg()[0]
            payload = {"shape": shape, "backend": backend, "k": k, "quick": args.quick,
                       "n_samples": args.n_samples, "n_features": args.n_features,
                       "mode": mode, "row_shards": args.row_shards,
                       "row_block_size": args.row_block_size}
            if mode in ("store-rows", "cli"):  # built in one process, selected in another
                import shutil
                import tempfile

                folder = tempfile.mkdtemp(prefix="extreme-store-")
                payload["store"] = str(Path(folder) / ("s" if mode == "store-rows" else "d.xmc"))
                try:
                    built = _common.run_case(__file__, payload)
                    if "error" in built:
                        res = built
                    elif mode == "cli":
                        res = {**built, **cli_case(payload, backend, k, built["signal"]),
                               "build_peak_mib": built["peak_mib"]}
                    else:
                        res = {**built, **_common.run_case(__file__, {
                            **payload, "phase": "select", "signal": built["signal"]}),
                            "build_peak_mib": built["peak_mib"]}
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                res.pop("signal", None)  # the planted ids: for signal_share, not the table
            else:
                res = _common.run_case(__file__, payload)
            results[name] = res
            if "error" in res:
                rows.append([name, "error: " + res["error"][:70], "", "", "", "", "", "", "",
                             "", ""])
                continue
            st = res["stages"]
            others = [v for key, v in results.items()
                      if key.startswith(shape + "/") and v is not res and "selected" in v]
            same = ("yes" if all(o["selected"] == res["selected"] for o in others) else "NO") \
                if others else ""
            rows.append([name, res["used"], _common.fmt(res["seconds"]), _common.fmt(res["cpu_s"]),
                         _common.fmt(st.get("relevance", st.get("counts"))),
                         _common.fmt(st.get("select", st.get("greedy"))),
                         _common.fmt(res["step_ms"]), f"{res['peak_mib']:.0f}",
                         f"{res['x_nnz']:,} / {res['y_nnz']:,}", same, f"{load:.1f}"])
    title = (f"extreme multi-label: make_extreme_multilabel shapes, k={k}, AltGreedy "
             f"({', '.join(args.modes)})")
    table = _common.md_table(["case", "used", "select s", "CPU s", "relevance (rows: counts) s",
                              "greedy s",
                              "ms/step", "peak RSS MiB", "nnz X / Y", "same selection",
                              "load avg"], rows)
    _common.emit(title, table + "\n\n```json\n" + json.dumps(
        {k: {kk: vv for kk, vv in v.items() if kk != "selected"} for k, v in results.items()},
        indent=1) + "\n```", args.out)


if __name__ == "__main__":
    main()
