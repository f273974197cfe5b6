"""The data section of a sparse ARFF file (``{index value, ...}`` rows, 0-based indices): a
vectorized path through pyarrow's CSV reader, and the general one."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.text import only_number_chars, read_quoted, split_values
from coreselect.io.arff.header import Attribute, NUMERIC, _INDEX_RE
from coreselect.io.arff.dense import _Rows, _codes, _float_codes, _int_decls, _numbers


def _arrow_pairs(inners: list[str], total: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Parse all ``index value`` entries with pyarrow's multi-threaded CSV reader; None if off."""
    if total == 0:
        return np.empty(0), np.empty(0)
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    # One entry per line: "{1 0.5,7 2}" -> "1 0.5\n7 2".
    text = "\n".join(inners).replace(",", "\n").encode("utf-8")
    try:
        table = pacsv.read_csv(
            pa.py_buffer(text),
            # No thread pool: it barely helps here and its teardown can abort at exit.
            read_options=pacsv.ReadOptions(column_names=["i", "v"], use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(
                column_types={"i": pa.int64(), "v": pa.float64()}, strings_can_be_null=False,
                null_values=[], quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowException, ValueError):
        return None
    if table.num_rows != total:
        return None
    idx = _numeric_column(table.column("i"), np.int64)
    vals = _numeric_column(table.column("v"), np.float64)
    if idx is None or vals is None:
        return None
    return idx, vals


def _numeric_column(col, dtype) -> np.ndarray | None:
    """An 8-byte numeric Arrow column as numpy, read from its buffers (``to_numpy`` imports pandas: +1 s)."""
    parts = []
    for chunk in col.chunks:
        if chunk.null_count:
            return None
        buf = chunk.buffers()[1]
        parts.append(np.frombuffer(buf, dtype=dtype, count=len(chunk), offset=chunk.offset * 8))
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _fast_sparse(inners: list[str], counts: np.ndarray, attrs, n: int, n_attr: int):
    """All-numeric sparse data (numeric or integer-nominal attributes) in one C pass; else None."""
    total = int(counts.sum())
    pairs = _arrow_pairs(inners, total)
    if pairs is None:
        return None
    idx, data = pairs
    if total and (idx.min() < 0 or idx.max() >= n_attr):
        return None
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if total > 1:
        step = np.diff(idx)
        same_row = np.ones(total - 1, dtype=bool)
        starts = indptr[1:-1]
        starts = starts[(starts > 0) & (starts < total)]
        same_row[starts - 1] = False
        if (same_row & (step <= 0)).any():
            return None
    data = np.array(data, dtype=np.float64)  # writable copy
    kinds = attrs.kinds
    is_nom = kinds[idx] != NUMERIC if total else np.zeros(0, dtype=bool)
    if is_nom.any():
        pos = np.flatnonzero(is_nom)
        decls = _int_decls(attrs, np.unique(idx[pos]))
        if decls is None:
            return None
        codes = _float_codes(idx[pos], data[pos], decls)
        if codes is None:
            return None
        data[pos] = codes
    if not np.isfinite(data).all():
        return None  # 'nan'/'inf' text: let the token path report it
    M = sp.csr_matrix((data, idx, indptr), shape=(n, n_attr))
    M.has_sorted_indices = True  # checked above: indices increase within each row
    M.eliminate_zeros()
    return M


def _parse_sparse(rows: _Rows, attrs: list[Attribute], missing: str, path: str, string_values):
    n_attr = len(attrs)
    text_rows = rows.rows
    n = len(text_rows)
    inners = []
    for i, r in enumerate(text_rows):
        if not (r.startswith("{") and r.endswith("}")):
            raise DatasetError("dense or malformed row in a sparse data section", path, rows.lines[i])
        inners.append(r[1:-1])
    quoted = any(("'" in r or '"' in r) for r in inners)
    if not quoted:
        counts = np.array([s.count(",") + 1 if s.strip() else 0 for s in inners], dtype=np.int64)
        # Arrow's number parser is looser than parse_number (nan, inf): the fast path only
        # sees text made of number characters, and the token path decides the rest.
        if only_number_chars("".join(inners), b","):
            fast = _fast_sparse(inners, counts, attrs, n, n_attr)
            if fast is not None:
                return fast
        joined = " ".join(inners).replace(",", " ")
        tokens = joined.split()
        if len(tokens) != 2 * int(counts.sum()):
            for i, s in enumerate(inners):
                if len(s.replace(",", " ").split()) != 2 * counts[i]:
                    raise DatasetError("malformed sparse entry (expected 'index value')", path, rows.lines[i])
        idx_tok = np.array(tokens[0::2], dtype=str)
        val_tok = np.array(tokens[1::2], dtype=str)
    else:
        idx_list, val_list, counts_l = [], [], []
        for i, s in enumerate(inners):
            try:
                entries = split_values(s) if s.strip() else []
            except ValueError as exc:
                raise DatasetError(str(exc), path, rows.lines[i]) from None
            for e in entries:
                parts = e.split(None, 1)
                if len(parts) != 2:
                    raise DatasetError("malformed sparse entry (expected 'index value')", path, rows.lines[i])
                v = parts[1].strip()
                if v[:1] in "'\"":
                    try:
                        v, _ = read_quoted(v, 0)
                    except ValueError:
                        raise DatasetError("unterminated quote", path, rows.lines[i]) from None
                idx_list.append(parts[0])
                val_list.append(v)
            counts_l.append(len(entries))
        counts = np.array(counts_l, dtype=np.int64)
        idx_tok = np.array(idx_list, dtype=str)
        val_tok = np.array(val_list, dtype=str)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])

    def where(i: int) -> int:
        return rows.lines[int(np.searchsorted(indptr, i, side="right")) - 1]

    toks = idx_tok.tolist()
    joined = ",".join(toks)
    idx = None
    if joined.isascii() and joined.replace(",", "").isdigit():
        try:
            idx = idx_tok.astype(np.int64)
        except (ValueError, OverflowError):
            idx = None
    if idx is not None and len(idx) and idx.max() >= n_attr:
        idx = None  # the loop below reports the first one
    for i, t in enumerate(toks if idx is None else ()):
        if i == 0:
            idx = np.empty(len(toks), dtype=np.int64)
        if not _INDEX_RE.fullmatch(t):
            raise DatasetError(f"sparse index {t!r} is not an integer", path, where(i))
        v = int(t)
        if not 0 <= v < n_attr:
            raise DatasetError(
                f"sparse index {v} out of range (the file declares {n_attr} attributes, 0-based)", path, where(i)
            )
        idx[i] = v
    if idx is None:
        idx = np.empty(0, dtype=np.int64)
    if len(idx):
        # Indices must increase within a row (Weka requires it; repeats would be ambiguous).
        step = np.diff(idx)
        same_row = np.ones(len(idx) - 1, dtype=bool)
        starts = indptr[1:-1]
        starts = starts[(starts > 0) & (starts < len(idx))]
        same_row[starts - 1] = False
        bad = np.flatnonzero(same_row & (step <= 0))
        if len(bad):
            raise DatasetError("sparse indices must increase within a row", path, where(int(bad[0]) + 1))
    kinds = attrs.kinds
    is_num = kinds[idx] == NUMERIC if len(idx) else np.zeros(0, dtype=bool)
    data = np.empty(len(idx), dtype=np.float64)
    if is_num.all():
        data[:] = _numbers(val_tok, missing, where, path, attrs, idx)
    else:
        pos = np.flatnonzero(is_num)
        data[pos] = _numbers(val_tok[pos], missing, lambda i: where(int(pos[i])), path, attrs, idx[pos])
        pos = np.flatnonzero(~is_num)
        data[pos] = _codes(
            idx[pos], val_tok[pos], attrs, missing, lambda i: where(int(pos[i])), path, string_values
        )
    M = sp.csr_matrix((data, idx, indptr), shape=(n, n_attr))
    M.eliminate_zeros()
    return M
