"""A real cluster over object storage: a moto S3 server, a ``dask scheduler`` and two
``dask worker`` processes (the dask command line, not a LocalCluster), and the exact
row-sharded selection (``select STORE --mode rows --engine dask --scheduler ADDRESS``) over
the same synthetic sparse store on the local S3 server and in a local folder, timed from the
command line, with the S3/local ratio; then the S3 run again with one worker killed
(SIGKILL) in its first task and a replacement started.

    python benchmarks/cluster.py [--n 2600000] [--d 100000] [--density 0.001] [--k 50]
        [--row-block-size 262144] [--block-size 16384] [--reference-max-nnz 50000000]

The data are ``tall_store.py``'s recipe (row chunks, planted relevant and redundant columns).
The workers compile their kernels before any timed run. ``in-memory`` is
``select(local store, k)`` in this process (the centralized selection, all columns in
memory), run only up to ``--reference-max-nnz`` non-zeros; every cluster run must select
what it selects (``--mode rows`` is the centralized selection, exactly). The moto server is
a single Python process on this machine: S3 here costs request handling and copies, not a
network. No timing is asserted anywhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common  # noqa: E402

KEY, SECRET = "AKIDBENCHCLUSTER0001", "bench-cluster-secret-0001"
BUCKET = "bench"


def _wait(cond, what: str, proc: subprocess.Popen | None = None, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the process ended ({proc.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout:g} s")
        time.sleep(0.05)


class Processes:
    """The moto server, the scheduler and the workers; all killed on exit."""

    def __init__(self, folder: Path, hold: Path):
        self.folder, self.hold, self.procs = folder, hold, []
        moto, self.s3 = _common.start_moto(cwd=folder)  # on a port it chose
        self.procs.append(moto)
        self.env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.s3,
                    "PYTHONPATH": os.pathsep.join(
                        [str(_common.REPO_ROOT / "src")]
                        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
        self.env.pop("CORESELECT_STORAGE_OPTIONS", None)
        self.dask = [str(Path(sys.executable).with_name("dask"))]
        sched_file = folder / "scheduler.json"
        sched = self._start(self.dask + ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                         "--no-dashboard", "--scheduler-file", str(sched_file)])
        _wait(lambda: sched_file.exists() and sched_file.stat().st_size, "the scheduler", sched)
        self.address = json.loads(sched_file.read_text())["address"]
        # Every worker may hold in its first task (files.checkpoint_once) once armed: the
        # claim file exists (disarmed) until the worker-loss case removes it.
        Path(str(hold) + ".claim").touch()
        self.worker_env = {"CORESELECT_TEST_HOLD": "dask-task",
                           "CORESELECT_TEST_HOLD_FILE": str(hold)}

    def _start(self, cmd: list[str], env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env=env or self.env, cwd=self.folder,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def worker(self, name: str, hold: bool = True) -> subprocess.Popen:
        env = {**self.env, **(self.worker_env if hold else {})}
        return self._start(self.dask + ["worker", self.address, "--nthreads", "1",
                                        "--no-dashboard", "--no-nanny", "--name", name], env)

    def client(self):
        from distributed import Client

        return Client(self.address, timeout=60)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait(60)


def _warm() -> bool:
    from coreselect.core.entropy import warm_up

    warm_up()
    return True


def build(args, folder: Path, procs: Processes) -> tuple[dict, str]:
    """The local store, and the same files uploaded to the S3 server (store.json last)."""
    os.environ.update({k: procs.env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                                  "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")})
    import s3fs

    from coreselect.store.build import build_store_from_chunks
    from tall_store import CountedChunks

    local = folder / "store"
    counted = CountedChunks(args.n, args.d, args.density, args.chunk)
    t_build, store = _common.timed(lambda: build_store_from_chunks(
        iter(counted), local, block_size=args.block_size, row_block_size=args.row_block_size))
    fs = s3fs.S3FileSystem(key=KEY, secret=SECRET, endpoint_url=procs.s3,
                           skip_instance_cache=True)
    fs.mkdir(BUCKET)
    url = f"s3://{BUCKET}/store"
    files = sorted(store.meta["files"])

    def upload():
        fs.put([str(local / rel) for rel in files], [f"{BUCKET}/store/{rel}" for rel in files])
        fs.put_file(str(local / "store.json"), f"{BUCKET}/store/store.json")

    t_upload, _ = _common.timed(upload)
    size = sum(f.stat().st_size for f in local.rglob("*") if f.is_file())
    return {"build_s": t_build, "upload_s": t_upload, "nnz": counted.nnz, "mib": size / 2**20,
            "row_blocks": store.n_row_blocks, "col_blocks": store.n_blocks}, url


def select_cmd(args, data: str, address: str) -> list[str]:
    return [sys.executable, "-m", "coreselect", "select", data, "-k", str(args.k), "--mode",
            "rows", "--engine", "dask", "--scheduler", address, "--json"]


def timed_select(args, data: str, procs: Processes) -> dict:
    seconds, peak, out, cpu = _common.run_command(select_cmd(args, data, procs.address),
                                                  env=procs.env)
    res = json.loads(out)
    return {"seconds": seconds, "selected": res["selected"], "objective": res["objective"],
            "peak_mib": peak}


def killed_select(args, url: str, procs: Processes) -> dict:
    """The S3 run with the worker that starts the first task killed there, and a new one."""
    os.unlink(str(procs.hold) + ".claim")  # armed: the first task to start holds
    start = time.perf_counter()
    proc = subprocess.Popen(select_cmd(args, url, procs.address), env=procs.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(procs.hold.exists, "a worker holding in its first task", proc, timeout=3600)
        held = time.perf_counter() - start
        os.kill(int(procs.hold.read_text()), signal.SIGKILL)
        procs.worker("replacement", hold=False)
        out, err = proc.communicate(timeout=7200)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the run with a killed worker failed: {err.strip()[-500:]}")
    res = json.loads(out)
    return {"seconds": time.perf_counter() - start, "held_at_s": held,
            "selected": res["selected"], "objective": res["objective"]}


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--n", type=int, default=2_600_000, help="samples (rows) of the store")
    p.add_argument("--d", type=int, default=100_000, help="features (columns)")
    p.add_argument("--density", type=float, default=0.001,
                   help="share of non-zero background cells")
    p.add_argument("--k", type=int, default=50, help="features to select")
    p.add_argument("--chunk", type=int, default=250_000, help="rows drawn per build chunk")
    p.add_argument("--block-size", type=int, default=16384, help="columns per column block")
    p.add_argument("--row-block-size", type=int, default=262144, help="rows per row block")
    p.add_argument("--workers", type=int, default=2, help="dask worker processes")
    p.add_argument("--reference-max-nnz", type=float, default=5e7,
                   help="largest store whose in-memory selection is computed for comparison")
    args = p.parse_args()
    if args.quick:
        args.n, args.d, args.density, args.k = 20_000, 2_000, 0.01, 5
        args.chunk, args.block_size, args.row_block_size = 10_000, 512, 5_000
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    procs = Processes(folder, folder / "hold")
    rows = []
    try:
        for i in range(args.workers):
            procs.worker(f"w{i}")
        with procs.client() as client:
            client.wait_for_workers(args.workers, timeout=300)
            client.run(_warm)
        info, url = build(args, folder, procs)
        local = str(folder / "store")
        ref = None
        if info["nnz"] <= args.reference_max_nnz:
            import coreselect

            t_ref, r = _common.timed(lambda: coreselect.select(local, k=args.k))
            ref = {"seconds": t_ref, "selected": [int(v) for v in r.selected],
                   "objective": r.objective}
        results = {"local": timed_select(args, local, procs),
                   "s3": timed_select(args, url, procs)}
        results["s3, worker killed"] = killed_select(args, url, procs)
        base = ref or results["local"]
        if ref is not None:
            rows.append(["in-memory (this process, centralized)", _common.fmt(ref["seconds"]),
                         "reference", ""])
        for name, res in results.items():
            same = res["selected"] == base["selected"] and res["objective"] == base["objective"]
            note = ""
            if name == "s3, worker killed":
                note = (f"worker killed {res['held_at_s']:.1f} s into the run (its first "
                        "task), a replacement started")
            rows.append([f"cluster, {name}", _common.fmt(res["seconds"]),
                         ("same as in-memory" if ref is not None else "same as local")
                         if same else "DIFFERENT", note])
        rows.append(["ratio S3 / local", _common.fmt(results["s3"]["seconds"]
                                                     / results["local"]["seconds"]), "", ""])
    finally:
        procs.close()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    title = (f"cluster over S3: n={args.n:,}, d={args.d:,}, density={args.density}, "
             f"k={args.k}, {args.workers} dask workers x 1 thread")
    body = (f"{info['nnz']:,} non-zeros, {info['row_blocks']} row blocks x "
            f"{info['col_blocks']} column blocks, {info['mib']:.0f} MiB; build "
            f"{info['build_s']:.1f} s, upload to the S3 server {info['upload_s']:.1f} s.\n\n"
            + _common.md_table(["run (select --mode rows --engine dask --scheduler)", "seconds",
                                "selection", "notes"], rows))
    _common.emit(title, body, args.out)


if __name__ == "__main__":
    main()
