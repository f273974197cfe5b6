"""Text helpers shared by the readers: bounded (de)compressed reading, quoting, numbers.

Limits (one place, documented in the README's "Reading untrusted files"):

* **Decompressed size.** ``.gz``/``.bz2``/``.xz`` files are decoded as a stream in 1 MiB
  chunks and refused once the decoded text exceeds ``MAX_RATIO`` times the compressed size
  plus ``RATIO_FLOOR`` bytes (a decompression bomb expands ~1000x, real datasets ~5-50x),
  or ``MAX_TEXT_BYTES`` in any case. Nothing larger than what will be refused is held.
* **Numbers.** A numeric cell is a finite decimal number (``1``, ``-2.5``, ``3e-4``);
  ``nan``/``inf``, hexadecimal, ``1_000`` and empty cells are errors naming file and line.
  The fast, whole-buffer paths must accept exactly what :func:`parse_number` accepts; the
  tests check them against each other on generated cells.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import warnings
import zlib
from typing import BinaryIO

import numpy as np

from coreselect.errors import DatasetError

__all__ = [
    "open_binary",
    "check_regular_input",
    "compressed_writer",
    "read_bytes",
    "open_text",
    "read_quoted",
    "split_values",
    "unescape",
    "quote",
    "parse_number",
    "fast_numbers",
    "only_number_chars",
    "stem",
    "COMPRESSED_SUFFIXES",
    "MAX_LINE_BYTES",
    "line_too_long",
    "shorten",
    "memory_budget",
]

COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")

try:  # ISA-L's inflate (python-isal) is about 4x zlib's; the same bytes out
    from isal import igzip as _gzip
    from isal.isal_zlib import error as _IsalError
except ImportError:  # pragma: no cover - isal is a dependency; zlib does the same, slower
    _gzip, _IsalError = gzip, zlib.error

#: What a corrupt or truncated compressed stream raises, whichever decompressor reads it.
_STREAM_ERRORS = (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error, _IsalError)

MAX_RATIO = 200
RATIO_FLOOR = 256 << 20  # 256 MiB: any file may decode to this much, whatever its ratio
MAX_TEXT_BYTES = 16 << 30  # 16 GiB: nothing bigger is read as text at all
_CHUNK = 1 << 20


class _Capped(io.RawIOBase):
    """A read-only stream over a decompressor that fails once more than ``cap`` bytes came out."""

    def __init__(self, inner: BinaryIO, cap: int, path: str):
        self.inner, self.cap, self.path, self.seen = inner, cap, path, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            n = self.inner.readinto(b)
        except _STREAM_ERRORS as exc:  # corrupt or truncated stream
            raise DatasetError(f"cannot read the file: {exc}", path=self.path) from None
        self.seen += n
        if self.seen > self.cap:
            raise DatasetError(
                f"decompresses to more than {self.cap} bytes (over {MAX_RATIO}x its compressed size); "
                "refusing (a decompression bomb?)",
                path=self.path,
            )
        return n

    def close(self) -> None:
        self.inner.close()
        super().close()


def memory_budget() -> int:
    """Bytes this process may still allocate: the smaller of the memory the system has
    available (``MemAvailable``) and what the address-space limit (``ulimit -v``) leaves.
    Readers refuse inputs whose dense size exceeds it instead of dying halfway."""
    budget = 1 << 62
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    budget = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            used = 0
            with open("/proc/self/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmSize:"):
                        used = int(line.split()[1]) * 1024
                        break
            budget = min(budget, max(0, soft - used))
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return budget


def _cap_for(path: str) -> int:
    return min(MAX_TEXT_BYTES, MAX_RATIO * os.path.getsize(path) + RATIO_FLOOR)


#: The environment variable of storage options (a JSON object: endpoint, timeouts, ...), the
#: one the column stores read (coreselect.store.fs), so data files and stores at one URL
#: need one setting.
STORAGE_OPTIONS_ENV = "CORESELECT_STORAGE_OPTIONS"


def url_fs(url: str):
    """``(fsspec file system, path)`` of a data file's URL, with the storage options of
    ``$CORESELECT_STORAGE_OPTIONS``; a one-line DatasetError when it cannot be set up."""
    import json

    import fsspec

    try:
        options = json.loads(os.environ.get(STORAGE_OPTIONS_ENV) or "{}")
    except ValueError:
        options = None
    if not isinstance(options, dict):
        raise DatasetError(f"${STORAGE_OPTIONS_ENV} must hold a JSON object of storage options", path=url)
    retries = options.pop("retries", None)
    options.pop("deadline", None)  # the stores' whole-operation deadline: no reader option
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
        if url.split("://", 1)[0] in ("s3", "s3a"):
            # botocore's retries (config_kwargs) are the tries; s3fs's own five more would
            # multiply the read timeout a frozen server costs
            fs.retries = 1 if retries is None else int(retries)
        return fs, path
    except Exception as exc:  # noqa: BLE001 - a missing backend, bad options: their own types
        raise DatasetError(f"cannot open the URL: {' '.join(str(exc).split()) or type(exc).__name__}",
                           path=url) from None


def _open_url(p: str) -> BinaryIO:
    """An fsspec URL's bytes, decompressed by suffix with the same cap as a local file."""
    low = p.lower()
    fs, root = url_fs(p)
    try:
        size = fs.size(root)
        raw = fs.open(root, "rb")
    except FileNotFoundError:
        raise DatasetError("no such file", path=p) from None
    except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
        raise DatasetError(f"cannot read the file: {' '.join(str(exc).split()) or type(exc).__name__}",
                           path=p) from None
    cap = min(MAX_TEXT_BYTES, MAX_RATIO * int(size or 0) + RATIO_FLOOR)
    if low.endswith(".gz"):
        inner = _gzip.GzipFile(fileobj=raw, mode="rb")
    elif low.endswith(".bz2"):
        inner = bz2.BZ2File(raw, "rb")
    elif low.endswith(".xz"):
        inner = lzma.LZMAFile(raw, "rb")
    else:
        if size and size > MAX_TEXT_BYTES:
            raw.close()
            raise DatasetError(f"larger than {MAX_TEXT_BYTES} bytes; refusing", path=p)
        inner = raw
    return io.BufferedReader(_Capped(inner, cap, p), buffer_size=_CHUNK)


