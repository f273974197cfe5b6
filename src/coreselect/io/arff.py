"""Fast ARFF reader and writer for Mulan and MEKA multi-label files.

Reading
-------
* Dense and sparse (``{i v, ...}``, 0-based indices) data, plain, ``.gz`` or ``.bz2``.
* The header is parsed line by line (it is small); the data section is parsed with
  whole-buffer string operations and numpy conversions, never per value in Python,
  so a 47k-attribute sparse file loads in well under a second and stays sparse.
* Nominal (and string/date) attributes become integer codes: the index of the value
  in the declaration (string/date: in the sorted distinct values). An omitted sparse
  value is 0 for numeric and the first declared value (code 0) for nominal attributes.
* Labels: ``labels=`` as in :mod:`coreselect.io.labels` (``N``: the last N attributes,
  names, a prefix, or a Mulan XML); without it, a Mulan XML found beside the ARFF, else
  the MEKA ``-C n`` option in ``@relation`` as MEKA defines it (n > 0: the *first* n
  attributes; n < 0: the last |n|). ``-C`` is never used when a Mulan XML exists (medical
  carries a stale one).
* Missing values ``?`` raise :class:`~coreselect.errors.DatasetError` unless
  ``missing="bin"``: then a nominal ``?`` gets its own code (the number of declared
  values) and a numeric ``?`` becomes NaN. ``nan``, ``inf`` and blank numeric cells are
  always errors naming the line (:func:`coreselect.io.text.parse_number`).
* Writing: :func:`write_arff` never replaces a label XML the caller did not name (see there).

Any problem with the file raises :class:`~coreselect.errors.DatasetError` naming the
file and, where it applies, the line.
"""

from __future__ import annotations

import bz2
import gzip
import io
import logging
import lzma
import os
import re
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, detect_id_columns
from coreselect.io.labels import labels_by_count, read_label_xml, resolve_label_spec
from coreselect.io.text import (
    fast_numbers,
    only_number_chars,
    open_text,
    parse_number,
    quote as _quote,
    read_quoted,
    split_values,
    stem,
)

log = logging.getLogger(__name__)

__all__ = ["read_arff", "write_arff", "find_label_xml", "read_label_xml", "parse_arff_text", "ARFF_SUFFIXES",
           "open_text", "split_values"]

ARFF_SUFFIXES = (".arff", ".arff.gz", ".arff.bz2", ".arff.xz")

NUMERIC = "numeric"
NOMINAL = "nominal"
STRING = "string"

_DATA_RE = re.compile(r"^[ \t]*@data[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_MEKA_C_RE = re.compile(r"(?:^|\s)-C\s+(-?\d+)")
_COMMA_RE = re.compile(r"[ \t]*,[ \t]*")
_INT_RE = re.compile(r"-?[0-9]+")
_INDEX_RE = re.compile(r"[+-]?[0-9]+")


class Attribute(NamedTuple):
    """One ``@attribute`` declaration (a tuple: files can declare 50k of them, cheaply)."""

    name: str
    kind: str  # NUMERIC, NOMINAL or STRING (string and date attributes)
    values: tuple[str, ...] | list[str] = ()  # declared nominal values
    line: int = 0  # 1-based line in the file; 0 when not recorded (fast path)


class _Attrs:
    """The declared attributes as parallel lists (no object per attribute until asked)."""

    __slots__ = ("names", "kind_list", "values", "lines", "_kinds")

    def __init__(self, names: list[str], kind_list: list[str], values: dict[int, list[str]], lines: dict[int, int]):
        self.names = names
        self.kind_list = kind_list
        self.values = values  # attribute index -> declared values (nominal only)
        self.lines = lines  # attribute index -> line (empty on the fast path)
        self._kinds: np.ndarray | None = None

    @classmethod
    def from_list(cls, attrs: list[Attribute]) -> "_Attrs":
        return cls(
            [a.name for a in attrs],
            [a.kind for a in attrs],
            {i: list(a.values) for i, a in enumerate(attrs) if a.kind == NOMINAL},
            {i: a.line for i, a in enumerate(attrs)},
        )

    @property
    def kinds(self) -> np.ndarray:
        if self._kinds is None:
            self._kinds = np.array(self.kind_list)
        return self._kinds

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i) -> Attribute:
        i = int(i)
        return Attribute(self.names[i], self.kind_list[i], self.values.get(i, ()), self.lines.get(i, 0))

    def __iter__(self):
        return (self[i] for i in range(len(self.names)))


# -------------------------------------------------------------------------- header

