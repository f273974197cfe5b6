"""Column stores at URLs (``s3://``, ``gs://``, ``az://``, ``memory://``, ``file://``), through
fsspec.

* A plain path (no ``scheme://``) and a ``file://`` URL are local folders: they keep the
  reader's memory-mapped path, untouched (:func:`local_path`).
* Any other ``scheme://`` goes through fsspec, or is refused in one line naming the scheme and
  what to install (:func:`filesystem`); a URL is never taken for a local path.
* :class:`RemoteColumnStore` reads every file whole into memory when it is asked for (a tile
  is a few files), checking its size and crc32 on *every* read (no per-process cache: an
  object can be replaced between two reads). Workers open the store themselves from its
  :class:`~coreselect.store.StoreRef` (URL + storage options: a few bytes, never the data).
* :func:`build_at_url` builds into a local temporary folder, uploads every file under a
  temporary prefix beside the target, copies them to the target and writes ``store.json``
  last: a reader refuses a prefix without ``store.json``, so a failed build is invisible
  (and what it uploaded is removed).
* :func:`build_direct` is the build from files (:mod:`coreselect.store.ingest`): its workers
  write the tiles straight under the target (:class:`UrlWriter`, no tile passes through the
  driver), a Dask build's spill goes under the temporary prefix (workers on other machines
  read it), and the driver uploads the few small files and ``store.json`` last. On any
  failure everything under the target is removed (the target was empty when the build
  began), after the engine's running tasks have ended.
* Credentials come from the libraries' standard chains (environment variables, config files);
  storage options (``storage_options=`` in Python, the JSON object in the environment variable
  ``CORESELECT_STORAGE_OPTIONS`` for the command line) pass timeouts, endpoints and the like.
  No message shows a URL's ``user:password@`` or a credential-like query value
  (:func:`scrub`), nor the value of a secret storage option.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import threading
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

import numpy as np

from coreselect.errors import CoreselectError, InputError, StoreError
from coreselect.store._format import (
    MAX_META_BYTES, META_FILE, NPY_HEADER_LOCK, CrcWriter, StoreRef, load_npy, store_error,
)
from coreselect.store.reader import ColumnStore, _block_of, _check_meta

__all__ = ["is_url", "scheme", "local_path", "scrub", "filesystem", "storage_options",
           "open_remote", "build_at_url", "build_direct", "check_url_target",
           "RemoteColumnStore", "UrlWriter", "OPTIONS_ENV", "refuse_url"]

_FS: dict = {}
_FS_LOCK = threading.Lock()
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
#: The environment variable holding default storage options (a JSON object) for URLs.
OPTIONS_ENV = "CORESELECT_STORAGE_OPTIONS"
#: scheme -> (package, install hint).
_PACKAGES = {
    "s3": ("s3fs", "pip install 'coreselect[s3]'"),
    "s3a": ("s3fs", "pip install 'coreselect[s3]'"),
    "gs": ("gcsfs", "pip install gcsfs"),
    "gcs": ("gcsfs", "pip install gcsfs"),
    "az": ("adlfs", "pip install adlfs"),
    "abfs": ("adlfs", "pip install adlfs"),
    "abfss": ("adlfs", "pip install adlfs"),
    "adl": ("adlfs", "pip install adlfs"),
}
_BUCKETS = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")
_SECRET_NAMES = re.compile(r"(key|secret|token|passw|signature|sig|credential|auth)",
                           re.IGNORECASE)


def scheme(path: Any) -> str | None:
    """The lower-case scheme of a ``scheme://`` string (None for a plain path)."""
    if isinstance(path, StoreRef):
        path = path.path
    if not isinstance(path, str):
        return None
    m = _SCHEME.match(path)
    return m.group(1).lower() if m else None


def is_url(path: Any) -> bool:
    """Whether ``path`` is a ``scheme://`` URL other than ``file://`` (a local folder)."""
    return scheme(path) not in (None, "file", "local")


def local_path(path: Any) -> Any:
    """``file:///x`` and ``local:///x`` as the plain path ``/x``; anything else unchanged."""
    if scheme(path) in ("file", "local"):
        return unquote(urlsplit(path).path) or "/"
    return path


