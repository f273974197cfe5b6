"""Writing a dataset as ARFF (dense or sparse) and its Mulan label XML beside it."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset
from coreselect.io.labels import read_label_xml
from coreselect.io.text import quote as _quote
from coreselect.io.arff.label_columns import _stem, case_variants


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
    from coreselect.io.files import atomic_output, atomic_path

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
