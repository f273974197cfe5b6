"""Hostile-input campaign (issue 17): generated attempts in 17 classes, each run in a child
process with a deadline and an address-space limit, classified as *behaved* or *escaped*.

Behaved: the CLI exits 2 with one line on stderr (no "internal error", no traceback), or the
API raises a typed ``coreselect`` error, or the run succeeds with a correct result; and no
input file (named or found) was modified, and an interrupted run leaves no new output.
Escaped: anything else (a hang past the deadline, a crash or signal death, exit 1 "please
report", several lines, a modified input, a partial output, a silently ignored option, a
MemoryError where a bomb should be refused before allocating).

    python tests/tools/hostile.py                    # default: 4 attempts per class (~64), < 10 min
    python tests/tools/hostile.py --quick            # 1 attempt per class, deadlines capped at 30 s
    python tests/tools/hostile.py --classes bombs,downloads -n 6 --out hostile.json

Prints a Markdown table of attempts and escapes per class, and the escapes (class, attempt,
reason). Every attempt works in its own temporary folder, with ``$COREDATA`` pointed at a
writable copy of the one dataset it needs, so nothing outside is touched.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PY = sys.executable
SHARED = Path(os.environ.get("COREDATA") or (ROOT / ".." / "shared" / "data")).resolve()
AS_LIMIT = 3 << 30  # address space of each attempt


@dataclass
class Attempt:
    cls: str
    name: str
    argv: list[str] | None = None  # CLI arguments after `python -m coreselect`
    code: str | None = None  # or a Python snippet (API): prints TYPED/OK
    cwd: Path | None = None
    env: dict = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)  # must be unchanged afterwards
    must_not_exist: list[Path] = field(default_factory=list)  # unless the run succeeded
    signal_after: tuple[int, float] | None = None
    deadline: float = 60.0
    ok_allowed: bool = True  # success counts as behaved (if check passes)
    check: Callable[[subprocess.CompletedProcess], str | None] | None = None  # reason or None
    forbid_text: tuple[str, ...] = ()  # an exit-2 message containing these is an escape
    after: Callable[[subprocess.CompletedProcess], str | None] | None = None  # on any ending


# ------------------------------------------------------------------------------- fixtures
def _dataset(folder: Path, n: int = 60, d: int = 8, L: int = 3, seed: int = 0):
    import numpy as np

    from coreselect.io import from_arrays

    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, (n, d)).astype(float)
    Y = (rng.random((n, L)) < 0.4).astype(int)
    Y[:, 0] |= (X[:, 0] > 1).astype(int)
    return from_arrays(X, Y, feature_names=[f"f{j}" for j in range(d)], label_names=[f"y{j}" for j in range(L)])


def _write(ds, path: Path) -> Path:
    from coreselect.io import write

    write(ds, path)
    return path


def _coredata_copy(tmp: Path) -> Path:
    """A writable copy of mulan/emotions (the only registry dataset the attempts need)."""
    cd = tmp / "coredata"
    src = SHARED / "mulan" / "emotions"
    dst = cd / "mulan" / "emotions"
    dst.mkdir(parents=True)
    for f in ("emotions.arff", "emotions.xml"):
        shutil.copyfile(src / f, dst / f)
    return cd


def _digest(paths: list[Path]) -> dict[str, str | None]:
    out = {}
    for p in paths:
        try:
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ("dir" if p.is_dir() else None)
        except OSError:
            out[str(p)] = "unreadable"
    return out


def _one_line_refusal(r: subprocess.CompletedProcess) -> bool:
    err = r.stderr.strip()
    return (r.returncode == 2 and len(err.splitlines()) == 1 and "internal error" not in err
            and "Traceback" not in err)


# --------------------------------------------------------------------------- hostile server
def _trickle(conn, data: bytes, pause: float = 0.3) -> None:
    end = time.monotonic() + 60
    for i in range(len(data)):
        if time.monotonic() > end:
            return
        conn.sendall(data[i:i + 1])
        time.sleep(pause)


RAW = {
    "trickle_status": lambda c: _trickle(c, b"HTTP/1.1 200 OK\r\n" * 200),
    "trickle_headers": lambda c: (c.sendall(b"HTTP/1.1 200 OK\r\n"), _trickle(c, b"X-A: b\r\n" * 200)),
    "bad_status": lambda c: c.sendall(b"garbage\r\n\r\n"),
    "many_headers": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(150))
                                        + b"\r\n"),
    "long_header": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"),
    "http09": lambda c: c.sendall(b"@relation x\n" * 100),
    "bad_chunked": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n"),
    "wrong_length": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\nabc"),
    "gzip_garbage": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nxxxxx"),
}


class HostileServer:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    @staticmethod
    def _one(conn):
        try:
            conn.settimeout(60)
            req = b""
            while b"\r\n\r\n" not in req and len(req) < 65536:
                more = conn.recv(4096)
                if not more:
                    return
                req += more
            mode = req.split(b" ", 2)[1].decode().strip("/").split("/")[0]
            RAW.get(mode, lambda c: c.sendall(b"HTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n"))(conn)
        except OSError:
            pass
        finally:
            conn.close()


# ------------------------------------------------------------------------------ generators
# Each returns a list of n Attempts; ``tmp`` is a fresh folder for the class.

def gen_overwrite_found(n, tmp, rng):
    out = []
    opts = [["--out", "d.xml"], ["--coverage", "d.xml"], ["--export", "d.xml"], ["--out", "d.arff"],
            ["--export", "d.arff"], ["--coverage", "d.arff"], ["--out", "D.xml"]]
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        _write(_dataset(w, seed=i), w / "d.arff")
        opt = opts[i % len(opts)]
        out.append(Attempt("overwrite_found", " ".join(opt), argv=["select", "d.arff", "-k", "3", "-q", *opt], cwd=w,
                           inputs=[w / "d.arff", w / "d.xml"]))
    return out


def gen_name_resolution(n, tmp, rng):
    out = []
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        cd = _coredata_copy(w)
        arff, xml = cd / "mulan/emotions/emotions.arff", cd / "mulan/emotions/emotions.xml"
        variants = [["select", "emotions", "-k", "3", "-q", "--out", str(arff)],
                    ["select", "emotions", "-k", "3", "-q", "--export", str(arff)],
                    ["select", "emotions", "-k", "3", "-q", "--coverage", str(xml)],
                    ["select", "mulan/emotions/emotions.arff", "-k", "3", "-q", "--out", str(xml)],
                    ["select", "emotions", "-k", "3", "-q", "--export", "mulan/emotions/emotions.arff"]]
        argv = variants[i % len(variants)]
        out.append(Attempt("name_resolution", " ".join(argv[1:2] + argv[-2:]), argv=argv, cwd=cd,
                           env={"COREDATA": str(cd)}, inputs=[arff, xml]))
    return out


_EVAL = ["--methods", "random", "--k", "2", "--folds", "2", "--quiet"]


def gen_evaluate_self_overwrite(n, tmp, rng):
    out = []
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        name = ["results.csv", "summary.md.csv", "results.csv"][i % 3]
        sub = w if i % 2 == 0 else w / "ev"
        sub.mkdir(exist_ok=True)
        data = _write(_dataset(w, seed=i), sub / name)
        outdir = "." if sub == w else "ev"
        out.append(Attempt("evaluate_self_overwrite", f"{data.relative_to(w)} --out {outdir}",
                           argv=["evaluate", str(data.relative_to(w)), "--labels", "3", *_EVAL, "--out", outdir],
                           cwd=w, inputs=[data], deadline=120))
    return out


def gen_evaluate_partial(n, tmp, rng):
    out = []
    # each one an output evaluate writes by default (the five measures, summary, results)
    blockers = ["macro_f1.png", "summary.md", "results.csv", "example_f1.png", "micro_f1.png"]
    for i in range(n):
        w = tmp / f"a{i}"
        (w / "ev").mkdir(parents=True)
        data = _write(_dataset(w, seed=i), w / "d.csv")
        old = {"results.csv": "old,results\n", "summary.md": "old summary\n"}
        block = blockers[i % len(blockers)]
        for f, text in old.items():
            if f != block:
                (w / "ev" / f).write_text(text)
        (w / "ev" / block).mkdir()
        keep = [w / "ev" / f for f in old if f != block]

        def check(r, keep=keep):
            return None if r.returncode != 0 else "succeeded although an output is a folder"
        out.append(Attempt("evaluate_partial", f"ev/{block} is a folder",
                           argv=["evaluate", "d.csv", "--labels", "3", *_EVAL, "--out", "ev"], cwd=w,
                           inputs=[data, *keep], deadline=120, check=check))
    return out


def gen_signals(n, tmp, rng):
    out = []
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        _write(_dataset(w, n=3000, d=60, seed=i), w / "d.csv")
        sig = [signal.SIGINT, signal.SIGTERM][i % 2]
        kind = i % 3
        if kind == 0:
            argv = ["select", "d.csv", "--labels", "3", "-k", "20", "--mode", "rows", "--row-shards", "8", "-q",
                    "--out", "res.json", "--coverage", "cov.png"]
            outs = [w / "res.json", w / "cov.png"]
        elif kind == 1:
            argv = ["evaluate", "d.csv", "--labels", "3", "--methods", "random,gds", "--k", "5,10", "--folds", "3",
                    "--quiet", "--out", "ev"]
            outs = [w / "ev" / "results.csv", w / "ev" / "summary.md"]
        else:
            argv = ["select", "d.csv", "--labels", "3", "-k", "20", "--mode", "distributed", "--engine", "local",
                    "--workers", "2", "-q", "--out", "x.json"]
            outs = [w / "x.json"]
        delay = [1.5, 2.5, 3.5][i % 3]
        out.append(Attempt("signals", f"{signal.Signals(sig).name}@{delay}s {argv[0]} {argv[argv.index('-k') if '-k' in argv else 2]}"
                           f" kind{kind}", argv=argv, cwd=w, inputs=[w / "d.csv"], must_not_exist=outs,
                           signal_after=(sig, delay), deadline=90))
    return out


def gen_parquet_nonscalar(n, tmp, rng):
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds = {
        "list": lambda m: pa.array([[i, i + 1] for i in range(m)], pa.list_(pa.int64())),
        "struct": lambda m: pa.array([{"a": i} for i in range(m)], pa.struct([("a", pa.int64())])),
        "map": lambda m: pa.array([[("k", i)] for i in range(m)], pa.map_(pa.string(), pa.int64())),
        "large_list": lambda m: pa.array([[float(i)] for i in range(m)], pa.large_list(pa.float64())),
        "fixed_list": lambda m: pa.array([[i, i] for i in range(m)], pa.list_(pa.int32(), 2)),
        "list_of_text": lambda m: pa.array([["x"] * (i % 3) for i in range(m)], pa.list_(pa.string())),
    }
    out = []
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        kind = list(kinds)[i % len(kinds)]
        m = 40
        cols = {"f0": pa.array([float(j % 5) for j in range(m)]), "weird": kinds[kind](m),
                "y": pa.array([j % 2 for j in range(m)])}
        pq.write_table(pa.table(cols), w / "t.parquet")
        out.append(Attempt("parquet_nonscalar", kind, argv=["select", "t.parquet", "--labels", "y", "-k", "2", "-q"],
                           cwd=w, inputs=[w / "t.parquet"], ok_allowed=False))
    return out


_API = """
import sys, numpy as np, scipy.sparse as sp
import coreselect
from coreselect.errors import CoreselectError
rng = np.random.default_rng(0)
try:
{body}
    print("OK")