def scrub(text: str, secrets: Any = ()) -> str:
    """``text`` without credentials: ``user:password@`` of URLs, values of credential-like
    query parameters (``key=...``, ``token=...``, ``X-Amz-Signature=...``), and the given
    secret strings."""
    text = re.sub(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@]*@", r"\1***@", str(text))
    text = re.sub(r"([?&;][^=&\s]*" + _SECRET_NAMES.pattern + r"[^=&\s]*=)[^&\s'\"]*",
                  r"\1***", text, flags=re.IGNORECASE)
    for s in secrets:
        if isinstance(s, str) and len(s) >= 4:
            text = text.replace(s, "***")
    return text


def _secret_values(options: dict) -> list[str]:
    out = []
    for k, v in (options or {}).items():
        if isinstance(v, dict):
            out += _secret_values(v)
        elif isinstance(v, str) and _SECRET_NAMES.search(str(k)):
            out.append(v)
    return out


def storage_options(given: dict | None = None) -> dict:
    """The storage options of a URL: those of ``$CORESELECT_STORAGE_OPTIONS`` (a JSON
    object), updated with ``given``."""
    options: dict = {}
    env = os.environ.get(OPTIONS_ENV)
    if env:
        try:
            options = json.loads(env)
        except ValueError:
            options = None
        if not isinstance(options, dict):
            raise InputError(f"${OPTIONS_ENV} must hold a JSON object of storage options")
    options.update(given or {})
    _check_deadlines(options)
    return options


def refuse_url(path: Any, what: str) -> None:
    """Raise :class:`InputError` when ``path`` is a URL where only local paths are read or
    written (``what``: e.g. ``"--out"``): it would otherwise be taken for a folder ``s3:``."""
    if is_url(path):
        raise InputError(f"{what} {scrub(path)}: {scheme(path)}:// URLs are read only as "
                         "column stores (select URL, store build DATA URL, store verify URL); "
                         "give a local path here")


#: Default deadlines of every remote operation (seconds), unless storage options say
#: otherwise: a server that accepts the connection and never answers fails the operation in
#: one line ("no answer from the server"), as a dead one does, instead of hanging the run.
#: ``connect_timeout`` / ``read_timeout``: botocore's, per attempt (S3; storage option
#: ``config_kwargs``); ``max_attempts``: botocore's tries of one request; ``deadline``: the
#: whole operation (any asynchronous fsspec file system), retries included.
CONNECT_TIMEOUT, READ_TIMEOUT, MAX_ATTEMPTS, DEADLINE = 10, 30, 2, 300
#: What ``--help`` says about them.
DEADLINES_HELP = (f"Remote operations fail after {CONNECT_TIMEOUT} s without a connection, "
                  f"{READ_TIMEOUT} s without an answer ({MAX_ATTEMPTS} tries), {DEADLINE} s in "
                  "all; storage options change them (config_kwargs, deadline).")
#: The file system methods that go to the server: called with the deadline.
_TIMED = frozenset({"cat", "cat_file", "pipe_file", "put_file", "get_file", "copy", "rm",
                    "rm_file", "find", "exists", "info", "size", "ls", "mkdir", "pipe",
                    "makedirs"})


class _Deadline:
    """An asynchronous fsspec file system whose every call to the server ends within
    ``seconds`` (fsspec's ``timeout``: the call raises ``FSTimeoutError``)."""

    def __init__(self, fs, seconds: float):
        self.__dict__["_fs"], self.__dict__["_seconds"] = fs, float(seconds)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._fs, name)
        if name in _TIMED and callable(attr):
            def timed(*args, **kwargs):
                kwargs.setdefault("timeout", self._seconds)
                return attr(*args, **kwargs)
            return timed
        return attr


def _with_defaults(proto: str, options: dict) -> tuple[dict, float | None]:
    """The storage options with the default deadlines added where they are not given, and
    the whole-operation deadline (None: none)."""
    options = dict(options)
    _check_deadlines(options)
    deadline = options.pop("deadline", DEADLINE)
    if proto in ("s3", "s3a"):
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("connect_timeout", CONNECT_TIMEOUT)
        config.setdefault("read_timeout", READ_TIMEOUT)
        config.setdefault("retries", {"max_attempts": MAX_ATTEMPTS, "mode": "standard"})
        options["config_kwargs"] = config
    return options, (None if deadline in (None, 0) else float(deadline))


