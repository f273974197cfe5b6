"""The data section of a dense ARFF file (one value per attribute and row), and the conversion
of a column's text to numbers or nominal codes that the sparse rows share."""

from __future__ import annotations

import numpy as np

from coreselect.errors import DatasetError
from coreselect.io.text import fast_numbers, parse_number, split_values
from coreselect.io.arff.header import Attribute, NOMINAL, NUMERIC, STRING, _COMMA_RE, _INT_RE


class _Rows:
    """The non-empty, non-comment data lines with their line numbers in the file."""

    def __init__(self, data: str, first_line: int):
        lines = data.split("\n")
        self.rows: list[str] = []
        self.lines: list[int] = []
        for i, line in enumerate(lines):
            s = line.strip()
            if s and s[0] != "%":
                self.rows.append(s)
                self.lines.append(first_line + i)

    def __len__(self) -> int:
        return len(self.rows)


def _codes(
    cols: np.ndarray,
    vals: np.ndarray,
    attrs: list[Attribute],
    missing: str,
    where,  # callable: entry index -> line number
    path: str,
    string_values: dict[int, list[str]],
) -> np.ndarray:
    """Map the string values ``vals`` of nominal/string columns ``cols`` to integer codes.

    Entries are grouped by declaration (all ``{YES,NO}`` columns share one dict), and each
    group is mapped with dict lookups, which beats sorting unicode arrays by far.
    """
    out = np.empty(len(vals), dtype=np.float64)
    if len(vals) == 0:
        return out
    vals = np.asarray(vals, dtype=object)
    # Group key per column: the declaration tuple (nominal) or the column itself (string).
    group_of: dict[int, int] = {}
    decl_ids: dict[tuple, int] = {}
    declared: list[list[str]] = []
    for c in np.unique(cols).tolist():
        a = attrs[c]
        if a.kind == STRING:
            if c not in string_values:
                col_vals = vals[cols == c].tolist()
                string_values[c] = sorted(set(col_vals) - ({"?"} if missing == "bin" else set()))
            key: tuple = ("string", c)
            values = string_values[c]
        else:
            key = tuple(a.values)
            values = a.values
        if key not in decl_ids:
            decl_ids[key] = len(declared)
            declared.append(values)
        group_of[c] = decl_ids[key]
    lut = np.full(int(cols.max()) + 1, -1, dtype=np.int64)
    for c, g in group_of.items():
        lut[c] = g
    groups = lut[cols]
    bad_pos: list[int] = []
    for g, values in enumerate(declared):
        sel = np.flatnonzero(groups == g) if len(declared) > 1 else np.arange(len(vals))
        lk = {v: i for i, v in enumerate(values)}
        if missing == "bin":
            lk.setdefault("?", len(values))
        codes = np.array([lk.get(v, -1) for v in vals[sel].tolist()], dtype=np.float64)
        out[sel] = codes
        if (codes < 0).any():
            bad_pos.append(int(sel[np.flatnonzero(codes < 0)[0]]))
    if bad_pos:
        i = min(bad_pos)
        a, v = attrs[int(cols[i])], str(vals[i])
        if v == "?":
            raise DatasetError(
                f"missing value '?' in attribute {a.name!r} (the Python reader's missing='bin' "
                "gives it a category of its own)",
                path,
                where(i),
            )
        raise DatasetError(f"value {v!r} is not declared for nominal attribute {a.name!r}", path, where(i))
    return out


def _numbers(tokens: np.ndarray, missing: str, where, path: str, attrs, cols) -> np.ndarray:
    """Convert numeric tokens to float64 (see :func:`~coreselect.io.text.parse_number`);
    '?' is an error unless missing='bin' (then NaN); nan/inf/blank are errors with the line."""
    toks = tokens.tolist()
    arr = fast_numbers(",".join(toks), ",", len(toks)) if toks else np.empty(0)
    if arr is not None:
        return arr
    # Slow path only for files with bad or missing values: find and report the first one.
    out = np.empty(len(toks), dtype=np.float64)
    for i, t in enumerate(toks):
        if t == "?":
            if missing == "bin":
                out[i] = np.nan
                continue
            raise DatasetError(
                f"missing value '?' in numeric attribute {attrs[cols[i]].name!r}: selection "
                "needs a number in every cell; fill the missing values first (the Python "
                "reader's missing='bin' reads them as NaN, to impute)",
                path,
                where(i),
            )
        try:
            out[i] = parse_number(t)
        except ValueError as exc:
            what = "an empty value" if not t.strip() else str(exc)
            raise DatasetError(f"{what} (attribute {attrs[cols[i]].name!r})", path, where(i)) from None
    return out


