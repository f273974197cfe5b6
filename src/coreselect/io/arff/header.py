"""An ARFF file's header: ``@relation`` and the ``@attribute`` declarations, parsed by one
regular expression over the whole header when every line is simple, else line by line."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from coreselect.errors import DatasetError
from coreselect.io.text import read_quoted, split_values


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
