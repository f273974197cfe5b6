"""The objective of Ghadiri & Schmidt (2019), eq. (2), and the incremental state that gives
every candidate's marginal gain in O(d) per greedy step.

* ``g(S) = sum over labels l of top^p_{x in S} MI(x, l)``: the sum of the ``p`` largest
  relevances to ``l`` among the selected features (all of them when ``|S| < p``). It is
  non-negative, monotone and submodular (the paper's Lemma 1).
* ``D(S) = sum over unordered pairs {u, v} of S of d(u, v)`` (sum-sum diversity).
* ``h(S) = (1 - lam) * c * g(S) + lam * D(S)`` with ``c = k (k - 1) / (2 p |L|)``, ``k`` the
  requested number of features (the coefficient puts both terms on the same range).

``ObjectiveParams.calibration`` chooses how the greedy weighs the two marginal gains at each
step (:data:`CALIBRATIONS`, :func:`coreselect.core.greedy.step_scores`): ``"paper"`` is eq. (2);
``"range"`` min-max scales each gain over the remaining candidates (unit-free);
``"information"`` does the same against the information a candidate shares with the selection,
in bits, instead of its distances to it, each label counting its ``p`` best selected features
with ``p`` from ``k`` and the number of labels (:func:`default_p`). Both were better across the shared datasets
(docs/results/calibration.md), at the price of the paper's fixed objective and its bounds.
The library default :data:`DEFAULT_CALIBRATION` (``"auto"``) is decided from the data
(:func:`data_calibration`): the conditional criterion ``"cmim"`` (:data:`CONDITIONAL`) on dense
numeric columns, ``"information"`` elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Scores within this relative distance of the best count as tied; ties go to the lowest
#: column index (the paper's consistent tie-breaking), robustly against float rounding.
TIE_RTOL = 1e-9

#: How the relevance and diversity terms are weighed against each other in each greedy step
#: (see :func:`coreselect.core.greedy.step_scores` and docs/results/calibration.md):
#:
#: * ``"paper"``: eq. (2) exactly, ``(1-lam) c dg + lam dD`` (reproduces the paper's Table 2);
#: * ``"spread"``: each marginal-gain vector divided by its standard deviation over the
#:   remaining candidates, ``(1-lam) dg/sd(dg) + lam dD/sd(dD)``;
#: * ``"range"``: each marginal-gain vector min-max scaled to [0, 1] over the
#:   remaining candidates, ``(1-lam) dg' + lam dD'``;
#: * ``"balanced"``: as ``"range"``, with the diversity spread at least one distance unit;
#: * ``"ratio"``: ``dg^(1-lam) * (dD/|S|)^lam``, the relevance gain times a power of the mean
#:   distance to the selection (a product, so no exchange rate between bits and distances);
#: * ``"fixed"``: eq. (2)'s form with an exchange rate fixed once per run, from the whole
#:   data's first steps: ``h = (1-lam) g / R_g + lam D / R_D`` (:attr:`ObjectiveParams.ranges`,
#:   :func:`coreselect.core.greedy.first_ranges`). A fixed objective, so the paper's bounds
#:   hold for it (AltGreedy halves the relevance weight, as in eq. (2));
#: * ``"information"`` (the default on sparse data, :data:`AUTO`): as ``"range"``, with the diversity gain of a candidate
#:   ``v`` replaced by ``-sum_{x in S} I(x; v)``, minus the information it shares with the
#:   selection in bits (the redundancy of mRMR and of the published selectors, where the
#:   distance ``d = 1 - I/H`` counts a rare near-copy as far away), and ``p`` by default
#:   ``max(3, ceil(4 k / |L|))`` (:func:`default_p`): a label served by its three best
#:   features stops drawing picks, while the labels' lists keep room for four times the
#:   selection, so the relevance never runs dry on data with few labels.
#:
#: All but ``"paper"`` pick the same features whatever the unit of MI (bits or nats); the
#: per-step ones (spread, range, balanced, ratio, information) skip copies (distance 0) of
#: selected features while anything else is left.
CALIBRATIONS = ("paper", "spread", "range", "balanced", "ratio", "fixed", "information")
#: The library default: the criterion is decided from the data once its columns are binned
#: (:func:`data_calibration`), ``"cmim"`` on dense numeric columns, ``"information"``
#: elsewhere.
AUTO = "auto"
DEFAULT_CALIBRATION = AUTO
#: ``"auto"`` takes ``"cmim"`` where at least this share of the cells of the non-constant
#: columns hold a non-zero code: dense numeric columns binned in equal-frequency bins have
#: about ``1 - 1/n_bins`` (0.8 with five bins); text, counts and other sparse columns, whose
#: zero is their code 0, a few per cent (docs/results/dense_research.md).
DENSE_SHARE = 0.5
#: ``rows x features x labels x k`` above which ``"auto"`` does not take the conditional
#: criterion: each of its steps counts every (feature, label) pair over the rows where the
#: new pick is not 0, tens of times the weighing's step on dense data with many labels (about
#: tens of seconds of selection at this size on 2 cores); it was
#: measured better on small and mid-sized dense data only.
CONDITIONAL_MAX_WORK = 3 * 10**10
#: Cells of the (features x labels) tables the conditional criterion keeps (each label's worst
#: case so far, and one step's conditional information): refused above this rather than
#: exhausting memory, and never chosen by ``"auto"``.
CONDITIONAL_MAX_CELLS = 200_000_000
#: Calibrations whose diversity gain is the negative information shared with the selection
#: (:func:`coreselect.core.entropy.shared_information`) instead of the distance sum.
SHARED_INFORMATION = ("information",)
#: ``p`` at least as large as any selection: the top-p sum counts every selected feature.
P_ALL = 2**31 - 1
#: ``p`` of every calibration but those of :func:`default_p` (the paper's).
PAPER_P = 10


#: Criteria accepted where a calibration is that replace the weighing of relevance against
#: diversity by conditional terms (:mod:`coreselect.core.conditional`): ``"cmim"`` picks the
#: candidate of largest ``sum_l min_{s in S} I(f; l | s)``. Every mode runs them (their
#: counts add over rows; Algorithm 3 runs the criterion on each part and on the union), no
#: checkpoint records them; ``lam``, ``p`` and ``relevance`` do not apply.
CONDITIONAL = ("cmim",)


def accepted_calibrations() -> tuple[str, ...]:
    """Every name ``calibration`` accepts: :data:`AUTO`, the weighings and the conditional
    criteria (read at every call: the tuples may grow)."""
    return (AUTO, *CALIBRATIONS, *CONDITIONAL)


def data_calibration(nonzero_share: float | None, n_features: int, n_labels: int,
                     n_samples: int = 0, k: int = 1) -> str:
    """What ``"auto"`` stands for on some data: ``"cmim"`` when at least
    :data:`DENSE_SHARE` of the cells of the non-constant columns hold a non-zero code
    (``nonzero_share``; None: not known), its tables fit (:data:`CONDITIONAL_MAX_CELLS`) and
    its steps cost at most :data:`CONDITIONAL_MAX_WORK`; ``"information"`` otherwise. Decided
    from counts that add over rows and from the shape, so every mode decides alike."""
    if nonzero_share is None or nonzero_share < DENSE_SHARE:
        return "information"
    if n_features * max(n_labels, 1) > CONDITIONAL_MAX_CELLS:
        return "information"
    if n_samples * n_features * max(n_labels, 1) * max(k, 1) > CONDITIONAL_MAX_WORK:
        return "information"
    return "cmim"


#: ``"information"``'s top-p cut unless one is given: each label counts at least this many
#: of its most relevant selected features, and more where the labels' lists would otherwise
#: hold fewer than :data:`INFORMATION_ROOM` times the selection (:func:`default_p`).
INFORMATION_MIN_P = 3
INFORMATION_ROOM = 4


def default_p(calibration: str, k: int | None = None, n_labels: int | None = None) -> int:
    """The ``p`` a calibration uses unless one is given: the paper's 10, or for
    ``"information"`` ``max(3, ceil(4 k / |L|))`` when ``k`` and the number of labels are
    known (:data:`P_ALL`, every selected feature, before they are).

    Under ``"information"`` a label's gain from a candidate is what it adds above the label's
    ``p``-th best selected relevance, so once a label holds ``p`` good features the next picks
    go to labels not yet served (rare labels included) instead of piling onto the frequent
    ones. The ``p`` lists of the labels have room for at least four times the selection, so on
    data with few labels the relevance never runs dry before ``k`` (where ``p = 3`` would
    leave the redundancy alone to pick). Chosen leave-one-dataset-out over the shared data
    sets (docs/results/sparse_research.md)."""
    if calibration not in SHARED_INFORMATION:
        return PAPER_P
    if k is None or not n_labels:
        return P_ALL
    # ceil(4 k / |L|) in exact integers
    return int(min(P_ALL, max(INFORMATION_MIN_P, -(-INFORMATION_ROOM * int(k) // int(n_labels)))))


#: One line per calibration, for help texts (the command line's ``--calibration``).
CALIBRATION_HELP = {
    "paper": "the paper's eq. (2), (1-lam) c dg + lam dD (reproduces its Table 2)",
    "spread": "each gain divided by its standard deviation over the candidates",
    "range": "each gain min-max scaled to [0, 1] over the candidates",
    "balanced": "as range, with the diversity spread at least one distance unit",
    "ratio": "dg^(1-lam) * (dD/|S|)^lam, a product: no exchange rate between bits and distances",
    "fixed": "(1-lam) g/R_g + lam D/R_D, ranges of the first steps fixed once per run "
             "(a fixed objective: the paper's bounds hold)",
    "information": "as range, against the information shared with the selection (bits) "
                   "instead of the distances, p = max(3, ceil(4 k / labels)) by default",
    "auto": "the default: cmim where most cells of the binned columns are non-zero (dense "
            "numeric data), information elsewhere",
    "cmim": "not a weighing: the candidate that tells most about each label given any "
            "selected feature, sum over labels of min over S of I(f; l | s) (CMIM; better "
            "on small dense numeric data)",
}
#: Calibrations whose greedy maximizes one fixed ``h = a g + b D`` (the paper's bounds hold).
FIXED_OBJECTIVE = ("paper", "fixed")


@dataclass(frozen=True)
class ObjectiveParams:
    """Parameters of ``h``: ``k`` requested features, weight ``lam``, ``p`` per label, and the
    ``calibration`` of the greedy step (``"paper"``, eq. (2), unless given: callers that want
    the library default pass :data:`DEFAULT_CALIBRATION`)."""

    k: int
    lam: float
    p: int
    n_labels: int
    calibration: str = "paper"
    #: ``"fixed"`` only: ``(R_g, R_D)``, the whole data's ranges that fix the exchange rate
    #: (:func:`coreselect.core.greedy.first_ranges`); None until measured (a centralized
    #: greedy measures them itself; Algorithm 3 measures them before partitioning).
    ranges: tuple[float, float] | None = None

    @property
    def coefficient(self) -> float:
        """``c = k (k - 1) / (2 p |L|)``. Under a per-step calibration, ``p =`` :data:`P_ALL`
        (every selected feature counts: at most ``k`` per label) counts as ``k``, so the
        reported ``h`` keeps both terms on the same range; eq. (2) and ``"fixed"`` take ``p``
        as given."""
        p = self.k if self.p >= P_ALL and self.calibration not in FIXED_OBJECTIVE else self.p
        return self.k * (self.k - 1) / (2.0 * p * self.n_labels)

    @property
    def weights(self) -> tuple[float, float]:
        """``(a, b)`` of ``h = a g + b D``: ``((1 - lam) c, lam)`` for eq. (2); for
        ``"fixed"`` ``((1 - lam) / R_g, lam / R_D)`` (a range of 0 counts as 1)."""
        if self.calibration != "fixed":
            return (1.0 - self.lam) * self.coefficient, self.lam
        if self.ranges is None:
            raise ValueError("the 'fixed' calibration's ranges are not measured yet")
        r_g, r_d = (r if r > 0 else 1.0 for r in self.ranges)
        return (1.0 - self.lam) / r_g, self.lam / r_d

    def value(self, relevance: float, diversity: float) -> float:
        """``h = a g + b D`` (eq. (2): ``(1 - lam) c g + lam D``; see :attr:`weights`)."""
        a, b = self.weights
        return a * relevance + b * diversity


def top_p_sum(values: np.ndarray, p: int) -> np.ndarray:
    """Sum of the ``p`` largest entries of each column of ``values`` (shape (m, L))."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape[0] <= p:
        return values.sum(axis=0)
    part = np.partition(values, values.shape[0] - p, axis=0)[values.shape[0] - p:]
    return part.sum(axis=0)


