"""Resumable runs: an uninterrupted run against the same run killed (SIGKILL) right after a
random record of its checkpoint and started again, on a synthetic sparse column store.

    python benchmarks/resume.py [--n 2000000] [--d 100000] [--density 0.0005] [--k 20]
        [--modes streaming rows centralized] [--store PATH] [--seed 0] [--rounds 1]

Every run is ``coreselect select STORE -k K --mode MODE --json`` in its own process. Per mode
and round: ``plain`` (no checkpoint), ``recorded`` (``--checkpoint``, uninterrupted: the cost
of the records), then a run killed with SIGKILL right after its N-th record (N drawn with
``--seed`` among the run's records: one per part of Algorithm 3, one after the centralized
relevances or the counts pass of ``--mode rows``, one per greedy step; the
``CORESELECT_TEST_HOLD`` hook stops the run there, so the kill lands exactly after that
record) and the same command again, which resumes. *killed + resumed* is the time of both
together, the work a user pays for; the ratio compares it with the plain run, in wall time
and in CPU time (the processes' user + system seconds, what counts on a shared machine).
Every run's scratch goes to one temporary folder (``TMPDIR``), where the resumed rows run
finds the copies its killed run left. The resumed run's selection and objective are
compared with the plain run's (bit for bit). The store follows ``tall_store.py``'s recipe
(50 labels, planted relevant columns and noisy copies, sparse background). No timing is
asserted anywhere.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402


def build(args, store: str) -> dict:
    """The store (reused when it is there): its size and build time."""
    from coreselect.store import open_store
    from coreselect.store.build import build_store_from_chunks
    from tall_store import CountedChunks

    if (Path(store) / "store.json").is_file():
        s = open_store(store)
        return {"seconds": None, "nnz": None, "row_blocks": s.n_row_blocks,
                "n": s.n_samples, "d": s.n_features}
    counted = CountedChunks(args.n, args.d, args.density, args.chunk)
    start = time.perf_counter()
    s = build_store_from_chunks(iter(counted), store, block_size=args.block_size,
                                row_block_size=args.row_block_size)
    return {"seconds": time.perf_counter() - start, "nnz": counted.nnz, "row_blocks": s.n_row_blocks,
            "n": s.n_samples, "d": s.n_features}


def _command(store: str, k: int, mode: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "coreselect", "select", store, "-k", str(k), "--mode", mode,
            "--json", "--quiet", *extra]


def _env(scratch: str, **extra: str) -> dict:
    # TMPDIR: every run's scratch (the row copies of --mode rows) in one folder, removed at
    # the end; the killed run's copies are there for the run that resumes it
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORESELECT_TEST_HOLD")}
    return {**env, "TMPDIR": scratch, **extra}


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def run_whole(cmd: list[str], scratch: str) -> tuple[float, float, dict]:
    """Wall and CPU seconds (the process and its threads) of one run, and its JSON."""
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(scratch))
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
    return seconds, cpu, json.loads(proc.stdout)


def run_killed(cmd: list[str], after: int, folder: str, scratch: str) -> tuple[float, float]:
    """Wall and CPU seconds from start until the run is killed, right after its
    ``after``-th record."""
    marker = os.path.join(folder, f"held-{after}")
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=_env(scratch, CORESELECT_TEST_HOLD=f"checkpointed-{after}",
                                     CORESELECT_TEST_HOLD_FILE=marker),
                            start_new_session=True)
    try:
        while not os.path.exists(marker):
            if proc.poll() is not None:
                raise RuntimeError(f"the run ended before record {after}: "
                                   f"{proc.stderr.read().decode()[-500:]}")
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return time.perf_counter() - start, _children_cpu() - cpu
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stderr.close()
        if os.path.exists(marker):
            os.unlink(marker)


def n_records(mode: str, k: int, plain: dict) -> int:
    """Records of a checkpointed run on a store: one per part of Algorithm 3, one for the
    centralized relevances and one for mode rows' counts pass, one per greedy step."""
    return k + (plain.get("partitions") or 0 if mode in ("distributed", "streaming") else 1)


def _remove(ckpt: str) -> None:
    os.unlink(ckpt)
    shutil.rmtree(ckpt + ".parts", ignore_errors=True)


