"""A seeded, time-bounded fuzz harness over every reader (issue 11).

One child process runs the mutator for ``FUZZ_SECONDS`` (default 3) under an address-space
limit (``resource.setrlimit(RLIMIT_AS)``: 1 GiB above what its imports take) and reports
each input whose exception is not a :class:`coreselect.errors.CoreselectError`. The parent
asserts that nothing escaped, that no process died by a signal, and that the memory limit
held. Inputs are small generated files; the "bombs" among them only declare huge sizes
(LIBSVM headers and indices, ARFF sparse indices, CSV widths, Mulan XML entities).

Reproduce a failure with ``FUZZ_SEED=<seed> FUZZ_SECONDS=<s> pytest tests/test_fuzz_readers.py``;
the failing input is written to the test's temporary folder and named in the message.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CHILD = r'''
import io, os, random, resource, sys, time, traceback
os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"  # jemalloc/mimalloc reserve address space up front
import numpy, scipy.sparse, pandas, pyarrow, pyarrow.parquet as pq, pyarrow.csv
import coreselect.io, coreselect.io.arff, coreselect.io.libsvm, coreselect.io.tabular, coreselect.io.labels
from coreselect.errors import CoreselectError
# the compiled LIBSVM parser loads (numba, from its disk cache) before the clock starts
from coreselect.io._numba_libsvm import parse_block, sort_rows
parse_block(b"1 1:1\n", 1)
sort_rows(numpy.array([0, 1], numpy.int64), numpy.array([0], numpy.int32), numpy.array([1.0]))

out_dir, seed, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])

XML = b'<?xml version="1.0"?>\n<labels xmlns="http://mulan.sourceforge.net/labels"><label name="y"></label><label name="z"></label></labels>\n'
ARFF_D = b"@relation 'r: -C -2'\n@attribute f numeric\n@attribute g {a,b,'c d'}\n@attribute s string\n@attribute y {0,1}\n@attribute z {0,1}\n@data\n1.5,a,'x',1,0\n-2e3,'c d',w,0,1\n?,b,x,1,1\n"
ARFF_S = b"@relation r\n@attribute f numeric\n@attribute g numeric\n@attribute h {0,1}\n@attribute y {0,1}\n@attribute z {0,1}\n@data\n{0 1.5,2 1,3 1}\n{1 -2}\n{}\n{4 1}\n"
SVM = b"3 5 2\n0,1 0:1.5 3:2\n 1:1\n1 4:0.25\n"
SVM1 = b"1 1:1 3:2.5\n2,3 2:1\n"
CSV = b"f,g,t,y,z\n1,0.5,a,1,0\n2,1.5,b,0,1\n3,2.5,a,1,1\n"
buf = io.BytesIO()
pq.write_table(pyarrow.table({"f": [1.0, 2.0], "t": ["a", "b"], "y": [0, 1], "z": [1, 0]}), buf)
PARQUET = buf.getvalue()
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), vm + (1 << 30)))

SEEDS = [("d.arff", ARFF_D, None), ("s.arff", ARFF_S, None), ("d.arff", ARFF_D, "xml"), ("x.svm", SVM, None),
         ("y.svm", SVM1, None), ("c.csv", CSV, 2), ("p.parquet", PARQUET, None), ("p.parquet", PARQUET, 2),
         ("d.arff.gz", ARFF_D, 2), ("c.csv.bz2", CSV, "y,z"), ("s.arff.xz", ARFF_S, None), ("labels.xml", XML, None)]
TOKENS = [b"\n", b",", b"{", b"}", b"'", b'"', b" ", b"?", b"nan", b"inf", b"1e999", b"-1", b"", b"\t", b":",
          b"99999999", b"4294967296", b"1e308", b"@data", b"@attribute q numeric", b"%", b"\xff", b"\x00", b"0x10",
          b"1_0", b"\r", b"3:1 3:2", b",,", b"a,a", b'<!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">]>', b"&a;" * 8]

def mutate(rng, data):
    b = bytearray(data)
    for _ in range(rng.randint(1, 5)):
        op = rng.randrange(7)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            del b[i:i + rng.randint(1, 8)]
        elif op == 1 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 16)]
        elif op == 2 and b and i < len(b):
            b[i] = rng.randrange(256)
        elif op == 3:
            b = b[:i]
        elif op == 4:
            # Declared-size bombs: a number in the file replaced by a huge one.
            k = bytes(b).find(b"1", i)
            if k >= 0:
                b[k:k + 1] = rng.choice([b"99999999", b"100000000", b"2147483648", b"1" + b"0" * 30])
        else:
            b[i:i] = rng.choice(TOKENS)
    return bytes(b)

def encode(name, data):
    import gzip, bz2, lzma
    if name.endswith(".gz"):
        return gzip.compress(data)
    if name.endswith(".bz2"):
        return bz2.compress(data)
    if name.endswith(".xz"):
        return lzma.compress(data)
    return data

rng = random.Random(seed)
deadline = time.monotonic() + seconds
attempts = 0
classes = {}
xml_path = os.path.join(out_dir, "labels.xml")
while time.monotonic() < deadline:
    name, data, labels = rng.choice(SEEDS)
    raw = mutate(rng, data) if rng.random() < 0.95 else data
    path = os.path.join(out_dir, name)
    with open(path, "wb") as fh:
        fh.write(encode(name, raw))
    if labels == "xml":
        with open(xml_path, "wb") as fh:
            fh.write(mutate(rng, XML) if rng.random() < 0.5 else XML)
        labels = xml_path
    attempts += 1
    try:
        if name == "labels.xml":
            coreselect.io.labels.read_label_xml(path)
        else:
            coreselect.io.read(path, labels=labels)
        classes["ok"] = classes.get("ok", 0) + 1
    except CoreselectError as exc:
        key = type(exc).__name__
        classes[key] = classes.get(key, 0) + 1
    except BaseException as exc:
        keep = os.path.join(out_dir, f"escape-{attempts}-{name}")
        os.replace(path, keep)
        print(f"ESCAPE {type(exc).__name__}: {exc!s:.200} (input {keep}, labels={labels!r})")
        traceback.print_exc(limit=4, file=sys.stdout)
        sys.exit(3)
print("ATTEMPTS", attempts, sorted(classes.items()))
'''


def test_fuzz_all_readers(tmp_path):
    seed = int(os.environ.get("FUZZ_SEED", "20261126"))
    seconds = float(os.environ.get("FUZZ_SECONDS", "3"))
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(seed), str(seconds)],
                       capture_output=True, text=True, timeout=seconds + 60)
    report = textwrap.shorten(r.stdout + r.stderr, 3000)
    assert r.returncode >= 0, f"the reader process died by signal {-r.returncode}: {report}"
    assert r.returncode == 0 and "ESCAPE" not in r.stdout, report
    assert "ATTEMPTS" in r.stdout and int(r.stdout.split("ATTEMPTS")[1].split()[0]) > 20, report
