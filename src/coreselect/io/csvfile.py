"""The CSV reader: the header and size checks made on the text as it streams in, the
header decided (a first row of numbers only is data), pyarrow's streaming parser with each
column's type widened as later blocks demand (see :mod:`coreselect.io.tabular`)."""

from __future__ import annotations

import csv
import logging
import os
from typing import Any

import numpy as np

from coreselect.errors import DatasetError
from coreselect.io import text as _text
from coreselect.io._table_common import MAX_COLUMNS, _check_cells, _frame_to_dataset
from coreselect.io.dataset import Dataset
from coreselect.io.labels import resolve_label_spec
from coreselect.io.text import line_too_long, open_binary, stem

log = logging.getLogger("coreselect.io.tabular")  # the tables' logger, as before the split

def _scan_header(path: str, sep: str, whole: bool = True, progress=None, block: int = 1 << 20,
                 header: bool = True) -> int:
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
    if header and text.count('"') % 2 == 0:  # else a quoted name spans lines: pandas parses it
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
    unknown = set(read_options) - {"sep", "delimiter", "header"}
    if unknown:
        raise DatasetError(f"unknown CSV read option(s): {', '.join(sorted(unknown))} (CSV files are read with "
                           "pyarrow; only sep= and header= apply)", path=spath)
    if read_options.get("header") not in (None, True, False):
        raise DatasetError(f"header must be True, False or None (decide from the first row), not "
                           f"{read_options['header']!r}", path=spath)
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
        except StopIteration:
            raise DatasetError("empty file", path=spath, line=1) from None
        except csv.Error as exc:
            raise DatasetError(f"malformed header: {exc}", path=spath, line=1) from None


def _all_numbers(cells: list[str]) -> bool:
    from coreselect.io.text import parse_number

    for cell in cells:
        try:
            parse_number(cell)
        except ValueError:
            return False
    return True


_TOLD_NO_HEADER: set[str] = set()


def csv_columns(spath: str, sep: str, header: bool | None = None) -> tuple[list[str], bool]:
    """The column names and whether the first row is a header. ``header=None`` decides: a
    first row of numbers only is data (the columns are named ``x0``, ``x1``, ...; said once
    per file in a warning), anything else is the header. ``False``: no header; ``True``: the
    first row names the columns whatever it holds."""
    first = _csv_names(spath, sep)
    has = bool(header) if header is not None else not _all_numbers(first)
    if has:
        return first, True
    if header is None and spath not in _TOLD_NO_HEADER:
        _TOLD_NO_HEADER.add(spath)
        log.warning("%s: the first row holds numbers only: read as data, not as column names (columns x0 to "
                    "x%d; --header (header=True) reads it as names)", spath, len(first) - 1)
    return [f"x{j}" for j in range(len(first))], False


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
                include: list[str] | None = None, header: bool = True):
    """pyarrow record batches of a CSV file (``open_csv``, ``chunk_bytes`` of text at a time),
    with pandas' missing-value markers and booleans: a column is typed by ``types`` (name ->
    Arrow type), else inferred from the first block. ``header=False``: the first row is data,
    the columns are ``names``."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    with open_binary(spath) as fh:
        reader = pcsv.open_csv(
            fh, read_options=pcsv.ReadOptions(block_size=max(int(chunk_bytes or _CSV_BLOCK), 1 << 10),
                                              use_threads=False, column_names=None if header else names),
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
              types: dict | None = None, header: bool = True):
    """The whole CSV as an Arrow table: its :func:`csv_batches` concatenated, each column's
    type widened (integer, float, text) and the read restarted where a later block holds a
    value the first block's type cannot (the restart reads only up to that block). Returns
    the table and the types it settled on (for later streamed passes)."""
    import pyarrow as pa

    types = dict(types or {})
    for _ in range(3 * len(names) + 2):
        batches = []
        try:
            for b in csv_batches(spath, sep, names, types, chunk_bytes, header=header):
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
    """Read a CSV file (a header row of column names, or none) into a dense Dataset.

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
        ``sep`` (or ``delimiter``): the one-character separator. ``header``: None (default)
        reads a first row of numbers only as data, with a warning, and any other first row
        as the column names; False: the first row is data; True: it is the header. Without
        a header the columns are named ``x0``, ``x1``, ...
    """
    import pandas  # noqa: F401  (loaded before the memory check, which counts what is loaded)
    import pyarrow.csv  # noqa: F401

    spath = str(path)
    sep = _csv_sep(spath, read_options)
    names, header = csv_columns(spath, sep, read_options.get("header"))
    _rows, longest = _scan_header(spath, sep, header=header)
    if len(names) > MAX_COLUMNS:
        raise DatasetError(f"{len(names)} columns; coreselect reads at most {MAX_COLUMNS} from a table", path=spath)
    if len(set(names)) != len(names):
        dup = next(c for k, c in enumerate(names) if c in names[:k])
        raise DatasetError(f"column {dup!r} appears twice", path=spath, line=1)
    table, _types = csv_table(spath, sep, names, csv_block(chunk_bytes, longest), header=header)
    df = _to_frame(table, spath)
    if df.shape[1] < 2 or len(df) == 0:
        raise DatasetError("a CSV dataset needs a header and at least one row of two or more columns", path=spath)
    cols = list(map(str, df.columns))
    idx, prov = resolve_label_spec(cols, labels, spath)
    # Data row r is on line r + 2 (line 1 is the header), r + 1 without a header.
    return _frame_to_dataset(df, [cols[i] for i in idx], spath, name or stem(spath, (".csv",)), 1 + header,
                             {"format": "csv", "source": spath, **prov})


def _to_frame(table, spath: str):
    import pyarrow as pa

    try:
        return table.to_pandas()
    except (pa.ArrowException, ValueError) as exc:
        raise DatasetError(f"cannot read the table: {' '.join(str(exc).split())}", path=spath) from None
