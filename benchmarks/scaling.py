"""Cost growth: wall time and peak RSS of centralized, streaming and distributed selection
(in memory, ``GDSSelector``) as d grows (synthetic sparse data) and as k grows (rcv1subset1).

* Growth in d: ``coreselect.datasets.synthetic.make_sparse_multilabel`` with n = 20,000
  samples, 50 labels, density 0.05 %, k = 100, d from 10^4 to 2 x 10^6. Every (d, mode) runs
  in its own process, so its peak RSS (``ru_maxrss``) is its own; it includes the generated
  data (the "data MiB" column is the process RSS right after generating it).
* Growth in k: rcv1subset1, k = 10 ... 400; one process per mode runs the k values in
  increasing order (peak RSS is the process's peak up to that k, loading included).

Modes: ``centralized`` (AltGreedy on all), ``streaming`` (Algorithm 3, parts one after
another in this process), ``distributed`` (Algorithm 3 on the local engine with 2 worker
processes; its peak RSS column is max(parent, largest worker)). Time is ``fit`` only
(discretize + relevance + selection), data already in memory; "fit CPU" is the CPU time of
the fitting process (for ``distributed`` without its pool workers). The growth exponent is the
least-squares slope of log(time) against log(d) (or log(k)).

For the column-store path at 2 x 10^6 to 10^7 features (memory bounded by a block) see
``benchmarks/scale.py``.

    python benchmarks/scaling.py [--quick] [--png scaling.png] [--sizes 10000,100000]
    python benchmarks/scaling.py --plot-from docs/benchmarks.md --png docs/img/scaling.png

``--plot-from FILE`` measures nothing: it redraws the plot from the "Growth in d" and
"Growth in k" tables of a Markdown file this script wrote (or a document quoting them).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

MODES = ("centralized", "streaming", "distributed")
SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000, 2_000_000)
KS = (10, 25, 50, 100, 200, 400)


def _fit(X, Y, k, mode, workers=2):
    from coreselect import GDSSelector

    kw = dict(n_workers=workers) if mode == "distributed" else {}
    sel = GDSSelector(k, mode=mode, random_state=0, **kw)
    t0, c0 = time.perf_counter(), time.process_time()
    sel.fit(X, Y)
    sel.cpu_seconds_ = time.process_time() - c0  # this process only (not pool workers)
    return time.perf_counter() - t0, sel


def _warm():
    import numpy as np
    from coreselect import GDSSelector

    rng = np.random.default_rng(0)
    GDSSelector(3).fit(rng.integers(0, 2, (50, 20)), rng.integers(0, 2, (50, 2)))


def _children_peak() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def child_d(p: dict) -> dict:
    from coreselect.datasets.synthetic import make_sparse_multilabel

    _warm()
    ds = make_sparse_multilabel(n_samples=p["n"], n_features=p["d"], n_labels=p["labels"],
                                density=p["density"], random_state=0)
    data_mib = C.rss_mib()
    seconds, sel = _fit(ds.X, ds.Y, p["k"], p["mode"], p.get("workers", 2))
    return {"seconds": seconds, "cpu": sel.cpu_seconds_, "objective": sel.objective_,
            "peak": C.peak_rss_mib(),
            "workers_peak": _children_peak(), "data": data_mib, "nnz": int(ds.X.nnz)}


def child_k(p: dict) -> dict:
    _warm()
    ds = C.load(p["dataset"])
    rows = []
    for k in p["ks"]:
        seconds, sel = _fit(ds.X, ds.Y, k, p["mode"], p.get("workers", 2))
        rows.append({"k": k, "seconds": seconds, "cpu": sel.cpu_seconds_,
                     "objective": sel.objective_,
                     "peak": C.peak_rss_mib(), "workers_peak": _children_peak()})
    return {"rows": rows}


def main(argv=None) -> str:
    ap = C.parser(__doc__, plots=True)
    ap.add_argument("--sizes", default=None, help="comma-separated d values")
    ap.add_argument("--ks", default=None, help="comma-separated k values")
    ap.add_argument("--n-samples", type=int, default=None,
                    help="samples of the synthetic data (default 20,000; 300 with --quick)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated modes to run")
    ap.add_argument("--skip-d", action="store_true", help="skip the growth-in-d sweep")
    ap.add_argument("--skip-k", action="store_true", help="skip the growth-in-k sweep")
    ap.add_argument("--plot-from", default=None, metavar="FILE",
                    help="measure nothing: plot the tables of this Markdown file to --png")
    args = ap.parse_args(argv)
    if args.plot_from:
        if not args.png:
            ap.error("--plot-from needs --png")
        d_series, k_series, title = series_from_markdown(Path(args.plot_from).read_text())
        if not d_series and not k_series:
            ap.error(f"no 'Growth in d' or 'Growth in k' table in {args.plot_from}")
        plot(d_series, k_series, args.png, title)
        return ""
    if args.child:
        p = json.loads(args.child)
        out = child_d(p) if p["kind"] == "d" else child_k(p)
        print(json.dumps(out))
        return ""

    quick = args.quick
    modes = args.modes.split(",")
    sizes = [int(s) for s in (args.sizes or ("300,600" if quick else ",".join(map(str, SIZES)))).split(",")]
    ks = [int(s) for s in (args.ks or ("5,10" if quick else ",".join(map(str, KS)))).split(",")]
    n = args.n_samples or (300 if quick else 20_000)
    k_d = 10 if quick else 100
    k_dataset = "scene" if quick else "rcv1subset1"
    density = 0.01 if quick else 0.0005
    workers = 1 if quick else 2  # --quick: no process pool start-ups
    script = Path(__file__).resolve()
    # --quick runs everything in this process (no child start-ups): peak RSS is then the
    # process's, not one run's.
    run = (lambda _s, p: child_d(p) if p["kind"] == "d" else child_k(p)) if quick else C.run_child

    d_rows, d_series, notes = [], {}, []
    if not args.skip_d:
        for d in sizes:
            for mode in modes:
                payload = dict(kind="d", d=d, n=n, labels=5 if quick else 50, density=density,
                               k=k_d, mode=mode, workers=workers)
                try:
                    r = run(script, payload)
                except Exception as exc:
                    notes.append(f"d={d:,} {mode}: failed: {str(exc).strip().splitlines()[-1]}")
                    continue
                peak = max(r["peak"], r["workers_peak"]) if mode == "distributed" else r["peak"]
                d_rows.append([f"{d:,}", mode, f"{r['nnz']:,}", C.seconds_str(r["seconds"]),
                               C.seconds_str(r.get("cpu")), f"{r['data']:.0f}", f"{peak:.0f}",
                               r["objective"]])
                d_series.setdefault(mode, []).append((d, r["seconds"], peak))
                print(f"# d={d} {mode}: {r['seconds']:.2f} s, peak {peak:.0f} MiB, data "
                      f"{r['data']:.0f} MiB, nnz {r['nnz']}, objective {r['objective']:.4f}",
                      file=sys.stderr, flush=True)

    k_rows, k_series = [], {}
    if not args.skip_k and C.have_data(k_dataset):
        for mode in (modes[:1] if quick else modes):  # --quick: one mode is enough here
            try:
                r = run(script, dict(kind="k", dataset=k_dataset, ks=ks, mode=mode,
                                     workers=workers))
            except Exception as exc:
                notes.append(f"k sweep {mode}: failed: {str(exc).strip().splitlines()[-1]}")
                continue
            for row in r["rows"]:
                peak = max(row["peak"], row["workers_peak"]) if mode == "distributed" else row["peak"]
                k_rows.append([row["k"], mode, C.seconds_str(row["seconds"]),
                               C.seconds_str(row.get("cpu")), f"{peak:.0f}", row["objective"]])
                k_series.setdefault(mode, []).append((row["k"], row["seconds"], peak))
    elif not args.skip_k:
        notes.append(f"{k_dataset} not found at {C.data_path(k_dataset)}: k sweep skipped")

    def exps(series, lo=None):
        out = []
        for mode, pts in series.items():
            sel = [(x, t) for x, t, _ in pts if lo is None or x >= lo]
            if len(sel) >= 2:
                all_e = C.fit_exponent([x for x, _ in sel], [t for _, t in sel])
                mem_e = C.fit_exponent([x for x, _, _ in pts], [m for _, _, m in pts])
                out.append([mode, f"{all_e:.2f}", f"{mem_e:.2f}"])
        return out

    def vs_centralized(rows, key, obj):
        """Append each row's objective / the centralized objective at the same d (or k)."""
        cent = {r[key]: r[obj] for r in rows if r[1] == "centralized"}
        for r in rows:
            r.append(f"{r[obj] / cent[r[key]]:.6f}" if r[key] in cent else "–")

    vs_centralized(d_rows, 0, 7)
    vs_centralized(k_rows, 0, 5)
    body = []
    if d_rows:
        body += [f"### Growth in d (synthetic sparse, n = {n:,}, k = {k_d}, density {density:.2%})",
                 "", C.md_table(["d", "mode", "non-zeros", "fit time", "fit CPU", "data MiB",
                                 "peak RSS MiB", "objective", "/ centralized"], d_rows), "",
                 "Fitted exponents (slope of log time, log peak RSS against log d; "
                 "time fitted on d >= %s):" % f"{sizes[min(2, len(sizes) - 1)]:,}", "",
                 C.md_table(["mode", "time exponent", "RSS exponent"],
                            exps(d_series, lo=sizes[min(2, len(sizes) - 1)])), ""]
    if k_rows:
        body += [f"### Growth in k ({k_dataset})", "",
                 C.md_table(["k", "mode", "fit time", "fit CPU", "peak RSS MiB", "objective",
                             "/ centralized"], k_rows), "",
                 "Fitted exponents (slope of log time against log k, all k):", "",
                 C.md_table(["mode", "time exponent", "RSS exponent"], exps(k_series)), ""]
    if notes:
        body += ["Notes:", ""] + [f"- {x}" for x in notes]
    if args.png and (d_series or k_series):
        plot(d_series, k_series, args.png, k_dataset)
        body += ["", f"Plot: `{args.png}`"]
    return C.emit("Scaling: time and memory as d and k grow", "\n".join(body), args.out)


