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


# ------------------------------------------------------------------ globs, links, special files

def _svm_tree(root):
    (root / "sub").mkdir(parents=True)
    (root / "a.svm").write_text("1 1:1\n2 2:1\n")
    (root / "sub" / "b.svm").write_text("1 1:2\n")
    return root


def test_double_star_reads_each_file_once_through_a_link_loop(tmp_path):
    root = _svm_tree(tmp_path / "loop")
    (root / "again").symlink_to(".")
    files = open_chunks(str(root / "**" / "*.svm")).files
    assert sorted(files) == [str(root / "a.svm"), str(root / "sub" / "b.svm")]
    assert open_chunks(str(root / "**" / "*.svm")).n_rows == open_chunks(root).n_rows == 3


def test_double_star_ends_with_two_link_loops(tmp_path):
    """Two loops make 2^40 paths for ``glob.glob``: listed in a child with a deadline."""
    import subprocess
    import sys

    root = _svm_tree(tmp_path / "loop")
    (root / "again").symlink_to(".")
    (root / "sub" / "up").symlink_to("..")
    code = ("import sys; from coreselect.io.chunks import resolve_files; "
            "print(len(resolve_files(sys.argv[1])))")
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(root / "**" / "*.svm")], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("listing the glob did not end")
    assert proc.stdout.strip() == "2", proc.stderr


def test_double_star_still_enters_a_linked_folder_elsewhere(tmp_path):
    root = _svm_tree(tmp_path / "d")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "c.svm").write_text("1 1:3\n")
    (root / "more").symlink_to(other)
    files = open_chunks(str(root / "**" / "*.svm")).files
    assert sorted(files) == [str(root / "a.svm"), str(root / "more" / "c.svm"), str(root / "sub" / "b.svm")]


def test_a_link_beside_its_target_is_read_once(tmp_path):
    root = _svm_tree(tmp_path / "d")
    (root / "alias.svm").symlink_to("a.svm")
    assert open_chunks(str(root / "*.svm")).n_rows == 2
    assert open_chunks(root).n_rows == 3


@pytest.mark.parametrize("how", ["folder", "glob", "list"])
def test_a_dangling_link_shard_is_an_error_naming_it(tmp_path, how):
    root = _svm_tree(tmp_path / "d")
    (root / "sub" / "dead.svm").symlink_to("nowhere.svm")
    data = {"folder": root, "glob": str(root / "**" / "*.svm"),
            "list": [str(root / "a.svm"), str(root / "sub" / "dead.svm")]}[how]
    with pytest.raises(DatasetError, match="dead.svm: is a symbolic link to nothing"):
        open_chunks(data)


def test_cli_names_a_dangling_shard(capsys, tmp_path):
    root = _svm_tree(tmp_path / "d")
    (root / "dead.svm").symlink_to("nowhere.svm")
    code, out, err = run(capsys, "select", root, "-k", 1)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "dead.svm" in err, err


def _special(tmp_path, kind):
    import os

    path = tmp_path / "odd.svm"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize("mode", [[], ["--mode", "rows"]])
