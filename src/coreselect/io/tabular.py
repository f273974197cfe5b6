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

import csv
import json
import os
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, detect_id_columns
from coreselect.io.labels import resolve_label_spec
from coreselect.io.text import open_binary, stem

__all__ = ["read_csv", "read_parquet", "write_csv", "write_parquet", "from_arrays", "resolve_labels"]

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


def _scan_header(path: str, sep: str) -> None:
    """The checks that must run before pandas sees a CSV: width (counted as the header
    streams in), duplicate names, a data row after the header."""
    limit = MAX_COLUMNS
    head = bytearray()
    bsep = sep.encode()
    n_sep = 0
    with open_binary(path) as fh:
        rest = b""
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            nl = chunk.find(b"\n")
            part = chunk if nl < 0 else chunk[:nl]
            n_sep += part.count(bsep)
            if n_sep + 1 > limit:
                raise DatasetError(
                    f"the header declares more than {limit} columns; refusing (tables are read dense: "
                    "write wide data as LIBSVM or sparse ARFF)", path=path, line=1)
            head += part
            if nl >= 0:
                rest = chunk[nl + 1:]
                break
        while not rest.strip():  # blank lines after the header (or a header ending a chunk)
            more = fh.read(1 << 16)
            if not more:
                break
            rest = more
        has_row = bool(rest.strip())
        # Count the cells of the whole (decoded) stream before pandas holds any of it: a
        # decompression bomb fails here at the size cap with ~1 MiB in memory, and a table
        # too big for memory is refused by its cell count.
        rows, seps = 1 + rest.count(b"\n"), n_sep + rest.count(bsep)
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            rows += chunk.count(b"\n")
            seps += chunk.count(bsep)
    _check_cells(rows + seps, path, "the file holds about")
    text = bytes(head).decode("utf-8", errors="replace").rstrip("\r")
    if not text.strip():
        raise DatasetError("empty file", path=path, line=1)
    if text.count('"') % 2 == 0:  # else a quoted name spans lines: pandas parses it
        try:
            names = next(csv.reader([text], delimiter=sep))
        except csv.Error as exc:
            raise DatasetError(f"malformed header: {exc}", path=path, line=1) from None
        seen: set[str] = set()
        for nm in names:
            if nm in seen:
                raise DatasetError(f"column {nm!r} appears twice", path=path, line=1)
            seen.add(nm)
        if not has_row:
            raise DatasetError(f"a CSV dataset needs a data row after its header of {len(names)} columns",
                               path=path, line=1)


def read_csv(path: str | os.PathLike, labels: Any = None, name: str | None = None, **read_options) -> Dataset:
    """Read a CSV file (header row of column names) into a dense Dataset.

    Parameters
    ----------
    path : path-like
        ``.csv``, or compressed ``.csv.gz``/``.csv.bz2``/``.csv.xz`` (decoded as a stream).
    labels : list of str, int or str
        Label columns (see module docs).
    name : str, optional
    **read_options
        Passed to :func:`pandas.read_csv` (``sep``, ...).
    """
    import pandas as pd

    spath = str(path)
    if int(pd.__version__.split(".")[0]) < 3:
        read_options.setdefault("float_precision", "round_trip")  # exact float round trips (pandas 3 default)
    sep = read_options.get("sep", read_options.get("delimiter", ","))
    if "compression" not in read_options and isinstance(sep, str) and len(sep) == 1:
        _scan_header(spath, sep)
    try:
        if "compression" in read_options:
            df = pd.read_csv(spath, **read_options)
        else:
            with open_binary(spath) as fh:
                df = pd.read_csv(fh, **read_options)
    except FileNotFoundError:
        raise DatasetError("no such file", path=spath) from None
    except pd.errors.EmptyDataError:
        raise DatasetError("empty file", path=spath, line=1) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError, EOFError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"cannot parse CSV: {' '.join(str(exc).split())}", path=spath) from None
    if df.shape[1] > MAX_COLUMNS:
        raise DatasetError(f"{df.shape[1]} columns; coreselect reads at most {MAX_COLUMNS} from a table", path=spath)
    if df.shape[1] < 2 or len(df) == 0:
        raise DatasetError("a CSV dataset needs a header and at least one row of two or more columns", path=spath)
    cols = list(map(str, df.columns))
    idx, prov = resolve_label_spec(cols, labels, spath)
    # Data row r is on line r + 2 (line 1 is the header).
    return _frame_to_dataset(df, [cols[i] for i in idx], spath, name or stem(spath, (".csv",)), 2,
                             {"format": "csv", "source": spath, **prov})


