"""The in-memory dataset container shared by every reader, generator and writer."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp


class IndexedNames(Sequence):
    """The names ``prefix0 .. prefix{n-1}`` made on demand: millions of default feature
    names without millions of Python strings in memory."""

    def __init__(self, n: int, prefix: str = "x"):
        self.n = int(n)
        self.prefix = prefix

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [f"{self.prefix}{j}" for j in range(*i.indices(self.n))]
        i = int(i)
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return f"{self.prefix}{i}"

    def __eq__(self, other) -> bool:
        if isinstance(other, IndexedNames):
            return self.n == other.n and (self.n == 0 or self.prefix == other.prefix)
        try:
            if len(other) != self.n:
                return False
        except TypeError:
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def _number(self, name) -> int | None:
        if not isinstance(name, str) or not name.startswith(self.prefix):
            return None
        digits = name[len(self.prefix):]
        if not digits.isascii() or not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
            return None
        j = int(digits)
        return j if j < self.n else None

    def __contains__(self, name) -> bool:
        return self._number(name) is not None

    def index(self, name, start: int = 0, stop: int | None = None) -> int:
        j = self._number(name)
        if j is None or j < start or (stop is not None and j >= stop):
            raise ValueError(f"{name!r} is not in the names")
        return j

    def __repr__(self) -> str:
        return f"IndexedNames({self.n}, prefix={self.prefix!r})"


# --------------------------------------------------------------------- limits

#: Declared widths (features, labels, columns) a reader accepts without question.
WIDTH_FLOOR = 1 << 20
#: Above the floor, a declared width may exceed the number of values present at most this many times.
WIDTH_RATIO = 64
#: Nothing is ever wider (index arrays of the kernels are 32-bit safe below this).
WIDTH_CAP = 100_000_000


def width_allowed(declared: int, present: int) -> bool:
    """Whether a declared width may be allocated for, given the values present (the rule of
    :func:`check_declared_width`; also applied to sparse matrices handed to the API)."""
    return declared <= WIDTH_FLOOR or (declared <= WIDTH_CAP and declared <= WIDTH_RATIO * (present + 1))


def check_declared_width(what: str, declared: int, present: int, path: str | None = None,
                         line: int | None = None) -> None:
    """Refuse a declared width that the data cannot plausibly fill, before allocating for it.

    The rule: ``declared <= WIDTH_FLOOR``, or ``declared <= WIDTH_RATIO * (present + 1)`` and
    ``declared <= WIDTH_CAP``; ``present`` is the number of values the file actually holds.
    So a 19-byte LIBSVM line ``1 99999999:1`` is refused, while rcv1-style files (47k
    features, millions of values) and 2-million-feature sparse sets with tens of millions of
    values pass.
    """
    from coreselect.errors import DatasetError

    if not width_allowed(declared, present):
        raise DatasetError(f"declares {declared} {what} but holds {present} value(s); refusing", path=path, line=line)


# ----------------------------------------------------------------- ID columns


def detect_id_columns(X, candidates: Sequence[int]) -> list[int]:
    """The one ID-column rule of every reader: of the ``candidates`` (nominal or string
    feature columns), those holding a distinct value in every row (two rows or more), e.g.
    genbase's ``protein``. Numeric columns are never ID columns."""
    n = X.shape[0]
    if n < 2:
        return []
    out = []
    for j in candidates:
        col = X[:, j].toarray().ravel() if sp.issparse(X) else np.asarray(X[:, j])
        if len(np.unique(col)) == n:
            out.append(int(j))
    return out


# ------------------------------------------------------------------- metadata


