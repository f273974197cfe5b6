"""The store build's bad input (issue 29; tests/tools/hostile.py, classes ``build_*``): a shard
that vanishes or changes during the build, a truncated compressed shard, a glob that matches
nothing, shards whose spaces disagree, a chunk that breaks the format mid-file, a bucket
without permission. Each: one line naming the file (and its line where there is one), exit 2
(a typed error from the library), no store, nothing left beside the target but the
checkpoint (with --checkpoint). Fast and deterministic: the file is changed from the build's
progress callback, at the start of a pass."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from coreselect.cli import main
from coreselect.errors import CoreselectError

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _svm(folder: Path, header: bool = False, n_files: int = 3, rows: int = 200) -> list[Path]:
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n_files):
        lines = [",".join(map(str, sorted(set(rng.integers(0, 4, 2).tolist())))) + " "
                 + " ".join(f"{j}:{rng.integers(1, 4)}"
                            for j in sorted(set(rng.integers(0, 20, 4).tolist())))
                 for _ in range(rows)]
        p = folder / f"part-{k:02d}.svm"
        p.write_text((f"{rows} 20 4\n" if header else "") + "\n".join(lines) + "\n")
        out.append(p)
    return out


def _csv(folder: Path, n_files: int = 3, rows: int = 60) -> list[Path]:
    rng = np.random.default_rng(1)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n_files):
        body = [",".join(map(str, rng.integers(0, 5, 4).tolist() + rng.integers(0, 2, 2).tolist()))
                for _ in range(rows)]
        p = folder / f"part-{k:02d}.csv"
        p.write_text("f0,f1,f2,f3,y0,y1\n" + "\n".join(body) + "\n")
        out.append(p)
    return out


def _refused(capsys, tmp_path, data, *extra, ck: bool = False) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["store", "build", str(data), str(tmp_path / "s"), "-q",
              *(["--checkpoint", str(tmp_path / "ck")] if ck else []), *map(str, extra)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
    _nothing_left(tmp_path)
    return err


def _nothing_left(tmp_path: Path) -> None:
    assert not (tmp_path / "s").exists()
    assert {p.name for p in tmp_path.iterdir()} <= {"d", "ck", "ck.parts"}


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _build_with(tmp_path, at: str, change, ck: bool, labels=None):
    """The library's build of ``d``, ``change()`` called when the pass ``at`` starts."""
    from coreselect.cli.store import open_source
    from coreselect.store.ingest import BuildOptions, build_store_from_source

    source = open_source(str(tmp_path / "d"), labels, False)
    fired = []

    def progress(stage, done, total):
        if stage == at and not fired:
            fired.append(change())

    build_store_from_source(source, tmp_path / "s", options=BuildOptions(chunk_rows=50),
                            progress=progress, checkpoint=tmp_path / "ck" if ck else None)


@pytest.mark.parametrize("ck", [False, True])
@pytest.mark.parametrize("at", ["count", "encode"])
def test_shard_vanishes_during_the_build(tmp_path, at, ck):
    files = _svm(tmp_path / "d")
    with pytest.raises(CoreselectError, match="part-01.svm"):
        _build_with(tmp_path, at, files[1].unlink, ck)
    _nothing_left(tmp_path)


def test_shard_vanishing_after_every_read_gives_the_store_read(tmp_path):
    files = _svm(tmp_path / "d")
    _build_with(tmp_path, "tiles", files[2].unlink, False)
    assert (tmp_path / "s" / "store.json").is_file()


@pytest.mark.parametrize("ck", [False, True])
@pytest.mark.parametrize("how", ["svm grow", "svm same size", "csv same size", "csv grow"])
def test_shard_changes_between_passes(tmp_path, how, ck):
    ext, _, what = how.partition(" ")
    files = (_svm if ext == "svm" else _csv)(tmp_path / "d")
    target = files[1]

    def change():
        data = target.read_bytes()
        if what == "grow":
            target.write_bytes(data + (b"1 3:1\n" if ext == "svm" else b"1,2,3,4,0,1\n"))
        else:  # the same size, one value changed (a reader reading it whole cannot tell)
            i = data.index(b"1", data.index(b"\n") + 1)
            target.write_bytes(data[:i] + b"2" + data[i + 1:])
            os.utime(target, ns=(1, 1))  # a new time even within the clock's tick

    with pytest.raises(CoreselectError, match="part-01"):
        _build_with(tmp_path, "encode", change, ck, labels="y0,y1" if ext == "csv" else None)
    _nothing_left(tmp_path)


@pytest.mark.parametrize("ext,pack", [("gz", gzip.compress), ("bz2", bz2.compress),
                                      ("xz", lzma.compress)])
def test_truncated_compressed_shard(tmp_path, capsys, ext, pack):
    files = _svm(tmp_path / "d")
    culprit = files[1].with_name(f"part-01.svm.{ext}")
    culprit.write_bytes(pack(files[1].read_bytes() * 20)[:-300])
    files[1].unlink()
    assert culprit.name in _refused(capsys, tmp_path, "d", ck=ext == "gz")


@pytest.mark.parametrize("data", ["d/*.xmc", "d/e", "d/list.txt"])
def test_glob_matches_nothing(tmp_path, capsys, data):
    _svm(tmp_path / "d")
    (tmp_path / "d" / "e").mkdir()
    (tmp_path / "d" / "list.txt").write_text("")
    assert data in _refused(capsys, tmp_path, data, ck=True)


@pytest.mark.parametrize("kind", ["features", "labels", "csv columns", "csv labels"])
def test_spaces_disagree(tmp_path, capsys, kind):
    extra = ()
    if kind.startswith("csv"):
        files = _csv(tmp_path / "d")
        head = "f0,f1,f2,f9,y0,y1" if kind == "csv columns" else "f0,f1,f2,f3,y0,y9"
        files[1].write_text(files[1].read_text().replace("f0,f1,f2,f3,y0,y1", head, 1))
        extra = ("--labels", "y0,y1")
    else:
        files = _svm(tmp_path / "d", header=True)
        new = "200 21 4" if kind == "features" else "200 20 5"
        files[1].write_text(files[1].read_text().replace("200 20 4", new, 1))
    assert "part-01" in _refused(capsys, tmp_path, "d", *extra, ck=kind == "labels")


@pytest.mark.parametrize("bad", ["1 3:1 4:oops", "1,z 3:1", "1 3:1 x:2"])
def test_chunk_breaks_the_format_mid_file(tmp_path, capsys, bad):
    files = _svm(tmp_path / "d")
    lines = files[2].read_text().splitlines()
    lines[150] = bad
    files[2].write_text("\n".join(lines) + "\n")
    err = _refused(capsys, tmp_path, "d", "--chunk-rows", "50", ck=True)
    assert "part-02.svm:151" in err, err


def test_bucket_without_permission(tmp_path, capsys, monkeypatch):
    """A server that checks signatures and knows no key: the listing is refused."""
    from _remote import Server

    server = Server({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDNOBODY")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "no-secret")
        for data, ck in (("s3://data/shards/*.svm", False), ("s3://data/shards/p.svm", True)):
            err = _refused(capsys, tmp_path, data, ck=ck)
            assert data in err and "no-secret" not in err, err
    finally:
        server.stop()
