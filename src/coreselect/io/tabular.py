"""CSV and Parquet readers/writers, and in-memory arrays/DataFrames to :class:`Dataset`.

Label columns are chosen by ``labels`` as in :mod:`coreselect.io.labels` (``n``: the
last n columns, ``-n``: the first n, names, a prefix, or a Mulan XML); with ``None``,
Parquet files written by coreselect give the label names recorded in their schema metadata,
otherwise an error asks for ``labels``.

Text (object/category) feature columns become integer codes (sorted distinct values),
recorded in ``metadata.nominal_values``. Tables are dense; sparse matrices are densified
when written to CSV/Parquet.

Checks on reading (each a :class:`~coreselect.errors.DatasetError` naming file and line):

* at most ``MAX_COLUMNS`` columns (counted on the header line as it streams in, before
  pandas sees the file: a header of 10^7 names is refused after reading ~1 MB of it);
  a header without a data row; two columns with the same name (pandas would rename one);
* a text column whose values are mostly numbers is a numeric column with a typo: the
  first non-number cell is reported (it would otherwise become a nominal ID column that
  selection silently drops);
* missing, ``nan`` and infinite values;
* Parquet binary columns must hold UTF-8 text; columns of any non-scalar type (list,
  struct, map, union, dictionary of those, temporal) are refused by name;
* memory before materialising: a CSV is scanned as a stream first (its decoded size is
  capped, :mod:`coreselect.io.text`, and its cells counted), a Parquet file's footer gives
  its rows x columns; a table whose dense size would not fit in the memory this process may
  still use (:func:`coreselect.io.text.memory_budget`), or a Parquet file that declares more
  than ``MAX_CELLS_PER_BYTE`` cells per byte of file (run-length bombs), is refused before
  pandas or Arrow allocate for it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io._table_common import (  # noqa: F401 - the readers' shared parts, re-exported
    _BYTES_PER_CELL, _CELL_FLOOR, _MAX_DENSE_CELLS, _META_KEY, MAX_CELLS_PER_BYTE, MAX_COLUMNS, _binary_labels,
    _check_cells, _frame_to_dataset, _line, _text_codes, resolve_labels,
)
from coreselect.io.csvfile import (  # noqa: F401 - re-exported: coreselect.io.tabular is where readers live
    _CSV_BLOCK, _NA_VALUES, _Untyped, _csv_names, _csv_sep, _scan_header, _to_frame, _widen_or_fail,
    csv_batches, csv_block, csv_columns, csv_table, read_csv,
)
from coreselect.io.dataset import Dataset
from coreselect.io.labels import resolve_label_spec
from coreselect.io.parquetfile import (  # noqa: F401 - re-exported
    _is_url, _parquet_source, _scalar_type, _size, read_parquet,
)

__all__ = ["read_csv", "read_parquet", "write_csv", "write_parquet", "from_arrays", "resolve_labels"]


def to_frame(dataset: Dataset):
    """A pandas DataFrame of features (nominal ones as their values) followed by labels."""
    import pandas as pd

    if sp.issparse(dataset.X) and dataset.X.shape[0] * dataset.X.shape[1] > _MAX_DENSE_CELLS:
        raise DatasetError(
            f"refusing to densify a sparse {dataset.X.shape[0]} x {dataset.X.shape[1]} matrix for a table; "
            "write .arff or .svm (sparse formats) instead, or export fewer columns"
        )
    X = dataset.X.toarray() if sp.issparse(dataset.X) else np.asarray(dataset.X)
    Y = dataset.Y.toarray() if sp.issparse(dataset.Y) else np.asarray(dataset.Y)
    names = list(dataset.feature_names) + list(dataset.label_names)
    if len(set(names)) != len(names):
        raise DatasetError("feature and label names must be distinct to write a table")
    nominal = dataset.metadata.nominal_values
    # One 2-D block for the numeric part: a frame of thousands of separate columns is
    # an order of magnitude slower to build and to write.
    XY = np.hstack([X.astype(np.float64), Y.astype(np.float64)])
    integral = np.all(XY == np.round(XY), axis=0) & ~np.isnan(XY).any(axis=0)
    df = pd.DataFrame(XY, columns=names, copy=False)
    if integral.all():
        df = df.astype(np.int64)
    else:
        int_cols = [names[j] for j in np.flatnonzero(integral)]
        if int_cols:
            df[int_cols] = df[int_cols].astype(np.int64)
    cats: dict[str, Any] = {}
    for j, c in enumerate(dataset.feature_names):
        vals = nominal.get(c)
        if vals and list(vals) != [str(i) for i in range(len(vals))]:
            codes = X[:, j]
            if np.isnan(codes).any() or (codes < 0).any() or (codes >= len(vals)).any():
                raise DatasetError(f"feature {c!r} holds codes outside its {len(vals)} nominal values")
            # Categorical keeps the declared value order (and so the codes) through Parquet.
            cats[c] = pd.Categorical.from_codes(codes.astype(np.int64), categories=list(vals))
    if cats:
        # One concat instead of column-by-column assignment (which fragments the frame).
        df = pd.concat([df.drop(columns=list(cats)), pd.DataFrame(cats, index=df.index)], axis=1)[names]
    return df.astype({c: np.int8 for c in dataset.label_names})


def write_csv(dataset: Dataset, path: str | os.PathLike) -> None:
    """Write features then labels as CSV with a header row, atomically (floats round-trip exactly)."""
    from coreselect.io.files import atomic_path

    df = to_frame(dataset)
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format=None)


def write_parquet(dataset: Dataset, path: str | os.PathLike) -> None:
    """Write features then labels as Parquet; the label names go into the schema metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from coreselect.io.files import atomic_path

    table = pa.Table.from_pandas(to_frame(dataset), preserve_index=False)
    md = dict(table.schema.metadata or {})
    md[_META_KEY] = json.dumps(list(dataset.label_names)).encode()
    table = table.replace_schema_metadata(md)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def from_arrays(
    X: Any,
    Y: Any,
    feature_names: Sequence[str] | None = None,
    label_names: Sequence[str] | None = None,
    name: str = "arrays",
) -> Dataset:
    """Build a Dataset from numpy arrays, scipy.sparse matrices or pandas DataFrames.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame, shape (n_samples, n_features)
        Sparse input stays sparse (CSR). DataFrame columns give the feature names; text
        columns become integer codes.
    Y : array-like, sparse matrix or DataFrame, shape (n_samples, n_labels)
        0/1 (or boolean) labels; a 1-D array is one label.
    feature_names, label_names : sequence of str, optional
        Default ``f0..`` / ``l0..`` (or the DataFrame columns).
    name : str

    Raises
    ------
    DatasetError
        On shape mismatches, non-binary labels or non-numeric features.
    """
    import pandas as pd

    meta: dict = {"format": "arrays"}
    if isinstance(Y, pd.Series):
        Y = Y.to_frame()
    if isinstance(Y, pd.DataFrame):
        label_names = label_names or [str(c) for c in Y.columns]
        Y = Y.to_numpy()
    if sp.issparse(Y):
        Y = Y.toarray()
    Y = np.asarray(Y)
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2:
        raise DatasetError(f"Y must be 2-D, got shape {Y.shape}")
    if isinstance(X, pd.DataFrame):
        names = [str(c) for c in X.columns] if feature_names is None else list(feature_names)
        lnames = list(label_names) if label_names is not None else [f"l{j}" for j in range(Y.shape[1])]
        df = X.copy()
        df.columns = names
        if len(df) != Y.shape[0]:
            raise DatasetError(f"X has {len(df)} rows but Y has {Y.shape[0]}")
        for j, c in enumerate(lnames):
            df[c] = Y[:, j]
        return _frame_to_dataset(df, lnames, None, name, None, meta)
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = np.asarray(X)
        if X.ndim == 1:
            X = X[:, None]
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError):
            raise DatasetError("X must be numeric (use a DataFrame for text columns)") from None
    if X.ndim != 2:
        raise DatasetError(f"X must be 2-D, got shape {X.shape}")
    if X.shape[0] != Y.shape[0]:
        raise DatasetError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    fnames = [f"f{j}" for j in range(X.shape[1])] if feature_names is None else [str(c) for c in feature_names]
    lnames = [f"l{j}" for j in range(Y.shape[1])] if label_names is None else [str(c) for c in label_names]
    if len(fnames) != X.shape[1] or len(lnames) != Y.shape[1]:
        raise DatasetError("feature_names/label_names do not match the shapes of X/Y")
    return Dataset(
        X=X,
        Y=_binary_labels(Y, lnames, None, None),
        feature_names=fnames,
        label_names=lnames,
        name=name,
        meta=meta,
    )