#: The longest line a reader holds (a LIBSVM row of 5 million ``index:value`` pairs, a CSV
#: row of 10^5 long cells): a file without newlines (a binary file, ``/dev/zero`` copied,
#: a sparse file) is refused once this much of one line is in memory, not read whole.
MAX_LINE_BYTES = 64 << 20


def line_too_long(head: bytes | None, path: str, line: int | None) -> DatasetError:
    """The error for a line over :data:`MAX_LINE_BYTES`, showing only its first bytes."""
    shown = "" if head is None else f" (it starts {shorten(repr(bytes(head[:80]).decode('utf-8', 'replace')))})"
    return DatasetError(f"a line longer than {MAX_LINE_BYTES} bytes{shown}; refusing (not a text file of "
                        "rows, or its newlines are missing)", path=path, line=line)


def shorten(token: str, limit: int = 80) -> str:
    """``token`` for an error message: its first ``limit`` characters (a malformed cell may
    be a whole file long)."""
    return token if len(token) <= limit else token[:limit] + "..."


def check_regular_input(path: str | os.PathLike) -> None:
    """Refuse a local input that is not a regular file, by its status alone (never opened):
    opening a FIFO waits for a writer forever and a device (``/dev/zero``) never ends. A
    dangling link is named as one; a missing file or a folder is left to the opener."""
    import stat

    p = str(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            raise DatasetError("is a symbolic link to nothing (dangling); refusing", path=p) from None
        return
    except OSError:
        return  # a loop of links, no permission: the opener says so
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return
    kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a character device" if stat.S_ISCHR(st.st_mode)
            else "a block device" if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
            else "special")
    raise DatasetError(f"not a regular file ({kind}); refusing to read it", path=p)


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """The file's bytes as a stream, decompressed by suffix with the size cap of the module docs.
    A URL (``s3://``, ``memory://``, ...) is opened with fsspec."""
    p = str(path)
    low = p.lower()
    if "://" in p and not low.startswith("file://"):
        return _open_url(p)
    check_regular_input(p)
    try:
        if low.endswith(".gz"):
            inner = _gzip.open(p, "rb")
        elif low.endswith(".bz2"):
            inner = bz2.open(p, "rb")
        elif low.endswith(".xz"):
            inner = lzma.open(p, "rb")
        else:
            fh = open(p, "rb")
            if os.path.getsize(p) > MAX_TEXT_BYTES:
                fh.close()
                raise DatasetError(f"larger than {MAX_TEXT_BYTES} bytes; refusing", path=p)
            return fh
        return io.BufferedReader(_Capped(inner, _cap_for(p), p), buffer_size=_CHUNK)
    except FileNotFoundError:
        raise DatasetError("no such file", path=p) from None
    except IsADirectoryError:
        raise DatasetError("is a directory, not a data file", path=p) from None
    except PermissionError:
        raise DatasetError("permission denied", path=p) from None
    except OSError as exc:
        raise DatasetError(f"cannot read the file: {exc.strerror or exc}", path=p) from None


def compressed_writer(raw: BinaryIO, path: str) -> io.TextIOWrapper:
    """A text stream into ``raw``, compressed by the suffix of ``path``."""
    low = path.lower()
    if low.endswith(".gz"):
        inner = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
    elif low.endswith(".bz2"):
        inner = bz2.BZ2File(raw, "wb")
    elif low.endswith(".xz"):
        inner = lzma.LZMAFile(raw, "wb")
    else:
        return io.TextIOWrapper(raw, encoding="utf-8", newline="\n", write_through=True)
    return io.TextIOWrapper(inner, encoding="utf-8", newline="\n")


