"""The in-memory dataset container shared by every reader, generator and writer."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


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
