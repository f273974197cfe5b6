"""Ingestion of a file a user has: parse a multi-label LIBSVM file (part ``parse``).

Generates a multi-label LIBSVM file (rows x features, non-zeros per row, labels; cached in
the temporary folder) and parses it, each reader in a fresh child process: scikit-learn's
``load_svmlight_file(multilabel=True)``, ``coreselect.load`` (the whole file), and
``open_chunks(...).chunks()`` (streamed, each chunk dropped). Reported: CPU seconds of the
parse (user + system, all threads; the compiled parser's one-time load is done before on a
tiny file), MB/s per CPU second, peak RSS of the child (``ru_maxrss``, the interpreter and
imports included), and both as ratios to scikit-learn's, side by side in one run.

Part ``build`` (the out-of-core store build): generated multi-label LIBSVM count data in
``--shards`` files (or one), ``coreselect store build DATA STORE --workers W`` for each of
``--workers`` side by side (CPU seconds of the process tree, peak RSS of the largest process
and of the tree sampled every 0.2 s), the stores compared file by file (size and crc32), and
on a prefix of ``--prefix-nnz`` non-zeros ``select FILE --mode rows`` (a transient store from
chunks) against ``select(load(FILE), mode="rows")``.

Part ``big`` (a file of 10 GB): one generated file of ``--size-gb`` GB in
``--data-dir`` (kept for later runs; never inside the repository), then in order: the store
build with ``--workers``; ``select STORE --mode rows -k K``; on the file's first
``--prefix-nnz`` non-zeros the streamed selection against the in-memory one;
``select BIGFILE --mode rows -k K --temp-dir T`` (peak, and nothing left under T). The table
is rewritten after every step, so an interrupted run leaves what it measured.

Part ``s3`` (:func:`part_s3`): 16 generated shard files in a bucket of a local moto S3 server,
built into a store in the same bucket by a Dask ``LocalCluster`` of 1, then of 2 worker
processes (1 thread each; the workers read the shards and write the tiles themselves, the
spill under the build's temporary prefix), side by side: wall and CPU seconds (workers,
driver with the scheduler, and the moto server's own, which shares the cores), the speed-up,
and whether the two stores are the same objects byte for byte (every object's crc32).

Part ``tables``: a generated numeric CSV (~200 MB by default) and the same table as Parquet,
read whole by ``pandas.read_csv``, by the old whole-file readers (pandas / ``ParquetFile.read``,
now tests/reference_readers.py), by ``coreselect.load`` (pyarrow's streamed batches
concatenated) and streamed by ``open_chunks(...).chunks()``; CPU seconds and peak RSS, each
in a fresh child, side by side in one run.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402


def _generate(path: Path, rows: int, features: int, per_row: int, labels: int, seed: int = 0) -> None:
    """Rows of ``per_row`` distinct 1-based feature indices with 1-3 decimal values and 1-4 labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "w") as fh:
        block = 5000
        for r0 in range(0, rows, block):
            n = min(block, rows - r0)
            idx = np.sort(rng.integers(1, features + 1, (n, per_row)), axis=1)
            vals = rng.integers(1, 1000, (n, per_row)) / 100.0
            nl = rng.integers(1, 5, n)
            lines = []
            for i in range(n):
                row = np.unique(idx[i])
                labs = ",".join(map(str, sorted(set(rng.integers(1, labels + 1, nl[i]).tolist()))))
                lines.append(labs + " " + " ".join(f"{a}:{b:g}" for a, b in zip(row.tolist(), vals[i].tolist())))
            fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


# -- count data for the store build (parts build and big) ---------------------------------
def make_block(rng, rows: int, d: int, L: int, row_nnz: int) -> bytes:
    """``rows`` lines of multi-label LIBSVM count data: ~``row_nnz`` features per row from a
    Zipf-like popularity over ``d`` columns, integer values 1..8 (every column's value counts
    exact), 1-3 labels, the first tied to the row's first feature (selection has signal)."""
    import numpy as np

    ranks = np.arange(1, d + 1, dtype=np.float64)
    p = 1.0 / ranks ** 0.8
    p /= p.sum()
    perm = rng.permutation(d)
    ks = np.maximum(1, rng.poisson(row_nnz, rows))
    drawn = perm[rng.choice(d, size=int(ks.sum()), p=p)] + 1  # one draw for the block
    vals = rng.integers(1, 9, drawn.size)
    extra = rng.integers(0, 3, rows)
    more = rng.integers(0, L, (rows, 2))
    lines = []
    at = 0
    for r in range(rows):
        feats, first = np.unique(drawn[at:at + ks[r]], return_index=True)
        v = vals[at:at + ks[r]][first]
        at += ks[r]
        labs = {int(feats[0]) % L, *more[r, :extra[r]].tolist()}
        lines.append(",".join(map(str, sorted(labs))) + " "
                     + " ".join(f"{f}:{x}" for f, x in zip(feats.tolist(), v.tolist())))
    return ("\n".join(lines) + "\n").encode()


