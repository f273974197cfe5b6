"""Resumable runs: a run's state recorded after every greedy step and every finished part.

``select(..., checkpoint=PATH_OR_URL)`` (``coreselect select --checkpoint``) keeps one file:
after each greedy step (and each finished part of Algorithm 3) the whole state is written
again, atomically (a temporary file beside it, flushed and renamed; at a URL one PUT, which
object stores apply whole). The same run started again finds the record and goes on from
it, ending with the selection and objective of an uninterrupted run, bit for bit:

* the greedy's state (:class:`~coreselect.core.greedy.GreedyState`: the selected ids, the
  distance sums (and the shared-information sums of ``"information"``), the copies, the pair
  distances, ``D``); the relevance gains are replayed from the selection (exact, cheap);
* what costs a pass over the data and is written once: the relevances of a centralized run
  (and of an in-memory distributed run, computed for every column up front), the counts
  pass of ``--mode rows`` (entropies and relevance; a sparse relevance as its pairs and
  marginals), the ranges of the ``"fixed"`` calibration measured over Algorithm 3's parts;
* Algorithm 3: each finished part's message to the master (its selected columns' codes and
  relevances), so the resumed run skips the finished parts, then the AltGreedy on the union.

What is written once goes to its own file in the folder ``PATH.parts`` beside the record (at
a URL: under ``URL.parts/``), before the record that lists it with its SHA-256: the record
rewritten after every step stays small (the greedy's state: 9 bytes per candidate column, 17
under ``"information"``, little beside a step, which reads every candidate), whatever the
parts hold.

A record carries the fingerprints of what the run depends on: the checkpoint format, the
coreselect version, the spec (objective, binning, mode, partition, backend) and the data
(a hash of the discretized codes and labels of a data file or array; a store's
``store.json``, which holds every file's checksum). A record that does not match is refused
in one line naming what differs (:class:`~coreselect.errors.CheckpointError`), and so is a
damaged one (a SHA-256 over the payload): never silently started over.

``--mode rows`` on a column store keeps row-major copies of the store's tiles in a scratch
folder (:class:`coreselect.sources.StoreRowShards`); a checkpointed run names that folder
after its checkpoint and the data's fingerprint (:meth:`Resumable.scratch_key`), so that
when the run is killed (SIGKILL: nothing can clean up) the resumed run takes the copies
over (each checked against its CRC-32) instead of reading and transposing every tile again.

A finished run leaves its record (marked complete) in place: the same command again returns
the same result at once (after loading the data), and another spec or dataset is refused.
Delete the file to start afresh. The core does no I/O: this module is what reads and writes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.greedy import GreedyState
from coreselect.errors import CheckpointError, OutputError

#: Relevances recomputed on resume: the most relevant columns, columns at random, and a
#: bound on the values (columns x labels) recomputed.
VERIFY_TOP, VERIFY_RANDOM, VERIFY_CELLS = 16, 32, 1 << 22

#: Version of the file layout; a record of another format is refused.
FORMAT = 1
MAGIC = b"coreselect-checkpoint\n"

__all__ = ["Checkpoint", "Resumable", "FORMAT", "MAGIC", "encode", "decode", "as_checkpoint"]


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
        from coreselect.files import OWNED_MARK, is_owned, mark_owned

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
            from coreselect.files import atomic_output

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


# -- one run's record ----------------------------------------------------------------------------
@dataclass
class Resumable:
    """The record of one run at ``checkpoint``: what was done (restored when the run starts),
    and writers the strategies call after each part and step.

    ``spec``: the JSON-able parameters the result depends on; ``dataset``: a callable giving
    the data's fingerprint (computed only when a record is there to compare, or a first
    record is written)."""

    checkpoint: Checkpoint
    spec: dict
    dataset: Any
    parts: dict = field(default_factory=dict)  # part index -> PartOutput
    digests: dict = field(default_factory=dict)  # part index -> SHA-256 of its file
    stats: Any = None  # mode rows: the counts pass's Statistics
    stats_digest: str | None = None
    relevance_digest: str | None = None  # the relevances of a centralized run
    ranges: tuple | None = None  # the "fixed" calibration's (R_g, R_D) over Algorithm 3's parts
    state: GreedyState | None = None
    n_steps: int | None = None
    resumed_parts: int = 0
    resumed_from_step: int = 0
    n_records: int = 0
    _fingerprint: str | None = None
    _relevance: dict | None = None  # the recorded relevance's arrays (restore_relevance)

    def __post_init__(self) -> None:
        self.spec = json.loads(json.dumps(self.spec))  # as it reads back
        data = self.checkpoint.read()
        if data is None:
            return
        header, arrays = decode(data, self.checkpoint.shown)
        self._check(header)
        try:
            self.digests = {int(i): str(h) for i, h in (header.get("parts") or {}).items()}
            self.parts = {i: self._load_part(i, h) for i, h in self.digests.items()}
            if header.get("statistics"):
                self.stats_digest = str(header["statistics"])
                self.stats = _stats_from(self._load_file("statistics", self.stats_digest),
                                         str(self.spec.get("relevance", "mi")))
                _check_stats(self.stats, self.checkpoint.shown)
            if header.get("relevance"):
                self.relevance_digest = str(header["relevance"])
                self._relevance = self._load_file("relevance", self.relevance_digest)
            if header.get("ranges") is not None:
                self.ranges = tuple(float.fromhex(str(v)) for v in header["ranges"])
                if len(self.ranges) != 2:
                    raise ValueError("ranges")
            if header.get("step") is not None:
                self.state = _state_from(arrays, int(header["step"]),
                                         f"checkpoint {self.checkpoint.shown}")
        except (KeyError, ValueError, TypeError) as exc:
            raise CheckpointError(f"checkpoint {self.checkpoint.shown} is damaged (missing or "
                                  f"malformed record: {exc})") from None
        self.resumed_parts = len(self.parts)
        self.resumed_from_step = 0 if self.state is None else self.state.step

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = self.dataset() if callable(self.dataset) else str(self.dataset)
        return self._fingerprint

    def scratch_key(self) -> str:
        """A name for scratch that outlives a kill of this run (mode rows' row copies): the
        same for the same checkpoint and data, from any working folder."""
        where = (self.checkpoint.location if self.checkpoint.url
                 else str(self.checkpoint.path.resolve()))
        return hashlib.sha256(f"{where}\0{self.fingerprint()}".encode()).hexdigest()[:16]

    def _check(self, header: dict) -> None:
        shown = self.checkpoint.shown
        if header.get("format") != FORMAT:
            raise CheckpointError(f"checkpoint {shown} has format {header.get('format')!r}; "
                                  f"this coreselect reads format {FORMAT} (delete it to start "
                                  "afresh)")
        if header.get("coreselect") != _version():
            raise CheckpointError(f"checkpoint {shown} was written by coreselect "
                                  f"{header.get('coreselect')}, this is {_version()}: its "
                                  "numbers may differ; delete it to start afresh")
        recorded = header.get("spec") or {}
        differ = [f"{key} {recorded.get(key)!r} there, {self.spec.get(key)!r} here"
                  for key in sorted(set(recorded) | set(self.spec))
                  if recorded.get(key) != self.spec.get(key)]
        if differ:
            raise CheckpointError(f"checkpoint {shown} is of another run ({'; '.join(differ)}); "
                                  "give another path, or delete it to start afresh")
        if header.get("dataset") != self.fingerprint():
            raise CheckpointError(f"checkpoint {shown} was written for other data (its data "
                                  "fingerprint differs); give another path, or delete it")

    def _load_file(self, name: str, digest: str) -> dict:
        shown = f"{self.checkpoint.shown}.parts/{name}"
        data = self.checkpoint.read_part(name)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            raise CheckpointError(f"checkpoint {self.checkpoint.shown} is damaged (its part "
                                  f"file {shown} is {'missing' if data is None else 'altered'});"
                                  " delete the checkpoint and its .parts folder to start afresh")
        header, arrays = decode(data, shown)
        if (header.get("file") != name or header.get("dataset") != self.fingerprint()
                or header.get("spec") != self.spec):
            raise CheckpointError(f"checkpoint {self.checkpoint.shown} is damaged (its part "
                                  f"file {shown} is of another run or another file); delete "
                                  "the checkpoint and its .parts folder to start afresh")
        return arrays

    def _load_part(self, i: int, digest: str):
        return _part_from(self._load_file(_part_name(i), digest), i)

    # -- writers -------------------------------------------------------------------------
    def record_part(self, output) -> None:
        """After a finished part of Algorithm 3: its message in its own file, then the record
        that lists it."""
        i = int(output.index)
        self.digests[i] = self._write_once(_part_name(i), _part_arrays(output, i))
        self.parts[i] = output
        self._write()

    def _write_once(self, name: str, arrays: dict[str, np.ndarray]) -> str:
        """A file of ``PATH.parts`` written whole, once; its SHA-256 (listed by the record)."""
        data = encode({"format": FORMAT, "file": name, "dataset": self.fingerprint(),
                       "spec": self.spec}, arrays)
        self.checkpoint.write_part(name, data)
        return hashlib.sha256(data).hexdigest()

    def record_stats(self, stats) -> None:
        """Mode rows, after the counts pass: its statistics (a resumed run skips the pass);
        a sparse relevance (many labels) as its pairs and marginals."""
        from dataclasses import fields

        arrays = {f.name: np.asarray(getattr(stats, f.name)) for f in fields(stats)
                  if f.name != "relevance"}
        arrays.update(_relevance_arrays(stats.relevance))
        self.stats_digest = self._write_once("statistics", arrays)
        self.stats = stats
        self._write()

    def restore_relevance(self, features: DiscreteMatrix, labels: DiscreteMatrix):
        """The recorded relevances of ``features`` to ``labels`` (the data the record's
        fingerprint names), or None when none were recorded: a dense matrix, or a
        :class:`~coreselect.core.sparse_relevance.SparseRelevance` over these features
        with the recorded pairs (its marginals are recomputed from them, cheaply)."""
        if self._relevance is None:
            return None
        from coreselect.core.sparse_relevance import SparseRelevance

        arrays = self._relevance
        shape = (features.n_columns, labels.n_columns)
        try:
            if "relevance" in arrays:
                rel = arrays["relevance"]
                if rel.shape != shape or rel.dtype != np.float64:
                    raise ValueError(f"a relevance of shape {rel.shape}, not {shape}")
            else:
                rel = SparseRelevance(features, labels, str(self.spec.get("relevance", "mi")),
                                      _pairs=_pairs_from(arrays, shape))
        except (KeyError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {self.checkpoint.shown} is damaged (its "
                                  f"relevance does not fit the data: {exc})") from None
        self._verify_relevance(rel, features, labels)
        return rel

    def _verify_relevance(self, rel, features: DiscreteMatrix, labels: DiscreteMatrix) -> None:
        """Recompute some recorded relevances from the data and refuse the record when they
        differ: the picks' rows, the most relevant columns' (where a forged relevance would
        put a column to pick it first) and a few taken at random, at most
        :data:`VERIFY_CELLS` values (a few joint counts per column)."""
        from coreselect.core.entropy import relevance_matrix

        d, n_labels = features.n_columns, labels.n_columns
        if d == 0 or n_labels == 0:
            return
        budget = max(1, VERIFY_CELLS // n_labels)
        sums = (np.asarray(rel, dtype=np.float64).sum(axis=1) if isinstance(rel, np.ndarray)
                else rel.feature_sums(np.arange(d)))
        if not np.all(np.isfinite(sums)):
            raise CheckpointError(f"checkpoint {self.checkpoint.shown} is contradicted by the "
                                  "data (relevances that are not finite); delete it to start "
                                  "afresh")
        picks = [] if self.state is None else np.asarray(self.state.selected, np.int64)
        chosen = [int(v) for v in picks if 0 <= v < d]
        chosen += np.argsort(-sums, kind="stable")[:VERIFY_TOP].tolist()
        chosen += np.random.default_rng().choice(d, min(d, VERIFY_RANDOM), replace=False).tolist()
        positions = np.unique(np.asarray(chosen, dtype=np.int64))[:budget]
        again = relevance_matrix(features.take(positions), labels,
                                 str(self.spec.get("relevance", "mi")))
        recorded = np.asarray(rel[positions], dtype=np.float64).reshape(again.shape)
        if not np.allclose(recorded, again, rtol=1e-9, atol=1e-9):
            bad = int(positions[np.flatnonzero(~np.isclose(recorded, again, rtol=1e-9,
                                                            atol=1e-9).all(axis=1))[0]])
            raise CheckpointError(f"checkpoint {self.checkpoint.shown} is contradicted by the "
                                  f"data (the recorded relevance of column {bad} differs from "
                                  "the data's); delete it to start the run afresh")

    def record_relevance(self, relevance) -> None:
        """After the relevances of a run were computed (not when they were restored)."""
        if self.relevance_digest is not None:
            return
        self.relevance_digest = self._write_once("relevance", _relevance_arrays(relevance))
        self._write()

    def record_ranges(self, ranges: tuple[float, float]) -> None:
        """Algorithm 3 with the ``"fixed"`` calibration: the ranges measured over the parts
        (a pass over all the data), exactly (as hexadecimal floats)."""
        if self.ranges is not None:
            return
        self.ranges = (float(ranges[0]), float(ranges[1]))
        self._write()

    def record_step(self, state: GreedyState) -> None:
        """After a greedy step of the run's (final) greedy."""
        self.state = state
        self._write()

    def _write(self) -> None:
        from coreselect.files import checkpoint as test_hold

        arrays: dict[str, np.ndarray] = {}
        step = None
        if self.state is not None:
            s = self.state
            step = int(s.step)
            arrays.update({"greedy_selected": np.asarray(s.selected, dtype=np.int64),
                           "greedy_diversity_to_s": np.asarray(s.diversity_to_s, np.float64),
                           "greedy_copies": np.asarray(s.copies, dtype=bool),
                           "greedy_pair": np.asarray(s.pair, dtype=np.float64),
                           "greedy_diversity": np.float64(s.diversity)})
            if s.information_to_s is not None:  # the "information" calibration's sums
                arrays["greedy_information_to_s"] = np.asarray(s.information_to_s, np.float64)
        header = {"format": FORMAT, "coreselect": _version(), "spec": self.spec,
                  "dataset": self.fingerprint(), "parts": {str(i): self.digests[i] for i in sorted(self.digests)},
                  "step": step, "statistics": self.stats_digest,
                  "relevance": self.relevance_digest,
                  "ranges": None if self.ranges is None else [v.hex() for v in self.ranges],
                  "complete": step is not None and step == self.n_steps}
        self.checkpoint.write(encode(header, arrays))
        self.n_records += 1
        test_hold(f"checkpointed-{self.n_records}")  # tests kill the run here

    def describe(self) -> dict:
        """What a report says about the checkpoint."""
        out = {"checkpoint": self.checkpoint.shown, "resumed_from_step": self.resumed_from_step}
        if "partitions" in self.spec:
            out["resumed_parts"] = self.resumed_parts
        return out


def _part_name(i: int) -> str:
    return f"part-{i:06d}"


def _part_arrays(out, i: int) -> dict[str, np.ndarray]:
    codes = out.features.codes
    return {f"part{i}_selected": np.asarray(out.selected, dtype=np.int64),
            f"part{i}_data": codes.data, f"part{i}_indices": codes.indices,
            f"part{i}_indptr": codes.indptr, f"part{i}_shape": np.asarray(codes.shape, np.int64),
            f"part{i}_n_codes": out.features.n_codes,
            f"part{i}_relevance": np.asarray(out.relevance, dtype=np.float64),
            f"part{i}_selectable": np.asarray(out.selectable, dtype=bool),
            f"part{i}_sizes": np.asarray([out.n_columns], dtype=np.int64),
            f"part{i}_seconds": np.float64(out.seconds)}


def _part_from(arrays: dict, i: int):
    import scipy.sparse as sp

    from coreselect.distributed import PartOutput

    shape = tuple(int(v) for v in arrays[f"part{i}_shape"])
    codes = sp.csc_matrix((arrays[f"part{i}_data"], arrays[f"part{i}_indices"],
                           arrays[f"part{i}_indptr"]), shape=shape)
    return PartOutput(index=i, n_columns=int(arrays[f"part{i}_sizes"][0]),
                      selected=arrays[f"part{i}_selected"],
                      seconds=float(arrays[f"part{i}_seconds"]),
                      features=DiscreteMatrix(codes, arrays[f"part{i}_n_codes"]),
                      relevance=arrays[f"part{i}_relevance"],
                      selectable=arrays[f"part{i}_selectable"])


#: A sparse relevance's co-occurring pairs, and a merged one's marginals (its constructor's
#: arguments; ``slot_owner`` / ``slot_counts`` are absent from a restricted one).
_PAIRS = ("indptr", "pair_feature", "pair_value", "pair_closed")
_MARGINALS = ("nnz", "base", "h_x", "count", "base_l", "h_l", "slot_owner", "slot_counts")


def _relevance_arrays(rel) -> dict[str, np.ndarray]:
    """A relevance as arrays: the dense matrix, or a sparse form's pairs (and a merged
    form's marginals, which it cannot recompute without the data)."""
    from coreselect.core.sparse_relevance import MergedSparseRelevance

    if isinstance(rel, np.ndarray):
        return {"relevance": np.asarray(rel, dtype=np.float64)}
    arrays = {f"sparse_{name}": getattr(rel, name) for name in _PAIRS}
    arrays["sparse_shape"] = np.asarray(rel.shape, dtype=np.int64)
    if isinstance(rel, MergedSparseRelevance):
        arrays["merged_n"] = np.int64(rel.n)
        arrays.update({f"merged_{name}": getattr(rel, name) for name in _MARGINALS
                       if getattr(rel, name) is not None})
    return arrays


def _pairs_from(arrays: dict, shape: tuple[int, int]) -> tuple:
    if tuple(int(v) for v in arrays["sparse_shape"]) != tuple(shape):
        raise ValueError(f"a relevance of shape {tuple(arrays['sparse_shape'])}, not {shape}")
    pairs = tuple(arrays[f"sparse_{name}"] for name in _PAIRS)
    if pairs[0].shape != (shape[1] + 1,) or len({p.size for p in pairs[1:]}) != 1:
        raise ValueError("malformed pairs")
    return pairs


def _stats_from(arrays: dict, kind: str):
    from dataclasses import fields

    from coreselect.core.shards import Statistics
    from coreselect.core.sparse_relevance import MergedSparseRelevance

    values = {f.name: arrays[f.name] for f in fields(Statistics) if f.name != "relevance"}
    values["n_samples"] = int(values["n_samples"])
    if "relevance" in arrays:
        values["relevance"] = arrays["relevance"]
    else:
        shape = (values["n_codes"].size, values["label_entropies"].size)
        marginals = {name: arrays.get(f"merged_{name}") for name in _MARGINALS}
        values["relevance"] = MergedSparseRelevance(
            int(arrays["merged_n"]), kind, **marginals, _pairs=_pairs_from(arrays, shape))
    return Statistics(**values)


def _check_stats(stats, shown: str) -> None:
    """What a counts pass's statistics must satisfy whatever the data (their recount would
    be the pass a resumed run skips): finite entropies in ``[0, log2 n]``, counts that add up
    to the samples, a dense relevance finite and non-negative."""
    n = int(stats.n_samples)
    h_max = np.log2(max(n, 1)) + 1e-9
    ok = n >= 0 and all(np.all(np.isfinite(a)) and np.all(a >= -1e-12) and np.all(a <= h_max)
                        for a in (np.asarray(stats.entropies, np.float64),
                                  np.asarray(stats.label_entropies, np.float64)))
    ok = ok and np.all(np.asarray(stats.nonzero_counts) <= n) and np.all(
        np.asarray(stats.code_counts) >= 0)
    if isinstance(stats.relevance, np.ndarray):
        rel = stats.relevance
        ok = ok and np.all(np.isfinite(rel)) and np.all(rel >= -1e-9)
    if not ok:
        raise CheckpointError(f"checkpoint {shown} is contradicted by itself (counts or "
                              "entropies no data can give); delete it to start afresh")


def _state_from(arrays: dict, step: int, origin: str) -> GreedyState:
    return GreedyState(step=step, origin=origin, selected=arrays["greedy_selected"],
                       diversity_to_s=arrays["greedy_diversity_to_s"],
                       copies=arrays["greedy_copies"], pair=arrays["greedy_pair"],
                       diversity=float(arrays["greedy_diversity"]),
                       information_to_s=arrays.get("greedy_information_to_s"))


def hash_arrays(*arrays: Any) -> str:
    """SHA-256 over arrays (dtype, shape and bytes of each): a data fingerprint."""
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"none;")
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()


def matrix_fingerprint(m: DiscreteMatrix) -> tuple:
    codes = m.codes
    return (codes.indptr, codes.indices, codes.data, np.asarray(codes.shape), m.n_codes)
