"""Shared helpers of the benchmark scripts: data paths, timing, peak memory, Markdown tables.

The scripts are plain programs (``python benchmarks/NAME.py [--quick]``), not a package;
each one puts this folder on ``sys.path`` and imports this module as ``_common``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent


# -- data ----------------------------------------------------------------------------------
def data_dir() -> Path:
    """``$COREDATA``, else ``../shared/data`` relative to the repository root."""
    env = os.environ.get("COREDATA")
    return Path(env) if env else (REPO_ROOT / ".." / "shared" / "data").resolve()


#: short name -> path under the data folder
DATASETS = {
    "rcv1subset1": "rcv1v2/rcv1subset1.arff.gz",
    "tmc2007-500": "mulan/tmc2007-500/tmc2007-500.arff",
    "scene": "mulan/scene/scene-train.arff",
    "corel5k": "mulan/corel5k/Corel5k-sparse.arff",
}


def data_path(name: str) -> Path:
    return data_dir() / DATASETS.get(name, name)


def have_data(name: str) -> bool:
    return data_path(name).is_file()


def load(name: str):
    """``coreselect.load`` of a dataset of the data folder (returns the Dataset)."""
    import coreselect

    return coreselect.load(data_path(name))


# -- timing and memory ---------------------------------------------------------------------
def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``(seconds, result)`` of one call."""
    gc.collect()
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """Smallest wall time of ``repeat`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        seconds, out = timed(fn)
        best = min(best, seconds)
    return best, out


def best_of_cpu(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, float, Any]:
    """``(wall, cpu, result)`` of the call with the smallest wall time of ``repeat`` calls.

    CPU time (all threads of this process) is what the run would take on an idle machine when
    it is single-threaded; on a busy machine it is the fairer number.
    """
    best, cpu, out = float("inf"), float("inf"), None
    for _ in range(max(1, repeat)):
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        wall, used = time.perf_counter() - w0, time.process_time() - c0
        if wall < best:
            best, cpu = wall, used
    return best, cpu, out


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (``ru_maxrss``; KiB on Linux)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def rss_mib() -> float:
    """Current resident memory of this process in MiB."""
    import psutil

    return psutil.Process().memory_info().rss / (1024 * 1024)


def run_child(script: str | Path, payload: dict, timeout: float | None = None) -> dict:
    """Run ``python SCRIPT --child JSON`` in a fresh process; it prints one JSON line last.

    A fresh process is how peak memory (``ru_maxrss``) of one run is measured on its own.
    """
    cmd = [sys.executable, str(script), "--child", json.dumps(payload)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"child {payload} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_case(script: str | Path, payload: dict) -> dict:
    """:func:`run_child`, with a failure returned as ``{"error": last stderr line}`` (a row of
    the table) instead of raised, so one failed case does not lose the others."""
    proc = subprocess.run([sys.executable, str(script), "--child", json.dumps(payload)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def steps_timer() -> tuple[list[float], Callable[[int, int], None]]:
    """A greedy ``callback(step, total)`` that stamps each step's end, and the stamps."""
    stamps: list[float] = []
    return stamps, lambda step, total: stamps.append(time.perf_counter())


def step_ms(stamps: Sequence[float]) -> float:
    """Mean milliseconds between the stamps of :func:`steps_timer`."""
    return 1e3 * (stamps[-1] - stamps[0]) / max(len(stamps) - 1, 1)


def run_command(cmd: Sequence[str], env: dict | None = None) -> tuple[float, float, str, float]:
    """``(wall seconds, peak RSS MiB, stdout, CPU seconds)`` of a command run in a child process.

    The child is reaped with ``os.wait4``, so the peak memory is that child's own.
    """
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err,
                                env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-3000:]}")
    peak = usage.ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else usage.ru_maxrss / 1024
    return seconds, peak, stdout, usage.ru_utime + usage.ru_stime


# -- output --------------------------------------------------------------------------------
def save_method_rows(df, path: Path, methods: Sequence[str]) -> None:
    """Write the results ``df`` of ``methods`` to the CSV ``path`` atomically, keeping the rows
    of the other methods already there (a rerun of some methods replaces only theirs)."""
    import pandas as pd

    if path.exists():
        kept = pd.read_csv(path)
        df = pd.concat([kept[~kept["method"].isin(methods)], df], ignore_index=True)
    write_csv(df, path, float_format="%.6g")


