"""Data in memory as a source: the checks of a feature matrix and its labels (dense, sparse,
label sets), and :class:`InMemorySource`, which discretizes them with a
:class:`~coreselect.selection.spec.Binning`."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix, discretize, discretize_labels, resolve_n_bins
from coreselect.core.problem import Problem
from coreselect.selection.distributed import ProblemParts, partition
from coreselect.errors import InputError
from coreselect.selection.sources.base import ColumnParts, Recorded, Source, selectable_columns
from coreselect.selection.spec import Binning, Objective

if TYPE_CHECKING:
    from coreselect.engines.rowsharded import RowShards

log = logging.getLogger(__name__)


def check_sparse_structure(X: sp.spmatrix, what: str = "the features") -> None:
    """Raise a typed error unless the arrays of a sparse matrix describe a valid matrix.

    CSR/CSC/BSR: 1-D integer ``indptr`` of ``n_major + 1`` entries starting at 0, monotone,
    ending at most at ``len(indices)``; every index in ``0 .. n_minor - 1``. COO: every row
    and column index in range. Scipy checks none of this for arrays changed after the matrix
    was made (nor, in CSR/CSC, the index ranges), and its C++ conversions and the kernels read
    or write past the end of an array on such input (segmentation faults).
    Vectorised, O(nnz + n_major). Also refuses (:class:`~coreselect.errors.LimitError`) a
    declared width that the values present cannot fill
    (:func:`~coreselect.io.dataset.width_allowed`), before anything allocates per column.
    Unsorted or repeated indices are valid (scipy sums repeats)."""
    from coreselect.errors import InputTypeError, LimitError
    from coreselect.io.dataset import width_allowed

    fmt = X.format
    name = fmt.upper()
    malformed = f"(a malformed {name} matrix)"
    if len(X.shape) != 2:
        raise InputError(f"{what} must be a 2-D matrix, got shape {X.shape}")
    if fmt == "coo":
        arrays = (("row", X.row, X.shape[0]), ("col", X.col, X.shape[1]))
        nnz = X.data.size if isinstance(X.data, np.ndarray) else -1
        for label, arr, bound in arrays:
            if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype.kind not in "iu":
                raise InputTypeError(f"{what}: the COO {label} array must be 1-D integers")
            if arr.size != nnz:
                raise InputError(f"{what}: the COO {label} array has {arr.size} entries for "
                                 f"{nnz} values {malformed}")
            if arr.size and (arr.min() < 0 or arr.max() >= bound):
                raise InputError(f"{what}: a COO {label} index is outside 0..{bound - 1} {malformed}")
        n_minor, minor = X.shape[1], "column"
    elif fmt in ("csr", "csc", "bsr"):
        block = X.blocksize if fmt == "bsr" else (1, 1)
        rows, cols = X.shape[0] // block[0], X.shape[1] // block[1]
        n_major, n_minor = (rows, cols) if fmt != "csc" else (cols, rows)
        minor = "row" if fmt == "csc" else "column"
        indptr, indices, data = X.indptr, X.indices, X.data
        for label, arr in (("indptr", indptr), ("indices", indices)):
            if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype.kind not in "iu":
                raise InputTypeError(f"{what}: the {name} {label} array must be 1-D integers, "
                                     f"got {getattr(arr, 'dtype', type(arr).__name__)}")
        if not isinstance(data, np.ndarray):
            raise InputTypeError(f"{what}: the {name} data must be an array")
        if indptr.size != n_major + 1:
            raise InputError(f"{what}: indptr has {indptr.size} entries for {n_major} "
                             f"{'columns' if fmt == 'csc' else 'rows'} {malformed}")
        nnz = int(indptr[-1])
        if indptr[0] != 0 or nnz > indices.size or nnz > data.shape[0]:
            raise InputError(f"{what}: indptr runs {int(indptr[0])}..{nnz} but there are "
                             f"{indices.size} indices and {data.shape[0]} values {malformed}")
        if n_major and np.diff(indptr).min() < 0:
            raise InputError(f"{what}: indptr decreases {malformed}")
        used = indices[:nnz]
        if nnz and (used.min() < 0 or used.max() >= n_minor):
            raise InputError(f"{what}: a {minor} index is outside 0..{n_minor - 1} {malformed}")
        n_minor *= block[1] if fmt != "csc" else block[0]
        nnz *= block[0] * block[1]
    else:
        return  # lil, dok, dia: Python-level structures that scipy converts safely
    if not width_allowed(n_minor, nnz):
        raise LimitError(f"{what}: a sparse matrix that declares {n_minor} {minor}s but holds "
                         f"{nnz} value(s); refusing before allocating for every {minor}")


def _refuse_complex(dtype, what: str) -> None:
    from coreselect.errors import InputTypeError

    if dtype.kind == "c":
        raise InputTypeError(f"{what} are complex ({dtype}); coreselect needs real numbers "
                             "(pass .real or abs() explicitly)")


def check_features(X) -> np.ndarray | sp.spmatrix:
    """A 2-D numeric dense array or CSR/CSC matrix with at least two samples.

    Complex values are refused (:class:`~coreselect.errors.InputTypeError`) rather than cast;
    a sparse matrix's arrays are checked (:func:`check_sparse_structure`) before any
    conversion, and a matrix in another sparse format is converted to CSR first (scipy builds
    those, so they are consistent)."""
    from coreselect.errors import InputTypeError

    if sp.issparse(X):
        _refuse_complex(X.dtype, "the features")
        if X.dtype.kind not in "biuf":
            raise InputTypeError(f"the features must be numeric, got a sparse {X.dtype} matrix")
        check_sparse_structure(X)
        if X.format not in ("csr", "csc"):
            X = X.tocsr()
        nnz = int(X.indptr[-1])
        if X.indices.size != nnz or X.data.size != nnz:  # arrays longer than indptr says
            X = type(X)((X.data[:nnz], X.indices[:nnz], X.indptr.copy()), shape=X.shape)
        if not X.has_canonical_format:
            # Unsorted or repeated indices: scipy's meaning is the sum of the repeats.
            X = X.copy()
            X.sum_duplicates()
    else:
        if isinstance(X, (str, bytes)):
            raise InputTypeError(f"the features must be a numeric matrix, not {type(X).__name__}")
        try:
            X = np.asarray(X)
        except (TypeError, ValueError):
            raise InputError("the features must be numeric") from None
        _refuse_complex(X.dtype, "the features")
        if X.dtype.kind not in "biuf":
            try:
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


def label_sets_to_matrix(Y: Sequence) -> tuple[np.ndarray, list]:
    """The 0/1 matrix of a sequence of label sets or lists (``[{0, 2}, {1}, set()]``,
    ``[["a", "b"], ("c",)]``), as scikit-learn's
    ``MultiLabelBinarizer`` makes it: one column per label that occurs, in sorted order, and
    those labels (the column names)."""
    from coreselect.errors import InputTypeError

    present: set = set()
    Y = list(Y)
    for i, y in enumerate(Y):
        for v in y:  # say which row holds what: a row inside a row, None
            if v is None:
                raise InputTypeError(f"label list {i} holds None; a label is a number or a "
                                     "string (a sample without labels is an empty set)")
            if isinstance(v, (list, tuple, set, frozenset, dict, np.ndarray)):
                raise InputTypeError(f"label list {i} holds a {type(v).__name__}: the labels "
                                     "are nested more than one level; give a 0/1 matrix, or "
                                     "label lists as a list of sets or lists ([{0, 2}, {1}])")
    Y = [set(y) for y in Y]  # a label named twice in a row counts once (MultiLabelBinarizer)
    for y in Y:
        present.update(y)
    try:
        classes = sorted(present)
    except TypeError:
        kinds = sorted({type(c).__name__ for c in present})
        raise InputTypeError(f"the label lists mix labels of types {', '.join(kinds)}; the "
                             "labels must be all numbers or all strings (they are sorted "
                             "into columns)") from None
    for c in classes:
        if isinstance(c, (complex, np.complexfloating)):
            raise InputTypeError("a label set holds a complex number")
    column = {c: j for j, c in enumerate(classes)}
    rows = np.repeat(np.arange(len(Y), dtype=np.int64), [len(y) for y in Y])
    cols = np.fromiter((column[c] for y in Y for c in y), dtype=np.int64, count=rows.size)
    M = np.zeros((len(Y), len(classes)), dtype=np.int8)
    M[rows, cols] = 1
    return M, classes


def as_label_matrix(Y, n_samples: int):
    """A binary (n_samples, n_labels) matrix from a label matrix, a 1-D class vector (one
    binary label per class; one label for two classes) or a sequence of label sets
    (``[{0, 2}, {1}, ...]``) or label lists (``[["a", "b"], ("c",)]``, a Series of lists),
    one column per label that occurs, as ``MultiLabelBinarizer`` (:func:`_label_lists` says
    when a list of lists is label lists and when a 0/1 matrix).

    Refused with a typed error: complex values, a matrix of strings (2-D), a bare string,
    lists nested deeper than label lists, a mix of sets and other rows, and lists of 0s and
    1s that read both ways."""
    return _label_matrix(Y, n_samples)[0]


#: What a row of label lists may be (MultiLabelBinarizer takes any iterable of labels).
_LABEL_ROWS = (list, tuple, set, frozenset, np.ndarray)


def _is_01(v) -> bool:
    return (isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating))
            and (v == 0 or v == 1))


def _label_lists(Y) -> list | None:
    """The rows of ``Y`` when it holds label lists, as ``MultiLabelBinarizer`` takes them;
    None when it is a matrix or a class vector. The rule:

    * ``Y`` is a list or tuple, or a 1-D object array or Series (a Series of lists), whose
      items are all sets, lists, tuples or 1-D arrays (rows);
    * sets, rows of different lengths, or any value other than 0 and 1: label lists (but
      rows of one length holding only the strings ``"0"`` and ``"1"`` are refused: a 0/1
      matrix read as text, or label lists?);
    * rows of one length holding only 0s and 1s: a 0/1 matrix when some row holds a value
      twice (a label list would not name a label twice); when none does (``[[0, 1], [1, 0]]``,
      ``[[1], [0]]``) either reading is possible and :class:`InputTypeError` says how to
      say which (a numpy array is always a matrix).
    """
    from coreselect.errors import InputTypeError

    if not isinstance(Y, (list, tuple)):
        if getattr(Y, "dtype", None) != object or getattr(Y, "ndim", 0) != 1:
            return None
    rows = list(Y)
    is_row = [isinstance(y, _LABEL_ROWS) and getattr(y, "ndim", 1) == 1 for y in rows]
    if not rows or not all(is_row):
        if any(is_row) and any(y is None for y in rows):
            at = next(i for i, y in enumerate(rows) if y is None)
            raise InputTypeError(f"label list {at} is None; give an empty set or list for a "
                                 "sample without labels")
        if any(is_row) and any(isinstance(y, (set, frozenset)) for y in rows):
            raise InputTypeError("label lists must all be sets, lists or tuples of labels "
                                 "([{0, 2}, {1}, set()]); these rows mix them with other values")
        return None
    if any(isinstance(y, (set, frozenset)) for y in rows) or len({len(y) for y in rows}) > 1:
        return rows
    flat = [v for y in rows for v in y]
    if flat and all(isinstance(v, str) and v in ("0", "1") for v in flat):
        raise InputTypeError(
            "the labels are lists of the strings '0' and '1' of one length: a 0/1 matrix read "
            "as text, or label lists; pass np.asarray(Y, dtype=int) for a 0/1 matrix, or label "
            "sets ([{'0', '1'}, {'1'}]) for label lists")
    if not all(_is_01(v) for v in flat):
        return rows
    if any(len(set(map(float, y))) < len(y) for y in rows):
        return None  # a 0/1 matrix: some row holds a value twice
    raise InputTypeError(
        "the labels are lists of 0s and 1s of one length in which no row repeats a value: "
        "they read both as a 0/1 matrix and as label lists; pass np.asarray(Y) for a 0/1 "
        "matrix, or label sets ([{0, 1}, {1}]) or MultiLabelBinarizer().fit_transform(Y) "
        "for label lists")


def _label_matrix(Y, n_samples: int):
    from coreselect.errors import InputTypeError

    if Y is None:
        raise InputError("no labels: GDSSelector requires y to be passed, but the target y is None")
    classes = None
    if isinstance(Y, (str, bytes)):
        raise InputTypeError(f"the labels must be a 0/1 matrix, a class vector or label sets, "
                             f"not a {type(Y).__name__}")
    if sp.issparse(Y):
        _refuse_complex(Y.dtype, "the labels")
        if Y.dtype.kind not in "biuf":
            raise InputTypeError(f"the labels must be numeric 0/1, got a sparse {Y.dtype} matrix")
        check_sparse_structure(Y, "the labels")
        Y = sp.csc_matrix(Y)
        Y.sum_duplicates()
    elif (rows := _label_lists(Y)) is not None:
        try:
            Y, classes = label_sets_to_matrix(rows)
        except InputTypeError:  # its own message says what is wrong
            raise
        except TypeError:  # an unhashable label: a list inside a row
            raise InputTypeError(
                "the labels are nested more than one level; give a 0/1 matrix, or label "
                "lists as a list of sets or lists ([{0, 2}, {1}])") from None
        if Y.shape[1] == 0:
            raise InputError("the label sets are all empty: there are no labels")
    else:
        try:
            Y = np.asarray(Y)
        except ValueError:  # numpy >= 1.24 refuses ragged nested sequences
            raise InputTypeError(
                "the labels are ragged nested lists; give a 0/1 matrix, or label sets as a "
                "list of sets ([{0, 2}, {1}])") from None
        _refuse_complex(Y.dtype, "the labels")
        if Y.dtype.kind == "O" and any(isinstance(y, (list, tuple, set, frozenset, np.ndarray))
                                       for y in Y.ravel()):
            raise InputTypeError(
                "the labels are ragged nested lists; give a 0/1 matrix, or label sets as a "
                "list of sets ([{0, 2}, {1}])")
        if Y.ndim == 1:
            if Y.dtype.kind == "f" and not np.all(np.isfinite(Y)):
                raise InputError("the labels contain NaN or infinite values")
            try:
                classes, y = np.unique(Y, return_inverse=True)
            except TypeError:
                raise InputTypeError("the classes in the label vector cannot be sorted "
                                     "(mixed types)") from None
            if classes.size > 2:
                Y = np.eye(classes.size, dtype=np.int8)[y]
            else:
                Y = (y == classes.size - 1).astype(np.int8)[:, None]
                classes = classes[-1:]
        elif Y.ndim != 2:
            raise InputError(f"labels must be a 1-D or 2-D array, got shape {Y.shape}")
        elif Y.dtype.kind not in "biuf":
            raise InputTypeError(f"a label matrix must be numeric 0/1, got {Y.dtype} values")
    if Y.shape[0] != n_samples:
        raise InputError(f"X has {n_samples} samples but the labels have {Y.shape[0]}")
    if Y.shape[1] == 0:
        raise InputError("there are no label columns")
    return Y, classes


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
                 feature_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, name: str = "data"):
        binning = Binning() if binning is None else binning
        X = check_features(X)
        # "auto" bins stand for what they take on these rows: reports and checkpoints say so
        self.binning = replace(binning, n_bins=resolve_n_bins(binning.n_bins, X.shape[0]))
        self.Y, classes = _label_matrix(Y, X.shape[0])
        # The labels as given (label lists, class vectors: MultiLabelBinarizer's order).
        self.label_classes = None if classes is None else list(classes)
        columns_of_y = getattr(Y, "columns", None)  # a DataFrame names its labels
        if label_names is None and columns_of_y is not None:
            label_names = [str(c) for c in columns_of_y]
        elif label_names is None and classes is not None:
            label_names = [str(c) for c in classes]
        if label_names is not None and len(label_names) != self.Y.shape[1]:
            raise InputError(f"{len(label_names)} label names for {self.Y.shape[1]} labels")
        from coreselect.io.dataset import IndexedNames

        # IndexedNames stay lazy: a declared label space of millions costs no strings
        self.label_names = (None if label_names is None else label_names
                            if isinstance(label_names, IndexedNames) else [str(c) for c in label_names])
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
        self._problems: dict[tuple[str, bool], Problem] = {}  # (relevance, selectable only)

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

    def nonzero_cells(self) -> tuple[int, int, int]:
        features = self._discrete[0]
        return (int(features.codes.count_nonzero()), self.n_samples,
                int((~features.is_constant).sum()))

    def problem(self, objective: Objective, progress: Callable[[int, int], None] | None = None,
                recorded: Recorded | None = None) -> Problem:
        """The candidate columns that may be selected (constant ones, which carry no
        information, are left out unless ``keep_constant``). Relevances are computed once per
        relevance kind and reused by later runs on this source (other ``k``, ``lam``, ``p``):
        they cost more than a greedy run."""
        return self._problem(objective, progress, recorded, selectable_only=True)

    def _problem(self, objective: Objective, progress: Callable[[int, int], None] | None,
                 recorded: Recorded | None, selectable_only: bool) -> Problem:
        features, labels, seconds = self._discrete
        o = objective
        key = (o.relevance, selectable_only)
        cached = self._problems.get(key)
        if cached is None:
            ids = self.column_ids
            if selectable_only:
                features, ids = selectable_columns(features, ids, self.binning.keep_constant)
            cached = Problem.from_discrete(
                features, labels, k=o.k, lam=o.lam, p=o.p, relevance=o.relevance,
                calibration=o.calibration, keep_constant=self.binning.keep_constant,
                column_ids=ids, progress=progress,
                known_relevance=None if recorded is None else recorded(features, labels))
            cached.timings = {"discretize": seconds, **cached.timings}
            self._problems[key] = cached
            return cached
        return replace(cached, params=o.params(labels.n_columns), timings={})

    def row_shards(self, n_shards: str | int, keep_as: str | None = None,
                   ) -> tuple["RowShards", np.ndarray | None]:
        from coreselect.engines.rowsharded import InMemoryRowShards

        features, labels, _ = self._discrete
        n = 1 if n_shards == "auto" else min(int(n_shards), max(self.n_samples, 1))
        return InMemoryRowShards.split(features, labels, n), self.column_ids

    def column_parts(self, objective: Objective, m: int, random_state: Any,
                     recorded: Recorded | None = None) -> ColumnParts:
        # Relevances are computed once here for all columns (constant ones too: the seeded
        # partition is of every candidate); the parts slice them.
        problem = self._problem(objective, None, recorded, selectable_only=False)
        return ColumnParts(ProblemParts(problem), partition(self.n_columns, m, random_state),
                           problem.labels, dict(problem.timings), problem.relevance)

    def fingerprint(self) -> str:
        """A hash of what is selected on: the discretized codes, the labels and the candidate
        columns (a resumed run checks its checkpoint against it)."""
        from coreselect.selection.checkpoint import hash_arrays, matrix_fingerprint

        features, labels, _ = self._discrete
        return "codes:" + hash_arrays(*matrix_fingerprint(features), *matrix_fingerprint(labels),
                                      self.column_ids, np.asarray([self.n_features]))

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