def parse_seconds(text: str) -> float:
    """Inverse of ``_common.seconds_str``: '420 ms', '1.7 s', '9.0 m', '1 h 33.0 m'."""
    total, parts = 0.0, text.replace(",", "").split()
    unit = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    for value, name in zip(parts[::2], parts[1::2]):
        total += float(value) * unit[name]
    return total


def series_from_markdown(text: str) -> tuple[dict, dict, str]:
    """``(d_series, k_series, k_dataset)`` from the growth tables of a Markdown text.

    A table whose first column is ``d`` (or ``k``) and which has ``mode``, ``fit time`` and
    ``peak RSS MiB`` columns gives, per mode, the points ``(x, seconds, peak MiB)``.
    """
    d_series: dict = {}
    k_series: dict = {}
    k_dataset = "rcv1subset1"
    header = None
    for line in text.splitlines():
        heading = line.lstrip("#").strip()
        if line.startswith("#") and heading.startswith("Growth in k"):
            k_dataset = heading.partition("(")[2].rstrip(")") or k_dataset
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            header = None
        elif header is None:
            header = cells
        elif not set(cells[0]) <= set(":- "):  # skip the alignment row
            row = dict(zip(header, cells))
            if header[0] not in ("d", "k") or not {"mode", "fit time", "peak RSS MiB"} <= row.keys():
                continue
            series = d_series if header[0] == "d" else k_series
            series.setdefault(row["mode"], []).append(
                (int(row[header[0]].replace(",", "")), parse_seconds(row["fit time"]),
                 float(row["peak RSS MiB"].replace(",", ""))))
    return d_series, k_series, k_dataset


