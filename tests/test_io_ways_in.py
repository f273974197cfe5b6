"""The ways into the readers from folders, globs and odd files: shards whose column types
disagree are refused naming both files and the column (never merged into recoded values),
``**`` reads each file once, dangling links and special files are refused up front, a line
without end is refused in bounded memory, and errors after the first byte range name the
file's own line."""

from __future__ import annotations

import numpy as np
import pytest

from coreselect.cli import main
from coreselect.errors import DatasetError
from coreselect.io.chunks import open_chunks

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _both_ways(data, labels=1):
    """The shards read whole (``read``) and in chunks: each must refuse, or agree."""
    got = []
    for how in ("read", "chunks"):
        ds = open_chunks(data, labels=labels)
        if how == "read":
            got.append(ds.read().X)
        else:
            got.append(np.vstack([c.X for c in ds.chunks()]))
    return got


# ------------------------------------------------------------------ conflicting schemas

def _csv_pair(folder, a, b):
    folder.mkdir()
    (folder / "a.csv").write_text("f1,f2,y\n" + "".join(f"{i},{v},{i % 2}\n" for i, v in enumerate(a)))
    (folder / "b.csv").write_text("f1,f2,y\n" + "".join(f"{i},{v},{i % 2}\n" for i, v in enumerate(b)))


@pytest.mark.parametrize("how", ["read", "chunks"])
def test_csv_shards_whose_column_types_disagree_are_refused(tmp_path, how):
    _csv_pair(tmp_path / "d", [2, 4], ["x", 4])
    ds = open_chunks(tmp_path / "d", labels=1)
    with pytest.raises(DatasetError) as exc:
        ds.read() if how == "read" else list(ds.chunks())
    msg = str(exc.value)
    assert "b.csv" in msg and "a.csv" in msg and "'f2'" in msg and "\n" not in msg


def test_csv_shards_of_one_kind_still_merge(tmp_path):
    _csv_pair(tmp_path / "d", [2, 4], [1.5, 3])  # integers and floats: both numbers
    whole, chunked = _both_ways(tmp_path / "d")
    np.testing.assert_array_equal(whole[:, 1], [2, 4, 1.5, 3])
    np.testing.assert_array_equal(chunked, whole)


def test_cli_select_refuses_csv_shards_of_two_types(capsys, tmp_path):
    _csv_pair(tmp_path / "d", [2, 4], ["x", 4])
    code, out, err = run(capsys, "select", tmp_path / "d", "-k", 2, "--labels", 1)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "'f2'" in err and "a.csv" in err and "b.csv" in err


@pytest.mark.parametrize("first,second,kinds", [
    ([1.5, 2.0], ["x", "4"], ("text", "number")),
    ([1, 5], [True, False], ("boolean", "number")),
])
@pytest.mark.parametrize("how", ["read", "chunks"])
def test_parquet_shards_whose_column_types_disagree_are_refused(tmp_path, first, second, kinds, how):
    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"f1": [1, 2], "f2": first, "y": [0, 1]}), tmp_path / "p" / "a.parquet")
    pq.write_table(pa.table({"f1": [3, 4], "f2": second, "y": [1, 0]}), tmp_path / "p" / "b.parquet")
    ds = open_chunks(tmp_path / "p", labels=1)
    with pytest.raises(DatasetError) as exc:
        ds.read() if how == "read" else list(ds.chunks())
    msg = str(exc.value)
    assert "b.parquet" in msg and "a.parquet" in msg and "'f2'" in msg
    assert f"{kinds[0]} values here but {kinds[1]} values" in msg


def test_text_shards_read_whole_must_hold_the_same_values(tmp_path):
    """Read whole (``load`` of a folder), two text columns with different values would give
    the same code to different values; the first pass already refused them."""
    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"f1": [1, 2], "f2": ["a", "b"], "y": [0, 1]}), tmp_path / "p" / "a.parquet")
    pq.write_table(pa.table({"f1": [3, 4], "f2": ["a", "c"], "y": [1, 0]}), tmp_path / "p" / "b.parquet")
    with pytest.raises(DatasetError, match="values of its text columns differ from those of .*a.parquet"):
        open_chunks(tmp_path / "p", labels=1).read()


def test_parquet_numbers_kept_as_text_still_merge_with_numbers(tmp_path):
    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"f1": [1, 2], "f2": [1.5, 2.0], "y": [0, 1]}), tmp_path / "p" / "a.parquet")
    pq.write_table(pa.table({"f1": [3, 4], "f2": ["3", "4"], "y": [1, 0]}), tmp_path / "p" / "b.parquet")
    whole, chunked = _both_ways(tmp_path / "p")
    np.testing.assert_array_equal(whole[:, 1], [1.5, 2, 3, 4])
    np.testing.assert_array_equal(chunked, whole)
