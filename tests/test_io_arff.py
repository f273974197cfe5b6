"""ARFF reader/writer: header quirks, labels (Mulan XML, MEKA -C), bad input, fuzzing."""

from __future__ import annotations

import bz2
import gzip
import random
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io import read
from coreselect.io.arff import find_label_xml, parse_arff_text, read_arff

XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
{}
</labels>
"""


def xml_for(*names: str) -> str:
    return XML.format("\n".join(f'<label name="{n}"></label>' for n in names))


def write_pair(tmp_path: Path, text: str, labels: tuple[str, ...] | None, stem: str = "toy") -> Path:
    p = tmp_path / f"{stem}.arff"
    p.write_text(text)
    if labels is not None:
        (tmp_path / f"{stem}.xml").write_text(xml_for(*labels))
    return p


DENSE = """% a comment
@relation 'toy: -C 2'

@attribute 'a b' numeric
@attribute 'it\\'s' {x, 'y z', w}
@attribute 0 numeric
@attribute - REAL
@attribute lab1 {0, 1}
@attribute lab2 {1,0}

@data
1.5, x, 3, -1e-3, 1, 0
% comment in data
2, 'y z', 0, 4, 0, 1
0,w,7,0,1,1
"""


def test_dense_quirks_and_mulan_labels(tmp_path):
    p = write_pair(tmp_path, DENSE, ("lab1", "lab2"))
    ds = read_arff(p)
    assert ds.feature_names == ["a b", "it's", "0", "-"]
    assert ds.label_names == ["lab1", "lab2"]
    np.testing.assert_array_equal(ds.X, [[1.5, 0, 3, -1e-3], [2, 1, 0, 4], [0, 2, 7, 0]])
    # lab2 is declared {1,0}: the value decides, not the code.
    np.testing.assert_array_equal(ds.Y, [[1, 0], [0, 1], [1, 1]])
    assert ds.Y.dtype == np.int8
    assert ds.meta["nominal_values"]["it's"] == ["x", "y z", "w"]
    assert ds.meta["feature_kinds"] == ["numeric", "nominal", "numeric", "numeric"]
    assert ds.meta["label_source"] == "mulan-xml"


def test_meka_first_and_last(tmp_path):
    text = DENSE.replace("'toy: -C 2'", "'toy: -C 2 -R'")
    p = write_pair(tmp_path, text, None)
    # -C 2 names the first two attributes, which are not binary: a clear error.
    with pytest.raises(DatasetError, match="not binary"):
        read_arff(p)


def test_meka_c_positive_negative(tmp_path):
    body = "@attribute L1 {0,1}\n@attribute L2 {0,1}\n@attribute f1 numeric\n@attribute f2 numeric\n@data\n1,0,0.5,2\n0,1,1.5,3\n"
    p = tmp_path / "m.arff"
    p.write_text("@relation 'M: -C 2 -split-number 1'\n" + body)
    ds = read_arff(p)
    assert ds.label_names == ["L1", "L2"] and ds.feature_names == ["f1", "f2"]
    np.testing.assert_array_equal(ds.Y, [[1, 0], [0, 1]])
    body2 = "@attribute f1 numeric\n@attribute L1 {0,1}\n@data\n0.5,1\n1.5,0\n"
    p.write_text("@relation 'M: -C -1'\n" + body2)
    ds = read_arff(p)
    assert ds.label_names == ["L1"] and ds.feature_names == ["f1"]


def test_xml_wins_over_stale_meka_c(tmp_path):
    # Like medical: -C 1 says the first attribute, the XML says the last one.
    text = "@relation 'MEDC: -C 1'\n@attribute a {0,1}\n@attribute b numeric\n@attribute y {0,1}\n@data\n{0 1,1 2}\n{2 1}\n"
    p = write_pair(tmp_path, text, ("y",), stem="med")
    ds = read_arff(p)
    assert ds.label_names == ["y"] and ds.feature_names == ["a", "b"]
    assert sp.issparse(ds.X)
    np.testing.assert_array_equal(ds.X.toarray(), [[1, 2], [0, 0]])
    np.testing.assert_array_equal(ds.Y, [[0], [1]])


def test_xml_lookup_suffixes(tmp_path):
    for stem in ("birds-train", "Corel5k-train-sparse", "foo-sparse", "bar-test"):
        (tmp_path / f"{stem}.arff").write_text("")
    (tmp_path / "birds.xml").write_text(xml_for("x"))
    (tmp_path / "Corel5k.xml").write_text(xml_for("x"))
    (tmp_path / "foo.xml").write_text(xml_for("x"))
    assert find_label_xml(tmp_path / "birds-train.arff").name == "birds.xml"
    assert find_label_xml(tmp_path / "Corel5k-train-sparse.arff").name == "Corel5k.xml"
    assert find_label_xml(tmp_path / "foo-sparse.arff").name == "foo.xml"
    assert find_label_xml(tmp_path / "bar-test.arff") is None


def test_xml_unescaped_names(tmp_path):
    text = "@relation r\n@attribute f numeric\n@attribute 'Swainson\\'s Thrush' {0,1}\n@data\n1,1\n"
    p = write_pair(tmp_path, text, ("Swainson's Thrush",))
    assert read_arff(p).label_names == ["Swainson's Thrush"]


def test_sparse_nominal_default_is_first_value(tmp_path):
    text = "@relation r\n@attribute f {YES, NO}\n@attribute g numeric\n@attribute y {0,1}\n@data\n{0 NO}\n{1 3,2 1}\n"
    p = write_pair(tmp_path, text, ("y",))
    ds = read_arff(p)
    np.testing.assert_array_equal(ds.X.toarray(), [[1, 0], [0, 3]])  # omitted f = YES = code 0


def test_missing_values(tmp_path):
    text = "@relation r\n@attribute f {a,b}\n@attribute g numeric\n@attribute y {0,1}\n@data\n?,1,1\na,?,0\n"
    p = write_pair(tmp_path, text, ("y",))
    with pytest.raises(DatasetError, match=r"toy\.arff:6: missing value"):
        read_arff(p)
    ds = read_arff(p, missing="bin")
    assert ds.X[0, 0] == 2 and np.isnan(ds.X[1, 1])


def test_a_numeric_missing_value_is_refused_with_what_selection_needs(tmp_path):
    """The message for a numeric '?' does not promise that an option makes the file
    selectable: missing='bin' reads NaN, which selection refuses in turn (impute first); a
    nominal '?' read that way is a category of its own, and selects."""
    from coreselect.errors import InputError
    from coreselect.selection import select

    text = ("@relation r\n@attribute f {a,b}\n@attribute g numeric\n@attribute y {0,1}\n"
            "@data\na,1,1\nb,?,0\n?,2,1\nb,3,0\n")
    p = write_pair(tmp_path, text, ("y",))
    with pytest.raises(DatasetError, match=r"toy\.arff:7: missing value '\?' in numeric "
                       r"attribute 'g': selection needs a number in every cell"):
        read_arff(p)
    ds = read_arff(p, missing="bin")
    with pytest.raises(InputError, match="NaN"):
        select(ds.X, ds.Y, k=1)
    nominal = read_arff(write_pair(tmp_path, text.replace("b,?,0", "b,5,0"), ("y",)),
                        missing="bin")
    assert nominal.X[2, 0] == 2  # the third declared category: '?'
    assert len(select(nominal.X, nominal.Y, k=1).selected) == 1


def test_compressed(tmp_path):
    p = write_pair(tmp_path, DENSE, ("lab1", "lab2"))
    ref = read_arff(p)
    for opener, suf in ((gzip.open, ".gz"), (bz2.open, ".bz2")):
        q = tmp_path / f"toy.arff{suf}"
        with opener(q, "wb") as fh:
            fh.write(p.read_bytes())
        ds = read(q)
        np.testing.assert_array_equal(ds.X, ref.X)
        np.testing.assert_array_equal(ds.Y, ref.Y)


def test_id_column(tmp_path):
    text = "@relation r\n@attribute id {p1,p2,p3}\n@attribute f {YES,NO}\n@attribute y {0,1}\n@data\np1,YES,1\np3,NO,0\np2,NO,1\n"
    p = write_pair(tmp_path, text, ("y",))
    ds = read_arff(p)
    assert ds.n_features == 2 and ds.meta["id_columns"] == [0]


@pytest.mark.parametrize("sparse", [False, True])
def test_write_read_round_trip(tmp_path, sparse):
    p = write_pair(tmp_path, DENSE, ("lab1", "lab2"))
    ds = read_arff(p)
    out = tmp_path / "out" / ("r.arff.gz" if sparse else "r.arff")
    from coreselect.io.arff import write_arff

    write_arff(ds, out, sparse=sparse)
    back = read(out)
    np.testing.assert_array_equal(back.X.toarray() if sparse else back.X, ds.X)
    np.testing.assert_array_equal(back.Y, ds.Y)
    assert back.feature_names == ds.feature_names and back.label_names == ds.label_names
    assert back.meta["nominal_values"] == ds.meta["nominal_values"]
    # MEKA reads the same labels from -C -L (last L attributes) without the XML.
    (out.parent / "r.xml").unlink()
    meka = read(out)
    assert meka.label_names == ds.label_names


# --------------------------------------------------------------------- bad input

GOOD = "@relation r\n@attribute f numeric\n@attribute g {a,b}\n@attribute y {0,1}\n@data\n1,a,1\n2,b,0\n"


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        ("", 1, "empty file"),
        ("@relation r\n@attribute f numeric\n@attribute y {0,1}\n", None, "no @data"),
        (GOOD.replace("@attribute f numeric", "@attribute f nonsense"), 2, "unknown type"),
        (GOOD.replace("@attribute g {a,b}", "@attribute g {a,b"), 3, "closing brace"),
        (GOOD.replace("@attribute f numeric", "garbage line"), 2, "malformed header"),
        (GOOD.replace("2,b,0", "2,b"), 7, "expected 3 values, found 2"),
        (GOOD.replace("2,b,0", "2,c,0"), 7, "not declared"),
        (GOOD.replace("2,b,0", "x,b,0"), 7, "not a number"),
        (GOOD.replace("1,a,1", "1,a,2").replace("{0,1}", "numeric"), 6, "not binary"),
        (GOOD.replace("@attribute y {0,1}", "@attribute y {0,1,2}"), 4, "not binary"),
        (GOOD.replace("1,a,1\n2,b,0", "{0 1,2 1}\n{5 1}"), 7, "out of range"),
        (GOOD.replace("1,a,1\n2,b,0", "{0 1,2 1}\n{2 1,0 1}"), 7, "increase"),
        (GOOD.replace("1,a,1\n2,b,0", "{0 1,2 1}\n{0 1 2}"), 7, "malformed sparse"),
        (GOOD.replace("1,a,1\n2,b,0", "{0 1,2 1}\n{1 zz}"), 7, "not declared"),
        (GOOD.replace("1,a,1\n2,b,0", "{0 1,2 1}\n{x 1}"), 7, "not an integer"),
        (GOOD.replace("1,a,1\n2,b,0", "{0 1,2 1}\n1,a,1"), 7, "dense or malformed"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path, text, line, pattern):
    p = write_pair(tmp_path, text, ("y",), stem="bad")
    with pytest.raises(DatasetError, match=pattern) as exc:
        read_arff(p)
    msg = str(exc.value)
    assert "bad.arff" in msg
    if line is not None:
        assert f"bad.arff:{line}:" in msg, msg


def test_xml_naming_missing_attribute(tmp_path):
    p = write_pair(tmp_path, GOOD, ("y", "nope"), stem="bad")
    with pytest.raises(DatasetError, match="not attributes") as exc:
        read_arff(p)
    assert "bad.xml" in str(exc.value) and "'nope'" in str(exc.value)


def test_no_labels_anywhere(tmp_path):
    p = write_pair(tmp_path, GOOD, None, stem="nolab")
    with pytest.raises(DatasetError, match="which attributes are labels"):
        read_arff(p)


def test_bad_xml_and_bad_gzip(tmp_path):
    p = write_pair(tmp_path, GOOD, None, stem="x")
    (tmp_path / "x.xml").write_text("<labels><label name='y'>")
    with pytest.raises(DatasetError, match="bad XML"):
        read_arff(p)
    g = tmp_path / "z.arff.gz"
    g.write_bytes(gzip.compress(GOOD.encode())[:30])
    with pytest.raises(DatasetError, match="z.arff.gz"):
        read_arff(g, labels=1)


# ------------------------------------------------------------------------ fuzzing

SEEDS = [
    GOOD,
    "@relation 'r: -C -1'\n@attribute f numeric\n@attribute g numeric\n@attribute y {0,1}\n@data\n{0 1.5,2 1}\n{1 -2}\n{}\n",
    GOOD.replace("1,a,1\n2,b,0", "{0 1,2 1}\n{1 b}\n{}"),
    DENSE,
]


def _mutate(rng: random.Random, text: str) -> str:
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if not b:
            break
        i = rng.randrange(len(b))
        if op == 0:
            del b[i : i + rng.randint(1, 8)]
        elif op == 1:
            j = rng.randrange(len(b))
            b[i:i] = b[j : j + rng.randint(1, 12)]
        elif op == 2:
            b[i] = rng.choice(b"{}',\"%?@ \n\\0123456789-.eabxyz\xff")
        elif op == 3:
            b = b[: rng.randrange(len(b) + 1)]
        else:
            b[i:i] = rng.choice([b"\n", b",", b"{", b"}", b"'", b" ", b"?", b"nan", b"1e999", b"-1"])
    return bytes(b).decode("utf-8", errors="replace")


def test_fuzz_arff_only_dataset_errors(tmp_path):
    rng = random.Random(1234)
    parsed = 0
    (tmp_path / "f.xml").write_text(xml_for("y"))
    for n in range(600):
        seed = SEEDS[n % len(SEEDS)]
        text = _mutate(rng, seed)
        try:
            ds = parse_arff_text(text, str(tmp_path / "f.arff"), labels=None if n % 2 else 1)
        except DatasetError:
            continue
        # What parses must be a consistent dataset, not just "no other exception".
        parsed += 1
        X = ds.X.toarray() if sp.issparse(ds.X) else np.asarray(ds.X, dtype=float)
        Y = ds.Y.toarray() if sp.issparse(ds.Y) else np.asarray(ds.Y)
        assert X.shape[0] == Y.shape[0] and Y.shape[1] >= 1, text
        assert len(ds.feature_names) == X.shape[1] and len(ds.label_names) == Y.shape[1], text
        assert set(np.unique(Y).tolist()) <= {0, 1}, text
        assert np.isfinite(X).all(), text
    assert parsed > 0  # the mutations leave some files valid, so the checks above run


# ------------------------------------------------- whole file = the blocks concatenated

import json  # noqa: E402
import os  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import reference_readers  # noqa: E402
from _dataset_digest import digest  # noqa: E402

_DIGESTS = json.loads((Path(__file__).parent / "data" / "reader_digests.json").read_text())
# the small and medium files (the large ones are read whole by tests/test_io_chunks.py)
_BLOCKED = ["meka/Music.arff", "meka/Yeast.arff.bz2", "mulan/cal500/cal500.arff", "mulan/emotions/emotions.arff",
            "mulan/genbase/genbase.arff", "mulan/medical/medical.arff", "mulan/enron/enron-test.arff",
            "mulan/corel5k/Corel5k-test-sparse.arff", "mulan/scene/scene-test.arff"]


@pytest.mark.parametrize("rel", _BLOCKED)
def test_shared_files_read_in_blocks_as_before(coredata, rel):
    """Read in about five blocks, the shared ARFF files give the Dataset the old whole-file
    reader gave (pinned digests: arrays, dtypes, names, metadata with the ID columns)."""
    path = coredata / rel
    size = os.path.getsize(path) * (8 if rel.endswith(".bz2") else 1)
    assert digest(read_arff(path, chunk_bytes=size // 5 + 1)) == _DIGESTS[rel]


def _outcome(fn):
    try:
        return "ok", fn()
    except DatasetError as exc:
        return "error", str(exc)


_value = st.one_of(st.integers(-50, 50).map(str), st.floats(-1e6, 1e6, allow_nan=False).map(repr),
                   st.sampled_from(["0", "-0", "1e-3", "+7", " 3 "]))
_nominal = st.sampled_from(["a", "b", "'c d'", "b"])
_bad = st.sampled_from(["?", "x", "1e400", "zz", "nan", ""])


@st.composite
def _arff(draw):
    d = draw(st.integers(1, 4))
    kinds = [draw(st.sampled_from(["numeric", "{a,b,'c d'}", "numeric"])) for _ in range(d)]
    n = draw(st.sampled_from([0, 1, draw(st.integers(2, 30))]))
    sparse = draw(st.booleans())
    bad = draw(st.integers(0, 4)) == 0  # a file with bad or missing cells
    lines = ["% comment", "@relation 'r: -C -2'"] + [f"@attribute f{j} {k}" for j, k in enumerate(kinds)]
    lines += ["@attribute y0 {0,1}", "@attribute y1 numeric", "", "@data"]
    for _ in range(n):
        cells = [draw(_value if k == "numeric" else _nominal) for k in kinds]
        cells += [draw(st.sampled_from(["0", "1", "1"])), draw(st.sampled_from(["0", "1"]))]
        if bad and draw(st.integers(0, 3)) == 0:
            cells[draw(st.integers(0, len(cells) - 1))] = draw(_bad)
        if sparse:
            keep = [(j, c) for j, c in enumerate(cells) if draw(st.booleans())]
            if draw(st.integers(0, 19)) == 0:
                keep.reverse()
            lines.append("{" + ",".join(f"{j} {c}" for j, c in keep) + "}")
        else:
            lines.append(",".join(cells))
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "% c", "   "])))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@settings(max_examples=60, deadline=None)
@given(text=_arff(), block=st.sampled_from([1, 7, 64, 1 << 20]), missing=st.sampled_from(["error", "bin"]),
       gz=st.booleans())
def test_blocks_concatenate_to_the_reference(tmp_path_factory, text, block, missing, gz):
    """Random small ARFF files (dense and sparse, 0/1/many rows, nominal and quoted values,
    missing values, bad cells): read in blocks of 1, 7, 64 bytes or whole == the old
    whole-file reader, or the same error."""
    p = tmp_path_factory.mktemp("a") / ("r.arff.gz" if gz else "r.arff")
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    want = _outcome(lambda: reference_readers.read_arff(p, missing=missing))
    got = _outcome(lambda: read_arff(p, missing=missing, chunk_bytes=block))
    if want[0] == "error" or got[0] == "error":
        if block >= 1 << 20:
            assert got == want
        else:  # several blocks: the first error of the first block holding one
            assert got[0] == want[0] == "error", (got, want)
        return
    assert digest(got[1]) == digest(want[1])