def _is_url(spath: str) -> bool:
    return "://" in spath and not spath.lower().startswith("file://")


def _parquet_source(spath: str):
    """What pyarrow opens: the path, or for an fsspec URL (s3://, memory://) a file object."""
    if not _is_url(spath):
        return spath
    from coreselect.io.text import url_fs

    fs, root = url_fs(spath)
    try:
        return fs.open(root, "rb")
    except FileNotFoundError:
        raise DatasetError("no such file", path=spath) from None
    except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own types
        raise DatasetError(f"cannot read the file: {' '.join(str(exc).split()) or type(exc).__name__}",
                           path=spath) from None


def _size(spath: str) -> int:
    if not _is_url(spath):
        return os.path.getsize(spath)
    from coreselect.io.text import url_fs

    fs, root = url_fs(spath)
    return int(fs.size(root) or 0)


def _scalar_type(t) -> bool:
    """Whether an Arrow type reads as one number or one text per cell."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return _scalar_type(t.value_type)
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t) or pa.types.is_null(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t))


def read_parquet(path: str | os.PathLike, labels: Any = None, name: str | None = None) -> Dataset:
    """Read a Parquet file into a dense Dataset (labels default to those coreselect recorded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    spath = str(path)
    try:
        pf = pq.ParquetFile(_parquet_source(spath))
        width = pf.metadata.num_columns
        if width > MAX_COLUMNS:
            raise DatasetError(f"{width} columns; coreselect reads at most {MAX_COLUMNS} from a table", path=spath)
        for field in pf.schema_arrow:
            if not _scalar_type(field.type):
                raise DatasetError(f"column {field.name!r} has the non-scalar type {field.type}; "
                                   "features and labels must be numbers, booleans or text", path=spath)
        md0 = pf.metadata
        rows = max(md0.num_rows, sum(md0.row_group(i).num_rows for i in range(md0.num_row_groups)))
        cells = rows * max(width, 1)
        size = _size(spath)
        if cells > _CELL_FLOOR and cells > MAX_CELLS_PER_BYTE * size:
            raise DatasetError(f"declares {rows} rows x {width} columns in {size} bytes; refusing "
                               "(a run-length or forged-footer bomb?)", path=spath)
        _check_cells(cells, spath, "declares")
        table = pf.read()
        md = table.schema.metadata or {}
        prov: dict = {}
        if labels is None and _META_KEY in md:
            try:
                labels = json.loads(md[_META_KEY])
                prov = {"label_source": "schema"}
            except ValueError:  # includes UnicodeDecodeError
                labels = None
        for field, column in zip(table.schema, table.columns):
            if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
                try:
                    for chunk in column.chunks:
                        chunk.validate(full=True)  # checks UTF-8 (pandas would fail later, lazily)
                except pa.ArrowInvalid:
                    raise DatasetError(f"column {field.name!r} holds text that is not valid UTF-8",
                                       path=spath) from None
        df = table.to_pandas()
    except FileNotFoundError:
        raise DatasetError("no such file", path=spath) from None
    except IsADirectoryError:
        raise DatasetError("is a directory, not a data file", path=spath) from None
    except (pa.ArrowException, OSError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"cannot read Parquet: {' '.join(str(exc).split())}", path=spath) from None
    if df.shape[1] < 2 or len(df) == 0:
        raise DatasetError("a Parquet dataset needs at least one row of two or more columns", path=spath)
    cols = list(map(str, df.columns))
    if labels is not None and not prov:
        idx, prov = resolve_label_spec(cols, labels, spath)
    else:
        idx, _ = resolve_label_spec(cols, labels, spath)
    try:
        return _frame_to_dataset(
            df, [cols[i] for i in idx], spath, name or stem(spath, (".parquet", ".pq")), None,
            {"format": "parquet", "source": spath, **prov}
        )
    except (pa.ArrowException, UnicodeDecodeError) as exc:  # lazily converted Arrow columns
        raise DatasetError(f"cannot read Parquet: {' '.join(str(exc).split())}", path=spath) from None


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
    from coreselect.files import atomic_path

    df = to_frame(dataset)
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format=None)


