"""Extreme multi-label: selection with thousands to a million labels (sparse relevance).

    python benchmarks/extreme.py [--quick] [--shapes eurlex-4k wiki10-31k] [--k 200]
                                 [--backends auto dense sparse] [--out FILE]

Each case (a shape of ``make_extreme_multilabel`` and a relevance backend) runs in its own
subprocess, so its peak RSS (``ru_maxrss`` of that child) is its own. A case generates the
data, then times ``coreselect.select(X, Y, k=k)`` (centralized AltGreedy, MI, the default
calibration) by stage: ``discretize``, ``relevance`` (the dense features x labels matrix, or
the co-occurring pairs of :mod:`coreselect.core.sparse_relevance`), ``select`` (the greedy).
``dense`` is skipped where its matrix alone would exceed ``--dense-max-gib``. The table says
which backend ``auto`` chose, the co-occurring pairs, whether the sparse and dense selections
agree, and the machine's load average (the machine may be shared: compare rows of one run).
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

QUICK = {"n_samples": 600, "n_features": 400, "n_labels": 2000, "n_signal_labels": 20}


def child(payload: dict) -> dict:
    import numpy as np

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
    backend = payload["backend"]
    if backend == "sparse":
        sparse_relevance.DENSE_RELEVANCE_MAX_BYTES = 0
    elif backend == "dense":
        sparse_relevance.DENSE_RELEVANCE_MAX_BYTES = float("inf")
    stamps, callback = _common.steps_timer()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    res = select(ds.X, ds.Y, k=payload["k"], progress=lambda stage, i, n: callback(i, n))
    seconds = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    signal = np.asarray(ds.meta["signal"])
    return {"seconds": seconds, "cpu_s": cpu, "generate_s": gen,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "data_mib": data_mib, "shape": list(ds.X.shape) + [ds.Y.shape[1]],
            "x_nnz": int(ds.X.nnz), "y_nnz": int(ds.Y.nnz),
            "used": res.data.get("relevance_backend"),
            "stages": {k: float(v) for k, v in res.timings.items()},
            "step_ms": _common.step_ms(stamps) if len(stamps) > 1 else None,
            "signal_share": float(np.isin(res.selected, signal).mean()),
            "objective": float(res.objective), "selected": [int(v) for v in res.selected]}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=["eurlex-4k", "wiki10-31k"])
    p.add_argument("--backends", nargs="+", default=["auto", "sparse", "dense"])
    p.add_argument("--k", type=int, default=200)
    p.add_argument("--dense-max-gib", type=float, default=2.0)
    p.add_argument("--n-samples", type=int, default=None, help="override the shapes' samples")
    p.add_argument("--n-features", type=int, default=None, help="override the shapes' features")
    args = p.parse_args()
    from coreselect.datasets.synthetic import EXTREME_SHAPES

    k = 10 if args.quick else args.k
    rows, results = [], {}
    for shape in args.shapes:
        n, d, L = EXTREME_SHAPES[shape][:3]
        if args.quick:
            n, d, L = QUICK["n_samples"], QUICK["n_features"], QUICK["n_labels"]
        n, d = args.n_samples or n, args.n_features or d
        for backend in args.backends:
            name = f"{shape}/{backend}"
            if backend == "dense" and 8 * d * L > args.dense_max_gib * 2**30:
                rows.append([name, f"skipped: dense matrix {8 * d * L / 2**30:.1f} GiB",
                             "", "", "", "", "", "", "", "", ""])
                continue
            load = os.getloadavg()[0]
            res = _common.run_case(__file__, {"shape": shape, "backend": backend, "k": k,
                                              "quick": args.quick, "n_samples": args.n_samples,
                                              "n_features": args.n_features})
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
                         _common.fmt(st.get("relevance")), _common.fmt(st.get("select")),
                         _common.fmt(res["step_ms"]), f"{res['peak_mib']:.0f}",
                         f"{res['x_nnz']:,} / {res['y_nnz']:,}", same, f"{load:.1f}"])
    title = f"extreme multi-label: make_extreme_multilabel shapes, k={k}, centralized AltGreedy"
    table = _common.md_table(["case", "used", "select s", "CPU s", "relevance s", "greedy s",
                              "ms/step", "peak RSS MiB", "nnz X / Y", "same selection",
                              "load avg"], rows)
    _common.emit(title, table + "\n\n```json\n" + json.dumps(
        {k: {kk: vv for kk, vv in v.items() if kk != "selected"} for k, v in results.items()},
        indent=1) + "\n```", args.out)


if __name__ == "__main__":
    main()
