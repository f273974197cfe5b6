"""A chunked source over files by name (tables, ARFF, registry names) for the build from
files: :class:`WholeFileChunks`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import scipy.sparse as sp

from coreselect.errors import InputError



@dataclass(frozen=True)
class FileChunk:
    X: Any
    Y: Any
    file: str
    first_row: int


@dataclass(frozen=True)
class _Meta:
    feature_names: Any
    label_names: Any
    n_features: int
    id_columns: tuple
    name: str


@dataclass
class WholeFileChunks:
    """A chunked source over files by name, for tables, ARFF and registry names: data files
    (a path or URL) are streamed chunk by chunk (:func:`coreselect.io.chunks.open_chunks`:
    the first pass settles column types, counts the rows and decides the ID columns as the
    whole-file reader does; memory follows the chunk), a registry name (a small built-in
    dataset) is read whole and cut into chunks of ``chunk_rows``. Holds paths, reader options
    and, once scanned, the small first-pass results (picklable)."""

    files: list[str]
    options: dict = field(default_factory=dict)
    chunk_rows: int = 1 << 16
    format: str = "whole-file"

    def _source(self):
        """The streaming source of the files, or None for a registry name."""
        if "_src" not in self.__dict__:
            from coreselect.io.chunks import is_url, open_chunks

            files = [str(f) for f in self.files]
            if all(is_url(f) or Path(f).is_file() for f in files):
                self.__dict__["_src"] = open_chunks(files if len(files) > 1 else files[0], **self.options)
            else:
                self.__dict__["_src"] = None
        return self.__dict__["_src"]

    def _load(self, i: int):
        from coreselect.datasets.load import load

        return load(self.files[i], **self.options)

    @property
    def _first(self):
        # The first file's names and widths, read once (not pickled with the source).
        if self.__dict__.get("_meta") is None:
            src = self._source()
            if src is not None:
                from coreselect.io.text import stem

                name = stem(src.files[0], (".csv", ".parquet", ".pq", ".arff"))
                meta = _Meta(src.feature_names, src.label_names, src.n_features, src.id_columns, name)
            else:
                ds = self._load(0)
                meta = _Meta(ds.feature_names, ds.label_names, ds.n_features, tuple(ds.id_columns), ds.name)
            self.__dict__["_meta"] = meta
        return self.__dict__["_meta"]

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_meta"}

    def scan(self, progress=None) -> None:
        """The streaming source's first pass (``progress(n)``: bytes read), done once."""
        src = self._source()
        if src is not None:
            src.scan(progress=progress)

    def file_rows(self) -> list[int]:
        src = self._source()
        if src is None:
            return [self._load(i).n_samples for i in range(len(self.files))]
        return src.file_rows()

    @property
    def feature_names(self):
        return self._first.feature_names

    @property
    def label_names(self):
        return self._first.label_names

    @property
    def n_features(self):
        return self._first.n_features

    @property
    def id_columns(self):
        return self._first.id_columns

    @property
    def name(self):
        return self._first.name

    @property
    def n_labels(self):
        src = self._source()
        return None if src is None else src.n_labels

    def file_chunks(self, i: int, chunk_rows: int | None = None, chunk_bytes: int | None = None):
        src = self._source()
        if src is not None:
            for c in src.file_chunks(i, chunk_rows=chunk_rows or self.chunk_rows, chunk_bytes=chunk_bytes):
                yield FileChunk(c.X, c.Y, c.file, c.first_row)
            return
        ds = self._load(i)
        if i and not (_same_names(ds.feature_names, self.feature_names)
                      and _same_names(ds.label_names, self.label_names)):
            raise InputError(f"{self.files[i]}: its feature or label columns differ from "
                             f"those of {self.files[0]}; the shards of a dataset agree")
        step = int(chunk_rows or self.chunk_rows)
        X = ds.X.tocsr() if sp.issparse(ds.X) else ds.X
        Y = sp.csr_matrix(ds.Y)
        for a in range(0, X.shape[0], step):
            yield FileChunk(X[a:a + step], Y[a:a + step], self.files[i], a)

    def chunks(self, chunk_rows: int | None = None, chunk_bytes: int | None = None):
        for i in range(len(self.files)):
            yield from self.file_chunks(i, chunk_rows, chunk_bytes)


def _same_names(a, b) -> bool:
    """Equal column names (default names compared by their count and prefix)."""
    if len(a) != len(b):
        return False
    from coreselect.io.dataset import IndexedNames

    if isinstance(a, IndexedNames) or isinstance(b, IndexedNames):
        return a == b
    return [str(x) for x in a] == [str(x) for x in b]