def _int_decls(attrs: list[Attribute], cols: np.ndarray) -> dict[int, dict[float, int]] | None:
    """For nominal columns whose declared values are all integers ({0,1}): value -> code maps."""
    out: dict[int, dict[float, int]] = {}
    for c in cols.tolist():
        a = attrs[c]
        if a.kind != NOMINAL or not all(_INT_RE.fullmatch(v) for v in a.values):
            return None
        out[c] = {float(v): i for i, v in enumerate(a.values)}
    return out


def _float_codes(cols: np.ndarray, vals: np.ndarray, decls: dict[int, dict[float, int]]) -> np.ndarray | None:
    """Codes of numeric-looking nominal values; None when a value is undeclared (slow path reports it)."""
    if len(vals) == 0:
        return np.empty(0, dtype=np.float64)
    uv, inv = np.unique(vals, return_inverse=True)
    key = cols.astype(np.int64) * len(uv) + inv
    ukey, kinv = np.unique(key, return_inverse=True)
    code_of_key = np.empty(len(ukey), dtype=np.float64)
    for k, kk in enumerate(ukey.tolist()):
        c, u = divmod(kk, len(uv))
        code = decls[c].get(float(uv[u]))
        if code is None:
            return None
        code_of_key[k] = code
    return code_of_key[kinv]


def _parse_dense(rows: _Rows, attrs: list[Attribute], missing: str, path: str, string_values):
    n_attr = len(attrs)
    n = len(rows)
    text_rows = rows.rows
    quoted = any(("'" in r or '"' in r) for r in text_rows)
    if not quoted:
        counts = [r.count(",") + 1 for r in text_rows]
        for i, c in enumerate(counts):
            if c != n_attr:
                raise DatasetError(f"expected {n_attr} values, found {c}", path, rows.lines[i])
        kinds = attrs.kinds
        nom = np.flatnonzero(kinds != NUMERIC)
        decls = _int_decls(attrs, nom)
        if decls is not None:
            arr = fast_numbers(",".join(text_rows), ",", n * n_attr)
            if arr is not None:
                X = arr.reshape(n, n_attr)
                if len(nom):
                    codes = _float_codes(np.tile(nom, n), X[:, nom].ravel(), decls)
                    if codes is None:
                        arr = None
                    else:
                        X[:, nom] = codes.reshape(n, len(nom))
                if arr is not None:
                    return X
        tokens = _COMMA_RE.split(",".join(text_rows)) if n else []
    else:
        tokens = []
        for i, r in enumerate(text_rows):
            if r.startswith("{"):
                raise DatasetError("sparse row in a dense data section", path, rows.lines[i])
            try:
                vals = split_values(r)
            except ValueError as exc:
                raise DatasetError(str(exc), path, rows.lines[i]) from None
            if len(vals) != n_attr:
                raise DatasetError(f"expected {n_attr} values, found {len(vals)}", path, rows.lines[i])
            tokens.extend(vals)
    T = np.array(tokens, dtype=object).reshape(n, n_attr)
    X = np.empty((n, n_attr), dtype=np.float64)
    kinds = attrs.kinds
    num = np.flatnonzero(kinds == NUMERIC)
    nom = np.flatnonzero(kinds != NUMERIC)
    errors: list[DatasetError] = []
    if len(num):
        flat = T[:, num].ravel()
        cols = np.tile(num, n)
        try:
            X[:, num] = _numbers(flat, missing, lambda i: rows.lines[i // len(num)], path, attrs, cols).reshape(
                n, len(num)
            )
        except DatasetError as exc:
            errors.append(exc)
    if len(nom):
        flat = T[:, nom].ravel()
        cols = np.tile(nom, n)
        try:
            codes = _codes(cols, flat, attrs, missing, lambda i: rows.lines[i // len(nom)], path, string_values)
            X[:, nom] = codes.reshape(n, len(nom))
        except DatasetError as exc:
            errors.append(exc)
    if errors:
        # Report the first bad line of the file, whichever column kind it is in.
        raise min(errors, key=lambda e: e.line or 0)
    return X
