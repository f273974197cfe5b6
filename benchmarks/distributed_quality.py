"""Quality of Algorithm 3: objective of distributed over centralized, and selection overlap.

    python benchmarks/distributed_quality.py [--datasets rcv1subset1 tmc2007-500 scene]
        [--ks 10 50 100 200] [--seeds 5] [--factors 1 2 4]

For each dataset and k: centralized AltGreedy once (it is deterministic), then Algorithm 3
with m = ceil(sqrt(d / k)) and coreset size k, 2k, 4k for every seed. Reports the mean
(min) ratio h(distributed) / h(centralized) over the seeds and the mean share of the
centralized selection that the distributed one contains. Datasets come from $COREDATA
(default ../shared/data relative to the repository). Prints Markdown tables.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

FILES = {
    "rcv1subset1": (["rcv1v2/rcv1subset1.arff.gz"], "rcv1v2/rcv1subset1.xml"),
    "tmc2007-500": (["mulan/tmc2007-500/tmc2007-500.arff"], "mulan/tmc2007-500/tmc2007-500.xml"),
    "scene": (["mulan/scene/scene-train.arff", "mulan/scene/scene-test.arff"],
              "mulan/scene/scene.xml"),
}


def load_dataset(name: str, root: Path):
    from coreselect.io import read
    from coreselect.datasets.load import stack

    files, xml = FILES[name]
    parts = [read(root / f, labels=str(root / xml)) for f in files]
    return parts[0] if len(parts) == 1 else stack(parts, name)


def main(argv=None) -> str:
    ap = C.parser(__doc__)
    ap.add_argument("--datasets", nargs="+", default=list(FILES), choices=list(FILES),
                    help="datasets of $COREDATA to run (--quick: scene)")
    ap.add_argument("--ks", type=int, nargs="+", default=[10, 50, 100, 200],
                    help="numbers of features to select (--quick: 10)")
    ap.add_argument("--seeds", type=int, default=5,
                    help="random partitions per (k, coreset size): seeds 0 .. N-1 (--quick: 2)")
    ap.add_argument("--factors", type=int, nargs="+", default=[1, 2, 4],
                    help="coreset sizes as multiples c of k (each part keeps c*k features)")
    ap.add_argument("--relevance", default="nmi", choices=["nmi", "mi"],
                    help="relevance of the objective (the paper's text: nmi)")
    ap.add_argument("--verbose", action="store_true", help="log the engine's progress")
    a = ap.parse_args(argv)
    if a.quick:
        a.datasets, a.ks, a.seeds = ["scene"], [10], 2
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING)

    from coreselect.selection.sources import InMemorySource
    from coreselect.selection.spec import Objective
    from coreselect.selection.strategies import AltGreedy, DistributedGreedy

    root = C.data_dir().resolve()
    # the weighing (what the default takes on sparse data, and on any data with a relevance
    # measure given): eq. (2)'s h is the value compared
    default = Objective(k=1, calibration="information")
    body = [f"Coreset size c·k, m = ceil(sqrt(d/k)) parts, {a.seeds} seeds (0..{a.seeds - 1}), "
            f"relevance {a.relevance}, λ 0.5, the calibration {default.calibration} ("
            "p = max(3, ceil(4 k / labels)), its default). ratio = h(distributed) / h(centralized) (h: eq. (2)'s value of the "
            "selection, which a calibrated greedy does not maximize), mean (min) over the "
            "seeds; overlap = |S_dist ∩ S_cent| / k, mean (min); s = seconds of one run "
            "(mean).", ""]
    for name in a.datasets:
        t0 = time.perf_counter()
        ds = load_dataset(name, root)
        # One source: its relevances are computed once and reused for every k and seed.
        source = InMemorySource(ds.X, ds.Y)
        n_selectable = source.n_selectable()
        body += [f"**{name}** (n = {ds.n_samples}, d = {ds.n_features}, "
                 f"L = {len(ds.label_names)}, selectable {n_selectable})", ""]
        headers = ["k", "m", "h centralized"]
        for c in a.factors:
            headers += [f"ratio c={c}", f"overlap c={c}", f"s c={c}"]
        headers.append("s centralized")
        rows = []
        for k in a.ks:
            if k > n_selectable:
                continue
            objective = Objective(k=k, lam=0.5, relevance=a.relevance,
                                  calibration=default.calibration)
            source.problem(objective)  # relevances outside the timings
            t = time.perf_counter()
            cent = AltGreedy().run(objective, source)
            t_cent = time.perf_counter() - t
            cells: list = []
            m = None
            for c in a.factors:
                ratios, overlaps, secs = [], [], []
                for seed in range(a.seeds):
                    t = time.perf_counter()
                    res = DistributedGreedy(coreset_size=c * k, random_state=seed).run(
                        objective, source)
                    secs.append(time.perf_counter() - t)
                    m = res.partitions
                    ratios.append(res.objective / cent.objective)
                    overlaps.append(len(set(res.selected) & set(cent.selected)) / k)
                cells += [f"{np.mean(ratios):.4f} ({np.min(ratios):.4f})",
                          f"{np.mean(overlaps):.2f} ({np.min(overlaps):.2f})",
                          f"{np.mean(secs):.2f}"]
            rows.append([k, m, f"{cent.objective:.2f}", *cells, f"{t_cent:.2f}"])
            print(f"{name} k={k}: " + " | ".join(cells), file=sys.stderr, flush=True)
        body += [C.md_table(headers, rows), "",
                 f"({name}: {time.perf_counter() - t0:.0f} s in all)", ""]
    return C.emit("Quality of the distributed run (Algorithm 3)", "\n".join(body), a.out)


if __name__ == "__main__":
    main()
