"""The store's file writer: every file it writes is recorded with its size and crc32, the
manifest ``store.json`` lists. Local folders use :class:`Writer`; an object-storage build
(:class:`coreselect.store.fs.UrlWriter`) writes the same bytes through the same ``save_csc``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from coreselect.store._format import CrcWriter


class Writer:
    """Writes the store's files, recording each one's size and crc32 as it is written."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, list[int]] = {}

    def save(self, rel: str, arr: np.ndarray) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            out = CrcWriter(fh)
            np.save(out, np.ascontiguousarray(arr), allow_pickle=False)
        self.files[rel] = [out.size, out.crc]

    def save_text(self, rel: str, text: str) -> None:
        with open(self.root / rel, "wb") as fh:
            out = CrcWriter(fh)
            out.write(text.encode("utf-8"))
        self.files[rel] = [out.size, out.crc]

    def save_csc(self, folder: str, ptr: np.ndarray, idx: np.ndarray, dat: np.ndarray) -> None:
        self.save(f"{folder}/indptr.npy", ptr.astype(np.int64))
        self.save(f"{folder}/indices.npy", idx.astype(np.int32))
        small = dat.size == 0 or (dat.max() < 2**15 and dat.min() >= -2**15)
        self.save(f"{folder}/data.npy", dat.astype(np.int16 if small else np.int32))


__all__ = ["Writer"]