def cross_validate(name: str, X, Y, n_rows: int, made: dict, ks: Sequence[int], out: Path,
                   folds: int = 3, evaluators: Sequence[str] = ("brknn", "linear"), jobs: int = 1,
                   stability: bool = False):
    """The scoring loop of ``published.py run`` and ``rivals.py run``: ``run_protocol`` (what
    ``coreselect evaluate`` runs; seed 0) of the factories ``made`` on the dataset ``name``
    (``X, Y``: its rows, maybe a cut of ``n_rows``) at ``ks`` capped at the fewest columns that
    vary on a training fold (``["auto"]``: ``k="auto"``, chosen on each training fold), scored
    by every evaluator; the rows of these methods replace
    theirs in ``out/NAME.csv`` (and the selection stability in ``out/NAME.stability.csv`` with
    ``stability``). Returns the results."""
    import pandas as pd

    from coreselect.evaluation.protocol import run_protocol

    out.mkdir(parents=True, exist_ok=True)
    methods = list(made)
    cap = ["auto"] if list(ks) == ["auto"] else sorted(
        {min(k, selectable_columns(X, folds)) for k in ks})
    import coreselect

    coreselect.warm_up()  # compiled kernels loaded before timing: every one a default fit calls
    for m, factory in made.items():  # and what each method's own fit loads on a few rows
        if m != "all":
            factory(2, 0).fit(X[:100], Y[:100])
    t0 = time.perf_counter()
    df = run_protocol(X, Y, made, cap, n_folds=folds, seed=0, evaluator=tuple(evaluators),
                      jobs=jobs)
    if "evaluator" not in df.columns:
        df.insert(1, "evaluator", evaluators[0])
    df.insert(0, "dataset", name)
    df["rows_used"] = X.shape[0]
    df["rows_total"] = n_rows
    df["n_features"] = X.shape[1]
    save_method_rows(df, out / f"{name}.csv", methods)
    if stability:
        st = pd.DataFrame(df.attrs["stability"])
        st.insert(0, "dataset", name)
        save_method_rows(st, out / f"{name}.stability.csv", methods)
    for note in df.attrs["notes"]:
        print(f"{name}: {note}", flush=True)
    sel = df.groupby("method")["select_seconds"].mean()
    print(f"{name}: {X.shape} in {time.perf_counter() - t0:.0f} s; selection seconds "
          + ", ".join(f"{m} {sel[m]:.2f}" for m in methods if m in sel), flush=True)
    return df


def selectable_columns(X, folds: int, seed: int = 0) -> int:
    """The fewest columns that are not constant after discretization on a training fold of
    ``run_protocol``'s split (only those can be selected: genbase has 1186 columns, fewer than
    100 of them vary): the largest k a cross-validation can ask of every method."""
    from coreselect.core.discretize import discretize
    from coreselect.evaluation.protocol import make_folds

    return min(int((~discretize(X[train]).is_constant).sum())
               for train, _ in make_folds(X.shape[0], folds, seed))


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != value:  # NaN
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.1f}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        return f"{value:.{digits}g}" if abs(value) < 0.01 else f"{value:.{digits}f}"
    return str(value)