def plot(d_series, k_series, path, k_dataset):
    """Fit time against d, peak memory against d, fit time against k (log-log panels)."""
    plt = C.pyplot()
    panels = []
    if d_series:
        panels += [(d_series, 1, "features d", "fit time, wall (s)", "time as d grows (k = 100)"),
                   (d_series, 2, "features d", "peak RSS (MiB)", "memory as d grows (k = 100)")]
    if k_series:
        panels.append((k_series, 1, "selected features k", "fit time, wall (s)",
                       f"time as k grows ({k_dataset})"))
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    def short(v, _pos=None):  # 300000 -> 300k, 0.5 -> 0.5 (plain numbers, not 3x10^5)
        for size, suffix in ((1e6, "M"), (1e3, "k")):
            if v >= size:
                return f"{v / size:g}{suffix}"
        return f"{v:g}"

    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.0), squeeze=False)
    styles = {"centralized": ("o", "-"), "streaming": ("s", "--"), "distributed": ("^", ":")}
    for ax, (series, col, xlabel, ylabel, title) in zip(axes[0], panels):
        for mode, pts in series.items():
            pts = sorted(pts)
            marker, line = styles.get(mode, ("o", "-"))
            ax.loglog([p[0] for p in pts], [p[col] for p in pts], marker=marker,
                      linestyle=line, label=mode)
        # Ticks at the measured x values and at 1-2-5 steps of y, written as plain numbers.
        ax.xaxis.set_major_locator(FixedLocator(sorted({p[0] for pts in series.values() for p in pts})))
        ax.xaxis.set_major_formatter(FuncFormatter(short))
        ax.xaxis.set_minor_formatter(NullFormatter())
        low, high = ax.get_ylim()
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if high > 10 * low
                                              else tuple(range(1, 10))))
        ax.yaxis.set_major_formatter(FuncFormatter(short))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=11)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=9)
    fig.tight_layout()
    C.save_figure(fig, path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
