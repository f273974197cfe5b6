"""Load time of coreselect's ARFF reader vs liac-arff; prints a Markdown table.

Usage: python benchmarks/load_speed.py [--repeat N]

Datasets come from $COREDATA (default ../shared/data relative to the repository root).
Both readers get the same decompressed-on-the-fly file; liac-arff is given the sparse
(COO) return type for sparse files, its fastest mode. coreselect's time includes
building X (CSR for sparse files) and the label matrix from the Mulan XML.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = [
    "rcv1v2/rcv1subset1.arff.gz",
    "mulan/medical/medical.arff",
    "mulan/scene/scene-train.arff",
    "mulan/genbase/genbase.arff",
    "mulan/tmc2007-500/tmc2007-500.arff",
]


def _open(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    if path.name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _is_sparse(path: Path) -> bool:
    with _open(path) as fh:
        for line in fh:
            if line.strip().lower() == "@data":
                for row in fh:
                    if row.strip() and not row.startswith("%"):
                        return row.lstrip().startswith("{")
    return False


def _best(fn, repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU (process) time over ``repeat`` runs.

    CPU time is reported too because wall time is unreliable on a shared, loaded machine.
    """
    wall = cpu = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (liac-arff: best of max(1, N-1))")
    args = ap.parse_args()
    root = Path(os.environ.get("COREDATA", REPO.parent / "shared" / "data"))
    try:
        import arff as liac  # liac-arff
    except ImportError:
        print("liac-arff is not installed (pip install liac-arff)", file=sys.stderr)
        return 1
    from coreselect.io.arff import read_arff

    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"best of {args.repeat} (coreselect) / {max(1, args.repeat - 1)} (liac-arff)\n")
    print("| file | coreselect wall (s) | liac-arff wall (s) | speed-up wall | coreselect CPU (s) "
          "| liac-arff CPU (s) | speed-up CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for rel in FILES:
        path = root / rel
        if not path.is_file():
            print(f"| {rel} | missing | | | | | |")
            continue
        read_arff(path)  # warm-up: imports (pyarrow) and file cache
        ours = _best(lambda: read_arff(path), args.repeat)
        rtype = liac.COO if _is_sparse(path) else liac.DENSE

        def theirs():
            with _open(path) as fh:
                liac.load(fh, return_type=rtype)

        ref = _best(theirs, max(1, args.repeat - 1))
        print(
            f"| {rel} | {ours[0]:.2f} | {ref[0]:.2f} | {ref[0] / ours[0]:.1f}x "
            f"| {ours[1]:.2f} | {ref[1]:.2f} | {ref[1] / ours[1]:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
