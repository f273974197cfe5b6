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
    monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
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


def _wait_for_part(folder, proc: subprocess.Popen, within: float = 600) -> None:
    """Until the download has written its partial file (the child's imports take seconds, many
    more on a busy machine): polled, bounded by a hang guard, failing if the child ended."""
    deadline = time.monotonic() + within
    while not (folder.exists() and any(p.suffix == ".part" for p in folder.iterdir())):
        if proc.poll() is not None:
            pytest.fail(f"the download ended before it wrote a partial file: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("no partial file within the hang guard")
        time.sleep(0.05)


def test_killed_download_leaves_a_part_that_the_next_run_removes(cache, tmp_path):
    # The killed download and the next run share the cache folder, one level below it.
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_FETCH, "slow", SHA, str(len(PAYLOAD))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    folder = cache / "slow"
    _wait_for_part(folder, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    parts = [p.name for p in folder.iterdir()]
    assert len(parts) == 1 and parts[0].endswith(".part")  # what a kill leaves behind
    # A later run fetching another file into the same folder cleans it.
    (cache / "slow").rename(cache / "ok")
    time.sleep(0.05)
    r = subprocess.run([sys.executable, "-c", _SLOW_FETCH, "ok", SHA, str(len(PAYLOAD))], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert _files(cache) == ["ok/data.arff"]


def test_sigterm_during_a_download_leaves_nothing(cache, hostile, tmp_path):
    env = {**os.environ, "COREDATA_MIRROR": f"{hostile}/slow"}
    proc = subprocess.Popen([sys.executable, "-c", "from coreselect.cli import main; main()", "datasets", "fetch",
                             "emotions", "-q"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    folder = cache / "mulan" / "emotions"
    _wait_for_part(folder, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and err.strip() == "coreselect: terminated", (proc.returncode, err[-500:])
    assert _files(cache) == []


# ----------------------------------------------------------------------------------------------
# Raw-socket servers that break HTTP itself: every behaviour (trickled status line or headers,
# protocol violations at each step of the exchange) must give a FetchError naming the URL
# within the deadline, leave nothing in the cache, and never read as a bug.

def _trickle(conn, data: bytes, pause: float = 0.25, limit: float = 300.0) -> None:
    end = time.monotonic() + limit
    for i in range(len(data)):
        if time.monotonic() > end:
            return
        conn.sendall(data[i:i + 1])
        time.sleep(pause)


def _endless(conn, prefix: bytes, unit: bytes) -> None:
    conn.sendall(prefix)
    end = time.monotonic() + 300  # far past any deadline: a missing one shows as a hang
    while time.monotonic() < end:
        conn.sendall(unit)
        time.sleep(0.25)


OK_HEAD = f"HTTP/1.1 200 OK\r\nContent-Length: {len(PAYLOAD)}\r\n".encode()

#: behaviour -> what the server sends after reading the request (a function of the socket).
RAW = {
    "trickle_status": lambda c: _trickle(c, b"HTTP/1.1 200 OK\r\n" * 100),
    "trickle_headers": lambda c: _endless(c, b"HTTP/1.1 200 OK\r\n", b"X-A: b\r\n"),
    "trickle_one_header": lambda c: (c.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: "), _trickle(c, b"a" * 1000)),
    "trickle_body": lambda c: (c.sendall(OK_HEAD + b"\r\n"), _trickle(c, PAYLOAD)),
    "bad_status": lambda c: c.sendall(b"garbage line\r\n\r\n"),
    "bad_version": lambda c: c.sendall(b"HTTP/9.9 200 OK\r\nContent-Length: 3\r\n\r\nabc"),
    "bad_code": lambda c: c.sendall(b"HTTP/1.1 abc OK\r\n\r\n"),
    "http09": lambda c: c.sendall(PAYLOAD),
    "many_headers": lambda c: c.sendall(OK_HEAD + b"".join(b"X-%d: y\r\n" % i for i in range(150)) + b"\r\n" + PAYLOAD),
    "long_header": lambda c: c.sendall(OK_HEAD + b"X-Big: " + b"a" * 70_000 + b"\r\n\r\n" + PAYLOAD),
    "long_status": lambda c: c.sendall(b"HTTP/1.1 200 " + b"O" * 70_000 + b"\r\n\r\n"),
    "bad_chunked": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
    "short_chunked": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfff\r\nabc"),
    "huge_chunk": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc"),
    "length_too_big": lambda c: c.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(PAYLOAD) + 500}\r\n\r\n".encode()
                                          + PAYLOAD),
    "length_too_small": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" + PAYLOAD),
    "length_garbage": lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: -5x\r\n\r\n" + PAYLOAD),
    "two_lengths": lambda c: c.sendall(OK_HEAD + b"Content-Length: 7\r\n\r\n" + PAYLOAD),
    "gzip_garbage": lambda c: c.sendall(OK_HEAD + b"Content-Encoding: gzip\r\n\r\n" + bytes(len(PAYLOAD))),
    "close_at_once": lambda c: None,
    "redirect_loop": lambda c: c.sendall(b"HTTP/1.1 302 Found\r\nLocation: /redirect_loop/x\r\nContent-Length: 0\r\n\r\n"),
    "redirect_ftp": lambda c: c.sendall(b"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n"),
    "status_500": lambda c: c.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"),
    "binary_junk": lambda c: c.sendall(bytes(range(256)) * 300),
}





def _serve_raw(srv) -> None:
    import socket as _socket

    def one(conn):
        try:
            conn.settimeout(30)
            req = b""
            while b"\r\n\r\n" not in req and len(req) < 65536:
                more = conn.recv(4096)
                if not more:
                    return
                req += more
            mode = req.split(b" ", 2)[1].decode().strip("/").split("/")[0]
            RAW.get(mode, lambda c: c.sendall(b"HTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n"))(conn)
        except OSError:
            pass
        finally:
            try:
                conn.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    while True:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        threading.Thread(target=one, args=(conn,), daemon=True).start()


@pytest.fixture(scope="module")
def raw_server():
    import socket as _socket

    srv = _socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    threading.Thread(target=_serve_raw, args=(srv,), daemon=True).start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


@pytest.mark.parametrize("mode", sorted(RAW))
@pytest.mark.parametrize("timeout", [0.5, 10.0])  # per-read timeout shorter and longer than the deadline
def test_broken_servers_give_a_fetch_error_within_the_deadline(tmp_path, monkeypatch, raw_server, mode, timeout):
    monkeypatch.setenv("COREDATA_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COREDATA_MIRROR", raw_server)
    monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
    deadline = 1.5
    started = time.monotonic()
    try:
        got = fetch_files(_info(mode), timeout=timeout, deadline=deadline)
    except FetchError as exc:
        assert raw_server in str(exc)
        assert _files(tmp_path / "cache") == []
    else:  # a server that garbles only what HTTP tolerates (a bad Content-Length) still gives the file
        assert got[f"{mode}/data.arff"].read_bytes() == PAYLOAD
    assert time.monotonic() - started < deadline + 2.0, mode


@pytest.mark.parametrize("mode", ["trickle_status", "trickle_headers", "bad_status", "many_headers", "long_header",
                                  "http09", "bad_chunked"])
def test_cli_broken_server_is_one_line_exit_2(tmp_path, raw_server, mode):
    env = {**os.environ, "COREDATA_HOME": str(tmp_path / "cache"), "COREDATA_MIRROR": f"{raw_server}/{mode}"}
    env["COREDATA"] = ""  # no local copy (unset would mean ../shared/data)
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "coreselect", "datasets", "fetch", "emotions", "-q", "--deadline", "2"],
                       env=env, capture_output=True, text=True, timeout=240)
    # the servers go on for 300 s: this bound (a fresh interpreter's start-up on a busy machine
    # included) is far below that and far above the 2 s deadline
    assert time.monotonic() - started < 90
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert raw_server in r.stderr and "bug" not in r.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "-1", "0", "1e400"])
@pytest.mark.parametrize("option", ["--deadline", "--timeout"])
def test_non_finite_or_non_positive_seconds_are_refused(cache, option, value):
    from coreselect.cli import cli

    r = CliRunner().invoke(cli, ["datasets", "fetch", "emotions", option, value, "--force"])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    kw = {option.strip("-"): float(value)}
    with pytest.raises(DatasetError.__mro__[1]):  # a CoreselectError (ParameterError)
        fetch_files(_info("ok"), **kw)


@pytest.mark.parametrize("kind", ["fifo", "folder", "device", "socket", "missing"])
def test_file_mirror_that_is_not_a_regular_file_is_refused_at_once(tmp_path, monkeypatch, kind):
    import socket as _socket

    mirror = tmp_path / "mirror"
    (mirror / kind).mkdir(parents=True)
    target = mirror / kind / "data.arff"
    keep = None
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    elif kind == "device":
        target.symlink_to("/dev/zero")
    elif kind == "socket":
        keep = _socket.socket(_socket.AF_UNIX)
        monkeypatch.chdir(target.parent)
        keep.bind("data.arff")
    monkeypatch.setenv("COREDATA_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COREDATA_MIRROR", mirror.as_uri())
    monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
    started = time.monotonic()
    try:
        with pytest.raises(FetchError, match="not a regular file|No such file|No such device"):
            fetch_files(_info(kind), timeout=1.0, deadline=3.0)
    finally:
        if keep is not None:
            keep.close()
    assert time.monotonic() - started < 2.0
    assert _files(tmp_path / "cache") == []


def test_file_mirror_regular_file_still_works(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "ok").mkdir(parents=True)
    (mirror / "ok" / "data.arff").write_bytes(PAYLOAD)
    monkeypatch.setenv("COREDATA_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COREDATA_MIRROR", mirror.as_uri())
    monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
    assert fetch_files(_info("ok"))["ok/data.arff"].read_bytes() == PAYLOAD
