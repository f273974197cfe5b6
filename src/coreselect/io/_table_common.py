"""What the CSV and Parquet readers share: the limits on a table's size, the label
columns' 0/1 check, text columns as codes, and a pandas frame as a :class:`Dataset` (see
:mod:`coreselect.io.tabular` for the rules)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, detect_id_columns
from coreselect.io.labels import resolve_label_spec

_META_KEY = b"coreselect.labels"
_MAX_DENSE_CELLS = 50_000_000  # tables are dense: refuse to blow a huge sparse matrix up
#: Widest table read (pandas needs ~2.5 KB and 50 us per column: 10^5 columns take ~5 s).
MAX_COLUMNS = 100_000
#: Parquet cells declared per byte of file beyond which the footer is not believed. Real
#: columns compress to a few bits per cell at best (sparse 0/1 columns: ~50 cells per byte);
#: a run-length bomb declares millions.
MAX_CELLS_PER_BYTE = 1000
#: Bytes one table cell costs while reading (pandas' frame, the float64 X, one temporary).
_BYTES_PER_CELL = 24
_CELL_FLOOR = 1 << 20  # tables this small are never refused for memory


def _check_cells(cells: int, path: str, what: str) -> None:
    """Refuse a table whose dense size would not fit in the memory left to this process."""
    from coreselect.io.text import memory_budget

    if cells <= _CELL_FLOOR:
        return
    need = cells * _BYTES_PER_CELL
    budget = memory_budget()
    if need > budget:
        raise DatasetError(
            f"{what} {cells} cells (~{need / 2**30:.1f} GiB to read as a dense table), more than the "
            f"{budget / 2**30:.1f} GiB of memory available; refusing (write large sparse data as LIBSVM "
            "or sparse ARFF, or read it on a bigger machine)", path=path)


def resolve_labels(columns: Sequence[str], labels: Any, path: str | None = None) -> list[str]:
    """Resolve a ``labels`` spec (:mod:`coreselect.io.labels`) to the list of label column names."""
    cols = [str(c) for c in columns]
    idx, _ = resolve_label_spec(cols, labels, path)
    return [cols[i] for i in idx]


def _binary_labels(Y: np.ndarray, names: list[str], path: str | None, row_offset: int | None) -> np.ndarray:
    Y = np.asarray(Y)
    if Y.dtype == bool:
        return Y.astype(np.int8)
    try:
        Yf = Y.astype(np.float64)
    except (TypeError, ValueError):
        raise DatasetError("label columns must hold 0/1 values", path=path) from None
    bad = ~np.isin(Yf, (0.0, 1.0))
    if bad.any():
        r, c = np.argwhere(bad)[0]
        line = None if row_offset is None else int(r) + row_offset
        raise DatasetError(f"label column {names[c]!r} is not binary (value {Y[r, c]!r})", path=path, line=line)
    return Yf.astype(np.int8)


def _line(row_offset: int | None, r: int) -> int | None:
    return None if row_offset is None else int(r) + row_offset


def _text_codes(col, c: str, path: str | None, row_offset: int | None) -> tuple[np.ndarray, list[str] | None]:
    """Codes (index into the sorted distinct values) of a text column, after the checks of
    the module docs (UTF-8 bytes, missing cells, a numeric column with a typo); a column of
    numbers kept as text comes back as its numbers (values None)."""
    import pandas as pd

    bad = col.isna().to_numpy()
    if bad.any():
        raise DatasetError(f"missing value in column {c!r}", path=path, line=_line(row_offset, np.flatnonzero(bad)[0]))
    values = col.tolist()
    for r, v in enumerate(values):
        if isinstance(v, (bytes, bytearray)):
            try:
                values[r] = bytes(v).decode("utf-8")
            except UnicodeDecodeError:
                raise DatasetError(f"column {c!r} holds bytes that are not UTF-8 text", path=path,
                                   line=_line(row_offset, r)) from None
        elif not isinstance(v, str):
            values[r] = str(v)
    as_numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
    numeric = as_numbers.notna().to_numpy()
    if numeric.all():
        return as_numbers.to_numpy(dtype=np.float64), None  # numbers pandas kept as text
    if numeric.sum() * 2 > len(values):
        r = int(np.flatnonzero(~numeric)[0])
        raise DatasetError(
            f"column {c!r} holds numbers except {values[r]!r}; fix the cell (a text column would be read "
            "as nominal codes)", path=path, line=_line(row_offset, r))
    cats = sorted(set(values))
    lookup = {v: i for i, v in enumerate(cats)}
    return np.fromiter((lookup[v] for v in values), dtype=np.float64, count=len(values)), cats


def _frame_to_dataset(df, label_cols: list[str], path: str | None, name: str, row_offset: int | None,
                      meta: dict) -> Dataset:
    import pandas as pd

    df.columns = [str(c) for c in df.columns]
    if df.columns.duplicated().any():
        dup = df.columns[df.columns.duplicated()][0]
        raise DatasetError(f"column {dup!r} appears twice", path=path)
    label_set = set(label_cols)
    feat_cols = [c for c in df.columns if c not in label_set]
    Y = _binary_labels(df[label_cols].to_numpy(), label_cols, path, row_offset)
    nominal_values: dict[str, list[str]] = {}
    X = np.empty((len(df), len(feat_cols)), dtype=np.float64)
    is_num = np.array(
        [pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c]) for c in feat_cols], dtype=bool
    )
    num_idx = np.flatnonzero(is_num)
    if len(num_idx):
        # One conversion for all numeric columns: per-column loops are slow on wide tables.
        X[:, num_idx] = df[[feat_cols[j] for j in num_idx]].to_numpy(dtype=np.float64, na_value=np.nan)
    for j in np.flatnonzero(~is_num).tolist():
        c = feat_cols[j]
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            # Parquet written by coreselect keeps the declared value order as categories.
            cats = [str(v) for v in col.cat.categories]
            codes = col.cat.codes.to_numpy()
            if (codes < 0).any():
                raise DatasetError(f"missing value in column {c!r}", path=path,
                                   line=_line(row_offset, np.flatnonzero(codes < 0)[0]))
        else:
            codes, cats = _text_codes(col, c, path, row_offset)
        X[:, j] = codes
        if cats is not None:
            nominal_values[c] = cats
    binary = np.all((X == 0) | (X == 1), axis=0) if len(df) else np.ones(len(feat_cols), dtype=bool)
    kinds = [
        ("binary" if len(nominal_values[c]) <= 2 else "nominal")
        if c in nominal_values
        else ("binary" if binary[j] else "numeric")
        for j, c in enumerate(feat_cols)
    ]
    finite = np.isfinite(X)
    if not finite.all():
        r, cidx = np.argwhere(~finite)[0]
        what = "missing value" if np.isnan(X[r, cidx]) else "infinite value"
        raise DatasetError(f"{what} in column {feat_cols[cidx]!r}", path=path, line=_line(row_offset, r))
    ids = detect_id_columns(X, [j for j, c in enumerate(feat_cols) if c in nominal_values])
    return Dataset(
        X=X,
        Y=Y,
        feature_names=feat_cols,
        label_names=list(label_cols),
        name=name,
        metadata=DatasetMeta.from_mapping(
            {**meta, "feature_kinds": kinds, "nominal_values": nominal_values, "id_columns": ids}),
    )
