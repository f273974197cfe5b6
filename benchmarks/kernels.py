"""Kernel speed: the feature-by-label MI matrix and one greedy distance step.

Compared, in one process, with

* (a) the slow reference implementation of the test suite (``tests/reference.py``: count
  tables built in pure Python, one pair at a time), timed on a sample of columns and
  extrapolated to all of them (the table says so);
* (b) scikit-learn: ``mutual_info_classif(X, y, discrete_features=True)`` called once per
  label (the obvious way to get an MI matrix today), and, for the distance step, called once
  with the selected feature as the target (``d(u, v) = 1 - I(u, v) / H(u, v)`` with
  ``H(u, v) = H(u) + H(v) - I(u, v)``). sklearn gets the *same discretized codes* (a sparse
  CSC matrix), so only the kernels differ; on big data it runs on a subset of labels (or
  columns) and is extrapolated linearly (the table says so). Its values are checked
  against ours (nats converted to bits).

Datasets: scene, Corel5k, rcv1subset1, and rcv1subset1 binarized (word present/absent: the
"binary data" of the distance-step timing).

A second part measures the kernels against the machine's own limits: on
``make_sparse_multilabel(n_samples=200_000, n_features=20_000, n_labels=50, density=0.005)``
(26.2 M non-zeros; ``--quick``: 20,000 x 2,000 x 10) the whole ``GDSSelector(k=100).fit``
(seconds, CPU seconds, peak memory of a fresh process), the relevance kernel and the 100
distance steps of that fit, each beside a floor measured in the same process on the same
threads: a streaming read of as many cells (int32 + int8, as the kernels read them) and
random ``+= 1`` updates, as many as the kernel's co-occurrences, into a table the size of its
count table (features x codes x labels for relevance, codes x slots for a step). "x floor" is
the kernel's seconds over the floor's: 1 is the physical limit of that model. With
``--against SRC`` every child also runs with ``PYTHONPATH=SRC`` (another checkout's ``src``,
e.g. main's), alternating, so the two are compared under the same load. The CLI (``select --help``, a
tiny select, RCV1 k = 200: whole processes, wall and CPU seconds) and its fixed cost step by
step (interpreter, numpy, numba, numba's first load of a cached kernel, scipy.sparse, the
CLI's imports) close the part.

    python benchmarks/kernels.py [--quick] [--datasets scene,corel5k,rcv1subset1,rcv1-binary]
        [--part all|datasets|limits|cli] [--against ../main/src] [--rounds 2]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

LN2 = math.log(2.0)


def _reference():
    sys.path.insert(0, str(C.REPO_ROOT / "tests"))
    import reference

    return reference


def prepare(name: str, quick: bool):
    import numpy as np
    import scipy.sparse as sp
    from coreselect.core import discretize, discretize_labels

    base = "rcv1subset1" if name == "rcv1-binary" else name
    ds = C.load(base)
    X, Y = ds.X, ds.Y
    if quick:  # tiny: first 300 rows, 60 columns, 4 labels
        X = X[:300, :60]
        Y = (Y.toarray() if sp.issparse(Y) else np.asarray(Y))[:300, :4]
    if name == "rcv1-binary":
        X = sp.csr_matrix(X)
        X = sp.csr_matrix((np.ones_like(X.data), X.indices, X.indptr), shape=X.shape)
    disc_s, F = C.timed(lambda: discretize(X))
    L = discretize_labels(Y)
    return F, L, disc_s


def mi_rows(name, F, L, quick, sk_labels, ref_pairs):
    """Rows of the MI-matrix table."""
    import numpy as np
    import scipy.sparse as sp
    from coreselect.core import relevance_matrix
    from sklearn.feature_selection import mutual_info_classif

    d, n_lab = F.n_columns, L.n_columns
    repeat = 1 if quick else 3
    t_nb, mi = C.best_of(lambda: relevance_matrix(F, L, "mi", backend="numba"), repeat)
    t_np, mi_np = C.best_of(lambda: relevance_matrix(F, L, "mi", backend="numpy"), repeat)
    assert np.allclose(mi, mi_np, atol=1e-9)

    # (b) sklearn, one call per label, on the same codes
    Xc = sp.csc_matrix(F.codes)
    Yd = L.dense_codes()
    labs = list(range(min(n_lab, sk_labels)))
    start = time.perf_counter()
    sk = np.column_stack([
        mutual_info_classif(Xc, Yd[:, j], discrete_features=True) for j in labs
    ]) / LN2
    t_sk_part = time.perf_counter() - start
    t_sk = t_sk_part * n_lab / len(labs)
    sk_err = float(np.abs(sk - mi[:, labs]).max())
    sk_note = "" if len(labs) == n_lab else f" ({len(labs)}/{n_lab} labels, extrapolated)"

    # (a) the reference, on a sample of (feature, label) pairs
    ref = _reference()
    rng = np.random.default_rng(0)
    n_pairs = min(ref_pairs, d * n_lab)
    pick = rng.choice(d * n_lab, size=n_pairs, replace=False)
    fcols, lcols = pick // n_lab, pick % n_lab
    Fd = F.take(np.unique(fcols)).dense_codes()
    col_of = {c: i for i, c in enumerate(np.unique(fcols))}
    start = time.perf_counter()
    ref_vals = [ref.relevance(Fd[:, col_of[f]], Yd[:, l], "mi") for f, l in zip(fcols, lcols)]
    t_ref_part = time.perf_counter() - start
    t_ref = t_ref_part * d * n_lab / n_pairs
    ref_err = float(np.abs(np.array(ref_vals) - mi[fcols, lcols]).max())
    ref_note = "" if n_pairs == d * n_lab else f" ({n_pairs:,} of {d * n_lab:,} pairs, extrapolated)"

    return [
        name, f"{F.n_samples:,} x {d:,} x {n_lab}",
        C.seconds_str(t_nb), C.seconds_str(t_np),
        C.seconds_str(t_sk) + sk_note, f"{t_sk / t_nb:,.0f}x",
        C.seconds_str(t_ref) + ref_note, f"{t_ref / t_nb:,.0f}x",
        f"{max(sk_err, ref_err):.1e}",
    ], t_sk / t_nb


def distance_rows(name, F, quick, sk_cols, ref_cols, n_steps):
    """Rows of the distance-step table: distances from one feature to all d features."""
    import numpy as np
    import scipy.sparse as sp
    from coreselect.core import DistanceOracle
    from sklearn.feature_selection import mutual_info_classif

    d = F.n_columns
    ok = np.flatnonzero(~F.is_constant)
    rng = np.random.default_rng(1)
    us = rng.choice(ok, size=min(n_steps, ok.size), replace=False)
    out = {}
    for backend in ("numba", "numpy"):
        oracle = DistanceOracle(F, backend=backend)
        oracle.distances_from(int(us[0]))  # warm
        steps = []
        for u in us[: (len(us) if backend == "numba" else max(3, len(us) // 10))]:
            t0 = time.perf_counter()
            oracle.distances_from(int(u))
            steps.append(time.perf_counter() - t0)
        out[backend] = (float(np.median(steps)), float(np.percentile(steps, 90)))
    oracle = DistanceOracle(F, backend="numba")
    u = int(us[0])
    ours = oracle.distances_from(u)
    h = oracle.entropies

    # (b) sklearn: one mutual_info_classif call with feature u as the target
    Xc = sp.csc_matrix(F.codes)
    cols = np.arange(min(d, sk_cols))
    yu = F.take([u]).dense_codes()[:, 0]
    t0 = time.perf_counter()
    info = mutual_info_classif(Xc[:, cols], yu, discrete_features=True) / LN2
    joint = h[u] + h[cols] - info
    sk_dist = np.where(joint > 0, 1 - info / np.where(joint > 0, joint, 1), 0)
    t_sk = (time.perf_counter() - t0) * d / cols.size
    sk_err = float(np.abs(np.clip(sk_dist, 0, 1) - ours[cols]).max())
    sk_note = "" if cols.size == d else f" ({cols.size:,}/{d:,} columns, extrapolated)"

    # (a) reference distance, pair by pair
    ref = _reference()
    rcols = rng.choice(d, size=min(d, ref_cols), replace=False)
    Fd = F.take(np.concatenate([[u], rcols])).dense_codes()
    t0 = time.perf_counter()
    rv = [ref.distance(Fd[:, 0], Fd[:, i + 1]) for i in range(rcols.size)]
    t_ref = (time.perf_counter() - t0) * d / rcols.size
    ref_err = float(np.abs(np.array(rv) - ours[rcols]).max())
    ref_note = "" if rcols.size == d else f" ({rcols.size:,}/{d:,} columns, extrapolated)"

    med, p90 = out["numba"]
    return [
        name, f"{d:,}", f"{med * 1e3:.3f} / {p90 * 1e3:.3f}",
        f"{out['numpy'][0] * 1e3:.2f}",
        C.seconds_str(t_sk) + sk_note, f"{t_sk / med:,.0f}x",
        C.seconds_str(t_ref) + ref_note, f"{t_ref / med:,.0f}x",
        f"{max(sk_err, ref_err):.1e}",
    ], med


# -- part 2: the kernels against the machine's limits ----------------------------------------
LIMIT_SIZE = dict(n_samples=200_000, n_features=20_000, n_labels=50, density=0.005)
QUICK_SIZE = dict(n_samples=20_000, n_features=2_000, n_labels=10, density=0.005)


def _floor_kernels():
    """Compiled microbenchmarks (nogil, one call per thread): streaming read, random updates."""
    import numpy as np
    from numba import njit

    @njit(nogil=True)
    def stream(idx, codes, lo, hi):
        s = 0
        for e in range(lo, hi):
            s += idx[e] + codes[e]
        return s

    @njit(nogil=True)
    def scatter(idx, lo, hi, table):
        for e in range(lo, hi):
            table[idx[e]] += 1

    return stream, scatter


def _on_threads(fn, n_items: int, threads: int) -> float:
    """Seconds of ``fn(lo, hi, thread)`` over ``threads`` equal parts run at once."""
    from concurrent.futures import ThreadPoolExecutor

    cuts = [n_items * t // threads for t in range(threads + 1)]
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda t: fn(cuts[t], cuts[t + 1], t), range(threads)))
    return time.perf_counter() - start


def floors(cells: int, updates: int, table_size: int, table_dtype, threads: int,
           repeat: int = 3) -> tuple[float, float]:
    """Best seconds to stream ``cells`` cells and to make ``updates`` random updates into a
    table of ``table_size`` entries (one table per thread), on ``threads`` threads."""
    import numpy as np

    stream, scatter = _floor_kernels()
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 2**31 - 1, size=max(cells, 1), dtype=np.int32)
    codes = np.ones(max(cells, 1), dtype=np.int8)
    stream(idx, codes, 0, 1)
    t_stream = min(_on_threads(lambda lo, hi, t: stream(idx, codes, lo, hi), cells, threads)
                   for _ in range(repeat))
    del idx, codes
    upd = rng.integers(0, max(table_size, 1), size=max(updates, 1), dtype=np.int64)
    tables = [np.zeros(max(table_size, 1), dtype=table_dtype) for _ in range(threads)]
    scatter(upd, 0, 1, tables[0])
    t_update = min(_on_threads(lambda lo, hi, t: scatter(upd, lo, hi, tables[t]), updates,
                               threads) for _ in range(repeat))
    return t_stream, t_update


def limits_child(payload: dict) -> dict:
    """In a fresh process: the whole fit, then its kernels and their floors."""
    import hashlib
    import importlib

    import numpy as np
    from coreselect import GDSSelector
    from coreselect.core import discretize, discretize_labels
    from coreselect.datasets.synthetic import make_sparse_multilabel

    entropy_mod = importlib.import_module("coreselect.core.entropy")
    size = QUICK_SIZE if payload["quick"] else LIMIT_SIZE
    ds = make_sparse_multilabel(**size, random_state=0)
    X, Y = ds.X, ds.Y
    del ds
    rss_data = C.peak_rss_mib()
    t0 = time.perf_counter()
    entropy_mod.warm_up()
    GDSSelector(k=5).fit(X[:500], Y[:500])  # first calls: numba's cache, imports
    cold = time.perf_counter() - t0
    before = C.rss_mib()
    wall, cpu, fit = C.best_of_cpu(lambda: GDSSelector(k=100).fit(X, Y), 1)
    peak = C.peak_rss_mib()  # of the first fit (a repeat's garbage would add to it)
    if payload["repeat"] > 1:
        again, again_cpu, fit = C.best_of_cpu(lambda: GDSSelector(k=100).fit(X, Y),
                                              payload["repeat"] - 1)
        if again < wall:
            wall, cpu = again, again_cpu
    out = {"fit_s": wall, "fit_cpu_s": cpu, "peak_mib": peak, "fit_mib": peak - before,
           "data_mib": rss_data,
           "cold_s": cold, "timings": {k: float(v) for k, v in fit.timings_.items()},
           "objective": float(fit.objective_).hex(),
           "selected": hashlib.md5(np.asarray(fit.selected_, np.int64).tobytes()).hexdigest()[:10]}
    F, L = discretize(X), discretize_labels(Y)
    del X
    threads = _kernel_threads()
    rel_s, rel_cpu, _ = C.best_of_cpu(lambda: entropy_mod.relevance_matrix(F, L, "mi"),
                                      payload["repeat"])
    f_rows = np.bincount(F.codes.indices, minlength=F.n_samples)
    l_rows = np.bincount(L.codes.indices, minlength=L.n_samples)
    rel_cells = int(F.codes.nnz)
    rel_updates = int(np.dot(f_rows.astype(np.int64), l_rows))
    oracle = entropy_mod.DistanceOracle(F)
    us = [int(u) for u in fit.selected_]
    oracle.distances_from(us[0])
    steps_s = min(_timed_steps(oracle, us) for _ in range(payload["repeat"]))
    steps_cpu = time.process_time()
    _timed_steps(oracle, us)
    steps_cpu = time.process_time() - steps_cpu
    indptr = F.codes.indptr
    step_cells = int(sum(f_rows[F.codes.indices[indptr[u]:indptr[u + 1]]].sum() for u in us))
    a_max = int(max(F.n_codes[u] for u in us)) - 1
    s_rel, u_rel = floors(rel_cells, rel_updates, int(F.offsets[-1]) * int(L.offsets[-1]),
                          np.int64, threads)
    s_dist, u_dist = floors(step_cells, step_cells, a_max * int(F.offsets[-1]), np.int32,
                            threads)
    out.update(threads=threads, rel_s=rel_s, rel_cpu_s=rel_cpu, rel_cells=rel_cells,
               rel_updates=rel_updates, steps_s=steps_s, steps_cpu_s=steps_cpu,
               step_cells=step_cells, n_steps=len(us), floor_rel=(s_rel, u_rel),
               floor_dist=(s_dist, u_dist))
    return out


def _timed_steps(oracle, us) -> float:
    start = time.perf_counter()
    for u in us:
        oracle.distances_from(u)
    return time.perf_counter() - start


def _kernel_threads() -> int:
    try:
        from coreselect.core._threads import n_threads  # this branch's kernels
    except ImportError:  # a checkout whose kernels run on one thread
        return 1
    return n_threads()


def _child(payload: dict, src: str | None) -> dict:
    import json
    import os
    import subprocess

    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(payload)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cli(src: str | None, args: list[str], repeat: int) -> tuple[float, float, float]:
    """Best wall seconds, its peak MiB and CPU seconds of ``python -m coreselect ARGS``."""
    return _python(src, ["-m", "coreselect", *args], repeat)


def _python(src: str | None, args: list[str], repeat: int) -> tuple[float, float, float]:
    """Best wall seconds, its peak MiB and CPU seconds of ``python ARGS``."""
    import os

    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    runs = [C.run_command([sys.executable, *args], env=env) for _ in range(repeat)]
    best = min(runs)
    return best[0], best[1], best[3]


#: A script with one cached kernel: numba's fixed cost (import, then the first load of a
#: kernel from its on-disk cache: numba's typing and target registries, LLVM) without ours.
_ONE_KERNEL = """
import numpy as np
from numba import njit

