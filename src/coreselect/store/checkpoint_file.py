"""A checkpoint's file: the record format (``MAGIC``, a JSON header, the arrays) and where a
record lives (a local path or a URL).

Shared by the resumable selection (:mod:`coreselect.selection.checkpoint`) and the resumable
store build (:mod:`coreselect.store._resume`): a record is written whole (a temporary file
renamed, or one PUT), read capped, and refused in one line when damaged or not ours.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from coreselect.errors import CheckpointError, OutputError

#: Version of the file layout; a record of another format is refused.
FORMAT = 2  # 2: a centralized run records the relevances of the selectable columns only
MAGIC = b"coreselect-checkpoint\n"



def _version() -> str:
    import coreselect

    return str(coreselect.__version__)


# -- the file ----------------------------------------------------------------------------------
def encode(header: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """``MAGIC``, one line of JSON (the header, with the payload's size and SHA-256), then the
    arrays as an uncompressed ``.npz``."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    payload = buffer.getvalue()
    header = {**header, "payload_bytes": len(payload),
              "payload_sha256": hashlib.sha256(payload).hexdigest()}
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def decode(data: bytes, shown: str) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of a record; :class:`CheckpointError` when it is not one, or
    is damaged."""
    def damaged(why: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {shown} is damaged ({why}); delete it to start "
                               "the run afresh")

    if not data.startswith(MAGIC):
        raise CheckpointError(f"checkpoint {shown} is not a coreselect checkpoint; give the "
                              "path of one, or a new path")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise damaged("truncated header")
    try:
        header = json.loads(data[len(MAGIC):end].decode("utf-8"))
        size, digest = int(header["payload_bytes"]), str(header["payload_sha256"])
    except (ValueError, KeyError, TypeError, OverflowError, UnicodeDecodeError):
        raise damaged("unreadable header") from None
    payload = data[end + 1:]
    if len(payload) != size:
        raise damaged(f"{len(payload)} bytes of data, expected {size}: truncated")
    if hashlib.sha256(payload).hexdigest() != digest:
        raise damaged("its data fail their checksum")
    try:
        import zipfile

        with zipfile.ZipFile(io.BytesIO(payload)) as zf:
            # Records are written stored (np.savez): a compressed member could expand to far
            # more than the record holds; a member declaring more than the payload is a lie.
            if any(i.compress_type != zipfile.ZIP_STORED or i.file_size > size
                   for i in zf.infolist()):
                raise damaged("a compressed or oversized member; records are written "
                              "uncompressed")
            for info in zf.infolist():  # an array's header must fit its member's bytes
                with zf.open(info) as fh:
                    declared = _declared_bytes(fh)
                if declared > info.file_size:
                    raise damaged(f"{info.filename} declares {declared} bytes in "
                                  f"{info.file_size}")
    except CheckpointError:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile raises many types
        raise damaged(f"unreadable arrays: {type(exc).__name__}") from None
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except Exception as exc:  # noqa: BLE001 - numpy/zipfile raise many types
        raise damaged(f"unreadable arrays: {type(exc).__name__}") from None
    return header, arrays


def _declared_bytes(fh) -> int:
    """The bytes an ``.npy`` stream's header declares for its array (numpy allocates them
    before it reads: a header must not make it allocate more than the member holds)."""
    from numpy.lib import format as npy

    version = npy.read_magic(fh)
    shape, _, dtype = (npy.read_array_header_1_0(fh) if version == (1, 0)
                       else npy.read_array_header_2_0(fh))
    if dtype.hasobject:
        raise ValueError("object arrays")
    return int(np.prod(shape, dtype=object)) * dtype.itemsize


class Checkpoint:
    """Where a run's record lives: a local path, or a URL (``s3://``, ``gs://``, ``az://``,
    ``memory://``; through :mod:`coreselect.store.fs`, storage options as for stores)."""

    def __init__(self, location: str | os.PathLike, storage_options: dict | None = None):
        from coreselect.store.fs import is_url, local_path, scrub

        self.location = os.fspath(location) if not isinstance(location, str) else location
        self.url = is_url(self.location)
        self.path = None if self.url else Path(local_path(self.location))
        self.shown = scrub(self.location)
        self._options = storage_options
        self._fs = None

    def __repr__(self) -> str:
        return f"Checkpoint({self.shown!r})"

    def _filesystem(self):
        if self._fs is None:
            from coreselect.store.fs import filesystem, storage_options

            self._options = storage_options(self._options)
            self._fs = filesystem(self.location, self._options)
        return self._fs

    def read(self) -> bytes | None:
        """The record's bytes, or None when there is none yet."""
        if not self.url:
            try:
                kind = os.stat(self.path).st_mode
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise CheckpointError(f"cannot read checkpoint {self.shown}: "
                                      f"{exc.strerror or exc}") from None
            if stat.S_ISDIR(kind):
                raise CheckpointError(f"checkpoint {self.shown} is a folder; give a file path")
            if not stat.S_ISREG(kind):  # a FIFO would hang, /dev/zero never end
                raise CheckpointError(f"checkpoint {self.shown} is not a regular file (a FIFO,"
                                      " a device or a socket); give a file path")
            try:
                return _read_capped(self.path, self.shown)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise CheckpointError(f"cannot read checkpoint {self.shown}: "
                                      f"{exc.strerror or exc}") from None
        fs, root = self._filesystem()
        try:
            size = fs.size(root)
            if size is not None and size > MAX_RECORD_BYTES:
                raise CheckpointError(f"checkpoint {self.shown} is {size} bytes, more than a "
                                      f"record holds ({MAX_RECORD_BYTES}); not a checkpoint")
            if size is not None and size > 1 << 20:  # a large object: proved a record first
                head = fs.cat_file(root, start=0, end=len(MAGIC))
                if head != MAGIC:
                    return head  # decode refuses it in one line
            return fs.cat_file(root)
        except CheckpointError:
            raise
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
            from coreselect.store.fs import _remote_error

            raise _remote_error(self.shown, "", exc, self._options or {}) from None

    def write(self, data: bytes) -> None:
        """Replace the record whole (see the module docstring)."""
        self._put(self.path, "", data)

    @property
    def parts_folder(self) -> Path | None:
        return None if self.url else self.path.parent / f"{self.path.name}.parts"

    def read_part(self, name: str) -> bytes | None:
        """A part's file (``PATH.parts/NAME``), or None when it is not there."""
        if not self.url:
            path = self.parts_folder / name
            try:
                if not stat.S_ISREG(os.stat(path).st_mode):
                    return None
                return _read_capped(path, f"{self.shown}.parts/{name}")
            except OSError:
                return None
        fs, root = self._filesystem()
        try:
            return fs.cat_file(f"{root}.parts/{name}")
        except Exception:  # noqa: BLE001 - a missing or unreadable part: the caller says so
            return None

    def write_part(self, name: str, data: bytes) -> None:
        """Write a part's file, whole (written once per part), into a parts folder that this
        project made (marked so); never over a file that is not a checkpoint's."""
        self._own_parts()
        if not self.url:
            target = self.parts_folder / name
            if os.path.lexists(target) and not _is_ours(target):
                raise CheckpointError(f"checkpoint {self.shown}: {self.shown}.parts/{name} is "
                                      "not a file coreselect wrote; move it, or give another "
                                      "checkpoint path")
        self._put(None if self.url else self.parts_folder / name, f".parts/{name}", data)

    def _own_parts(self) -> None:
        """Make the parts folder (marked as this project's), or check that the one there is
        one: a folder of the user's of that name is refused, never written into."""
        if getattr(self, "_parts_ok", False):
            return
        from coreselect.io.files import OWNED_MARK, is_owned, mark_owned

        refuse = CheckpointError(f"checkpoint {self.shown}: {self.shown}.parts exists and "
                                 "coreselect did not make it; move it, or give another "
                                 "checkpoint path")
        if not self.url:
            folder = self.parts_folder
            try:
                folder.mkdir()
            except FileExistsError:
                if not is_owned(folder):
                    raise refuse from None
            except OSError as exc:
                raise OutputError(f"{self.shown}.parts", exc.strerror or str(exc)) from None
            else:
                mark_owned(folder)
        else:
            fs, root = self._filesystem()
            marker = f"{root}.parts/{OWNED_MARK}"
            try:
                held = fs.find(f"{root}.parts")
                if held and marker not in [h.rstrip("/") for h in held]:
                    raise refuse
                if not held:
                    fs.pipe_file(marker, b"made by coreselect\n")
            except CheckpointError:
                raise
            except FileNotFoundError:
                fs.pipe_file(marker, b"made by coreselect\n")
            except Exception as exc:  # noqa: BLE001
                raise OutputError(self.shown + ".parts", f"cannot write the checkpoint "
                                  f"({type(exc).__name__})") from None
        self._parts_ok = True

    def refuse_inside(self, store: Any) -> None:
        """Refuse a checkpoint inside a column store (its folder or its URL prefix) that the
        run reads, or a store inside the checkpoint's parts folder: writing there would
        alter the input."""
        if store is None:
            return
        where = getattr(store, "url", None) or getattr(store, "path", None)
        if where is None:
            return
        if self.url != bool(getattr(store, "url", None)):
            return
        if self.url:
            root, mine = str(where).rstrip("/"), self.location.rstrip("/")
            clash = mine == root or mine.startswith(root + "/") or root.startswith(
                mine + ".parts/")
        else:
            root = Path(where).resolve()
            mine = self.path.resolve() if self.path.parent.exists() else self.path.absolute()
            parts = mine.parent / f"{mine.name}.parts"
            clash = any(p == root or root in p.parents for p in (mine, parts)) or (
                parts in root.parents)
        if clash:
            raise CheckpointError(f"checkpoint {self.shown} is inside the column store the "
                                  "run reads; give a path outside it")

    def _put(self, path: Path | None, suffix: str, data: bytes) -> None:
        if not self.url:
            from coreselect.io.files import atomic_output

            with atomic_output(path, "wb") as fh:
                fh.write(data)
            return
        fs, root = self._filesystem()
        try:
            fs.pipe_file(root + suffix, data)  # one PUT: an object store applies it whole
        except Exception as exc:  # noqa: BLE001
            from coreselect.store.fs import is_no_answer

            what = ("no answer from the server" if is_no_answer(exc)
                    else "cannot write the checkpoint")
            raise OutputError(self.shown + suffix, f"{what} "
                              f"({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''})") from None


