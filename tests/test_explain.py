"""explain.py: coverage, shares and neighbours by hand, and on the synthesized data every
pick explained by the label it was planted for."""

from __future__ import annotations

import numpy as np
import pytest

from coreselect.errors import InputError
from coreselect.selection.explain import coverage, explain_selection, plot_coverage


def test_by_hand():
    rel = np.array([[0.5, 0.0], [0.2, 0.3], [0.1, 0.4]])
    dist = np.array([[0, 0.9, 0.2], [0.9, 0, 0.5], [0.2, 0.5, 0]])
    cover = coverage(rel, p=1)
    assert cover.tolist() == [[True, False], [False, False], [False, True]]
    ex = explain_selection(rel, 1, dist, label_names=["a", "b"], feature_names=["x", "y", "z"])
    assert [e.labels for e in ex] == [("a",), (), ("b",)]
    assert ex[0].g_share == pytest.approx(0.5 / 0.9)
    assert ex[1].g_share == 0.0
    assert (ex[0].nearest, ex[0].nearest_distance) == ("z", 0.2)
    assert ex[1].nearest == "z"
    two = explain_selection(rel, 2, dist, min_share=0.0)
    assert two[1].labels == ("label1", "label0") and two[1].label_relevance == (0.3, 0.2)
    assert sum(e.g_share for e in two) == pytest.approx(1.0)


def test_ties_go_to_earlier_selection():
    rel = np.array([[0.3], [0.3]])
    assert coverage(rel, 1)[:, 0].tolist() == [True, False]


def test_bad_shapes_are_typed_errors():
    with pytest.raises(InputError):
        explain_selection(np.zeros((2, 2)), 1, np.zeros((3, 3)))
    with pytest.raises(InputError):
        coverage(np.zeros(3), 1)
    with pytest.raises(InputError):
        coverage(np.zeros((2, 2)), 0)


def test_synthesized_picks_explained_by_their_planted_label(tmp_path):
    from coreselect import GDSSelector
    from coreselect.core.discretize import discretize, discretize_labels
    from coreselect.core.entropy import pairwise_distances, relevance_matrix
    from coreselect.datasets import make_synthesized

    ds = make_synthesized()
    sel = GDSSelector(k=16).fit(ds.X, ds.Y).selected_
    names = [ds.feature_names[i] for i in sel]
    feats = discretize(ds.X[:, sel])
    rel = relevance_matrix(feats, discretize_labels(ds.Y), "mi")
    ex = explain_selection(rel, 10, pairwise_distances(feats), label_names=ds.label_names,
                           feature_names=names)
    planted = {f"l{j}": f"label{j}" for j in range(8)}
    assert len(ex) == 16
    for e in ex:
        # the planted label comes first; a weak (quarter) copy may also clear min_share on a
        # label it correlates with by chance in 256 samples (MI 0.02 bits against 0.022)
        assert e.labels[0] == planted[e.feature.split("_")[0]], e
        assert e.label_relevance[0] > 2 * max(e.label_relevance[1:], default=0.0)
        assert e.nearest != e.feature
    png = plot_coverage(rel, 10, tmp_path / "coverage.png", label_names=ds.label_names,
                        feature_names=names)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("p", [1, 2**31 - 1])
def test_coverage_figure_says_all_and_clips_nothing(p):
    """p = all (the default calibration's) reads "all", not the machine integer; no dots then
    (every feature counts for every label), the share-of-g bars instead; the title is inside
    the figure, however narrow."""
    import matplotlib.pyplot as plt

    from coreselect.selection.explain import coverage_figure

    rng = np.random.default_rng(0)
    rel = rng.random((3, 4))
    names = [f"a_rather_long_feature_name_{i}" for i in range(3)]
    fig = coverage_figure(rel, p, feature_names=names)
    try:
        fig.canvas.draw()
        title = fig._suptitle.get_text()
        assert "2147483647" not in title
        assert ("(p = all)" in title) == (p > 1) and ("top 1 " in title) == (p == 1)
        box, inside = fig._suptitle.get_window_extent(), fig.bbox
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and box.y1 <= inside.y1
        heat, bars = fig.axes[:2]
        assert (len(heat.collections) > 0) == (p == 1)  # the dots
        shares = [patch.get_width() for patch in bars.patches]
        terms = np.where(coverage(rel, p), rel, 0.0)
        np.testing.assert_allclose(shares, 100 * terms.sum(axis=1) / terms.sum())
    finally:
        plt.close(fig)