def _check_deadlines(options: dict) -> None:
    """One line (:class:`InputError`) for storage options whose deadlines or botocore
    settings are of the wrong type (they would fail deep inside the back end)."""
    where = f"storage options (${OPTIONS_ENV} or storage_options)"

    def seconds(value: Any) -> bool:
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                 and value >= 0 and value == value and value != float("inf"))

    if not seconds(options.get("deadline")):
        raise InputError(f"{where}: deadline must be a number of seconds (or null for none), "
                         f"not {options.get('deadline')!r}")
    config = options.get("config_kwargs")
    if config is None:
        return
    if not isinstance(config, dict):
        raise InputError(f"{where}: config_kwargs must be an object of botocore settings, "
                         f"not {config!r}")
    for name in ("connect_timeout", "read_timeout"):
        if name in config and (config[name] is None or not seconds(config[name])):
            raise InputError(f"{where}: config_kwargs.{name} must be a number of seconds, "
                             f"not {config[name]!r}")
    retries = config.get("retries")
    if retries is not None and not (isinstance(retries, dict) and all(
            isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
            for v in retries.values())):
        raise InputError(f"{where}: config_kwargs.retries must be an object such as "
                         f'{{"max_attempts": 2}}, not {retries!r}')


def filesystem(url: str, options: dict | None = None):
    """``(fsspec file system, root path)`` of ``url``, or one line naming the scheme and the
    package to install (:class:`InputError`)."""
    proto = scheme(url)
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec comes with dask
        raise InputError(f"{proto}:// needs fsspec: pip install fsspec") from None
    try:
        fsspec.get_filesystem_class(proto)
    except ImportError:
        package, hint = _PACKAGES.get(proto, (proto, f"pip install the fsspec backend of {proto}"))
        raise InputError(f"{proto}:// stores need the {package} package: {hint}") from None
    except ValueError:
        raise InputError(f"{scrub(url)}: {proto}:// is not a storage scheme fsspec knows "
                         f"(known include s3, gs, az, memory, file)") from None
    options, deadline = _with_defaults(proto, dict(options or {}))
    retries = options.pop("retries", None)  # s3fs's own retry count: an attribute, not an option
    if retries is None and proto in ("s3", "s3a"):
        retries = 1  # botocore retries (MAX_ATTEMPTS); s3fs's 5 more would multiply them
    try:
        # One instance per process and settings (a client session costs a few requests);
        # listings are never cached (see _listing).
        env = sorted((k, v) for k, v in os.environ.items()
                     if k.startswith(("AWS_", "GOOGLE", "GCS", "AZURE", "FSSPEC")))
        key = hashlib.sha256(repr((os.getpid(), proto, json.dumps(
            options, sort_keys=True, default=repr), retries, env)).encode()).hexdigest()
        with _FS_LOCK:
            fs = _FS.get(key)
        if fs is None:
            fs, _ = fsspec.core.url_to_fs(url, skip_instance_cache=True, **options)
            if retries is not None:
                fs.retries = int(retries)
            if deadline is not None and getattr(fs, "async_impl", False):
                fs = _Deadline(fs, deadline)
            with _FS_LOCK:
                _FS[key] = fs
        root = fs._strip_protocol(url)
    except Exception as exc:  # noqa: BLE001 - bad options: the library's own types vary
        raise InputError(f"{scrub(url)}: cannot set up {proto}:// "
                         f"({scrub(_describe(exc), _secret_values(options or {}))})") from None
    return fs, root.rstrip("/")


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def is_no_answer(exc: BaseException) -> bool:
    """A server that is down, unreachable or silent past a deadline."""
    name = type(exc).__name__
    return (isinstance(exc, (TimeoutError, ConnectionError)) or "timeout" in name.lower()
            or "timed out" in str(exc).lower() or "connect" in name.lower()
            or NO_ANSWER in str(exc))  # a worker's write error, already one line


NO_ANSWER = "no answer from the server"


