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
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, detect_id_columns
from coreselect.io.labels import resolve_label_spec
from coreselect.io import text as _text
from coreselect.io.text import line_too_long, open_binary, stem

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


def _scan_header(path: str, sep: str, whole: bool = True, progress=None, block: int = 1 << 20) -> int:
    """The checks that must run before the parser sees a CSV: width (counted as the header
    streams in), duplicate names, a data row after the header; with ``whole``, the memory
    a dense read of the whole file needs. One pass over the (decoded) bytes, ``block`` at a
    time; ``progress(n)`` is called with the bytes of each block. Returns the lines counted
    and the bytes of the longest line (after the header's first block)."""
    limit = MAX_COLUMNS
    block = max(int(block), 1 << 10)
    head = bytearray()
    bsep = sep.encode()
    n_sep = 0
    with open_binary(path) as fh:
        rest = b""
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            if progress is not None:
                progress(len(chunk))
            nl = chunk.find(b"\n")
            part = chunk if nl < 0 else chunk[:nl]
            n_sep += part.count(bsep)
            if n_sep + 1 > limit:
                raise DatasetError(
                    f"the header declares more than {limit} columns; refusing (tables are read dense: "
                    "write wide data as LIBSVM or sparse ARFF)", path=path, line=1)
            head += part
            if len(head) > _text.MAX_LINE_BYTES:
                raise line_too_long(head, path, 1)
            if nl >= 0:
                rest = chunk[nl + 1:]
                break
        while not rest.strip():  # blank lines after the header (or a header ending a chunk)
            more = fh.read(1 << 16)
            if not more:
                break
            if progress is not None:
                progress(len(more))
            rest = more
        has_row = bool(rest.strip())
        # Count the cells of the whole (decoded) stream before pandas holds any of it: a
        # decompression bomb fails here at the size cap with ~1 MiB in memory, and a table
        # too big for memory is refused by its cell count.
        rows, seps = 1 + rest.count(b"\n"), n_sep + rest.count(bsep)
        # the longest line (the parser's blocks must hold one): a vector pass per block
        longest, last = len(head) + 1, -1
        pos = 0
        chunk = rest
        lines, opening = 1, b""  # newlines so far; the first bytes of the line still open
        while True:
            ends = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10) + pos
            if len(ends):
                longest = max(longest, int(ends[0] - last), int(np.diff(ends).max(initial=0)))
                last = int(ends[-1])
                lines += len(ends)
                opening = bytes(chunk[last - pos + 1:last - pos + 81])
            elif len(opening) < 80:
                opening += chunk[:80 - len(opening)]
            pos += len(chunk)
            if pos - last > _text.MAX_LINE_BYTES:  # refused while it streams in, not at the end
                raise line_too_long(opening, path, lines + 1)
            chunk = fh.read(block)
            if not chunk:
                break
            if progress is not None:
                progress(len(chunk))
            rows += chunk.count(b"\n")
            seps += chunk.count(bsep)
        longest = max(longest, pos - last)
    if longest > _text.MAX_LINE_BYTES:  # pyarrow's blocks would hold two of it
        raise line_too_long(None, path, None)
    if whole:
        _check_cells(rows + seps, path, "the file holds about")
    try:  # pyarrow hands the names back as UTF-8 (a decode error, untyped, otherwise)
        bytes(head).decode("utf-8")
    except UnicodeDecodeError:
        raise DatasetError("the header holds bytes that are not UTF-8 text", path=path, line=1) from None
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
    return rows, longest


#: pandas' default missing-value markers (pyarrow reads them as nulls, as pandas did).
_NA_VALUES = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
              "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
_CSV_BLOCK = 16 << 20


def _csv_sep(spath: str, read_options: dict) -> str:
    unknown = set(read_options) - {"sep", "delimiter"}
    if unknown:
        raise DatasetError(f"unknown CSV read option(s): {', '.join(sorted(unknown))} (CSV files are read with "
                           "pyarrow; only sep= applies)", path=spath)
    sep = read_options.get("sep", read_options.get("delimiter", ","))
    if not isinstance(sep, str) or len(sep) != 1 or sep in "\r\n\"":
        raise DatasetError(f"sep must be one character (not a quote or a line end), not {sep!r}", path=spath)
    return sep


def _csv_names(spath: str, sep: str) -> list[str]:
    """The header's column names (a quoted name may span lines)."""
    import io

    with open_binary(spath) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")
        try:
            return next(csv.reader(text, delimiter=sep))
        except (csv.Error, StopIteration) as exc:
            raise DatasetError(f"malformed header: {exc}", path=spath, line=1) from None