@njit(cache=True, nogil=True)
def total(a):
    s = 0.0
    for x in a:
        s += x
    return s

total(np.ones(3))
"""

#: The CLI's fixed cost, step by step: (what, python arguments; None: the checkout's CLI).
FIXED_COST = [
    ("python -c pass", ["-c", "pass"]),
    ("+ import numpy", ["-c", "import numpy"]),
    ("+ import numba", ["-c", "import numpy, numba"]),
    ("+ one cached numba kernel", None),
    ("+ import scipy.sparse", ["-c", "import numpy, numba, scipy.sparse"]),
    ("import coreselect.cli.select", ["-c", "import coreselect.cli.select"]),
    ("coreselect select --help", ["-m", "coreselect", "select", "--help"]),
]


def fixed_cost_rows(sides, quick: bool, rounds: int) -> list[list[str]]:
    """One row per step of :data:`FIXED_COST`, a column (seconds, CPU seconds) per checkout."""
    import tempfile

    repeat = 1 if quick else 3
    best: dict[tuple[str, str], tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "one_kernel.py"
        script.write_text(_ONE_KERNEL)
        _python(None, [str(script)], 1)  # compile once: the cache is then warm
        for _ in range(max(1, rounds)):
            for what, args in FIXED_COST:
                for name, src in sides:
                    got = _python(src, args or [str(script)], repeat)
                    key = (what, name)
                    best[key] = min(best.get(key, got), got)
    return [[what] + [f"{best[what, name][0]:.2f} ({best[what, name][2]:.2f})"
                      for name, _ in sides] for what, _ in FIXED_COST]


def limits_part(quick: bool, against: str | None, rounds: int) -> list[str]:
    import os

    mine = str(C.REPO_ROOT / "src")
    sides = [("this checkout", mine)] + ([("against", against)] if against else [])
    payload = {"quick": quick, "repeat": 1 if quick else 2}
    results: dict[str, list[dict]] = {name: [] for name, _ in sides}
    loads = [os.getloadavg()[0]]
    for _ in range(max(1, rounds)):  # alternate, so both see the same load
        for name, src in sides:
            results[name].append(_child(payload, src))
            loads.append(os.getloadavg()[0])
    size = QUICK_SIZE if quick else LIMIT_SIZE
    fit_rows, kernel_rows = [], []
    for name, src in sides:
        best = min(results[name], key=lambda r: r["fit_s"])
        label = name if src == mine else f"{name} ({src})"
        t = best["timings"]
        fit_rows.append([label, C.seconds_str(best["fit_s"]), C.seconds_str(best["fit_cpu_s"]),
                         C.seconds_str(t.get("discretize")), C.seconds_str(t.get("relevance")),
                         C.seconds_str(t.get("select")),
                         f"{best['peak_mib']:.0f} (+{best['fit_mib']:.0f})",
                         C.seconds_str(best["cold_s"]), best["objective"], best["selected"]])
        r = min(results[name], key=lambda r: r["rel_s"])
        s = min(results[name], key=lambda r: r["steps_s"])
        for what, sec, cpu, cells, updates, (f_s, f_u) in (
                ("relevance", r["rel_s"], r["rel_cpu_s"], r["rel_cells"], r["rel_updates"],
                 r["floor_rel"]),
                (f"{s['n_steps']} distance steps", s["steps_s"], s["steps_cpu_s"],
                 s["step_cells"], s["step_cells"], s["floor_dist"])):
            kernel_rows.append([
                label, what, r["threads"], C.seconds_str(sec), C.seconds_str(cpu),
                f"{cells / sec / 1e6:,.0f} M/s", f"{cells / f_s / 1e6:,.0f} M/s",
                f"{sec / f_s:.1f}x", f"{updates / sec / 1e6:,.0f} M/s",
                f"{updates / f_u / 1e6:,.0f} M/s", f"{sec / f_u:.2f}x"])
    body = [
        "### Kernels near the memory limit",
        "",
        f"Data: `make_sparse_multilabel({', '.join(f'{k}={v:_}' for k, v in size.items())}, "
        "random_state=0)`; 1-min load average %s during the runs (rounds alternate "
        "between the checkouts)." % " / ".join(f"{x:.1f}" for x in loads),
        "",
        C.md_table(["checkout", "fit s", "fit CPU s", "discretize", "relevance", "select",
                    "peak MiB (+ over the data)", "cold start s", "objective (hex)",
                    "selection md5"], fit_rows),
        "",
        C.md_table(["checkout", "kernel", "threads", "s", "CPU s", "cells/s",
                    "floor: streaming read", "x floor (cells)", "count updates/s",
                    "floor: random updates", "x floor (updates)"], kernel_rows),
        "",
        "Best of the rounds. *x floor*: the kernel's seconds over the floor's for the same "
        "number of cells (streaming read) or count updates (random `+= 1` into a table the "
        "size of the kernel's count table), on the same threads; below 1 means the kernel "
        "does less than the model assumes (bit-set counting, cache-resident tables). "
        "*cold start*: numba's cache load and first calls, before the timed fit. *peak*: "
        "the process's peak resident memory after the first fit (data included; in brackets "
        "what the fit added to the memory resident before it).",
    ]
    return body + [""] + cli_part(sides, quick, rounds)


def cli_part(sides, quick: bool, rounds: int) -> list[str]:
    """Whole CLI processes, the checkouts alternating round by round (the same load on
    each): ``select --help``, a tiny select and RCV1 k = 200, one run of each per round,
    as min / median / max wall seconds over the rounds with the median CPU seconds; then
    the CLI's fixed cost step by step."""
    import os
    import statistics

    mine = str(C.REPO_ROOT / "src")
    data = "rcv1v2/rcv1subset1.arff.gz"
    commands = [("select --help", ["select", "--help"]),
                ("tiny select", ["select", "synthesized", "-k", "16", "-q"])]
    if not quick and C.have_data(data):
        commands.append(("RCV1 k=200", ["select", str(C.data_path(data)), "-k", "200", "-q"]))
    for _, src in sides:  # untimed: each checkout's numba cache is filled before the rounds
        _cli(src, commands[-1][1], 1)
    runs: dict[tuple[str, str], list] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(max(1, rounds)):
        for name, src in sides:
            for what, args in commands:
                runs.setdefault((name, what), []).append(_cli(src, args, 1))
            loads.append(os.getloadavg()[0])
    rows = []
    for name, src in sides:
        label = name if src == mine else f"{name} ({src})"
        for what, _ in commands:
            got = runs[name, what]
            walls = sorted(r[0] for r in got)
            rows.append([label, what, str(len(got)),
                         *(f"{x:.2f} s" for x in (walls[0], statistics.median(walls), walls[-1],
                                                  statistics.median(r[2] for r in got))),
                         f"{max(r[1] for r in got):.0f}"])
    return [
        "CLI, whole processes (`select synthesized -k 16 -q` is the tiny select, RCV1 "
        "`select rcv1v2/rcv1subset1.arff.gz -k 200 -q`): one run of each per round, the "
        "checkouts alternating; 1-min load average %s:" % " / ".join(f"{x:.1f}" for x in loads),
        "",
        C.md_table(["checkout", "command", "runs", "min s", "median s", "max s",
                    "median CPU s", "peak MiB"], rows),
        "",
        "The CLI's fixed cost, step by step (best of 3 per round, wall seconds with CPU seconds "
        "in brackets): the interpreter, numpy, numba, then numba's first load of one kernel "
        "from its on-disk cache (a tiny script of its own: numba's typing and target "
        "registries, LLVM; every run that uses a compiled kernel pays it once), scipy.sparse; "
        "then this package's CLI imports and `select --help`:",
        "",
        C.md_table(["step"] + [name if src == mine else f"{name} ({src})"
                               for name, src in sides], fixed_cost_rows(sides, quick, rounds)),
    ]