except CoreselectError as exc:
    print("TYPED", type(exc).__name__, str(exc)[:200])
"""


def _api(body: str) -> str:
    return _API.format(body="\n".join("    " + line for line in body.strip().splitlines()))


def gen_api_complex(n, tmp, rng):
    bodies = {
        "complex X": "X = rng.random((30, 4)) + 1j * rng.random((30, 4)); Y = rng.integers(0, 2, (30, 2))\n"
                     "coreselect.select(X, Y, k=2)",
        "complex X zero imag": "X = rng.random((30, 4)).astype(complex); Y = rng.integers(0, 2, (30, 2))\n"
                               "coreselect.select(X, Y, k=2)",
        "complex Y": "X = rng.random((30, 4)); Y = rng.integers(0, 2, (30, 2)).astype(complex)\n"
                     "coreselect.select(X, Y, k=2)",
        "complex sparse X": "X = sp.random(30, 6, density=0.3, format='csr', random_state=0).astype(complex)\n"
                            "Y = rng.integers(0, 2, (30, 2)); coreselect.select(X, Y, k=2)",
        "complex GDSSelector": "X = rng.random((30, 4)) + 1j; Y = rng.integers(0, 2, (30, 2))\n"
                               "coreselect.GDSSelector(k=2).fit(X, Y)",
    }
    names = list(bodies)
    return [Attempt("api_complex", names[i % len(names)], code=_api(bodies[names[i % len(names)]]), ok_allowed=False,
                    cwd=tmp) for i in range(n)]


def gen_case_xml(n, tmp, rng):
    out = []
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        ds = _dataset(w, seed=i)
        _write(ds, w / "d.arff")
        other = _dataset(w, L=2, seed=i + 100)
        (w / "o").mkdir()
        _write(other, w / "o" / "Emo.arff")
        shutil.copyfile(w / "o" / "Emo.xml", w / ["Emo.xml", "EMO.xml", "emo.XML"][i % 3])
        target = ["emo.arff", "Emo.arff", "emo.arff"][i % 3]
        labels = list(ds.label_names)

        def check(r, w=w, target=target, labels=labels):
            if r.returncode != 0:
                return None
            sys.path.insert(0, str(SRC))
            from coreselect.io import read
            try:
                back = read(w / target)
            except Exception as exc:  # noqa: BLE001
                return None if type(exc).__module__.startswith("coreselect") else f"read back: {exc!r}"
            return None if list(back.label_names) == labels else f"read back labels {back.label_names}, not {labels}"
        out.append(Attempt("case_xml", f"export {target} beside {['Emo.xml', 'EMO.xml', 'emo.XML'][i % 3]}",
                           argv=["select", "d.arff", "-k", "3", "-q", "--export", target], cwd=w,
                           inputs=[w / "d.arff", w / "d.xml"], check=check))
    return out


def gen_malformed_sparse(n, tmp, rng):
    cases = {
        "column index out of range": "ind = np.array([0, 9, 1], np.int32); ptr = np.array([0, 1, 2, 3], np.int32)",
        "negative column index": "ind = np.array([0, -2, 1], np.int32); ptr = np.array([0, 1, 2, 3], np.int32)",
        "indptr past indices": "ind = np.array([0, 1, 1], np.int32); ptr = np.array([0, 1, 2, 50], np.int32)",
        "indptr not monotone": "ind = np.array([0, 1, 1], np.int32); ptr = np.array([0, 2, 1, 3], np.int32)",
        "huge column index": "ind = np.array([0, 2**31 - 1, 1], np.int32); ptr = np.array([0, 1, 2, 3], np.int32)",
    }
    names = list(cases)
    out = []
    for i in range(n):
        name = names[i % len(names)]
        body = (cases[name] + "\nX = sp.csr_matrix((3, 3)); X.data = np.ones(3); X.indices = ind; X.indptr = ptr\n"
                "Y = np.array([[0, 1], [1, 0], [1, 1]])\ncoreselect.select(X, Y, k=1)")
        out.append(Attempt("malformed_sparse", name, code=_api(body), ok_allowed=False, cwd=tmp))
    return out


def gen_downloads(n, tmp, rng, server: HostileServer | None = None):
    out = []
    modes = list(RAW) + ["inf", "nan", "fifo"]
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        mode = modes[i % len(modes)]
        env = {"COREDATA": "", "COREDATA_HOME": str(w / "cache")}
        argv = ["datasets", "fetch", "emotions", "-q", "--deadline", "3", "--timeout", "2"]
        if mode in ("inf", "nan"):
            env["COREDATA_MIRROR"] = f"{server.url}/trickle_status"
            argv[-3] = mode
        elif mode == "fifo":
            (w / "mirror" / "mulan" / "emotions").mkdir(parents=True)
            os.mkfifo(w / "mirror" / "mulan" / "emotions" / "emotions.arff")
            env["COREDATA_MIRROR"] = (w / "mirror").as_uri()
        else:
            env["COREDATA_MIRROR"] = f"{server.url}/{mode}"
            if i >= len(modes) and mode not in ("trickle_status", "trickle_headers"):
                argv = ["select", "emotions", "-k", "2", "-q"]  # through name resolution
        out.append(Attempt("downloads", f"{mode}: {' '.join(argv[:2])}", argv=argv, cwd=w, env=env, deadline=20,
                           ok_allowed=False))
    return out


def gen_workers_huge(n, tmp, rng):
    w = tmp / "w"
    w.mkdir()
    _write(_dataset(w), w / "d.csv")
    variants = [["select", "d.csv", "--labels", "3", "-k", "2", "-q", "--mode", "distributed", "--engine", "local",
                 "--workers", "1000000"],
                ["select", "d.csv", "--labels", "3", "-k", "2", "-q", "--mode", "distributed", "--engine", "dask",
                 "--workers", "1000000"],
                ["evaluate", "d.csv", "--labels", "3", *_EVAL, "--out", "ev", "--jobs", "1000000"],
                ["select", "d.csv", "--labels", "3", "-k", "2", "-q", "--mode", "rows", "--workers", "100000"]]
    return [Attempt("workers_huge", " ".join(v[v.index("--workers") if "--workers" in v else -2:]), argv=v, cwd=w,
                    inputs=[w / "d.csv"], deadline=30, check=lambda r: None) for v in
            (variants[i % len(variants)] for i in range(n))]


def gen_scheduler_killed(n, tmp, rng):
    out = []
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        _write(_dataset(w, n=3000, d=400, seed=i), w / "d.csv")
        code = f"""
import os, signal, subprocess, sys, time, threading
sf = {str(w / 'sched.json')!r}
sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                          "--dashboard-address", ":0", "--scheduler-file", sf], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
for _ in range(300):
    if os.path.exists(sf) and os.path.getsize(sf):
        break
    time.sleep(0.1)
import json
addr = json.load(open(sf))["address"]
work = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", addr, "--nthreads", "1",
                         "--no-dashboard", "--death-timeout", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(3)
threading.Timer({1.0 + i}, lambda: os.kill(sched.pid, signal.SIGKILL)).start()
r = subprocess.run([sys.executable, "-m", "coreselect", "select", "d.csv", "--labels", "3", "-k", "30", "-q",
                    "--mode", "distributed", "--engine", "dask", "--scheduler", addr, "--partitions", "40"],
                   capture_output=True, text=True, timeout=120)