# ------------------------------------------------------------------ streamed tables

def _is_numeric_type(t) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t) or pa.types.is_decimal(t)


@dataclass
class TableInfo:
    """What the first look at a table decided (:func:`table_columns`)."""

    features: list[str]
    labels: list[str]
    streamable: bool
    rows: int | None = None  # CSV: counted (and every row checked) by the first look
    types: dict | None = None  # CSV: each column's Arrow type, settled on the whole file
    longest: int = 0  # CSV: the longest line's bytes (a parser's block holds two)
    header: bool = True  # CSV: whether the first row names the columns


def table_columns(path: str, fmt: str, labels: Any = None, chunk_bytes: int | None = None, progress=None,
                  scan_block: int = 1 << 20, **read_options) -> TableInfo:
    """The first look at a CSV or Parquet file: feature and label names from its header or
    footer (and the checks the whole-file reader makes there), and whether it streams
    (numeric features). A CSV is read through once more, with the whole-file reader's
    parser, to settle each column's type (a later block may widen it) and to count and
    check its rows; ``progress(n)`` is called with the bytes of each block read."""
    import pyarrow as pa

    spath = str(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        if read_options:
            raise DatasetError(f"unknown Parquet read option(s): {', '.join(sorted(read_options))}", path=spath)
        try:
            pf = pq.ParquetFile(_parquet_source(spath))
            schema = pf.schema_arrow
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"cannot read Parquet: {' '.join(str(exc).split())}", path=spath) from None
        if len(schema) > MAX_COLUMNS:
            raise DatasetError(f"{len(schema)} columns; coreselect reads at most {MAX_COLUMNS} from a table", path=spath)
        cols = [str(n) for n in schema.names]
        md = schema.metadata or {}
        if labels is None and _META_KEY in md:
            try:
                labels = json.loads(md[_META_KEY])
            except ValueError:
                labels = None
        idx, _ = resolve_label_spec(cols, labels, spath)
        label_cols = [cols[i] for i in idx]
        types = {str(f.name): f.type for f in schema}
        streamable = all(_is_numeric_type(types[c]) for c in cols if c not in set(label_cols))
        streamable = streamable and all(_is_numeric_type(types[c]) or pa.types.is_boolean(types[c])
                                        for c in label_cols)
        if progress is not None:
            progress(_size(spath))
        return TableInfo([c for c in cols if c not in set(label_cols)], label_cols, streamable)
    sep = _csv_sep(spath, read_options)
    cols, header = csv_columns(spath, sep, read_options.get("header"))
    _rows, longest = _scan_header(spath, sep, whole=False, progress=progress, block=scan_block, header=header)
    if len(set(cols)) != len(cols):
        dup = next(c for k, c in enumerate(cols) if c in cols[:k])
        raise DatasetError(f"column {dup!r} appears twice", path=spath, line=1)
    idx, _ = resolve_label_spec(cols, labels, spath)
    label_cols = [cols[i] for i in idx]
    features = [c for c in cols if c not in set(label_cols)]
    block = csv_block(chunk_bytes, longest)
    types: dict = {}
    for _ in range(3 * len(cols) + 2):
        rows = 0
        try:
            for batch in csv_batches(spath, sep, cols, types, block, header=header):
                schema = {f.name: f.type for f in batch.schema}
                if not all(_is_numeric_type(schema[c]) for c in features) or not all(
                        _is_numeric_type(schema[c]) or pa.types.is_boolean(schema[c]) for c in label_cols):
                    return TableInfo(features, label_cols, False, header=header)
                _batch_arrays(batch, features, label_cols, spath, 1 + header + rows)  # the checks, with lines
                rows += batch.num_rows
        except _Untyped:
            return TableInfo(features, label_cols, False, header=header)
        except pa.ArrowException as exc:
            _widen_or_fail(exc, cols, types, spath)
            continue
        if rows == 0:
            raise DatasetError("a CSV dataset needs a header and at least one row of two or more columns", path=spath)
        settled = {c: (pa.float64() if pa.types.is_null(t) else t) for c, t in schema.items()}
        return TableInfo(features, label_cols, True, rows, settled, longest, header)
    raise DatasetError("cannot settle the column types", path=spath)  # pragma: no cover


