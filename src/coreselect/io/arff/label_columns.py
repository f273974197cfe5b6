"""Which attributes of an ARFF file are labels: a Mulan XML found beside it (any case of its
name), else MEKA's ``-C n`` in ``@relation``, or what the caller named."""

from __future__ import annotations

import os
import re
from pathlib import Path


from coreselect.errors import DatasetError
from coreselect.io.labels import labels_by_count, resolve_label_spec
from coreselect.io.text import stem
from coreselect.io.arff.header import _Attrs, _MEKA_C_RE


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
