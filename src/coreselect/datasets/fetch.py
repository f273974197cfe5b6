"""Registry datasets on this machine: local copies first, then a verified download cache.

Where a registry file is looked for, in order (all paths keep the mirror layout,
``mulan/emotions/emotions.arff``):

1. ``$COREDATA/<path>``: a local copy of the datasets (such as the project's
   ``shared/data``); used offline, checked against the registry's SHA-256 once per process.
   When ``COREDATA`` is unset: ``shared/data`` beside the source checkout (``../shared/data``
   from the repository, as the README says), if it exists; ``COREDATA=`` (empty) turns the
   local copy off.
2. The cache: ``$COREDATA_HOME``, else ``$XDG_CACHE_HOME/coreselect``, else
   ``~/.cache/coreselect``.
3. A download into the cache from ``$COREDATA_MIRROR`` (a base URL: ``https://host/path``,
   or ``file:///path/to/data`` for a local or network folder; no other scheme), else from
   the upstream hosts.

Downloads are safe against bad or hostile servers:

* a **total deadline** per file (``deadline``; by default 60 s plus 20 s per MB of the
  known size), besides the per-read socket ``timeout``. It bounds the whole exchange
  (connecting, status line, headers, body): a watchdog timer shuts the connection's socket
  down at the deadline, so a server trickling its headers one byte at a time fails with a
  FetchError instead of hanging; deadlines and timeouts must be finite and positive;
* a ``file://`` mirror is opened without blocking and refused unless it is a regular file
  (a FIFO, a device or a folder would block or never end);
* **protocol errors** (a bad status line, too many or too long headers, HTTP/0.9 answers,
  broken chunked encoding, a short body) are a bad server: a FetchError naming the URL;
* a **size cap**: the registry knows each file's size; a response that announces or sends
  more is cut off at once (files of unknown size: ``max_bytes``, 2 GiB), so an endless
  response never fills the disk;
* the **SHA-256** is checked before the file is renamed into the cache; files without a
  known checksum are refused unless ``verify=False``;
* the partial file is ``.NAME.p<pid>-XXXX.part`` beside the target, removed on any error,
  and removed by the next run if a kill left it (:func:`coreselect.io.files.clean_stale`).

Why not ``pooch``: it is the scientific Python standard for hash-checked, cached,
mirror-able downloads, and its ``retrieve(url, known_hash)`` would replace the hashing and
the cache layout. But its ``HTTPDownloader`` passes ``timeout`` to ``requests`` as a
per-read socket timeout (no total deadline, so the 1-byte-per-2-s mirror still hangs),
has no size cap (the endless response still fills the disk), and names its partial files
``tmpXXXX`` in the cache folder, which a later run cannot tell from other files to clean
them. Each of the three would need a custom downloader, which is most of this module; and
pooch would add ``requests``, ``platformdirs`` and ``packaging`` to the dependencies for
what ``urllib`` does here in a few lines.
"""

from __future__ import annotations

import glob
import hashlib
import math
import os
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:  # the network modules (~20 ms) load with the first download, not here:
    import socket  # the CLI reads coredata_dir / cache_dir on every run
    import urllib.request

from coreselect.datasets.registry import DatasetFile, DatasetInfo, get
from coreselect.errors import DatasetError, FetchError, ParameterError
from coreselect.io.files import clean_stale, file_mode, temp_name_prefix

__all__ = [
    "cache_dir",
    "coredata_dir",
    "label_file_under_coredata",
    "default_coredata",
    "fetch",
    "fetch_files",
    "file_url",
    "sha256_of",
    "is_cached",
    "is_local",
    "locate",
]

# progress(event, file, n): event "start" (n = total bytes or None), "update" (n bytes), "end".
ProgressCallback = Callable[[str, DatasetFile, "int | None"], None]

_CHUNK = 1 << 16
MAX_UNKNOWN_BYTES = 2 << 30  # cap for files whose size the registry does not know
_MIN_RATE = 50_000  # bytes/s the default deadline allows for (20 s per MB)
_verified_cache: set[tuple[str, float, int]] = set()


