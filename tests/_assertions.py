"""One comparison of two selections, field by field, for every selection path.

``assert_same_selection(a, b)`` works on any object with the result attributes (``SelectionResult``,
``GreedyResult``, the reference's ``Selection``) or on the CLI's JSON
dict, and compares every field both sides have: the order of ``selected``, ``objective``,
``relevance`` (g), ``diversity`` (D), ``pair_distances``, ``feature_relevance``, and the
parts' selections and the union of Algorithm 3 (in the style of dask-ml's
``assert_estimator_equal``: a field one side lacks is skipped, a field both have must agree).
"""

from __future__ import annotations

import numpy as np

_MISSING = object()
# The CLI rounds these JSON fields to 6 decimals.
_ROUNDED = {"feature_relevance", "mean_distance"}


def _get(obj, name):
    if isinstance(obj, dict):
        return obj.get(name, _MISSING)
    return getattr(obj, name, _MISSING)


def _parts(obj):
    """The parts' selections, or _MISSING for a centralized run: it reports ``parts=[]`` with
    ``partitions=None`` (it has no parts, which is not the same as parts that selected
    nothing)."""
    parts = _get(obj, "parts")
    if parts is None or (not parts and _get(obj, "partitions") is None):
        return _MISSING
    return parts


def _part_selections(parts):
    out = []
    for part in parts:
        sel = part.get("selected") if isinstance(part, dict) else getattr(part, "selected", part)
        out.append([int(i) for i in sel])
    return out


def _mean_distance(obj):
    value = _get(obj, "mean_distance")
    if value is not _MISSING:
        return np.asarray(value, dtype=float)
    pair = _get(obj, "pair_distances")
    if pair is _MISSING:
        return _MISSING
    pair = np.asarray(pair, dtype=float)
    k = pair.shape[0]
    return pair.sum(axis=1) / (k - 1) if k > 1 else np.zeros(k)


def _union_size(obj):
    size = _get(obj, "union_size")
    if size not in (_MISSING, None):
        return int(size)
    union = _get(obj, "union")
    return None if union in (_MISSING, None) else len(union)


def assert_same_selection(a, b, *, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """Assert that two selections agree on every field both report."""
    sa, sb = _get(a, "selected"), _get(b, "selected")
    assert sa is not _MISSING and sb is not _MISSING, "both sides need 'selected'"
    assert [int(i) for i in sa] == [int(i) for i in sb], f"selected: {list(sa)} != {list(sb)}"
    checked = ["selected"]
    for name in ("objective", "relevance", "diversity"):
        va, vb = _get(a, name), _get(b, name)
        if va is _MISSING or vb is _MISSING:
            continue
        np.testing.assert_allclose(float(va), float(vb), rtol=rtol, atol=atol, err_msg=name)
        checked.append(name)
    pa, pb = _get(a, "pair_distances"), _get(b, "pair_distances")
    if pa is not _MISSING and pb is not _MISSING:
        np.testing.assert_allclose(np.asarray(pa, float), np.asarray(pb, float), rtol=rtol,
                                   atol=atol, err_msg="pair_distances")
        checked.append("pair_distances")
    else:
        ma, mb = _mean_distance(a), _mean_distance(b)
        if ma is not _MISSING and mb is not _MISSING:
            np.testing.assert_allclose(ma, mb, rtol=rtol, atol=max(atol, 5.1e-7),
                                       err_msg="mean_distance")
            checked.append("mean_distance")
    fa, fb = _get(a, "feature_relevance"), _get(b, "feature_relevance")
    if fa is not _MISSING and fb is not _MISSING and fa is not None and fb is not None:
        rounded = isinstance(a, dict) or isinstance(b, dict)
        np.testing.assert_allclose(np.asarray(fa, float), np.asarray(fb, float), rtol=rtol,
                                   atol=max(atol, 5.1e-7) if rounded else atol,
                                   err_msg="feature_relevance")
        checked.append("feature_relevance")
    parts_a, parts_b = _parts(a), _parts(b)
    if parts_a is not _MISSING and parts_b is not _MISSING:
        assert _part_selections(parts_a) == _part_selections(parts_b), "parts differ"
        checked.append("parts")
    na, nb = _union_size(a), _union_size(b)
    if na is not None and nb is not None:
        assert na == nb, f"union size: {na} != {nb}"
        checked.append("union_size")
    ua, ub = _get(a, "union"), _get(b, "union")
    if ua is not _MISSING and ub is not _MISSING and ua is not None and ub is not None:
        assert [int(i) for i in ua] == [int(i) for i in ub], "union differs"
        checked.append("union")
    return checked
