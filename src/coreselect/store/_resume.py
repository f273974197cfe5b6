"""Resumable store builds: every finished task of the build's passes kept under a checkpoint.

``build_store_from_source(..., checkpoint=PATH)`` (``coreselect store build --checkpoint``)
follows :mod:`coreselect.selection.checkpoint`'s layout: a record at ``PATH`` and a folder
``PATH.parts`` (marked as coreselect's) beside it. The record fingerprints what the store
depends on: every data file (its path, size, modification and change times, inode and a
hash of its first, middle and last 16 KiB; an object's size and ETag), the
build's options, the reader's format and options, the coreselect version and the store
format; and it keeps the task list of each pass, so that a resumed build (even with another
``--workers``) runs the same tasks. A record that does not match is refused in one line
naming what differs (:class:`~coreselect.errors.CheckpointError`): never silently mixed.

Each task runs in a private folder ``PATH.parts/STAGE/KEY.tmp-*`` (``KEY``: a hash of the
stage and a stable description of the task, whatever the task is: a group of files, a byte
range, a row block) holding hard links to its inputs (the plan, a row block's pieces). When
it returns, the files it wrote are listed with their SHA-256 in a manifest (with its result,
as JSON and arrays: never a pickle) and the folder is renamed ``KEY``: a task is finished
exactly when its folder has its final name. A killed task leaves a ``.tmp-*`` folder, removed
by the next run. On resume every finished task's manifest and files are checked; a task
whose manifest or a file fails its checksum is done again (and said so), never used.

The store is assembled only when every task is finished: hard links of the tiles into a
temporary folder beside the target (:func:`coreselect.io.files.atomic_dir`), then
``store.json``, then the rename. So a build killed at any point leaves nothing at the target,
and the resumed build gives the same bytes as an uninterrupted one. On success the
checkpoint (record and folder) is removed: unlike a selection's record, which a finished run
keeps to answer again at once, it holds a second copy of the data (about twice the store),
and the store itself is the finished result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import logging
import os
import shutil
import stat
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from coreselect.errors import CheckpointError, OutputError

log = logging.getLogger(__name__)

#: Version of the build checkpoint's layout; a record of another one is refused (2: the
#: files' fingerprints hold their ctime, inode and sampled bytes).
FORMAT = 2
KIND = "store-build"
MANIFEST = "manifest"
TMP = ".tmp-"

__all__ = ["BuildCheckpoint", "Kept", "run_kept", "task_key", "to_tree", "from_tree",
           "fingerprint"]


# -- results and tasks as JSON and arrays (a checkpoint is never unpickled) -------------------
def to_tree(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    """``obj`` as JSON-able data, its arrays moved into ``arrays``: numbers, strings, lists,
    tuples, dicts (any keys), numpy arrays and scalars, and dataclasses of coreselect."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, np.bool_):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (float, np.floating)):
        return {"@f": float(obj).hex()}  # exact, NaN and infinities included
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("object arrays are not kept")
        name = f"a{len(arrays)}"
        arrays[name] = obj
        return {"@a": name}
    if isinstance(obj, (list, tuple)):
        return {"@t" if isinstance(obj, tuple) else "@l": [to_tree(v, arrays) for v in obj]}
    if isinstance(obj, dict):
        return {"@d": [[to_tree(k, arrays), to_tree(v, arrays)] for k, v in obj.items()]}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        if not cls.__module__.startswith("coreselect."):
            raise TypeError(f"{cls.__qualname__} is not kept")
        getstate = getattr(cls, "__getstate__", None)
        state = (obj.__getstate__() if getstate not in (None, getattr(object, "__getstate__",
                                                                         None))
                 else {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
        values = {f.name: to_tree(state[f.name], arrays) for f in dataclasses.fields(obj)
                  if f.init and f.name in state}
        return {"@c": f"{cls.__module__}:{cls.__qualname__}", "f": values}
    raise TypeError(f"a {type(obj).__name__} is not kept")


def from_tree(tree: Any, arrays: dict[str, np.ndarray]) -> Any:
    if tree is None or isinstance(tree, (bool, int, str)):
        return tree
    if isinstance(tree, dict):
        if "@f" in tree:
            return float.fromhex(tree["@f"])
        if "@a" in tree:
            return arrays[tree["@a"]]
        if "@l" in tree:
            return [from_tree(v, arrays) for v in tree["@l"]]
        if "@t" in tree:
            return tuple(from_tree(v, arrays) for v in tree["@t"])
        if "@d" in tree:
            return {from_tree(k, arrays): from_tree(v, arrays) for k, v in tree["@d"]}
        if "@c" in tree:
            module, _, name = str(tree["@c"]).partition(":")
            if not module.startswith("coreselect.") or "." in name:
                raise ValueError(f"class {tree['@c']} is not one a checkpoint holds")
            cls = getattr(importlib.import_module(module), name)
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                raise ValueError(f"{tree['@c']} is not a dataclass")
            return cls(**{k: from_tree(v, arrays) for k, v in tree["f"].items()})
    raise ValueError(f"unreadable value {str(tree)[:40]!r}")


def task_key(stage: str, task: Any) -> str:
    """A stable description of a task (JSON), and with the stage the name of its folder."""
    arrays: dict[str, np.ndarray] = {}
    tree = to_tree(task, arrays)
    text = json.dumps([stage, tree, {k: v.tolist() for k, v in sorted(arrays.items())}],
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _link(src: Path, dst: Path) -> None:
    """A hard link (a copy where the file system has none), never over an existing file:
    ``FileExistsError`` then, whatever the file system."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except FileExistsError:
        raise
    except OSError:
        with open(src, "rb") as fin, open(dst, "xb") as fout:  # "x": refuses an existing dst
            shutil.copyfileobj(fin, fout, 1 << 20)


def _kept_name(rel: Any) -> str | None:
    """``rel`` when it names a file inside a task's folder (a relative POSIX path, none of
    its parts empty, ``.`` or ``..``), else None: a manifest is not trusted to name paths."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel \
            or "\0" in rel:
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts) or rel == MANIFEST:
        return None
    return rel


def _plain_file_inside(folder: Path, rel: str) -> bool:
    """Whether ``folder/rel`` is a regular file reached through real folders (no symbolic
    link on the way, ``folder`` included)."""
    path = folder
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
        parts = rel.split("/")
        for part in parts[:-1]:
            path = path / part
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        return stat.S_ISREG(os.lstat(path / parts[-1]).st_mode)
    except OSError:
        return False


def _read_manifest(final: Path) -> bytes:
    """A kept task's manifest: a regular file in its folder, read with the size bound of a
    checkpoint record (a sparse file of gigabytes is refused before it is read)."""
    from coreselect.store.checkpoint_file import _read_capped

    if not _plain_file_inside(final, MANIFEST):
        raise CheckpointError("not a regular file")
    return _read_capped(final / MANIFEST, f"{final}/{MANIFEST}")


def sweep_removed(location: str | os.PathLike) -> None:
    """Remove ``PATH.parts.removed``, a finished build's checkpoint folder that a kill left
    while it was being deleted, when coreselect made it (its mark is deleted last); refuse,
    in one line, a folder of that name that coreselect did not make."""
    from coreselect.io.files import is_owned
    from coreselect.store.fs import is_url, local_path

    text = os.fspath(location)
    if is_url(text):
        return
    path = Path(local_path(text))
    trash = path.parent / f"{path.name}.parts.removed"
    if not os.path.lexists(trash):
        return
    if is_owned(trash):
        _remove_owned(trash)
        return
    try:
        os.rmdir(trash)  # empty (the mark went last, the folder not yet): nothing to lose
        return
    except OSError:
        pass
    raise CheckpointError(f"checkpoint {text}: {trash.name} exists and coreselect did not "
                          "make it; move it, or give another checkpoint path")


def _remove_owned(folder: Path) -> None:
    """Delete a folder coreselect marked, its mark last: a kill on the way leaves it still
    marked (swept by the next run), never an unmarked folder of ours."""
    from coreselect.io.files import OWNED_MARK

    try:
        children = list(folder.iterdir())
    except OSError:  # not there (nothing was renamed aside), or not a folder: nothing to do
        return
    for child in children:
        if child.name == OWNED_MARK:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            try:
                child.unlink()
            except OSError:
                pass
    try:
        (folder / OWNED_MARK).unlink()
        folder.rmdir()
    except OSError:
        pass


# -- the fingerprint of a build ---------------------------------------------------------------
def _file_identity(path: str) -> list:
    """``[path, size, mtime_ns, ctime_ns, inode, sampled bytes' SHA-256]`` of a local file,
    ``[url, size, ETag]`` of an object (``[path, None, None]`` when it cannot be seen: it then
    differs from any file there)."""
    from coreselect.io.chunks import is_url

    if is_url(path):
        try:
            from coreselect.store.fs import filesystem

            fs, root = filesystem(path, None)
            info = fs.info(root)
            tag = info.get("ETag") or info.get("etag") or info.get("md5") or info.get("mtime")
            return [path, int(info.get("size") or 0), None if tag is None else str(tag)]
        except Exception:  # noqa: BLE001 - the build itself reports an unreadable file
            return [path, None, None]
    try:
        st = os.stat(path)
        # never opened unless regular: a FIFO would block here, a device never end
        sample = _sample_digest(path, st.st_size) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        return [os.path.abspath(path), None, None]
    # ctime and inode: an edit in place whose mtime was put back (touch -d, cp -p) still
    # moves the ctime, which no user call sets; the sampled bytes catch the rest cheaply.
    return [os.path.abspath(path), int(st.st_size), int(st.st_mtime_ns), int(st.st_ctime_ns),
            int(st.st_ino), sample]


#: Bytes hashed at the start, the middle and the end of each local data file.
SAMPLE_BYTES = 1 << 14


def _sample_digest(path: str, size: int) -> str:
    """SHA-256 of a file's first, middle and last :data:`SAMPLE_BYTES` (all of a small
    file): cheap whatever the file's size."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for at in sorted({0, max(0, size // 2 - SAMPLE_BYTES // 2), max(0, size - SAMPLE_BYTES)}):
            fh.seek(at)
            h.update(fh.read(SAMPLE_BYTES))
    return h.hexdigest()


def identities(source: Any) -> list[list]:
    """:func:`_file_identity` of every file of ``source``."""
    return [_file_identity(str(f)) for f in source.files]


def fingerprint(source: Any, options: Any, keep: Any, files: list | None = None) -> dict:
    """What the store depends on, as JSON: the data files, the options, the reader."""
    from coreselect.store._format import FORMAT as STORE_FORMAT, FORMAT_VERSION

    reader = {"type": f"{type(source).__module__}.{type(source).__qualname__}",
              "format": str(getattr(source, "format", "")),
              "options": _jsonable(getattr(source, "options", None) or {}),
              "labels": _jsonable(getattr(source, "labels", None))}
    return {"files": identities(source) if files is None else files,
            "options": _jsonable(dataclasses.asdict(options)),
            "keep": None if keep is None else [int(j) for j in keep],
            "reader": reader, "store_format": [STORE_FORMAT, FORMAT_VERSION]}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _differences(there: dict, here: dict) -> list[str]:
    """What differs between two fingerprints, in words (the first few)."""
    out = []
    a = {f[0]: f for f in there.get("files") or []}
    b = {f[0]: f for f in here.get("files") or []}
    for path in list(a) + [p for p in b if p not in a]:
        if path not in b:
            out.append(f"file {path} was read, now it is not among the data")
        elif path not in a:
            out.append(f"file {path} is new")
        elif b[path][1] is None:
            out.append(f"file {path} has vanished")
        elif a[path][1] != b[path][1]:
            out.append(f"file {path} was {a[path][1]} bytes, now {b[path][1]}")
        elif a[path] != b[path]:
            out.append(f"file {path} was modified since")
    if not out and [f[0] for f in there.get("files") or []] != list(b):
        out.append("the files are in another order")
    for key in ("options", "reader"):
        x, y = there.get(key) or {}, here.get(key) or {}
        for name in sorted(set(x) | set(y)):
            if x.get(name) != y.get(name):
                out.append(f"{'option' if key == 'options' else 'reader'} {name} "
                           f"{x.get(name)!r} there, {y.get(name)!r} here")
    for key in ("keep", "store_format"):
        if there.get(key) != here.get(key):
            out.append(f"{key} differs")
    return out


# -- one task, on a worker ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Kept:
    """What a kept task receives (in place of the build's ``shared``): the task body, its
    stage, the stage's folder, the inputs to link into its private folder (relative path ->
    file): ``common`` linked for every task, ``inputs`` only where their path starts with
    ``select(task)`` (a row block's pieces for that row block's task)."""

    func: Callable[[Any, Any], Any]
    shared: Any
    stage: str
    folder: str
    digest: str  # the build's fingerprint: a manifest of another build is not taken
    common: tuple = ()
    inputs: tuple = ()
    select: Callable[[Any], str] | None = None


def run_kept(kept: Kept, task: Any) -> Any:
    """Run ``kept.func(shared, task)`` with ``shared.root`` a private folder, then keep its
    files and result (module docstring). The result is returned as the task's own."""
    from coreselect.io.files import checkpoint_once

    key = task_key(kept.stage, task)
    folder = Path(kept.folder)
    final = folder / key
    work = folder / f"{key}{TMP}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    try:
        prefix = kept.select(task) if kept.select is not None else ""
        linked = set()
        for rel, src in list(kept.common) + [(r, s) for r, s in kept.inputs
                                             if r.startswith(prefix)]:
            _link(Path(src), work / rel)
            linked.add(rel)
        result = kept.func(dataclasses.replace(kept.shared, root=str(work)), task)
        files = {}
        for path in sorted(work.rglob("*")):
            rel = path.relative_to(work).as_posix()
            if path.is_file() and rel not in linked:
                files[rel] = [path.stat().st_size, _sha256(path)]
        for rel in linked:  # the kept folder holds the task's own files only
            try:
                (work / rel).unlink()
            except FileNotFoundError:
                pass
        arrays: dict[str, np.ndarray] = {}
        header = {"format": FORMAT, "kind": KIND, "stage": kept.stage, "key": key,
                  "build": kept.digest, "files": files, "result": to_tree(result, arrays)}
        from coreselect.store.checkpoint_file import encode

        (work / MANIFEST).write_bytes(encode(header, arrays))
        try:
            os.rename(work, final)
        except OSError:  # another run (a killed one's worker) finished it first: same bytes
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    checkpoint_once(f"build-kept-{kept.stage}")  # tests kill the build here
    return result


# -- the record ------------------------------------------------------------------------------
class BuildCheckpoint:
    """The checkpoint of one build at a local ``location`` (see the module docstring)."""

    def __init__(self, location: str | os.PathLike, prints: dict):
        from coreselect.store.checkpoint_file import Checkpoint
        from coreselect.store.fs import is_url

        text = os.fspath(location)
        if is_url(text):
            raise CheckpointError(f"--checkpoint {text}: a store build keeps its checkpoint "
                                  "on a local path (its tasks write files there); give one")
        self.ck = Checkpoint(text)
        self.shown = self.ck.shown
        self.prints = prints
        self.digest = hashlib.sha256(json.dumps(prints, sort_keys=True).encode()).hexdigest()
        self.tasks: dict[str, list] = {}
        self.taken: dict[str, int] = {}
        self.redone: dict[str, int] = {}
        self.resuming = False
        self._results: dict[tuple[str, str], tuple[Any, dict]] = {}

    @property
    def folder(self) -> Path:
        return self.ck.parts_folder

    def open(self) -> None:
        """Read the record (refused when it is of another build) or write a first one."""
        from coreselect.store.checkpoint_file import _version, decode

        sweep_removed(self.ck.path)  # a finished build's, killed while deleting it
        data = self.ck.read()
        self.resuming = data is not None
        if data is not None:
            header, _ = decode(data, self.shown)
            if header.get("kind") != KIND:
                raise CheckpointError(f"checkpoint {self.shown} is not a store build's; give "
                                      "another path")
            if header.get("format") != FORMAT:
                raise CheckpointError(f"checkpoint {self.shown} has format "
                                      f"{header.get('format')!r}; this coreselect reads format "
                                      f"{FORMAT} (delete it to start afresh)")
            if header.get("coreselect") != _version():
                raise CheckpointError(f"checkpoint {self.shown} was written by coreselect "
                                      f"{header.get('coreselect')}, this is {_version()}; "
                                      "delete it to start afresh")
            differ = _differences(header.get("inputs") or {}, self.prints)
            if differ or header.get("digest") != self.digest:
                raise CheckpointError(f"checkpoint {self.shown} is of another build ("
                                      f"{'; '.join(differ[:3]) or 'its inputs differ'}); "
                                      "give another path, or delete it to start afresh")
            try:
                arrays: dict = {}
                self.tasks = {k: from_tree(v, arrays) for k, v in
                              (header.get("tasks") or {}).items()}
            except (ValueError, TypeError, KeyError, AttributeError, ImportError) as exc:
                raise CheckpointError(f"checkpoint {self.shown} is damaged (its task lists: "
                                      f"{exc})") from None
        self.ck._own_parts()
        for stale in self.folder.glob(f"*/*{TMP}*"):  # killed tasks' folders
            shutil.rmtree(stale, ignore_errors=True)
        if data is None:
            self._write()

    def _stage(self, stage: str) -> Path:
        """A stage's folder, refused when it is a symbolic link (its tasks would be read from,
        and written to, wherever it points)."""
        folder = self.folder / stage
        if os.path.islink(folder) or (os.path.lexists(folder) and not folder.is_dir()):
            raise CheckpointError(f"checkpoint {self.shown}: {self.shown}.parts/{stage} is not "
                                  "a folder coreselect made (a link or a file); delete the "
                                  "checkpoint and its .parts folder to start afresh")
        return folder

    def plan(self, stage: str, tasks: Sequence[Any]) -> list:
        """The tasks of ``stage``: those recorded (a resumed build runs the same tasks), else
        ``tasks``, recorded now."""
        if stage not in self.tasks:
            self.tasks[stage] = list(tasks)
            self._write()
        return list(self.tasks[stage])

    def _write(self) -> None:
        from coreselect.store.checkpoint_file import _version, encode

        arrays: dict[str, np.ndarray] = {}
        header = {"format": FORMAT, "kind": KIND, "coreselect": _version(),
                  "inputs": self.prints, "digest": self.digest,
                  "tasks": {k: to_tree(v, arrays) for k, v in self.tasks.items()}}
        self.ck.write(encode(header, arrays))

    def finished(self, stage: str, task: Any) -> tuple[bool, Any]:
        """Whether ``task`` of ``stage`` is kept whole (its manifest and every file pass their
        SHA-256), and its result. A damaged one is removed, to be done again."""
        from coreselect.store.checkpoint_file import decode

        key = task_key(stage, task)
        final = self._stage(stage) / key
        if not final.is_dir():
            return False, None
        why = None
        try:
            header, arrays = decode(_read_manifest(final), f"{final}/{MANIFEST}")
            if (header.get("kind") != KIND or header.get("stage") != stage
                    or header.get("key") != key or header.get("build") != self.digest):
                why = "its manifest is of another task or build"
            elif not isinstance(header.get("files"), dict) or any(
                    _kept_name(rel) is None for rel in header["files"]):
                why = "its manifest names a file outside its folder"
            else:
                for rel, (size, digest) in sorted(header["files"].items()):
                    path = final / rel
                    if not _plain_file_inside(final, rel) or path.stat().st_size != size:
                        why = f"{rel} is missing or has another size"
                    elif _sha256(path) != digest:
                        why = f"{rel} fails its checksum"
                    if why:
                        break
            if why is None:
                result = from_tree(header["result"], arrays)
                self._results[(stage, key)] = (result, header["files"])
                return True, result
        except (OSError, CheckpointError, ValueError, TypeError, KeyError,
                AttributeError, ImportError) as exc:
            why = f"its manifest is unreadable ({str(exc).splitlines()[0][:80]})"
        log.warning("checkpoint %s: %s task %s is damaged (%s): doing it again", self.shown,
                    stage, key, why)
        self.redone[stage] = self.redone.get(stage, 0) + 1
        shutil.rmtree(final, ignore_errors=True)
        return False, None

    def files_of(self, stage: str, task: Any) -> list[tuple[str, Path]]:
        """The files a finished task wrote: ``(relative path, kept file)``."""
        key = task_key(stage, task)
        final = self._stage(stage) / key
        hit = self._results.get((stage, key))
        if hit is not None:
            names = hit[1]
        else:  # a task of this run: its files were just hashed; their names are checked
            from coreselect.store.checkpoint_file import decode

            header, _ = decode(_read_manifest(final), f"{final}/{MANIFEST}")
            names = header.get("files")
            if not isinstance(names, dict) or any(_kept_name(r) is None for r in names):
                raise CheckpointError(f"checkpoint {self.shown}: {final}/{MANIFEST} names a "
                                      "file outside its folder; delete the checkpoint")
        return [(rel, final / rel) for rel in sorted(names)]

    def run(self, engine: Any, func: Callable, shared: Any, stage: str, tasks: Sequence[Any],
            on_result: Callable[[int, Any], None], common: tuple = (), inputs: tuple = (),
            select: Callable[[Any], str] | None = None,
            announce: Callable[[int, int], None] | None = None) -> list:
        """The results of ``tasks`` (in order): the finished ones from the checkpoint, the
        others run by ``engine`` and kept. ``on_result`` is called for every task, first for
        those taken; when resuming, ``announce(taken, redone)`` (the tasks taken, and those found
        damaged, to be done again) before the others run."""
        results: list[Any] = [None] * len(tasks)
        todo = []
        for i, task in enumerate(tasks):
            ok, result = self.finished(stage, task)
            if ok:
                results[i] = result
                on_result(i, result)
            else:
                todo.append(i)
        self.taken[stage] = len(tasks) - len(todo)
        if announce is not None and self.resuming:
            announce(self.taken[stage], self.redone.get(stage, 0))
        if todo:
            kept = Kept(func, shared, stage, str(self._stage(stage)), self.digest,
                        tuple(common), tuple(inputs), select)
            (self.folder / stage).mkdir(parents=True, exist_ok=True)
            got = engine.map(run_kept, kept, [tasks[i] for i in todo],
                             on_result=lambda j, res: on_result(todo[j], res))
            for j, res in zip(todo, got):
                results[j] = res
        return results

    def drop_if_empty(self) -> None:
        """After a failure: remove a checkpoint this run made that holds no finished task."""
        if self.resuming or any(p.is_dir() and TMP not in p.name
                                for p in self.folder.glob("*/*") if p.parent.name != "work"):
            return
        try:
            self.remove()
        except OutputError:
            pass

    def remove(self) -> None:
        """After the store is committed: the record and its folder go. The folder is first
        renamed aside (one step, right after the store's own rename), so that a kill while its
        many files are deleted leaves no checkpoint, only ``PATH.parts.removed``, which the
        next build with this checkpoint sweeps."""
        from coreselect.io.files import checkpoint as test_hold

        trash = self.folder.with_name(self.folder.name + ".removed")
        try:
            if self.folder.exists():
                os.rename(self.folder, trash)  # never onto a folder that is there
            os.unlink(self.ck.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise OutputError(self.shown, f"cannot remove the checkpoint "
                              f"({exc.strerror or exc})", exc.errno) from None
        test_hold("build-removing")  # tests kill the build here
        _remove_owned(trash)
