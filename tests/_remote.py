"""A moto S3 server process for the tests of column stores on object storage."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

KEY, SECRET = "AKIDREMOTETEST0001", "remote-test-secret-value-0001"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A moto S3 server process on 127.0.0.1 (``env``: extra environment, e.g. auth on)."""

    def __init__(self, env: dict | None = None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        pytest.fail("the moto S3 server did not start")

    def fs(self, **kw):
        import s3fs

        return s3fs.S3FileSystem(key=KEY, secret=SECRET, endpoint_url=self.url,
                                 skip_instance_cache=True, **kw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
