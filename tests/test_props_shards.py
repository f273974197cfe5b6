"""Property: a folder of row shards reads as the concatenated file reads (whole and in
chunks), or is refused in one line, for any split of any small table (CSV and LIBSVM)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.errors import DatasetError
from coreselect.io import read
from coreselect.io.chunks import open_chunks

PROPS = settings(max_examples=40, deadline=None, derandomize=True)

_cell = st.one_of(st.integers(-3, 3).map(str), st.sampled_from(["0.5", "-1.25", "2e1", "x", "y", "True", "False"]))


def _dense(m):
    return m.toarray() if sp.issparse(m) else np.asarray(m)


def _outcome(read_it):
    """``("ok", X, Y, feature names, label names)`` or ``("refused", message)`` (one line)."""
    try:
        ds = read_it()
    except DatasetError as exc:
        msg = str(exc)
        assert "\n" not in msg, msg
        return ("refused", msg)
    return ("ok", _dense(ds.X), _dense(ds.Y).astype(np.int8), list(ds.feature_names), list(ds.label_names))


def _check(folder: Path, whole: Path, labels) -> None:
    alone = _outcome(lambda: read(whole, labels=labels))
    shards = _outcome(lambda: open_chunks(folder, labels=labels).read())

    def chunked():
        ds = open_chunks(folder, labels=labels)
        parts = list(ds.chunks(chunk_rows=2))
        X = np.vstack([_dense(c.X) for c in parts])
        Y = np.vstack([_dense(c.Y) for c in parts])
        return type("D", (), {"X": X, "Y": Y, "feature_names": ds.feature_names, "label_names": ds.label_names})

    streamed = _outcome(chunked)
    for got in (shards, streamed):
        if got[0] == "refused":
            continue  # a refusal in one line is allowed; a different result is not
        assert alone[0] == "ok", (alone, got)
        np.testing.assert_array_equal(got[1], alone[1])
        np.testing.assert_array_equal(got[2], alone[2])
        assert got[3:] == alone[3:]


def _splits(n_rows: int):
    return st.lists(st.integers(1, max(n_rows - 1, 1)), max_size=3).map(
        lambda cuts: sorted({c for c in cuts if 0 < c < n_rows}))


@st.composite
def _csv_case(draw):
    n, d = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    rows = [[draw(_cell) for _ in range(d)] + [draw(st.sampled_from(["0", "1"])) for _ in range(2)]
            for _ in range(n)]
    return rows, draw(_splits(n))


@given(_csv_case())
@PROPS
def test_csv_shards_read_as_the_concatenated_file(case):
    rows, cuts = case
    header = ",".join([f"f{j}" for j in range(len(rows[0]) - 2)] + ["y0", "y1"]) + "\n"
    tmp = Path(tempfile.mkdtemp())
    try:
        (tmp / "d").mkdir()
        (tmp / "all.csv").write_text(header + "".join(",".join(r) + "\n" for r in rows))
        for k, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(rows)])):
            (tmp / "d" / f"p{k:02d}.csv").write_text(header + "".join(",".join(r) + "\n" for r in rows[a:b]))
        _check(tmp / "d", tmp / "all.csv", 2)
    finally:
        shutil.rmtree(tmp)


@st.composite
def _svm_case(draw):
    n = draw(st.integers(1, 6))
    lines = []
    for _ in range(n):
        labs = sorted(draw(st.sets(st.integers(0, 3), max_size=2)))
        feats = sorted(draw(st.sets(st.integers(0, 5), max_size=3)))
        vals = [draw(st.sampled_from(["1", "2", "-0.5", "3e-1"])) for _ in feats]
        text = " ".join(f"{i}:{v}" for i, v in zip(feats, vals))
        lines.append((",".join(map(str, labs)) + " " + text).strip() if labs else text)
    return lines, draw(_splits(n))


@given(_svm_case())
@PROPS
def test_libsvm_shards_read_as_the_concatenated_file(case):
    lines, cuts = case
    tmp = Path(tempfile.mkdtemp())
    try:
        (tmp / "d").mkdir()
        (tmp / "all.svm").write_text("".join(line + "\n" for line in lines))
        for k, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(lines)])):
            (tmp / "d" / f"p{k:02d}.svm").write_text("".join(line + "\n" for line in lines[a:b]))
        _check(tmp / "d", tmp / "all.svm", None)
    finally:
        shutil.rmtree(tmp)
