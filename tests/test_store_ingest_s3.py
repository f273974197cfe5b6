"""The store build from files to object storage (a moto S3 server on 127.0.0.1).

Pass 3's workers write their tiles straight under the target and the driver writes the small
files and ``store.json`` last: the store is byte for byte a local build's (every object's
crc32, ``store.json`` included) in this process, with 2 worker processes and with 2 Dask
workers (whose spill is under the build's temporary prefix, and whose storage options travel
with the tasks: the workers have no credentials of their own); a worker that fails mid-pass
leaves nothing under the target nor beside it, and the target then takes a new build.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

from coreselect.errors import StoreError  # noqa: E402
from coreselect.store import open_store  # noqa: E402
from coreselect.store.fs import STAGING  # noqa: E402
from coreselect.store.ingest import BuildOptions, WholeFileChunks, build_store_from_source  # noqa: E402

from _remote import KEY, SECRET, s3_fixtures  # noqa: E402
from test_store_ingest import OPTS, _data, _files  # noqa: E402

s3, s3_env = s3_fixtures("built")
OPTIONS = BuildOptions(chunk_rows=29, **OPTS)
_COUNTER = iter(range(10**6))


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Uneven shard files (one of 1 row) and their store built in a local folder."""
    tmp = tmp_path_factory.mktemp("shards3")
    X, Y = _data()
    files = _files(tmp, X, Y, [1, 150, 151, 300])
    build_store_from_source(WholeFileChunks(files), tmp / "local", options=OPTIONS)
    return files, _local_crcs(tmp / "local")


def _local_crcs(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): zlib.crc32(p.read_bytes())
            for p in root.rglob("*") if p.is_file()}


def _objects(s3, prefix: str) -> dict[str, int]:
    """Every object under ``prefix`` and beside it (its temporary prefixes), with its crc32."""
    fs = s3.fs()
    fs.invalidate_cache()
    return {k[len(prefix) + 1:] if k.startswith(prefix + "/") else k: zlib.crc32(fs.cat_file(k))
            for k in fs.find("built") if k.startswith(prefix)}


def _url() -> str:
    return f"s3://built/store-{next(_COUNTER):04d}"


@pytest.mark.dask
def test_url_builds_are_a_local_build_byte_for_byte(shards, s3, monkeypatch):
    from coreselect.engines.dask import DaskEngine
    from coreselect.engines.local import LocalEngine

    files, want = shards
    assert len(want) > 30 and "store.json" in want
    for engine in (None, LocalEngine(2)):
        url = _url()
        build_store_from_source(WholeFileChunks(files), url, options=OPTIONS, engine=engine)
        assert _objects(s3, url[5:]) == want  # nothing else either (no temporary prefix)
    # Dask: neither the workers nor this process have credentials or an endpoint in their
    # environment; the storage options reach the workers with the tasks.
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(var)
    options = {"key": KEY, "secret": SECRET, "endpoint_url": s3.url}
    with DaskEngine(n_workers=2) as engine:
        url = _url()
        store = build_store_from_source(WholeFileChunks(files), url, options=OPTIONS,
                                        engine=engine, storage_options=options)
        assert store.verify()["files"] == len(want)
    assert _objects(s3, url[5:]) == want


def _break_row_block(r: int) -> None:
    """In this process: writing any tile of row block ``r`` fails (the server's disk is
    full), the other row blocks' tiles are written."""
    import copy

    from coreselect.store import fs

    class Full:
        def pipe_file(self, *args, **kwargs):
            raise OSError(28, "No space left on device")

    real = fs.UrlWriter._put

    def put(self, rel, data):
        if f"/r{r:06d}/" in rel:
            self = copy.copy(self)
            self.fs = Full()
        return real(self, rel, data)

    fs.UrlWriter._put = put


@pytest.mark.parametrize("engine", ["in-process", "local-2"])
def test_a_worker_failing_mid_pass_leaves_nothing(shards, s3, engine):
    from coreselect.engines.local import LocalEngine
    from coreselect.store import fs

    files, want = shards
    real = fs.UrlWriter._put
    _break_row_block(3)  # the pool's workers fork from here: they fail too
    url = _url()
    try:
        with pytest.raises(StoreError, match="r000003.*cannot write.*No space left"):
            build_store_from_source(WholeFileChunks(files), url, options=OPTIONS,
                                    engine=None if engine == "in-process" else LocalEngine(2))
    finally:
        fs.UrlWriter._put = real
    assert _objects(s3, url[5:]) == {}
    build_store_from_source(WholeFileChunks(files), url, options=OPTIONS)  # the prefix is free
    assert _objects(s3, url[5:]) == want


@pytest.mark.dask
def test_a_dask_worker_failing_mid_pass_leaves_nothing(shards, s3):
    import cloudpickle

    from coreselect.engines.dask import DaskEngine

    files, want = shards
    url = _url()
    cloudpickle.register_pickle_by_value(__import__(__name__))  # the workers import no tests
    with DaskEngine(n_workers=2) as engine:
        engine.client.run(_break_row_block, 2)
        with pytest.raises(StoreError, match="r000002"):
            build_store_from_source(WholeFileChunks(files), url, options=OPTIONS,
                                    engine=engine)
        # the other worker's tiles (written while the failing part was retried) and the
        # spill under the temporary prefix: all gone once the build has failed
        assert _objects(s3, url[5:]) == {}
    assert not any(STAGING in k for k in s3.fs().find("built"))
    with pytest.raises(StoreError, match="no store.json"):
        open_store(url)
