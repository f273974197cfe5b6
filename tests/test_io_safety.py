"""Readers on hostile or careless input (issue 11): bombs declared by size, silent
misreadings, non-finite values, and the ARFF export's label XML.

Bombs are small files that *declare* huge sizes; nothing here writes more than a few MB.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from coreselect.errors import DatasetError
from coreselect.io import from_arrays, read, write
from coreselect.io import text as iotext
from coreselect.io.arff import parse_arff_text, write_arff
from coreselect.io.dataset import IndexedNames, check_declared_width

ARFF = "@relation r\n@attribute a numeric\n@attribute b numeric\n@attribute y {0,1}\n@data\n1,2,1\n3,4,0\n"


# ------------------------------------------------------------------ memory bombs


def _run_limited(code: str) -> tuple[int, str]:
    """Run ``code`` in a child with a 1.5 GB address-space limit above its imports."""
    prog = textwrap.dedent(f"""
        import os, resource, sys
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
        import numpy, scipy.sparse, pandas, pyarrow, pyarrow.csv, pyarrow.parquet
        import coreselect.io, coreselect.io.arff, coreselect.io.libsvm, coreselect.io.tabular
        from coreselect.errors import CoreselectError
        vm = int(next(l for l in open('/proc/self/status') if l.startswith('VmSize')).split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (1536 << 20), vm + (1536 << 20)))
        try:
{textwrap.indent(textwrap.dedent(code), ' ' * 12)}
        except CoreselectError as exc:
            print('ERR', exc)
        """)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def test_libsvm_declared_width_refused(tmp_path):
    p = tmp_path / "bomb.svm"
    p.write_text("1 99999999:1\n")  # 13 bytes declaring 10^8 features
    rc, out = _run_limited(f"coreselect.io.read({str(p)!r})")
    assert rc == 0 and "ERR" in out and "declares 99999999 features but holds 1 value" in out, out
    h = tmp_path / "header.svm"
    h.write_text("1 50000000 3\n0 0:1\n")
    with pytest.raises(DatasetError, match="declares 50000000 features"):
        read(h)


def test_libsvm_wide_but_plausible_keeps_lazy_names(tmp_path):
    p = tmp_path / "wide.svm"
    p.write_text("1 500000:1\n0 3:2\n")
    ds = read(p)
    assert isinstance(ds.feature_names, IndexedNames) and ds.n_features == 500000
    assert ds.feature_names[499999] == "f499999" and "f3" in ds.feature_names
    assert ds.feature_names.index("f17") == 17


def test_check_declared_width_rule():
    check_declared_width("features", 1 << 20, 0)  # the floor is always fine
    check_declared_width("features", 2_000_000, 20_000_000)
    with pytest.raises(DatasetError, match="declares 2000000 features but holds 10"):
        check_declared_width("features", 2_000_000, 10)
    with pytest.raises(DatasetError):
        check_declared_width("features", 10**9, 10**9)  # over the hard cap


def test_csv_header_only_with_many_columns_fails_fast(tmp_path):
    p = tmp_path / "wide.csv.gz"
    with gzip.open(p, "wb") as fh:  # 10^7 columns, ~40 KB on disk
        fh.write(b"c," * 10_000_000 + b"y\n")
    rc, out = _run_limited(f"coreselect.io.read({str(p)!r}, labels=1)")
    assert rc == 0 and "more than 100000 columns" in out, out


def test_csv_header_without_rows(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("a,b,y\n\n")
    with pytest.raises(DatasetError, match="needs a data row"):
        read(p, labels=1)


@pytest.mark.parametrize("opener, suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")])
def test_decompression_bomb_capped(tmp_path, monkeypatch, opener, suffix):
    monkeypatch.setattr(iotext, "RATIO_FLOOR", 1 << 20)
    p = tmp_path / f"bomb.arff{suffix}"
    with opener(p, "wb") as fh:
        fh.write(ARFF.encode())
        fh.write(b"%" * (8 << 20) + b"\n")  # 8 MB of comment compresses to a few KB
    with pytest.raises(DatasetError, match="decompression bomb"):
        read(p, labels=1)


def test_compressed_files_stream(tmp_path):
    for opener, suffix in [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")]:
        p = tmp_path / f"d.csv{suffix}"
        with opener(p, "wt") as fh:
            fh.write("a,b,y\n1,2,1\n3,4,0\n")
        np.testing.assert_array_equal(read(p, labels=1).X, [[1, 2], [3, 4]])
    bad = tmp_path / "t.arff.xz"
    bad.write_bytes(lzma.compress(ARFF.encode())[:20])
    with pytest.raises(DatasetError, match="t.arff.xz"):
        read(bad, labels=1)


@pytest.mark.parametrize("decompressor", ["isal", "zlib"])
def test_gzip_read_equals_zlib_and_a_corrupt_stream_is_one_error(tmp_path, monkeypatch,
                                                                 decompressor):
    """.gz files are inflated by ISA-L (python-isal) when it imports, else by zlib: the same
    bytes as zlib's gzip module, members and sizes across the buffer's chunks included, and
    a corrupt deflate stream (zlib.error / IsalError, neither an OSError) is a DatasetError
    naming the file, not an internal error."""
    if decompressor == "zlib":
        monkeypatch.setattr(iotext, "_gzip", gzip)
    else:
        assert iotext._gzip.__name__ == "isal.igzip"  # a dependency: present here
    rng = np.random.default_rng(3)
    text = ARFF.encode() + b"".join(b"%% %d\n" % v for v in rng.integers(0, 10**9, 300_000))
    p = tmp_path / "big.arff.gz"
    p.write_bytes(gzip.compress(text[:1_000_001]) + gzip.compress(text[1_000_001:]))
    assert iotext.read_bytes(p) == gzip.decompress(p.read_bytes()) == text
    bad = bytearray(gzip.compress(text[:200_000]))
    bad[10] ^= 0xFF  # the first deflate block's header
    (tmp_path / "bad.arff.gz").write_bytes(bytes(bad))
    with pytest.raises(DatasetError, match="bad.arff.gz: cannot read the file"):
        read(tmp_path / "bad.arff.gz", labels=1)


# ------------------------------------------------------------ silent misreadings


def test_libsvm_duplicate_index_is_an_error(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("1 1:1 2:1\n0 3:1 3:2\n")
    with pytest.raises(DatasetError, match="feature index 3 appears twice") as exc:
        read(p)
    assert exc.value.line == 2
    p.write_text("1 5:1 2:1\n0,0 3:1\n")  # unsorted is fine; a repeated label counts once
    ds = read(p)
    np.testing.assert_array_equal(ds.X.toarray(), [[0, 1, 0, 0, 1], [0, 0, 1, 0, 0]])
    assert ds.X.has_sorted_indices and ds.Y[1].sum() == 1


def test_csv_duplicate_column_names(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a,b,a,y\n1,2,3,0\n4,5,6,1\n")
    with pytest.raises(DatasetError, match="column 'a' appears twice"):
        read(p, labels=1)


def test_csv_typo_cell_named_not_dropped(tmp_path):
    p = tmp_path / "t.csv"
    rows = "".join(f"{i},{i * 0.5},{i % 2}\n" for i in range(10)).replace("2.5,", "2.5x,")
    p.write_text("a,b,y\n" + rows)
    with pytest.raises(DatasetError, match="'b' holds numbers except '2.5x'") as exc:
        read(p, labels=1)
    assert exc.value.line == 7
    # A genuine text column stays a nominal (ID) column, visible in the metadata.
    p.write_text("id,a,y\n" + "".join(f"p{i},{i},{i % 2}\n" for i in range(5)))
    ds = read(p, labels=1)
    assert ds.id_columns == [0] and ds.metadata.nominal_values["id"][0] == "p0"


@pytest.mark.parametrize("bad, what", [("nan", "not a number"), ("inf", "not a number"), ("1e999", "not a finite")])
def test_non_finite_arff_and_libsvm_name_the_line(tmp_path, bad, what):
    with pytest.raises(DatasetError, match=what) as exc:
        parse_arff_text(ARFF.replace("3,4,0", f"3,{bad},0"), "t.arff", labels=1)
    assert exc.value.line == 7
    with pytest.raises(DatasetError) as exc:
        parse_arff_text(ARFF.replace("1,2,1\n3,4,0", "{0 1,2 1}\n{1 " + bad + "}"), "t.arff", labels=1)
    assert exc.value.line == 7
    p = tmp_path / "n.svm"
    p.write_text(f"1 1:1\n0 2:{bad}\n")
    with pytest.raises(DatasetError, match=what) as exc:
        read(p)
    assert exc.value.line == 2


def test_csv_infinite_value_names_the_line(tmp_path):
    p = tmp_path / "i.csv"
    p.write_text("a,b,y\n1,2,0\n3,inf,1\n")
    with pytest.raises(DatasetError, match="infinite value in column 'b'") as exc:
        read(p, labels=1)
    assert exc.value.line == 3


def test_parquet_invalid_utf8(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "b.parquet"
    pq.write_table(pa.table({"f": pa.array([b"ok", b"\xff\xfe"], type=pa.binary()), "y": [0, 1]}), p)
    with pytest.raises(DatasetError, match="not UTF-8"):
        read(p, labels=1)
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 2, 4], np.int32).tobytes()),
                                                 pa.py_buffer(b"ok\xff\xfe")])
    pq.write_table(pa.table({"f": bad, "y": [0, 1]}), p)
    with pytest.raises(DatasetError, match="not valid UTF-8"):
        read(p, labels=1)


# ------------------------------------------------------------------- ARFF export


def test_arff_export_never_replaces_another_label_file(tmp_path):
    ds = from_arrays(np.eye(3), np.eye(3, 2, dtype=int), label_names=["p", "q"])
    other = tmp_path / "out.xml"
    other.write_text('<labels><label name="someone"/><label name="else"/></labels>')
    before = other.read_bytes()
    with pytest.raises(DatasetError, match="names other labels"):
        write(ds, tmp_path / "out.arff")
    assert other.read_bytes() == before and not (tmp_path / "out.arff").exists()
    assert not list(tmp_path.glob(".*"))  # no temp files left
    # Naming the XML, or asking for none, works; the same labels are left alone.
    write_arff(ds, tmp_path / "out.arff", xml=tmp_path / "mine.xml")
    assert (tmp_path / "mine.xml").exists() and other.read_bytes() == before
    write_arff(ds, tmp_path / "out2.arff", xml=False)
    assert not (tmp_path / "out2.xml").exists()
    write(ds, tmp_path / "out3.arff")
    stamp = (tmp_path / "out3.xml").stat().st_mtime_ns
    write(ds, tmp_path / "out3.arff")  # same labels: the XML is kept as it is
    assert (tmp_path / "out3.xml").stat().st_mtime_ns == stamp
    assert read(tmp_path / "out3.arff").label_names == ["p", "q"]