work.kill(); sched.kill()
if r.returncode == 0 and "objective h =" in r.stdout:
    print("OK")  # the run finished before the scheduler was killed: a complete result
sys.stderr.write(r.stderr); sys.exit(r.returncode)
"""
        out.append(Attempt("scheduler_killed", f"kill@{1.0 + i}s", code=code, cwd=w, deadline=150,
                           ok_allowed=True))
    return out


def gen_forged_store(n, tmp, rng):
    sys.path.insert(0, str(SRC))
    import numpy as np

    from coreselect.store import build_store
    from coreselect.store._format import file_crc32, meta_checksum

    base = tmp / "pristine"
    ds = _dataset(tmp, n=300, d=40, seed=5)
    build_store(ds.X, ds.Y, base, block_size=16, row_block_size=100, seed=1)
    meta = json.loads((base / "store.json").read_text())
    ref = subprocess.run([PY, "-m", "coreselect", "select", str(base), "-k", "4", "-q", "--json"],
                         capture_output=True, text=True, env=_env({}), timeout=120)
    reference = json.loads(ref.stdout)["selected"] if ref.returncode == 0 else None
    fields = ["n_samples", "n_features", "n_labels", "block_size", "n_blocks", "row_block_size", "n_row_blocks",
              "n_constant", "seed"]
    hows = {"x1e9": lambda x: x * 10**9, "x2": lambda x: x * 2, "plus1": lambda x: x + 1, "half": lambda x: x // 2,
            "negate": lambda x: -x, "nonint": lambda x: x + 0.5, "2**70": lambda x: 2**70}
    out = []
    for i in range(n):
        dst = tmp / f"s{i}"
        shutil.copytree(base, dst)
        if i % 5 == 4:  # n_codes raised, checksums re-forged
            nc = np.load(dst / "n_codes.npy")
            nc[rng.randrange(nc.size)] += 1
            np.save(dst / "n_codes.npy", nc)
            m = json.loads((dst / "store.json").read_text())
            m["files"]["n_codes.npy"] = [(dst / "n_codes.npy").stat().st_size, file_crc32(dst / "n_codes.npy")]
            what = "n_codes+1"
        else:
            m = json.loads(json.dumps(meta))
            f, h = rng.choice(fields), rng.choice(list(hows))
            m[f] = hows[h](m[f])
            if rng.random() < 0.5:  # keep the derived counts consistent
                if f in ("n_samples", "row_block_size") and h in ("x1e9", "2**70"):
                    m["row_block_size"] = m["n_samples"]
                try:
                    m["n_blocks"] = -(-m["n_features"] // m["block_size"])
                    m["n_row_blocks"] = -(-m["n_samples"] // m["row_block_size"])
                except (TypeError, ZeroDivisionError):
                    pass
            what = f"{f} {h}"
        noop = {k: v for k, v in m.items() if k != "checksum"} == {k: v for k, v in meta.items() if k != "checksum"}
        m["checksum"] = meta_checksum(m)
        (dst / "store.json").write_text(json.dumps(m))
        mode = ["centralized", "rows", "distributed", "verify"][i % 4]
        argv = (["store", "verify", str(dst)] if mode == "verify" else
                ["select", str(dst), "-k", "4", "-q", "--json", "--mode", mode])

        def check(r, mode=mode, reference=reference, what=what, noop=noop):
            if mode == "verify":  # the seed is only recorded (order.npy holds the shuffle)
                return None if noop or what.startswith("seed") else f"verify passed a forged {what}"
            try:
                sel = json.loads(r.stdout)["selected"]
            except (ValueError, KeyError):
                return "no JSON result"
            return None if sel == reference else f"selected {sel}, pristine {reference}"
        out.append(Attempt("forged_store", f"{what} ({mode})", argv=argv, cwd=tmp, check=check, deadline=60))
    return out


def _gzip_bomb(path: Path, header: bytes, line: bytes, mib: int) -> None:
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = co.compress(line * ((32 << 20) // len(line))) + co.flush()
    with open(path, "wb") as fh:
        fh.write(gzip.compress(header))
        for _ in range(mib // 32):
            fh.write(member)


def gen_bombs(n, tmp, rng):
    out = []
    for i in range(n):
        w = tmp / f"a{i}"
        w.mkdir()
        kind = i % 5
        if kind == 0:
            _gzip_bomb(w / "b.csv.gz", b"a,b,c,y\n", b"0,0,0,1\n", 2048)
            argv, what = ["select", "b.csv.gz", "--labels", "1", "-k", "2", "-q"], "gzip CSV 2 GiB"
        elif kind == 1:
            import numpy as np
            import pyarrow as pa
            import pyarrow.parquet as pq

            rows = 30_000_000
            t = pa.table({"f": pa.array(np.zeros(rows, np.int8)), "y": pa.array(np.zeros(rows, np.int8))})
            pq.write_table(t, w / "b.parquet", compression="zstd", write_statistics=False, data_page_size=1 << 30,
                           row_group_size=1 << 30, max_rows_per_page=1 << 30, write_batch_size=1 << 30)
            del t
            argv, what = ["select", "b.parquet", "--labels", "y", "-k", "1", "-q"], "Parquet RLE 30M rows"
        elif kind == 2:
            (w / "b.svm").write_text("1 999999999:1\n0 1:1\n")
            argv, what = ["select", "b.svm", "-k", "1", "-q"], "LIBSVM declared width"
        elif kind == 3:
            out.append(Attempt("bombs", "API CSR 3e9 columns", cwd=w, ok_allowed=False, code=_api(
                "X = sp.csr_matrix((np.ones(2), np.array([0, 5]), np.array([0, 1, 2])), shape=(2, 3 * 10**9))\n"
                "coreselect.select(X, np.array([[0, 1], [1, 0]]), k=1)"), forbid_text=("out of memory",)))
            continue
        else:
            _gzip_bomb(w / "b.arff.gz", b"@relation r\n@attribute a numeric\n@attribute y {0,1}\n@data\n",
                       b"0,1\n", 1024)
            argv, what = ["select", "b.arff.gz", "--labels", "1", "-k", "1", "-q"], "gzip ARFF 1 GiB"
        out.append(Attempt("bombs", what, argv=argv, cwd=w, ok_allowed=False, forbid_text=("out of memory",),
                           deadline=90))
    return out


def gen_p_huge(n, tmp, rng):
    w = tmp / "w"
    w.mkdir()
    _write(_dataset(w), w / "d.csv")
    values = ["1000000000000000000", str(2**63), str(2**64 + 1), "-1", "0"]
    out = []
    for i in range(n):
        v = values[i % len(values)]
        if i % 2:
            out.append(Attempt("p_huge", f"API p={v}", cwd=w, code=_api(
                f"X = rng.integers(0, 3, (30, 4)); Y = rng.integers(0, 2, (30, 2))\ncoreselect.select(X, Y, k=2, p={v})")))
        else:
            out.append(Attempt("p_huge", f"--p {v}", argv=["select", "d.csv", "--labels", "3", "-k", "2", "-q",
                                                           "--p", v], cwd=w, inputs=[w / "d.csv"]))
    return out


def gen_typed_errors(n, tmp, rng):
    w = tmp / "w"
    w.mkdir()
    ds = _dataset(w)
    for suf in ("csv", "parquet", "svm"):
        _write(ds, w / f"d.{suf}")
    api = ["coreselect.load(None)", "coreselect.load(3)", "coreselect.load(b'x')", "coreselect.load([1, 2])",
           "coreselect.load(3.5)"]
    cli = [["store", "build", "d.csv", "s", "--labels", "3", "--seed", str(2**64)],
           ["evaluate", "d.csv", "--labels", "3", *_EVAL, "--out", "ev", "--jobs", "1000000"],
           ["datasets", "info", "d.csv", "--labels", "3", "--missing", "bin"],
           ["datasets", "info", "d.parquet", "--labels", "3", "--missing", "bin"],
           ["datasets", "info", "d.svm", "--missing", "bin"]]
    out = []
    for i in range(n):
        if i % 2:
            a = api[(i // 2) % len(api)]
            out.append(Attempt("typed_errors", a, code=_api(a), ok_allowed=False, cwd=w))
        else:
            v = cli[(i // 2) % len(cli)]
            # --jobs beyond the machine may be capped (success) or refused; never an internal error
            out.append(Attempt("typed_errors", " ".join(v[:2] + v[-2:]), argv=v, cwd=w, ok_allowed="--jobs" in v,
                               inputs=[w / "d.csv"]))
    return out


def gen_ignored_options(n, tmp, rng):
    sys.path.insert(0, str(SRC))
    from coreselect.store import build_store

    w = tmp / "w"
    w.mkdir()
    ds = _dataset(w)
    _write(ds, w / "d.csv")
    build_store(ds.X, ds.Y, w / "s", seed=1)
    variants = [["evaluate", "d.csv", "--labels", "3", *_EVAL, "--out", "ev", "--lam", "0.3"],
                ["evaluate", "d.csv", "--labels", "3", *_EVAL, "--out", "ev", "--relevance", "nmi"],
                ["evaluate", "d.csv", "--labels", "3", "--methods", "cgds", "--k", "2", "--folds", "2", "--quiet",
                 "--out", "ev2", "--lam", "0.3", "--lam-sweep", "0,1"],
                ["select", "s", "-k", "2", "-q", "--seed", "5"]]
    return [Attempt("ignored_options", " ".join(v[-2:]), argv=v, cwd=w, ok_allowed=False, deadline=120)
            for v in (variants[i % len(variants)] for i in range(n))]



# ------------------------------------------------------------------ readers (issues 29, 31)
# Row shards read as one dataset, and declared-size bombs in LIBSVM/XMC headers. Kept in a
# block of their own (helper "readers"); registered in CLASSES by READER_CLASSES below.
def _svm_shards(folder: Path, n_files: int = 3, rows: int = 200, header: bool = False, seed: int = 0) -> list[Path]:
    import numpy as np

    r = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n_files):
        lines = [",".join(map(str, sorted(set(r.integers(0, 4, 2).tolist())))) + " "
                 + " ".join(f"{j}:{r.integers(1, 4)}" for j in sorted(set(r.integers(0, 20, 4).tolist())))
                 for _ in range(rows)]
        p = folder / f"part-{k:02d}.svm"
        p.write_text((f"{rows} 20 4\n" if header else "") + "\n".join(lines) + "\n")
        out.append(p)
    return out


def gen_shards(n, tmp, rng):
    """Many files as one dataset (a folder, a glob): each bad case is one line naming the file."""
    kinds = ["glob matches nothing", "spaces disagree", "bad line mid-file", "truncated gz shard",
             "shard vanishes after listing", "mixed formats", "header in one shard only"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w = tmp / f"s{i}"
        files = _svm_shards(w / "d", header=kind == "spaces disagree", seed=i)
        data = "d"
        culprit = None
        code = None
        if kind == "glob matches nothing":
            data = "d/*.xmc"
        elif kind == "spaces disagree":
            culprit = files[1]
            culprit.write_text(culprit.read_text().replace("200 20 4", "200 21 4", 1))
        elif kind == "bad line mid-file":
            culprit = files[2]
            lines = culprit.read_text().splitlines()
            lines[150] = "1 3:1 4:oops"
            culprit.write_text("\n".join(lines) + "\n")
        elif kind == "truncated gz shard":
            culprit = files[0].with_name("part-00.svm.gz")
            culprit.write_bytes(gzip.compress(files[0].read_bytes() * 20)[:-300])
            files[0].unlink()
        elif kind == "shard vanishes after listing":
            culprit = files[1]
            code = _api(f"from coreselect.io.chunks import open_chunks\nds = open_chunks('d')\nds.scan()\n"
                        f"import os; os.remove({str(culprit)!r})\nfor c in ds.chunks(): pass")
        elif kind == "mixed formats":
            culprit = w / "d" / "zz.csv"
            culprit.write_text("a,b\n1,0\n")
        else:
            culprit = files[1]
            culprit.write_text("200 20 4\n" + culprit.read_text())

        def check_named(r, culprit=culprit):
            return None if culprit is None or culprit.name in r.stderr + r.stdout else "the message does not name the file"

        if code is not None:
            out.append(Attempt("shards", kind, code=code, cwd=w, ok_allowed=False, check=check_named))
        else:
            out.append(Attempt("shards", kind, argv=["select", data, "-k", "2", "-q", "--out", "o.json"], cwd=w,
                               ok_allowed=False, inputs=[f for f in (w / "d").iterdir()] if (w / "d").exists() else [],
                               must_not_exist=[w / "o.json"], check=check_named))
    return out


def gen_declared_bombs(n, tmp, rng):
    """LIBSVM/XMC headers declaring far more labels or features than the file holds (issue 31:
    an XMC header declaring 64x the labels present reached 3.6 GiB): memory must follow the
    data present, so the run either refuses in one line or finishes within the limits."""
    out = []
    for i in range(n):
        w = tmp / f"b{i}"
        w.mkdir()
        kind = i % 4
        import numpy as np

        r = np.random.default_rng(i)
        rows = 20_000
        labs = [",".join(map(str, sorted(set(r.integers(0, 1000, 5).tolist())))) for _ in range(rows)]
        present = sum(len(x.split(",")) for x in labs)
        feats = [" ".join(f"{j}:1" for j in sorted(set(r.integers(0, 100, 5).tolist()))) for _ in range(rows)]
        body = "\n".join(f"{a} {b}" for a, b in zip(labs, feats)) + "\n"
        if kind == 0:
            name, head, what = "b.xmc", f"{rows} 100 {64 * present}\n", "XMC labels 64x present"
        elif kind == 1:
            name, head, what = "b.xmc", f"{rows} {64 * rows * 5} 1000\n", "XMC features 64x present"
        elif kind == 2:
            name, head, what = "b.svm", f"{rows} 100 {2**20}\n", "LIBSVM labels at the floor"
        else:
            name, head, what = "b.xmc", f"{rows} 100 {10**12}\n", "XMC labels 10^12"
        (w / name).write_text(head + body)
        out.append(Attempt("declared_bombs", what, argv=["select", name, "-k", "2", "-q"], cwd=w,
                           inputs=[w / name], deadline=90, forbid_text=("out of memory",)))
    return out


READER_CLASSES: dict[str, Callable] = {"shards": gen_shards, "declared_bombs": gen_declared_bombs}

CLASSES: dict[str, Callable] = {
    "overwrite_found": gen_overwrite_found,
    "name_resolution": gen_name_resolution,
    "evaluate_self_overwrite": gen_evaluate_self_overwrite,
    "evaluate_partial": gen_evaluate_partial,
    "signals": gen_signals,
    "parquet_nonscalar": gen_parquet_nonscalar,
    "api_complex": gen_api_complex,
    "case_xml": gen_case_xml,
    "malformed_sparse": gen_malformed_sparse,
    "downloads": gen_downloads,
    "workers_huge": gen_workers_huge,
    "scheduler_killed": gen_scheduler_killed,
    "forged_store": gen_forged_store,
    "bombs": gen_bombs,
    "p_huge": gen_p_huge,
    "typed_errors": gen_typed_errors,
    "ignored_options": gen_ignored_options,
}
CLASSES.update(READER_CLASSES)
#: Owner of each class's fix (issue 17 was split between helpers).
OWNER = {"overwrite_found": "outputs", "name_resolution": "outputs", "evaluate_self_overwrite": "outputs",
         "evaluate_partial": "outputs", "signals": "outputs", "case_xml": "outputs", "api_complex": "api",
         "malformed_sparse": "api", "workers_huge": "options", "p_huge": "options", "ignored_options": "options",
         "typed_errors": "api/options/hostile", "shards": "readers", "declared_bombs": "readers"}
EXPENSIVE = {"scheduler_killed": 2, "bombs": 5, "signals": 6, "declared_bombs": 4}  # attempt caps by default


# ----------------------------------------------------------------------------------- runner
def _env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORESELECT_DEBUG")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    env.setdefault("COREDATA", str(SHARED))
    env["COREDATA_HOME"] = env.get("COREDATA_HOME") or tempfile.mkdtemp(prefix="hostile-cache-")
    for k, v in extra.items():
        if v == "" and k != "COREDATA":  # COREDATA= (empty): no local copy; unset: ../shared/data
            env.pop(k, None)
        else:
            env[k] = v
    return env


def _limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
    # As from a terminal: a campaign started in the background (`&`) hands its children SIGINT
    # ignored, which coreselect keeps ignored on purpose (nohup), and the signal class would
    # then test nothing.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_attempt(a: Attempt) -> tuple[bool, str, float]:
    """(behaved, reason, seconds); ``a.after`` (the message names the file, nothing was left)
    may turn a behaved ending into an escape."""
    ok, reason, secs, r = _run_attempt(a)
    if ok and a.after is not None and r is not None:
        why = a.after(r)
        if why:
            return False, f"{reason}, but {why}", secs
    return ok, reason, secs


def _run_attempt(a: Attempt):
    before = _digest(a.inputs)
    existed = {str(p): p.exists() for p in a.must_not_exist}
    cmd = [PY, "-m", "coreselect", *a.argv] if a.argv is not None else [PY, "-c", a.code]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=a.cwd, env=_env(a.env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_limit, start_new_session=True)
    timer = None
    if a.signal_after is not None:
        sig, delay = a.signal_after
        timer = threading.Timer(delay, lambda: proc.poll() is None and proc.send_signal(sig))
        timer.start()
    try:
        out, err = proc.communicate(timeout=a.deadline)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return False, f"hang: still running after {a.deadline:g} s", time.monotonic() - started, None
    finally:
        if timer is not None:
            timer.cancel()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the run's own children (workers), if any
        except OSError:
            pass
    secs = time.monotonic() - started
    r = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    after = _digest(a.inputs)
    changed = [Path(p).name for p in before if before[p] != after[p]]
    if changed:
        return False, f"input modified: {', '.join(changed)}", secs, r
    first = (err.strip().splitlines() or [""])[-1][:160]
    if r.returncode < 0:
        return False, f"killed by {signal.Signals(-r.returncode).name}", secs, r
    if a.signal_after is not None:
        if r.returncode == 0:
            return True, "finished before the signal", secs, r
        left = [Path(p).name for p in existed if not existed[p] and Path(p).exists()]
        return (not left, f"interrupted, left {left}" if left else "interrupted cleanly", secs, r)
    if a.code is not None and a.argv is None:
        if "TYPED" in out:
            bad = [t for t in a.forbid_text if t in out.lower()]
            return (not bad, "typed error" + (f" but {bad[0]}" if bad else ""), secs, r)
        if r.returncode == 0 and "OK" in out:
            if not a.ok_allowed:
                return False, "accepted (should be refused)", secs, r
            reason = a.check(r) if a.check else None
            return (reason is None, reason or "ok", secs, r)
        if r.returncode == 2 and len(err.strip().splitlines()) == 1:
            return True, "one line, exit 2", secs, r
        last = [ln for ln in err.strip().splitlines() if ln.strip()][-1:] or [f"exit {r.returncode}"]
        return False, f"exit {r.returncode}: {last[0][:160]}", secs, r
    if _one_line_refusal(r):
        bad = [t for t in a.forbid_text if t in err.lower()]
        if bad:
            return False, f"exit 2 but {bad[0]}: {first}", secs, r
        return True, "one line, exit 2", secs, r
    if r.returncode == 0:
        if not a.ok_allowed:
            return False, "accepted (should be refused)", secs, r
        reason = a.check(r) if a.check else None
        return (reason is None, reason or "ok", secs, r)
    lines = len(err.strip().splitlines())
    return False, f"exit {r.returncode}, {lines} line(s): {first}", secs, r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="One attempt per class (-n to change), deadlines capped at 30 s.")
    ap.add_argument("-n", type=int, default=None, help="Attempts per class (default 4, fewer for the slow classes; --quick: 1).")
    ap.add_argument("--classes", default=None, help="Comma-separated subset of the classes: " + ", ".join(CLASSES) + ".")
    ap.add_argument("--seed", type=int, default=0, help="Seed of the random choices of the generators.")
    ap.add_argument("--out", default=None, help="Also write the table and every attempt as JSON to this file.")
    args = ap.parse_args(argv)
    names = list(CLASSES) if not args.classes else [c.strip() for c in args.classes.split(",") if c.strip()]
    unknown = [c for c in names if c not in CLASSES]
    if unknown:
        ap.error(f"unknown classes {unknown}; known: {', '.join(CLASSES)}")
    per = args.n if args.n is not None else (1 if args.quick else 4)
    sys.path.insert(0, str(SRC))
    os.environ.setdefault("COREDATA", str(SHARED))
    rng = random.Random(args.seed)
    server = HostileServer()
    rows, records = [], []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hostile-") as root:
        for cls in names:
            n = per if args.n is not None or args.quick else min(per, EXPENSIVE.get(cls, per))
            if args.quick:
                n = min(n, 2)
            tmp = Path(root) / cls
            tmp.mkdir()
            gen = CLASSES[cls]
            try:
                attempts = gen(n, tmp, rng, server) if cls == "downloads" else gen(n, tmp, rng)
            except Exception as exc:  # noqa: BLE001 - a generator that cannot set up is reported, not fatal
                rows.append((cls, 0, 0, f"setup failed: {exc!r}"[:80]))
                continue
            escapes = 0
            for a in attempts:
                if args.quick:
                    a.deadline = min(a.deadline, 30.0)  # a hang is a hang after 30 s too
                ok, reason, secs = run_attempt(a)
                escapes += not ok
                records.append({"class": cls, "attempt": a.name, "behaved": ok, "reason": reason,
                                "seconds": round(secs, 2)})
                print(f"  {'ok ' if ok else 'ESC'} {cls:<24} {a.name[:48]:<48} {reason[:90]}", file=sys.stderr,
                      flush=True)
            rows.append((cls, len(attempts), escapes, OWNER.get(cls, "hostile")))
    total = sum(r[1] for r in rows)
    esc = sum(r[2] for r in rows)
    print(f"\n# Hostile-input campaign ({total} attempts, {time.monotonic() - started:.0f} s, seed {args.seed})\n")
    print("| class | attempts | escapes | behaved | fix owner |")
    print("|---|---:|---:|---:|---|")
    for cls, n, e, owner in rows:
        print(f"| {cls} | {n} | {e} | {n - e} | {owner} |")
    print(f"| **all** | {total} | {esc} | {total - esc} ({100 * (total - esc) / max(total, 1):.1f} %) | |")
    escaped = [r for r in records if not r["behaved"]]
    if escaped:
        print("\n## Escapes\n")
        for r in escaped:
            print(f"- {r['class']}: `{r['attempt']}`: {r['reason']}")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": [dict(zip(("class", "attempts", "escapes", "owner"), r))
                                                       for r in rows], "attempts": records}, indent=1))
    return 0


# ============================================================================ issue 31 (helper "hostile")
# Checkpoints, object storage and scratch folders: forged and damaged checkpoints, folders
# holding user files, frozen and dying S3 servers on 127.0.0.1, signals during remote builds,
# declared-size bombs in checkpoint members, and the seams found with them. Kept apart from
# the other classes (other helpers add theirs above).

def _ckpt_data(w: Path, seed: int = 0) -> list[str]:
    """A data file in ``w`` and the select arguments of a checkpointed run on it."""
    _write(_dataset(w, n=120, d=16, seed=seed), w / "d.arff")
    return ["select", "d.arff", "--labels", "3", "-k", "5", "--min-bin-count", "1", "-q",
            "--json", "--checkpoint", "c"]


def _cli(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "coreselect", *argv], cwd=cwd, env=_env(env or {}),
                          capture_output=True, text=True, timeout=300)


def _rewrite_record(path: Path, change) -> None:
    from coreselect.selection.checkpoint import decode, encode

    header, arrays = decode(path.read_bytes(), "x")
    change(header, arrays)
    path.write_bytes(encode({k: v for k, v in header.items() if not k.startswith("payload_")},
                            arrays))


def _forge_swap(h, a):
    s = a["greedy_selected"]
    s[[0, 1]] = s[[1, 0]]


def _forge_swap_late(h, a):
    s = a["greedy_selected"]
    s[[-1, -2]] = s[[-2, -1]]


def _forge_back(h, a):
    h["step"] -= 1
    a["greedy_selected"] = a["greedy_selected"][:-1]
    a["greedy_pair"] = a["greedy_pair"][:-1, :-1]


def _forge_nan(h, a):
    a["greedy_diversity_to_s"][0] = float("nan")


def _forge_diversity(h, a):
    a["greedy_diversity"] = a["greedy_diversity"] * 0 + 3.0


def _forge_other(w: Path):
    """The picks of another run (other data) under this run's header."""
    other = w / "other"
    other.mkdir()
    _cli(_ckpt_data(other, seed=7), other)
    from coreselect.selection.checkpoint import decode

    _, theirs = decode((other / "c").read_bytes(), "x")
    return lambda h, a: a.update(theirs)


