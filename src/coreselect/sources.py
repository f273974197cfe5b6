"""Where a strategy's candidate columns come from.

* :class:`InMemorySource`: a feature matrix and labels, discretized here with a
  :class:`~coreselect.spec.Binning`;
* :class:`StoreSource`: a column store (:mod:`coreselect.store`), discretized when it was
  built, read by each part task on its own.

A :class:`Source` answers what the strategies of :mod:`coreselect.strategies` ask, and
nothing else:

* ``n_columns`` and :meth:`~Source.n_selectable`: how many candidate columns, and how many of
  them may be picked (constant columns are not, unless ``binning.keep_constant``);
* :meth:`~Source.problem`: every candidate column in memory as a core
  :class:`~coreselect.core.problem.Problem` (the centralized strategies);
* :meth:`~Source.column_parts`: the seeded partition of the columns into ``m`` parts, as the
  shared data every part task loads from plus one key per part (Algorithm 3);
* :meth:`~Source.names` and :meth:`~Source.describe`: for reports.

Selections are always in the source's original column ids (:meth:`~Source.data_columns`:
a store's columns numbered as in the file it was built from).
"""

from __future__ import annotations

import abc
import logging
import os
import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import (
    DiscreteMatrix, discretize, discretize_labels, slot_offsets,
)
from coreselect.core.problem import Problem
from coreselect.distributed import ProblemParts, StoreParts, partition, partition_bounds
from coreselect.errors import InputError
from coreselect.spec import Binning, Objective
from coreselect.store import ColumnStore, open_store

if TYPE_CHECKING:
    from coreselect.rowsharded import RowShards

log = logging.getLogger(__name__)


@dataclass
class ColumnParts:
    """A partition of a source's columns, ready for :func:`coreselect.distributed.run_part`:
    ``shared`` is what every part task reads (shipped once per engine), ``columns[i]`` what
    ``shared.load`` takes for part ``i``; ``labels`` are the discretized labels (for the union)
    and ``timings`` the seconds spent preparing."""

    shared: Any
    columns: list[Any]
    labels: DiscreteMatrix
    timings: dict = field(default_factory=dict)


