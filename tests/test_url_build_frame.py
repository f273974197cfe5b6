"""The frame every URL store build shares (coreselect.store.fs._UrlBuild), on fsspec's
in-memory filesystem: all or nothing, the temporary prefix and the local scratch folder
removed whatever happens, SIGINT-type exceptions re-raised as they are, anything else one
line. (The same paths against a moto S3 server: test_remote_hostile, test_store_ingest_s3.)"""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pytest

from coreselect.errors import CoreselectError
from coreselect.store import fs as store_fs


def _url() -> str:
    return f"memory://frame-{uuid.uuid4().hex[:8]}/store"


def _left(url: str) -> list[str]:
    """Every object under the bucket of ``url`` (the target and the temporary prefixes)."""
    mem = fsspec.filesystem("memory")
    bucket = url[len("memory://"):].split("/")[0]
    return sorted(mem.find(f"/{bucket}")) if mem.exists(f"/{bucket}") else []


def _scratch(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob("coreselect-build-*"))


def _write_tile(local, target, staging):
    store_fs.UrlWriter(target)._put("tiles/x.bin", b"tile")


def test_a_mark_that_landed_before_its_write_failed_is_removed(monkeypatch):
    mem = type(fsspec.filesystem("memory"))
    real = mem.pipe_file

    def landed_then_lost(self, path, value, *args, **kwargs):
        real(self, path, value, *args, **kwargs)
        if str(path).endswith(store_fs.STAGING_MARK):
            raise PermissionError("the answer to the mark's write was lost")

    monkeypatch.setattr(mem, "pipe_file", landed_then_lost)
    url = _url()
    with pytest.raises(CoreselectError) as err:
        store_fs.build_direct(url, _write_tile)
    assert "\n" not in str(err.value)
    assert _left(url) == []


def test_a_keyboard_interrupt_is_re_raised_after_the_cleanup():
    url = _url()

    def interrupted(local, target, staging):
        _write_tile(local, target, staging)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store_fs.build_direct(url, interrupted)
    assert _left(url) == []


def test_any_other_failure_is_one_line_and_leaves_nothing():
    url = _url()

    def broken(local, target, staging):
        _write_tile(local, target, staging)
        raise OSError("disk\nfull")

    with pytest.raises(CoreselectError) as err:
        store_fs.build_direct(url, broken)
    assert "\n" not in str(err.value) and _left(url) == []


def test_the_local_scratch_folder_goes_whatever_happens(tmp_path, monkeypatch):
    monkeypatch.setattr(store_fs.tempfile, "tempdir", str(tmp_path))  # build_direct's scratch
    seen = []

    def fails_locally(local: Path):
        seen.append(local.parent)
        assert local.parent.parent == tmp_path
        raise OSError("the local build failed")

    with pytest.raises(OSError):
        store_fs.build_at_url(_url(), fails_locally, temp_dir=tmp_path)
    url = _url()
    with pytest.raises(CoreselectError):
        store_fs.build_direct(url, lambda local, target, staging: (_ for _ in ()).throw(
            ValueError("broken")))
    assert seen and _scratch(tmp_path) == [] and _left(url) == []


def test_the_target_check_sweeps_what_a_killed_build_left():
    """A build killed (SIGKILL) after its workers wrote tiles under the target leaves them
    there with its marked temporary prefix: the check the command line makes before reading
    any data removes both (the mark names a dead process of this host), not refuses."""
    import json
    import socket
    import subprocess
    import sys
    import time

    from coreselect.store.build import check_build_target

    url = _url()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid names no live process now
    mem = fsspec.filesystem("memory")
    root = url[len("memory://"):]
    mem.pipe_file(f"/{root}{store_fs.STAGING}{dead.pid}-0a1b2c3d/{store_fs.STAGING_MARK}",
                  json.dumps({"target": f"/{root}", "host": socket.gethostname(),
                              "pid": dead.pid, "created": time.time(),
                              "direct": True}).encode())
    mem.pipe_file(f"/{root}/blocks/b000000/r000000/data.npy", b"tile")
    check_build_target(url)
    assert _left(url) == []
