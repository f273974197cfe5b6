"""The in-memory dataset container shared by every reader, generator and writer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"IndexedNames({self.n}, prefix={self.prefix!r})"


@dataclass
class Dataset:
    """A multi-label dataset.

    Attributes
    ----------
    X : ndarray or scipy.sparse matrix, shape (n_samples, n_features)
        Feature values. Sparse inputs stay sparse (CSR or CSC).
    Y : ndarray or scipy.sparse matrix, shape (n_samples, n_labels)
        Binary label matrix (0/1).
    feature_names, label_names : list of str
    name : str
        Short name (file stem or built-in name).
    """

    X: np.ndarray | sp.spmatrix
    Y: np.ndarray | sp.spmatrix
    feature_names: list[str]
    label_names: list[str]
    name: str = "dataset"
    meta: dict = field(default_factory=dict)

    @property
    def id_columns(self) -> list[int]:
        """Feature columns that identify samples (one distinct nominal value per sample,
        e.g. genbase's ``protein``): they carry no information and are never candidates."""
        return sorted(self.meta.get("id_columns", [])) if isinstance(self.meta, dict) else []

    def candidate_columns(self) -> np.ndarray:
        """Indices of the feature columns a selector may pick: all but :attr:`id_columns`.
        Selections made on ``X[:, candidate_columns()]`` map back through this array."""
        return np.setdiff1d(np.arange(self.n_features), self.id_columns)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_labels(self) -> int:
        return int(self.Y.shape[1])

    def __repr__(self) -> str:
        kind = "sparse" if sp.issparse(self.X) else "dense"
        return (
            f"Dataset(name={self.name!r}, instances={self.n_samples}, "
            f"features={self.n_features}, labels={self.n_labels}, {kind})"
        )