class Source(abc.ABC):
    """Candidate columns and labels a strategy selects from (see the module docstring)."""

    binning: Binning
    name: str = "data"

    @property
    @abc.abstractmethod
    def n_columns(self) -> int:
        """Number of candidate columns."""

    @abc.abstractmethod
    def n_selectable(self) -> int:
        """Number of candidate columns that may be selected."""

    @abc.abstractmethod
    def problem(self, objective: Objective) -> Problem:
        """Every candidate column in memory, relevances computed (``problem.timings`` says
        how long that took)."""

    @abc.abstractmethod
    def column_parts(self, objective: Objective, m: int, random_state: Any) -> ColumnParts:
        """The seeded random partition of the candidate columns into ``m`` parts."""

    def row_shards(self, n_shards: str | int) -> tuple["RowShards", np.ndarray | None]:
        """The discretized data cut into shards of rows (for the row-sharded strategy), and
        the original id of each column of the shards (None: the columns are the ids)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be cut into row shards")

    def names(self, ids: np.ndarray) -> list[str] | None:
        """Names of the given column ids (None when the source has no names)."""
        return None

    def data_columns(self, ids: np.ndarray) -> np.ndarray:
        """The column numbers, in the data the source was made from, of the given column
        ids (what a selection reports): the ids themselves unless the source renumbers."""
        return np.asarray(ids, dtype=np.int64)

    @abc.abstractmethod
    def describe(self) -> dict:
        """``{"dataset", "n_samples", "n_features", "n_labels"}`` for reports."""


# -- in memory ---------------------------------------------------------------------------------
def check_features(X) -> np.ndarray | sp.spmatrix:
    """A 2-D numeric dense array or CSR/CSC matrix with at least two samples."""
    if sp.issparse(X):
        X = X.tocsr() if X.format not in ("csr", "csc") else X
    else:
        try:
            X = np.asarray(X)
            if X.dtype.kind not in "biuf":
                X = X.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError("the features must be numeric") from None
    if X.ndim != 2:
        raise InputError(f"the features must be a 2-D matrix, got shape {X.shape}")
    if X.shape[0] < 2:
        raise InputError(f"need at least 2 samples, got {X.shape[0]} sample(s)")
    if X.shape[1] < 1:
        raise InputError("there are no feature columns")
    return X


def as_label_matrix(Y, n_samples: int):
    """A binary (n_samples, n_labels) matrix from a label matrix or a 1-D class vector
    (one binary label per class; one label for two classes)."""
    if Y is None:
        raise InputError("no labels: GDSSelector requires y to be passed, but the target y is None")
    if sp.issparse(Y):
        Y = sp.csc_matrix(Y)
    else:
        Y = np.asarray(Y)
        if Y.ndim == 1:
            if Y.dtype.kind == "f" and not np.all(np.isfinite(Y)):
                raise InputError("the labels contain NaN or infinite values")
            classes, y = np.unique(Y, return_inverse=True)
            if classes.size > 2:
                Y = np.eye(classes.size, dtype=np.int8)[y]
            else:
                Y = (y == classes.size - 1).astype(np.int8)[:, None]
        elif Y.ndim != 2:
            raise InputError(f"labels must be a 1-D or 2-D array, got shape {Y.shape}")
    if Y.shape[0] != n_samples:
        raise InputError(f"X has {n_samples} samples but the labels have {Y.shape[0]}")
    if Y.shape[1] == 0:
        raise InputError("there are no label columns")
    return Y


class InMemorySource(Source):
    """A feature matrix ``X`` (dense, or sparse CSR/CSC) and labels ``Y`` (a binary label
    matrix, or a 1-D class vector), discretized once with ``binning``.

    ``columns`` restricts the candidates to some columns of ``X`` (increasing indices; for
    example :meth:`coreselect.io.dataset.Dataset.candidate_columns`, which leaves out ID
    columns); selections are indices into ``X`` either way. ``feature_names`` (one per column
    of ``X``) and ``name`` are used in reports.
    """

    def __init__(self, X, Y, binning: Binning | None = None, *,
                 columns: Sequence[int] | np.ndarray | None = None,
                 feature_names: Sequence[str] | None = None, name: str = "data"):
        self.binning = Binning() if binning is None else binning
        X = check_features(X)
        self.Y = as_label_matrix(Y, X.shape[0])
        self.n_samples, self.n_features = int(X.shape[0]), int(X.shape[1])
        ids = None
        if columns is not None:
            ids = np.asarray(columns, dtype=np.int64)
            if ids.ndim != 1 or np.any(np.diff(ids) <= 0) or (ids.size and (
                    ids[0] < 0 or ids[-1] >= X.shape[1])):
                raise InputError("columns must be increasing indices of feature columns")
            if ids.size == 0:
                raise InputError("there are no candidate feature columns")
            if ids.size < X.shape[1]:
                X = X[:, ids]
            else:
                ids = None
        self.X = X
        self.column_ids = ids  # original id of each candidate (None: all columns, in order)
        self.feature_names = feature_names
        self.name = name
        self._problems: dict[str, Problem] = {}  # relevance kind -> problem

    @property
    def n_columns(self) -> int:
        return int(self.X.shape[1])

    @cached_property
    def _discrete(self) -> tuple[DiscreteMatrix, DiscreteMatrix, float]:
        start = time.perf_counter()
        b = self.binning
        features = discretize(self.X, n_bins=b.n_bins, strategy=b.strategy,
                              min_bin_count=b.min_bin_count)
        labels = discretize_labels(self.Y)
        seconds = time.perf_counter() - start
        log.info("discretized %d x %d features in %.3f s", *features.codes.shape, seconds)
        return features, labels, seconds

    def n_selectable(self) -> int:
        features = self._discrete[0]
        return self.n_columns if self.binning.keep_constant else int(
            (~features.is_constant).sum())

    def problem(self, objective: Objective) -> Problem:
        """Relevances are computed once per relevance kind and reused by later runs on this
        source (other ``k``, ``lam``, ``p``): they cost more than a greedy run."""
        features, labels, seconds = self._discrete
        o = objective
        cached = self._problems.get(o.relevance)
        if cached is None:
            cached = Problem.from_discrete(features, labels, k=o.k, lam=o.lam, p=o.p,
                                           relevance=o.relevance, calibration=o.calibration,
                                           keep_constant=self.binning.keep_constant,
                                           column_ids=self.column_ids)
            cached.timings = {"discretize": seconds, **cached.timings}
            self._problems[o.relevance] = cached
            return cached
        return replace(cached, params=o.params(labels.n_columns), timings={})

    def row_shards(self, n_shards: str | int) -> tuple["RowShards", np.ndarray | None]:
        from coreselect.rowsharded import InMemoryRowShards

        features, labels, _ = self._discrete
        n = 1 if n_shards == "auto" else min(int(n_shards), max(self.n_samples, 1))
        return InMemoryRowShards.split(features, labels, n), self.column_ids

    def column_parts(self, objective: Objective, m: int, random_state: Any) -> ColumnParts:
        # Relevances are computed once here for all columns; the parts slice them.
        problem = self.problem(objective)
        return ColumnParts(ProblemParts(problem), partition(self.n_columns, m, random_state),
                           problem.labels, dict(problem.timings))

    def names(self, ids: np.ndarray) -> list[str] | None:
        if self.feature_names is None:
            return None
        return [str(self.feature_names[int(i)]) for i in ids]

    def describe(self) -> dict:
        out = {"dataset": self.name, "n_samples": self.n_samples,
               "n_features": self.n_features, "n_labels": int(self.Y.shape[1])}
        # Which relevance form the runs used (core/sparse_relevance.py chooses).
        used = sorted({p.relevance_backend for p in self._problems.values()})
        if used:
            out["relevance_backend"] = used[0] if len(used) == 1 else used
        return out


# -- a column store ----------------------------------------------------------------------------
class StoreSource(Source):
    """A column store (an opened :class:`~coreselect.store.ColumnStore` or its folder).

    Its codes were binned when it was built, so ``binning`` (default: the store's binning,
    constant columns not selectable) must bin as the store did; only ``keep_constant`` is
    free. Its partition is fixed by the seed it was built with (its column order).
    """

    def __init__(self, store: ColumnStore | str | os.PathLike, binning: Binning | None = None):
        self.store = store if isinstance(store, ColumnStore) else open_store(store)
        built = self.built_binning(self.store)
        if binning is None:
            binning = built
        elif built is not None and not binning.same_codes(built):
            raise InputError(
                f"the store {self.store.path} was built with n_bins={built.n_bins}, "
                f"strategy={built.strategy!r}, min_bin_count={built.min_bin_count}; its codes "
                "cannot be binned again (rebuild it with 'coreselect store build')")
        self.binning = binning or Binning()
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

    def problem(self, objective: Objective) -> Problem:
        start = time.perf_counter()
        features = self.store.read_all()
        seconds = time.perf_counter() - start
        log.info("load: %d columns from the store in %.2fs", self.n_columns, seconds)
        o = objective
        problem = Problem.from_discrete(features, self.store.labels(), k=o.k, lam=o.lam, p=o.p,
                                        relevance=o.relevance, calibration=o.calibration,
                                        keep_constant=self.binning.keep_constant)
        problem.timings = {"load": seconds, **problem.timings}
        return problem

    def row_shards(self, n_shards: str | int) -> tuple["RowShards", np.ndarray | None]:
        if n_shards not in ("auto", self.store.n_row_blocks):
            raise InputError(
                f"the row shards of a store are its {self.store.n_row_blocks} row block(s); "
                f"row_shards={n_shards!r} cannot change them (rebuild with --row-block-size)")
        return StoreRowShards(self.store), None

    def column_parts(self, objective: Objective, m: int, random_state: Any) -> ColumnParts:
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


__all__ = ["Source", "InMemorySource", "StoreSource", "ColumnParts", "check_features",
           "as_label_matrix"]


def _store_tile(path: str, row_block: int) -> tuple[DiscreteMatrix, DiscreteMatrix]:
    """One row block of a store, columns in original-id order (what a worker runs)."""
    return StoreRowShards(open_store(path)).tile(row_block)


class StoreRowShards:
    """A store's row blocks as row shards (:class:`coreselect.rowsharded.RowShards`): every
    tile is read when asked for (streaming holds one tile at a time) and its columns are put
    back in original-id order, so ties break as in memory.

    A greedy step needs only the rows where the new feature ``u`` is non-zero
    (:func:`~coreselect.core.shards.step_counts_rows`), so :meth:`step_counts` reads column
    ``u`` of the tile and gathers those rows from a row-major copy of the tile (column ids,
    codes), written once per tile to a scratch folder (``cache_dir``, default the system's
    temporary folder; removed with this object) when :meth:`features` first reads it, and
    memory-mapped only while a step reads it, so the resident memory stays one tile's.
    """

    def __init__(self, store: ColumnStore, cache_dir: str | os.PathLike | None = None):
        self.store = store
        self.n_row_shards = store.n_row_blocks
        self._to_ids = np.argsort(store.order, kind="stable")  # store position of each id
        self._n_codes = np.asarray(store.n_codes, dtype=np.int64)[self._to_ids]
        self._offsets = slot_offsets(self._n_codes)
        self._cache_root = cache_dir
        self._cache: Path | None = None
        self._row_major: dict[int, Path] = {}

    def __getstate__(self) -> dict:
        # A copy elsewhere (a worker) has no use for this process's scratch files.
        return {**self.__dict__, "_cache": None, "_row_major": {}}

    def tile(self, row_block: int) -> tuple[DiscreteMatrix, DiscreteMatrix]:
        return self._features_tile(row_block), self.store.labels_tile(row_block)

    def _features_tile(self, row_block: int) -> DiscreteMatrix:
        codes = self.store.read_tile(row_block, 0, self.store.n_features)
        return codes.take(self._to_ids)

    def features(self, shard: int) -> DiscreteMatrix:
        features = self._features_tile(shard)
        if shard not in self._row_major:
            self._save_row_major(shard, features)
        return features

    def labels(self, shard: int) -> DiscreteMatrix:
        return self.store.labels_tile(shard)

    def loader(self, shard: int):
        import functools

        return functools.partial(_store_tile, self.store.ref.path, shard)

    def step_counts(self, shard: int, u: int, backend: str = "auto") -> np.ndarray:
        """:func:`~coreselect.core.shards.step_counts` of ``u`` on one row block, equal to
        ``step_counts(self.features(shard), u)``, from column ``u`` and the mapped
        row-major copy only."""
        from coreselect.core.shards import step_counts_rows

        a = max(int(self._n_codes[u]) - 1, 0)
        pos = int(self._to_ids[u])
        column = self.store.read_tile(shard, pos, pos + 1).codes
        if a == 0 or column.nnz == 0:
            return np.zeros((a, int(self._offsets[-1])), dtype=np.int64)
        if shard not in self._row_major:
            self._save_row_major(shard, self._features_tile(shard))
        folder = self._row_major[shard]
        indptr, cols, codes = (np.load(folder / f"{name}.npy", mmap_mode="r")
                               for name in ("indptr", "cols", "codes"))
        try:
            return step_counts_rows(column.indices, column.data, np.asarray(indptr),
                                    np.asarray(cols), np.asarray(codes), self._offsets, a,
                                    backend)
        finally:
            del indptr, cols, codes  # unmap: the pages read leave this process's RSS

    def _save_row_major(self, shard: int, features: DiscreteMatrix) -> None:
        import shutil
        import tempfile
        import weakref

        if self._cache is None:
            self._cache = Path(tempfile.mkdtemp(prefix="coreselect-rows-",
                                                dir=self._cache_root))
            weakref.finalize(self, shutil.rmtree, str(self._cache), True)
        csr = features.codes.tocsr()  # column ids in original order; order in a row is free
        code_type = np.int8 if self._n_codes.max(initial=1) <= 128 else np.int16
        folder = self._cache / f"r{shard}"
        folder.mkdir(exist_ok=True)
        np.save(folder / "indptr.npy", csr.indptr.astype(np.int64, copy=False))
        np.save(folder / "cols.npy", csr.indices.astype(np.int32, copy=False))
        np.save(folder / "codes.npy", csr.data.astype(code_type, copy=False))
        self._row_major[shard] = folder
