"""Row shards on S3 (a moto server on 127.0.0.1): a glob of gzip LIBSVM shards and a Parquet
file read as the same files do locally; a missing prefix and a truncated shard are one line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import coreselect  # noqa: E402
from coreselect.errors import DatasetError  # noqa: E402
from coreselect.io.chunks import open_chunks  # noqa: E402

from _remote import s3_fixtures  # noqa: E402
from test_io_chunks import _shards  # noqa: E402

s3, s3_env = s3_fixtures("shards", endpoint="options")


def test_s3_glob_of_gzip_shards(tmp_path, s3):
    files = _shards(tmp_path / "d", n_files=3)
    fs = s3.fs()
    for f in files:
        with fs.open(f"shards/a/{f.name}.gz", "wb") as fh:
            fh.write(gzip.compress(f.read_bytes()))
    local = coreselect.load(tmp_path / "d")
    remote = coreselect.load("s3://shards/a/*.svm.gz")
    assert remote.X.shape == local.X.shape and (remote.X != local.X).nnz == 0
    np.testing.assert_array_equal(np.asarray(remote.Y), np.asarray(local.Y))
    ds = open_chunks("s3://shards/a/*.svm.gz")
    assert ds.files == [f"s3://shards/a/{f.name}.gz" for f in files]
    assert [c.first_row for c in ds.chunks(chunk_rows=50)] == [0, 40, 80]
    # the command line, as a user would
    r = subprocess.run([sys.executable, "-m", "coreselect", "select", "s3://shards/a/*.svm.gz", "-k", "2", "-q",
                        "--json"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["selected"] == coreselect.select(local, k=2).selected.tolist()


def test_s3_parquet_and_bad_cases(tmp_path, s3):
    ds = coreselect.load(str(_shards(tmp_path / "d", n_files=1)[0]))
    from coreselect.io import write

    write(ds, tmp_path / "t.parquet")
    fs = s3.fs()
    fs.put(str(tmp_path / "t.parquet"), "shards/p/t.parquet")
    got = coreselect.load("s3://shards/p/t.parquet")
    assert np.array_equal(np.asarray(got.X), ds.X.toarray())
    with pytest.raises(DatasetError, match="matches no file"):
        open_chunks("s3://shards/nothing/*.svm")
    with fs.open("shards/t/bad.svm.gz", "wb") as fh:
        fh.write(gzip.compress(b"1 2:1\n" * 5000)[:-100])
    with pytest.raises(DatasetError) as info:
        coreselect.load("s3://shards/t/*.svm.gz")
    assert "s3://shards/t/bad.svm.gz" in str(info.value) and "\n" not in str(info.value)
