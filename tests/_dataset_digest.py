"""A digest of a Dataset (arrays, dtypes, shapes, names, metadata) for tests that a reader
change leaves whole-file loads identical (tests/test_io_chunks.py, tests/data/reader_digests.json)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import scipy.sparse as sp


def _array(h, a) -> None:
    if sp.issparse(a):
        a = sp.csr_matrix(a)
        h.update(f"csr{a.shape}{a.dtype}{a.indices.dtype}{a.indptr.dtype}".encode())
        for part in (a.indptr, a.indices, a.data):
            h.update(np.ascontiguousarray(part).tobytes())
    else:
        a = np.asarray(a)
        h.update(f"dense{a.shape}{a.dtype}".encode())
        h.update(np.ascontiguousarray(a).tobytes())


def digest(ds) -> dict:
    hx, hy = hashlib.sha256(), hashlib.sha256()
    _array(hx, ds.X)
    _array(hy, ds.Y)
    meta = {k: repr(v) for k, v in sorted(dataclasses.asdict(ds.metadata).items())
            if k not in ("source", "files_read", "label_file")}
    names = hashlib.sha256(repr((list(ds.feature_names), list(ds.label_names), ds.name)).encode()).hexdigest()
    return {"X": hx.hexdigest(), "Y": hy.hexdigest(), "names": names,
            "meta": hashlib.sha256(repr(meta).encode()).hexdigest()}
