"""A column store as a source: :class:`StoreSource` (discretized when the store was built, read
by each part task on its own) and its row blocks as row shards (:class:`StoreRowShards`)."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix, slot_offsets
from coreselect.core.problem import Problem
from coreselect.selection.distributed import StoreParts, partition_bounds
from coreselect.errors import InputError
from coreselect.selection.sources.base import ColumnParts, Recorded, Source, selectable_columns
from coreselect.selection.spec import Binning, Objective
from coreselect.store import ColumnStore, open_store
from coreselect.store._format import load_npy

if TYPE_CHECKING:
    from coreselect.engines.rowsharded import RowShards

log = logging.getLogger(__name__)


class StoreSource(Source):
    """A column store (an opened :class:`~coreselect.store.ColumnStore` or its folder).

    Its codes were binned when it was built, so ``binning`` (default: the store's binning,
    constant columns not selectable) must bin as the store did; only ``keep_constant`` is
    free. Its partition is fixed by the seed it was built with (its column order).
    ``temp_dir``: where the row shards' row-major copies go (:class:`StoreRowShards`;
    default: the system's temporary folder).
    """

    def __init__(self, store: ColumnStore | str | os.PathLike, binning: Binning | None = None,
                 *, temp_dir: str | os.PathLike | None = None):
        if temp_dir is not None:
            from coreselect.store.fs import refuse_url

            refuse_url(str(temp_dir), "temp_dir")
            if not os.path.isdir(temp_dir):
                raise InputError(f"temp_dir {temp_dir} is not a folder (it must exist)")
        self.temp_dir = temp_dir
        self.store = store if isinstance(store, ColumnStore) else open_store(store)
        built = self.built_binning(self.store)
        if binning is None:
            binning = built
        elif built is not None and not binning.same_codes(built, self.store.n_samples):
            raise InputError(
                f"the store {self.store.path} was built with n_bins={built.n_bins}, "
                f"strategy={built.strategy!r}, min_bin_count={built.min_bin_count}; its codes "
                "cannot be binned again (rebuild it with 'coreselect store build')")
        if built is not None:  # what "auto" stood for when the store was built
            binning = replace(binning, n_bins=built.n_bins)
        self.binning = binning or Binning()
        self.label_names = [str(n) for n in self.store.label_names]
        # The name given at build time, else the folder's.
        self.name = str(self.store.meta.get("name") or Path(self.store.path).name)

    @staticmethod
    def built_binning(store: ColumnStore) -> Binning | None:
        """The binning the store was built with (None for a store that does not say)."""
        disc = store.meta.get("discretization")
        if not isinstance(disc, dict):
            return None
        return Binning(n_bins=int(disc["n_bins"]), strategy=disc["strategy"],
                       min_bin_count=int(disc["min_bin_count"]))

    @property
    def n_columns(self) -> int:
        return self.store.n_features

    def n_selectable(self) -> int:
        return self.store.n_selectable(self.binning.keep_constant)

    def nonzero_cells(self) -> tuple[int, int, int]:
        return (self.store.n_nonzero(), self.store.n_samples,
                self.store.n_features - int(self.store.meta["n_constant"]))

    def problem(self, objective: Objective, progress: Callable[[int, int], None] | None = None,
                recorded: Recorded | None = None) -> Problem:
        start = time.perf_counter()
        features = self.store.read_all()
        labels = self.store.labels()
        seconds = time.perf_counter() - start
        log.info("load: %d columns from the store in %.2fs", self.n_columns, seconds)
        o = objective
        features, ids = selectable_columns(features, None, self.binning.keep_constant)
        problem = Problem.from_discrete(
            features, labels, k=o.k, lam=o.lam, p=o.p, relevance=o.relevance,
            calibration=o.calibration, keep_constant=self.binning.keep_constant,
            column_ids=ids, progress=progress,
            known_relevance=None if recorded is None else recorded(features, labels))
        problem.timings = {"load": seconds, **problem.timings}
        return problem

    def row_shards(self, n_shards: str | int, keep_as: str | None = None,
                   ) -> tuple["RowShards", np.ndarray | None]:
        if n_shards not in ("auto", self.store.n_row_blocks):
            raise InputError(
                f"the row shards of a store are its {self.store.n_row_blocks} row block(s); "
                f"row_shards={n_shards!r} cannot change them (rebuild with --row-block-size)")
        return StoreRowShards(self.store, cache_dir=self.temp_dir, keep_as=keep_as), None

    def column_parts(self, objective: Objective, m: int, random_state: Any,
                     recorded: Recorded | None = None) -> ColumnParts:
        seed = self.store.seed
        if random_state is not None and not (
                isinstance(random_state, (int, np.integer)) and int(random_state) == seed):
            raise InputError(
                f"the partition of a store is fixed by the seed it was built with ({seed}); "
                f"random_state={random_state!r} cannot change it (leave it out, or rebuild "
                "the store with that seed)")
        bounds = partition_bounds(self.n_columns, m)
        columns = [(int(bounds[i]), int(bounds[i + 1])) for i in range(m)]
        shared = StoreParts(self.store.ref, objective, self.binning.keep_constant)
        return ColumnParts(shared, columns, self.store.labels())

    def fingerprint(self) -> str:
        """The store's identity: a hash of its ``store.json`` (which holds every file's size
        and checksum)."""
        import hashlib
        import json

        meta = json.dumps(self.store.meta, sort_keys=True, separators=(",", ":"))
        return "store:" + hashlib.sha256(meta.encode()).hexdigest()

    def names(self, ids: np.ndarray) -> list[str]:
        names = self.store.feature_names
        return [str(names[int(i)]) for i in ids]

    def data_columns(self, ids: np.ndarray) -> np.ndarray:
        # A store built from some columns of a file (ID columns left out) records their
        # numbers in the file: selections report those, as a selection from the file does.
        ids = np.asarray(ids, dtype=np.int64)
        file_ids = self.store.column_ids
        return ids if file_ids is None else file_ids[ids]

    def describe(self) -> dict:
        return {"dataset": self.name, "n_samples": self.store.n_samples,
                "n_features": self.store.n_features, "n_labels": self.store.n_labels}


def _store_tile(ref, row_block: int) -> tuple[DiscreteMatrix, DiscreteMatrix]:
    """One row block of a store (its path or :class:`~coreselect.store.StoreRef`: a URL and
    its storage options), columns in original-id order (what a worker runs)."""
    from coreselect.store.fs import is_url

    # A remote store's every read is checksummed; its open-time check is a listing and a
    # read per file, too much per tile.
    url = is_url(getattr(ref, "path", ref))
    return StoreRowShards(open_store(ref, check=not url)).tile(row_block)


class StoreRowShards:
    """A store's row blocks as row shards (:class:`coreselect.engines.rowsharded.RowShards`): every
    tile is read when asked for (streaming holds one tile at a time) and its columns are put
    back in original-id order, so ties break as in memory.

    A greedy step needs only the rows where the new feature ``u`` is non-zero
    (:func:`~coreselect.core.shards.step_counts_rows`), so :meth:`step_counts` reads column
    ``u`` of the tile and gathers those rows from a row-major copy of the tile (column ids,
    codes), written once per tile to a scratch folder (``cache_dir``, default the system's
    temporary folder; removed with this object) when :meth:`features` first reads it, and
    memory-mapped only while a step reads it, so the resident memory stays one tile's.

    The scratch folder carries this process's pid (``coreselect-rows.p<pid>-XXXX.tmp``): a
    run killed by SIGKILL cleans nothing, and the next rows run in the same folder removes
    what it left. With ``keep_as`` (a checkpointed run's key), the run that resumes it takes
    the folder over instead, with every tile copy that was finished (each written whole,
    then renamed) and still matches its CRC-32: a resumed run does not read and transpose
    the tiles again.
    """

    def __init__(self, store: ColumnStore, cache_dir: str | os.PathLike | None = None,
                 keep_as: str | None = None):
        self.store = store
        self.n_row_shards = store.n_row_blocks
        self._to_ids = np.argsort(store.order, kind="stable")  # store position of each id
        self._n_codes = np.asarray(store.n_codes, dtype=np.int64)[self._to_ids]
        self._offsets = slot_offsets(self._n_codes)
        self._cache_root = cache_dir
        self._keep_as = keep_as
        self._remote = getattr(store, "url", None) is not None
        self._cache: Path | None = None
        self._row_major: dict[int, Path] = {}
        # Tiles are read on several threads (SequentialRows): one opens the scratch folder.
        self._opening = threading.Lock()

    def __getstate__(self) -> dict:
        # A copy elsewhere (a worker) has no use for this process's scratch files (nor a lock).
        return {**self.__dict__, "_cache": None, "_row_major": {}, "_opening": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._opening = threading.Lock()

    def tile(self, row_block: int) -> tuple[DiscreteMatrix, DiscreteMatrix]:
        return self._features_tile(row_block), self.store.labels_tile(row_block)

    def close(self) -> None:
        """Remove the row-major copies now (the run calls it on success, on failure and when
        SIGTERM unwinds it; otherwise they go with this object)."""
        import shutil

        if self._cache is None and self._keep_as is not None:
            # A resumed run that had no step left never opened its scratch: the killed
            # run's copies are taken over only to be removed.
            self._cache = self._scratch()
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
        self._cache, self._row_major = None, {}

    def _scratch(self) -> Path:
        import tempfile

        from coreselect.io.files import scratch_dir

        return scratch_dir(self._cache_root or tempfile.gettempdir(), "coreselect-rows",
                           self._keep_as)

    def _features_tile(self, row_block: int) -> DiscreteMatrix:
        codes = self.store.read_tile(row_block, 0, self.store.n_features)
        return codes.take(self._to_ids)

    def features(self, shard: int) -> DiscreteMatrix:
        features = self._features_tile(shard)
        if shard not in self._copies():
            self._save_row_major(shard, features)
        return features

    def labels(self, shard: int) -> DiscreteMatrix:
        return self.store.labels_tile(shard)

    def loader(self, shard: int):
        import functools

        return functools.partial(_store_tile, self.store.ref, shard)

    def step_counts(self, shard: int, u: int, backend: str = "auto") -> np.ndarray:
        """:func:`~coreselect.core.shards.step_counts` of ``u`` on one row block, equal to
        ``step_counts(self.features(shard), u)``, from column ``u`` and the mapped
        row-major copy only."""
        from coreselect.core.shards import step_counts_rows

        a = max(int(self._n_codes[u]) - 1, 0)
        pos = int(self._to_ids[u])
        if self._remote:  # a remote read fetches the whole tile: use the local copy
            folder = self._row_major_copy(shard)
            column = self._local_column(shard, u)
        else:
            column = self.store.read_tile(shard, pos, pos + 1).codes
        if a == 0 or column.nnz == 0:
            return np.zeros((a, int(self._offsets[-1])), dtype=np.int64)
        if not self._remote:
            folder = self._row_major_copy(shard)
        indptr, cols, codes = (load_npy(folder / f"{name}.npy", mmap_mode="r")
                               for name in ("indptr", "cols", "codes"))
        try:
            return step_counts_rows(column.indices, column.data, np.asarray(indptr),
                                    np.asarray(cols), np.asarray(codes), self._offsets, a,
                                    backend)
        finally:
            del indptr, cols, codes  # unmap: the pages read leave this process's RSS

    def _row_major_copy(self, shard: int) -> Path:
        """The folder of ``shard``'s row-major copy, written first if it is not there."""
        if shard not in self._copies():
            self._save_row_major(shard, self._features_tile(shard))
        return self._row_major[shard]

    def _copies(self) -> dict[int, Path]:
        """The finished row-major copies, by shard (after the scratch folder is opened: a
        resumed run's adopted ones are there)."""
        with self._opening:
            if self._cache is None:
                import shutil
                import weakref

                cache = self._scratch()
                weakref.finalize(self, shutil.rmtree, str(cache), True)
                self._row_major = {shard: folder for shard, folder in self._adopted(cache)}
                self._cache = cache
        return self._row_major

    def _adopted(self, cache: Path):
        """The copies in a taken-over scratch folder that are whole and match their CRC-32;
        others are removed (rebuilt when a step needs them)."""
        import json
        import shutil
        import zlib

        for folder in sorted(cache.glob("r*")):
            try:
                shard = int(folder.name[1:])
                manifest = json.loads((folder / "manifest.json").read_text())
                n_rows = int(self.store.row_bounds[shard + 1] - self.store.row_bounds[shard])
                arrays = {name: load_npy(folder / f"{name}.npy", mmap_mode="r")
                          for name in manifest["crc32"]}
                ok = (0 <= shard < self.n_row_shards and manifest["shard"] == shard
                      and arrays["indptr"].shape == (n_rows + 1,)
                      and int(arrays["indptr"][-1]) == arrays["cols"].size
                      == arrays["codes"].size
                      and (not self._remote or "col_indptr" in arrays)
                      and all(zlib.crc32(np.ascontiguousarray(arrays[name])) == crc
                              for name, crc in manifest["crc32"].items()))
                del arrays
            except (OSError, ValueError, KeyError, TypeError, IndexError):
                ok = False
            if ok:
                yield shard, folder
            else:
                log.info("row copy %s does not match its checksum: made again", folder.name)
                shutil.rmtree(folder, ignore_errors=True)

    def _save_row_major(self, shard: int, features: DiscreteMatrix) -> None:
        import json
        import shutil
        import zlib

        copies = self._copies()
        csr = features.codes.tocsr()  # column ids in original order; order in a row is free
        code_type = np.int8 if self._n_codes.max(initial=1) <= 128 else np.int16
        arrays = {"indptr": csr.indptr.astype(np.int64, copy=False),
                  "cols": csr.indices.astype(np.int32, copy=False),
                  "codes": csr.data.astype(code_type, copy=False)}
        if self._remote:  # and the columns, read one at a time by step_counts
            csc = features.codes
            arrays.update({"col_indptr": csc.indptr.astype(np.int64, copy=False),
                           "col_rows": csc.indices.astype(np.int32, copy=False),
                           "col_codes": csc.data.astype(code_type, copy=False)})
        # Written whole under another name, then renamed: a kill leaves no half copy that a
        # resumed run (keep_as) would take over; only such a run reads the checksums.
        part = self._cache / f"part-r{shard}"
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir()
        from coreselect.io.files import save_array

        for name, array in arrays.items():
            save_array(part / f"{name}.npy", array)
        if self._keep_as is not None:
            crc = {name: zlib.crc32(np.ascontiguousarray(a)) for name, a in arrays.items()}
            (part / "manifest.json").write_text(json.dumps({"shard": shard, "crc32": crc}))
        folder = self._cache / f"r{shard}"
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(part, folder)
        copies[shard] = folder

    def _local_column(self, shard: int, u: int) -> sp.csc_matrix:
        """Column ``u`` (original id) of a remote store's tile, from the local copy."""
        folder = self._row_major[shard]
        ptr = load_npy(folder / "col_indptr.npy", mmap_mode="r")
        a, z = int(ptr[u]), int(ptr[u + 1])
        rows = np.array(load_npy(folder / "col_rows.npy", mmap_mode="r")[a:z])
        codes = np.array(load_npy(folder / "col_codes.npy", mmap_mode="r")[a:z])
        n_rows = int(self.store.row_bounds[shard + 1] - self.store.row_bounds[shard])
        return sp.csc_matrix((codes, rows, np.array([0, z - a])), shape=(n_rows, 1))