def column_kinds(path: str, fmt: str, features: Sequence[str], nominal: Any = None,
                 info: TableInfo | None = None, **read_options) -> dict[str, str]:
    """Each feature column's kind in one CSV or Parquet file, as its reader reads it:
    ``text`` (the column became codes: a name in ``nominal``, the read file's
    ``metadata.nominal_values``), ``boolean`` or ``number``. Shards of one dataset must agree
    on every column's kind: a text column's codes, or a boolean column's 0/1, mean nothing
    beside another shard's numbers. The types come from the Parquet footer, a CSV's settled
    types (``info``, streamed files) or the CSV's first block (where a boolean column is
    inferred; a later non-boolean cell would have made it text)."""
    import pyarrow as pa

    spath = str(path)
    text = set(nominal or ())
    types: dict = {}
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            types = {str(f.name): f.type for f in pq.ParquetFile(_parquet_source(spath)).schema_arrow}
        elif info is not None and info.types:
            types = dict(info.types)
        else:
            sep = _csv_sep(spath, read_options)
            names, header = csv_columns(spath, sep, read_options.get("header"))
            for batch in csv_batches(spath, sep, names, {}, csv_block(None, info.longest if info else 0),
                                     header=header):
                types = {f.name: f.type for f in batch.schema}
                break
    except _Untyped as exc:  # dates and times: read as text
        text.update(exc.columns)
    except (pa.ArrowException, OSError):
        pass  # the reader reported (or will report) what is wrong with the file
    kinds = {}
    for c in features:
        t = types.get(c)
        if t is not None and pa.types.is_dictionary(t):
            t = t.value_type
        kinds[c] = ("text" if c in text else
                    "boolean" if t is not None and pa.types.is_boolean(t) else "number")
    return kinds