# The plain attribute line: an unquoted name and numeric/real/integer or an unquoted
# nominal list. The one per-line parser (:func:`_parse_attribute`) tries it first; the
# whole-header fast path (:func:`_parse_header_fast`) applies the same pattern to the whole
# buffer at once, and the tests check that both read the same headers.
_NAME = r"([^\s'\"{}%\\]+)"
_SPEC = r"(numeric|real|integer|\{[^'\"{}%\n]*\})"
_SIMPLE_ATTR_RE = re.compile(r"[ \t]+" + _NAME + r"[ \t]+" + _SPEC + r"[ \t]*\r?$", re.IGNORECASE)
# No IGNORECASE: spelled-out case variants keep the regex engine on its fast literal path.
_CASES = "|".join(f"{w}|{w.upper()}|{w.capitalize()}" for w in ("numeric", "real", "integer"))
_HEADER_ATTR_RE = re.compile(
    r"\n[ \t]*@(?:attribute|ATTRIBUTE|Attribute)[ \t]+" + _NAME + r"[ \t]+"
    r"(" + _CASES + r"|\{[^'\"{}%\n]*\})[ \t]*\r?(?=\n|$)"
)
_ATTR_START_RE = re.compile(r"\n[ \t]*@attribute", re.IGNORECASE)


def _simple_nominal(spec: str) -> list[str] | None:
    """The values of an unquoted ``{a, b}`` declaration; None when empty or repeated (the
    careful path then reports it)."""
    values = [v.strip() for v in spec[1:-1].split(",")]
    if all(values) and len(set(values)) == len(values):
        return values
    return None


def _parse_header_fast(header: str, path: str) -> tuple[str, _Attrs] | None:
    """Whole-buffer regex parse of headers whose attributes are all plain (see above).

    Per-line Python is the bottleneck for 47k-attribute files; this is ~10x faster.
    Returns None (use :func:`_parse_header`) for anything unusual.
    """
    h = "\n" + header
    first = _ATTR_START_RE.search(h)
    if first is None:
        return None
    prefix = h[1 : first.start() + 1]
    if "@attribute" in prefix.lower():
        return None
    relation, _ = _parse_header(prefix + "@attribute x numeric\n", path)
    body = h[first.start():]
    found = _HEADER_ATTR_RE.findall(body)
    if not found:
        return None
    # Every line the regex did not take must be blank or a comment. Matches never span
    # lines, so when the non-empty lines are exactly the matches there is nothing else.
    lines = body.split("\n")
    if len(lines) - lines.count("") != len(found):
        rest = _HEADER_ATTR_RE.sub("", body)
        for line in rest.split("\n"):
            t = line.strip()
            if t and t[0] != "%":
                return None  # a line the fast path does not understand: let the careful parser report it
    names = [f[0] for f in found]
    kind_list = [NOMINAL if f[1][0] == "{" else NUMERIC for f in found]
    values: dict[int, list[str]] = {}
    # Parse each distinct nominal declaration once ({0,1} repeats thousands of times).
    parsed: dict[str, list[str] | None] = {}
    for i, (_, spec) in enumerate(found):
        if spec[0] == "{":
            if spec not in parsed:
                parsed[spec] = _simple_nominal(spec)
            vals = parsed[spec]
            if vals is None:
                return None
            values[i] = vals
    return relation, _Attrs(names, kind_list, values, {})


def _attribute_line(header: str, k: int) -> int:
    """Line number of the k-th (0-based) @attribute line in the header."""
    seen = -1
    for lineno, raw in enumerate(header.split("\n"), start=1):
        if raw.lstrip()[:10].lower() == "@attribute":
            seen += 1
            if seen == k:
                return lineno
    return 0


