"""dask.distributed engine: an existing cluster (``client`` or ``scheduler`` address) or a
``LocalCluster`` started here, bound to 127.0.0.1, and shut down on close.

Tasks are pure and idempotent functions of (data reference, part), so when a worker dies the
scheduler simply reruns its tasks elsewhere and the result is unchanged.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid
from typing import Any, Callable, Iterator, Sequence

from coreselect.engines.base import Engine, TaskCallback
from coreselect.errors import EngineError

log = logging.getLogger(__name__)

#: Per-process thread pools that must not oversubscribe a worker's share of the cores.
#: Seconds to wait for a scheduler given by address (tests lower it).
CONNECT_TIMEOUT = 10.0

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


#: glibc's mmap threshold for worker processes. Dask's nanny fixes MALLOC_TRIM_THRESHOLD_,
#: which switches off glibc's adaptive mmap threshold, so every array above 128 KiB (a greedy
#: step's per-column vectors on parts of more than 16k columns) would be mmap'ed and zeroed
#: afresh: measured 1.55x slower parts. 32 MiB keeps those arrays on the heap.
MMAP_THRESHOLD = 32 * 1024 * 1024


def local_cluster(n_workers: int, threads_per_worker: int = 1, host: str = "127.0.0.1",
                  **kwargs: Any) -> Any:
    """A ``LocalCluster`` of worker processes bound to ``host``, no dashboard, whose
    processes start with thread-pool sizes of ``threads_per_worker`` and the malloc setting
    above (both must be in the environment before the process starts)."""
    import dask
    from distributed import LocalCluster

    environ = {var: str(threads_per_worker) for var in _THREAD_VARS}
    environ["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    # Dask's nanny puts its pre-spawn variables into *this* process's os.environ too; left
    # there, NUMBA_NUM_THREADS=1 reaches numba's config at its next compilation and this
    # process's own kernels (Algorithm 3's final AltGreedy) would run on one thread.
    before = {var: os.environ.get(var) for var in environ}
    try:
        with dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v
                              for k, v in environ.items()}):
            # The scheduler's HTTP server always listens: on a port it is given by the
            # system (port 0), not on Dask's fixed 8787, which another cluster may hold.
            return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                                processes=True, host=host,
                                dashboard_address=f"[{host}]:0" if ":" in host else f"{host}:0",
                                silence_logs=logging.ERROR, **kwargs)
    finally:
        for var, value in before.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


#: Seconds a run waits while the cluster has no worker at all before it gives up (a worker
#: that restarts or joins within this time lets the run go on).
NO_WORKERS_GRACE = 60.0
#: Seconds between two looks at the cluster while waiting for results.
POLL_SECONDS = 2.0


def connect(address: str, timeout: float | None = None) -> Any:
    """A ``dask.distributed.Client`` for the scheduler at ``address``.

    Raises
    ------
    EngineError
        When the scheduler cannot be reached, or does not answer, within ``timeout`` seconds
        (default :data:`CONNECT_TIMEOUT`), in one line.
    """
    import threading

    from distributed import Client

    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    outcome: dict = {}

    def attempt() -> None:
        try:
            outcome["client"] = Client(address, timeout=f"{timeout}s")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            outcome["error"] = exc

    # Client's own timeout does not cover a peer that accepts the TCP connection and then
    # never answers the handshake: the deadline is enforced here, around the whole attempt.
    thread = threading.Thread(target=attempt, name="coreselect-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if thread.is_alive():
        what = _what_answers(address)
        if "HTTP" in what:
            raise EngineError(f"{address} is not a Dask scheduler: {what}; give the "
                              "scheduler's address (tcp://HOST:8786 by default)")
        raise EngineError(f"the Dask scheduler at {address} did not answer within "
                          f"{timeout:g} s (is it a Dask scheduler?)")
    exc = outcome.get("error")
    if isinstance(exc, (OSError, TimeoutError, ValueError)):
        msg = " ".join(str(exc).split())[:200]
        raise EngineError(f"cannot reach the Dask scheduler at {address}: {msg}") from None
    if isinstance(exc, MemoryError):
        # Dask read another protocol's bytes as a frame length (exabytes): not a scheduler.
        raise EngineError(f"{address} is not a Dask scheduler: {_what_answers(address)}; give "
                          "the scheduler's address (tcp://HOST:8786 by default)") from None
    if exc is not None:
        raise exc
    return outcome["client"]


def _what_answers(address: str, timeout: float = 3.0) -> str:
    """What the server at ``address`` is, in words: an HTTP server (a Dask dashboard, say)
    answers a request line with ``HTTP/``."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
            sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            first = sock.recv(16)
    except (OSError, ValueError, TypeError):
        return "it answers in another protocol"
    if first.startswith(b"HTTP/"):
        return "it is an HTTP server (a web server, or a Dask dashboard)"
    return "it answers in another protocol"


_LOST = ("lost the connection to the Dask scheduler (it was stopped, killed or became "
         "unreachable) while the run was waiting for results; the run was stopped")