def _remote_error(url: str, rel: str, exc: BaseException, options: dict,
                  block: str | None = None, verb: str = "read") -> StoreError:
    """A one-line :class:`StoreError` for a failed remote operation, credentials scrubbed."""
    where = f"{url}/{rel}" if rel else url
    secrets = _secret_values(options)
    if isinstance(exc, FileNotFoundError):
        why = "not found (a missing object, or a bucket that does not exist)"
    elif isinstance(exc, PermissionError):
        why = ("access denied (check the credentials: environment variables, config files "
               f"or storage options): {scrub(_describe(exc), secrets)}")
    else:
        timeout = is_no_answer(exc)
        why = (f"{NO_ANSWER if timeout else 'cannot ' + verb} "
               f"({scrub(_describe(exc), secrets)})")
    return store_error(f"column store {where}: {why}", block=block or _block_of(rel) if rel
                       else META_FILE)


class RemoteColumnStore(ColumnStore):
    """A :class:`ColumnStore` behind fsspec: every file read whole, size and crc32 checked on
    every read (see the module docstring)."""

    def __init__(self, url: str, meta: dict, options: dict, fs, root: str):
        super().__init__(".", meta)
        self.path = scrub(url.rstrip("/"))  # what messages show
        self.url, self.options, self.fs, self.root = url.rstrip("/"), options, fs, root
        self._sizes: dict[str, int] | None = None
        self._pending: dict = {}
        self._kept: dict[str, bytes] = {}  # read by check(), handed to the next read once
        self._checked = False
        self._fetched: set[str] | None = None  # what verify() has fetched so far

    _reads_checksummed = True

    def check(self) -> None:
        """:meth:`ColumnStore.check` once per open: its sizes come from the one listing of
        this open, and the headers of those same objects were read (``verify`` after an
        ``open_store`` reads each object once; the contents are checksummed on every read)."""
        if not self._checked:
            super().check()
            self._checked = True

    def verify(self) -> dict:
        """:meth:`ColumnStore.verify` with each object fetched once: every remote read checks
        size and crc32, so the structural pass is the checksum pass; an object it did not
        fetch (metadata this open had read before) is fetched and checked after it."""
        self._fetched: set[str] | None = set()
        try:
            summary = super().verify()
            for rel in self._expected_files():
                if rel not in self._fetched:
                    self._verified(rel, _block_of(rel))
        finally:
            self._fetched = None
        return summary

    @property
    def ref(self) -> StoreRef:
        return StoreRef(self.url, dict(self.options))

    def __getstate__(self) -> dict:
        # A copy in another process opens its own connection.
        return {**self.__dict__, "fs": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.fs, _ = filesystem(self.url, self.options)

    @contextlib.contextmanager
    def _prefetch(self, rels: list[str]):
        """Fetch ``rels`` concurrently (one round of requests, not one per file); each is
        still size- and checksum-checked when read. Holds them only within the context."""
        if len(rels) > 1:
            paths = {f"{self.root}/{rel}": rel for rel in rels}
            try:
                got = self.fs.cat(list(paths), on_error="return")
            except Exception:  # noqa: BLE001 - read one by one, with their own errors
                got = {}
            self._pending = {paths[p]: v for p, v in got.items() if p in paths}
        try:
            yield
        finally:
            self._pending = {}

    def _fetch(self, rel: str, block: str) -> bytes:
        try:
            if self._fetched is not None:
                self._fetched.add(rel)
            got = self._pending.pop(rel, None)
            if got is None:
                got = self._kept.pop(rel, None)
            if isinstance(got, BaseException):
                raise got
            if got is not None:
                return got
            return self.fs.cat_file(f"{self.root}/{rel}")
        except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
            if isinstance(exc, FileNotFoundError):
                raise store_error(f"column store {self.path} is missing {block} ({rel}); "
                                  "rebuild it with 'coreselect store build'",
                                  block=block) from None
            raise _remote_error(self.path, rel, exc, self.options, block) from None

    def _listing(self) -> dict[str, int]:
        if self._sizes is None:
            try:
                self.fs.invalidate_cache(self.root)
                found = self.fs.find(self.root, detail=True)
            except Exception as exc:  # noqa: BLE001
                raise _remote_error(self.path, "", exc, self.options) from None
            prefix = self.root + "/"
            self._sizes = {name[len(prefix):]: int(info.get("size") or 0)
                           for name, info in found.items() if name.startswith(prefix)}
        return self._sizes

    def _stat(self, rel: str):
        """The recorded size of ``rel`` against the listing (one listing per open)."""
        block = _block_of(rel)
        size, _ = self._entry(rel, block)
        actual = self._listing().get(rel)
        if actual is None:
            raise store_error(f"column store {self.path} is missing {block} ({rel}); rebuild "
                              "it with 'coreselect store build'", block=block)
        if actual != size:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} has "
                              f"{actual} bytes, expected {size}: truncated or replaced)",
                              block=block)
        return os.stat_result((0, 0, 0, 0, 0, 0, actual, 0, 0, 0))

    def _verified(self, rel: str, block: str, force: bool = False) -> bytes:
        """The bytes of ``rel``, their size and crc32 checked (on every read)."""
        import zlib

        size, crc = self._entry(rel, block)
        data = self._fetch(rel, block)
        if len(data) != size:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} has "
                              f"{len(data)} bytes, expected {size}: truncated or replaced)",
                              block=block)
        if zlib.crc32(data) != crc:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} fails "
                              "its checksum); rebuild the store", block=block)
        if rel == "n_codes.npy" and not self._checked:
            self._kept[rel] = data  # check() reads it; the n_codes property reads it next
        return data

    def _read_text(self, rel: str, block: str) -> str:
        return self._verified(rel, block).decode("utf-8")

    def _checked_once(self, rel: str, read):
        # No file identity to key a process-wide cache by: read (and check) per open.
        return read()

    def _load_npy(self, rel: str, block: str):
        # Remote bytes were checksummed when read; numpy parses them from memory.
        return load_npy(io.BytesIO(self._verified(rel, block)), allow_pickle=False)

    def _npy_length(self, rel: str, block: str) -> int:
        """The length a ``.npy`` header declares (one ranged read of the header)."""
        size = self._stat(rel).st_size
        try:
            head = self.fs.cat_file(f"{self.root}/{rel}", start=0, end=min(size, 4096))
        except Exception as exc:  # noqa: BLE001
            raise _remote_error(self.path, rel, exc, self.options, block) from None
        fh = io.BytesIO(head)
        try:
            with NPY_HEADER_LOCK:
                version = np.lib.format.read_magic(fh)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read(fh)
        except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many types
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} is not a "
                              f"numeric .npy file: {type(exc).__name__})", block=block) from None
        if len(shape) != 1 or dtype.kind not in "iu" or \
                fh.tell() + shape[0] * dtype.itemsize != size:
            raise store_error(f"column store {self.path}: {block} is damaged ({rel} declares "
                              f"{dtype} of shape {shape} in {size - fh.tell()} bytes of data)",
                              block=block)
        return int(shape[0])