def generate_counts(path: Path, size_bytes: int, d: int = 100_000, L: int = 50, row_nnz: int = 100,
                    blocks: int = 64, seed: int = 0) -> Path:
    """One LIBSVM file of about ``size_bytes`` at ``path`` (kept: generated once, written
    under a temporary name and renamed when complete). ``blocks`` distinct blocks of 4000 rows
    are generated (Python text formatting is slower than the build it feeds) and repeated in a
    seeded order until the size is reached: deterministic for a seed."""
    import numpy as np

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    texts = [make_block(rng, 4000, d, L, row_nnz) for _ in range(blocks)]
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with open(tmp, "wb", buffering=1 << 24) as fh:
            while written < size_bytes:
                for b in rng.permutation(blocks):
                    fh.write(texts[b])
                    written += len(texts[b])
                    if written >= size_bytes:
                        break
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def count_nnz(path: Path) -> int:
    """The non-zeros (colons) of a generated file, counted once and kept beside it."""
    side = path.with_name(path.name + ".nnz")
    if side.exists() and side.stat().st_mtime >= path.stat().st_mtime:
        return int(side.read_text())
    n = 0
    with open(path, "rb") as fh:
        while buf := fh.read(64 << 20):
            n += buf.count(b":")
    side.write_text(str(n))
    return n


def counts_name(size_bytes: int, d: int, L: int, row_nnz: int, seed: int) -> str:
    return f"coreselect-counts-{size_bytes}-{d}x{L}-{row_nnz}-s{seed}.svm"


def _table_run(case: str, path: str, warm: str):
    """The reader of part ``tables`` (warmed up on a small file first)."""
    if case == "pandas":
        import pandas as pd

        pd.read_csv(warm)
        return lambda: pd.read_csv(path).shape[0]
    if case.startswith("old"):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import reference_readers

        read = reference_readers.read_parquet if path.endswith(".parquet") else reference_readers.read_csv
        read(warm.replace(".csv", Path(path).suffix) if path.endswith(".parquet") else warm, labels=2)
        return lambda: read(path, labels=2).X.shape[0]
    if case.startswith("load"):
        import coreselect

        coreselect.load(warm, labels=2)
        return lambda: coreselect.load(path, labels=2).X.shape[0]
    from coreselect.io.chunks import open_chunks

    list(open_chunks(warm, labels=2).chunks())
    return lambda: sum(c.X.shape[0] for c in open_chunks(path, labels=2).chunks())


def _child(payload: dict) -> dict:
    case, path = payload["case"], payload["path"]
    warm = Path(payload["warm"])
    if payload.get("part") == "tables":
        rows_of = _table_run(case, path, str(warm))

        def run():
            return rows_of(), 0
    elif case == "sklearn":
        from sklearn.datasets import load_svmlight_file

        load_svmlight_file(str(warm), multilabel=True)

        def run():
            X, y = load_svmlight_file(path, multilabel=True)
            return X.shape[0], X.nnz
    elif case == "load":
        import coreselect

        coreselect.load(str(warm))

        def run():
            ds = coreselect.load(path)
            return ds.X.shape[0], ds.X.nnz
    else:
        from coreselect.io.chunks import open_chunks

        list(open_chunks(str(warm)).chunks())

        def run():
            rows = nnz = 0
            for c in open_chunks(path).chunks():
                rows += c.X.shape[0]
                nnz += c.X.nnz
            return rows, nnz
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    rows, nnz = run()
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu": cpu, "wall": wall, "peak_mib": after.ru_maxrss / 1024, "rows": rows, "nnz": nnz}


