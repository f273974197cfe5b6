"""Hostile-input classes of a run's life: checkpoints, stores, processes and exits.

Registered in ``tests/tools/hostile.py`` (which runs them with its other classes); run alone:

    python tests/tools/hostile_lifecycle.py --quick          # these classes only, 2 attempts each
    python tests/tools/hostile_lifecycle.py -n 6 --out lifecycle.json

The classes:

* ``ckpt_outside``: a build checkpoint whose manifests name files outside its folder (``../``,
  an absolute path, a symbolic link on the way), and a user's folder named like the
  checkpoint's scratch (``CK.parts.removed``). Behaved: no file outside is written, the
  user's folder is kept, the store is the uninterrupted build's (or one line, exit 2).
* ``pool_kill9``: ``kill -9`` of a command with a worker pool (``store build --workers 2``,
  with and without ``--checkpoint``; ``select --mode distributed --workers 2``; ``evaluate
  --jobs 2``). Behaved: every worker is gone within 30 s of its parent (a forked worker at
  once; a spawned one still starting, as evaluate's are, when its start-up ends: seconds).
* ``evaluate_signals``: SIGTERM or SIGINT during ``evaluate --jobs 2`` (1-6 s after the
  start: its pool starting, running, its report written). Behaved: a non-zero exit, no
  traceback from a worker, no output folder.
* ``full_tempdir``: a full ``--temp-dir`` (a file-size limit, short writes). Behaved: one
  line, exit 2, the temporary folder left empty.
* ``storage_options``: malformed ``$CORESELECT_STORAGE_OPTIONS``. Behaved: one line, exit
  2, before any connection.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent

#: Writes small LIBSVM shards: ``shards(folder, n_files, rows, seed)`` (shared by the snippets).
_SHARDS = r'''
import numpy as np
from pathlib import Path

def shards(folder, n_files=2, rows=150, seed=0, width=20):
    rng = np.random.default_rng(seed)
    Path(folder).mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = []
        for _ in range(rows):
            labels = ",".join(map(str, sorted(set(rng.integers(0, 4, 2).tolist()))))
            cols = sorted(set(rng.integers(0, width, 5).tolist()))
            lines.append(labels + " " + " ".join(f"{j}:{rng.integers(1, 6)}" for j in cols))
        (Path(folder) / f"part-{f:02d}.svm").write_text("\n".join(lines) + "\n")
'''

#: A checkpointed build stopped before its commit, a manifest forged, the build resumed.
_OUTSIDE = r'''
import hashlib, os, sys
import coreselect.io.files as files
from coreselect.store.checkpoint_file import decode, encode
from coreselect.cli import main

KIND = {kind!r}
BUILD = ["--row-block-size", "100", "--bins", "3", "-q"]

def run(*args):
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code or 0
    return 0

def digests(store):
    return {{p.relative_to(store).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(store).rglob("*")) if p.is_file()}}

shards("d", seed={seed})
assert run("store", "build", "d", "ref", *BUILD) == 0
victim = Path("evil.txt").resolve()
victim.write_text("precious\n")
if KIND == "removed-folder":
    Path("w").mkdir()
    Path("w/c.parts.removed").mkdir()
    Path("w/c.parts.removed/thesis.txt").write_text("precious\n")
    code = run("store", "build", "d", "a/b/s", *BUILD, "--checkpoint", "w/c")
    if Path("w/c.parts.removed/thesis.txt").read_text() != "precious\n":
        sys.exit("the user's folder was deleted")
    sys.exit(code)
real = files.checkpoint
def hold(stage):
    if stage == "build-commit":
        raise SystemExit(9)
    real(stage)
files.checkpoint = hold
Path("w").mkdir()
Path("a/b").mkdir(parents=True)
assert run("store", "build", "d", "a/b/s", *BUILD, "--checkpoint", "w/c") == 9
files.checkpoint = real
planted = Path("w/evil.txt")
planted.write_text("forged\n")
stage = {stage!r}
manifest = sorted(Path("w/c.parts", stage).glob("*/manifest"))[0]
if KIND == "parent":
    rel = "../../../evil.txt"
elif KIND == "absolute":
    rel, planted = str(victim), victim
else:
    Path("outside").mkdir()
    (Path("outside") / "x.npy").write_text("forged\n")
    (manifest.parent / "link").symlink_to(Path("outside").resolve())
    rel, planted = "link/x.npy", Path("outside/x.npy")
header, arrays = decode(manifest.read_bytes(), "m")
data = planted.read_bytes()
header["files"][rel] = [len(data), hashlib.sha256(data).hexdigest()]
for key in ("payload_bytes", "payload_sha256"):
    header.pop(key)
manifest.write_bytes(encode(header, arrays))
code = run("store", "build", "d", "a/b/s", *BUILD, "--checkpoint", "w/c")
if victim.read_text() != "precious\n":
    sys.exit("a file outside the store and the checkpoint was overwritten")
if code == 0 and digests("a/b/s") != digests("ref"):
    sys.exit("the resumed store differs from the uninterrupted build's")
if code == 0:
    print("OK")
sys.exit(code)
'''


def _children_code() -> str:
    return r'''
import os, signal, subprocess, sys, time

def children(pid):
    out = set()
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                f = open(f"/proc/{e}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(f[1]) == pid and f[0] != "Z":
                out.add(int(e))
    return out

def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
'''


#: A command with a pool started as a grandchild (its task slowed where it runs in the
#: workers), SIGKILLed once its workers exist; they must be gone within 30 s.
_KILL9 = r'''
shards("d", n_files=3, rows=400, seed={seed})
{prepare}
wrapper = {wrapper!r}
proc = subprocess.Popen([sys.executable, "-c", wrapper], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 120
workers = set()
while len(workers) < 2:
    if proc.poll() is not None:
        sys.exit(f"the command ended (exit {{proc.returncode}}) before its pool started")
    if time.monotonic() > deadline:
        proc.kill()
        sys.exit("the pool never started")
    workers = children(proc.pid)
    time.sleep(0.02)
time.sleep({delay})
workers |= children(proc.pid)
os.kill(proc.pid, signal.SIGKILL)
proc.wait()
end = time.monotonic() + 30
while any(alive(w) for w in workers) and time.monotonic() < end:
    time.sleep(0.1)
left = [w for w in workers if alive(w)]
for w in left:
    os.kill(w, signal.SIGKILL)
if left:
    sys.exit(f"{{len(left)}} pool worker(s) outlived their SIGKILLed parent")
print("OK")
'''

#: The grandchild: ``TASK`` in ``MODULE`` sleeps first (the workers are forked: they see it).
_SLOWED = r'''
import importlib, time
module = importlib.import_module({module!r})
orig = getattr(module, {task!r})
def slow(shared, task):
    time.sleep(60)
    return orig(shared, task)
slow.__module__, slow.__qualname__ = {module!r}, {task!r}
for name in [{module!r}, *{also!r}]:  # where the name was imported too
    setattr(importlib.import_module(name), {task!r}, slow)
from coreselect.cli import main
main({argv!r})
'''

_SLOW_FIT = r'''
import time

class Slow:
    def __init__(self, k, seed):
        self.k = k

    def fit(self, X, Y):
        time.sleep(60)
'''

_SLOW_EVALUATE = r'''
import numpy as np
import slowfit
from coreselect.evaluation import protocol

if __name__ == "__main__":
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (40, 6)).astype(float)
    Y = (rng.random((40, 2)) < 0.5).astype(int)
    protocol.run_protocol(X, Y, {"slow": slowfit.Slow}, [1], n_folds=2, jobs=2)
'''


#: A full --temp-dir: a file-size limit (SIGXFSZ ignored: writes fail with EFBIG, and numpy's
#: fwrite comes back short), or numpy's own short-write error on every .npy file.
_FULL = r'''
import os, resource, signal, sys
import numpy as np
shards("d", n_files=1, rows={rows}, seed={seed}, width=200)
os.mkdir("T")
how = {how!r}
if how == "short":
    real = np.save
    def save(file, arr, *a, **k):
        if isinstance(file, (str, os.PathLike)):
            raise OSError("11270 requested and 8064 written")
        return real(file, arr, *a, **k)
    np.save = save
else:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
from coreselect.cli import main
try:
    main({argv!r})
    code = 0
except SystemExit as exc:
    code = exc.code or 0
left = os.listdir("T")
if code and left:
    print(f"left {{left}} in --temp-dir", file=sys.stderr)
    sys.exit(3)
if code == 0:
    print("OK")
sys.exit(code)
'''


def classes(Attempt) -> dict[str, Callable]:
    """The generators, each ``gen(n, tmp, rng) -> [Attempt]`` (hostile.py's ``Attempt``)."""

    def gen_ckpt_outside(n, tmp, rng):
        kinds = [("parent", "tiles"), ("absolute", "tiles"), ("symlink", "tiles"),
                 ("removed-folder", "tiles"), ("parent", "encode"), ("symlink", "count")]
        out = []
        for i in range(n):
            kind, stage = kinds[i % len(kinds)]
            w = tmp / f"a{i}"
            w.mkdir()
            out.append(Attempt("ckpt_outside", f"{kind} ({stage} manifest)" if kind !=
                               "removed-folder" else kind,
                               code=_SHARDS + _OUTSIDE.format(kind=kind, stage=stage, seed=i),
                               cwd=w, deadline=180))
        return out

    def gen_pool_kill9(n, tmp, rng):
        build = ["store", "build", "d", "s", "--row-block-size", "200", "--workers", "2", "-q"]
        kinds = [
            ("store build --workers 2", "coreselect.store._count", "count_raw_task",
             ("coreselect.store.ingest",), build),
            ("store build --workers 2 --checkpoint", "coreselect.store._count", "count_task",
             ("coreselect.store.ingest",), build + ["--checkpoint", "ck"]),
            ("select --mode distributed --workers 2", "coreselect.selection.distributed",
             "run_part", ("coreselect.selection.strategies",),
             ["select", "d", "-k", "3", "--mode", "distributed", "--workers", "2",
              "--partitions", "4", "-q"]),
            ("evaluate --jobs 2 (its pool)", None, None, (), None),
        ]
        out = []
        for i in range(n):
            name, module, task, also, argv = kinds[i % len(kinds)]
            w = tmp / f"a{i}"
            w.mkdir()
            delay = round(rng.uniform(0.0, 1.5), 2)
            if module is None:
                (w / "slowfit.py").write_text(_SLOW_FIT)
                (w / "evaluate_slow.py").write_text(_SLOW_EVALUATE)
                wrapper = ("import runpy, sys; sys.path.insert(0, '.'); "
                           "runpy.run_path('evaluate_slow.py', run_name='__main__')")
            else:
                wrapper = _SLOWED.format(module=module, task=task, also=list(also),
                                         argv=argv)
            out.append(Attempt("pool_kill9", f"{name}, kill after {delay} s",
                               code=_SHARDS + _children_code() + _KILL9.format(
                                   seed=i, prepare="", wrapper=wrapper, delay=delay),
                               cwd=w, deadline=180))
        return out

    def gen_evaluate_signals(n, tmp, rng):
        import signal

        out = []
        for i in range(n):
            w = tmp / f"a{i}"
            w.mkdir()
            _write_shards(w, rows=120, seed=i)
            sig = signal.SIGTERM if i % 3 != 2 else signal.SIGINT
            delay = round(rng.uniform(1.0, 6.0), 2)  # after start-up: from the pool's start
            argv = ["evaluate", "d/part-00.svm", "--methods", "gds,random", "--k", "2,3",
                    "--folds", "3", "--jobs", "2", "--out", "out", "-q"]

            def after(r, w=w):
                if "Traceback" in r.stderr or "Error" in r.stderr.replace("error:", ""):
                    return "a traceback on stderr"
                if r.returncode == 0 and not (w / "out").is_dir():
                    return "exit 0 without its report"
                return None

            out.append(Attempt("evaluate_signals", f"{sig.name} after {delay} s", argv=argv,
                               cwd=w, signal_after=(sig, delay), deadline=180,
                               must_not_exist=[w / "out"], after=after))
        return out

    def gen_full_tempdir(n, tmp, rng):
        kinds = [("short", "select --mode rows", 0),
                 ("fsize", "select --mode rows", 20_000),
                 ("fsize", "store build", 60_000),
                 ("fsize", "select --mode streaming", 40_000),
                 ("fsize", "select --mode rows", 400_000)]
        out = []
        for i in range(n):
            how, what, limit = kinds[i % len(kinds)]
            w = tmp / f"a{i}"
            w.mkdir()
            if what == "store build":
                argv = ["store", "build", "d", "s", "-q"]
            else:
                argv = ["select", "d", "-k", "3", "--mode", what.split()[-1], "--temp-dir", "T",
                        "-q"]
            out.append(Attempt("full_tempdir", f"{how} {limit or ''} {what}".replace("  ", " "),
                               code=_SHARDS + _FULL.format(rows=3000, seed=i, how=how,
                                                           limit=limit, argv=argv),
                               cwd=w, deadline=120, ok_allowed=how == "fsize"))
        return out

    def gen_storage_options(n, tmp, rng):
        bad = ['{"config_kwargs": 5}', '{"deadline": "soon"}', '{"deadline": -1}',
               '{"config_kwargs": {"read_timeout": "2"}}', '{"config_kwargs": {"retries": 3}}',
               '{"deadline": true}', '[1, 2]', 'not json', '{"config_kwargs": '
               '{"connect_timeout": null}}']
        commands = [["store", "verify", "s3://bucket/store"],
                    ["select", "s3://bucket/store", "-k", "2", "-q"],
                    ["store", "build", "d/part-00.svm", "s3://bucket/store", "-q"]]
        out = []
        for i in range(n):
            w = tmp / f"a{i}"
            w.mkdir()
            _write_shards(w, n_files=1, rows=60, seed=i)
            options = bad[i % len(bad)]
            argv = commands[i % len(commands)]
            out.append(Attempt("storage_options", f"{options} {' '.join(argv[:2])}", argv=argv,
                               cwd=w, deadline=60, ok_allowed=False,
                               env={"CORESELECT_STORAGE_OPTIONS": options,
                                    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
                                    "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}))
        return out

    return {"ckpt_outside": gen_ckpt_outside, "pool_kill9": gen_pool_kill9,
            "evaluate_signals": gen_evaluate_signals, "full_tempdir": gen_full_tempdir,
            "storage_options": gen_storage_options}


def _write_shards(folder: Path, n_files: int = 1, rows: int = 150, seed: int = 0) -> None:
    namespace: dict = {}
    exec(_SHARDS, namespace)  # noqa: S102 - the snippets' own writer, one definition
    namespace["shards"](folder / "d", n_files=n_files, rows=rows, seed=seed)


#: The classes' names, for ``--classes`` (hostile.py registers the generators).
NAMES = ("ckpt_outside", "pool_kill9", "evaluate_signals", "full_tempdir", "storage_options")

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    import hostile

    argv = sys.argv[1:]
    if "--classes" not in argv and "-h" not in argv and "--help" not in argv:
        argv = ["--classes", ",".join(NAMES), *argv]
    sys.exit(hostile.main(argv))
