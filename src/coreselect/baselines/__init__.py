"""Baseline feature selectors of the paper's comparison (Section 5): BR/LP x IG/ReliefF, random;
plus ``br-chi2`` and ``max-chi2`` (scikit-learn's chi-squared per label, summed over the labels
or their maximum), the published multi-label MI selectors (:mod:`coreselect.baselines.mi_methods`:
pmu, mdmr, d2f, scls, lrfs, lsmfs, mlsmfs, ppt-mi, igmf, atr) and two embedded selectors
(:mod:`coreselect.baselines.embedded`: ``l1``, L1 logistic regression; ``trees``, extra-trees
importances).

Every baseline is a scikit-learn selector with ``fit(X, Y)``, ``scores_``, ``ranking_`` and
``selected_``. ``BASELINES`` maps the names used by ``coreselect evaluate`` to the classes.
"""

from __future__ import annotations

from coreselect.baselines.chi2 import BRChi2, MaxChi2
from coreselect.baselines.embedded import ExtraTreesImportance, L1Logistic
from coreselect.baselines.information_gain import BRInformationGain, LPInformationGain
from coreselect.baselines.mi_methods import ATR, D2F, IGMF, LRFS, LSMFS, MDMR, MLSMFS, PMU, PPTMI, SCLS
from coreselect.baselines.random import RandomSelector
from coreselect.baselines.relieff import BRReliefF, LPReliefF, relieff_scores
from coreselect.baselines.transform import RankingSelector, binary_relevance_targets, labelset_ids

BASELINES = {
    "br-ig": BRInformationGain,
    "lp-ig": LPInformationGain,
    "br-rf": BRReliefF,
    "lp-rf": LPReliefF,
    "br-chi2": BRChi2,
    "random": RandomSelector,
    "pmu": PMU,
    "mdmr": MDMR,
    "d2f": D2F,
    "scls": SCLS,
    "lrfs": LRFS,
    "lsmfs": LSMFS,
    "mlsmfs": MLSMFS,
    "ppt-mi": PPTMI,
    "igmf": IGMF,
    "atr": ATR,
    "max-chi2": MaxChi2,
    "l1": L1Logistic,
    "trees": ExtraTreesImportance,
}

#: the nine published multi-label MI selectors, by name
PUBLISHED_MI = ("pmu", "mdmr", "d2f", "scls", "lrfs", "lsmfs", "mlsmfs", "ppt-mi", "igmf")
#: every MI selector of the PyIT-MLFS collection: the nine and ATR
PYIT_MLFS = (*PUBLISHED_MI, "atr")

__all__ = [
    "BASELINES",
    "PUBLISHED_MI",
    "PYIT_MLFS",
    "ATR",
    "MaxChi2",
    "L1Logistic",
    "ExtraTreesImportance",
    "PMU",
    "MDMR",
    "D2F",
    "SCLS",
    "LRFS",
    "LSMFS",
    "MLSMFS",
    "PPTMI",
    "IGMF",
    "BRChi2",
    "BRInformationGain",
    "LPInformationGain",
    "BRReliefF",
    "LPReliefF",
    "RandomSelector",
    "RankingSelector",
    "relieff_scores",
    "labelset_ids",
    "binary_relevance_targets",
]
