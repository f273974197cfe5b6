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

The parts: :mod:`~coreselect.io.arff.header` (``@relation``, ``@attribute``),
:mod:`~coreselect.io.arff.dense` and :mod:`~coreselect.io.arff.sparse` (the data rows),
:mod:`~coreselect.io.arff.label_columns` (which attributes are labels) and
:mod:`~coreselect.io.arff.writer`; this module reads whole files and row chunks, and every
name of the parts that was importable from ``coreselect.io.arff`` still is.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io.dataset import Dataset, DatasetMeta, detect_id_columns
from coreselect.io.labels import read_label_xml
from coreselect.io.text import open_text, split_values
from coreselect.io.arff.dense import _Rows, _parse_dense
from coreselect.io.arff.header import (  # noqa: F401 - ARFF_SUFFIXES, Attribute re-exported
    ARFF_SUFFIXES,
    NOMINAL,
    NUMERIC,
    STRING,
    _DATA_RE,
    Attribute,
    _attribute_line,
    _parse_header,
    _parse_header_fast,
)
from coreselect.io.arff.label_columns import (  # noqa: F401 - the public ones re-exported
    _declared_labels,
    _label_columns,
    _stem,
    case_variants,
    find_label_xml,
)
from coreselect.io.arff.sparse import _parse_sparse
from coreselect.io.arff.writer import (  # noqa: F401 - re-exported
    arff_text,
    label_xml_path,
    label_xml_text,
    write_arff,
)

log = logging.getLogger(__name__)

__all__ = ["read_arff", "write_arff", "find_label_xml", "read_label_xml", "parse_arff_text", "ARFF_SUFFIXES",
           "open_text", "split_values"]



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
        never a feature unless asked for here. ``True`` makes them features.
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