def test_special_files_are_refused_before_they_are_opened(capsys, tmp_path, kind, mode):
    """A FIFO would block ``open`` forever and ``/dev/zero`` never ends: a child process
    with a deadline, so that the old code fails instead of hanging the suite."""
    import subprocess
    import sys

    path = _special(tmp_path, kind)
    try:
        proc = subprocess.run([sys.executable, "-m", "coreselect", "select", str(path), "-k", "1", *mode],
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {kind} did not end")
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_special_files_in_a_folder_are_named(tmp_path, kind):
    root = _svm_tree(tmp_path / "d")
    _special(root, kind)
    with pytest.raises(DatasetError, match="odd.svm: not a regular file"):
        open_chunks(root)


# ------------------------------------------------------------------ lines without end

@pytest.mark.parametrize("suffix,fill", [(".svm", b"\0"), (".svm", b"7"), (".csv", b"\0"), (".csv", b"7")])
def test_a_line_without_end_is_refused_showing_its_start_only(monkeypatch, tmp_path, suffix, fill):
    from coreselect.io import read, text

    monkeypatch.setattr(text, "MAX_LINE_BYTES", 1 << 20)
    path = tmp_path / f"nonl{suffix}"
    path.write_bytes((b"a,b\n1," if suffix == ".csv" else b"1 1:1\n1 2:") + fill * (3 << 20))
    with pytest.raises(DatasetError) as exc:
        read(path, labels=1) if suffix == ".csv" else read(path)
    msg = str(exc.value)
    assert f"a line longer than {1 << 20} bytes" in msg and len(msg) < 400, msg[:500]
    assert f"nonl{suffix}:2:" in msg


def test_a_line_without_end_is_refused_in_byte_ranges(monkeypatch, tmp_path):
    from coreselect.io import text

    monkeypatch.setattr(text, "MAX_LINE_BYTES", 1 << 20)
    path = tmp_path / "nonl.svm"
    path.write_bytes(b"1 1:1\n" * 100 + b"1 2:" + b"7" * (3 << 20))
    ds = open_chunks([str(path)])
    ds.plan_pieces(1 << 30, bounds={0: [300]})
    with pytest.raises(DatasetError, match=r"nonl.svm:101: a line longer than"):
        ds.scan()


def test_a_malformed_token_is_shown_shortened(tmp_path):
    from coreselect.io import read

    path = tmp_path / "long.svm"
    path.write_text("1 1:1\n1 2:" + "x" * 100_000 + "\n")
    with pytest.raises(DatasetError) as exc:
        read(path)
    assert "long.svm:2:" in str(exc.value) and len(str(exc.value)) < 400


# ------------------------------------------------------------------ lines after the first range

def test_a_malformed_line_after_the_first_range_names_its_own_line(tmp_path):
    """The store build's counting pass passes on what the range reader raised: the file's line,
    not that line plus the lines before the range again."""
    from coreselect.store.ingest import build_store_from_source

    lines = [f"{i % 3} 1:{i + 1} 2:1" for i in range(40)]
    lines[29] = "1 1:x"
    path = tmp_path / "bad.svm"
    path.write_text("\n".join(lines) + "\n")
    source = open_chunks([str(path)])
    source.plan_pieces(100, bounds={0: [150]})
    with pytest.raises(DatasetError) as exc:
        build_store_from_source(source, tmp_path / "out.store")
    assert exc.value.line == 30 and str(exc.value).startswith(f"{path}:30: ")
    assert not (tmp_path / "out.store").exists()


# ------------------------------------------------------------------ CSV without a header

HEADLESS = "1.0,2.0,0,1\n3.0,4.0,1,0\n5.0,2.0,1,1\n1.0,3.0,0,0\n"


def test_a_first_row_of_numbers_is_data_said_in_one_line(tmp_path, caplog):
    from coreselect.io import read

    path = tmp_path / "nh.csv"
    path.write_text(HEADLESS)
    with caplog.at_level("WARNING", logger="coreselect"):
        ds = read(path, labels=2)
    assert ds.X.shape == (4, 2) and list(ds.feature_names) == ["x0", "x1"] and list(ds.label_names) == ["x2", "x3"]
    np.testing.assert_array_equal(ds.X[:, 0], [1, 3, 5, 1])
    said = [r.getMessage() for r in caplog.records if "numbers only" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0] and "nh.csv" in said[0]


def test_header_option_decides_either_way(tmp_path):
    from coreselect.io import read

    path = tmp_path / "nh.csv"
    path.write_text(HEADLESS)
    assert read(path, labels=2, header=False).X.shape == (4, 2)
    named = read(path, labels=2, header=True)
    assert named.X.shape == (3, 2) and list(named.feature_names) == ["1.0", "2.0"]
    words = tmp_path / "w.csv"
    words.write_text("a,b,y\n1,2,0\n3,4,1\n")
    assert read(words, labels=1).X.shape == (2, 2)
    with pytest.raises(DatasetError, match="label columns must hold 0/1"):  # 'y' read as a label value
        read(words, labels=1, header=False)


def test_a_repeated_value_in_a_first_row_of_numbers_is_not_a_repeated_column(tmp_path):
    from coreselect.io import read

    path = tmp_path / "rep.csv"
    path.write_text("1.0,1.0,0\n2.0,3.0,1\n")
    assert read(path, labels=1).X.shape == (2, 2)


def test_headerless_lines_are_counted_from_the_first_row(tmp_path):
    from coreselect.io import read

    path = tmp_path / "nh.csv"
    path.write_text("1,2,0\n3,4,1\n5,6,7\n")
    with pytest.raises(DatasetError, match=r"nh.csv:3: label column 'x2' is not binary"):
        read(path, labels=1)


def test_headerless_shards_stream_as_they_read_whole(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.csv").write_text(HEADLESS)
    (folder / "b.csv").write_text(HEADLESS)
    whole, chunked = _both_ways(folder, labels=2)
    assert whole.shape == (8, 2)
    np.testing.assert_array_equal(chunked, whole)
    ds = open_chunks(folder, labels=2, header=False)
    assert ds.n_rows == 8 and list(ds.feature_names) == ["x0", "x1"]


@pytest.mark.parametrize("suffix", [".svm", ".arff"])
def test_header_is_refused_where_it_means_nothing(tmp_path, suffix):
    from coreselect.io import read, from_arrays, write

    path = tmp_path / f"d{suffix}"
    write(from_arrays(np.eye(3), np.eye(3)[:, :1]), path)
    with pytest.raises(DatasetError, match="header= .* applies to CSV files only"):
        read(path, header=False)
    with pytest.raises(DatasetError, match="header= .* applies to CSV files only"):
        open_chunks([str(path), str(path)], header=False)
    assert read(path, header=None).X.shape == (3, 3)  # the default is no option at all


def test_a_list_file_naming_a_fifo_is_refused_before_reading(tmp_path):
    import os

    root = _svm_tree(tmp_path / "d")
    os.mkfifo(root / "odd.svm")
    (tmp_path / "shards.list").write_text("d/a.svm\nd/odd.svm\n")
    (root / "a.svm").write_text("1 1:1\n")
    with pytest.raises(DatasetError, match="odd.svm: not a regular file"):
        open_chunks(tmp_path / "shards.list")