def part_parse(args) -> str:
    rows, features, per_row, labels = ((3000, 5000, 20, 10) if args.quick else
                                       (args.rows, args.features, args.nnz_per_row, args.labels))
    folder = Path(args.data_dir or tempfile.gettempdir())
    path = folder / f"coreselect-ingest-{rows}x{features}-{per_row}-{labels}.svm"
    if not path.exists():
        _generate(path, rows, features, per_row, labels)
    warm = folder / "coreselect-ingest-warm.svm"
    if not warm.exists():
        _generate(warm, 20, 50, 3, 3)
    size_mb = path.stat().st_size / 1e6
    results = {}
    for case in ("sklearn", "load", "chunks"):
        results[case] = _common.run_case(__file__, {"case": case, "path": str(path), "warm": str(warm)})
    base = results["sklearn"]
    names = {"sklearn": "scikit-learn load_svmlight_file(multilabel=True)", "load": "coreselect.load",
             "chunks": "open_chunks(...).chunks() (streamed)"}
    table = []
    for case, r in results.items():
        if "error" in r:
            table.append([names[case], "failed: " + r["error"], "", "", "", "", ""])
            continue
        speed = size_mb / r["cpu"] if r["cpu"] > 0 else float("inf")
        ok = "error" not in base
        table.append([names[case], f"{r['cpu']:.2f}", f"{speed:.0f}",
                      f"{(base['cpu'] / r['cpu']):.1f}x" if ok and r["cpu"] > 0 else "",
                      f"{r['peak_mib']:.0f}", f"{(r['peak_mib'] / base['peak_mib']):.2f}x" if ok else "",
                      f"{r['nnz']:,}"])
    body = (f"A {size_mb:.0f} MB multi-label LIBSVM file: {rows:,} rows x {features:,} features, about "
            f"{per_row} non-zeros per row, {labels} labels. Load average at start: "
            f"{os.getloadavg()[0]:.2f}.\n\n"
            + _common.md_table(["reader", "parse CPU s", "MB/s per CPU s", "speed vs sklearn", "peak RSS MiB",
                                "peak vs sklearn", "non-zeros"], table, align="lrrrrrr"))
    return body


class OutOfTime(Exception):
    """A measured command was stopped at its time limit (its whole process tree)."""

    def __init__(self, wall: float, tree_mib: float):
        super().__init__(f"stopped after {wall:.0f} s")
        self.wall, self.tree_mib = wall, tree_mib


def run_measured(cmd: list[str], env: dict | None = None, timeout: float | None = None) -> dict:
    """Wall and CPU seconds of a command's process tree, the largest process's peak RSS
    (``ru_maxrss`` of the children, pool workers included) and the sampled peak of the tree's
    sum (every 0.2 s), and its standard output. Past ``timeout`` seconds the tree is killed
    and :class:`OutOfTime` raised."""
    import psutil

    wrapper = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
               "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "print('MAXRSS', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); "
               "sys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": str(_common.REPO_ROOT / "src"), **(env or {})}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", wrapper, *cmd], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak_tree = [0]
    stop = threading.Event()

    def sample() -> None:
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not stop.is_set():
            try:
                total = root.memory_info().rss + sum(
                    c.memory_info().rss for c in root.children(recursive=True))
                peak_tree[0] = max(peak_tree[0], total)
            except psutil.Error:
                pass
            stop.wait(0.2)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            tree = psutil.Process(proc.pid).children(recursive=True)
        except psutil.Error:
            tree = []
        for q in [*tree, proc]:
            try:
                q.kill()
            except (psutil.Error, OSError):
                pass
        proc.communicate()
        stop.set()
        t.join()
        raise OutOfTime(time.perf_counter() - start, peak_tree[0] / 2**20) from None
    stop.set()
    t.join()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    maxrss, cpu = [(int(line.split()[1]), float(line.split()[2]))
                   for line in err.decode().splitlines() if line.startswith("MAXRSS ")][-1]
    return {"wall_s": wall, "cpu_s": cpu, "max_rss_mib": maxrss / 1024,
            "tree_rss_mib": peak_tree[0] / 2**20, "stdout": out.decode()}


def prefix_file(files: list[Path], nnz: int, path: Path) -> int:
    """The first lines of ``files`` holding ``nnz`` non-zeros, written to ``path``."""
    got = 0
    with open(path, "wb") as out:
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    if got >= nnz:
                        return got
                    out.write(line)
                    got += line.count(b":")
    return got


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "coreselect", *args]