@dataclass(frozen=True)
class DatasetMeta:
    """What a reader learnt about a dataset besides X, Y and the names (typed, read-only).

    Attributes
    ----------
    format : str
        ``arff-dense``, ``arff-sparse``, ``libsvm``, ``csv``, ``parquet``, ``arrays``, or "".
    source : str or None
        The file read.
    relation : str or None
        ARFF ``@relation``.
    feature_kinds : tuple of str or None
        Per feature: ``numeric``, ``binary`` or ``nominal`` (None: not declared, e.g. LIBSVM).
    nominal_values : dict
        Feature name -> declared (or sorted distinct) values of nominal/text features;
        ``X`` holds their codes (index into the values).
    id_columns : tuple of int
        Feature columns that identify samples (:func:`detect_id_columns`); never candidates.
    label_source : str or None
        How labels were chosen: ``mulan-xml``, ``meka``, ``count``, ``names``, ``prefix``,
        ``schema`` (recorded in a Parquet file) or ``file`` (LIBSVM).
    label_file : str or None
        The Mulan XML that named the labels.
    zero_based, labels_zero_based : bool or None
        LIBSVM index bases.
    registry : str or None
        Registry name the dataset was loaded by.
    parts : tuple or None
        Sources of stacked parts (train + test).
    extra : dict
        Anything else (generators record their planted structure here).
    files_read : tuple of str
        Every file the reader read (the data file, the label XML found beside it or named,
        every part of a stacked dataset): the CLI refuses outputs that are one of them.
    """

    format: str = ""
    source: str | None = None
    relation: str | None = None
    feature_kinds: tuple[str, ...] | None = None
    nominal_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    id_columns: tuple[int, ...] = ()
    label_source: str | None = None
    label_file: str | None = None
    zero_based: bool | None = None
    labels_zero_based: bool | None = None
    registry: str | None = None
    parts: tuple | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    files_read: tuple[str, ...] = ()

    __hash__ = None  # type: ignore[assignment]  # holds dicts

    def __post_init__(self) -> None:
        fix = object.__setattr__
        if self.feature_kinds is not None:
            fix(self, "feature_kinds", tuple(self.feature_kinds))
        fix(self, "nominal_values", {str(k): tuple(v) for k, v in dict(self.nominal_values).items()})
        fix(self, "id_columns", tuple(sorted(int(j) for j in self.id_columns)))
        if self.parts is not None:
            fix(self, "parts", tuple(self.parts))
        fix(self, "extra", dict(self.extra))
        fix(self, "files_read", tuple(dict.fromkeys(str(f) for f in self.files_read)))

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any] | None) -> "DatasetMeta":
        """Build from an old-style ``meta`` dict: known keys become fields, the rest ``extra``."""
        d = dict(d or {})
        known = {k: d.pop(k) for k in list(d) if k in _FIELDS}
        known.setdefault("extra", {})
        known["extra"] = {**dict(known["extra"]), **d}
        return cls(**known)

    def as_dict(self) -> dict[str, Any]:
        """The old ``Dataset.meta`` dict: set fields only, lists instead of tuples, extras flat."""
        out: dict[str, Any] = {}
        for k in _FIELDS:
            if k == "extra":
                continue
            v = getattr(self, k)
            if k in ("id_columns", "nominal_values"):
                pass  # always present, as the readers always wrote them
            elif v is None or v == "" or (k == "files_read" and not v):
                continue
            if k == "nominal_values":
                v = {n: list(vals) for n, vals in v.items()}
            elif isinstance(v, tuple):
                v = list(v)
            out[k] = v
        out.update(self.extra)
        return out

    def with_key(self, key: str, value: Any) -> "DatasetMeta":
        if key in _FIELDS and key != "extra":
            return dataclasses.replace(self, **{key: value})
        return dataclasses.replace(self, extra={**self.extra, key: value})

    def without_key(self, key: str) -> "DatasetMeta":
        if key in _FIELDS and key != "extra":
            return dataclasses.replace(self, **{key: _DEFAULTS[key]})
        extra = dict(self.extra)
        extra.pop(key, None)
        return dataclasses.replace(self, extra=extra)


_FIELDS = tuple(f.name for f in dataclasses.fields(DatasetMeta))
_DEFAULTS = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
             for f in dataclasses.fields(DatasetMeta)}


class _MetaView(dict):
    """``Dataset.meta``: the typed :class:`DatasetMeta` as the dict older code reads and
    writes (``ds.meta["registry"] = ...``); writes go through to ``Dataset.metadata``.
    Deprecated: use ``Dataset.metadata``."""

    def __init__(self, owner: "Dataset"):
        super().__init__(owner.metadata.as_dict())
        self._owner = owner

    def __setitem__(self, key, value) -> None:
        self._owner.metadata = self._owner.metadata.with_key(key, value)
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        super().__delitem__(key)
        self._owner.metadata = self._owner.metadata.without_key(key)

    def update(self, *args, **kwargs) -> None:  # type: ignore[override]
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key, *default):
        if key in self:
            v = self[key]
            del self[key]
            return v
        if default:
            return default[0]
        raise KeyError(key)