def source_checkout() -> Path | None:
    """The source checkout this package is imported from (``<checkout>/src/coreselect``), or
    None when it is installed elsewhere (a wheel in site-packages has no checkout)."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "src" / "coreselect").is_dir():
        return root
    return None


def default_coredata() -> Path | None:
    """Where the datasets are when ``$COREDATA`` is unset: ``shared/data`` beside the source
    checkout (the project's layout, ``../shared/data`` from the repository), if that folder
    exists; else None (registry names then come from the cache or a download)."""
    root = source_checkout()
    if root is None:
        return None
    path = root.parent / "shared" / "data"
    return path.resolve() if path.is_dir() else None


#: (variable, value as set) -> the absolute path it named at its first read.
_RESOLVED: dict[tuple[str, str], Path] = {}


def _resolved_once(variable: str, value: str) -> Path:
    """``value`` made absolute against the working folder of the first read of this value
    (relative values only; an absolute one never depends on the folder)."""
    key = (variable, value)
    path = _RESOLVED.get(key)
    if path is None:
        path = Path(os.path.abspath(Path(value).expanduser()))
        if not Path(value).expanduser().is_absolute():
            _RESOLVED[key] = path
    return path


def coredata_dir() -> Path | None:
    """The local dataset folder: ``$COREDATA``; when unset, :func:`default_coredata`
    (``../shared/data`` beside the source checkout, if there); None when there is none.

    ``COREDATA=`` (set, but empty) means no local copy: names come from the cache or a
    download even where ``../shared/data`` exists.
    Raises DatasetError when it is set to something that is not a folder.
    """
    if "COREDATA" not in os.environ:
        return default_coredata()
    value = os.environ["COREDATA"].strip()
    if not value:
        return None
    # A relative value is taken against the working folder at its first read, and that
    # absolute path kept for this value: a later os.chdir must not move the datasets.
    path = _resolved_once("COREDATA", value)
    if not path.is_dir():
        _RESOLVED.pop(("COREDATA", value), None)  # read again from the next folder
        raise DatasetError(f"COREDATA={value} is not a folder (from {Path.cwd()}); point it at a "
                           "copy of the datasets (a folder with mulan/, meka/, rcv1v2/) or unset it")
    return path


def label_file_under_coredata(labels):
    """A label spec that names a relative ``.xml`` file found nowhere from the working folder
    but under ``$COREDATA``: that file (looked up as a data path is); any other spec unchanged.

    ``--labels mulan/enron/enron.xml`` then works wherever ``mulan/enron/enron.arff`` does.
    """
    if not isinstance(labels, (str, os.PathLike)) or isinstance(labels, bytes):
        return labels
    path = Path(labels)
    if (not str(labels).strip().lower().endswith(".xml") or path.is_absolute()
            or path.exists()):
        return labels
    try:
        local = coredata_dir()
    except DatasetError:
        return labels  # the data's lookup reports a bad $COREDATA
    if local is None or not (local / path).is_file():
        return labels
    return str(local / path) if isinstance(labels, str) else local / path


def cache_dir() -> Path:
    """The dataset cache folder (created on first download).

    Raises DatasetError when ``$COREDATA_HOME`` names something that is not a folder.
    """
    home = os.environ.get("COREDATA_HOME", "").strip()
    for var, value in (("COREDATA_HOME", home), ("XDG_CACHE_HOME", os.environ.get("XDG_CACHE_HOME", ""))):
        if "://" in value:  # Path() would make it a local folder named "s3:"
            raise DatasetError(f"{var}={value.split('://')[0]}://... is a URL; the dataset cache is a "
                               "local folder: point it at a local path")
    if home:
        path = _resolved_once("COREDATA_HOME", home)  # as $COREDATA: against the first read's cwd
        if path.exists() and not path.is_dir():
            raise DatasetError(f"COREDATA_HOME={home} is a file, not a folder; point it at a "
                               "folder for the dataset cache")
        return path
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "coreselect"


#: What ``COREDATA_MIRROR`` may be: the downloads' deadlines cover these (urllib's other
#: schemes, such as ftp://, would run without one).
MIRROR_SCHEMES = ("https", "http", "file")


def file_url(f: DatasetFile) -> str:
    """Where to download ``f`` from: the mirror if ``COREDATA_MIRROR`` is set, else upstream."""
    mirror = os.environ.get("COREDATA_MIRROR", "").strip()
    if mirror:
        scheme = mirror.split("://", 1)[0].lower() if "://" in mirror else None
        if scheme not in MIRROR_SCHEMES:
            what = ("is not a URL; for a local folder write COREDATA_MIRROR=file:///path/to/data"
                    if scheme is None else f"is not supported ({scheme}:// mirrors are not)")
            raise FetchError(
                f"COREDATA_MIRROR={mirror} {what}: a mirror is a base URL of "
                "https://, http:// or file:// (for files on object storage, copy them to a "
                "folder, or serve them over https)")
        return mirror.rstrip("/") + "/" + f.path
    if f.url is None:
        raise FetchError(
            f"{f.path} has no public upstream file (it was converted for coreselect); put a copy "
            "under $COREDATA, or set COREDATA_MIRROR to a mirror that serves it "
            "(e.g. COREDATA_MIRROR=file:///path/to/data)"
        )
    return f.url


def sha256_of(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _matches(path: Path, f: DatasetFile, verify: bool) -> bool:
    """Whether ``path`` is a usable copy of ``f`` (checksum checked once per process)."""
    if not path.is_file():
        return False
    if not verify or f.sha256 is None:
        return True
    st = path.stat()
    key = (str(path), st.st_mtime, st.st_size)
    if key in _verified_cache:
        return True
    if (f.size is None or st.st_size == f.size) and sha256_of(path) == f.sha256:
        _verified_cache.add(key)
        return True
    return False


def locate(f: DatasetFile, verify: bool = True) -> Path | None:
    """A local copy of ``f`` (in ``$COREDATA``, then the cache), or None; never downloads.

    Raises DatasetError when the ``$COREDATA`` copy does not match the registry's SHA-256
    (a silently different dataset would give different results).
    """
    local = coredata_dir()
    if local is not None:
        p = local / f.path
        if p.is_file():
            if _matches(p, f, verify):
                return p
            raise DatasetError(
                f"{p} does not match the registry's SHA-256 {f.sha256}; it is not the published file. "
                "Pass the file's path to use it as it is, or restore the original"
            )
    p = cache_dir() / f.path
    return p if _matches(p, f, verify) else None


def is_local(info: DatasetInfo) -> bool:
    """Whether every file of the dataset is in ``$COREDATA`` (no check of checksums)."""
    try:
        local = coredata_dir()
    except DatasetError:
        return False
    return local is not None and all((local / f.path).is_file() for f in info.files)


def is_cached(info: DatasetInfo) -> bool:
    """Whether every file of the dataset is in the cache (no check of checksums)."""
    try:
        root = cache_dir()
    except DatasetError:
        return False
    return all((root / f.path).is_file() for f in info.files)


def _default_deadline(f: DatasetFile, timeout: float) -> float:
    return timeout + (f.size or MAX_UNKNOWN_BYTES // 64) / _MIN_RATE


def _check_seconds(name: str, value: float | None) -> None:
    if value is None:
        return
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise ParameterError(f"{name} must be a finite number of seconds > 0, got {value!r}")


class _Watchdog:
    """Shuts down every socket of one download when its deadline passes, so that no read
    (of the status line, a header or the body) can outlive the deadline."""

    def __init__(self, seconds: float):
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.expired:
                self._close(sock)

    @staticmethod
    def _close(sock: socket.socket) -> None:
        import socket

        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                self._close(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _opener(dog: _Watchdog) -> urllib.request.OpenerDirector:
    """A urllib opener whose HTTP(S) connections register their sockets with ``dog``."""
    import http.client
    import urllib.request

    class _HTTP(http.client.HTTPConnection):
        def connect(self):
            super().connect()
            dog.watch(self.sock)

    class _HTTPS(http.client.HTTPSConnection):
        def connect(self):
            super().connect()
            dog.watch(self.sock)

    class _HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(_HTTP, req)

    class _HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(_HTTPS, req, context=getattr(self, "_context", None))

    return urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)


class _LocalFile:
    """A ``file://`` URL opened without blocking; anything but a regular file is refused."""

    def __init__(self, url: str):
        import urllib.parse
        import urllib.request

        parsed = urllib.parse.urlparse(url)
        if parsed.netloc not in ("", "localhost"):
            raise FetchError(f"{url}: file:// URLs must name a local path")
        path = urllib.request.url2pathname(parsed.path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        except OSError as exc:
            raise FetchError(f"download of {url} failed: {exc.strerror or exc}") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a socket"
                    if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise FetchError(f"download of {url} failed: it is {kind}, not a regular file")
        os.set_blocking(fd, True)
        self.fh = os.fdopen(fd, "rb")
        self.headers = {"Content-Length": str(st.st_size)}

    def read(self, n: int) -> bytes:
        return self.fh.read(n)

    read1 = read

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()


def _download(
    f: DatasetFile,
    target: Path,
    verify: bool,
    progress: ProgressCallback | None,
    timeout: float,
    deadline: float | None,
    max_bytes: int,
) -> None:
    import http.client
    import urllib.error

    url = file_url(f)
    cap = f.size if (f.size is not None and verify) else max_bytes
    budget = _default_deadline(f, timeout) if deadline is None else float(deadline)
    h = hashlib.sha256()
    started = time.monotonic()
    dog = _Watchdog(budget)

    def late(got: int) -> FetchError:
        return FetchError(f"download of {url} took longer than its deadline of {budget:g} s "
                          f"({got} bytes received); nothing cached")

    def opened():
        if url.lower().startswith("file:"):
            return _LocalFile(url)
        return _opener(dog).open(url, timeout=min(timeout, budget))

    got = 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)  # mkdir honours the umask
        # Partial files of killed downloads (ours carry the pid; older ones only an age).
        clean_stale(target.parent, (f".{glob.escape(target.name)}.*.part",))
        fd, tmp = tempfile.mkstemp(prefix=temp_name_prefix(target.name), suffix=".part", dir=target.parent)
    except OSError as exc:
        dog.cancel()
        raise FetchError(f"cannot write into the dataset cache {target.parent}: {exc.strerror or exc}") from exc
    # nothing between mkstemp and this try: a signal there would leave the .part file
    try:
        try:
            with os.fdopen(fd, "wb") as out, opened() as resp:
                length = resp.headers.get("Content-Length")
                total = int(length) if length and length.strip().isdigit() else None
                if total is not None and total > cap:
                    raise FetchError(f"{url} announces {total} bytes, more than the {cap} expected; "
                                     "refusing to download it")
                if progress:
                    progress("start", f, total)
                # read1 returns whatever has arrived, so the deadline is checked at least once
                # per socket timeout even when the server trickles bytes.
                read = getattr(resp, "read1", resp.read)
                while True:
                    if dog.expired or time.monotonic() - started > budget:
                        raise late(got)
                    chunk = read(_CHUNK)
                    if not chunk:
                        break
                    got += len(chunk)
                    if got > cap:
                        raise FetchError(f"{url} sent more than the {cap} bytes expected; "
                                         "download stopped, nothing cached")
                    out.write(chunk)
                    h.update(chunk)
                    if progress:
                        progress("update", f, len(chunk))
                if dog.expired:
                    raise late(got)
                if total is not None and got != total:
                    raise FetchError(f"download of {url} was truncated ({got} of {total} bytes); nothing cached")
        except FetchError:
            raise
        except Exception as exc:
            if dog.expired:  # the watchdog's shutdown surfaces as whatever the read was doing
                raise late(got) from None
            if isinstance(exc, urllib.error.HTTPError):
                raise FetchError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from None
            if isinstance(exc, http.client.HTTPException) or (
                    isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, http.client.HTTPException)):
                err = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                what = " ".join(f"{type(err).__name__}: {err}".split())[:200]
                raise FetchError(f"download of {url} failed: the server broke the HTTP protocol ({what}); "
                                 "nothing cached") from None
            if isinstance(exc, TimeoutError) or (isinstance(exc, urllib.error.URLError)
                                                 and isinstance(exc.reason, TimeoutError)):
                raise FetchError(f"download of {url} failed: no data for {min(timeout, budget):g} s "
                                 "(timed out); nothing cached") from None
            if isinstance(exc, (urllib.error.URLError, OSError, ValueError)):
                reason = getattr(exc, "reason", None) or exc
                if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
                    reason = exc.strerror or reason
                raise FetchError(f"download of {url} failed: {reason}") from None
            raise
        finally:
            dog.cancel()
            if progress:
                progress("end", f, None)
        if verify:
            digest = h.hexdigest()
            if digest != f.sha256:
                raise FetchError(
                    f"checksum mismatch for {url}: expected SHA-256 {f.sha256}, got {digest}; "
                    "the download was truncated or tampered with and has been removed"
                )
        try:
            os.chmod(tmp, file_mode())  # mkstemp's 0600 would hide the cache from other users
            os.replace(tmp, target)
        except OSError as exc:
            raise FetchError(f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def fetch_files(
    info: DatasetInfo,
    paths: Iterable[str] | None = None,
    verify: bool = True,
    progress: ProgressCallback | None = None,
    force: bool = False,
    timeout: float = 60.0,
    deadline: float | None = None,
    max_bytes: int = MAX_UNKNOWN_BYTES,
) -> dict[str, Path]:
    """Local paths of files of a registry entry, downloading only what is not on this machine.

    ``paths``: the registry paths wanted (default: every file of the entry). Returns a dict
    from registry path to local path (in ``$COREDATA`` or the cache). See :func:`fetch`.
    """
    _check_seconds("timeout", timeout)
    _check_seconds("deadline", deadline)
    wanted = [f for f in info.files if paths is None or f.path in set(paths)]
    if verify:
        unknown = [f.path for f in wanted if f.sha256 is None]
        if unknown:
            raise DatasetError(
                f"dataset {info.name!r}: no SHA-256 is known for {', '.join(unknown)}, so the download "
                "cannot be verified; pass verify=False (CLI: --no-verify) to cache it unverified"
            )
    found: dict[str, Path] = {}
    for f in wanted:
        if not force:
            p = locate(f, verify)
            if p is not None:
                found[f.path] = p  # local copy or cache hit: no network
                continue
        target = cache_dir() / f.path
        try:
            _download(f, target, verify and f.sha256 is not None, progress, timeout, deadline, max_bytes)
        except FetchError as exc:
            local = coredata_dir()
            where = f"$COREDATA ({local})" if local else "$COREDATA (none: unset or empty, no ../shared/data)"
            raise FetchError(f"{exc} [{f.path} is neither in {where} nor in the cache ({cache_dir()})]") from None
        found[f.path] = target
    return found


def fetch(
    name: str,
    verify: bool = True,
    progress: ProgressCallback | None = None,
    force: bool = False,
    timeout: float = 60.0,
    deadline: float | None = None,
    max_bytes: int = MAX_UNKNOWN_BYTES,
) -> list[Path]:
    """Make a registry dataset available on this machine and return its data files.

    Files in ``$COREDATA`` are used as they are (offline); the others are downloaded into
    the cache unless already there.

    Parameters
    ----------
    name : str
        Registry name or alias (see ``coreselect datasets list``).
    verify : bool
        Check every file against the registry's SHA-256 (local copies once per process).
        Files without a known checksum are refused unless ``verify=False``.
    progress : callable, optional
        ``progress(event, file, n)`` with events ``"start"`` (n = total bytes or None),
        ``"update"`` (n = bytes just read) and ``"end"``; the CLI passes a tqdm bar.
    force : bool
        Download again into the cache, even when a local or cached copy exists.
    timeout : float
        Socket timeout in seconds (connecting, and waiting for each piece of data).
    deadline : float, optional
        Seconds one file may take in all; default 60 s + 20 s per MB of its known size.
    max_bytes : int
        Size cap of files whose size the registry does not know (and of ``verify=False``
        downloads); known files are capped at their size.

    Returns
    -------
    list of Path
        The data files, in the order they make up the dataset.

    Raises
    ------
    DatasetError
        Unknown name, unverifiable file, or a ``$COREDATA`` copy that is not the published file.
    FetchError
        (a DatasetError and an OSError) network failure, HTTP error, deadline, size cap or
        checksum mismatch.
    """
    info = get(name)
    found = fetch_files(info, None, verify=verify, progress=progress, force=force, timeout=timeout,
                        deadline=deadline, max_bytes=max_bytes)
    return [found[p] for p in info.data]
