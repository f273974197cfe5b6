"""The spill: the plan and the encoded pieces between the build's steps, in a folder inside the
store being built (or, a Dask build to a URL, under its temporary prefix, the plan signed).
The encode step writes a row block's pieces by column block; the tile step reads and drops
them."""

from __future__ import annotations

import hashlib
import hmac
import io
import pickle
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import scipy.sparse as sp

from coreselect.errors import InputError
from coreselect.store._plan import SPILL, Shared, UrlSpill

if TYPE_CHECKING:
    from coreselect.store._count import Plan



_PLANS: dict[str, Plan] = {}


def _plan(shared: Shared) -> Plan:
    path = _spilled(shared.root, "plan.pkl")
    plan = _PLANS.get(str(path))
    if plan is None:
        if isinstance(path, Path):
            with open(path, "rb") as fh:
                plan = pickle.load(fh)
        else:
            fsys, at = _url_fs(path)
            blob = fsys.cat_file(at)
            body, tag = blob[:-32], blob[-32:]
            if not hmac.compare_digest(tag, hmac.new(shared.root.key, body,
                                                     hashlib.sha256).digest()):
                raise InputError(f"{path.url}: the build's plan was altered on the server")
            plan = pickle.loads(body)
        _PLANS.clear()  # one build at a time per process
        _PLANS[str(path)] = plan
    return plan


def _save_plan(shared: Shared, plan: Plan) -> None:
    """The plan, where every task of passes 2 and 3 reads it (signed at a URL)."""
    body = pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
    path = _spilled(shared.root, "plan.pkl")
    if isinstance(path, Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    else:
        _put(path, body + hmac.new(shared.root.key, body, hashlib.sha256).digest())


def _spilled(root: str | UrlSpill, *parts: str) -> Path | UrlSpill:
    """A file (or folder) of the spill: a local path, or a URL under the temporary prefix."""
    if isinstance(root, UrlSpill):
        return UrlSpill("/".join([root.url.rstrip("/"), SPILL, *parts]), root.options, root.key)
    return Path(root, SPILL, *parts)


def _url_fs(at: UrlSpill):
    from coreselect.store import fs

    return fs.filesystem(at.url, at.options)


def _put(at: UrlSpill, data: bytes) -> None:
    from coreselect.store import fs

    fsys, path = _url_fs(at)
    try:
        fsys.pipe_file(path, data)
    except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
        raise fs._remote_error(fs.scrub(at.url), "", exc, at.options, verb="write") from None


def _piece_path(root: str | UrlSpill, r: int, what: str, first: int) -> Path | UrlSpill:
    return _spilled(root, f"r{r:06d}", what, f"{first:015d}.npz")


def _save_piece(path: Path | UrlSpill, m: sp.spmatrix) -> None:
    if isinstance(path, UrlSpill):
        buf = io.BytesIO()
        sp.save_npz(buf, sp.csc_matrix(m), compressed=False)
        _put(path, buf.getvalue())
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sp.save_npz(path, sp.csc_matrix(m), compressed=False)


def _pieces(shared: Shared, r: int) -> Callable[[str], list[sp.csc_matrix]]:
    """Row block ``r``'s pieces, by column block (``"b000001"``) or ``"labels"``, in row
    order; at a URL, listed once and each block's fetched together."""
    folder = _spilled(shared.root, f"r{r:06d}")
    if isinstance(folder, Path):
        return lambda what: [sp.load_npz(p) for p in sorted((folder / what).glob("*.npz"))]
    fsys, root = _url_fs(folder)
    try:
        names = sorted(fsys.find(root))
    except FileNotFoundError:
        names = []
    by: dict[str, list[str]] = {}
    for name in names:
        by.setdefault(name[len(root) + 1:].split("/", 1)[0], []).append(name)

    def load(what: str) -> list[sp.csc_matrix]:
        got = fsys.cat(by.get(what, []), on_error="raise") if by.get(what) else {}
        return [sp.load_npz(io.BytesIO(got[name])) for name in by.get(what, [])]
    return load


def _drop_pieces(shared: Shared, r: int) -> None:
    """Row block ``r``'s pieces, once its tiles are written (the spill holds each code once)."""
    folder = _spilled(shared.root, f"r{r:06d}")
    if isinstance(folder, Path):
        shutil.rmtree(folder, ignore_errors=True)
    else:
        fsys, root = _url_fs(folder)
        try:
            fsys.rm(root, recursive=True)
        except Exception:  # noqa: BLE001 - the driver removes the whole prefix at the end
            pass


def _row_block_prefix(r: int) -> str:
    """Where :func:`~coreselect.store._tiles.tile_task` reads row block ``r``'s pieces,
    relative to the root."""
    return _piece_path("", r, "labels", 0).parent.parent.as_posix() + "/"