def cluster_failure(exc: BaseException) -> EngineError:
    """The one-line EngineError for a cancelled future or a broken connection: a scheduler
    killed mid-run cancels every future with reason ``scheduler-connection-lost``, and once
    the client gives up reconnecting it is closed (``ClosedClientError`` from ``submit``,
    ``ValueError: No clients found`` from ``distributed.wait``)."""
    text = " ".join(str(exc).split())
    lowered = text.lower()
    if ("scheduler-connection-lost" in text or "scheduler" in lowered and "lost" in lowered
            or type(exc).__name__ == "ClosedClientError" or text.startswith("No clients found")):
        return EngineError(_LOST)
    return EngineError(f"the Dask cluster failed: {type(exc).__name__}: {text[:200]}")


def cluster_errors() -> tuple[type[BaseException], ...]:
    """What a client call raises when the cluster went away (each mapped by
    :func:`cluster_failure`)."""
    from concurrent.futures import CancelledError  # Dask's (Future|Futures)CancelledError

    try:
        from distributed.client import ClosedClientError  # submit/scatter on a closed client
    except ImportError:  # pragma: no cover - older distributed
        return (CancelledError, OSError)
    return (CancelledError, OSError, ClosedClientError)  # CommClosedError is an OSError


_cluster_errors = cluster_errors


def _client_gone(client: Any) -> bool:
    """Whether the client has given up on its scheduler (closed after its reconnect timeout)."""
    return getattr(client, "status", "running") in ("closing", "closed")


def _client_disconnected(client: Any) -> bool:
    """Whether the client lost its scheduler (reconnecting, or given up)."""
    return getattr(client, "status", "running") in ("connecting", "closing", "closed")


def as_completed_watched(client: Any, futures: Sequence[Any],
                         grace: float | None = None) -> Iterator[Any]:
    """:func:`_as_completed_watched`, with a lost scheduler or cancelled futures as one
    :class:`EngineError` (:func:`cluster_failure`)."""
    try:
        yield from _as_completed_watched(client, futures, grace)
    except _cluster_errors() as exc:
        raise cluster_failure(exc) from None