def open_remote(url: str, options: dict | None = None, check: bool = True) -> ColumnStore:
    """Open the store at ``url`` (see :func:`coreselect.store.open_store`)."""
    options = storage_options(options)
    fs, root = filesystem(url, options)
    shown = scrub(url.rstrip("/"))
    try:
        # a store.json larger than any is refused, never fetched whole
        size = fs.size(f"{root}/{META_FILE}")
        raw = (fs.cat_file(f"{root}/{META_FILE}") if size is not None and size <= MAX_META_BYTES
               else fs.cat_file(f"{root}/{META_FILE}", start=0, end=MAX_META_BYTES + 1))
        if len(raw) > MAX_META_BYTES:
            raise store_error(f"{shown}/{META_FILE} is more than {MAX_META_BYTES} bytes, more "
                              "than a store.json holds; not a coreselect column store",
                              block=META_FILE)
    except StoreError:
        raise
    except FileNotFoundError:
        bucket = root.split("/", 1)[0]
        if scheme(url) in _BUCKETS and bucket and not _exists(fs, bucket):
            raise store_error(f"{shown}: the bucket {bucket!r} does not exist",
                              block=META_FILE) from None
        raise store_error(f"{shown} is not a coreselect column store (no {META_FILE})",
                          block=META_FILE) from None
    except Exception as exc:  # noqa: BLE001
        raise _remote_error(shown, META_FILE, exc, options, META_FILE) from None
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise store_error(f"cannot read {shown}/{META_FILE}: {exc}", block=META_FILE) from None
    _check_meta(meta, shown, f"{shown}/{META_FILE}")
    store = RemoteColumnStore(url, meta, options, fs, root)
    if check:
        store.check()
    return store