def _parse_header(header: str, path: str) -> tuple[str, _Attrs]:
    """The careful, line-by-line header parser (the reference for the fast path)."""
    relation: str | None = None
    attrs: list[Attribute] = []
    for lineno, raw in enumerate(header.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        low = line[:10].lower()
        if low.startswith("@relation"):
            rest = line[len("@relation"):].strip()
            if not rest:
                raise DatasetError("@relation without a name", path, lineno)
            if rest[0] in "'\"":
                try:
                    relation, _ = read_quoted(rest, 0)
                except ValueError:
                    raise DatasetError("unterminated quote in @relation", path, lineno) from None
            else:
                relation = rest
        elif low.startswith("@attribute"):
            if relation is None:
                raise DatasetError("@attribute before @relation", path, lineno)
            attrs.append(_parse_attribute(line[len("@attribute"):], path, lineno))
        elif low.startswith("@end"):
            # `@end relational` only appears with relational attributes (rejected below).
            raise DatasetError("relational attributes are not supported", path, lineno)
        else:
            raise DatasetError(f"malformed header line: {line[:60]!r}", path, lineno)
    if relation is None:
        raise DatasetError("not an ARFF file: no @relation line", path, 1)
    if not attrs:
        raise DatasetError("no @attribute lines", path)
    return relation, _Attrs.from_list(attrs)


def _parse_attribute(rest: str, path: str, lineno: int) -> Attribute:
    """The one @attribute parser: ``rest`` is the line after the ``@attribute`` keyword."""
    m = _SIMPLE_ATTR_RE.match(rest)
    if m is not None:
        spec = m.group(2)
        if spec[0] != "{":
            return Attribute(m.group(1), NUMERIC, line=lineno)
        values = _simple_nominal(spec)
        if values is not None:
            return Attribute(m.group(1), NOMINAL, values, line=lineno)
    if not rest[:1].isspace():
        raise DatasetError("malformed @attribute line", path, lineno)
    rest = rest.strip()
    if not rest:
        raise DatasetError("@attribute without a name", path, lineno)
    try:
        if rest[0] in "'\"":
            name, end = read_quoted(rest, 0)
        else:
            m = re.match(r"[^\s{]+", rest)
            if m is None:
                raise DatasetError("@attribute without a name", path, lineno)
            name, end = m.group(0), m.end()
    except ValueError:
        raise DatasetError("unterminated quote in an attribute name", path, lineno) from None
    spec = rest[end:].strip()
    low = spec.lower()
    if low in ("numeric", "real", "integer"):
        return Attribute(name, NUMERIC, line=lineno)
    if low == "string" or low.startswith("date"):
        return Attribute(name, STRING, line=lineno)
    if spec.startswith("{"):
        if not spec.endswith("}"):
            raise DatasetError(f"nominal declaration of {name!r} lacks its closing brace", path, lineno)
        try:
            values = split_values(spec[1:-1])
        except ValueError as exc:
            raise DatasetError(f"bad nominal declaration of {name!r}: {exc}", path, lineno) from None
        if not spec[1:-1].strip() or any(v == "" for v in values):
            raise DatasetError(f"empty value in the nominal declaration of {name!r}", path, lineno)
        if len(set(values)) != len(values):
            raise DatasetError(f"repeated value in the nominal declaration of {name!r}", path, lineno)
        return Attribute(name, NOMINAL, values, line=lineno)
    if low.startswith("relational"):
        raise DatasetError("relational attributes are not supported", path, lineno)
    raise DatasetError(f"unknown type {spec[:40]!r} of attribute {name!r}", path, lineno)


# --------------------------------------------------------------------------- data


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
                f"missing value '?' in attribute {a.name!r} (pass missing='bin' to treat it as its own category)",
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
                f"missing value '?' in numeric attribute {attrs[cols[i]].name!r} "
                "(pass missing='bin' to read it as NaN)",
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


# -------------------------------------------------------------------------- labels


def find_label_xml(path: str | os.PathLike) -> Path | None:
    """The Mulan XML beside an ARFF file, or None.

    Tries the file's stem, then the stem without ``-train``/``-test``/``-sparse`` suffixes
    (``Corel5k-train-sparse.arff`` finds ``Corel5k.xml``).

    The case rule: the XML's name must match exactly, byte for byte, as the folder lists it
    (never a case-folded match, so the answer is the same on case-sensitive and
    case-insensitive filesystems). When no name matches exactly but one differs only in
    letter case (``emo.arff`` beside ``Emo.xml``), a :class:`DatasetError` names it rather
    than guessing: it may be another dataset's labels (pass it with ``labels=``/``--labels``).
    """
    p = Path(path)
    stem = _stem(p)
    candidates = [stem]
    s = stem
    while True:
        m = re.search(r"[-_](train|test|sparse|dense)$", s, re.IGNORECASE)
        if not m:
            break
        s = s[: m.start()]
        candidates.append(s)
    # Also "name-sparse-train" style where a middle part is the suffix.
    stripped = re.sub(r"[-_](train|test|sparse|dense)(?=[-_]|$)", "", stem, flags=re.IGNORECASE)
    candidates.append(stripped)
    try:
        # The listing, not exists(): a case-insensitive filesystem would answer "Emo.xml" for "emo.xml".
        names = [e.name for e in p.parent.iterdir() if e.name.lower().endswith(".xml") and e.is_file()]
    except OSError:
        return None
    exact = set(names)
    for c in candidates:
        if f"{c}.xml" in exact:
            return p.parent / f"{c}.xml"
    wanted = {f"{c}.xml".lower(): f"{c}.xml" for c in candidates}
    for n in sorted(names):
        if n.lower() in wanted:
            raise DatasetError(
                f"no label XML named exactly {wanted[n.lower()]} beside the file, but {n} differs from "
                "it only in letter case; a label XML is matched by its exact name (it may be another "
                f"dataset's labels): pass --labels {p.parent / n} (labels=...) to use it, or rename it",
                path=str(p))
    return None


def case_variants(path: str | os.PathLike) -> list[Path]:
    """Entries of ``path``'s folder whose names differ from its name only in letter case."""
    p = Path(path)
    try:
        return sorted(e for e in p.parent.iterdir() if e.name != p.name and e.name.lower() == p.name.lower())
    except OSError:
        return []


def _stem(path: Path) -> str:
    return stem(path, (".arff",))


def _meka_c(relation: str) -> int | None:
    m = _MEKA_C_RE.search(relation)
    return int(m.group(1)) if m else None


def _declared_labels(attrs: _Attrs, relation: str, arff_path: str) -> list[int]:
    """The attributes the file declares as labels (a Mulan XML beside it, else MEKA's
    ``-C n``), or [] when it declares none (or its declaration does not fit the file)."""
    try:
        xml = find_label_xml(arff_path)
        if xml is not None:
            return resolve_label_spec(attrs.names, xml, arff_path)[0]
        c = _meka_c(relation)
        if c is not None:
            return labels_by_count(-c, len(attrs), arff_path, "the MEKA -C option")
    except DatasetError:
        pass  # a stale declaration: the user's spec decides alone
    return []


def _label_columns(attrs: _Attrs, relation: str, labels, arff_path: str) -> tuple[list[int], dict]:
    """Which attribute indices are labels, and their provenance.

    A spec given by the caller follows :mod:`coreselect.io.labels` (``N``: the last N).
    Without one: a Mulan XML beside the file, else MEKA's ``-C n`` in ``@relation`` read as
    MEKA defines it (n > 0: the *first* n; n < 0: the last |n|). ``-C`` is never used when a
    Mulan XML exists (medical carries a stale one).
    """
    if labels is not None:
        return resolve_label_spec(attrs.names, labels, arff_path)
    xml = find_label_xml(arff_path)
    if xml is not None:
        return resolve_label_spec(attrs.names, xml, arff_path)
    c = _meka_c(relation)
    if c is not None:
        # MEKA's sign is the opposite of ours: -C 3 is the first three attributes.
        return labels_by_count(-c, len(attrs), arff_path, "the MEKA -C option"), {"label_source": "meka"}
    raise DatasetError(
        "cannot tell which attributes are labels: no Mulan XML beside the file and no MEKA "
        "'-C n' in @relation (pass labels=FILE.xml / --labels FILE.xml, or --labels N for the last N)",
        path=arff_path,
    )


# -------------------------------------------------------------------------- reader


def read_arff(
    path: str | os.PathLike,
    labels: str | os.PathLike | int | Sequence[str] | None = None,
    missing: str = "error",
    name: str | None = None,
    labels_as_features: bool = False,
    chunk_bytes: int = 32 << 20,
) -> Dataset:
    """Read a Mulan or MEKA ARFF file (dense or sparse, plain, ``.gz`` or ``.bz2``).

    The data section is streamed in blocks of whole lines (``chunk_bytes`` of text each),
    each parsed with the header (:func:`arff_chunks`), and the blocks concatenated: one
    parser serves the whole-file and the chunked reads. Files with string attributes are
    parsed as one block (their codes need every value).

    Parameters
    ----------
    path : path-like
        The ARFF file.
    labels : path-like, int, str, sequence of str or None
        A label spec (:mod:`coreselect.io.labels`): ``N`` the last N attributes, ``-N`` the
        first N, names, a prefix, or a Mulan XML file. ``None``: a Mulan XML beside the file
        (see :func:`find_label_xml`), else MEKA's ``-C n`` (n > 0: the *first* n).
    missing : {"error", "bin"}
        What a ``?`` means: an error, or its own category (nominal) / NaN (numeric).
    name : str, optional
        Dataset name; defaults to the file stem.
    labels_as_features : bool, default False
        With a ``labels`` spec that names some of the labels the file declares (Mulan XML,
        MEKA ``-C``), the other declared labels are left out of ``X``: a declared label is
        never a feature unless asked for here (issue 16). ``True`` makes them features.
    chunk_bytes : int
        Text parsed at once (the result does not depend on it).

    Returns
    -------
    Dataset
        ``X`` is a float64 ndarray (dense files) or CSR matrix (sparse files); ``Y`` a dense
        int8 0/1 matrix. ``metadata`` (:class:`~coreselect.io.dataset.DatasetMeta`) holds
        ``relation``, ``format``, ``feature_kinds``, ``nominal_values`` (feature name ->
        declared values), ``id_columns`` (:func:`~coreselect.io.dataset.detect_id_columns`,
        e.g. genbase's ``protein``) and the label provenance.

    Raises
    ------
    DatasetError
        On any malformed content, naming the file and line.
    """
    if missing not in ("error", "bin"):
        raise DatasetError(f"missing must be 'error' or 'bin', not {missing!r}")
    spath = str(path)
    try:
        parts = list(_arff_blocks(spath, labels, missing, labels_as_features, chunk_bytes, keep_empty=True))
    except NotImplementedError:
        # String attributes: their codes index the sorted values of the whole column, so
        # the block parser reads the whole data section as one block.
        return parse_arff_text(open_text(spath), spath, labels=labels, missing=missing, name=name,
                               labels_as_features=labels_as_features)
    return concat_arff_blocks(parts, name or _stem(Path(spath)))


def concat_arff_blocks(parts: list[Dataset], name: str) -> Dataset:
    """The Dataset of a whole ARFF file from its blocks' (:func:`arff_chunks`): arrays
    stacked, the ID columns decided over all rows (the rule of the block parser)."""
    import dataclasses

    first = parts[0]
    if len(parts) == 1:
        X, Y = first.X, first.Y
    else:
        if sp.issparse(first.X):
            X = sp.vstack([p.X for p in parts], format="csr")
            X.has_sorted_indices = True  # every block's rows are sorted
        else:
            X = np.vstack([p.X for p in parts])
        Y = np.vstack([np.asarray(p.Y) for p in parts])
    m = first.metadata
    n = X.shape[0]
    names = list(first.feature_names)
    # A nominal column can be distinct per row only if it declares enough values.
    candidates = [j for j, k in enumerate(m.feature_kinds or ())
                  if k != NUMERIC and len(m.nominal_values.get(names[j], ())) + 1 >= n]
    meta = dataclasses.replace(m, id_columns=tuple(detect_id_columns(X, candidates)))
    return Dataset(X=X, Y=Y, feature_names=first.feature_names, label_names=first.label_names, name=name,
                   metadata=meta)


def parse_arff_text(
    text: str,
    path: str = "<string>",
    labels=None,
    missing: str = "error",
    name: str | None = None,
    labels_as_features: bool = False,
    data_first_line: int | None = None,
    sparse: bool | None = None,
) -> Dataset:
    """Parse ARFF text (see :func:`read_arff`); ``path`` is used in messages and to find the XML.
    ``data_first_line``: the file's line number of the ``@data`` line, when ``text`` is the
    header and a block of the data section (:func:`arff_chunks`); ``sparse``: whether the
    data section is sparse, when a block is not its start (else its first row decides)."""
    if not isinstance(labels_as_features, (bool, np.bool_)):
        raise DatasetError(f"labels_as_features must be True or False, not {labels_as_features!r}")
    if not text.strip():
        raise DatasetError("empty file", path, 1)
    # Usually "\n@data\n": a plain find avoids a regex scan of a 1 MB header.
    m = None
    for probe in ("\n@data\n", "\n@DATA\n", "\n@Data\n"):
        k = text.find(probe)
        if k >= 0:
            m = _DATA_RE.match(text, k + 1)
            break
    if m is None:
        m = _DATA_RE.search(text)
    if m is None:
        raise DatasetError("no @data line", path)
    header = text[: m.start()]
    parsed = _parse_header_fast(header, path)
    relation, attrs = parsed if parsed is not None else _parse_header(header, path)
    if data_first_line is None:
        data_first_line = text.count("\n", 0, m.start()) + 1  # line of "@data"
    rows = _Rows(text[m.end():], data_first_line)
    label_idx, label_meta = _label_columns(attrs, relation, labels, path)
    string_values: dict[int, list[str]] = {}
    if sparse is None:
        sparse = bool(len(rows)) and rows.rows[0].startswith("{")
    if sparse:
        M = _parse_sparse(rows, attrs, missing, path, string_values)
    else:
        M = _parse_dense(rows, attrs, missing, path, string_values)
    is_label = np.zeros(len(attrs), dtype=bool)
    is_label[label_idx] = True
    not_feature = is_label.copy()
    left_out: list[str] = []
    if labels is not None and labels_as_features and not [
            i for i in _declared_labels(attrs, relation, path) if not is_label[i]]:
        raise DatasetError("labels_as_features changes nothing: the file declares no label "
                           "beyond the ones chosen (it keeps declared labels left out of the "
                           "labels as features); leave it out", path)
    if labels is not None and not labels_as_features:
        # A label subset: the other declared labels are neither labels nor features.
        other = [i for i in _declared_labels(attrs, relation, path) if not is_label[i]]
        not_feature[other] = True
        left_out = [attrs.names[i] for i in other]
        if left_out:
            log.info("%s: %d declared label(s) not chosen as labels are left out of the "
                     "features (labels_as_features=True keeps them): %s", path, len(left_out),
                     ", ".join(left_out[:10]))
    feat_idx = np.flatnonzero(~not_feature)
    if len(feat_idx) == 0:
        raise DatasetError("every attribute is a label; no features left", path)
    Y = _labels_matrix(M, attrs, label_idx, rows, path, header)
    if sparse:
        contiguous = len(feat_idx) and feat_idx[-1] - feat_idx[0] + 1 == len(feat_idx)
        X = M[:, int(feat_idx[0]) : int(feat_idx[-1]) + 1] if contiguous else M[:, feat_idx]
        X = sp.csr_matrix(X)
        X.sort_indices()
    else:
        X = np.ascontiguousarray(M[:, feat_idx])
    feat_kinds = attrs.kinds[feat_idx]
    all_numeric = bool((feat_kinds == NUMERIC).all())
    feature_names = [attrs.names[i] for i in feat_idx.tolist()]
    nominal_values: dict[str, list[str]] = {}
    kinds_out: list[str] = [NUMERIC] * len(feat_idx)
    id_candidates: list[int] = []
    if not all_numeric:
        for j in np.flatnonzero(feat_kinds != NUMERIC).tolist():
            a = attrs[feat_idx[j]]
            vals = list(a.values) if a.kind == NOMINAL else list(string_values.get(int(feat_idx[j]), []))
            nominal_values[a.name] = vals
            kinds_out[j] = "binary" if a.kind == NOMINAL and len(vals) == 2 else NOMINAL
            if a.kind == STRING or len(vals) + 1 >= X.shape[0]:  # else it cannot be distinct per row
                id_candidates.append(j)
    metadata = DatasetMeta(
        format="arff-sparse" if sparse else "arff-dense",
        source=path,
        relation=relation,
        feature_kinds=tuple(kinds_out),
        nominal_values=nominal_values,
        id_columns=tuple(detect_id_columns(X, id_candidates)),
        label_source=label_meta.get("label_source"),
        label_file=label_meta.get("label_file"),
        extra={"labels_left_out": left_out} if left_out else {},
    )
    return Dataset(
        X=X,
        Y=Y,
        feature_names=feature_names,
        label_names=[attrs.names[i] for i in label_idx],
        name=name or _stem(Path(path)),
        metadata=metadata,
    )


_ON = ("1", "yes", "true", "y", "t")
_OFF = ("0", "no", "false", "n", "f")


def _labels_matrix(M, attrs, label_idx, rows: _Rows, path: str, header: str = "") -> np.ndarray:
    """The 0/1 int8 label matrix; nominal labels are read by value ({1,0} works too)."""
    L = M[:, label_idx].toarray() if sp.issparse(M) else M[:, label_idx]
    # Per label: which code means "on" (numeric labels: the value 1 itself).
    on_code = np.ones(len(label_idx))
    for j, c in enumerate(label_idx):
        a = attrs[c]
        if a.kind == NUMERIC:
            continue
        vals = [v.strip().lower() for v in a.values]
        on = [i for i, v in enumerate(vals) if v in _ON]
        off = [i for i, v in enumerate(vals) if v in _OFF]
        if a.kind != NOMINAL or len(vals) != 2 or len(on) != 1 or len(off) != 1:
            raise DatasetError(
                f"label attribute {a.name!r} is not binary: declared {{{', '.join(a.values)}}}"
                if a.kind == NOMINAL
                else f"label attribute {a.name!r} is a string attribute, not binary",
                path,
                a.line or _attribute_line(header, c),
            )
        on_code[j] = on[0]
    bad = (L != 0) & (L != 1)  # codes of two-valued nominals are 0/1 as well
    if bad.any():
        r, j = np.argwhere(bad)[0]
        raise DatasetError(
            f"label attribute {attrs[label_idx[j]].name!r} is not binary (value {float(L[r, j]):g})",
            path,
            rows.lines[r],
        )
    return (L == on_code).astype(np.int8)


# -------------------------------------------------------------------------- writer


def _fmt(values: np.ndarray) -> list[str]:
    """Shortest round-trip decimal for each value; integers without '.0'; NaN as '?'."""
    out = []
    for v in values.tolist():
        if v != v:
            out.append("?")
        elif v == int(v) and abs(v) < 1e15:
            out.append(str(int(v)))
        else:
            out.append(repr(v))
    return out


def write_arff(
    dataset: Dataset,
    path: str | os.PathLike,
    sparse: bool | None = None,
    xml: bool | str | os.PathLike | None = None,
    relation: str | None = None,
) -> Path | None:
    """Write a Dataset as an ARFF file that Mulan, MEKA and :func:`read_arff` read back.

    Labels are written last as ``{0,1}`` attributes and ``@relation`` carries ``-C -L``, so
    MEKA (and :func:`read_arff` without an XML) finds them. Features declared nominal in
    ``dataset.metadata.nominal_values`` keep their declarations; the rest are numeric.

    The Mulan label XML: with ``xml=None`` (the default) it is written beside the file
    (``<stem>.xml``) only when no such file exists, or left alone when it exists and names
    the same labels; an existing ``<stem>.xml`` naming other labels (another dataset's) is
    never replaced: a :class:`~coreselect.errors.DatasetError` is raised before anything is
    written. ``xml=PATH`` writes it there (the caller named it, so it may be replaced);
    ``xml=False`` writes none. All outputs appear together or not at all.

    Parameters
    ----------
    dataset : Dataset
    path : path-like
        Target ``.arff`` (``.gz``/``.bz2``/``.xz`` compress it).
    sparse : bool, optional
        Sparse ARFF; defaults to whether ``dataset.X`` is sparse.
    xml : None, bool or path-like
        Where the Mulan label XML goes (see above); ``True`` is the same as ``None``.
    relation : str, optional
        Relation name; defaults to ``dataset.name``.

    Returns
    -------
    Path or None
        The label XML written or kept, if any.
    """
    from coreselect.files import atomic_output, atomic_path

    target = Path(path)
    xml_path = label_xml_path(target, dataset.label_names, xml)
    text = arff_text(dataset, sparse=sparse, relation=relation)
    data = text.encode("utf-8")
    write_xml = xml_path is not None and not _same_labels(xml_path, dataset.label_names)
    with atomic_path(target) as tmp:
        low = target.name.lower()
        opener = gzip.open if low.endswith(".gz") else bz2.open if low.endswith(".bz2") else \
            lzma.open if low.endswith(".xz") else None
        if opener is None:
            tmp.write_bytes(data)
        else:
            with opener(tmp, "wb") as fh:
                fh.write(data)
        if write_xml:
            # Inside the ARFF's block: a failed XML write leaves neither file.
            with atomic_output(xml_path) as fh:
                fh.write(label_xml_text(dataset.label_names))
    return xml_path


def label_xml_path(target: Path, label_names: Sequence[str], xml) -> Path | None:
    """Where :func:`write_arff` puts the label XML (None: nowhere); refuses to replace an
    XML the caller did not name."""
    if xml is False:
        return None
    if xml is None or xml is True:
        beside = target.parent / f"{_stem(target)}.xml"
        variants = case_variants(beside)
        if variants:
            # One file on a case-insensitive filesystem, two that the reader tells apart by
            # exact name elsewhere (find_label_xml): never write the one beside the other.
            raise DatasetError(
                f"{variants[0]} exists and its name differs from {beside.name} only in letter case; "
                "refusing to write a label XML beside it (pass xml=PATH to write it elsewhere, or "
                "xml=False for none; in the CLI, export to another name)",
                path=str(target),
            )
        if beside.exists() and not _same_labels(beside, label_names):
            raise DatasetError(
                f"{beside} exists and names other labels; refusing to replace a label file you did not "
                "name (pass xml=PATH to write it elsewhere, or xml=False for none)",
                path=str(target),
            )
        return beside
    p = Path(xml)
    if p.resolve() == target.resolve():
        raise DatasetError("the label XML and the ARFF file are the same path", path=str(target))
    return p


def _same_labels(xml: Path, label_names: Sequence[str]) -> bool:
    if not xml.is_file():
        return False
    try:
        return read_label_xml(xml) == list(label_names)
    except DatasetError:
        return False


def label_xml_text(label_names: Iterable[str]) -> str:
    """A Mulan label XML document."""
    from xml.sax.saxutils import quoteattr

    lines = ['<?xml version="1.0" encoding="utf-8"?>', '<labels xmlns="http://mulan.sourceforge.net/labels">']
    lines += [f"<label name={quoteattr(n)}></label>" for n in label_names]
    lines.append("</labels>\n")
    return "\n".join(lines)


def arff_text(dataset: Dataset, sparse: bool | None = None, relation: str | None = None) -> str:
    """The ARFF text of a Dataset (see :func:`write_arff`)."""
    X, Y = dataset.X, dataset.Y
    n, f = X.shape
    L = Y.shape[1]
    if sparse is None:
        sparse = sp.issparse(X)
    nominal = dataset.metadata.nominal_values
    rel = relation or dataset.name
    out = io.StringIO()
    out.write(f"@relation {_quote(f'{rel}: -C -{L}')}\n\n")
    for j, name in enumerate(dataset.feature_names):
        vals = nominal.get(name)
        if vals:
            out.write(f"@attribute {_quote(name)} {{{','.join(_quote(v) for v in vals)}}}\n")
        else:
            out.write(f"@attribute {_quote(name)} numeric\n")
    for name in dataset.label_names:
        out.write(f"@attribute {_quote(name)} {{0,1}}\n")
    out.write("\n@data\n")
    nominal_cols = {j: nominal[nm] for j, nm in enumerate(dataset.feature_names) if nominal.get(nm)}
    Yd = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
    if sparse:
        Xc = sp.csr_matrix(X)
        Xc.sort_indices()
        Ys = sp.csr_matrix(Yd)
        Ys.eliminate_zeros()
        Ys.sort_indices()
        for i in range(n):
            a, b = Xc.indptr[i], Xc.indptr[i + 1]
            cols = Xc.indices[a:b]
            vals = Xc.data[a:b]
            keep = vals != 0
            cols, vals = cols[keep], vals[keep]
            items = [
                f"{c} {_nominal_value(nominal_cols, c, v) if c in nominal_cols else s}"
                for c, v, s in zip(cols.tolist(), vals.tolist(), _fmt(vals))
            ]
            ya, yb = Ys.indptr[i], Ys.indptr[i + 1]
            items += [f"{f + c} 1" for c in Ys.indices[ya:yb].tolist()]
            out.write("{" + ",".join(items) + "}\n")
    else:
        Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        # Format column by column (nominal columns by table lookup), then join rows.
        cells = np.empty((n, f + L), dtype=object)
        for c in range(f):
            if c in nominal_cols:
                table = np.array([_quote(v) for v in nominal_cols[c]] + ["?"], dtype=object)
                codes = Xd[:, c]
                ok = (codes == np.round(codes)) & (codes >= 0) & (codes < len(nominal_cols[c]))
                cells[:, c] = table[np.where(ok, codes, len(nominal_cols[c])).astype(np.int64)]
            else:
                cells[:, c] = _fmt(Xd[:, c])
        cells[:, f:] = np.where(Yd != 0, "1", "0")
        out.write("".join(",".join(row) + "\n" for row in cells.tolist()))
    return out.getvalue()


def _nominal_value(nominal_cols: dict, c: int, code: float) -> str:
    if code != code:
        return "?"
    vals = nominal_cols[c]
    k = int(code)
    if k != code or not 0 <= k < len(vals):
        return "?"  # a missing-bin code
    return _quote(vals[k])


def arff_chunks(path: str | os.PathLike, labels=None, missing: str = "error", labels_as_features: bool = False,
                chunk_bytes: int = 32 << 20, progress=None):
    """Datasets of an ARFF file's data section in blocks of whole lines (about
    ``chunk_bytes`` of text each), each parsed with the header as one file would be (the
    same checks, with the file's line numbers; the first block's first row decides whether
    the section is sparse, for every block). Files with string attributes, whose codes need
    every value, are refused with :class:`NotImplementedError` (the caller reads them
    whole). ``progress(n)``: called with the bytes of each block read."""
    return _arff_blocks(str(path), labels, missing, labels_as_features, chunk_bytes, progress=progress)


def _arff_blocks(spath: str, labels, missing: str, labels_as_features: bool, chunk_bytes: int,
                 keep_empty: bool = False, progress=None):
    from coreselect.io.text import open_binary

    if missing not in ("error", "bin"):
        raise DatasetError(f"missing must be 'error' or 'bin', not {missing!r}")
    chunk_bytes = max(int(chunk_bytes), 1)
    with open_binary(spath) as fh:
        head = bytearray()
        line = 0
        while True:
            raw = fh.readline()
            if not raw:
                if not bytes(head).strip():
                    raise DatasetError("empty file", spath, 1)
                raise DatasetError("no @data line", spath)
            line += 1
            head += raw
            if _DATA_RE.match(raw.decode("latin-1").rstrip("\n")):
                break
        if progress is not None:
            progress(len(head))
        header = _decode(bytes(head)).rstrip("\n")
        m = _DATA_RE.search(header)
        parsed = _parse_header_fast(header[: m.start()], spath)
        _relation, attrs = parsed if parsed is not None else _parse_header(header[: m.start()], spath)
        if (attrs.kinds == STRING).any():
            raise NotImplementedError("string attributes")
        rest = b""
        at = line + 1  # file line of the next block's first line
        done = False
        sparse = None
        yielded = False
        while not done:
            buf = fh.read(chunk_bytes)
            if progress is not None and buf:
                progress(len(buf))
            if buf:
                buf = rest + buf if rest else buf
                cut = buf.rfind(b"\n")
                if cut < 0:
                    rest = buf  # a line longer than a block: read on
                    continue
                block, rest = buf[: cut + 1], buf[cut + 1:]
            else:
                block, rest, done = rest, b"", True
                if not block.strip() and (yielded or not keep_empty):
                    return
            ds = parse_arff_text(header + "\n" + _decode(block), spath, labels=labels, missing=missing,
                                 labels_as_features=labels_as_features, data_first_line=at - 1, sparse=sparse)
            at += block.count(b"\n")
            if ds.X.shape[0] or (done and keep_empty and not yielded):
                if sparse is None:
                    sparse = sp.issparse(ds.X)
                yielded = True
                yield ds


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")
