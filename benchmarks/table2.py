"""The paper's Table 2 (Ghadiri & Schmidt 2019, Section 5) rerun on one machine.

For k = 10, 50, 100, 200 and m = ceil(sqrt(d / k)) parts: the objective of the distributed
(Algorithm 3, DGDS) and centralized (AltGreedy, CGDS) selections and their wall times, next
to the paper's numbers, with the speed-up over the paper's runtimes.

* "selection" is ``GDSSelector.fit`` in a warm process (discretization + relevance + greedy,
  the data already loaded; best of ``--repeat``);
* "CLI" is the whole ``coreselect select FILE -k K --json`` process (interpreter start,
  imports, loading the file, selection, output), timed from outside; "CLI sel." is the
  selection time that process reports (a cold first call, compiled kernels loaded from cache).

Both relevances run: ``mi`` (raw mutual information; reproduces the paper's objective values)
and ``nmi`` (the normalized form in the paper's text), each with ``keep_constant=True`` (the
paper's runs let constant columns be selected). The distributed runs use the local engine in
one process (``random_state=0``): the parts run one after another on one core, so "dist."
times are the single-core cost of the whole distributed computation, not a cluster's wall time.

TMC2007: the paper used the full tmc2007 (49,060 features); only tmc2007-500 (the 500-feature
version distributed by Mulan) is available here, so its rows are not comparable one to one.

    python benchmarks/table2.py [--quick] [--datasets rcv1subset1,tmc2007-500] [--no-cli]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

KS = (10, 50, 100, 200)

# The paper's Table 2: k -> (machines, dist. objective, cent. objective, dist. s, cent. s)
PAPER = {
    "rcv1subset1": {
        10: (69, 22.7, 22.6, 2.8 * 60, 93 * 60),
        50: (31, 618.7, 616.4, 10.8 * 60, 150.0 * 60),
        100: (22, 2468.2, 2490.7, 20.3 * 60, 219 * 60),
        200: (16, 9338.7, 10016.0, 47.0 * 60, 376.8 * 60),
    },
    # full tmc2007 (49,060 features) in the paper; tmc2007-500 here
    "tmc2007-500": {
        10: (71, 22.8, 22.6, 4.6 * 60, 152.5 * 60),
        50: (32, 620.0, 615.6, 24.2 * 60, 384.7 * 60),
        100: (23, 2510.0, 2487.7, 59.5 * 60, 666.2 * 60),
        200: (16, 10104.3, 10001.4, 161.3 * 60, 1249.8 * 60),
    },
}


def fit(X, Y, k, relevance, mode):
    from coreselect import GDSSelector

    # Table 2 is the paper's objective: eq. (2) (calibration "paper"), constants selectable.
    sel = GDSSelector(k, relevance=relevance, keep_constant=True, mode=mode,
                      partitions="auto", random_state=0, calibration="paper")
    sel.fit(X, Y)
    return sel


def cli_run(path: Path, k: int, relevance: str, mode: str) -> dict:
    exe = Path(sys.executable).with_name("coreselect")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "coreselect"]
    cmd += ["select", str(path), "-k", str(k), "--relevance", relevance, "--keep-constant",
            "--calibration", "paper", "--mode", mode, "--json", "--quiet"]
    if mode in ("distributed", "streaming"):  # --seed is refused where there is no partition
        cmd += ["--seed", "0"]
    wall, peak, out, cpu = C.run_command(cmd)
    report = json.loads(out)
    return {"wall": wall, "cpu": cpu, "peak": peak, "sel": report["seconds"],
            "total": report.get("total_seconds"), "objective": report["objective"]}


def main(argv=None) -> str:
    ap = C.parser(__doc__)
    ap.add_argument("--datasets", default=None, help="comma-separated (default rcv1subset1,tmc2007-500)")
    ap.add_argument("--ks", default=None, help="comma-separated k values (default 10,50,100,200)")
    ap.add_argument("--relevances", default="mi,nmi",
                    help="comma-separated relevances to run (mi: the paper's numbers; nmi)")
    ap.add_argument("--repeat", type=int, default=2, help="in-process timings: best of this many")
    ap.add_argument("--no-cli", action="store_true", help="skip the whole-process CLI runs")
    args = ap.parse_args(argv)

    if args.quick:
        datasets = (args.datasets or "scene").split(",")
        ks = [int(k) for k in (args.ks or "5").split(",")]
        repeat = 1
    else:
        datasets = (args.datasets or "rcv1subset1,tmc2007-500").split(",")
        ks = [int(k) for k in (args.ks or ",".join(map(str, KS))).split(",")]
        repeat = args.repeat
    relevances = args.relevances.split(",")
    if args.quick and args.relevances == "mi,nmi":
        relevances = ["mi"]

    import numpy as np
    from coreselect import GDSSelector

    # load the compiled kernels (numba cache) once, so in-process times are warm
    rng = np.random.default_rng(0)
    GDSSelector(3).fit(rng.integers(0, 2, (50, 20)), rng.integers(0, 2, (50, 2)))

    from coreselect.progress import Reporter

    # Progress on stderr (`coreselect bench -q` hides it): a bar on a terminal, a line every
    # $CORESELECT_PROGRESS_INTERVAL seconds in a log.
    shown = Reporter(labels={"rows": "table2 rows"})
    n_rows, done = len(datasets) * len(relevances) * len(ks), 0
    obj_rows, time_rows, notes = [], [], []
    for name in datasets:
        if not C.have_data(name):
            notes.append(f"{name}: not found at {C.data_path(name)}, skipped")
            n_rows -= len(relevances) * len(ks)
            continue
        shown("rows", done, n_rows)
        with shown.stage(f"loading {name}"):
            load_s, ds = C.timed(lambda: C.load(name))
        X, Y = ds.X, ds.Y
        d = X.shape[1]
        paper = PAPER.get(name, {})
        notes.append(f"{name}: {X.shape[0]} x {d}, {ds.n_labels} labels; loading took "
                     f"{load_s:.2f} s in-process")
        for rel in relevances:
            for k in ks:
                m = math.ceil(math.sqrt(d / k))
                c_s, c_cpu, c_sel = C.best_of_cpu(lambda: fit(X, Y, k, rel, "centralized"), repeat)
                try:
                    d_s, _, d_sel = C.best_of_cpu(lambda: fit(X, Y, k, rel, "distributed"), repeat)
                    d_obj = d_sel.objective_
                except Exception as exc:  # distributed mode still being written
                    d_s, d_obj = None, None
                    notes.append(f"distributed {name} k={k}: {type(exc).__name__}: {exc}")
                cli_c = cli_d = None
                if not args.no_cli and (not args.quick or (k == ks[0] and rel == relevances[0])):
                    cli_c = cli_run(C.data_path(name), k, rel, "centralized")
                    if d_obj is not None and not args.quick:
                        cli_d = cli_run(C.data_path(name), k, rel, "distributed")
                pm, pd_obj, pc_obj, pd_s, pc_s = paper.get(k, (None,) * 5)
                obj_rows.append([
                    name, rel, k, m if pm is None else f"{m} ({pm})",
                    d_obj, pd_obj, _ratio(d_obj, pd_obj),
                    c_sel.objective_, pc_obj, _ratio(c_sel.objective_, pc_obj),
                ])
                time_rows.append([
                    name, rel, k,
                    C.seconds_str(d_s), C.seconds_str(cli_d["sel"]) if cli_d else "–",
                    C.seconds_str(cli_d["wall"]) if cli_d else "–", C.seconds_str(pd_s),
                    _speedup(pd_s, d_s),
                    C.seconds_str(c_s), C.seconds_str(c_cpu),
                    C.seconds_str(cli_c["sel"]) if cli_c else "–",
                    C.seconds_str(cli_c["wall"]) if cli_c else "–",
                    C.seconds_str(cli_c["cpu"]) if cli_c else "–", C.seconds_str(pc_s),
                    _speedup(pc_s, c_s), _speedup(pc_s, cli_c["wall"]) if cli_c else "–",
                    f"{cli_c['peak']:.0f}" if cli_c else "–",
                ])
                done += 1
                shown("rows", done, n_rows)
    shown.close()
    body = [
        "### Objective h(S) (ours vs the paper; λ = 0.5, p = 10, keep_constant=True)",
        "",
        C.md_table(["dataset", "relevance", "k", "m (paper)", "dist. h", "paper dist.",
                    "ours/paper", "cent. h", "paper cent.", "ours/paper"], obj_rows),
        "",
        "### Wall time (ours vs the paper's 16–71 machines / one machine)",
        "",
        C.md_table(["dataset", "relevance", "k", "dist. sel.", "dist. CLI sel.", "dist. CLI",
                    "paper dist.", "speed-up", "cent. sel.", "cent. sel. CPU", "cent. CLI sel.",
                    "cent. CLI", "cent. CLI CPU", "paper cent.", "speed-up", "speed-up (CLI)", "cent. CLI peak MiB"],
                   time_rows),
        "",
        "*sel.*: `GDSSelector.fit` in a warm process (discretize + relevance + greedy, after "
        "loading), best of %d. *CLI sel.*: the selection time the `coreselect select` process "
        "reports (cold: first call in a fresh process). *CLI*: the whole process from outside "
        "(start-up, imports, loading, selection, JSON). *CPU*: CPU seconds of that run (user + "
        "system, all threads), the fairer number when the machine is busy. Speed-up: the paper's runtime / ours "
        "(sel.), and / our whole CLI process. Distributed runs: local engine, parts one after "
        "another in one process (seed 0). tmc2007-500 has 500 features, the paper's tmc2007 "
        "49,060: its paper columns are for a 98x larger problem." % repeat,
    ]
    if notes:
        body += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return C.emit("Table 2: distributed vs centralized (paper vs coreselect)", "\n".join(body), args.out)


def _ratio(ours, paper):
    if ours is None or paper is None:
        return "–"
    return f"{100 * ours / paper:.1f}%"


def _speedup(paper_s, ours_s):
    if ours_s is None or paper_s is None or ours_s <= 0:
        return "–"
    return f"{paper_s / ours_s:,.0f}x"


if __name__ == "__main__":
    main()
