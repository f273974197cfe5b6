"""Hostile tables: Parquet columns of non-scalar types are refused by name (never read as
"something" and selected from), and bombs (a gzip CSV that decodes past its cap, a CSV too big
for the memory left, a Parquet file whose footer declares far more cells than its bytes hold)
are refused before pandas or Arrow allocate: each in a child process under an address-space
limit, whose peak RSS is measured."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from coreselect.errors import DatasetError  # noqa: E402
from coreselect.io import read  # noqa: E402

N = 6


def _nested(kind: str):
    """A column of N cells of a non-scalar Arrow type (one per kind of nesting)."""
    if kind == "list":
        return pa.array([[i, i + 1] for i in range(N)], pa.list_(pa.int64()))
    if kind == "large_list":
        return pa.array([[float(i)] for i in range(N)], pa.large_list(pa.float64()))
    if kind == "fixed_list":
        return pa.array([[i, i] for i in range(N)], pa.list_(pa.int32(), 2))
    if kind == "struct":
        return pa.array([{"a": i, "b": str(i)} for i in range(N)], pa.struct([("a", pa.int64()), ("b", pa.string())]))
    if kind == "map":
        return pa.array([[("k", i)] for i in range(N)], pa.map_(pa.string(), pa.int64()))
    if kind == "list_of_struct":
        return pa.array([[{"a": i}] for i in range(N)], pa.list_(pa.struct([("a", pa.int64())])))
    if kind == "list_of_text":
        return pa.array([["x", "y"] if i % 2 else ["z"] for i in range(N)], pa.list_(pa.string()))
    if kind == "empty_lists":
        return pa.array([[] for _ in range(N)], pa.list_(pa.int8()))
    raise AssertionError(kind)


NESTED = ["list", "large_list", "fixed_list", "struct", "map", "list_of_struct", "list_of_text", "empty_lists"]


@pytest.mark.parametrize("kind", NESTED)
@pytest.mark.parametrize("where", ["first", "middle", "label"])
def test_parquet_non_scalar_columns_are_refused_by_name(tmp_path, kind, where):
    cols = {"f0": pa.array(np.arange(N, dtype=np.float64)), "f1": pa.array(np.arange(N) % 3)}
    odd = _nested(kind)
    if where == "first":
        cols = {"weird": odd, **cols}
    elif where == "middle":
        cols = {"f0": cols["f0"], "weird": odd, "f1": cols["f1"]}
    cols["y"] = pa.array(np.arange(N) % 2)
    if where == "label":
        cols["weird"] = odd
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table(cols), path)
    labels = ["y", "weird"] if where == "label" else ["y"]
    with pytest.raises(DatasetError, match="'weird'.*non-scalar"):
        read(path, labels=labels)


@pytest.mark.parametrize("typ", [pa.int8(), pa.uint64(), pa.float32(), pa.bool_(), pa.string(), pa.large_string(),
                                 pa.binary(), pa.dictionary(pa.int8(), pa.string())])
def test_parquet_scalar_columns_still_read(tmp_path, typ):
    if pa.types.is_dictionary(typ):
        col = pa.array(["a", "b", "a", "c", "a", "b"]).dictionary_encode()
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ):
        vals = ["a", "b", "a", "c", "a", "b"]
        col = pa.array([v.encode() for v in vals] if pa.types.is_binary(typ) else vals, typ)
    elif pa.types.is_boolean(typ):
        col = pa.array([True, False] * 3, typ)
    else:
        col = pa.array([0, 1, 2, 3, 4, 5], typ)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"f": col, "g": pa.array(np.arange(N, dtype=np.float64)),
                             "y": pa.array(np.arange(N) % 2)}), path)
    ds = read(path, labels=["y"])
    assert ds.X.shape == (N, 2)


_CHILD = """
import json, resource, sys
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from coreselect.errors import DatasetError
from coreselect.io import read
try:
    read(sys.argv[1], labels=1)
    out = "read"
except DatasetError as exc:
    out = "DatasetError: " + str(exc)
except MemoryError:
    out = "MemoryError"
# VmHWM: this process image's peak (ru_maxrss would carry the parent's peak across exec).
hwm = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({"out": out, "maxrss_mib": hwm / 1024}))
"""


def _child(path: Path, limit: int = 3 << 30) -> dict:
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(limit)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _gzip_members(path: Path, block: bytes, copies: int, header: bytes = b"") -> None:
    """A gzip file of ``copies`` identical members of ``block`` (a bomb costs one compression)."""
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = co.compress(block) + co.flush()
    with open(path, "wb") as fh:
        if header:
            fh.write(gzip.compress(header))
        for _ in range(copies):
            fh.write(member)


@pytest.mark.parametrize("line, copies", [(b"0,0,0,0,0,0,0,1\n", 16), (b"1,2\n", 16), (b"5" * 4095 + b"\n", 16)])
def test_gzip_csv_bomb_is_refused_at_its_cap_with_little_memory(tmp_path, line, copies):
    path = tmp_path / "bomb.csv.gz"
    block = line * ((32 << 20) // len(line))  # 32 MiB per member, ~512 MiB decoded
    width = line.count(b",") + 1
    _gzip_members(path, block, copies, header=",".join(f"c{i}" for i in range(width)).encode() + b"\n")
    res = _child(path)
    assert res["out"].startswith("DatasetError") and ("decompresses to more" in res["out"] or "cells" in res["out"])
    assert res["maxrss_mib"] < 400, res


def test_csv_bigger_than_the_memory_left_is_refused_before_pandas(tmp_path):
    # 40 MB of text (under the ratio floor), 20 M cells: more than ~500 MiB of address space allows.
    path = tmp_path / "wide.csv.gz"
    line = b"0," * 39 + b"1\n"
    _gzip_members(path, line * 500_000, 1, header=",".join(f"c{i}" for i in range(40)).encode() + b"\n")
    import resource as _r  # noqa: F401  (the child measures; here only the limit is computed)
    probe = subprocess.run([sys.executable, "-c", "import coreselect.io, pandas, pyarrow;"
                            "print(open('/proc/self/status').read().split('VmSize:')[1].split()[0])"],
                           capture_output=True, text=True, timeout=60)
    base = int(probe.stdout.strip()) * 1024
    res = _child(path, limit=base + (400 << 20))
    assert res["out"].startswith("DatasetError") and "cells" in res["out"], res


@pytest.mark.parametrize("rows", [3_000_000, 30_000_000])
@pytest.mark.parametrize("typ", [np.int8, np.float64])
def test_parquet_run_length_bomb_is_refused_from_its_footer(tmp_path, rows, typ):
    path = tmp_path / "rle.parquet"
    t = pa.table({"f": pa.array(np.zeros(rows, dtype=typ)), "y": pa.array(np.zeros(rows, np.int8))})
    # One page per column: the constant column run-length encodes to a few bytes.
    pq.write_table(t, path, compression="zstd", write_statistics=False, data_page_size=1 << 30,
                   row_group_size=1 << 30, max_rows_per_page=1 << 30, write_batch_size=1 << 30)
    del t
    assert path.stat().st_size * 1000 < rows * 2  # the file really is a bomb
    res = _child(path)
    assert res["out"].startswith("DatasetError") and "declares" in res["out"], res
    assert res["maxrss_mib"] < 400, res


def test_small_tables_are_never_refused_for_memory(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(1000)))
    assert read(path, labels=["y"]).X.shape == (1000, 2)
