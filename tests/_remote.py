"""A moto S3 server process for the tests of column stores on object storage."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time

from pathlib import Path

import pytest

KEY, SECRET = "AKIDREMOTETEST0001", "remote-test-secret-value-0001"


@functools.lru_cache(maxsize=1)
def _benchmarks_common():
    """benchmarks/_common.py (its moto launcher), loaded without putting benchmarks/ on the
    path (its script names would shadow modules)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "_common.py"
    spec = importlib.util.spec_from_file_location("coreselect_benchmarks_common", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Server:
    """A moto S3 server process on 127.0.0.1, on a port it chose (``env``: extra environment,
    e.g. auth on)."""

    def __init__(self, env: dict | None = None):
        try:
            # moto's imports take seconds, many more on a busy machine: a hang guard only
            self.proc, self.url = _benchmarks_common().start_moto({**os.environ, **(env or {})},
                                                                  timeout=300)
        except RuntimeError as exc:
            pytest.fail(str(exc))
        self.port = int(self.url.rsplit(":", 1)[1])

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


def s3_fixtures(*buckets: str, endpoint: str = "env"):
    """The ``(s3, s3_env)`` fixtures of a test module (assign both at module level):
    ``s3``, the module's server with ``buckets`` made (stopped when the module ends: no
    process outlives its module); ``s3_env`` (autouse), credentials through the standard
    chain (environment variables) and the endpoint as ``endpoint`` says: ``"env"``,
    ``$AWS_ENDPOINT_URL`` for the tests that use ``s3`` (others start their own server);
    ``"options"``, ``$CORESELECT_STORAGE_OPTIONS`` (and the server for every test)."""

    @pytest.fixture(scope="module")
    def s3():
        server = Server()
        try:
            for bucket in buckets:
                server.fs().mkdir(bucket)
            yield server
        finally:
            server.stop()

    @pytest.fixture(autouse=True)
    def s3_env(monkeypatch, request):
        import json

        monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        if endpoint == "options":
            url = request.getfixturevalue("s3").url
            monkeypatch.setenv("CORESELECT_STORAGE_OPTIONS", json.dumps({"endpoint_url": url}))
        else:
            monkeypatch.delenv("CORESELECT_STORAGE_OPTIONS", raising=False)
            if "s3" in request.fixturenames:
                monkeypatch.setenv("AWS_ENDPOINT_URL", request.getfixturevalue("s3").url)

    return s3, s3_env


def dask_cli() -> list[str]:
    """The ``dask`` command line of this interpreter's environment."""
    import shutil
    from pathlib import Path

    exe = Path(sys.executable).with_name("dask")
    return [str(exe)] if exe.exists() else [shutil.which("dask") or "dask"]


class DaskCliCluster:
    """A scheduler and worker processes started with the dask command line (port 0: the
    scheduler writes its address to a scheduler file), each worker without a nanny so that a
    killed worker stays dead until a test starts a replacement."""

    def __init__(self, folder, n_workers: int, env: dict | None = None,
                 worker_env: dict | None = None):
        from pathlib import Path

        self.folder = Path(folder)
        self.env = {**os.environ, **(env or {})}
        self.worker_env = worker_env or {}
        self.scheduler_file = self.folder / "scheduler.json"
        self.workers: list[subprocess.Popen] = []
        self.scheduler = subprocess.Popen(
            dask_cli() + ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                          "--scheduler-file", str(self.scheduler_file)],
            env=self.env, cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 300  # a hang guard, not a speed target
            while not (self.scheduler_file.exists() and self.scheduler_file.stat().st_size):
                if self.scheduler.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the dask scheduler did not start")
                time.sleep(0.05)
            import json

            self.address = json.loads(self.scheduler_file.read_text())["address"]
            for i in range(n_workers):
                self.start_worker(f"w{i}", self.worker_env)
            self.wait_for_workers(n_workers)
        except BaseException:
            self.stop()
            raise

    def start_worker(self, name: str, env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(
            dask_cli() + ["worker", self.address, "--nthreads", "1", "--no-dashboard",
                          "--no-nanny", "--name", name, "--death-timeout", "30"],
            env={**self.env, **(env or {})}, cwd=self.folder,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, n: int, timeout: float = 300) -> None:
        from distributed import Client

        with Client(self.address, timeout=120) as client:
            client.wait_for_workers(n, timeout=timeout)

    def stop(self) -> None:
        procs = self.workers + [self.scheduler]
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait(30)
