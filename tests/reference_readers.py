"""The readers as they were before the streaming parsers (commit 756eea9): the slow, obviously
correct references that tests/test_io_chunks.py checks the chunked readers against."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, IndexedNames, check_declared_width
from coreselect.io.text import fast_numbers, open_text, parse_number, stem

__all__ = ["read_libsvm", "read_arff", "read_csv", "read_parquet"]

LIBSVM_SUFFIXES = (".svm", ".libsvm", ".txt", ".svmlight")
_DENSE_Y_CELLS = 50_000_000  # more label cells than this: Y stays sparse (extreme classification)
_TWO_COLONS_RE = re.compile(r":[^\s:]*:")


def _is_header(line: str) -> tuple[int, int, int] | None:
    parts = line.split()
    if len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1]), int(parts[2])
    return None


def read_libsvm(
    path: str | os.PathLike,
    zero_based: bool | str = "auto",
    n_features: int | None = None,
    n_labels: int | None = None,
    name: str | None = None,
) -> Dataset:
    """Read a multi-label LIBSVM/SVMlight file into a Dataset with a CSR ``X``.

    Parameters
    ----------
    path : path-like
        The file (``.gz``/``.bz2`` allowed).
    zero_based : bool or "auto"
        Index base of features and labels; ``"auto"`` follows the rules in the module docs.
    n_features, n_labels : int, optional
        Shape when neither the header nor the data give it (trailing all-zero columns).
    name : str, optional
        Dataset name; defaults to the file stem.

    Returns
    -------
    Dataset
        Features named ``f0..``, labels ``l0..`` (in 0-based numbering).
    """
    spath = str(path)
    text = open_text(spath)
    lines = text.split("\n")
    if lines and lines[-1].strip() == "":
        lines.pop()  # the text after the final newline is not a line
    header = None
    rows: list[str] = []
    row_lines: list[int] = []
    blank: list[bool] = []
    for i, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if stripped.startswith("#"):
            continue
        s = raw.split("#", 1)[0].strip()
        if header is None and not rows and s:
            h = _is_header(s)
            if h is not None:
                header = h
                continue
        rows.append(s)
        row_lines.append(i)
        blank.append(not s)
    # A blank line is an instance with neither labels nor features only when a header
    # announces it; otherwise (and past the announced count) blank lines are skipped.
    if header is None:
        keep = [k for k, b in enumerate(blank) if not b]
        rows = [rows[k] for k in keep]
        row_lines = [row_lines[k] for k in keep]
    else:
        while rows and blank[len(rows) - 1] and len(rows) > header[0]:
            rows.pop()
            row_lines.pop()
    if header is None and not rows:
        raise DatasetError("empty file", spath, 1)
    n = len(rows)
    label_parts: list[str] = []
    feat_parts: list[str] = []
    counts = np.zeros(n, dtype=np.int64)
    for k, s in enumerate(rows):
        first, _, rest = s.partition(" ")
        if ":" in first:
            label_parts.append("")
            feat = s
        else:
            label_parts.append(first)
            feat = rest
        counts[k] = feat.count(":")
        feat_parts.append(feat)
    # Features: "i:v i:v ..." -> one C pass over all lines, when every token is one "i:v"
    # (as many tokens as colons, none with two); else the token path reports the line.
    joined = " ".join(feat_parts)
    total = int(counts.sum())
    arr = None
    if not total:
        arr = np.empty(0)
    elif len(joined.split()) == total and not _TWO_COLONS_RE.search(joined):
        arr = fast_numbers(joined.replace(":", " "), " ", 2 * total)
    if arr is None or not (np.abs(arr[0::2]) < 2**53).all() or not np.array_equal(arr[0::2], np.floor(arr[0::2])):
        _diagnose_features(feat_parts, row_lines, spath)
        raise DatasetError("malformed feature list", spath)  # pragma: no cover
    idx = arr[0::2].astype(np.int64)
    vals = arr[1::2]
    if total and idx.min() < 0:
        i = int(np.flatnonzero(idx < 0)[0])
        raise DatasetError(f"negative feature index {idx[i]}", spath, _line_of(counts, row_lines, i))
    # Labels: "1,5,7" per line, non-negative decimal integers.
    lab_counts = np.array([len(p.split(",")) if p else 0 for p in label_parts], dtype=np.int64)
    lab_text = ",".join(p for p in label_parts if p)
    lab_total = int(lab_counts.sum())
    labs = None
    if not lab_total:
        labs = np.empty(0)
    elif lab_text.isascii() and lab_text.replace(",", "").isdigit():
        labs = fast_numbers(lab_text, ",", lab_total)
    if labs is None or not (labs < 2**53).all():
        for k, p in enumerate(label_parts):
            for t in p.split(",") if p else []:
                if not (t.isascii() and t.isdigit()) or int(t) >= 2**53:
                    raise DatasetError(f"bad label {t!r} (labels are non-negative integers)", spath, row_lines[k])
        raise DatasetError("malformed label list", spath)  # pragma: no cover
    labs = labs.astype(np.int64)

    f_zero, l_zero = _bases(zero_based, idx, labs, header, n_features)
    if not f_zero:
        if total and idx.min() < 1:
            i = int(np.flatnonzero(idx < 1)[0])
            raise DatasetError("feature index 0 in a 1-based file", spath, _line_of(counts, row_lines, i))
        idx = idx - 1
    if not l_zero:
        if lab_total and labs.min() < 1:
            raise DatasetError("label 0 in a 1-based file", spath)
        labs = labs - 1
    nf = n_features if n_features is not None else (header[1] if header else (int(idx.max()) + 1 if total else 0))
    nl = n_labels if n_labels is not None else (header[2] if header else (int(labs.max()) + 1 if lab_total else 0))
    # Before anything of size nf or nl exists: a declared width the data cannot fill is refused.
    check_declared_width("features", nf, total, spath, 1 if header else None)
    check_declared_width("labels", nl, lab_total, spath, 1 if header else None)
    if total and idx.max() >= nf:
        i = int(np.argmax(idx))
        raise DatasetError(
            f"feature index {idx[i] + (0 if f_zero else 1)} out of range ({nf} features)",
            spath,
            _line_of(counts, row_lines, i),
        )
    if lab_total and labs.max() >= nl:
        i = int(np.argmax(labs))
        raise DatasetError(
            f"label {labs[i] + (0 if l_zero else 1)} out of range ({nl} labels)",
            spath,
            _line_of(lab_counts, row_lines, i),
        )
    if header is not None and header[0] != n:
        raise DatasetError(f"the header announces {header[0]} instances but the file holds {n}", spath, 1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    X = sp.csr_matrix((vals, idx, indptr), shape=(n, nf))
    _check_unique_indices(X, row_lines, spath, f_zero)
    X.eliminate_zeros()
    lptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lab_counts, out=lptr[1:])
    Ys = sp.csr_matrix((np.ones(lab_total, dtype=np.int8), labs, lptr), shape=(n, nl))
    Ys.sum_duplicates()  # "3,3" is label 3 once
    Ys.data[:] = 1
    return Dataset(
        X=X,
        # Dense labels unless that would be large (extreme classification: millions of labels).
        Y=Ys.toarray() if n * nl <= _DENSE_Y_CELLS else Ys,
        feature_names=IndexedNames(nf, "f"),
        label_names=IndexedNames(nl, "l"),
        name=name or _stem(Path(spath)),
        metadata=DatasetMeta(format="libsvm", source=spath, zero_based=f_zero, labels_zero_based=l_zero,
                             label_source="file"),
    )


def _check_unique_indices(X: sp.csr_matrix, row_lines: list[int], path: str, f_zero: bool) -> None:
    """A feature index may appear once per line; order within a line is free."""
    if X.nnz < 2:
        return
    same_row = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    step = np.diff(X.indices)
    if (step[same_row[1:] == same_row[:-1]] > 0).all():
        X.has_sorted_indices = True
        return
    order = np.lexsort((X.indices, same_row))
    rows, cols = same_row[order], X.indices[order]
    dup = np.flatnonzero((rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1]))
    if len(dup):
        r, c = int(rows[dup[0]]), int(cols[dup[0]])
        raise DatasetError(f"feature index {c + (0 if f_zero else 1)} appears twice on the line", path, row_lines[r])
    X.sort_indices()


def _stem(p: Path) -> str:
    return stem(p)


def _bases(zero_based, idx, labs, header, n_features) -> tuple[bool, bool]:
    if zero_based is True or zero_based is False:
        return bool(zero_based), bool(zero_based)
    if zero_based != "auto":
        raise DatasetError(f"zero_based must be True, False or 'auto', not {zero_based!r}")
    nf = header[1] if header else n_features
    if len(idx) and idx.min() == 0:
        f_zero = True
    elif header is not None:
        f_zero = not (len(idx) and nf is not None and idx.max() == nf)
    else:
        f_zero = False
    if len(labs) and labs.min() == 0:
        l_zero = True
    elif header is not None:
        l_zero = not (len(labs) and labs.max() == header[2])
    else:
        l_zero = f_zero
    return f_zero, l_zero


def _line_of(counts: np.ndarray, row_lines: list[int], entry: int) -> int:
    ptr = np.cumsum(counts)
    return row_lines[int(np.searchsorted(ptr, entry, side="right"))]


def _diagnose_features(feat_parts: list[str], row_lines: list[int], path: str) -> None:
    """The token path: report the first bad ``index:value`` with its line."""
    for k, s in enumerate(feat_parts):
        for tok in s.split():
            i, sep, v = tok.partition(":")
            if not sep or ":" in v:
                raise DatasetError(f"expected 'index:value', found {tok!r}", path, row_lines[k])
            try:
                fi = parse_number(i)
            except ValueError:
                raise DatasetError(f"bad feature entry {tok!r}: index {i!r} is not an integer", path,
                                   row_lines[k]) from None
            if fi != int(fi) or abs(fi) >= 2**53:
                raise DatasetError(f"feature index {i!r} is not an integer", path, row_lines[k])
            try:
                parse_number(v)
            except ValueError as exc:
                raise DatasetError(f"bad feature entry {tok!r}: {exc}", path, row_lines[k]) from None


def libsvm_text(dataset: Dataset) -> str:
    """The LIBSVM text of a Dataset: header line, 0-based feature and label indices."""
    X = sp.csr_matrix(dataset.X, dtype=np.float64)
    X.sort_indices()
    Y = sp.csr_matrix(dataset.Y)
    Y.eliminate_zeros()
    Y.sort_indices()
    n, f = X.shape
    out = [f"{n} {f} {Y.shape[1]}"]
    for i in range(n):
        a, b = X.indptr[i], X.indptr[i + 1]
        feats = " ".join(
            f"{c}:{repr(v) if v != int(v) else int(v)}"
            for c, v in zip(X.indices[a:b].tolist(), X.data[a:b].tolist())
            if v != 0
        )
        labs = ",".join(str(c) for c in Y.indices[Y.indptr[i] : Y.indptr[i + 1]].tolist())
        out.append(f"{labs} {feats}".strip() if labs else feats)
    return "\n".join(out) + "\n"


def write_libsvm(dataset: Dataset, path: str | os.PathLike) -> None:
    """Write a Dataset as multi-label LIBSVM (header line, 0-based), atomically.

    Feature and label names are not stored (the format has no place for them).
    NaN values cannot be written and raise DatasetError.
    """
    from coreselect.io.files import atomic_output

    X = dataset.X
    data = X.data if sp.issparse(X) else np.asarray(X)
    if np.isnan(data).any() or np.isinf(data).any():
        raise DatasetError("LIBSVM cannot hold NaN or infinite values", path=str(path))
    text = libsvm_text(dataset)
    with atomic_output(path) as fh:
        fh.write(text)


# ----------------------------------------------------------------------------- ARFF

def read_arff(path, labels=None, missing: str = "error", name: str | None = None,
              labels_as_features: bool = False):
    """The whole-file ARFF reader before the data section was streamed: the whole text
    through the block parser in one piece (coreselect.io.arff.read_arff now concatenates
    its blocks)."""
    from coreselect.io.arff import parse_arff_text

    if missing not in ("error", "bin"):
        raise DatasetError(f"missing must be 'error' or 'bin', not {missing!r}")
    spath = str(path)
    return parse_arff_text(open_text(spath), spath, labels=labels, missing=missing, name=name,
                           labels_as_features=labels_as_features)


# ------------------------------------------------------------------- CSV and Parquet
# The whole-file table readers before the streamed parser (pandas.read_csv, ParquetFile.read):
# coreselect.io.tabular.read_csv / read_parquet now concatenate pyarrow's streamed batches.

from typing import Any  # noqa: E402

from coreselect.io.labels import resolve_label_spec  # noqa: E402
from coreselect.io.tabular import (  # noqa: E402
    _CELL_FLOOR, _META_KEY, MAX_CELLS_PER_BYTE, MAX_COLUMNS, _check_cells, _frame_to_dataset,
    _parquet_source, _scalar_type, _scan_header, _size,
)
from coreselect.io.text import open_binary  # noqa: E402
import json  # noqa: E402


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
