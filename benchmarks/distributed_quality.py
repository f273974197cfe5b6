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

import argparse
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(FILES))
    ap.add_argument("--ks", type=int, nargs="+", default=[10, 50, 100, 200])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--factors", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--relevance", default="nmi", choices=["nmi", "mi"])
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING)

    from coreselect.sources import InMemorySource
    from coreselect.spec import Objective
    from coreselect.strategies import AltGreedy, DistributedGreedy

    root = Path(os.environ.get("COREDATA", REPO.parent / "shared" / "data")).resolve()
    print(f"coreset size c*k, m = ceil(sqrt(d/k)), {a.seeds} seeds (0..{a.seeds - 1}), "
          f"relevance {a.relevance}, lambda 0.5, p 10; ratio = h(distributed)/h(centralized) "
          "mean (min); overlap = |S_dist & S_cent| / k, mean\n")
    for name in a.datasets:
        t0 = time.perf_counter()
        ds = load_dataset(name, root)
        # One source: its relevances are computed once and reused for every k and seed.
        source = InMemorySource(ds.X, ds.Y)
        n_selectable = source.n_selectable()
        print(f"## {name} (n = {ds.n_samples}, d = {ds.n_features}, L = {len(ds.label_names)},"
              f" selectable {n_selectable})\n", flush=True)
        header = "| k | m | h centralized | " + " | ".join(
            f"ratio c={c} | overlap c={c} | s c={c}" for c in a.factors) + " | s centralized |"
        print(header)
        print("|" + "---|" * (3 + 3 * len(a.factors) + 1))
        for k in a.ks:
            if k > n_selectable:
                continue
            objective = Objective(k=k, lam=0.5, p=10, relevance=a.relevance)
            source.problem(objective)  # relevances outside the timings
            t = time.perf_counter()
            cent = AltGreedy().run(objective, source)
            t_cent = time.perf_counter() - t
            cells = []
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
                cells.append(f"{np.mean(ratios):.4f} ({np.min(ratios):.4f}) | "
                             f"{np.mean(overlaps):.2f} | {np.mean(secs):.2f}")
            print(f"| {k} | {m} | {cent.objective:.2f} | " + " | ".join(cells)
                  + f" | {t_cent:.2f} |", flush=True)
        print(f"\n({name}: {time.perf_counter() - t0:.0f} s)\n", flush=True)


if __name__ == "__main__":
    sys.exit(main())