#: The most bytes a record (or a part file) is read from: a record holds ~9 bytes a
#: candidate column; a part file a part's codes. Anything larger is not one of ours.
MAX_RECORD_BYTES = 1 << 36


#: The longest header line a record may have (its JSON: the fingerprints, a build's tasks).
MAX_HEADER_BYTES = 1 << 26


def _read_capped(path: Path, shown: str) -> bytes:
    """A record's bytes, read only once its start proves it one and its header's payload
    size matches the file's: a large file that is not a record is refused before it is read
    (a sparse file of gigabytes costs no memory)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_RECORD_BYTES:
            raise CheckpointError(f"checkpoint {shown} is {size} bytes, more than a record "
                                  "holds; not a checkpoint")
        head = fh.read(len(MAGIC))
        if head != MAGIC:
            return head  # decode refuses it in one line
        line = fh.readline(MAX_HEADER_BYTES)
        if not line.endswith(b"\n"):
            raise CheckpointError(f"checkpoint {shown} is damaged (its header line is "
                                  "unterminated or too long); delete it to start afresh")
        try:
            declared = int(json.loads(line)["payload_bytes"])
        except (ValueError, KeyError, TypeError, OverflowError, UnicodeDecodeError):
            return head + line  # decode says the header is unreadable
        payload = size - len(head) - len(line)
        if declared != payload:
            raise CheckpointError(f"checkpoint {shown} is damaged ({payload} bytes of data, "
                                  f"expected {declared}: truncated); delete it to start the "
                                  "run afresh")
        data = head + line + fh.read(payload + 1)
    if len(data) != size:
        raise CheckpointError(f"checkpoint {shown} changed while it was read; try again")
    return data


def _is_ours(path: Path) -> bool:
    """A regular file that starts as a checkpoint file does (a part's, or a record's)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def as_checkpoint(value: Any) -> Checkpoint | None:
    """None, a :class:`Checkpoint`, or a path or URL for one."""
    if value is None or isinstance(value, Checkpoint):
        return value
    if isinstance(value, (str, os.PathLike)) and os.fspath(value):
        return Checkpoint(value)
    raise CheckpointError(f"checkpoint must be a path or URL, got {value!r}")


__all__ = ["Checkpoint", "FORMAT", "MAGIC", "MAX_RECORD_BYTES", "as_checkpoint", "decode", "encode"]