def relevance_of(relevance: np.ndarray, selected, p: int) -> float:
    """``g(S)`` from the relevance matrix rows of the selected features."""
    selected = np.asarray(selected, dtype=np.int64)
    if selected.size == 0:
        return 0.0
    return float(top_p_sum(relevance[selected], p).sum())


def argmax_first(scores: np.ndarray, rtol: float = TIE_RTOL) -> int:
    """Index of the best score; among scores within ``rtol`` of it, the lowest index."""
    best = scores.max()
    if not np.isfinite(best):
        return int(np.argmax(scores))
    tol = rtol * max(1.0, abs(best))
    return int(np.flatnonzero(scores >= best - tol)[0])


def relevance_gains(relevance, p: int, use_numba: bool = False):
    """The incremental gains state for a relevance matrix: :class:`RelevanceGains` for a dense
    array, the sparse form's own state for a
    :class:`~coreselect.core.sparse_relevance.SparseRelevance` (same ``gains``, ``value``,
    ``add``)."""
    if hasattr(relevance, "gains_state"):
        return relevance.gains_state(p, use_numba=use_numba)
    return RelevanceGains(relevance, p, use_numba=use_numba)


def enter_top(top: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Put a new feature's relevances ``vals`` (one per label) into the per-label top-p table
    ``top`` (labels x p, descending; updated in place). Returns the labels whose p-th best
    (the threshold a candidate's gain is measured against) rose, with the thresholds before
    and after."""
    old = top[:, -1].copy()
    enters = np.flatnonzero(vals > old)
    if enters.size == 0:
        return enters, old, old
    merged = np.concatenate([top[enters], vals[enters, None]], axis=1)
    merged = -np.sort(-merged, axis=1)
    top[enters] = merged[:, : top.shape[1]]
    new = top[:, -1]
    return enters[new[enters] > old[enters]], old, new


class RelevanceGains:
    """Marginal gains ``g(S + v) - g(S)`` of every candidate ``v``, updated as ``S`` grows.

    With ``t_l`` the p-th largest relevance to label ``l`` in ``S`` (0 while ``|S| < p``; all
    relevances are >= 0), ``g(S + v) - g(S) = sum_l max(0, MI(v, l) - t_l)``. Thresholds only
    grow, so when ``t_l`` rises from ``a`` to ``b`` every gain drops by
    ``clip(MI(v, l), a, b) - a``, and a candidate with ``MI(v, l) <= b`` never gains from label
    ``l`` again: each label keeps a shrinking list of the candidates that still can.
    """

    def __init__(self, relevance: np.ndarray, p: int, use_numba: bool = False):
        self.relevance = np.asarray(relevance, dtype=np.float64, order="F")
        self.p = int(p)
        d, n_labels = self.relevance.shape
        self.gains = self.relevance.sum(axis=1)  # g({v}) with every threshold at 0
        # Per label, the p largest values, descending. S holds at most d features, so p > d
        # counts them all and d columns suffice (p = 10**18 must not allocate p columns).
        self.top = np.zeros((n_labels, min(self.p, max(d, 1))))
        # Per label, the candidates whose relevance is still above the threshold: they are the
        # front ``n_active[l]`` entries of ``active[l]`` (None until the first rise: all).
        self.active: list[np.ndarray | None] = [None] * n_labels
        self.n_active = np.full(n_labels, d, dtype=np.int64)
        self._lower = self._enter = None
        if use_numba:
            from coreselect.core._numba import enter_top as enter_compiled
            from coreselect.core._numba import lower_gains

            self._lower, self._enter = lower_gains, enter_compiled
            self._front = np.zeros(d, dtype=np.int64)  # a first rise's survivors, then copied
            self._raised = np.empty(n_labels, dtype=np.int64)
            self._old, self._new = np.empty(n_labels), np.empty(n_labels)

    @property
    def value(self) -> float:
        """``g(S)`` of the features added so far."""
        return float(self.top.sum())

    def add(self, u: int) -> None:
        """Add feature ``u`` to ``S`` and update every candidate's gain."""
        if self._enter is not None:
            count = self._enter(self.top, self.relevance[u], self._raised, self._old, self._new)
            for t in range(count):
                self._raise(int(self._raised[t]), self._old[t], self._new[t])
            return
        raised, old, new = enter_top(self.top, self.relevance[u])
        for label in raised:
            self._raise(int(label), old[label], new[label])

    def _raise(self, label: int, low: float, high: float) -> None:
        column = self.relevance[:, label]
        act = self.active[label]
        if act is None and self._lower is not None:
            # First rise: every candidate is active (the same update, in one compiled pass).
            kept = self._lower(column, self._front, column.size, low, high, self.gains, True)
            self.active[label] = self._front[:kept].copy()
            self.n_active[label] = kept
            return
        if act is None:
            # First rise: one branch-free pass over every candidate, then keep the survivors.
            self.gains -= np.clip(column, low, high) - low
            self.active[label] = np.flatnonzero(column > high)
            self.n_active[label] = self.active[label].size
            return
        count = int(self.n_active[label])
        if self._lower is not None:
            self.n_active[label] = self._lower(column, act, count, low, high, self.gains,
                                               False)
            return
        live = act[:count]
        vals = column[live]
        self.gains[live] -= np.clip(vals, low, high) - low
        keep = live[vals > high]
        act[: keep.size] = keep
        self.n_active[label] = keep.size