def _compare_prefix(files: list[Path], nnz: float, k: int, tmp: Path, left=lambda: None) -> dict:
    """``select PREFIX --mode rows`` (streamed: a transient store from chunks) against
    ``select(load(PREFIX), mode="rows")`` on the first ``nnz`` non-zeros of ``files``."""
    prefix = tmp / "prefix.svm"
    pnnz = prefix_file(files, int(nnz), prefix)
    scratch = tmp / "prefix-scratch"
    scratch.mkdir(exist_ok=True)
    streamed = run_measured(_cli("select", str(prefix), "-k", str(k), "--mode", "rows", "--json",
                                 "--quiet", "--temp-dir", str(scratch)), timeout=left())
    code = ("import json,sys; from coreselect import load, select; "
            f"r = select(load({str(prefix)!r}), k={k}, mode='rows'); "
            "print(json.dumps([int(i) for i in r.selected]))")
    memory = run_measured([sys.executable, "-c", code], timeout=left())
    same = json.loads(streamed["stdout"])["selected"] == json.loads(memory["stdout"].strip().splitlines()[-1])
    prefix.unlink()
    return {"nnz": pnnz, "streamed": streamed, "memory": memory, "same": same}


def _load_line() -> str:
    return "load average (1/5/15 min) " + "/".join(f"{x:.1f}" for x in os.getloadavg())