def seconds_str(s: float | None) -> str:
    """Human time: 0.123 s, 12.3 s, 2.8 m, 1 h 33 m."""
    if s is None:
        return "–"
    if s < 1:
        return f"{s * 1000:.0f} ms" if s < 0.1 else f"{s:.2f} s"
    if s < 120:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.1f} m"
    return f"{int(s // 3600)} h {s % 3600 / 60:.1f} m"


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` is one char per column ('l' or 'r', default r)."""
    headers = [str(h) for h in headers]
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(c) for c in row) + " |")
    return "\n".join(lines)


def machine() -> str:
    """One line: CPU model, cores, memory, Python and key library versions."""
    import numpy
    import psutil

    model = platform.processor() or "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = psutil.virtual_memory().total / 2**30
    try:
        import numba

        nb = f", numba {numba.__version__}"
    except ImportError:
        nb = ""
    load = ""
    if hasattr(os, "getloadavg"):
        load = "; 1-min load average %.1f when printed" % os.getloadavg()[0]
    return (f"{model}, {cores} cores, {mem:.0f} GiB RAM; Python {platform.python_version()}, "
            f"numpy {numpy.__version__}{nb}{load}")


def describe(doc: str | None) -> str:
    """A script's ``--help`` description: its docstring's first paragraph, whole sentences
    (``doc.splitlines()[0]`` cut many of them mid-sentence)."""
    para = (doc or "").strip().split("\n\n")[0]
    return " ".join(para.split())


def parser(description: str, plots: bool = False) -> argparse.ArgumentParser:
    """Arguments every script takes: --quick/--smoke, --out, --child; --png only where the
    script draws a plot (``plots=True``), so no script accepts a --png it would ignore."""
    p = argparse.ArgumentParser(description=describe(description),
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", "--smoke", dest="quick", action="store_true",
                   help="tiny sizes (seconds), for the smoke test")
    if plots:
        p.add_argument("--png", default=None, help="also write a plot to this PNG file")
    p.add_argument("--out", default=None,
                   help="also write the Markdown (with the command and date) to this file")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return p


#: Environment variables that change what a benchmark measures (the kernels' threads, the
#: compiled kernels), as they were when the script started: a table says it ran with them.
RESULT_ENV = ("NUMBA_NUM_THREADS", "CORESELECT_NUMBA")
_ENV_AT_START = {name: os.environ[name] for name in RESULT_ENV if name in os.environ}


def command_line() -> str:
    """The ``coreselect bench NAME ARGS`` that reruns this script with these arguments (and
    the :data:`RESULT_ENV` variables it ran with, before it)."""
    import shlex

    env = "".join(f"{name}={shlex.quote(value)} " for name, value in _ENV_AT_START.items())
    script = Path(sys.argv[0]).resolve()
    if script.parent != Path(__file__).resolve().parent:  # a tool outside benchmarks/
        try:
            where = script.relative_to(REPO_ROOT)
        except ValueError:
            where = Path(script.name)
        return f"{env}python {where.as_posix()} {shlex.join(sys.argv[1:])}".rstrip()
    return f"{env}coreselect bench {script.stem} {shlex.join(sys.argv[1:])}".rstrip()


def provenance() -> str:
    """One line that says which command wrote a result, when, and on what machine."""
    from datetime import datetime, timezone

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"*Written by `{command_line()}` on {when}. Machine: {machine()}.*"


def emit(title: str, body: str, out: str | None = None) -> str:
    """Print a section (title, provenance line, body) and write it without the title to
    ``out``: the file a doc splices in verbatim (``benchmarks/_docs.py``)."""
    text = f"{provenance()}\n\n{body.rstrip()}\n"
    print(f"## {title}\n\n{text}", flush=True)
    if out:
        write_atomic(out, text)
    return text


def wrote(path: str | Path) -> None:
    """Say on stderr that the result file ``path`` is written (``wrote PATH``, one line per
    file, as ``coreselect select`` and ``evaluate`` say it). Every result a benchmark writes
    goes through here: scratch files and generated input data do not."""
    print(f"wrote {path}", file=sys.stderr, flush=True)


def write_atomic(path: str | Path, text: str, announce: bool = True) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half a file);
    ``announce``: say so (:func:`wrote`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
    if announce:
        wrote(path)


def write_csv(df, path: str | Path, announce: bool = True, **to_csv) -> None:
    """``df.to_csv(path, index=False, **to_csv)`` through a temporary file and a rename;
    ``announce``: say so (:func:`wrote`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    df.to_csv(tmp, index=False, **to_csv)
    os.replace(tmp, path)
    if announce:
        wrote(path)


def save_figure(fig, path: str | Path, **savefig) -> None:
    """``fig.savefig`` to ``path`` through a temporary file and a rename; says so
    (:func:`wrote`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", **savefig)
    os.replace(tmp, path)
    wrote(path)


#: A moto S3 server in a process of its own, on a port the system gives it (port 0: no port
#: picked and released here, which another process could take first), printed once it
#: listens; then its standard output goes nowhere.
MOTO_SERVER = """
import os, threading
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
threading.Event().wait()
"""


def start_moto(env: dict | None = None, cwd: str | Path | None = None,
               timeout: float = 60) -> tuple[subprocess.Popen, str]:
    """A moto S3 server process on 127.0.0.1 (``env``: its environment) and its URL;
    RuntimeError (the process stopped) when it does not say its port within ``timeout``."""
    import select

    proc = subprocess.Popen([sys.executable, "-c", MOTO_SERVER], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    if not line.strip().isdigit():
        proc.kill()
        proc.wait()
        raise RuntimeError("the moto S3 server did not start")
    return proc, f"http://127.0.0.1:{int(line)}"


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fit_exponent(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Slope of log y against log x (least squares): the growth exponent."""
    import numpy as np

    x, y = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    if x.size < 2:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])