def case(store: str, k: int, mode: str, rng: random.Random, folder: str, rounds: int) -> list:
    """``rounds`` rounds of: plain, recorded, killed after a record drawn at random and
    resumed; medians over the rounds (each ratio taken within its round)."""
    scratch = os.path.join(folder, "scratch")
    os.makedirs(scratch, exist_ok=True)
    ckpt = os.path.join(folder, f"{mode}.ckpt")
    got: dict[str, list] = {key: [] for key in ("plain", "plain_cpu", "recorded", "cost",
                                                "total", "total_cpu", "ratio", "ratio_cpu")}
    where, same = [], True
    for _ in range(rounds):
        plain_s, plain_cpu, plain = run_whole(_command(store, k, mode), scratch)
        recorded_s, _, recorded = run_whole(_command(store, k, mode, "--checkpoint", ckpt),
                                            scratch)
        _remove(ckpt)
        records = n_records(mode, k, plain)
        after = rng.randint(1, records)
        killed_s, killed_cpu = run_killed(_command(store, k, mode, "--checkpoint", ckpt),
                                          after, folder, scratch)
        resumed_s, resumed_cpu, resumed = run_whole(
            _command(store, k, mode, "--checkpoint", ckpt), scratch)
        _remove(ckpt)
        same &= all(resumed[key] == plain[key] and recorded[key] == plain[key]
                    for key in ("selected", "objective", "relevance", "diversity"))
        info = resumed["engine_info"]
        done = (f"{info.get('resumed_parts', 0)} parts, " if "resumed_parts" in info else "")
        where.append(f"{after} of {records} ({done}{info['resumed_from_step']} steps)")
        for key, value in (("plain", plain_s), ("plain_cpu", plain_cpu),
                           ("recorded", recorded_s), ("cost", recorded_s / plain_s - 1),
                           ("total", killed_s + resumed_s),
                           ("total_cpu", killed_cpu + resumed_cpu),
                           ("ratio", (killed_s + resumed_s) / plain_s),
                           ("ratio_cpu", (killed_cpu + resumed_cpu) / plain_cpu)):
            got[key].append(value)
    m = {key: statistics.median(values) for key, values in got.items()}
    return [mode, m["plain"], m["plain_cpu"], m["recorded"], f"{100 * m['cost']:+.1f} %",
            "; ".join(where), m["total"], m["total_cpu"], f"{m['ratio']:.2f}",
            f"{m['ratio_cpu']:.2f}", "yes" if same else "NO"]


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--n", type=int, default=2_000_000, help="samples (rows) of the store")
    p.add_argument("--d", type=int, default=100_000, help="features (columns)")
    p.add_argument("--density", type=float, default=0.0005,
                   help="share of non-zero background cells (0.0005 at the default sizes: "
                        "about 10^8 non-zeros)")
    p.add_argument("--k", type=int, default=20, help="features to select")
    p.add_argument("--modes", nargs="+", default=["streaming", "rows", "centralized"],
                   choices=["centralized", "distributed", "streaming", "rows"],
                   help="modes to run (each: plain, recorded, killed and resumed)")
    p.add_argument("--chunk", type=int, default=250_000,
                   help="rows drawn and written per chunk while building (bounds its memory)")
    p.add_argument("--block-size", type=int, default=16384,
                   help="columns per column block of the store")
    p.add_argument("--row-block-size", type=int, default=262144,
                   help="rows per row block (tile) of the store")
    p.add_argument("--store", default=None,
                   help="store folder to build or reuse (default: a temporary folder, removed)")
    p.add_argument("--seed", type=int, default=0, help="seed of the records the runs are "
                   "killed after")
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds per mode (medians; on a busy machine, 3 or more)")
    args = p.parse_args()
    if args.quick:
        args.n, args.d, args.density, args.k = 6000, 600, 0.01, 5
        args.chunk, args.block_size, args.row_block_size = 3000, 128, 2000
        args.modes = ["streaming", "rows"]
    with tempfile.TemporaryDirectory(prefix="resume-") as folder:
        store = args.store or os.path.join(folder, "store")
        built = build(args, store)
        rng = random.Random(args.seed)
        rows = [case(store, args.k, mode, rng, folder, args.rounds) for mode in args.modes]
    size = (f"{built['nnz']:,} non-zeros" if built["nnz"] is not None else "reused store")
    title = (f"resume after SIGKILL: n={built['n']:,}, d={built['d']:,}, {size}, "
             f"{built['row_blocks']} row blocks, k={args.k}")
    body = _common.md_table(
        ["mode", "plain s", "plain CPU s", "recorded s", "record cost", "killed after record",
         "killed + resumed s", "killed + resumed CPU s", "ratio to plain", "CPU ratio",
         "identical"], rows)
    body = (f"{title[len('resume after SIGKILL: '):]}; "
            f"{args.rounds} round(s), medians.\n\n{body}")
    if built["seconds"] is not None:
        body += f"\n\nStore built in {_common.seconds_str(built['seconds'])}."
    _common.emit(title, body, args.out)


if __name__ == "__main__":
    main()