def check_url_target(url: str, options: dict | None = None) -> None:
    """Raise unless ``url`` is free for a new store: nothing under the prefix once what dead
    builds left there is removed (:func:`clean_stale_staging`), and (object stores) a bucket
    that exists."""
    options = storage_options(options)
    fs, root = filesystem(url, options)
    shown = scrub(url)
    try:
        clean_stale_staging(fs, root)
    except Exception as exc:  # noqa: BLE001 - best effort (a listing may be forbidden) ...
        if is_no_answer(exc):  # ... but a dead or silent server is one line now
            raise _remote_error(shown, "", exc, options) from None
    try:
        fs.invalidate_cache(root)
        existing = fs.find(root, maxdepth=None)
    except FileNotFoundError:
        existing = []
    except Exception as exc:  # noqa: BLE001
        raise _remote_error(shown, "", exc, options) from None
    if existing:
        raise InputError(f"{shown} already holds objects; choose a new prefix for the store")
    bucket = root.split("/", 1)[0]
    if scheme(url) in _BUCKETS and bucket:
        try:
            ok = fs.exists(bucket)
        except Exception as exc:  # noqa: BLE001
            raise _remote_error(shown, "", exc, options) from None
        if not ok:
            raise InputError(f"{shown}: the bucket {bucket!r} does not exist (create it first)")


def _begin_build(url: str, options: dict):
    """``(fs, root, staging)`` of a new build to ``url``: stale temporary prefixes of dead
    builds removed, the target checked free, a fresh temporary prefix named (not created)."""
    fs, root = filesystem(url, options)
    check_url_target(url, options)  # sweeps what dead builds left first
    return fs, root, f"{root}{STAGING}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _mark(fs, staging: str, root: str, direct: bool = False) -> None:
    """The temporary prefix's mark, written first: a later build proves a leftover prefix its
    own by it (``direct``: this build writes straight under the target)."""
    _ACTIVE.add(staging)
    fs.pipe_file(f"{staging}/{STAGING_MARK}", json.dumps(
        {"target": root, "host": socket.gethostname(), "pid": os.getpid(),
         "created": time.time(), "direct": direct}).encode())


def _failed(exc: BaseException, shown: str, options: dict) -> BaseException:
    """The one-line error a failed URL build raises (after its cleanup)."""
    silent = is_no_answer(exc)
    if isinstance(exc, CoreselectError) and not silent:
        return exc
    error = exc if isinstance(exc, CoreselectError) else _remote_error(shown, "", exc, options)
    if silent:
        error = store_error(f"{error}; the next build to this URL removes what this one left",
                            block=getattr(error, "block", None))
    return error


class _UrlBuild:
    """The frame every URL build shares: the temporary prefix and a local scratch folder, and
    all or nothing on the way out. A failure once :meth:`mark` has run calls ``undo`` (what the
    build had written under the target), removes the prefix and becomes one line
    (:func:`_failed`); SIGINT and SIGTERM (the CLI's Terminated) clean up too. A server that
    does not answer would keep each removal to its deadline: the next build to this URL
    removes what was left (:func:`clean_stale_staging`, by the prefix's mark)."""

    def __init__(self, url: str, options: dict | None, temp_dir: str | os.PathLike | None = None):
        self.options = storage_options(options)
        self.shown = scrub(url)
        self.fs, self.root, self.staging = _begin_build(url, self.options)
        self.scratch = Path(tempfile.mkdtemp(prefix="coreselect-build-", dir=temp_dir))
        self.staged = False
        self.undo: Callable[[], Any] = lambda: None

    def mark(self, direct: bool = False) -> None:
        self.staged = True  # first: a mark whose write failed may still have landed
        _mark(self.fs, self.staging, self.root, direct=direct)

    def __enter__(self) -> "_UrlBuild":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        try:
            if exc is None or not self.staged:
                return False
            silent = is_no_answer(exc)
            if not silent:
                self.undo()
            self.staged = not silent
            if not isinstance(exc, Exception):
                return False
            raise _failed(exc, self.shown, self.options) from None
        finally:
            if self.staged:
                _quietly(self.fs.rm, self.staging, recursive=True)
            _ACTIVE.discard(self.staging)
            shutil.rmtree(self.scratch, ignore_errors=True)