def _as_completed_watched(client: Any, futures: Sequence[Any],
                          grace: float | None = None) -> Iterator[Any]:
    """The futures as they finish, like ``distributed.as_completed``, but an
    :class:`EngineError` instead of waiting forever when the cluster has had no worker for
    ``grace`` seconds (default :data:`NO_WORKERS_GRACE`), or at once when the client has
    given up on its scheduler."""
    from distributed import wait

    grace = NO_WORKERS_GRACE if grace is None else grace
    pending = set(futures)
    workerless_since = None
    while pending:
        if _client_gone(client):
            raise EngineError(_LOST)
        try:
            done, pending = wait(pending, timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        except ValueError as exc:
            # distributed.wait looks up the default client, and raises "No clients found"
            # once ours was closed after losing the scheduler (at any moment, even here).
            if _client_gone(client) or str(exc).startswith("No clients found"):
                raise EngineError(_LOST) from None
            raise
        yield from done
        if done or not pending:
            workerless_since = None
            continue
        if _n_workers(client):
            workerless_since = None
        elif workerless_since is None:
            workerless_since = time.monotonic()
        elif time.monotonic() - workerless_since > grace:
            if _client_disconnected(client):
                raise EngineError(_LOST)
            raise EngineError(f"the Dask cluster has had no worker for {grace:g} s; "
                              "every worker died or none ever joined")


def result_watched(client: Any, future: Any, grace: float | None = None) -> Any:
    """``future.result()``, with the same no-worker deadline as :func:`as_completed_watched`."""
    for done in as_completed_watched(client, [future], grace):
        try:
            return done.result()
        except _cluster_errors() as exc:
            raise cluster_failure(exc) from None


def _n_workers(client: Any) -> int:
    if _client_disconnected(client):
        return 0  # scheduler_info would block for the whole reconnect timeout
    try:
        return len(client.scheduler_info().get("workers", {}))
    except Exception:  # noqa: BLE001 - an unreachable scheduler counts as no worker
        return 0


def _part(func: Callable[[Any, Any], Any], shared: Any, task: Any) -> Any:
    """One part on a worker (the test hook lets a test kill the worker running it)."""
    from coreselect.io.files import checkpoint_once

    checkpoint_once("dask-task")
    return func(shared, task)


#: Seconds :meth:`DaskEngine.settle` waits for a failed map's running parts.
SETTLE_SECONDS = 120.0


def _running_parts(prefixes: tuple[str, ...], dask_worker: Any = None) -> list[str]:
    """The keys starting with ``prefixes`` that this worker still runs (cancelled ones too)."""
    return [str(ts.key) for ts in dask_worker.state.all_running_tasks
            if str(ts.key).startswith(prefixes)]


def _is_small(shared: Any) -> bool:
    """Small references (a store's path) travel inside each task; big data is scattered once.
    Shared data says which it is with an ``is_reference`` attribute."""
    return shared is None or isinstance(shared, (str, os.PathLike)) or bool(
        getattr(shared, "is_reference", False))


class DaskEngine(Engine):
    """Run tasks on a Dask cluster.

    Parameters
    ----------
    client : dask.distributed.Client, optional
        Use this client (it is not closed here).
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``).
    n_workers : int, optional
        Worker processes of the ``LocalCluster`` started when neither is given (default: the
        number of cores, at most 4). Each gets ``cores // n_workers`` threads (at least 1).
    host : str, default "127.0.0.1"
        Interface the local cluster binds to.
    connect_timeout : float, optional
        Seconds to wait for ``scheduler`` (default :data:`CONNECT_TIMEOUT`).
    """

    name = "dask"

    def __init__(self, client: Any = None, scheduler: str | None = None,
                 n_workers: int | None = None, host: str = "127.0.0.1",
                 connect_timeout: float | None = None):
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise EngineError(f"engine 'dask' needs dask[distributed]: {exc}") from None
        self._own_client = False
        self._cluster = None
        self._runs: list[str] = []  # key prefixes of this engine's maps (see settle)
        if client is not None:
            self.client = client
        elif scheduler:
            self.client = connect(scheduler, connect_timeout)
            self._own_client = True
        else:
            cores = os.cpu_count() or 1
            n = int(n_workers) if n_workers else max(1, min(cores, 4))
            threads = max(1, cores // n)
            try:
                self._cluster = local_cluster(n, threads, host)
                self.client = Client(self._cluster)
            except Exception as exc:  # noqa: BLE001 - any start failure is an engine failure
                self.close()
                raise EngineError(f"could not start a local Dask cluster: {exc}") from None
            self._own_client = True
            log.info("started a Dask LocalCluster: %d workers x %d threads on %s",
                     n, threads, host)

    @property
    def worker_pids(self) -> list[int]:
        """PIDs of the worker processes (for tests and memory measurements)."""
        info = self.client.run(os.getpid)
        return [int(pid) for pid in info.values()]

    def map(self, func: Callable[[Any, Any], Any], shared: Any, tasks: Sequence[Any],
            callback: TaskCallback | None = None,
            on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
        try:
            from distributed.scheduler import KilledWorker
        except ImportError:  # pragma: no cover
            from distributed import KilledWorker  # type: ignore

        tasks = list(tasks)
        if not tasks:
            return []
        run_id = uuid.uuid4().hex[:8]
        self._runs.append(f"coreselect-part-{run_id}-")
        part = functools.partial(_part, func)
        try:
            ref = shared if _is_small(shared) else self.client.scatter(shared, broadcast=True,
                                                                       hash=False)
            futures = [
                # pure=False plus unique keys: a rerun after a worker death recomputes, never
                # reuses.
                self.client.submit(part, ref, task, key=f"coreselect-part-{run_id}-{i}",
                                   pure=False, retries=2)
                for i, task in enumerate(tasks)
            ]
        except cluster_errors() as exc:
            raise cluster_failure(exc) from None
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(tasks)
        try:
            for done, fut in enumerate(as_completed_watched(self.client, futures), start=1):
                results[index[fut.key]] = fut.result()
                if on_result is not None:
                    on_result(index[fut.key], results[index[fut.key]])
                if callback is not None:
                    callback(done, len(tasks))
        except KilledWorker as exc:
            raise EngineError(
                f"Dask workers kept dying while running a part ({exc}); "
                "out of memory? use more partitions or smaller blocks") from None
        except cluster_errors() as exc:
            raise cluster_failure(exc) from None
        finally:
            for f in futures:
                f.release()
        return results

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until no worker runs a part of this engine's maps any more: when a map fails,
        its other parts run on to their end (a worker's thread cannot be stopped), and what
        they write must not land after the caller cleaned up (a store build to a URL). At
        most ``timeout`` seconds (default :data:`SETTLE_SECONDS`); True when none runs."""
        if not self._runs or getattr(self, "client", None) is None:
            return True
        deadline = time.monotonic() + (SETTLE_SECONDS if timeout is None else timeout)
        prefixes = tuple(self._runs)
        while time.monotonic() < deadline:
            if _client_disconnected(self.client):
                return False
            try:
                running = self.client.run(_running_parts, prefixes, on_error="ignore",
                                          callback_timeout=max(1.0, POLL_SECONDS))
            except Exception:  # noqa: BLE001 - an unreachable cluster: nothing to wait for
                return False
            if not any(running.values()):
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        if self._own_client and getattr(self, "client", None) is not None:
            try:
                self.client.close()
            except Exception:  # noqa: BLE001 - best effort during shutdown
                pass
            self.client = None
        if self._cluster is not None:
            try:
                self._cluster.close()
            except Exception:  # noqa: BLE001
                pass
            self._cluster = None

    def describe(self) -> dict:
        info = {"engine": self.name}
        try:
            info["n_workers"] = len(self.client.scheduler_info()["workers"])
            info["scheduler"] = self.client.scheduler.address
        except Exception:  # noqa: BLE001
            pass
        return info