def _forge_relevance(w: Path, how: str) -> None:
    import numpy as np

    from coreselect.selection.checkpoint import decode, encode

    part = w / "c.parts" / "relevance"
    header, arrays = decode(part.read_bytes(), "x")
    rel = arrays["relevance"]
    if how == "top":
        rel[int(np.argmin(rel.sum(axis=1)))] = rel.max() * 3
    else:
        rel *= 0.97
    data = encode({k: v for k, v in header.items() if not k.startswith("payload_")}, arrays)
    part.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    _rewrite_record(w / "c", lambda h, a: h.update({"relevance": digest}))


def gen_ckpt_forgery(n, tmp, rng):
    """A record rewritten with a fresh checksum: refused in one line (exit 2), the record
    left as it was; a resumed run that goes on is an escape (another selection)."""
    kinds = ["swap", "swap-late", "step-back", "nan", "diversity", "other-run", "relevance-top",
             "relevance-scaled", "stale-step"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w = tmp / f"a{i}"
        w.mkdir()
        argv = _ckpt_data(w, seed=i)
        env = {"CORESELECT_TEST_HOLD": "checkpointed-4", "CORESELECT_TEST_HOLD_FILE": str(w / "h")}
        if kind == "stale-step":  # a record of an unfinished run, its last pick replaced
            proc = subprocess.Popen([PY, "-m", "coreselect", *argv], cwd=w, env=_env(env),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            end = time.monotonic() + 120
            while not (w / "h").exists() and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.05)
            proc.kill()
            proc.wait()
            _rewrite_record(w / "c", lambda h, a: a["greedy_selected"].__setitem__(
                -1, (int(a["greedy_selected"][-1]) + 1) % 16))
        else:
            _cli(argv, w)
            change = {"swap": _forge_swap, "swap-late": _forge_swap_late, "step-back": _forge_back,
                      "nan": _forge_nan, "diversity": _forge_diversity}.get(kind)
            if kind == "other-run":
                change = _forge_other(w)
            if change is not None:
                _rewrite_record(w / "c", change)
            else:
                _forge_relevance(w, kind.split("-")[1])
        out.append(Attempt("ckpt_forgery", kind, argv=argv, cwd=w, ok_allowed=False,
                           inputs=[w / "c", w / "c.parts" / "relevance"], deadline=120))
    return out


def _npz_bomb(gib: int) -> bytes:
    """A record whose one member is deflated zeros declaring ``gib`` GiB (a valid checksum)."""
    import io as _io
    import zipfile

    from coreselect.selection.checkpoint import FORMAT, MAGIC

    buf = _io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("greedy_selected.npy", "w", force_zip64=True) as fh:
            size = gib << 30
            head = f"{{'descr': '<i8', 'fortran_order': False, 'shape': ({size // 8},), }}"
            head = head + " " * (118 - len(head)) + "\n"
            fh.write(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode())
            chunk = bytes(8 << 20)
            for _ in range(gib * 128):
                fh.write(chunk)
    payload = buf.getvalue()
    header = {"format": FORMAT, "payload_bytes": len(payload),
              "payload_sha256": hashlib.sha256(payload).hexdigest()}
    return MAGIC + json.dumps(header).encode() + b"\n" + payload


def gen_ckpt_damage(n, tmp, rng):
    """Declared-size bombs and special files as checkpoints: one line, exit 2, at once and
    within the attempt's 3 GiB (a bomb expanded is a MemoryError or a kill: an escape)."""
    kinds = ["member-bomb", "fifo", "dev-full", "dev-zero", "declared-size", "folder",
             "parts-bomb", "npy-shape"]
    out = []
    bomb = None
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w = tmp / f"a{i}"
        w.mkdir()
        argv = _ckpt_data(w, seed=i)
        target = w / "c"
        if kind in ("member-bomb", "parts-bomb"):
            bomb = bomb or _npz_bomb(3)
            if kind == "member-bomb":
                target.write_bytes(bomb)
            else:
                _cli(argv, w)
                (w / "c.parts" / "relevance").write_bytes(bomb)
                digest = hashlib.sha256(bomb).hexdigest()
                _rewrite_record(target, lambda h, a: h.update({"relevance": digest}))
        elif kind == "npy-shape":  # a stored member whose header declares 8 TiB
            import io as _io
            import zipfile

            from coreselect.selection.checkpoint import FORMAT, MAGIC

            buf = _io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
                head = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
                head += " " * (118 - len(head)) + "\n"
                zf.writestr("greedy_pair.npy", b"\x93NUMPY\x01\x00" + len(head).to_bytes(
                    2, "little") + head.encode() + bytes(64))
            payload = buf.getvalue()
            target.write_bytes(MAGIC + json.dumps({
                "format": FORMAT, "payload_bytes": len(payload),
                "payload_sha256": hashlib.sha256(payload).hexdigest()}).encode() + b"\n" + payload)
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind in ("dev-full", "dev-zero"):
            argv = [*argv[:-1], f"/dev/{kind[4:]}"]
        elif kind == "declared-size":
            from coreselect.selection.checkpoint import MAGIC

            target.write_bytes(MAGIC + json.dumps({"format": 1, "payload_bytes": 1 << 40,
                                                   "payload_sha256": "0" * 64}).encode() + b"\n")
        else:
            target.mkdir()
        out.append(Attempt("ckpt_damage", kind, argv=argv, cwd=w, ok_allowed=False,
                           inputs=[p for p in (target,) if kind not in ("fifo", "dev-full",
                                                                       "dev-zero", "folder")],
                           deadline=60))
    return out


def gen_user_folders(n, tmp, rng):
    """Folders that hold user files where coreselect writes: a checkpoint's parts folder, the
    --temp-dir of a rows run, the input store itself. The files stay as they were (refusal
    or success both behave; a file replaced or removed is an escape)."""
    kinds = ["parts-relevance", "parts-statistics", "parts-xml", "tempdir-keep",
             "tempdir-old", "tempdir-deadpid", "ckpt-in-store", "ckpt-is-store"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w = tmp / f"a{i}"
        w.mkdir()
        argv = _ckpt_data(w, seed=i)
        inputs = [w / "d.arff"]
        if kind.startswith("parts"):
            parts = w / "c.parts"
            parts.mkdir()
            name = {"parts-relevance": "relevance", "parts-statistics": "statistics",
                    "parts-xml": "d.xml"}[kind]
            (parts / name).write_text("user file\n")
            inputs.append(parts / name)
            if kind == "parts-statistics":
                argv += ["--mode", "rows"]
        else:
            r = _cli(["store", "build", "d.arff", "s", "--labels", "3", "--block-size", "4",
                      "--row-block-size", "40", "--min-bin-count", "1", "-q"], w)
            if r.returncode:
                raise RuntimeError(r.stderr.strip()[-200:])
            inputs += [p for p in (w / "s").rglob("*") if p.is_file()]
            argv = ["select", "s", "-k", "4", "-q", "--json", "--mode", "rows"]
            if kind.startswith("tempdir"):
                scr = w / "scr"
                scr.mkdir()
                name = {"tempdir-keep": "coreselect-rows.keep.tmp/notes.txt",
                        "tempdir-old": "coreselect-rows.old.tmp",
                        "tempdir-deadpid": "coreselect-rows.ckabc.p999999-xyz.tmp/notes.txt"}[kind]
                (scr / name).parent.mkdir(parents=True, exist_ok=True)
                (scr / name).write_text("user file\n")
                past = time.time() - 7200
                for p in [scr / name, (scr / name).parent]:
                    os.utime(p, (past, past))
                inputs.append(scr / name)
                argv += ["--temp-dir", "scr", "--checkpoint", "c"]
            else:
                argv += ["--checkpoint", "s/c" if kind == "ckpt-in-store" else "s"]
        out.append(Attempt("user_folders", kind, argv=argv, cwd=w, inputs=inputs, deadline=120,
                           ok_allowed=not kind.startswith(("ckpt", "parts"))))
    return out


# The S3 scenarios run as Python snippets in the attempt's child: each starts its own moto
# server (benchmarks/_common.py) or a socket that never answers, runs coreselect's CLI as a
# grandchild, and prints OK when the promise held, else exits with the reason.
_S3 = r'''
import json, os, signal, socket, subprocess, sys, threading, time
sys.path.insert(0, {bench!r})
from _common import start_moto
KEY, SECRET = "AKIDHOSTILE0001", "hostile-secret-0001"
env = {{**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1"}}
env.pop("CORESELECT_STORAGE_OPTIONS", None)
SMALL = {{"config_kwargs": {{"connect_timeout": 1, "read_timeout": 2,
                             "retries": {{"max_attempts": 1}}}}, "deadline": 6}}

def fail(why):
    sys.stderr.write(why + "\n")
    sys.exit(1)

def cli(*args, hold=None, small=False, wait=True):
    e = dict(env)
    if small:
        e["CORESELECT_STORAGE_OPTIONS"] = json.dumps(SMALL)
    if hold:
        e["CORESELECT_TEST_HOLD"], e["CORESELECT_TEST_HOLD_FILE"] = hold, os.path.abspath("held")
    p = subprocess.Popen([sys.executable, "-m", "coreselect", *args], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    return p.communicate() + (p.returncode,) if wait else p

def one_line(err, code, words="no answer from the server"):
    lines = err.strip().splitlines()
    if code != 2 or len(lines) != 1 or "internal error" in err:
        fail(f"exit {{code}}, {{len(lines)}} line(s): {{(lines or [''])[-1][:150]}}")
    if words and words not in err:
        fail(f"not '{{words}}': {{lines[0][:150]}}")

def held(p, limit=120):
    end = time.monotonic() + limit
    while not os.path.exists("held"):
        if p.poll() is not None:
            fail("finished before the hold: " + p.communicate()[1].strip()[-150:])
        if time.monotonic() > end:
            fail("never reached the hold")
        time.sleep(0.05)

class Frozen:
    def __init__(self):
        self.sock = socket.socket(); self.sock.bind(("127.0.0.1", 0)); self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]; self.held = []
        threading.Thread(target=self.run, daemon=True).start()
    def run(self):
        while True:
            try: self.held.append(self.sock.accept()[0])
            except OSError: return

moto = None
def server():
    global moto
    moto, url = start_moto()
    env["AWS_ENDPOINT_URL"] = url
    import s3fs
    fs = s3fs.S3FileSystem(key=KEY, secret=SECRET, endpoint_url=url, skip_instance_cache=True)
    fs.mkdir("data")
    return fs

def left(fs, name):
    return [p for p in fs.find("data") if p.startswith("data/" + name)]

try:
{body}
    print("OK")
finally:
    if moto is not None and moto.poll() is None:
        os.kill(moto.pid, signal.SIGCONT); moto.kill(); moto.wait()
'''


def _s3(body: str) -> str:
    return _S3.format(bench=str(ROOT / "benchmarks"),
                      body="\n".join("    " + line for line in body.strip().splitlines()))


_S3_FROZEN = {
    # a socket that accepts and never answers, default options: within the default deadlines
    "never-build-default": """
f = Frozen(); env["AWS_ENDPOINT_URL"] = f.url
t = time.monotonic(); out, err, code = cli("store", "build", "d.arff", "s3://data/s", "--labels", "3")
one_line(err, code)
if time.monotonic() - t > 150: fail(f"took {time.monotonic() - t:.0f} s")
""",
    "never-select-small": """
f = Frozen(); env["AWS_ENDPOINT_URL"] = f.url
t = time.monotonic(); out, err, code = cli("select", "s3://data/s", "-k", "2", small=True)
one_line(err, code)
if time.monotonic() - t > 40: fail(f"took {time.monotonic() - t:.0f} s")
""",
    "never-checkpoint-small": """
f = Frozen(); env["AWS_ENDPOINT_URL"] = f.url
t = time.monotonic()
out, err, code = cli("select", "d.arff", "--labels", "3", "-k", "2", "--checkpoint", "s3://data/c", small=True)
one_line(err, code)
if time.monotonic() - t > 40: fail(f"took {time.monotonic() - t:.0f} s")
""",
    # moto stopped (SIGSTOP) while the build holds between its upload and its copies
    "frozen-mid-build": """
fs = server()
p = cli("store", "build", "d.arff", "s3://data/s", "--labels", "3", "--block-size", "3",
        hold="remote-staged", small=True, wait=False)
held(p); os.kill(moto.pid, signal.SIGSTOP); os.remove("held")  # the hold ends
try:
    out, err = p.communicate(timeout=120)
except subprocess.TimeoutExpired:
    p.kill(); fail("hang: the build did not end within 120 s of the freeze")
one_line(err, p.returncode, None)
os.kill(moto.pid, signal.SIGCONT)
out, err, code = cli("store", "build", "d.arff", "s3://data/s", "--labels", "3", "--block-size", "3")
if code != 0: fail("the next build failed: " + err.strip()[-150:])
if [x for x in left(fs, "s.coreselect-tmp")]: fail("a stale temporary prefix was left")
""",
    "frozen-mid-checkpoint": """
fs = server()
p = cli("select", "d.arff", "--labels", "3", "-k", "5", "--min-bin-count", "1",
        "--checkpoint", "s3://data/c", hold="checkpointed-2", small=True, wait=False)
held(p); os.kill(moto.pid, signal.SIGSTOP); os.remove("held")
try:
    out, err = p.communicate(timeout=120)
except subprocess.TimeoutExpired:
    p.kill(); fail("hang: the run did not end within 120 s of the freeze")
one_line(err, p.returncode)
""",
}

_S3_SIGNALS = {
    f"{sig}-at-{stage}": f"""
fs = server()
p = cli("store", "build", "d.arff", "s3://data/s", "--labels", "3", "--block-size", "3",
        hold="remote-staged", wait=False)
held(p)
if not left(fs, "s.coreselect-tmp"): fail("nothing staged at the hold")
os.kill(p.pid, signal.{sig})
try:
    out, err = p.communicate(timeout=60)
except subprocess.TimeoutExpired:
    p.kill(); fail("hang after {sig}")
if p.returncode == 0: fail("finished despite {sig}")
rest = left(fs, "s")
if rest: fail(f"left {{len(rest)}} object(s): {{rest[0]}}")
""" for sig in ("SIGINT", "SIGTERM") for stage in ("staged",)
}
_S3_SIGNALS["SIGKILL-then-next-build"] = """
fs = server()
p = cli("store", "build", "d.arff", "s3://data/s", "--labels", "3", "--block-size", "3",
        hold="remote-staged", wait=False)
held(p); os.killpg(p.pid, signal.SIGKILL); p.communicate()
if not left(fs, "s.coreselect-tmp"): fail("nothing staged at the hold")
out, err, code = cli("store", "build", "d.arff", "s3://data/s", "--labels", "3", "--block-size", "3")
if code != 0: fail("the next build failed: " + err.strip()[-150:])
if left(fs, "s.coreselect-tmp"): fail("the killed build's temporary prefix was left")
"""
_S3_SIGNALS["server-dies-mid-build"] = """
fs = server()
p = cli("store", "build", "d.arff", "s3://data/s", "--labels", "3", "--block-size", "3",
        hold="remote-staged", small=True, wait=False)
held(p); moto.kill(); moto.wait(); os.remove("held")
try:
    out, err = p.communicate(timeout=90)
except subprocess.TimeoutExpired:
    p.kill(); fail("hang: the build did not end within 90 s of the server's death")
one_line(err, p.returncode)
"""


def _s3_class(cls: str, table: dict, n, tmp) -> list:
    names = list(table)
    out = []
    for i in range(n):
        name = names[i % len(names)]
        w = tmp / f"a{i}"
        w.mkdir()
        _write(_dataset(w, n=80, d=10, seed=i), w / "d.arff")
        out.append(Attempt(cls, name, code=_s3(table[name]), cwd=w, inputs=[w / "d.arff"],
                           deadline=240))
    return out


def gen_s3_frozen(n, tmp, rng):
    """Servers that accept and never answer (from the start, or frozen mid-build and
    mid-checkpoint-write): one line within the deadlines, and the next build cleans up."""
    return _s3_class("s3_frozen", _S3_FROZEN, n, tmp)


def gen_s3_signals(n, tmp, rng):
    """SIGINT/SIGTERM/SIGKILL during a remote build, and a server that dies mid-build:
    nothing left under the target nor its temporary prefix (after the next build, for a
    SIGKILL), one line for a dead server."""
    return _s3_class("s3_signals", _S3_SIGNALS, n, tmp)


def gen_seams31(n, tmp, rng):
    """Huge --bins (CLI and API), --missing where it is ignored, an HTTP server as
    --scheduler, --export .xmc (must work)."""
    kinds = ["bins-2**64", "api-n_bins-2**70", "store-bins-2**64", "missing-csv", "http-scheduler",
             "export-xmc"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w = tmp / f"a{i}"
        w.mkdir()
        ds = _dataset(w, seed=i)
        _write(ds, w / "d.arff")
        _write(ds, w / "d.csv")
        a = Attempt("seams31", kind, cwd=w, inputs=[w / "d.arff", w / "d.csv"], ok_allowed=False)
        if kind == "bins-2**64":
            a.argv = ["select", "d.arff", "--labels", "3", "-k", "2", "--bins", str(2**64)]
        elif kind == "store-bins-2**64":
            a.argv = ["store", "build", "d.arff", "s", "--labels", "3", "--bins", str(2**64)]
            a.must_not_exist = [w / "s"]
        elif kind == "api-n_bins-2**70":
            a.code = _api("coreselect.select(rng.random((30, 4)), rng.integers(0, 2, (30, 2)), "
                          "k=2, n_bins=2**70)")
        elif kind == "missing-csv":
            a.argv = ["datasets", "info", "d.csv", "--labels", "3", "--missing", "error"]
        elif kind == "http-scheduler":
            a.code = _api("""
import http.server, threading
class Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
threading.Thread(target=srv.serve_forever, daemon=True).start()
try:
    coreselect.select(rng.random((30, 4)), rng.integers(0, 2, (30, 2)), k=2, mode="distributed",
                      engine="dask", scheduler=f"tcp://127.0.0.1:{srv.server_address[1]}")
except coreselect.errors.EngineError as exc:
    if "HTTP server" not in str(exc): raise SystemExit("not named: " + str(exc)[:150])
    raise
""")
            a.forbid_text = ("memory",)
        else:
            a.argv = ["select", "d.arff", "--labels", "3", "-k", "3", "-q", "--export", "r.xmc"]
            a.ok_allowed = True
            a.check = lambda r, w=w: None if (w / "r.xmc").is_file() else "no r.xmc written"
        out.append(a)
    return out


#: The classes of issue 31 (helper "hostile"); slow ones capped by default.
CLASSES_31: dict[str, Callable] = {
    "ckpt_forgery": gen_ckpt_forgery,
    "ckpt_damage": gen_ckpt_damage,
    "user_folders": gen_user_folders,
    "s3_frozen": gen_s3_frozen,
    "s3_signals": gen_s3_signals,
    "seams31": gen_seams31,
}
CLASSES.update(CLASSES_31)
EXPENSIVE.update({"s3_frozen": 5, "s3_signals": 4, "ckpt_forgery": 9, "ckpt_damage": 8,
                  "user_folders": 8, "seams31": 6})


# ============================================================================ issue 29 (helper "resume")
# Bad input to `store build` from many files (issue 29, "Bad input"): a shard that vanishes or
# changes during the build, a truncated compressed shard, a bucket without permission, a glob
# that matches nothing, shards whose spaces disagree, a chunk that breaks the format mid-file.
# Every attempt: one line naming the file (and the line where there is one), exit 2, no store,
# nothing left under the target or beside it (with --checkpoint: the checkpoint alone).

def _build_argv(data: str, ck: bool, *extra: str) -> list[str]:
    return ["store", "build", data, "s", "-q", *(["--checkpoint", "ck"] if ck else []), *extra]


def _build_after(w: Path, culprit: str, where: str | None = None):
    def after(r: subprocess.CompletedProcess) -> str | None:
        text = r.stderr + r.stdout
        if culprit not in text:
            return f"the message does not name {culprit}"
        if where is not None and where not in text:
            return f"the message does not say {where}"
        if (w / "s").exists():
            return "a store was written"
        left = sorted(p.name for p in w.iterdir() if p.name not in ("d", "ck", "ck.parts"))
        return f"left {left} beside the target" if left else None
    return after


def _build_attempt(cls: str, kind: str, w: Path, ck: bool, culprit: str, data: str = "d",
                   where: str | None = None, code: str | None = None, extra=()) -> Attempt:
    name = f"{kind}{' --checkpoint' if ck else ''}"
    inputs = sorted((w / "d").rglob("*")) if (w / "d").exists() else []
    if code is not None:
        return Attempt(cls, name, code=code, cwd=w, ok_allowed=False, deadline=120,
                       after=_build_after(w, culprit, where))
    return Attempt(cls, name, argv=_build_argv(data, ck, *extra), cwd=w, ok_allowed=False,
                   deadline=120, inputs=[p for p in inputs if p.is_file()],
                   after=_build_after(w, culprit, where))


#: Runs ``store build d s`` in this process with the file changed when the pass STAGE starts.
_BUILD_DURING = r"""
import os, sys
from coreselect.store._runner import PlainRunner  # the checkpoint's runner wraps it
orig = PlainRunner.run
def run(self, func, shared, tasks, stage, *a, **k):
    if stage == {stage!r}:
        {action}
    return orig(self, func, shared, tasks, stage, *a, **k)
PlainRunner.run = run
from coreselect.cli import main
try:
    main({argv!r})
except SystemExit as exc:
    if exc.code in (0, None):
        print("OK")
    raise
"""


def _csv_shards(folder: Path, n_files: int = 3, rows: int = 60, seed: int = 0) -> list[Path]:
    import numpy as np

    r = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n_files):
        body = [",".join(map(str, r.integers(0, 5, 4).tolist() + r.integers(0, 2, 2).tolist()))
                for _ in range(rows)]
        p = folder / f"part-{k:02d}.csv"
        p.write_text("f0,f1,f2,f3,y0,y1\n" + "\n".join(body) + "\n")
        out.append(p)
    return out


def gen_build_vanish(n, tmp, rng):
    """A shard deleted when a pass starts (after the listing, between the passes, after the
    reads), or the whole folder gone."""
    kinds = [("count", "os.remove('d/part-01.svm')", "part-01.svm"),
             ("encode", "os.remove('d/part-01.svm')", "part-01.svm"),
             ("encode", "os.remove('d/part-02.svm')", "part-02.svm"),
             ("encode", "os.remove('d/part-00.svm')", "part-00.svm"),
             # after every read: the store of what was read is complete and right
             ("tiles", "os.remove('d/part-02.svm')", "part-02.svm")]
    out = []
    for i in range(n):
        stage, action, culprit = kinds[i % len(kinds)]
        w = tmp / f"v{i}"
        _svm_shards(w / "d", seed=i)
        ck = i % 2 == 1
        code = _BUILD_DURING.format(stage=stage, action=action, argv=_build_argv("d", ck))
        a = _build_attempt("build_vanish", f"vanishes at {stage}", w, ck, culprit, code=code)
        if stage == "tiles":
            a.ok_allowed, a.after = True, None
            a.check = lambda r, w=w: (None if (w / "s" / "store.json").is_file()
                                      and not (w / "ck").exists() else "no store, or left ck")
        out.append(a)
    return out


def gen_build_change(n, tmp, rng):
    """A shard that changes between the passes: rows appended, cut short, or the same size
    with other bytes (LIBSVM, and CSV, whose reader reads a file whole per pass)."""
    grow = "open('d/part-01.{ext}', 'a').write('{row}\\n')"
    same = ("b = open('d/part-01.{ext}', 'rb').read(); i = b.index(b'1', b.index(b'\\n') + 1); "
            "open('d/part-01.{ext}', 'wb').write(b[:i] + b'2' + b[i + 1:])")
    cut = ("b = open('d/part-01.{ext}', 'rb').read(); "
           "open('d/part-01.{ext}', 'wb').write(b[:len(b) // 2].rsplit(b'\\n', 1)[0] + b'\\n')")
    kinds = [("svm", "grow", grow), ("svm", "same size", same), ("csv", "same size", same),
             ("svm", "cut short", cut), ("csv", "grow", grow)]
    out = []
    for i in range(n):
        ext, what, action = kinds[i % len(kinds)]
        w = tmp / f"c{i}"
        (_svm_shards if ext == "svm" else _csv_shards)(w / "d", seed=i)
        ck = i % 2 == 1
        row = "1 3:1" if ext == "svm" else "1,2,3,4,0,1"
        extra = ("--labels", "y0,y1") if ext == "csv" else ()
        code = _BUILD_DURING.format(stage="encode", action=action.format(ext=ext, row=row),
                                    argv=_build_argv("d", ck, *extra))
        out.append(_build_attempt("build_change", f"{ext} {what} between passes", w, ck,
                                  f"part-01.{ext}", code=code))
    return out


def gen_build_truncated(n, tmp, rng):
    """A compressed shard cut short (its end-of-stream marker missing)."""
    import bz2
    import lzma

    kinds = [("gz", gzip.compress), ("bz2", bz2.compress), ("xz", lzma.compress)]
    out = []
    for i in range(n):
        ext, pack = kinds[i % len(kinds)]
        w = tmp / f"t{i}"
        files = _svm_shards(w / "d", seed=i)
        culprit = files[1].with_name(f"part-01.svm.{ext}")
        culprit.write_bytes(pack(files[1].read_bytes() * 20)[:-300])
        files[1].unlink()
        out.append(_build_attempt("build_truncated", f"truncated .{ext}", w, i % 2 == 1,
                                  culprit.name))
    return out


def gen_build_glob(n, tmp, rng):
    """Names that match no data file: a glob, an empty folder, a list file of nothing."""
    kinds = [("d/*.xmc", "d/*.xmc"), ("e", "e"), ("d/part-9*.svm", "d/part-9*.svm"),
             ("list.txt", "list.txt")]
    out = []
    for i in range(n):
        data, culprit = kinds[i % len(kinds)]
        w = tmp / f"g{i}"
        _svm_shards(w / "d", seed=i)
        if data == "e":
            (w / "d" / "e").mkdir()
            data = culprit = "d/e"
        if data == "list.txt":
            (w / "d" / "list.txt").write_text("")
            data = culprit = "d/list.txt"
        out.append(_build_attempt("build_glob", f"matches nothing: {data}", w, i % 2 == 1,
                                  culprit, data=data))
    return out


def gen_build_spaces(n, tmp, rng):
    """Shards whose feature or label spaces disagree (headers, CSV columns)."""
    kinds = ["features", "labels", "csv columns", "csv labels"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w = tmp / f"p{i}"
        extra = ()
        if kind.startswith("csv"):
            files = _csv_shards(w / "d", seed=i)
            head = "f0,f1,f2,f9,y0,y1" if kind == "csv columns" else "f0,f1,f2,f3,y0,y9"
            files[1].write_text(files[1].read_text().replace("f0,f1,f2,f3,y0,y1", head, 1))
            extra = ("--labels", "y0,y1")
        else:
            files = _svm_shards(w / "d", header=True, seed=i)
            new = "200 21 4" if kind == "features" else "200 20 5"
            files[1].write_text(files[1].read_text().replace("200 20 4", new, 1))
        out.append(_build_attempt("build_spaces", f"{kind} disagree", w, i % 2 == 1,
                                  files[1].name, extra=extra))
    return out


def gen_build_mid_file(n, tmp, rng):
    """A chunk that breaks the format mid-file (past the first chunk: --chunk-rows 50)."""
    kinds = ["bad value", "bad label", "bad index", "csv cell"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w = tmp / f"m{i}"
        extra: tuple = ("--chunk-rows", "50")
        if kind == "csv cell":
            files = _csv_shards(w / "d", rows=200, seed=i)
            culprit = files[2]
            lines = culprit.read_text().splitlines()
            lines[151] = "1,2,x,4,0,1"
            extra += ("--labels", "y0,y1")
        else:
            files = _svm_shards(w / "d", seed=i)
            culprit = files[2]
            lines = culprit.read_text().splitlines()
            lines[150] = {"bad value": "1 3:1 4:oops", "bad label": "1,z 3:1",
                          "bad index": "1 3:1 x:2"}[kind]
        culprit.write_text("\n".join(lines) + "\n")
        out.append(_build_attempt("build_mid_file", kind, w, i % 2 == 1, culprit.name,
                                  where=f"{culprit.name}:152" if kind == "csv cell"
                                  else f"{culprit.name}:151", extra=extra))
    return out


_BUILD_DENIED = """
moto, url = start_moto({{**env, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}})
env["AWS_ENDPOINT_URL"] = url
out, err, code = cli(*{argv!r})
one_line(err, code, None)
if {culprit!r} not in err: fail("does not name the URL: " + err.strip()[:150])
if not any(w in err.lower() for w in ("access denied", "not exist in our records", "forbidden")):
    fail("does not say access is denied: " + err.strip()[:150])
if os.path.exists("s"): fail("a store was written")
left = sorted(set(os.listdir(".")) - {{"ck", "ck.parts"}})
if left: fail(f"left {{left}}")
"""


def gen_build_denied(n, tmp, rng):
    """Shards in a bucket the credentials may not read (a server that checks signatures and
    knows no key): a glob, a file, a prefix."""
    kinds = ["s3://data/shards/*.svm", "s3://data/shards/part-00.svm", "s3://data/shards/",
             "s3://data/shards/*.svm.gz"]
    out = []
    for i in range(n):
        data = kinds[i % len(kinds)]
        w = tmp / f"a{i}"
        w.mkdir()
        code = _s3(_BUILD_DENIED.format(argv=_build_argv(data, i % 2 == 1), culprit=data))
        out.append(Attempt("build_denied", f"{data}{' --checkpoint' if i % 2 else ''}",
                           code=code, cwd=w, deadline=180))
    return out


#: The store build's bad-input classes of issue 29 (helper "resume").
CLASSES_29_BUILD: dict[str, Callable] = {
    "build_vanish": gen_build_vanish,
    "build_change": gen_build_change,
    "build_truncated": gen_build_truncated,
    "build_glob": gen_build_glob,
    "build_spaces": gen_build_spaces,
    "build_mid_file": gen_build_mid_file,
    "build_denied": gen_build_denied,
}
CLASSES.update(CLASSES_29_BUILD)
OWNER.update({name: "resume" for name in CLASSES_29_BUILD})

from hostile_ways_in import ways_in_classes  # noqa: E402 - the ways in from files, folders and globs

CLASSES.update(ways_in_classes(Attempt))
OWNER.update({name: "readers" for name in ("shard_schemas", "glob_links", "special_inputs")})

from hostile_lifecycle import classes as lifecycle_classes  # noqa: E402 - checkpoints, pools, signals

CLASSES.update(lifecycle_classes(Attempt))
OWNER.update({name: "lifecycle" for name in lifecycle_classes(Attempt)})


if __name__ == "__main__":
    sys.exit(main())