def write_parquet(dataset: Dataset, path: str | os.PathLike) -> None:
    """Write features then labels as Parquet; the label names go into the schema metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from coreselect.files import atomic_path

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

class NotStreamable(Exception):
    """A table that :func:`table_chunks` cannot stream (a text or boolean feature column, a
    cell that is not a number, pandas-only read options): the caller reads it whole."""


def _is_numeric_type(t) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t) or pa.types.is_decimal(t)


def table_columns(path: str, fmt: str, labels: Any = None, **read_options) -> tuple[list[str], list[str], bool]:
    """``(feature names, label names, streamable)`` of a CSV or Parquet file, from its header
    or footer (and the checks the whole-file reader makes there)."""
    import pyarrow as pa

    spath = str(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

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
        streamable = not read_options and all(_is_numeric_type(types[c]) for c in cols if c not in set(label_cols))
        streamable = streamable and all(_is_numeric_type(types[c]) or pa.types.is_boolean(types[c])
                                        for c in label_cols)
        return [c for c in cols if c not in set(label_cols)], label_cols, streamable
    sep = read_options.get("sep", read_options.get("delimiter", ","))
    if isinstance(sep, str) and len(sep) == 1:
        _scan_header(spath, sep)
    with open_binary(spath) as fh:
        head = fh.readline(1 << 24).decode("utf-8", errors="replace").rstrip("\r\n")
    try:
        cols = next(csv.reader([head], delimiter=sep)) if isinstance(sep, str) and len(sep) == 1 else []
    except csv.Error as exc:
        raise DatasetError(f"malformed header: {exc}", path=spath, line=1) from None
    idx, _ = resolve_label_spec(cols, labels, spath)
    label_cols = [cols[i] for i in idx]
    streamable = set(read_options) <= {"sep", "delimiter"} and '"' not in head
    return [c for c in cols if c not in set(label_cols)], label_cols, streamable


def table_chunks(path: str, fmt: str, features: list[str], label_cols: list[str], chunk_rows: int | None = None,
                 chunk_bytes: int | None = None, **read_options):
    """``(X, Y)`` of a numeric CSV or Parquet file in batches of at most ``chunk_rows`` rows (or
    ``chunk_bytes`` of CSV text), with pyarrow's streaming readers; the checks of the
    whole-file reader (missing and infinite values, binary labels) with file and line.
    Raises :class:`NotStreamable` for what only the whole-file reader reads."""
    import pyarrow as pa

    import contextlib

    spath = str(path)
    row = 0
    stack = contextlib.ExitStack()
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(_parquet_source(spath))
            batches = pf.iter_batches(batch_size=chunk_rows or 65536, columns=features + label_cols)
            offset = None  # Parquet has no lines
        else:
            import pyarrow.csv as pcsv

            sep = read_options.get("sep", read_options.get("delimiter", ","))
            names = features + label_cols
            fh = stack.enter_context(open_binary(spath))
            batches = pcsv.open_csv(
                fh, read_options=pcsv.ReadOptions(block_size=chunk_bytes or (16 << 20)),
                parse_options=pcsv.ParseOptions(delimiter=sep),
                convert_options=pcsv.ConvertOptions(column_types={c: pa.float64() for c in features},
                                                    include_columns=names))
            offset = 2  # data row r is on line r + 2
        for batch in batches:
            n = batch.num_rows
            step = chunk_rows or max(n, 1)
            for a in range(0, n, step):
                part = batch.slice(a, min(step, n - a))
                yield _batch_arrays(part, features, label_cols, spath,
                                    None if offset is None else offset + row)
                row += part.num_rows
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        if "conversion" in str(exc).lower() or "CSV" in str(exc) or "parse" in str(exc).lower():
            raise NotStreamable(str(exc)) from None
        raise DatasetError(f"cannot read {fmt}: {' '.join(str(exc).split())}", path=spath) from None
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"cannot read {fmt}: {' '.join(str(exc).split())}", path=spath) from None
    finally:
        stack.close()


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