def check_same_kinds(first: str, first_kinds: dict[str, str], path: str, kinds: dict[str, str]) -> None:
    """Refuse a shard ``path`` whose column kinds (:func:`column_kinds`) differ from those of
    the first shard, in one line naming both files and the column."""
    for c, k in kinds.items():
        k0 = first_kinds.get(c, k)
        if k != k0:
            raise DatasetError(f"column {c!r} holds {k} values here but {k0} values in {first}; the shards of a "
                               "dataset must give each column one type (convert it in one of them)", path=path)


def table_chunks(path: str, fmt: str, info: TableInfo, chunk_rows: int | None = None,
                 chunk_bytes: int | None = None, **read_options):
    """``(X, Y)`` of a numeric CSV or Parquet file in batches of at most ``chunk_rows`` rows (or
    ``chunk_bytes`` of CSV text), with the whole-file readers' parsers (pyarrow's streaming
    readers, each CSV column in the type :func:`table_columns` settled); the checks of the
    whole-file reader (missing and infinite values, binary labels) with file and line."""
    import pyarrow as pa

    spath = str(path)
    features, label_cols = info.features, info.labels
    row = 0
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(_parquet_source(spath))
            batches = pf.iter_batches(batch_size=chunk_rows or 65536, columns=features + label_cols)
            offset = None  # Parquet has no lines
        else:
            sep = _csv_sep(spath, read_options)
            batches = csv_batches(spath, sep, list(info.types), info.types, csv_block(chunk_bytes, info.longest),
                                  header=info.header)
            offset = 1 + info.header  # data row r is on line r + 2 (r + 1 without a header)
        for batch in batches:
            n = batch.num_rows
            step = chunk_rows or max(n, 1)
            for a in range(0, n, step):
                part = batch.slice(a, min(step, n - a))
                yield _batch_arrays(part, features, label_cols, spath,
                                    None if offset is None else offset + row)
                row += part.num_rows
    except (pa.ArrowException, OSError, _Untyped) as exc:
        raise DatasetError(f"cannot read {fmt} (did it change since it was first read?): "
                           f"{' '.join(str(exc).split())}", path=spath) from None


def _batch_arrays(batch, features: list[str], label_cols: list[str], path: str, row_offset: int | None):
    n = batch.num_rows
    # the whole-file reader's order of checks: labels, then feature values
    Ycols = [batch.column(c).to_numpy(zero_copy_only=False) for c in label_cols]
    Y = _binary_labels(np.column_stack(Ycols) if Ycols else np.zeros((n, 0)), label_cols, path, row_offset)
    X = np.empty((n, len(features)), dtype=np.float64)
    for j, c in enumerate(features):
        X[:, j] = batch.column(c).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    finite = np.isfinite(X)
    if not finite.all():
        r, cidx = np.argwhere(~finite)[0]
        what = "missing value" if np.isnan(X[r, cidx]) else "infinite value"
        raise DatasetError(f"{what} in column {features[cidx]!r}", path=path, line=_line(row_offset, r))
    return X, sp.csr_matrix(Y)