def main(argv=None) -> str:
    ap = C.parser(__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("all", "datasets", "limits", "cli"), default="all",
                    help="datasets: the kernels vs sklearn and the reference; limits: the "
                    "26 M-non-zero fit and its kernels beside the machine's floors, then the "
                    "CLI; cli: the CLI alone (whole processes, alternating); all: datasets "
                    "and limits")
    ap.add_argument("--against", default=None,
                    help="another checkout's src folder, measured beside this one")
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of the limits part, alternating between the checkouts")
    ap.add_argument("--datasets", default=None,
                    help="comma-separated datasets of the first part (default: scene with "
                    "--quick, else scene,corel5k,rcv1subset1,rcv1-binary)")
    ap.add_argument("--sklearn-labels", type=int, default=None,
                    help="labels for the sklearn loop (default: as many as keep it to about "
                    "40,000 feature-label pairs, at least 1)")
    args = ap.parse_args(argv)
    if args.child:
        import json

        print(json.dumps(limits_child(json.loads(args.child))))
        return ""
    quick = args.quick
    names = (args.datasets or ("scene" if quick else "scene,corel5k,rcv1subset1,rcv1-binary")).split(",")
    if args.part == "limits":
        names = []

    if args.part == "cli":
        mine = str(C.REPO_ROOT / "src")
        sides = [("this checkout", mine)] + ([("against", args.against)] if args.against else [])
        return C.emit("Kernels: the CLI's whole processes",
                      "\n".join(cli_part(sides, quick, 1 if quick else args.rounds)), args.out)

    # load the compiled kernels once
    import numpy as np
    from coreselect.core import DistanceOracle, discretize, discretize_labels, relevance_matrix

    small = discretize(np.random.default_rng(0).integers(0, 3, (40, 8)))
    relevance_matrix(small, discretize_labels(np.eye(2, dtype=int)[np.arange(40) % 2]), "mi")
    DistanceOracle(small).distances_from(0)

    mi_table, dist_table, notes, disc = [], [], [], []
    for name in names:
        base = "rcv1subset1" if name == "rcv1-binary" else name
        if not C.have_data(base):
            notes.append(f"{name}: data not found at {C.data_path(base)}, skipped")
            continue
        F, L, disc_s = prepare(name, quick)
        disc.append(f"{name}: discretize {C.seconds_str(disc_s)}")
        big = F.n_columns > 2000
        # sklearn makes one mutual_info_score call per (feature, label): cap them at ~40,000
        sk_labels = args.sklearn_labels or max(1, min(L.n_columns, 40_000 // F.n_columns))
        if name != "rcv1-binary":
            row, ratio = mi_rows(name, F, L, quick, sk_labels, ref_pairs=40 if quick else 400)
            mi_table.append(row)
        row, med = distance_rows(name, F, quick, sk_cols=F.n_columns if not big else 5000,
                                 ref_cols=20 if quick else 200, n_steps=10 if quick else 200)
        dist_table.append(row)

    body = [] if not names else [
        "### Feature-by-label MI matrix (bits), all features x all labels",
        "",
        C.md_table(["dataset", "n x d x labels", "coreselect numba", "coreselect numpy",
                    "sklearn loop", "numba speed-up vs sklearn", "reference",
                    "speed-up vs reference", "max abs diff"], mi_table),
        "",
        "### One greedy distance step: d(u, v) from one feature u to all d features",
        "",
        C.md_table(["dataset", "d", "numba ms (median / p90)", "numpy ms (median)",
                    "sklearn (u as target)", "speed-up vs sklearn", "reference",
                    "speed-up vs reference", "max abs diff"], dist_table),
        "",
        "Times are best of 3 (MI) or the median over %s random non-constant features u "
        "(distance). sklearn and the reference run on the same discretized codes; where they "
        "run on part of the work the note says how much, and the time shown is extrapolated "
        "linearly to the whole. *max abs diff*: largest difference between their values and "
        "ours on the part they computed." % ("10" if quick else "200"),
        "",
        "Discretization (not in the times above): " + "; ".join(disc) + ".",
    ]
    if notes:
        body += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    if args.part in ("all", "limits"):
        body += [""] + limits_part(quick, args.against, 1 if quick else args.rounds)

    return C.emit("Kernels: MI matrix and distance step (coreselect vs sklearn vs reference)",
                  "\n".join(body), args.out)


if __name__ == "__main__":
    main()