def build_at_url(url: str, build: Callable[[Path], ColumnStore], options: dict | None = None,
                 temp_dir: str | os.PathLike | None = None) -> ColumnStore:
    """Build a store with ``build(local_folder)`` and publish it at ``url``: all or nothing
    (files under a temporary prefix, copied to ``url``, ``store.json`` written last)."""
    from coreselect.io.files import checkpoint as test_hold

    with _UrlBuild(url, options, temp_dir) as b:
        fs, root, staging = b.fs, b.root, b.staging
        local = build(b.scratch / "store")  # a failure here has written nothing remote
        files = sorted(local.meta["files"])
        # The prefix was empty: whatever is under it is this build's, a copy that landed
        # although its answer was lost included. A prefix without store.json is no store.
        b.undo = lambda: [_quietly(fs.rm_file, f"{root}/{rel}") for rel in [META_FILE, *files]]
        b.mark()
        for rel in files:  # everything but store.json, under the temporary prefix
            fs.put_file(str(local.path / rel), f"{staging}/{rel}")
        test_hold("remote-staged")  # tests signal or freeze the build here
        for rel in files:
            fs.copy(f"{staging}/{rel}", f"{root}/{rel}")
        fs.put_file(str(local.path / META_FILE), f"{root}/{META_FILE}")  # the commit
    return open_remote(url, b.options)


def build_direct(url: str, build: Callable[[Path, StoreRef, StoreRef], Any],
                 options: dict | None = None,
                 settle: Callable[[], Any] | None = None) -> ColumnStore:
    """Build a store at ``url`` whose tiles the build's workers write there themselves.

    ``build(local, target, staging)`` writes the tiles under ``target`` (the store's URL and
    storage options: :class:`UrlWriter`), may keep its scratch files under ``staging`` (this
    build's temporary prefix, removed at the end), and writes the small files and
    ``store.json`` into the local folder ``local``; they are uploaded here, ``store.json``
    last (the commit: a reader refuses a prefix without it). On any failure, SIGINT and
    SIGTERM included, ``settle()`` waits for the build's tasks still running (a task of a
    failed map runs on until it ends), then everything under ``url`` is removed (it was
    empty when the build began) and the temporary prefix too (:class:`_UrlBuild`)."""
    from coreselect.io.files import checkpoint as test_hold

    with _UrlBuild(url, options) as b:
        fs, root = b.fs, b.root

        def undo() -> None:
            if settle is not None:
                _quietly(settle)
            _remove_under(fs, root)

        b.undo = undo
        b.mark(direct=True)
        local = b.scratch / "store"
        build(local, StoreRef(url.rstrip("/"), b.options),
              StoreRef(f"{scheme(url)}://{b.staging}", b.options))
        small = sorted(p.relative_to(local).as_posix() for p in local.rglob("*")
                       if p.is_file() and p.name != META_FILE)
        test_hold("remote-staged")  # tests signal or freeze the build here
        for rel in small:
            fs.put_file(str(local / rel), f"{root}/{rel}")
        fs.put_file(str(local / META_FILE), f"{root}/{META_FILE}")  # the commit
    return open_remote(url, b.options)


def _remove_under(fs, root: str) -> None:
    """Remove every object under the prefix ``root`` (best effort)."""
    try:
        fs.invalidate_cache(root)
        found = fs.find(root)
    except Exception:  # noqa: BLE001 - best-effort cleanup
        return
    if found:
        _quietly(fs.rm, list(found))


