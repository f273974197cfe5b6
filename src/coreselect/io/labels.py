"""The one label-spec resolver of every reader (``labels=`` in the API, ``--labels`` in the CLI).

A spec says which columns (CSV, Parquet) or attributes (ARFF) are labels:

=============================  ==============================================================
``6`` or ``"6"``               the **last** 6 (Mulan's convention: labels come last)
``-6`` or ``"-6"``             the **first** 6
a Mulan XML path               the labels it names (``FILE.xml``; any existing file)
a list of names                those names
``"a,b,c"``                    those names
``"lab"``                      the column named ``lab``, else every column starting with it
=============================  ==============================================================

One sign convention for every format. MEKA's own ``-C n`` inside an ARFF ``@relation``
means the *first* n (``-C -n``: the last n); the ARFF reader honours it as MEKA defines it
when no spec is given, so MEKA files keep working through their header; a spec given by the
user always follows the table above.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from coreselect.errors import DatasetError
from coreselect.io.text import unescape

__all__ = ["resolve_label_spec", "labels_by_count", "labels_by_names", "read_label_xml"]

_COUNT_RE = re.compile(r"[+-]?\d+")


def labels_by_count(n: int, n_columns: int, path: str | None, what: str = "labels") -> list[int]:
    """``n > 0``: the last n columns; ``n < 0``: the first |n| (see module docs)."""
    if n == 0 or abs(n) >= n_columns:
        raise DatasetError(
            f"{what} asks for {abs(n)} label(s) but there are {n_columns} columns/attributes "
            "(at least one must stay a feature)", path=path)
    return list(range(n_columns - n, n_columns)) if n > 0 else list(range(-n))


def labels_by_names(wanted: Sequence[str], names: Sequence[str], path: str | None,
                    source: str | None = None) -> list[int]:
    """Column indices of the ``wanted`` names, in the order given.

    Exact names first; then, for names a Mulan XML writes unescaped (``Swainson's`` for
    ARFF's ``Swainson\\'s``) or in another case, a unique loose match.
    """
    wanted = [str(w) for w in wanted]
    names = [str(n) for n in names]
    if not wanted:
        raise DatasetError("no label names given", path=source or path)
    if len(set(wanted)) != len(wanted):
        raise DatasetError("the same label is named twice", path=source or path)
    if len(wanted) < len(names) and names[-len(wanted):] == wanted:
        return list(range(len(names) - len(wanted), len(names)))  # Mulan: labels last, in order
    pos = {n: i for i, n in enumerate(names)}
    loose: dict[str, int | None] = {}
    if any(w not in pos for w in wanted):
        for n, i in pos.items():
            u = unescape(n) if "\\" in n else n
            for k in {u, n.lower(), u.lower()}:
                loose[k] = None if (k in loose and loose[k] != i) else i
    out: list[int] = []
    missing: list[str] = []
    for w in wanted:
        i = pos.get(w)
        if i is None:
            i = loose.get(w)
        if i is None:
            i = loose.get(unescape(w))
        if i is None:
            i = loose.get(w.lower())
        if i is None:
            missing.append(w)
        else:
            out.append(i)
    if missing:
        shown = ", ".join(repr(m) for m in missing[:5]) + (" ..." if len(missing) > 5 else "")
        where = f" of {path}" if path else ""
        what = "it names" if source else "named in labels"
        raise DatasetError(f"{len(missing)} label(s) {what} are not attributes (columns){where}: {shown}",
                           path=source or path)
    if len(set(out)) != len(out):
        raise DatasetError("the same column is named twice as a label", path=source or path)
    if len(out) >= len(names):
        raise DatasetError("every column is a label; no features left", path=source or path)
    return out


def read_label_xml(path: str | os.PathLike) -> list[str]:
    """Label names, in document order, from a Mulan XML file (hierarchies flattened)."""
    import xml.etree.ElementTree as ET

    from coreselect.io.text import check_regular_input

    p = str(path)
    check_regular_input(p)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(64 << 20)  # label files are small; a huge one is not a label file
            if fh.read(1):
                raise DatasetError("larger than 64 MiB; not a Mulan label file", path=p)
        root = ET.fromstring(raw)
    except FileNotFoundError:
        raise DatasetError("no such label file", path=p) from None
    except IsADirectoryError:
        raise DatasetError("is a directory, not a label file", path=p) from None
    except ET.ParseError as exc:
        raise DatasetError(f"bad XML: {exc}", path=p, line=exc.position[0]) from None
    except (OSError, ValueError) as exc:  # ValueError: e.g. an unsupported encoding declaration
        raise DatasetError(f"cannot read the label file: {exc}", path=p) from None
    names = [el.get("name") for el in root.iter() if isinstance(el.tag, str) and el.tag.rsplit("}", 1)[-1] == "label"]
    if not names or any(n is None for n in names):
        raise DatasetError("no <label name=...> elements", path=p)
    if len(set(names)) != len(names):
        raise DatasetError("a label is named twice", path=p)
    return names


def resolve_label_spec(names: Sequence[str], spec: Any, path: str | None = None) -> tuple[list[int], dict]:
    """Resolve a label spec (module docs) against column/attribute ``names``.

    Returns the label column indices and their provenance (``label_source``, ``label_file``).
    ``spec=None`` is an error here; readers with defaults (ARFF: a Mulan XML beside the file,
    MEKA's ``-C``; Parquet: the names coreselect recorded) handle None before calling.
    """
    if spec is None:
        raise DatasetError(
            "say which columns are labels: --labels N (the last N columns), --labels -N (the first N), "
            "--labels a,b,c (names), --labels PREFIX, or --labels FILE.xml (Mulan)", path=path)
    if isinstance(spec, (bool, np.bool_)):
        raise DatasetError(f"labels must be a count, names or a label file, not {spec!r}", path=path)
    if isinstance(spec, (int, np.integer)):
        return labels_by_count(int(spec), len(names), path), {"label_source": "count"}
    if isinstance(spec, os.PathLike):
        return _from_xml(Path(spec), names, path)
    if isinstance(spec, str):
        s = spec.strip()
        if not s:
            raise DatasetError("empty label spec", path=path)
        if s in set(map(str, names)):
            return labels_by_names([s], names, path), {"label_source": "names"}
        if _COUNT_RE.fullmatch(s):
            return labels_by_count(int(s), len(names), path), {"label_source": "count"}
        if s.lower().endswith(".xml") or os.path.isfile(s):
            return _from_xml(Path(s), names, path)
        if "," in s:
            return labels_by_names([t.strip() for t in s.split(",")], names, path), {"label_source": "names"}
        hits = [i for i, n in enumerate(names) if str(n).startswith(s)]
        if not hits:
            raise DatasetError(f"no column is named {s!r} or starts with it", path=path)
        if len(hits) >= len(names):
            raise DatasetError(f"every column starts with {s!r}; no features left", path=path)
        return hits, {"label_source": "prefix"}
    try:
        wanted = [str(x) for x in spec]
    except TypeError:
        raise DatasetError(f"labels must be a count, names or a label file, not {type(spec).__name__}",
                           path=path) from None
    return labels_by_names(wanted, names, path), {"label_source": "names"}


def _from_xml(xml: Path, names: Sequence[str], path: str | None) -> tuple[list[int], dict]:
    if not xml.is_file():
        raise DatasetError("no such label file", path=str(xml))
    wanted = read_label_xml(xml)
    return labels_by_names(wanted, names, path, source=str(xml)), {"label_source": "mulan-xml",
                                                                   "label_file": str(xml)}
