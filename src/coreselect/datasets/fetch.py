"""Verified downloads of registry datasets into a local cache.

* Cache folder: ``$COREDATA_HOME``, else ``$XDG_CACHE_HOME/coreselect``, else
  ``~/.cache/coreselect``; files keep the mirror layout (``mulan/emotions/emotions.arff``).
* ``$COREDATA_MIRROR`` (a base URL, ``http://host/path``) replaces the upstream hosts.
* Each file is downloaded into a temporary file in its cache folder, its SHA-256 is
  checked against the registry, and only then it is renamed into place. A truncated or
  tampered download is removed and reported; nothing half-written is ever in the cache.
* Files already in the cache are not downloaded again (their checksum is checked once
  per process unless ``verify=False``).
* Files without a known checksum are refused unless ``verify=False``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from coreselect.datasets.registry import DatasetFile, DatasetInfo, get
from coreselect.errors import DatasetError

__all__ = ["cache_dir", "fetch", "file_url", "sha256_of", "is_cached"]

# progress(event, file, n): event "start" (n = total bytes or None), "update" (n bytes), "end".
ProgressCallback = Callable[[str, DatasetFile, "int | None"], None]

_CHUNK = 1 << 16
_verified_cache: set[tuple[str, float, int]] = set()


def cache_dir() -> Path:
    """The dataset cache folder (created on first use)."""
    home = os.environ.get("COREDATA_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "coreselect"


def file_url(f: DatasetFile) -> str:
    """Where to download ``f`` from: the mirror if ``COREDATA_MIRROR`` is set, else upstream."""
    mirror = os.environ.get("COREDATA_MIRROR")
    if mirror:
        return mirror.rstrip("/") + "/" + f.path
    if f.url is None:
        raise DatasetError(
            f"{f.path} has no public upstream file (it was converted for coreselect); "
            "set COREDATA_MIRROR to a mirror that serves it"
        )
    return f.url


def sha256_of(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_cached(info: DatasetInfo) -> bool:
    """Whether every file of the dataset is in the cache."""
    root = cache_dir()
    return all((root / f.path).is_file() for f in info.files)


def _check_cached(target: Path, f: DatasetFile, verify: bool) -> bool:
    if not target.is_file():
        return False
    if not verify or f.sha256 is None:
        return True
    st = target.stat()
    key = (str(target), st.st_mtime, st.st_size)
    if key in _verified_cache:
        return True
    if sha256_of(target) == f.sha256:
        _verified_cache.add(key)
        return True
    return False


def _download(f: DatasetFile, target: Path, verify: bool, progress: ProgressCallback | None, timeout: float) -> None:
    url = file_url(f)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    h = hashlib.sha256()
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                length = resp.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                if progress:
                    progress("start", f, total)
                got = 0
                while True:
                    chunk = resp.read(_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    h.update(chunk)
                    got += len(chunk)
                    if progress:
                        progress("update", f, len(chunk))
                if total is not None and got != total:
                    raise DatasetError(f"download of {url} was truncated ({got} of {total} bytes); nothing cached")
        except urllib.error.HTTPError as exc:
            raise DatasetError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DatasetError(f"download of {url} failed: {reason}") from None
        finally:
            if progress:
                progress("end", f, None)
        if verify:
            digest = h.hexdigest()
            if digest != f.sha256:
                raise DatasetError(
                    f"checksum mismatch for {url}: expected SHA-256 {f.sha256}, got {digest}; "
                    "the download was truncated or tampered with and has been removed"
                )
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def fetch(
    name: str,
    verify: bool = True,
    progress: ProgressCallback | None = None,
    force: bool = False,
    timeout: float = 60.0,
) -> list[Path]:
    """Download a registry dataset into the cache (if not there yet) and return its data files.

    Parameters
    ----------
    name : str
        Registry name or alias (see ``coreselect datasets list``).
    verify : bool
        Check every download against the registry's SHA-256. Files without a known
        checksum are refused unless ``verify=False``.
    progress : callable, optional
        ``progress(event, file, n)`` with events ``"start"`` (n = total bytes or None),
        ``"update"`` (n = bytes just read) and ``"end"``; the CLI passes a tqdm bar.
    force : bool
        Download again even when cached.
    timeout : float
        Socket timeout in seconds.

    Returns
    -------
    list of Path
        The cached data files, in the order they make up the dataset.

    Raises
    ------
    DatasetError
        Unknown name, unverifiable file, network failure, or checksum mismatch.
    """
    info = get(name)
    if verify:
        unknown = [f.path for f in info.files if f.sha256 is None]
        if unknown:
            raise DatasetError(
                f"dataset {info.name!r}: no SHA-256 is known for {', '.join(unknown)}, so the download "
                "cannot be verified; pass verify=False (CLI: --no-verify) to cache it unverified"
            )
    root = cache_dir()
    for f in info.files:
        target = root / f.path
        if not force and _check_cached(target, f, verify):
            continue  # cache hit: no network
        _download(f, target, verify and f.sha256 is not None, progress, timeout)
    return [root / p for p in info.data]