def read_bytes(path: str | os.PathLike) -> bytes:
    """All (decompressed, capped) bytes of a file; errors become DatasetError."""
    p = str(path)
    with open_binary(p) as fh:
        try:
            return fh.read()
        except DatasetError:
            raise
        except _STREAM_ERRORS as exc:
            raise DatasetError(f"cannot read the file: {exc}", path=p) from None


def open_text(path: str | os.PathLike) -> str:
    """Read a whole (optionally compressed) text file: UTF-8, else Latin-1 (old Weka files)."""
    raw = read_bytes(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")  # every byte sequence decodes


def stem(path: str | os.PathLike, data_suffixes: tuple[str, ...] = ()) -> str:
    """The file name without a compression suffix and without the data suffix."""
    name = os.path.basename(str(path))
    for suf in COMPRESSED_SUFFIXES:
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
            break
    for suf in data_suffixes:
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return name.rsplit(".", 1)[0] if "." in name and not data_suffixes else name


# ------------------------------------------------------------------------- quoting

_UNESCAPE_RE = re.compile(r"\\(.)")


def unescape(s: str) -> str:
    return _UNESCAPE_RE.sub(r"\1", s)


def read_quoted(s: str, pos: int) -> tuple[str, int]:
    """Read a quoted token starting at ``s[pos]`` (a quote); return (text, end position)."""
    q = s[pos]
    i = pos + 1
    out = []
    n = len(s)
    while i < n:
        ch = s[i]
        if ch == "\\" and i + 1 < n:
            out.append(s[i + 1])
            i += 2
            continue
        if ch == q:
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise ValueError("unterminated quote")


def split_values(s: str) -> list[str]:
    """Split a comma-separated list that may hold quoted items; items are unquoted and stripped."""
    items: list[str] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] in "'\"":
            tok, i = read_quoted(s, i)
            while i < n and s[i] in " \t":
                i += 1
            if i < n and s[i] != ",":
                raise ValueError(f"unexpected text after quoted value {tok!r}")
        else:
            j = s.find(",", i)
            j = n if j < 0 else j
            tok = s[i:j].strip()
            i = j
        items.append(tok)
        if i >= n:
            return items
        i += 1  # skip the comma


_PLAIN_RE = re.compile(r"[^\s'\"{}%,\\?]+")


def quote(name: str) -> str:
    """Quote an ARFF name or value when it needs it (Weka's rules, roughly)."""
    if name and _PLAIN_RE.fullmatch(name):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


# ------------------------------------------------------------------------- numbers

_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # ASCII digits only


def parse_number(token: str) -> float:
    """The reference number parser: a finite decimal, else ValueError (see module docs)."""
    t = token.strip()
    if not _NUMBER_RE.fullmatch(t):
        raise ValueError(f"{token!r} is not a number")
    v = float(t)
    if not np.isfinite(v):
        raise ValueError(f"{token!r} is not a finite number")
    return v


_NUMBER_BYTES = b"0123456789eE+-."
_WHITE = b" \t\r\n"


def _ascii(text: str) -> bytes | None:
    try:
        return text.encode("ascii")
    except UnicodeEncodeError:
        return None


def only_number_chars(text: str, extra: bytes = b"") -> bool:
    """Whether ``text`` holds only digits, ``eE+-.``, whitespace and ``extra`` (one C pass).

    Guards the fast paths: ``np.fromstring`` (strtod) also reads ``inf``, ``nan`` and hex.
    """
    raw = _ascii(text)
    return raw is not None and not raw.translate(None, _NUMBER_BYTES + _WHITE + extra)


def fast_numbers(text: str, sep: str, expected: int) -> np.ndarray | None:
    """Parse exactly ``expected`` finite numbers from ``text`` in one C pass, or None.

    None means "not sure": callers then run the token path (:func:`parse_number`), which
    accepts or reports each value. numpy's legacy parser reads an empty or blank cell
    (``1, ,5``) as -1 and ``inf``/``nan``/``1e999`` as non-finite numbers, so such text is
    refused here before and after parsing.
    """
    raw = _ascii(text)
    if raw is None or raw.translate(None, _NUMBER_BYTES + _WHITE + sep.encode("ascii")):
        return None
    if sep.strip():
        # An empty cell is two separators with only blanks between, or one at either end.
        squeezed = raw.translate(None, _WHITE)
        s = sep.encode("ascii")
        if not squeezed or s + s in squeezed or squeezed.startswith(s) or squeezed.endswith(s):
            return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            arr = np.fromstring(text, dtype=np.float64, sep=sep)
        except (ValueError, DeprecationWarning):
            return None
    if len(arr) != expected or not np.isfinite(arr).all():
        return None
    return arr
