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

__all__ = ["FeatureExplanation", "coverage", "explain_selection", "plot_coverage"]


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


def plot_coverage(
    relevance: np.ndarray,
    p: int,
    path: str | Path,
    *,
    label_names: Sequence[str] | None = None,
    feature_names: Sequence[str] | None = None,
    max_labels: int = 60,
) -> Path:
    """Draw the feature x label coverage as a PNG: colour = ``MI(x, l)``, a dot where the
    feature is one of the label's top-``p`` terms of ``g``. With more than ``max_labels``
    labels only the ``max_labels`` with the largest ``g`` terms are drawn. Returns the path.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rel = _check(relevance, p)
    m, n_labels = rel.shape
    labels = list(label_names) if label_names is not None else [f"label{j}" for j in range(n_labels)]
    names = list(feature_names) if feature_names is not None else [f"feature{i}" for i in range(m)]
    cover = coverage(rel, p)
    cols = np.arange(n_labels)
    if n_labels > max_labels:
        cols = np.sort(np.argsort(-np.where(cover, rel, 0).sum(axis=0), kind="stable")[:max_labels])
    # Size from the content: a row per feature, a column per label, room for the longest names
    # (constrained layout then leaves no empty band around the matrix).
    longest = max((len(n) for n in names), default=0)
    width = 0.28 * cols.size + 0.07 * longest + 2.2
    height = 0.28 * m + 0.07 * max((len(labels[c]) for c in cols), default=0) + 1.6
    fig, ax = plt.subplots(figsize=(max(5.0, width), max(3.0, height)), layout="constrained")
    im = ax.imshow(rel[:, cols], aspect="auto", cmap="Blues", interpolation="nearest")
    ys, xs = np.nonzero(cover[:, cols])
    ax.scatter(xs, ys, s=10, c="darkorange", marker="o")
    ax.set_xticks(range(cols.size), [labels[c] for c in cols], rotation=90, fontsize=7)
    ax.set_yticks(range(m), names, fontsize=7)
    ax.set_xlabel("label" if cols.size == n_labels
                  else f"label ({cols.size} of {n_labels}: the largest shares of g)")
    ax.set_ylabel("selected feature (selection order)")
    ax.set_title(f"Which labels the {m} selected features cover\n"
                 f"colour: MI(x, l) in bits; dot: among the label's top {p}, counted in g",
                 fontsize=9)
    # pad is a share of the matrix's width: a fixed ~0.15 inch, not a band on wide figures
    fig.colorbar(im, ax=ax, label="MI(x, l), bits", shrink=0.9,
                 pad=min(0.05, 0.15 / fig.get_figwidth()))
    from coreselect.files import atomic_path

    path = Path(path)
    try:
        with atomic_path(path) as tmp:  # no half-written PNG on failure
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)
    return path