class Dataset:
    """A multi-label dataset.

    Attributes
    ----------
    X : ndarray or scipy.sparse matrix, shape (n_samples, n_features)
        Feature values. Sparse inputs stay sparse (CSR or CSC).
    Y : ndarray or scipy.sparse matrix, shape (n_samples, n_labels)
        Binary label matrix (0/1).
    feature_names, label_names : sequence of str
        Lists, or :class:`IndexedNames` for default names (no string per feature in memory).
    name : str
        Short name (file stem or built-in name).
    metadata : DatasetMeta
        What the reader learnt (format, declared kinds, ID columns, label provenance).
    meta : dict
        Backward-compatible dict view of ``metadata`` (deprecated; see :class:`_MetaView`).
    """

    def __init__(
        self,
        X: np.ndarray | sp.spmatrix,
        Y: np.ndarray | sp.spmatrix,
        feature_names: Sequence[str],
        label_names: Sequence[str],
        name: str = "dataset",
        meta: Mapping[str, Any] | DatasetMeta | None = None,
        metadata: DatasetMeta | None = None,
    ):
        self.X = X
        self.Y = Y
        self.feature_names = feature_names
        self.label_names = label_names
        self.name = name
        if metadata is None:
            metadata = meta if isinstance(meta, DatasetMeta) else DatasetMeta.from_mapping(meta)
        elif meta is not None:
            raise TypeError("pass metadata= or meta=, not both")
        self.metadata = metadata

    @property
    def meta(self) -> dict:
        """``metadata`` as a dict that older code reads and writes (deprecated: use ``metadata``)."""
        return _MetaView(self)

    @meta.setter
    def meta(self, value: Mapping[str, Any] | DatasetMeta) -> None:
        self.metadata = value if isinstance(value, DatasetMeta) else DatasetMeta.from_mapping(value)

    @property
    def id_columns(self) -> list[int]:
        """Feature columns that identify samples (one distinct nominal value per sample,
        e.g. genbase's ``protein``): they carry no information and are never candidates."""
        return list(self.metadata.id_columns)

    def candidate_columns(self) -> np.ndarray:
        """Indices of the feature columns a selector may pick: all but :attr:`id_columns`.
        Selections made on ``X[:, candidate_columns()]`` map back through this array."""
        return np.setdiff1d(np.arange(self.n_features), self.id_columns)

    @property
    def n_samples(self) -> int:
        """Number of rows of ``X`` and ``Y``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    @property
    def n_labels(self) -> int:
        """Number of columns of ``Y``."""
        return int(self.Y.shape[1])

    def __repr__(self) -> str:
        kind = "sparse" if sp.issparse(self.X) else "dense"
        return (
            f"Dataset(name={self.name!r}, instances={self.n_samples}, "
            f"features={self.n_features}, labels={self.n_labels}, {kind})"
        )


def stack(parts: list[Dataset], name: str) -> Dataset:
    """Stack datasets with the same columns row-wise (e.g. a train and a test split)."""
    first = parts[0]
    for p in parts[1:]:
        if p.feature_names != first.feature_names or p.label_names != first.label_names:
            from coreselect.errors import DatasetError

            raise DatasetError(f"the parts of {name!r} do not have the same attributes")
    if any(sp.issparse(p.X) for p in parts):
        X = sp.vstack([sp.csr_matrix(p.X) for p in parts], format="csr")
    else:
        X = np.vstack([p.X for p in parts])
    Y = np.vstack([p.Y.toarray() if sp.issparse(p.Y) else p.Y for p in parts]).astype(np.int8)
    metadata = dataclasses.replace(first.metadata, parts=tuple(p.metadata.source for p in parts),
                                   files_read=tuple(f for p in parts for f in p.metadata.files_read))
    return Dataset(X=X, Y=Y, feature_names=list(first.feature_names), label_names=list(first.label_names),
                   name=name, metadata=metadata)
