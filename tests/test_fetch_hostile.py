"""Downloads from a hostile or broken mirror (an http.server on 127.0.0.1 in the test): slow,
silent, endless, oversized, wrong-hash and missing responses all fail fast with a FetchError,
leave nothing in the cache, and a killed download's partial file is removed by the next run."""

from __future__ import annotations

import hashlib
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from coreselect.datasets.fetch import fetch_files
from coreselect.datasets.registry import DatasetFile, DatasetInfo
from coreselect.errors import DatasetError, FetchError

PAYLOAD = os.urandom(3000)
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class _Hostile(http.server.BaseHTTPRequestHandler):
    """GET /<mode>/file: ok, slow (1 byte / 0.2 s), silent, endless, huge (announces 1 TB),
    wrong (right size, other bytes), short (closes early), missing (404)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _head(self, length: int | None) -> None:
        self.send_response(200)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def do_GET(self):  # noqa: N802
        mode = self.path.strip("/").split("/")[0]
        try:
            if mode == "ok":
                self._head(len(PAYLOAD))
                self.wfile.write(PAYLOAD)
            elif mode == "slow":
                self._head(len(PAYLOAD))
                for i in range(50):  # at most 10 s, the client gives up long before
                    self.wfile.write(PAYLOAD[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.2)
            elif mode == "silent":
                time.sleep(5)
            elif mode == "endless":
                self.send_response(200)
                self.end_headers()  # no length: read until the connection closes
                block = b"x" * 65536
                for _ in range(16384):  # 1 GiB if nobody stopped it
                    self.wfile.write(block)
            elif mode == "huge":
                self._head(10**12)
                self.wfile.write(PAYLOAD)
            elif mode == "wrong":
                self._head(len(PAYLOAD))
                self.wfile.write(bytes(len(PAYLOAD)))
            elif mode == "short":
                self._head(len(PAYLOAD))
                self.wfile.write(PAYLOAD[:100])
                self.wfile.flush()
                self.close_connection = True
            else:
                self.send_error(404, "Not Found")
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def hostile():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _info(mode: str) -> DatasetInfo:
    f = DatasetFile(path=f"{mode}/data.arff", url=None, sha256=SHA, size=len(PAYLOAD))
    return DatasetInfo(name=f"test-{mode}", features=1, instances=1, labels=1, cardinality=None,
                       format="mulan", source="test", size="3 KB", files=(f,), data=(f.path,))


@pytest.fixture
def cache(tmp_path, monkeypatch, hostile):
    monkeypatch.setenv("COREDATA_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COREDATA_MIRROR", hostile)
    monkeypatch.delenv("COREDATA", raising=False)
    return tmp_path / "cache"


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_good_download(cache):
    path = fetch_files(_info("ok"))["ok/data.arff"]
    assert path.read_bytes() == PAYLOAD and _files(cache) == ["ok/data.arff"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


@pytest.mark.parametrize("mode, message, limit", [
    ("slow", "deadline", 4.0),
    ("silent", "timed out", 4.0),
    ("endless", "more than the 3000 bytes", 4.0),
    ("huge", "announces 1000000000000 bytes", 2.0),
    ("wrong", "checksum mismatch", 2.0),
    ("short", "truncated|failed", 4.0),
    ("missing", "HTTP 404", 2.0),
])
def test_hostile_mirror_fails_fast_and_caches_nothing(cache, mode, message, limit):
    started = time.monotonic()
    with pytest.raises(FetchError, match=message) as info:
        fetch_files(_info(mode), timeout=1.0, deadline=1.5)
    assert time.monotonic() - started < limit
    assert isinstance(info.value, DatasetError) and isinstance(info.value, OSError)
    assert _files(cache) == []  # no file, no .part


def test_unverified_downloads_are_capped_too(cache):
    f = DatasetFile(path="endless/x.arff", url=None, sha256=None, size=None)
    info = DatasetInfo(name="t", features=1, instances=1, labels=1, cardinality=None, format="mulan",
                       source="t", size="?", files=(f,), data=(f.path,))
    with pytest.raises(DatasetError, match="--no-verify"):
        fetch_files(info)
    with pytest.raises(FetchError, match="more than the 100000 bytes"):
        fetch_files(info, verify=False, max_bytes=100_000, timeout=1.0, deadline=3.0)
    assert _files(cache) == []


def test_cli_hostile_mirror_is_one_line(cache, monkeypatch):
    from coreselect.cli import cli
    from coreselect.datasets import registry

    monkeypatch.setitem(registry.REGISTRY, "test-wrong", _info("wrong"))
    monkeypatch.setitem(registry._LOOKUP, "test-wrong", "test-wrong")
    r = CliRunner().invoke(cli, ["datasets", "fetch", "test-wrong", "--timeout", "1", "--deadline", "2"])
    assert r.exit_code == 2 and "checksum mismatch" in r.output
    assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


_SLOW_FETCH = """
import sys
from coreselect.datasets.fetch import fetch_files
from coreselect.datasets.registry import DatasetFile, DatasetInfo
mode, sha, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
f = DatasetFile(path=mode + "/data.arff", url=None, sha256=sha, size=size)
info = DatasetInfo(name="t", features=1, instances=1, labels=1, cardinality=None, format="mulan",
                   source="t", size="?", files=(f,), data=(f.path,))
print(fetch_files(info, timeout=5, deadline=30)[f.path])
"""


def test_killed_download_leaves_a_part_that_the_next_run_removes(cache, tmp_path):
    # The killed download and the next run share the cache folder, one level below it.
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_FETCH, "slow", SHA, str(len(PAYLOAD))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    folder = cache / "slow"
    for _ in range(100):  # wait for the partial file (at most 10 s)
        if folder.exists() and any(p.suffix == ".part" for p in folder.iterdir()):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    parts = [p.name for p in folder.iterdir()]
    assert len(parts) == 1 and parts[0].endswith(".part")  # what a kill leaves behind
    # A later run fetching another file into the same folder cleans it.
    (cache / "slow").rename(cache / "ok")
    time.sleep(0.05)
    r = subprocess.run([sys.executable, "-c", _SLOW_FETCH, "ok", SHA, str(len(PAYLOAD))], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert _files(cache) == ["ok/data.arff"]


def test_sigterm_during_a_download_leaves_nothing(cache, hostile, tmp_path):
    env = {**os.environ, "COREDATA_MIRROR": f"{hostile}/slow"}
    proc = subprocess.Popen([sys.executable, "-c", "from coreselect.cli import main; main()", "datasets", "fetch",
                             "emotions", "-q"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    folder = cache / "mulan" / "emotions"
    for _ in range(100):
        if folder.exists() and any(p.suffix == ".part" for p in folder.iterdir()):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143 and err.strip() == "coreselect: terminated"
    assert _files(cache) == []
