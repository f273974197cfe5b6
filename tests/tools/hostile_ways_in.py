"""Hostile inputs on the ways in from files, folders and globs (classes of the hostile-input
campaign, registered by ``tests/tools/hostile.py``; self-contained: only the Attempt record
comes from there).

* ``shard_schemas``: CSV and Parquet folders whose shards give a column two types (text and
  numbers, booleans and numbers) or text columns with different values: ``select`` and
  ``store build`` must refuse in one line naming the column and both files, never merge.
* ``glob_links``: ``**`` over folders holding links to themselves or to their parent (one
  or two loops), links beside their targets, and dangling links in a folder or a glob: each
  file is read once (the selection reports the true number of rows), a dangling link is one
  line naming it.
* ``special_inputs``: a FIFO, ``/dev/zero`` and a character device by link, a sparse file
  of zeros, a file without newlines (LIBSVM and CSV, whole and ``--mode rows``): refused in
  one line, within the deadline and the address-space limit, the message short.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Callable

_ROWS = 20  # rows per shard


def _svm_rows(rng: random.Random, n: int) -> str:
    return "".join(f"{rng.randint(0, 2)} 1:{rng.randint(1, 3)} 2:{rng.randint(1, 3)} 3:{rng.randint(1, 4)}\n"
                   for _ in range(n))


def _svm_tree(root: Path, rng: random.Random, shards: int = 3) -> int:
    """Shards ``root/p*.svm`` and ``root/sub/q*.svm``; returns the number of rows."""
    (root / "sub").mkdir(parents=True)
    for s in range(shards):
        where = root if s % 2 == 0 else root / "sub"
        (where / f"p{s}.svm").write_text(_svm_rows(rng, _ROWS))
    return shards * _ROWS


def _refusal_naming(*needles: str, short: int = 400) -> Callable:
    """An exit-2 line must name every needle (and stay short); anything else is an escape."""
    def check(r: subprocess.CompletedProcess) -> str | None:
        line = r.stderr.strip()
        missing = [n for n in needles if n not in line]
        if missing:
            return f"the message does not name {missing}: {line[:160]}"
        if len(line) > short:
            return f"a {len(line)}-character message"
        return None
    return check


def _rows_are(n: int) -> Callable:
    def check(r: subprocess.CompletedProcess) -> str | None:
        try:
            got = json.loads(r.stdout)["n_samples"]
        except (ValueError, KeyError, TypeError):
            return f"no JSON report: {r.stdout[:120]!r}"
        return None if got == n else f"read {got} rows instead of {n}"
    return check


def gen_shard_schemas(n: int, tmp: Path, rng: random.Random, Attempt) -> list:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cases = [("csv", "text"), ("csv", "boolean"), ("parquet", "text"), ("parquet", "boolean"),
             ("csv", "values"), ("parquet", "values")]
    out = []
    for i in range(n):
        fmt, how = cases[i % len(cases)]
        folder = tmp / f"s{i}"
        folder.mkdir()
        m = _ROWS
        a = [rng.randint(0, 5) for _ in range(m)]
        if how == "text":
            b = [str(rng.randint(0, 5)) for _ in range(m)]
            b[rng.randrange(m)] = "x"
            b[rng.randrange(m)] = "y"
            b = [v if v in "xy" else "w" + v for v in b]  # a text column, not a typo in numbers
        elif how == "boolean":
            b = [rng.random() < 0.5 for _ in range(m)]
        else:  # text in both, different values
            a = [rng.choice("abc") for _ in range(m)]
            b = [rng.choice("abd") for _ in range(m)]
        ys = [[rng.randint(0, 1) for _ in range(m)] for _ in range(2)]
        g = [rng.randint(0, 3) for _ in range(m)]
        names = []
        for k, col in enumerate((a, b)):
            path = folder / f"part{k}.{fmt}"
            if fmt == "csv":
                cells = [str(v) for v in col]
                path.write_text("g,f,y0,y1\n" + "".join(f"{g[r]},{cells[r]},{ys[0][r]},{ys[1][r]}\n"
                                                         for r in range(m)))
            else:
                pq.write_table(pa.table({"g": g, "f": col, "y0": ys[0], "y1": ys[1]}), path)
            names.append(path.name)
        command = (["select", str(folder), "-k", "1", "--labels", "2"] if i % 2 == 0 else
                   ["store", "build", str(folder), str(tmp / f"out{i}"), "--labels", "2", "--quiet"])
        out.append(Attempt("shard_schemas", f"{fmt} {how} ({command[0]})", argv=command, cwd=tmp,
                           inputs=[folder / nm for nm in names], must_not_exist=[tmp / f"out{i}"],
                           ok_allowed=False, check=None, deadline=90,
                           after=_refusal_naming("'f'", *names) if how != "values" else _refusal_naming(*names)))
    return out


def gen_glob_links(n: int, tmp: Path, rng: random.Random, Attempt) -> list:
    kinds = ["self loop", "two loops", "alias beside its target", "dangling in folder", "dangling in glob",
             "parent loop"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        root = tmp / f"g{i}"
        rows = _svm_tree(root, rng)
        pattern = str(root / "**" / "*.svm")
        data, check, ok, after = pattern, _rows_are(rows), True, None
        if kind == "self loop":
            (root / "again").symlink_to(".")
        elif kind == "two loops":
            (root / "again").symlink_to(".")
            (root / "sub" / "up").symlink_to("..")
        elif kind == "parent loop":
            (root / "sub" / "up").symlink_to("..")
        elif kind == "alias beside its target":
            (root / "alias.svm").symlink_to("p0.svm")
        else:
            (root / "sub" / "dead.svm").symlink_to("nowhere.svm")
            data = str(root) if kind == "dangling in folder" else pattern
            check, ok, after = None, False, _refusal_naming("dead.svm")
        argv = ["select", data, "-k", "1", "--json"] + (["--mode", "rows"] if i % 3 == 2 else [])
        out.append(Attempt("glob_links", f"{kind}{' rows' if '--mode' in argv else ''}", argv=argv, cwd=tmp,
                           check=check, ok_allowed=ok, after=after, deadline=90))
    return out


def gen_special_inputs(n: int, tmp: Path, rng: random.Random, Attempt) -> list:
    kinds = ["fifo", "dev/zero", "dev/null", "sparse", "no newline", "fifo in folder"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        suffix = ".csv" if i % 2 else ".svm"
        path = tmp / f"odd{i}{suffix}"
        data = str(path)
        if kind in ("fifo", "fifo in folder"):
            if kind == "fifo in folder":
                folder = tmp / f"f{i}"
                _svm_tree(folder, rng, shards=2)
                path = folder / "odd.svm"
                data = str(folder)
            os.mkfifo(path)
        elif kind == "dev/zero":
            path.symlink_to("/dev/zero")
        elif kind == "dev/null":
            path.symlink_to("/dev/null")
        elif kind == "sparse":  # 3 GiB of zeros on disk in a few blocks
            with open(path, "wb") as fh:
                fh.truncate(3 << 30)
        else:  # one line of 80 MiB, a few real bytes then a hole
            with open(path, "wb") as fh:
                fh.write(b"a,b\n1," if suffix == ".csv" else b"1 1:1\n1 2:")
                fh.truncate(80 << 20)
        argv = ["select", data, "-k", "1"] + (["--labels", "1"] if data.endswith(".csv") else [])
        if i % 3 == 1 and suffix == ".svm":
            argv += ["--mode", "rows"]
        out.append(Attempt("special_inputs", f"{kind} {suffix}{' rows' if '--mode' in argv else ''}", argv=argv,
                           cwd=tmp, ok_allowed=False, deadline=60,
                           after=_refusal_naming(path.name, short=300)))
    return out


def ways_in_classes(attempt_type) -> dict[str, Callable]:
    """The classes above, each a generator ``(n, tmp, rng)`` of ``attempt_type`` records."""
    def bind(gen):
        return lambda n, tmp, rng: gen(n, tmp, rng, attempt_type)

    return {"shard_schemas": bind(gen_shard_schemas), "glob_links": bind(gen_glob_links),
            "special_inputs": bind(gen_special_inputs)}


CLASS_NAMES = ("shard_schemas", "glob_links", "special_inputs")


def main(argv: list[str] | None = None) -> int:
    """Run the campaign of ``tests/tools/hostile.py`` on these classes only."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=None, help="Attempts per class (default 4; --quick: 1).")
    ap.add_argument("--quick", action="store_true", help="Few attempts, deadlines capped at 30 s.")
    ap.add_argument("--seed", type=int, default=0, help="Seed of the random choices of the generators.")
    ap.add_argument("--out", default=None, help="Also write the table and every attempt as JSON to this file.")
    args = ap.parse_args(argv)
    import hostile

    forward = ["--classes", ",".join(CLASS_NAMES), "--seed", str(args.seed)]
    forward += (["-n", str(args.n)] if args.n is not None else []) + (["--quick"] if args.quick else [])
    forward += ["--out", args.out] if args.out else []
    return hostile.main(forward)


if __name__ == "__main__":
    import sys

    sys.exit(main())
