"""The evaluation's ``CalibratedGDS``: "paper" is GDSSelector's centralized selection, and the
calibrated default is a ranker (one fit per fold, prefixes for smaller k)."""

from __future__ import annotations

import numpy as np
import pytest

from coreselect import GDSSelector
from coreselect.core.objective import DEFAULT_CALIBRATION
from coreselect.datasets import make_synthesized
from coreselect.errors import InputError
from coreselect.evaluation.gds import CalibratedGDS
from coreselect.evaluation.protocol import method_factories


def test_paper_calibration_is_gdsselector():
    ds = make_synthesized(copies=3)
    ours = CalibratedGDS(k=8, calibration="paper").fit(ds.X, ds.Y)
    theirs = GDSSelector(k=8).fit(ds.X, ds.Y)
    assert list(ours.selected_) == list(theirs.selected_)
    assert not ours.is_ranker


def test_default_gds_method_is_fit_for_each_k():
    """The default's p under "information" grows with k on data with few labels, so the
    protocol fits it for each k (what a user asking for that k gets); with a given p the
    selection of k is the prefix of a longer one, and the protocol ranks once."""
    ds = make_synthesized(copies=3)  # 8 labels: p = max(3, ceil(4 k / 8)) differs for 5 and 12
    gds = method_factories(["gds"])["gds"](12, 0)
    assert gds.calibration == DEFAULT_CALIBRATION and not gds.is_ranker
    for p in (3, 2**31 - 1):
        longer = CalibratedGDS(k=12, calibration="information", p=p)
        assert longer.is_ranker
        longer.fit(ds.X, ds.Y)
        small = CalibratedGDS(k=5, calibration="information", p=p).fit(ds.X, ds.Y)
        assert list(longer.ranking_[:5]) == list(small.selected_)
    assert CalibratedGDS(k=5, calibration="cmim", lam=None, p=None, relevance=None).is_ranker


def test_unknown_calibration():
    with pytest.raises(InputError):
        CalibratedGDS(calibration="nope")
    with pytest.raises(InputError):
        method_factories(["gds-nope"])


def test_cgds_and_dgds_are_the_papers_objective():
    """The protocol's cgds/dgds are the paper's eq. (2); gds is the library default."""
    from coreselect.core.objective import DEFAULT_CALIBRATION
    from coreselect.evaluation.protocol import method_factories

    made = {name: factory(5, 0) for name, factory in
            method_factories(["gds", "cgds", "dgds"]).items()}
    assert made["cgds"].calibration == made["dgds"].calibration == "paper"
    assert made["gds"].calibration == DEFAULT_CALIBRATION != "paper"