class UrlWriter:
    """The files of a store being built, written straight to its URL (by the worker that
    computed them), each one's size and crc32 recorded: the interface and the bytes of
    :class:`coreselect.store.writer.Writer`'s local files. A file is one PUT of bytes held
    in memory (a tile's). A failed write is a one-line :class:`StoreError` naming it."""

    def __init__(self, ref: StoreRef):
        self.url, self.options = ref.path.rstrip("/"), dict(ref.options or {})
        self.fs, self.root = filesystem(self.url, self.options)
        self.files: dict[str, list[int]] = {}

    def _put(self, rel: str, data: bytes) -> None:
        try:
            self.fs.pipe_file(f"{self.root}/{rel}", data)
        except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
            raise _remote_error(scrub(self.url), rel, exc, self.options, verb="write") from None

    def save(self, rel: str, arr: np.ndarray) -> None:
        buf = io.BytesIO()
        out = CrcWriter(buf)
        np.save(out, np.ascontiguousarray(arr), allow_pickle=False)
        self._put(rel, buf.getvalue())
        self.files[rel] = [out.size, out.crc]

    def save_text(self, rel: str, text: str) -> None:
        import zlib

        data = text.encode("utf-8")
        self._put(rel, data)
        self.files[rel] = [len(data), zlib.crc32(data)]

    def save_csc(self, folder: str, ptr: np.ndarray, idx: np.ndarray, dat: np.ndarray) -> None:
        from coreselect.store.writer import Writer

        Writer.save_csc(self, folder, ptr, idx, dat)  # the same arrays, so the same bytes


#: A build's temporary prefix beside its target: ``TARGET.coreselect-tmp-<pid>-<hex>``, holding
#: ``STAGING_MARK`` (the target, host and pid of the build that made it).
STAGING, STAGING_MARK = ".coreselect-tmp-", ".coreselect-owned.json"
#: A temporary prefix of another host is removed only when older than this (seconds): its
#: build cannot be asked whether it still runs.
STALE_ELSEWHERE = 24 * 3600
#: This process's builds in progress (their temporary prefixes).
_ACTIVE: set[str] = set()


def clean_stale_staging(fs, root: str) -> list[str]:
    """Remove the temporary prefixes of builds to ``root`` that died without cleaning up
    (SIGKILL, a server that died mid-build): those whose mark names ``root`` and a build of
    this host that no longer runs (another host's: older than :data:`STALE_ELSEWHERE`).
    A prefix without the mark, or of a live build, is never touched."""
    from coreselect.io.files import _pid_alive

    parent, _, name = root.rpartition("/")
    try:
        found = fs.find(parent, prefix=name + STAGING, withdirs=False)
    except TypeError:  # a file system without prefix listings
        found = fs.glob(f"{root}{STAGING}*/{STAGING_MARK}")
    except FileNotFoundError:
        return []
    removed = []
    for path in sorted({p for p in found if p.endswith("/" + STAGING_MARK)}):
        prefix = path[: -len(STAGING_MARK) - 1]
        if not prefix.startswith(root + STAGING) or "/" in prefix[len(root):]:
            continue
        try:
            mark = json.loads(fs.cat_file(path).decode("utf-8"))
            if mark.get("target") != root:
                continue
            if mark.get("host") == socket.gethostname():
                pid = int(mark["pid"])
                stale = (prefix not in _ACTIVE if pid == os.getpid()
                         else not _pid_alive(pid))
            else:
                stale = time.time() - float(mark["created"]) > STALE_ELSEWHERE
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            continue
        if stale:
            # What it copied to the target, when it died before its commit (store.json):
            # the staged files' names, under a target that is no store; a direct build's
            # workers wrote under the target itself, empty when it began: all of it.
            if not _exists(fs, f"{root}/{META_FILE}"):
                if mark.get("direct"):
                    _remove_under(fs, root)
                else:
                    for staged in fs.find(prefix):
                        rel = staged[len(prefix) + 1:]
                        if rel != STAGING_MARK:
                            _quietly(fs.rm_file, f"{root}/{rel}")
            fs.rm(prefix, recursive=True)
            removed.append(prefix)
    return removed


def _exists(fs, path: str) -> bool:
    try:
        return bool(fs.exists(path))
    except Exception:  # noqa: BLE001 - only used to word a refusal
        return True


def _quietly(fn, *args, **kwargs) -> None:
    try:
        fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - best-effort cleanup
        pass