def part_build(args) -> str:
    """Generated count data in shards, built with each worker count side by side."""
    size_mb, prefix_nnz = (4, 2e4) if args.quick else (args.size_mb, args.prefix_nnz)
    tmp = Path(tempfile.mkdtemp(prefix="ingest-build-", dir=args.temp_dir))
    rows = []
    try:
        t0 = time.perf_counter()
        folder = tmp / "shards"
        folder.mkdir()
        per = int(size_mb * 2**20 / args.shards)
        files = [generate_counts(folder / f"part{s:03d}.svm", per, args.features, args.labels,
                                 args.nnz_per_row, blocks=4 if args.quick else 16, seed=args.seed + s)
                 for s in range(args.shards)]
        size = sum(f.stat().st_size for f in files)
        nnz = sum(f.read_bytes().count(b":") for f in files)
        print(f"generated {size / 2**20:.0f} MiB, {nnz:.3g} non-zeros in {len(files)} files "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        data = str(files[0]) if len(files) == 1 else str(folder)
        checksums = {}
        start_load = _load_line()
        for w in [int(x) for x in str(args.workers).split(",")]:
            store = tmp / f"store-w{w}"
            m = run_measured(_cli("store", "build", data, str(store), "--workers", str(w), "--quiet"))
            checksums[w] = json.loads((store / "store.json").read_text())["files"]
            rows.append({"workers": w, **m})
            print(f"workers {w}: {m['wall_s']:.1f} s ({m['cpu_s']:.1f} CPU s), max RSS "
                  f"{m['max_rss_mib']:.0f} MiB, tree {m['tree_rss_mib']:.0f} MiB", flush=True)
            shutil.rmtree(store)
        identical = all(c == next(iter(checksums.values())) for c in checksums.values())
        cmp = _compare_prefix(files, prefix_nnz, args.k, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        f"Data: {size / 2**20:.0f} MiB of multi-label LIBSVM count data in {len(files)} file(s), "
        f"{nnz:.3g} non-zeros, {args.features} features, {args.labels} labels. At the start: "
        f"{start_load}; at the end: {_load_line()} (wall times under load are longer than a quiet "
        "run's; CPU seconds are the fairer number).",
        "",
        "| workers | wall (s) | CPU (s) | MiB per CPU-s | non-zeros per CPU-s | "
        "peak RSS, largest process (MiB) | peak RSS, all processes (MiB) | "
        "10 GB on 2 free cores at this CPU cost (min) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        per_cpu = size / 2**20 / r["cpu_s"]
        lines.append(f"| {r['workers']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {per_cpu:.1f} | "
                     f"{nnz / r['cpu_s']:.3g} | {r['max_rss_mib']:.0f} | {r['tree_rss_mib']:.0f} | "
                     f"{10 * 1024 / per_cpu / 2 / 60:.1f} |")
    s, mem = cmp["streamed"], cmp["memory"]
    lines += ["", "The last column is the CPU cost spread over 2 cores with nothing else running: a "
              "lower bound that assumes perfect scaling.", "",
              f"Stores identical across worker counts (every file's size and crc32): {identical}.", "",
              f"Prefix of {cmp['nnz']:.3g} non-zeros, `select FILE --mode rows -k {args.k}`: streamed "
              f"(transient store from chunks) {s['wall_s']:.1f} s, peak {s['max_rss_mib']:.0f} MiB; in "
              f"memory (`select(load(FILE), mode='rows')`) {mem['wall_s']:.1f} s, peak "
              f"{mem['max_rss_mib']:.0f} MiB; identical selection: {cmp['same']}."]
    return "\n".join(lines)


def part_big(args) -> str:
    """The store build and rows-mode selections on one big generated file (module docs); the
    table after every step."""
    if args.data_dir is None:
        raise SystemExit("--part big needs --data-dir (a folder outside the repository with room "
                         "for the file, its store and a transient store: about 4x --size-gb)")
    folder = Path(args.data_dir).resolve()
    if _common.REPO_ROOT.resolve() in (folder, *folder.parents):
        raise SystemExit("--data-dir must be outside the repository")
    size = int(0.002e9 if args.quick else args.size_gb * 1e9)
    prefix_nnz = 2e4 if args.quick else args.prefix_nnz
    t0 = time.perf_counter()
    path = generate_counts(folder / counts_name(size, args.features, args.labels, args.nnz_per_row, args.seed),
                           size, args.features, args.labels, args.nnz_per_row,
                           blocks=4 if args.quick else 64, seed=args.seed)
    made = time.perf_counter() - t0
    state_nnz = count_nnz(path)
    work = Path(tempfile.mkdtemp(prefix="ingest-big-", dir=args.temp_dir or folder))
    scratch = work / "temp"
    scratch.mkdir()
    store = work / "store"
    done: list[list[str]] = []
    state = {"nnz": state_nnz}
    head_load = _load_line()

    def table(note: str = "") -> str:
        nnz = state["nnz"]
        lines = [f"One generated multi-label LIBSVM file of count data: {path.stat().st_size / 1e9:.2f} GB"
                 + (f", {nnz:.3g} non-zeros" if nnz else "")
                 + f", {args.features:,} features, {args.labels} labels (generated in {made:.0f} s, or "
                 f"found in --data-dir). At the start: {head_load}; now: {_load_line()}.", "",
                 _common.md_table(["step", "wall s", "CPU s", "peak RSS, largest process MiB",
                                   "peak RSS, all processes MiB", "result"], done, align="lrrrrl")]
        if note:
            lines += ["", note]
        text = "\n".join(lines)
        _common.emit("Ingest: a 10 GB file", text, args.out)
        return text

    deadline = None if args.budget_s is None else time.perf_counter() + args.budget_s

    def left() -> float | None:
        return None if deadline is None else max(1.0, deadline - time.perf_counter())

    def row(step: str, m: dict, result: str) -> None:
        done.append([step, f"{m['wall_s']:.1f}", f"{m['cpu_s']:.1f}", f"{m['max_rss_mib']:.0f}",
                     f"{m['tree_rss_mib']:.0f}", result])
        print(f"{step}: {m['wall_s']:.1f} s, {m['cpu_s']:.1f} CPU s, peak {m['max_rss_mib']:.0f} MiB "
              f"(tree {m['tree_rss_mib']:.0f} MiB): {result}", flush=True)
        table()

    try:
        step = f"`store build FILE STORE --workers {args.workers}`"
        m = run_measured(_cli("store", "build", str(path), str(store), "--workers", str(args.workers),
                              "--quiet"), timeout=left())
        meta = json.loads((store / "store.json").read_text())
        mib = path.stat().st_size / 2**20
        row(step, m,
            f"{meta['n_samples']:,} rows; {mib / m['wall_s']:.1f} MiB/s, {mib / m['cpu_s']:.1f} MiB per CPU-s; "
            f"peak <= 2048 MiB: {'yes' if m['tree_rss_mib'] <= 2048 else 'no'}")
        step = f"`select STORE --mode rows -k {args.k}`"
        m = run_measured(_cli("select", str(store), "--mode", "rows", "-k", str(args.k), "--json", "--quiet"),
                         timeout=left())
        row(step, m, f"{len(json.loads(m['stdout'])['selected'])} features")
        shutil.rmtree(store)
        step = f"prefix of {prefix_nnz:.3g} non-zeros, streamed and in memory"
        cmp = _compare_prefix([path], prefix_nnz, args.k, work, left)
        row(f"prefix of {cmp['nnz']:.3g} non-zeros: `select PREFIX --mode rows -k {args.k}` (streamed)",
            cmp["streamed"], f"identical to in memory: {cmp['same']}")
        row("the same prefix: `select(load(PREFIX), mode='rows')` (in memory)", cmp["memory"], "")
        step = f"`select BIGFILE --mode rows -k {args.k} --temp-dir T`"
        m = run_measured(_cli("select", str(path), "--mode", "rows", "-k", str(args.k), "--json", "--quiet",
                              "--temp-dir", str(scratch)), timeout=left())
        left = sorted(p.name for p in scratch.iterdir())
        row(f"`select BIGFILE --mode rows -k {args.k} --temp-dir T`", m,
            f"left under T: {', '.join(left) if left else 'nothing'}; peak <= 2048 MiB: "
            f"{'yes' if m['tree_rss_mib'] <= 2048 else 'no'}")
    except OutOfTime as exc:
        done.append([step, f"> {exc.wall:.0f}", "", "", f"{exc.tree_mib:.0f} (so far)",
                     f"stopped at the time limit (--budget-s {args.budget_s:.0f}); not measured"])
        return table(f"The run reached its time limit (--budget-s) during the last row's step; the "
                     "steps after it did not run.")
    except BaseException as exc:
        table(f"The run stopped early ({type(exc).__name__}: {exc}); the rows above are what it measured.")
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return table()


def _scan_file(source, i: int):
    return source.file_scan(i)


def _warm(path: str) -> None:
    """A worker's one-time costs (imports, the compiled parser and coders) paid before timing:
    a tiny store built from a tiny file."""
    import shutil
    import tempfile as tf

    from coreselect.io.chunks import open_chunks
    from coreselect.store.ingest import build_store_from_source

    folder = tf.mkdtemp()
    try:
        build_store_from_source(open_chunks(path), Path(folder) / "s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def part_s3(args) -> str:
    """See the module docstring (part ``s3``). Every process it starts (the moto server, the
    clusters' workers) is stopped before it returns, on an error or Ctrl-C too."""
    import zlib

    import psutil
    import s3fs

    from coreselect.engines.dask import DaskEngine, local_cluster
    from coreselect.io.chunks import open_chunks
    from coreselect.store.ingest import BuildOptions, build_store_from_source

    n_shards, per_row, features, labels = args.shards, args.nnz_per_row, args.features, args.labels
    total_mb = 4.0 if args.quick else args.s3_mb
    rows = max(1, int(total_mb * 1e6 / n_shards / (per_row * 10.6 + 8)))  # ~bytes per row
    folder = Path(args.data_dir or tempfile.gettempdir()) / (
        f"coreselect-ingest-s3-{n_shards}x{rows}-{features}-{per_row}-{labels}")
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_shards):
        if not (folder / f"part{i:02d}.svm").exists():
            _generate(folder / f"part{i:02d}.svm", rows, features, per_row, labels, seed=i)
    size = sum(f.stat().st_size for f in folder.glob("part*.svm"))
    warm = folder.parent / "coreselect-ingest-warm.svm"
    if not warm.exists():
        _generate(warm, 20, 50, 3, 3)
    # Row blocks of about one shard each, column blocks of 16384: pass 3 has tasks enough
    # for every worker (the automatic row blocks would give 256 MB two or three).
    options = BuildOptions(name="shards", block_size=16384, row_block_size=rows)
    key, secret = "AKIDBENCH", "bench-secret"
    env = {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
           "AWS_DEFAULT_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in [*env, "AWS_ENDPOINT_URL", "CORESELECT_STORAGE_OPTIONS"]}
    moto, url = _common.start_moto({**os.environ, **env}, timeout=300)
    load_start = os.getloadavg()[0]
    rows_out, stores = [], {}
    try:
        os.environ.update(env)  # the workers, spawned below, inherit them
        os.environ["AWS_ENDPOINT_URL"] = url
        os.environ["CORESELECT_STORAGE_OPTIONS"] = json.dumps({"endpoint_url": url})
        fs = s3fs.S3FileSystem(key=key, secret=secret, endpoint_url=url, skip_instance_cache=True)
        fs.mkdir("bench")
        fs.put(str(folder) + "/", "bench/shards/", recursive=True)
        server = psutil.Process(moto.pid)
        for n in args.s3_workers:
            from distributed import Client

            cluster, client = local_cluster(n, 1), None
            try:
                client = Client(cluster)
                client.wait_for_workers(n)
                engine = DaskEngine(client=client)
                client.run(_warm, str(warm))
                _warm(str(warm))
                workers = [psutil.Process(pid) for pid in engine.worker_pids]
                before = ([w.cpu_times() for w in workers], server.cpu_times(),
                          resource.getrusage(resource.RUSAGE_SELF))
                t0 = time.perf_counter()
                source = open_chunks("s3://bench/shards/*.svm")
                source.scan(file_scans=engine.map(_scan_file, source, range(len(source.files))))
                t1 = time.perf_counter()
                target = f"s3://bench/store-{n}"
                build_store_from_source(source, target, engine=engine, options=options)
                t2 = time.perf_counter()
                after = ([w.cpu_times() for w in workers], server.cpu_times(),
                         resource.getrusage(resource.RUSAGE_SELF))
            finally:
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()
                cluster.close()
            cpu = lambda a, b: (b.user - a.user) + (b.system - a.system)  # noqa: E731
            work = sum(cpu(a, b) for a, b in zip(before[0], after[0]))
            driver = (after[2].ru_utime - before[2].ru_utime) + (after[2].ru_stime - before[2].ru_stime)
            rows_out.append((n, t2 - t0, t1 - t0, work, driver, cpu(before[1], after[1])))
            fs.invalidate_cache()
            stores[n] = {k.split("/", 2)[2]: zlib.crc32(fs.cat_file(k)) for k in fs.find(target[5:])}
    finally:
        moto.kill()
        moto.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    base = rows_out[0][1]
    table = [[n, f"{wall:.1f}", f"{scan:.1f}", f"{work:.1f}", f"{driver:.1f}", f"{srv:.1f}",
              f"{base / wall:.2f}x"] for n, wall, scan, work, driver, srv in rows_out]
    same = all(v == stores[args.s3_workers[0]] for v in stores.values())
    n_objects = len(next(iter(stores.values())))
    return (f"Data: {n_shards} LIBSVM shards, {size / 1e6:.0f} MB in all ({rows:,} rows each, "
            f"{features:,} features, about {per_row} non-zeros per row, {labels} labels), in a "
            f"bucket of a local moto S3 server; built into `s3://bench/store-N` by a Dask "
            f"LocalCluster of N worker processes of 1 thread (row blocks of {rows:,} rows, column blocks of 16384; workers warmed up on a tiny file first). Load average {load_start:.2f} at the "
            f"start, {os.getloadavg()[0]:.2f} at the end (2 cores, shared with the moto server).\n\n"
            + _common.md_table(["workers", "wall s (scan + build)", "of which scan s",
                                "workers' CPU s", "driver + scheduler CPU s", "moto server CPU s",
                                "speed-up"], table, align="rrrrrrr")
            + f"\n\nThe stores are the same {n_objects} objects byte for byte (every object's "
              f"crc32, store.json included): {same}.\n")
def _table_files(folder: Path, rows: int) -> tuple[Path, Path, Path]:
    """A numeric CSV (30 columns of 2-decimal values, 2 label columns), the same as Parquet,
    and a small warm-up CSV (with its Parquet)."""
    import numpy as np
    import pandas as pd

    csv, pq, warm = (folder / f"coreselect-tables-{rows}.csv", folder / f"coreselect-tables-{rows}.parquet",
                     folder / "coreselect-tables-warm.csv")
    if not (csv.exists() and pq.exists() and warm.exists()):
        rng = np.random.default_rng(0)
        cols = {f"x{j}": np.round(rng.normal(size=rows) * 10, 2) for j in range(30)}
        cols.update({f"y{j}": (rng.random(rows) < 0.3).astype(np.int8) for j in range(2)})
        df = pd.DataFrame(cols)
        df.to_csv(csv, index=False)
        df.to_parquet(pq, index=False)
        df.head(50).to_csv(warm, index=False)
        df.head(50).to_parquet(warm.with_suffix(".parquet"), index=False)
    return csv, pq, warm


def part_tables(args) -> str:
    rows = 20_000 if args.quick else args.table_rows
    folder = Path(args.data_dir or tempfile.gettempdir())
    csv, pq, warm = _table_files(folder, rows)
    cases = [("pandas", csv, "pandas.read_csv"), ("old-csv", csv, "old coreselect CSV reader (pandas)"),
             ("load-csv", csv, "coreselect.load (pyarrow batches)"), ("chunks-csv", csv, "open_chunks(...).chunks()"),
             ("old-parquet", pq, "old coreselect Parquet reader (ParquetFile.read)"),
             ("load-parquet", pq, "coreselect.load (iter_batches)"), ("chunks-parquet", pq, "open_chunks(...).chunks()")]
    table = []
    base: dict = {}
    for case, path, label in cases:
        r = _common.run_case(__file__, {"case": case, "path": str(path), "warm": str(warm), "part": "tables"})
        if case.startswith("old"):
            base = r
        if "error" in r:
            table.append([path.suffix, label, "failed: " + r["error"], "", "", ""])
            continue
        ok = "error" not in base and base.get("cpu")
        table.append([path.suffix, label, f"{r['cpu']:.2f}", f"{r['peak_mib']:.0f}",
                      f"{r['cpu'] / base['cpu']:.2f}x" if ok and not case.startswith("pandas") else "",
                      f"{r['peak_mib'] / base['peak_mib']:.2f}x" if ok and not case.startswith("pandas") else ""])
    return (f"A {csv.stat().st_size / 1e6:.0f} MB CSV ({rows:,} rows x 32 columns) and the same table as a "
            f"{pq.stat().st_size / 1e6:.0f} MB Parquet file. Each reader in a fresh child process (warmed up "
            f"on a 50-row file); CPU seconds of the read (all threads) and the child's peak RSS; ratios to "
            f"the old coreselect reader of the same format. Load average at start: {os.getloadavg()[0]:.2f}.\n\n"
            + _common.md_table(["file", "reader", "CPU s", "peak RSS MiB", "CPU vs old", "peak vs old"], table,
                               align="llrrrr"))


def main() -> int:
    p = _common.parser(__doc__)
    p.add_argument("--part", choices=["parse", "build", "big", "s3", "tables"], default="parse", help="which measurement")
    p.add_argument("--rows", type=int, default=200_000, help="rows of the generated LIBSVM file (part parse)")
    p.add_argument("--features", type=int, default=100_000, help="feature columns of the generated file")
    p.add_argument("--nnz-per-row", type=int, default=100, help="non-zeros per row (on average)")
    p.add_argument("--labels", type=int, default=50, help="label columns of the generated file")
    p.add_argument("--data-dir", default=None, help="where the generated file is kept (default: the temp "
                   "folder; part big: required, outside the repository)")
    p.add_argument("--temp-dir", default=None, help="scratch folder of parts build and big (default: the "
                   "system's; part big: inside --data-dir)")
    p.add_argument("--size-mb", type=float, default=256, help="part build: total size of the generated files, MiB")
    p.add_argument("--shards", type=int, default=None, help="part build: files the data are cut into "
                   "(default 4); part s3: shard files (default 16)")
    p.add_argument("--table-rows", type=int, default=1_100_000, help="rows of the generated table (part tables)")
    p.add_argument("--s3-mb", type=float, default=96,
                   help="part s3: MB of shards in all (96: a 1-worker build takes about a minute quiet)")
    p.add_argument("--s3-workers", type=lambda t: [int(x) for x in t.split(",")], default=[1, 2],
                   help="part s3: Dask worker processes, one build each (default 1,2)")
    p.add_argument("--workers", default="1,2", help="part build: comma-separated worker counts compared side "
                   "by side; part big: the build's worker count (its first)")
    p.add_argument("--size-gb", type=float, default=10, help="part big: size of the generated file, GB (10^9 bytes)")
    p.add_argument("--prefix-nnz", type=float, default=1e7, help="non-zeros of the prefix on which the "
                   "streamed and in-memory selections are compared")
    p.add_argument("--budget-s", type=float, default=None, help="part big: seconds for all its steps; a "
                   "step still running then is stopped (its process tree killed) and the table says so")
    p.add_argument("-k", type=int, default=20, help="features selected (parts build and big)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated count data")
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0
    if args.shards is None:
        args.shards = 16 if args.part == "s3" else 4
    if args.part == "s3":
        _common.emit("Ingest: 16 shards on S3, built by 1 and 2 Dask workers", part_s3(args), args.out)
    elif args.part == "tables":
        _common.emit("Ingest: read a CSV and a Parquet file", part_tables(args), args.out)
    elif args.part == "parse":
        _common.emit("Ingest: parse a multi-label LIBSVM file", part_parse(args), args.out)
    elif args.part == "build":
        _common.emit("Ingest: store build from files", part_build(args), args.out)
    else:
        args.workers = int(str(args.workers).split(",")[-1])
        part_big(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
