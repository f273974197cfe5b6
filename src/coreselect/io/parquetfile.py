"""The Parquet reader: the footer's checks (scalar columns, declared cells against the
file's bytes and the memory left), then pyarrow's row batches (see
:mod:`coreselect.io.tabular`)."""

from __future__ import annotations

import json
import os
from typing import Any

from coreselect.errors import DatasetError
from coreselect.io._table_common import (
    _CELL_FLOOR, _META_KEY, MAX_CELLS_PER_BYTE, MAX_COLUMNS, _check_cells, _frame_to_dataset,
)
from coreselect.io.dataset import Dataset
from coreselect.io.labels import resolve_label_spec
from coreselect.io.text import stem

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