def csv_block(chunk_bytes: int | None, longest: int) -> int:
    """The parser's block: ``chunk_bytes`` (16 MiB by default), but at least two of the
    longest line (pyarrow's blocks hold whole rows; the first holds the header and a row)."""
    return max(int(chunk_bytes or _CSV_BLOCK), 2 * int(longest) + 1024)


def _retype(exc: Exception, names: list[str], types: dict) -> bool:
    """After a conversion error in a column, the next type to try for it: inferred integers
    or nulls become float64, float64 becomes text (what pandas read); False when none is left."""
    import re

    import pyarrow as pa

    m = re.search(r"In CSV column #(\d+): CSV conversion error to (\w+)", str(exc))
    if m is None or int(m.group(1)) >= len(names):
        return False
    c = names[int(m.group(1))]
    now = types.get(c)
    to = m.group(2)
    if now is None and to in ("int64", "null"):
        types[c] = pa.float64()
    elif now is None or pa.types.is_floating(now) or pa.types.is_boolean(now):
        types[c] = pa.string()
    else:
        return False
    return True


def _widen_or_fail(exc: Exception, names: list[str], types: dict, spath: str) -> None:
    """After pyarrow failed reading a CSV: widen the type of the column a conversion error
    names (:func:`_retype`; the caller reads again), or raise the one-line DatasetError."""
    import pyarrow as pa

    if isinstance(exc, (pa.ArrowInvalid, pa.ArrowNotImplementedError)) and _retype(exc, names, types):
        return
    raise DatasetError(f"cannot parse CSV: {' '.join(str(exc).split())}", path=spath) from None


