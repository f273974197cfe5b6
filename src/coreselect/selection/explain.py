"""Why each selected feature is in the selection: per-label coverage, share of ``g``, and
the nearest other selected feature.

Pure functions of what a selection already holds (no discretization, no I/O except the
optional PNG):

* ``relevance``: the rows of the relevance matrix ``MI(x, l)`` of the selected features, in
  selection order, shape ``(m, L)``;
* ``p``: features per label that count in ``g(S) = sum_l top^p_{x in S} MI(x, l)``;
* ``pair_distances``: ``d(u, v)`` among the selected features, shape ``(m, m)``.

A feature *covers* label ``l`` when it is among the ``p`` most relevant selected features
for ``l`` (ties: earlier in the selection first), i.e. when its ``MI(x, l)`` is one of the
terms of ``g``. Its share of ``g`` is the sum of those terms over ``g``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from coreselect.errors import InputError

__all__ = ["FeatureExplanation", "coverage", "explain_selection", "plot_coverage",
           "selected_label_relevance", "MAX_FULL_LABELS", "TOP_LABELS"]

#: A selection keeps its features' relevance to every label up to this many labels; above,
#: to the :data:`TOP_LABELS` labels with the largest terms of ``g`` only (the full table is
#: 8 bytes per selected feature and label: 800 MB for 100 features and 10^6 labels).
MAX_FULL_LABELS = 50_000
TOP_LABELS = 1_000

#: Bytes of relevance rows built at a time while the top labels are found.
_CHUNK_BYTES = 64 * 2**20
#: Bytes of values of labels with co-occurring pairs scored at a time (sparse relevance).
_PAIR_BLOCK_BYTES = 16 * 2**20


def selected_label_relevance(relevance, positions: np.ndarray, p: int, *,
                             max_full: int | None = None, top: int | None = None,
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(rows, feature_sums, label_ids)`` of a selection: ``rows[i, j]`` is the relevance of
    the selected feature at ``positions[i]`` (selection order) to label ``label_ids[j]``,
    ``feature_sums`` its relevance summed over every label. ``relevance`` is a dense matrix
    or a :class:`~coreselect.core.sparse_relevance.SparseRelevance` (indexed by positions).

    With at most ``max_full`` (default :data:`MAX_FULL_LABELS`) labels every label is kept (``label_ids`` None). Above, only the
    ``top`` (default :data:`TOP_LABELS`) labels with the largest terms of ``g`` (the sum of a label's ``p`` largest
    relevances among the selected: what :func:`coverage` credits) are kept, in label order;
    the coverage of each kept label is exact (it reads only that label's column). The rows
    are built a few at a time, so memory stays ``labels x p`` plus ``selected x top``."""
    from coreselect.core.objective import enter_top

    max_full = MAX_FULL_LABELS if max_full is None else max_full
    top = TOP_LABELS if top is None else top
    positions = np.asarray(positions, dtype=np.int64)
    n_labels = int(relevance.shape[1])
    sparse = hasattr(relevance, "pairs_among")  # a SparseRelevance: no dense rows needed
    if n_labels <= max_full:
        rows = np.asarray(relevance[positions], dtype=np.float64).reshape(positions.size, n_labels)
        sums = relevance.feature_sums(positions) if sparse else rows.sum(axis=1)
        return rows, sums, None
    if sparse:
        return _sparse_top_labels(relevance, positions, p, top)
    m = positions.size
    chunk = max(1, _CHUNK_BYTES // (8 * n_labels))
    tops = np.zeros((n_labels, max(1, min(int(p), m))))
    sums = np.zeros(m)
    for a in range(0, m, chunk):
        rows = np.asarray(relevance[positions[a:a + chunk]], dtype=np.float64)
        sums[a:a + chunk] = rows.sum(axis=1)
        for row in rows:
            enter_top(tops, row)
    terms = tops.sum(axis=1)
    del tops
    ids = np.sort(np.argsort(-terms, kind="stable")[:top])
    out = np.empty((m, ids.size))
    for a in range(0, m, chunk):
        out[a:a + chunk] = np.asarray(relevance[positions[a:a + chunk]])[:, ids]
    return out, sums, ids


def _sparse_top_labels(rel, positions: np.ndarray, p: int, top: int):
    """:func:`selected_label_relevance` above ``max_full`` labels for a sparse relevance, with
    the same numbers: a label that no selected feature co-occurs with has the closed form of
    its count group, so its top-``p`` term is the group's; only labels with a co-occurring
    pair are scored one by one. Memory follows the selected features' pairs, plus one float
    per label for the terms."""
    from coreselect.core.objective import enter_top

    m = positions.size
    width = max(1, min(int(p), m))
    group_of = rel.label_group
    closed = rel.closed(positions[:, None], rel.group_label[None, :])  # (m, groups)
    group_tops = np.zeros((closed.shape[1], width))
    for row in closed:
        enter_top(group_tops, row)
    terms = group_tops.sum(axis=1)[group_of]
    row_of, label, value = rel.pairs_among(positions)  # label-major
    first = np.flatnonzero(np.r_[True, label[1:] != label[:-1]]) if label.size else label[:0]
    hit = label[first]
    first = np.r_[first, label.size]
    block = max(1, _PAIR_BLOCK_BYTES // (8 * max(1, m)))  # (m x block) values, (block x p) tops
    for h0 in range(0, hit.size, block):
        h1 = min(hit.size, h0 + block)
        labels = hit[h0:h1]
        a, b = first[h0], first[h1]
        vals = closed[:, group_of[labels]]  # (m, labels of the block)
        vals[row_of[a:b], np.searchsorted(labels, label[a:b])] = value[a:b]
        tops = np.zeros((labels.size, width))
        for row in vals:
            enter_top(tops, row)
        terms[labels] = tops.sum(axis=1)
    ids = np.sort(np.argsort(-terms, kind="stable")[:top])
    del terms
    out = closed[:, group_of[ids]]
    at = np.searchsorted(ids, label)
    inside = np.flatnonzero(ids[np.minimum(at, ids.size - 1)] == label) if ids.size else at[:0]
    out[row_of[inside], at[inside]] = value[inside]
    return out, rel.feature_sums(positions), ids


@dataclass(frozen=True)
class FeatureExplanation:
    """Why one selected feature was picked.

    ``labels``: the labels it covers with at least ``min_share`` of that label's ``g`` term,
    most relevant first; ``label_relevance``: its ``MI`` to each of them; ``g_share``: its
    share of ``g`` (all covered labels counted); ``nearest``/``nearest_distance``: the
    closest other selected feature by ``d`` (None when it is the only one).
    """

    feature: str
    position: int
    labels: tuple[str, ...]
    label_relevance: tuple[float, ...]
    g_share: float
    nearest: str | None
    nearest_distance: float | None


def _check(relevance, p, pair_distances=None) -> np.ndarray:
    rel = np.asarray(relevance, dtype=np.float64)
    if rel.ndim != 2:
        raise InputError(f"relevance must be a (features, labels) matrix, got shape {rel.shape}")
    if not isinstance(p, (int, np.integer)) or p < 1:
        raise InputError(f"p must be an integer >= 1, got {p!r}")
    if pair_distances is not None and np.shape(pair_distances) != (rel.shape[0], rel.shape[0]):
        raise InputError(f"pair_distances must have shape {(rel.shape[0],) * 2}, "
                         f"got {np.shape(pair_distances)}")
    return rel


def coverage(relevance: np.ndarray, p: int) -> np.ndarray:
    """Boolean ``(m, L)``: feature ``i`` is among the top ``p`` selected features for label ``l``
    (ties go to the feature selected earlier, as in the greedy)."""
    rel = _check(relevance, p)
    m = rel.shape[0]
    # stable sort of -MI keeps selection order among equal values
    order = np.argsort(-rel, axis=0, kind="stable")[: min(p, m)]
    cover = np.zeros(rel.shape, dtype=bool)
    np.put_along_axis(cover, order, True, axis=0)
    return cover & (rel > 0)


def explain_selection(
    relevance: np.ndarray,
    p: int,
    pair_distances: np.ndarray,
    *,
    label_names: Sequence[str] | None = None,
    feature_names: Sequence[str] | None = None,
    min_share: float = 0.05,
) -> list[FeatureExplanation]:
    """One :class:`FeatureExplanation` per selected feature, in selection order.

    Parameters
    ----------
    relevance : ndarray, shape (m, L)
        ``MI(x, l)`` of the selected features (selection order) to every label.
    p : int
        The ``p`` of the objective.
    pair_distances : ndarray, shape (m, m)
        Distances among the selected features (selection order).
    label_names, feature_names : sequences of str, optional
        Names (default ``label<j>`` and ``feature<i>``; pass the selected features' names).
    min_share : float, default=0.05
        A covered label is listed only if the feature supplies at least this share of the
        label's term ``top^p MI`` (with ``p`` larger than the number of truly relevant
        features, the top-p of a label also holds features of near-zero relevance); 0 lists
        every covered label. ``g_share`` always counts every covered label.
    """
    rel = _check(relevance, p, pair_distances)
    m, n_labels = rel.shape
    labels = list(label_names) if label_names is not None else [f"label{j}" for j in range(n_labels)]
    names = list(feature_names) if feature_names is not None else [f"feature{i}" for i in range(m)]
    if len(labels) != n_labels or len(names) != m:
        raise InputError("label_names / feature_names do not match the relevance matrix")
    cover = coverage(rel, p)
    terms = np.where(cover, rel, 0.0)
    per_label = terms.sum(axis=0)  # each label's term of g
    g = per_label.sum()
    dist = np.asarray(pair_distances, dtype=np.float64).copy()
    np.fill_diagonal(dist, np.inf)
    out = []
    for i in range(m):
        share = np.divide(terms[i], per_label, out=np.zeros(n_labels), where=per_label > 0)
        keep = np.flatnonzero(cover[i] & (share >= min_share))
        keep = keep[np.argsort(-rel[i, keep], kind="stable")]
        j = int(np.argmin(dist[i])) if m > 1 else None
        out.append(FeatureExplanation(
            feature=str(names[i]),
            position=i,
            labels=tuple(str(labels[l]) for l in keep),
            label_relevance=tuple(float(rel[i, l]) for l in keep),
            g_share=float(terms[i].sum() / g) if g > 0 else 0.0,
            nearest=None if j is None else str(names[j]),
            nearest_distance=None if j is None else float(dist[i, j]),
        ))
    return out


def _wrap(text: str, width_inches: float, fontsize: float) -> str:
    """``text`` in lines that fit ``width_inches`` at ``fontsize`` points (a title that is
    never clipped, whatever the figure's width)."""
    import textwrap

    chars = max(20, int(width_inches * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


def plot_coverage(
    relevance: np.ndarray,
    p: int,
    path: str | Path,
    *,
    label_names: Sequence[str] | None = None,
    feature_names: Sequence[str] | None = None,
    max_labels: int = 60,
    n_labels_total: int | None = None,
) -> Path:
    """Draw the feature x label coverage as a PNG: colour = ``MI(x, l)``, a dot where the
    feature is one of the label's top-``p`` terms of ``g`` (none when every selected feature
    counts, ``p`` = all), and beside the matrix each feature's share of ``g``. With more than
    ``max_labels`` labels only the ``max_labels`` with the largest ``g`` terms are drawn.
    ``n_labels_total``: the data's number of labels when ``relevance`` holds some of them
    only (a selection's top labels, :func:`selected_label_relevance`), for the axis title.
    Returns the path.
    """
    import matplotlib.pyplot as plt

    fig = coverage_figure(relevance, p, label_names=label_names, feature_names=feature_names,
                          max_labels=max_labels, n_labels_total=n_labels_total)
    from coreselect.io.files import atomic_path

    path = Path(path)
    try:
        with atomic_path(path) as tmp:  # no half-written PNG on failure
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)
    return path


def coverage_figure(relevance: np.ndarray, p: int, *, label_names: Sequence[str] | None = None,
                    feature_names: Sequence[str] | None = None, max_labels: int = 60,
                    n_labels_total: int | None = None):
    """The matplotlib figure :func:`plot_coverage` saves (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from coreselect.core.objective import P_ALL

    rel = _check(relevance, p)
    m, n_labels = rel.shape
    labels = list(label_names) if label_names is not None else [f"label{j}" for j in range(n_labels)]
    names = list(feature_names) if feature_names is not None else [f"feature{i}" for i in range(m)]
    cover = coverage(rel, p)
    every = p >= min(m, P_ALL)  # every selected feature counts for every label: no dots
    terms = np.where(cover, rel, 0.0)
    g = terms.sum()
    share = terms.sum(axis=1) / g if g > 0 else np.zeros(m)
    cols = np.arange(n_labels)
    if n_labels > max_labels:
        cols = np.sort(np.argsort(-terms.sum(axis=0), kind="stable")[:max_labels])
    # Size from the content: a row per feature, a column per label, room for the longest names
    # and the share-of-g bars (constrained layout then leaves no empty band around them).
    longest = max((len(n) for n in names), default=0)
    width = 0.28 * cols.size + 0.07 * longest + 4.2
    height = 0.28 * m + 0.07 * max((len(labels[c]) for c in cols), default=0) + 2.0
    # The colour bar gets a column of its own: drawn into the bars' axes it covered them.
    fig, (ax, bars, cax) = plt.subplots(
        1, 3, figsize=(max(6.8, width), max(3.4, height)), layout="constrained",
        gridspec_kw={"width_ratios": [max(cols.size, 2), 2.5 + 0.02 * cols.size, 0.25]})
    bars.sharey(ax)
    im = ax.imshow(rel[:, cols], aspect="auto", cmap="Blues", interpolation="nearest")
    if not every:
        ys, xs = np.nonzero(cover[:, cols])
        ax.scatter(xs, ys, s=10, c="darkorange", marker="o")
    ax.set_xticks(range(cols.size), [labels[c] for c in cols], rotation=90, fontsize=7)
    ax.set_yticks(range(m), names, fontsize=7)
    total = n_labels if n_labels_total is None else int(n_labels_total)
    ax.set_xlabel("label" if cols.size == total
                  else f"label ({cols.size} of {total}: the largest shares of g)")
    ax.set_ylabel("selected feature (selection order)")
    bars.barh(range(m), 100 * share, color="darkorange" if not every else "tab:blue", height=0.7)
    bars.set_xlabel("share of g, %", fontsize=8)
    bars.tick_params(axis="y", left=False, labelleft=False)
    bars.tick_params(axis="x", labelsize=7)
    bars.set_xlim(0, max(1.0, 100 * float(share.max(initial=0.0))) * 1.1)
    counted = ("every selected feature counts in g (p = all)" if every
               else f"dot: among the label's top {p} features, counted in g")
    title = (f"Which labels the {m} selected features cover\n"
             f"colour: MI(x, l) in bits; {counted}\nbars: each feature's share of g")
    fig.suptitle(_wrap(title, fig.get_figwidth() - 0.3, 9), fontsize=9)
    fig.colorbar(im, cax=cax, label="MI(x, l), bits")
    return fig
