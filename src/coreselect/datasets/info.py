"""Summary statistics of a multi-label dataset (``coreselect datasets info``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from coreselect.io.dataset import Dataset

__all__ = ["dataset_info", "format_info"]


def _feature_kinds(ds: Dataset) -> dict[str, int]:
    kinds = ds.metadata.feature_kinds
    if kinds is not None and len(kinds) == ds.n_features:
        kinds = list(kinds)
        # ARFF nominal {0,1} features are "binary"; numeric ones that only hold 0/1 count as numeric.
        return {k: kinds.count(k) for k in ("binary", "nominal", "numeric")}
    # No declarations (arrays, LIBSVM): binary when a column only holds 0 and 1.
    X = ds.X
    if sp.issparse(X):
        Xc = sp.csc_matrix(X)
        nonbin = np.zeros(ds.n_features, dtype=bool)
        bad = (Xc.data != 1) & (Xc.data != 0)
        cols = np.repeat(np.arange(ds.n_features), np.diff(Xc.indptr))
        nonbin[cols[bad]] = True
    else:
        A = np.asarray(X)
        nonbin = ~np.all((A == 0) | (A == 1), axis=0)
    n_bin = int((~nonbin).sum())
    return {"binary": n_bin, "nominal": 0, "numeric": int(ds.n_features - n_bin)}


def dataset_info(ds: Dataset) -> dict[str, Any]:
    """Statistics of a dataset as a JSON-ready dict.

    Keys: ``name``, ``instances``, ``features``, ``labels``, ``cardinality`` (mean labels
    per instance), ``density`` (cardinality / labels), ``distinct_labelsets``,
    ``feature_kinds`` (binary/nominal/numeric counts), ``storage`` ("sparse"/"dense"),
    ``nonzeros`` (of X), ``id_columns``.
    """
    Y = ds.Y.toarray() if sp.issparse(ds.Y) else np.asarray(ds.Y)
    n, L = Y.shape
    card = float(Y.sum() / n) if n else 0.0
    distinct = len(np.unique(np.packbits(Y.astype(bool), axis=1), axis=0)) if n and L else 0
    nnz = int(ds.X.nnz) if sp.issparse(ds.X) else int(np.count_nonzero(ds.X))
    return {
        "name": ds.name,
        "instances": ds.n_samples,
        "features": ds.n_features,
        "labels": ds.n_labels,
        "cardinality": round(card, 4),
        "density": round(card / L, 4) if L else 0.0,
        "distinct_labelsets": distinct,
        "feature_kinds": _feature_kinds(ds),
        "storage": "sparse" if sp.issparse(ds.X) else "dense",
        "nonzeros": nnz,
        "id_columns": [ds.feature_names[j] for j in ds.id_columns],
    }


def format_info(info: dict[str, Any]) -> str:
    """A human-readable block of the statistics."""
    k = info["feature_kinds"]
    lines = [
        f"name:                {info['name']}",
        f"instances:           {info['instances']}",
        f"features:            {info['features']} "
        f"(binary {k['binary']}, nominal {k['nominal']}, numeric {k['numeric']})",
        f"labels:              {info['labels']}",
        f"label cardinality:   {info['cardinality']:.4f}",
        f"label density:       {info['density']:.4f}",
        f"distinct labelsets:  {info['distinct_labelsets']}",
        f"storage:             {info['storage']} ({info['nonzeros']} nonzeros)",
    ]
    if info.get("id_columns"):
        lines.append(f"ID-like features:    {', '.join(info['id_columns'])}")
    return "\n".join(lines)