def csv_batches(spath: str, sep: str, names: list[str], types: dict, chunk_bytes: int | None = None,
                include: list[str] | None = None):
    """pyarrow record batches of a CSV file (``open_csv``, ``chunk_bytes`` of text at a time),
    with pandas' missing-value markers and booleans: a column is typed by ``types`` (name ->
    Arrow type), else inferred from the first block."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    with open_binary(spath) as fh:
        reader = pcsv.open_csv(
            fh, read_options=pcsv.ReadOptions(block_size=max(int(chunk_bytes or _CSV_BLOCK), 1 << 10),
                                              use_threads=False),
            parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(
                column_types=types, null_values=_NA_VALUES, strings_can_be_null=True,
                quoted_strings_can_be_null=True, true_values=["True", "TRUE", "true"],
                false_values=["False", "FALSE", "false"], timestamp_parsers=[], include_columns=include))
        for batch in reader:
            bad = [f.name for f in batch.schema if not (
                pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_boolean(f.type)
                or pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_null(f.type))]
            if bad:  # inferred dates or times: text, as pandas read them
                raise _Untyped(bad)
            yield batch


class _Untyped(Exception):
    def __init__(self, columns: list[str]):
        super().__init__(", ".join(columns))
        self.columns = columns


def csv_table(spath: str, sep: str, names: list[str], chunk_bytes: int | None = None,
              types: dict | None = None):
    """The whole CSV as an Arrow table: its :func:`csv_batches` concatenated, each column's
    type widened (integer, float, text) and the read restarted where a later block holds a
    value the first block's type cannot (the restart reads only up to that block). Returns
    the table and the types it settled on (for later streamed passes)."""
    import pyarrow as pa

    types = dict(types or {})
    for _ in range(3 * len(names) + 2):
        batches = []
        try:
            for b in csv_batches(spath, sep, names, types, chunk_bytes):
                batches.append(b)
        except _Untyped as exc:
            types.update({c: pa.string() for c in exc.columns})
            continue
        except pa.ArrowException as exc:
            _widen_or_fail(exc, names, types, spath)
            continue
        except UnicodeDecodeError:
            raise DatasetError("the CSV holds bytes that are not UTF-8 text", path=spath) from None
        if not batches:
            raise DatasetError("a CSV dataset needs a header and at least one row of two or more columns", path=spath)
        final = {f.name: (pa.float64() if pa.types.is_null(f.type) else f.type) for f in batches[0].schema}
        table = pa.Table.from_batches(batches)
        for k, f in enumerate(table.schema):
            if pa.types.is_null(f.type):  # every cell missing: a float column of NaN, as pandas read it
                table = table.set_column(k, f.name, table.column(k).cast(pa.float64()))
        return table, final
    raise DatasetError("cannot settle the column types", path=spath)  # pragma: no cover


def read_csv(path: str | os.PathLike, labels: Any = None, name: str | None = None,
             chunk_bytes: int | None = None, **read_options) -> Dataset:
    """Read a CSV file (header row of column names) into a dense Dataset.

    The text is parsed by pyarrow's streaming reader (``open_csv``, ``chunk_bytes`` at a
    time, 16 MiB by default) and its blocks concatenated: the chunked reads
    (:mod:`coreselect.io.chunks`) use the same parser. Cells read as pandas read them:
    its missing-value markers (``NA``, ``nan``, empty, ...) are missing, ``True``/``False``
    columns are booleans, a column with a cell that is not a number is text.

    Parameters
    ----------
    path : path-like
        ``.csv``, or compressed ``.csv.gz``/``.csv.bz2``/``.csv.xz`` (decoded as a stream).
    labels : list of str, int or str
        Label columns (see module docs).
    name : str, optional
    chunk_bytes : int, optional
        Text parsed at once (the result does not depend on it).
    **read_options
        ``sep`` (or ``delimiter``): the one-character separator.
    """
    import pandas  # noqa: F401  (loaded before the memory check, which counts what is loaded)
    import pyarrow.csv  # noqa: F401

    spath = str(path)
    sep = _csv_sep(spath, read_options)
    _rows, longest = _scan_header(spath, sep)
    names = _csv_names(spath, sep)
    if len(names) > MAX_COLUMNS:
        raise DatasetError(f"{len(names)} columns; coreselect reads at most {MAX_COLUMNS} from a table", path=spath)
    if len(set(names)) != len(names):
        dup = next(c for k, c in enumerate(names) if c in names[:k])
        raise DatasetError(f"column {dup!r} appears twice", path=spath, line=1)
    table, _types = csv_table(spath, sep, names, csv_block(chunk_bytes, longest))
    df = _to_frame(table, spath)
    if df.shape[1] < 2 or len(df) == 0:
        raise DatasetError("a CSV dataset needs a header and at least one row of two or more columns", path=spath)
    cols = list(map(str, df.columns))
    idx, prov = resolve_label_spec(cols, labels, spath)
    # Data row r is on line r + 2 (line 1 is the header).
    return _frame_to_dataset(df, [cols[i] for i in idx], spath, name or stem(spath, (".csv",)), 2,
                             {"format": "csv", "source": spath, **prov})


def _to_frame(table, spath: str):
    import pyarrow as pa

    try:
        return table.to_pandas()
    except (pa.ArrowException, ValueError) as exc:
        raise DatasetError(f"cannot read the table: {' '.join(str(exc).split())}", path=spath) from None


def _is_url(spath: str) -> bool:
    return "://" in spath and not spath.lower().startswith("file://")


def _parquet_source(spath: str):
    """What pyarrow opens: the path, or for an fsspec URL (s3://, memory://) a file object."""
    if not _is_url(spath):
        from coreselect.io.text import check_regular_input

        check_regular_input(spath)  # pyarrow would open a FIFO and wait
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


def read_parquet(path: str | os.PathLike, labels: Any = None, name: str | None = None,
                 chunk_rows: int | None = None) -> Dataset:
    """Read a Parquet file into a dense Dataset (labels default to those coreselect recorded).

    The file is read as pyarrow's row batches (``ParquetFile.iter_batches``, ``chunk_rows``
    rows each, 65536 by default) concatenated, the reader of the chunked reads; the result
    does not depend on ``chunk_rows``."""
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
        # The row batches of the streamed reads (table_chunks), concatenated: one reader.
        table = pa.Table.from_batches(list(pf.iter_batches(batch_size=max(int(chunk_rows or 65536), 1))),
                                      schema=pf.schema_arrow)
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
    _rows, longest = _scan_header(spath, sep, whole=False, progress=progress, block=scan_block)
    cols = _csv_names(spath, sep)
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
            for batch in csv_batches(spath, sep, cols, types, block):
                schema = {f.name: f.type for f in batch.schema}
                if not all(_is_numeric_type(schema[c]) for c in features) or not all(
                        _is_numeric_type(schema[c]) or pa.types.is_boolean(schema[c]) for c in label_cols):
                    return TableInfo(features, label_cols, False)
                _batch_arrays(batch, features, label_cols, spath, 2 + rows)  # the checks, with lines
                rows += batch.num_rows
        except _Untyped:
            return TableInfo(features, label_cols, False)
        except pa.ArrowException as exc:
            _widen_or_fail(exc, cols, types, spath)
            continue
        if rows == 0:
            raise DatasetError("a CSV dataset needs a header and at least one row of two or more columns", path=spath)
        settled = {c: (pa.float64() if pa.types.is_null(t) else t) for c, t in schema.items()}
        return TableInfo(features, label_cols, True, rows, settled, longest)
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
            names = _csv_names(spath, sep)
            for batch in csv_batches(spath, sep, names, {}, csv_block(None, info.longest if info else 0)):
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
            batches = csv_batches(spath, sep, list(info.types), info.types, csv_block(chunk_bytes, info.longest))
            offset = 2  # data row r is on line r + 2
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
