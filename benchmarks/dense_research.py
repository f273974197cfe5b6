"""What is estimated on dense numeric columns, and how: the default's five equal-frequency
bins against more bins, fewer bins, bins that grow with the sample size, supervised cut points,
a nearest-neighbour estimate, label-entropy weighting, conditional criteria (JMI, CMIM) and
CMIM aware of its estimate's noise (bias-corrected, or stopped by a test and then filled by
diversity), the default on resamples of the rows with the orders merged, chosen
leave-one-dataset-out against every rival.

    python benchmarks/dense_research.py run [--datasets emotions,scene,yeast,CAL500]
                                            [--methods gds-b3,gds-b8,...] [--folds 3]
    python benchmarks/dense_research.py shares [--max-rows 6000]
    python benchmarks/dense_research.py mixed [--datasets emotions,scene,yeast,CAL500]
    python benchmarks/dense_research.py report

``run`` cross-validates each candidate with ``run_protocol`` (what ``coreselect evaluate`` runs:
selection fit on the training folds only, seed 0) on the same folds, k and evaluators as
``benchmarks/rivals.py run``; one CSV per dataset in docs/results/dense_research/. ``report``
puts these rows beside the rivals' rows of docs/results/rivals/ (the default ``gds`` and every
rival come from there) and writes docs/results/dense_research.md: every candidate's cells
against the best rival, and the candidate a leave-one-dataset-out choice picks for each held-out
set (the rule of ``rivals.py``'s choice of the default).

Why the dense sets only: on binary columns (every sparse set here but rcv1subset1) a column has
at most two distinct values, so every binning candidate gives the default's codes and its
selection. The conditional criteria do differ there, but need a (column, selected column, label)
count table for every column and label at every step: d x |L| tables of n rows per step, minutes
per selection on the wide sets; they are measured where they are cheap first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import REPO_ROOT, cross_validate, emit, md_table, write_csv  # noqa: E402
from published import ORDER, load_rows  # noqa: E402
from rivals import DENSE, MEASURES, OUT as RIVALS_OUT, RIVALS, _counts, _share, leave_one_dataset_out, verdicts  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "dense_research"
REPORT = REPO_ROOT / "docs" / "results" / "dense_research.md"

#: The calibration the binning and relevance candidates change one thing of: the weighing the
#: default takes on sparse data, and took everywhere when they were measured.
WEIGHING = "information"

#: candidate -> bins per split column: an int, or "cbrt" (the cube root of the training rows,
#: never fewer than 5: bins that grow with n, decided from n in the first pass)
BINS: dict[str, int | str] = {"gds-b2": 2, "gds-b3": 3, "gds-b4": 4, "gds-b8": 8, "gds-b12": 12,
                              "gds-bcbrt": "cbrt"}


def bins_for(rule: int | str, n_samples: int) -> int:
    """The number of bins of a split column under ``rule`` on ``n_samples`` training rows."""
    if rule == "cbrt":
        return max(5, int(round(n_samples ** (1 / 3))))
    return int(rule)


def _gds(k: int, seed: int, calibration: str = WEIGHING, **options):
    """The library's centralized GDS with ``calibration`` (``"cmim"``, the conditional
    criterion, takes no weight, top-p cut or relevance measure), on five bins unless
    ``options`` say otherwise: the candidates were measured on five bins at every size, the
    library's binning before ``n_bins="auto"``."""
    from coreselect.evaluation.gds import CalibratedGDS

    unweighted = dict(lam=None, p=None, relevance=None) if calibration == "cmim" else {}
    return CalibratedGDS(k=k, calibration=calibration, random_state=seed, **unweighted,
                         **{"n_bins": 5, **options})


def _then_default_order(sel: list, X, Y, k: int, seed: int) -> np.ndarray:
    """``sel``, then the weighing's order (five equal-frequency bins, every column of ``X``)
    up to ``k`` picks: where the columns ``sel`` was chosen among ran out before ``k``."""
    if len(sel) < k:
        rest = _gds(k, seed).fit(X, Y).selected_
        sel = sel + [c for c in rest if c not in set(sel)][:k - len(sel)]
    return np.asarray(sel, dtype=np.int64)


class _Ranker:
    """A candidate as the protocol takes it: ``fit(X, Y)`` sets ``selected_`` (the selection
    order, so its first ``k`` are the selection of ``k``) and ``seconds_``."""

    is_ranker = True

    def __init__(self, k: int, seed: int, kind: str | None = None):
        self.k, self.seed, self.kind = k, seed, kind

    @property
    def ranking_(self) -> np.ndarray:
        return self.selected_


class _Binned(_Ranker):
    """Centralized GDS with the bins of one :data:`BINS` rule: the weighing
    (:data:`WEIGHING`) otherwise, or the library's ``calibration="cmim"`` (which takes no
    weight, top-p cut or relevance measure)."""

    def __init__(self, k: int, seed: int, rule: int | str, calibration: str = WEIGHING):
        super().__init__(k, seed)
        self.rule, self.calibration = rule, calibration

    def fit(self, X, Y) -> "_Binned":
        inner = _gds(self.k, self.seed, self.calibration,
                     n_bins=bins_for(self.rule, X.shape[0])).fit(X, Y)
        self.selected_, self.seconds_ = inner.selected_, inner.seconds_
        return self


class _Relevance(_Ranker):
    """Centralized GDS (:data:`WEIGHING`) with another feature-label relevance matrix in
    place of the binned MI: ``"ksg"``, the nearest-neighbour estimate of I(x; l) on the raw
    column (Kraskov et al. 2004, scikit-learn's ``mutual_info_classif``, 3 neighbours, in
    bits); ``"uc"``, the binned MI over the label's entropy (the share of each label's
    uncertainty a feature explains: rare labels weigh as much as common ones). The redundancy
    term stays the binned one. A research probe: the nearest-neighbour estimate is not a count
    table, so it would not be exact in the row-chunked or distributed modes."""


    def _matrix(self, X, Y, base):
        def binned(features, labels, kind="mi", *args, **kwargs):
            M = np.asarray(base(features, labels, kind, *args, **kwargs), dtype=np.float64)
            if self.kind == "uc":
                q = np.asarray(Y, dtype=np.float64).mean(axis=0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    h = -(q * np.log2(q) + (1 - q) * np.log2(1 - q))
                M = np.where(np.nan_to_num(h) > 0, M / np.where(h > 0, h, 1), 0.0)
            return M

        def ksg(features, labels, kind="mi", *args, **kwargs):
            from sklearn.feature_selection import mutual_info_classif

            Xd = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
            Yd = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y)
            M = np.zeros((Xd.shape[1], Yd.shape[1]))
            for j in range(Yd.shape[1]):
                if Yd[:, j].min() != Yd[:, j].max():
                    M[:, j] = mutual_info_classif(Xd, Yd[:, j], n_neighbors=3,
                                                  random_state=self.seed or 0) / np.log(2)
            return M

        return ksg if self.kind == "ksg" else binned

    def fit(self, X, Y) -> "_Relevance":
        import coreselect.core.problem as problem

        base = problem.relevance_matrix
        problem.relevance_matrix = self._matrix(X, Y, base)
        try:
            inner = _gds(self.k, self.seed).fit(X, Y)
        finally:
            problem.relevance_matrix = base
        self.selected_, self.seconds_ = inner.selected_, inner.seconds_
        return self


def _entropy(counts: np.ndarray) -> np.ndarray:
    """Entropy in bits of each row of class counts."""
    tot = counts.sum(axis=-1, keepdims=True)
    p = np.divide(counts, tot, out=np.zeros_like(counts, dtype=np.float64), where=tot > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.nansum(np.where(p > 0, p * np.log2(p), 0.0), axis=-1)


def mdl_cuts(x: np.ndarray, y: np.ndarray) -> list[tuple[float, float]]:
    """Fayyad and Irani's (1993) supervised cut points of ``x`` for the binary class ``y``:
    the entropy-best boundary between distinct values, kept when its information gain passes
    the MDL criterion, then the same on each side. Returns ``(cut, gain)`` pairs."""
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order].astype(np.int64)
    out: list[tuple[float, float]] = []
    stack = [(0, xs.size)]
    while stack:
        a, b = stack.pop()
        n = b - a
        if n < 4:
            continue
        seg_x, seg_y = xs[a:b], ys[a:b]
        pos = np.cumsum(seg_y)[:-1]
        left_n = np.arange(1, n)
        ok = seg_x[1:] != seg_x[:-1]  # boundaries between distinct values only
        if not ok.any():
            continue
        tot_pos = int(seg_y.sum())
        left = np.column_stack([left_n - pos, pos]).astype(np.float64)
        right = np.column_stack([(n - left_n) - (tot_pos - pos), tot_pos - pos]).astype(np.float64)
        e = (left_n * _entropy(left) + (n - left_n) * _entropy(right)) / n
        e = np.where(ok, e, np.inf)
        i = int(np.argmin(e))
        whole = _entropy(np.array([[n - tot_pos, tot_pos]], dtype=np.float64))[0]
        gain = whole - e[i]
        k = int(tot_pos > 0) + int(tot_pos < n)
        k1 = int(left[i, 1] > 0) + int(left[i, 0] > 0)
        k2 = int(right[i, 1] > 0) + int(right[i, 0] > 0)
        delta = np.log2(3 ** k - 2) - (k * whole - k1 * _entropy(left[i:i + 1])[0]
                                       - k2 * _entropy(right[i:i + 1])[0])
        if gain > (np.log2(n - 1) + delta) / n:
            out.append((float((seg_x[i] + seg_x[i + 1]) / 2), float(gain)))
            stack += [(a, a + i + 1), (a + i + 1, b)]
    return out


def supervised_codes(X: np.ndarray, Y: np.ndarray, max_bins: int = 10) -> np.ndarray:
    """Integer codes of every column of ``X`` from its MDL cut points for each label (the
    union; the ``max_bins - 1`` of largest gain when there are more): decided from the training
    rows in one pass, after which every count table adds over rows as the unsupervised bins'
    do. A column with no cut for any label gets one code (constant: never selected)."""
    codes = np.zeros(X.shape, dtype=np.int64)
    for j in range(X.shape[1]):
        cuts: dict[float, float] = {}
        for l in range(Y.shape[1]):
            if Y[:, l].min() == Y[:, l].max():
                continue
            for c, g in mdl_cuts(X[:, j], Y[:, l]):
                cuts[c] = max(cuts.get(c, 0.0), g)
        keep = sorted(sorted(cuts, key=lambda c: -cuts[c])[:max_bins - 1])
        codes[:, j] = np.searchsorted(np.asarray(keep), X[:, j], side="right") if keep else 0
    return codes


class _Supervised(_Ranker):
    """Centralized GDS (:data:`WEIGHING`, or ``calibration``) on supervised cut points
    (:func:`supervised_codes`) instead of five equal-frequency bins; the codes are used as they
    are (``strategy="none"``). A column with no cut for any label is constant there: with
    ``fill="order"`` such columns come after the others, in the default's order on five
    equal-frequency bins; with ``fill="bins"`` they keep those five bins in the one selection
    (no second pass)."""

    def __init__(self, k: int, seed: int, calibration: str = WEIGHING, fill: str = "order"):
        super().__init__(k, seed)
        self.calibration, self.fill = calibration, fill

    def fit(self, X, Y) -> "_Supervised":
        from coreselect.core.discretize import discretize

        Xd = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        Yd = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y)
        import time

        t0 = time.perf_counter()
        codes = supervised_codes(Xd, Yd)
        cut = codes.max(axis=0) > codes.min(axis=0)
        if self.fill == "bins":
            binned = discretize(Xd, n_bins=5).codes.toarray()
            codes[:, ~cut] = binned[:, ~cut]
            cut = codes.max(axis=0) > codes.min(axis=0)
        varying = int(cut.sum())
        sel = list(_gds(min(self.k, varying), self.seed, self.calibration,
                        strategy="none").fit(codes, Yd).selected_) if varying else []
        # columns without a cut are constant: the default's order after the others
        self.selected_ = _then_default_order(sel, Xd, Yd, self.k, self.seed)
        self.seconds_ = time.perf_counter() - t0
        return self


class _Bagged(_Ranker):
    """The library's default (``CalibratedGDS`` as users run it: ``n_bins="auto"``) fit on
    ``replicates`` resamples of the training fold, its orders merged: a column scores
    ``K - position`` in each resample's order of ``K`` picks (0 where not picked), the
    columns are taken by their summed score, ties by the default's order on the whole fold
    (Borda's count; ensemble feature selection: Saeys, Abeel and Van de Peer, ECML PKDD
    2008). ``scheme`` ``"bootstrap"``: ``n`` rows drawn with replacement; ``"half"``: half
    the rows without replacement (stability selection: Meinshausen and Bühlmann, JRSS B
    2010). A research probe: the resamples are drawn from the rows in memory."""

    def __init__(self, k: int, seed: int, scheme: str, replicates: int = 20):
        super().__init__(k, seed)
        self.scheme, self.replicates = scheme, replicates

    def fit(self, X, Y) -> "_Bagged":
        import time

        from coreselect.errors import InputError
        from coreselect.evaluation.gds import CalibratedGDS

        t0 = time.perf_counter()
        n, d = X.shape
        whole = list(CalibratedGDS(k=self.k, random_state=self.seed).fit(X, Y).selected_)
        K = len(whole)
        score = np.zeros(d)
        rng = np.random.default_rng(self.seed)
        for _ in range(self.replicates):
            rows = (rng.integers(0, n, n) if self.scheme == "bootstrap"
                    else np.sort(rng.choice(n, n // 2, replace=False)))
            try:
                order = CalibratedGDS(k=K, random_state=self.seed).fit(X[rows], Y[rows]).selected_
            except InputError:  # fewer than K columns vary in the resample: it has no say
                order = []
            for position, column in enumerate(order):
                score[column] += K - position
        tie = np.full(d, d, dtype=np.float64)
        tie[whole] = np.arange(K)
        ranked = np.lexsort((tie, -score))  # by score, then the whole fold's order
        kept = set(whole)  # K columns at least: the whole fold's picks
        self.selected_ = np.asarray([c for c in ranked if score[c] > 0 or c in kept][:K],
                                    dtype=np.int64)
        self.seconds_ = time.perf_counter() - t0
        return self


#: the default on resamples of the training fold, merged (:class:`_Bagged`)
BAGGED = {"gds-bag": "bootstrap", "gds-half": "half"}
BAGGED_WHAT = {"bootstrap": "the default on 20 bootstrap resamples, merged by rank",
               "half": "the default on 20 half-samples, merged by rank"}


class _Screened(_Ranker):
    """The library's selection (:data:`WEIGHING`, or ``calibration``) on the columns whose
    five equal-frequency bins pass a G-test of independence against at least one label
    (``2 N ln 2 I(f; l)`` above the chi-squared quantile ``1 - alpha`` with
    ``(codes of f - 1)(codes of l - 1)`` degrees of freedom), then the others in the
    default's order, as :class:`_Supervised` places the columns with no cut: MDL's screen
    without its supervised bins. Decided from the count tables, so every mode could run it."""

    def __init__(self, k: int, seed: int, calibration: str = WEIGHING, alpha: float = 0.05):
        super().__init__(k, seed)
        self.calibration, self.alpha = calibration, alpha

    def fit(self, X, Y) -> "_Screened":
        import time

        from scipy.stats import chi2

        from coreselect.core.discretize import discretize, discretize_labels
        from coreselect.core.entropy import relevance_matrix

        t0 = time.perf_counter()
        D, L = discretize(X, n_bins=5), discretize_labels(Y)
        mi = relevance_matrix(D, L, kind="mi")
        df = np.outer(np.asarray(D.n_codes, float) - 1, np.asarray(L.n_codes, float) - 1)
        g = 2 * D.n_samples * np.log(2) * mi
        passed = ((g > chi2.ppf(1 - self.alpha, np.maximum(df, 1))) & (df > 0)).any(axis=1)
        keep = np.flatnonzero(passed)
        sel = []
        if keep.size:
            sub = _gds(min(self.k, keep.size), self.seed,
                       self.calibration).fit(X[:, keep], Y).selected_
            sel = [int(keep[c]) for c in sub]
        # the columns that pass no test: the default's order after the others
        self.selected_ = _then_default_order(sel, X, Y, self.k, self.seed)
        self.seconds_ = time.perf_counter() - t0
        return self


#: the screen of :class:`_Screened`: calibration
SCREENED = {"gds-screen": WEIGHING, "gds-cmim-screen": "cmim"}


#: supervised cut points (:class:`_Supervised`): calibration, and how the columns with no cut
#: are placed
SUPERVISED = {"gds-mdl": (WEIGHING, "order"), "gds-mdl-cmim": ("cmim", "order"),
              "gds-mdl-bins": (WEIGHING, "bins")}
SUPERVISED_WHAT = {"gds-mdl": "mdl", "gds-mdl-cmim": "mdl, cmim",
                   "gds-mdl-bins": "mdl, columns with no cut in five bins",
                   "gds-screen": "5, information on the columns a G-test keeps first",
                   "gds-cmim-screen": "5, cmim on the columns a G-test keeps first"}


class _ConditionalOrder(_Ranker):
    """A conditional criterion on the default's codes (five equal-frequency bins) in place of
    relevance against pairwise redundancy (Brown et al., JMLR 2012), with the library's tables
    (:mod:`coreselect.core.conditional`) and first pick (the largest ``sum_l I(f; l)``); a
    subclass says how each pick's ``sum_l I(f; l | s)`` enters the next score."""

    def combine(self, score: np.ndarray, given: np.ndarray, first: bool) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, Y) -> "_ConditionalOrder":
        import time

        from coreselect.core.conditional import (
            ConditionalTables, conditional_counts, step_counts,
        )
        from coreselect.core.discretize import discretize, discretize_labels
        from coreselect.core.objective import argmax_first

        t0 = time.perf_counter()
        D, L = discretize(X, n_bins=5), discretize_labels(Y)
        tables = ConditionalTables(D.n_codes, L.n_codes, conditional_counts(D, L))
        score = tables.relevance().sum(axis=1)
        penalty = np.where(D.n_codes > 1, 0.0, -np.inf)
        chosen: list[int] = []
        for _ in range(min(self.k, int((D.n_codes > 1).sum()))):
            pick = argmax_first(score + penalty)
            chosen.append(pick)
            penalty[pick] = -np.inf
            given = tables.given(step_counts(D, L, pick)).sum(axis=1)
            score = self.combine(score, given, first=len(chosen) == 1)
        self.selected_ = np.asarray(chosen, dtype=np.int64)
        self.seconds_ = time.perf_counter() - t0
        return self


class _JointMI(_ConditionalOrder):
    """Joint mutual information summed over the labels: the column of largest
    ``sum_s sum_l I(f; l | s)`` over the selected ``s`` (``I(f,s; l) = I(s; l) +
    I(f; l | s)``), where the library's CMIM takes the smallest over ``s``."""

    def combine(self, score, given, first):
        return given if first else score + given


class _JointCMIM(_ConditionalOrder):
    """CMIM with the labels taken together: the column of largest
    ``min_s sum_l I(f; l | s)`` (the selected column that explains the most about all labels
    at once), where the library's takes each label's own worst case, ``sum_l min_s``, which
    falls faster as the selection grows."""

    def combine(self, score, given, first):
        return given if first else np.minimum(score, given)


class _CMIMNoise(_Ranker):
    """The library's CMIM with the plug-in estimate's noise taken into account, three ways
    (``how``). Under independence, ``2 N ln 2 I(f; l | s)`` follows a chi-squared law whose
    degrees of freedom ``(codes of f - 1)(codes of l - 1)(codes of s)`` give the estimate's
    bias (``df / (2 N ln 2)`` bits, Miller and Madow):

    - ``"mm"``: each ``I(f; l | s)`` less its bias (Miller-Madow) before the smallest over
      ``s``; a label's term never below 0;
    - ``"stop"``: the plain criterion until no candidate has a label whose term passes the
      chi-squared test (5 %, Bonferroni over candidates and labels); then nothing left is
      told apart from noise, and the rest is picked by the largest sum of distances to the
      selection (the paper's diversity);
    - ``"bias"``: the same fill once the best criterion falls to its expected bias;
    - ``"tie"``: among the candidates whose criterion is within one standard deviation of the
      statistic under independence (``sqrt(2 df) / (2 N ln 2)``, ``df`` summed over the
      labels) of the best, the one farthest from the selection (the sum of distances): the
      criterion picks where it tells candidates apart, diversity where it does not;
    - ``"tie-relevance"``: the same near-ties, the one of largest relevance ``sum_l I(f; l)``
      among them (where the criterion cannot tell them apart, the column that says most about
      the labels on its own);
    - ``"rare"``: each label's term over that label's entropy ``H(l)`` before the sum, so a
      label counts by the share of its uncertainty a column removes, not by its bits: a rare
      label (little entropy), which macro F1 weighs as much as a frequent one, counts as
      much in the criterion too.
    """

    def __init__(self, k: int, seed: int, how: str):
        super().__init__(k, seed)
        self.how = how

    def fit(self, X, Y) -> "_CMIMNoise":
        import time

        from scipy.stats import chi2

        from coreselect.core.conditional import (
            ConditionalTables, conditional_counts, step_counts,
        )
        from coreselect.core.discretize import discretize, discretize_labels
        from coreselect.core.entropy import DistanceOracle, entropy
        from coreselect.core.objective import argmax_first

        t0 = time.perf_counter()
        D, L = discretize(X, n_bins=5), discretize_labels(Y)
        h = entropy(L)
        weight = np.where(h > 0, 1.0 / np.where(h > 0, h, 1.0), 0.0)  # "rare": 1 / H(l)
        tables = ConditionalTables(D.n_codes, L.n_codes, conditional_counts(D, L))
        oracle = DistanceOracle(D)
        scale = 2 * D.n_samples * np.log(2)  # 2 N ln 2: bits to the chi-squared statistic
        df1 = np.outer(np.asarray(D.n_codes, float) - 1, np.asarray(L.n_codes, float) - 1)
        critical = 0.05 / max(df1.size, 1)
        term = tables.relevance()          # per (candidate, label): the smallest over s
        relevance = term.sum(axis=1)       # sum over labels of I(f; l), for "tie-relevance"
        df = df1.copy()                    # its degrees of freedom
        live = np.asarray(D.n_codes) > 1
        penalty = np.where(live, 0.0, -np.inf)
        spread = np.zeros(D.n_columns)
        chosen: list[int] = []
        filling = False
        self.stop_ = None
        for _ in range(min(self.k, int(live.sum()))):
            noise = df / scale
            score = (np.maximum(term - noise, 0.0) if self.how == "mm"
                     else term * weight if self.how == "rare" else term).sum(axis=1)
            if chosen and not filling and self.how in ("stop", "bias"):
                open_ = penalty == 0
                if self.how == "stop":
                    passed = term > chi2.ppf(1 - critical, np.maximum(df, 1)) / scale
                    filling = not (passed.any(axis=1) & open_).any()
                else:
                    filling = not ((score > noise.sum(axis=1)) & open_).any()
                if filling:
                    self.stop_ = len(chosen)
            if self.how in ("tie", "tie-relevance"):
                best = argmax_first(score + penalty)
                sd = np.sqrt(2 * df[best].sum()) / scale
                near = np.where(score >= score[best] - sd, 0.0, -np.inf)
                pick = argmax_first((spread if self.how == "tie" else relevance) + near + penalty)
            else:
                pick = argmax_first((spread if filling else score) + penalty)
            chosen.append(pick)
            penalty[pick] = -np.inf
            spread += oracle.distances_from(pick)
            parts = step_counts(D, L, pick)
            given, given_df = tables.given(parts), df1 * (len(parts) + 1)
            if len(chosen) == 1:  # the smallest over the selected columns only
                term, df = given, given_df
            else:
                lower = (given - given_df / scale < term - df / scale if self.how == "mm"
                         else given < term)
                term, df = np.where(lower, given, term), np.where(lower, given_df, df)
        self.selected_ = np.asarray(chosen, dtype=np.int64)
        self.seconds_ = time.perf_counter() - t0
        return self


#: CMIM with the estimate's noise taken into account, or its labels weighted
#: (:class:`_CMIMNoise`)
NOISE = {"gds-cmim-mm": "mm", "gds-cmim-stop": "stop", "gds-cmim-bias": "bias",
         "gds-cmim-tie": "tie", "gds-cmim-tie-relevance": "tie-relevance",
         "gds-cmim-rare": "rare"}
NOISE_WHAT = {"mm": "cmim, bias-corrected", "stop": "cmim, then diversity after a test",
              "bias": "cmim, then diversity at the bias",
              "tie": "cmim, diversity among near-ties",
              "tie-relevance": "cmim, relevance among near-ties",
              "rare": "cmim, each label's term over its entropy"}


#: the library's CMIM on the bins of a :data:`BINS` rule (:class:`_Binned`): fewer cells per
#: conditional table (``bins x bins x label codes``) estimate each term with less bias
CMIM_BINS: dict[str, int | str] = {"gds-cmim-b3": 3, "gds-cmim-b4": 4, "gds-cmim-b8": 8,
                                   "gds-cmim-bcbrt": "cbrt"}


#: candidates with a conditional criterion (``gds-cmim``: the library's; ``gds-jmi``:
#: :class:`_JointMI`)
CONDITIONAL = {"gds-jmi": "jmi", "gds-cmim": "cmim", "gds-cmimj": "cmim, labels together"}

#: candidates with another relevance matrix (:class:`_Relevance`)
RELEVANCE = {"gds-ksg": "ksg", "gds-uc": "uc"}


def factory(name: str):
    if name in SUPERVISED:
        return lambda k, seed: _Supervised(k, seed, *SUPERVISED[name])
    if name in SCREENED:
        return lambda k, seed: _Screened(k, seed, SCREENED[name])
    if name == "gds-cmim":  # the library's calibration="cmim" (what users run)
        return lambda k, seed: _gds(k, seed, "cmim")
    if name == "gds-information":  # the weighing on every set (the default before "auto")
        return lambda k, seed: _gds(k, seed)
    if name == "gds-five":  # the default on five bins at every size (before n_bins="auto")
        return lambda k, seed: _gds(k, seed, "auto")
    if name == "gds-jmi":
        return lambda k, seed: _JointMI(k, seed)
    if name == "gds-cmimj":
        return lambda k, seed: _JointCMIM(k, seed)
    if name in RELEVANCE:
        return lambda k, seed: _Relevance(k, seed, RELEVANCE[name])
    if name in NOISE:
        return lambda k, seed: _CMIMNoise(k, seed, NOISE[name])
    if name in BAGGED:
        return lambda k, seed: _Bagged(k, seed, BAGGED[name])
    if name in CMIM_BINS:  # the library's cmim on other bins
        return lambda k, seed: _Binned(k, seed, CMIM_BINS[name], "cmim")
    return lambda k, seed: _Binned(k, seed, BINS[name])


def run(datasets: list[str], methods: list[str], folds: int, max_rows: int) -> None:
    for name in datasets:
        X, Y, n_rows = load_rows(name, max_rows)
        ks = sorted(set(pd.read_csv(RIVALS_OUT / f"{name}.csv").k))
        evs = tuple(sorted(set(pd.read_csv(RIVALS_OUT / f"{name}.csv").evaluator)))
        cross_validate(name, X, Y, n_rows, {m: factory(m) for m in methods}, ks, OUT,
                       folds, evs)


SHARES = OUT / "shares.csv"


def shares(max_rows: int) -> None:
    """What ``calibration="auto"`` takes on every set of the data folder, the older twelve
    and the nine hold-out sets: the share of non-zero codes in the cells of the non-constant
    columns (the default binning, on the rows the benchmarks use: a random ``max_rows`` of
    the larger sets, seed 0), the rule's threshold beside it; ``shares.csv`` beside the
    candidates' CSVs."""
    from holdout import MLDR

    from coreselect.core.objective import DENSE_SHARE
    from coreselect.selection.sources import InMemorySource
    from coreselect.selection.spec import Objective

    rows = []
    for kind, names in (("older", ORDER), ("hold-out", MLDR)):
        for name in names:
            X, Y, n_rows = load_rows(name, max_rows)
            source = InMemorySource(X, Y)
            share = source.nonzero_share()
            rows.append(dict(dataset=name, sets=kind, rows=X.shape[0], features=X.shape[1],
                             varying=source.n_selectable(), labels=Y.shape[1],
                             nonzero_share=round(share, 4), threshold=DENSE_SHARE,
                             auto=source.decide(Objective(k=1)).calibration))
            print(rows[-1], file=sys.stderr, flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    write_csv(pd.DataFrame(rows), SHARES)


MIXED = OUT / "mixed.csv"
#: the shares of non-zero codes the dense sets are cut to, and how (``mixed``)
MIXED_SHARES = (0.15, 0.30, 0.45)
MIXED_KINDS = {"zero": "zero-inflated: values below the column's (1 - s) quantile set to 0",
               "binary": "binary: 1 above the column's (1 - s) quantile, 0 below"}


def between(X, kind: str, share: float) -> np.ndarray:
    """``X`` with every column cut to about ``share`` non-zero cells: ``"zero"`` keeps the
    values above the column's ``1 - share`` quantile (shifted to start above 0) and sets the
    others to 0, a count-like or histogram column; ``"binary"`` keeps only whether they are
    above it, a one-hot or nominal column."""
    X = np.array(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    for j in range(X.shape[1]):
        cut = np.quantile(X[:, j], 1 - share)
        above = X[:, j] > cut
        X[:, j] = np.where(above, X[:, j] - cut if kind == "zero" else 1.0, 0.0)
    return X


def mixed(datasets: list[str], folds: int, max_rows: int) -> None:
    """The conditional criterion against the weighing on the dense sets cut to shares of
    non-zero codes between the sparse and the dense sets' (:func:`between`), where the
    threshold of ``"auto"`` sits: cell by cell, BRkNN-b and the linear evaluator, example
    and macro F1; ``mixed.csv``."""
    from coreselect.evaluation.protocol import run_protocol
    from coreselect.selection.sources import InMemorySource

    made = {"cmim": lambda k, seed: _gds(k, seed, "cmim"),
            "information": lambda k, seed: _gds(k, seed)}
    rows = []
    for name in datasets:
        X0, Y, _ = load_rows(name, max_rows)
        ks = [k for k in (10, 20, 50, 100) if k < X0.shape[1]]
        for kind in MIXED_KINDS:
            for share in MIXED_SHARES:
                X = between(X0, kind, share)
                df = run_protocol(X, Y, made, ks, n_folds=folds, seed=0,
                                  evaluator=("brknn", "linear"))
                df = df[df.measure.isin(MEASURES)].copy()
                df.insert(0, "dataset", name)
                df["kind"], df["share"] = kind, share
                df["nonzero_share"] = round(InMemorySource(X, Y).nonzero_share(), 3)
                rows.append(df)
                print(f"{name} {kind} {share}: done", file=sys.stderr, flush=True)
    write_csv(pd.concat(rows, ignore_index=True), MIXED)


def paired(part: pd.DataFrame, a: str, b: str, by: tuple[str, ...] = ()) -> tuple[pd.Series, pd.Series]:
    """Method ``a`` against ``b`` cell by cell over ``part``'s rows (cells: ``by`` columns,
    evaluator, measure, k): the difference of their fold means, and the larger of their fold
    standard deviations (a win or a loss where the difference exceeds it)."""
    g = part.groupby([*by, "evaluator", "measure", "k", "method"])["value"]
    g = g.agg(["mean", "std"]).unstack("method")
    return (g[("mean", a)] - g[("mean", b)],
            np.maximum(g[("std", a)], g[("std", b)]))


def win_tie_loss(diff: pd.Series, tol: pd.Series) -> tuple[int, int, int]:
    return int((diff > tol).sum()), int((diff.abs() <= tol).sum()), int((-diff > tol).sum())


def _mixed_table() -> str:
    if not MIXED.is_file():
        return "(`python benchmarks/dense_research.py mixed` has not been run.)"
    df = pd.read_csv(MIXED)
    rows = []
    for (kind, share), part in df.groupby(["kind", "share"], sort=False):
        diff, tol = paired(part, "cmim", "information", by=("dataset",))
        per = ["/".join(map(str, win_tie_loss(diff.xs(d, level="dataset"),
                                              tol.xs(d, level="dataset"))))
               for d in DENSE if d in set(part.dataset)]
        shares = part.drop_duplicates("dataset")["nonzero_share"]
        rows.append([kind, f"{share:.2f}", f"{shares.min():.2f}–{shares.max():.2f}",
                     "/".join(map(str, win_tie_loss(diff, tol))), f"{diff.mean():+.4f}", *per])
    sets = [d for d in DENSE if d in set(df.dataset)]
    return md_table(["columns", "cut to", "non-zero share measured", "cmim against the "
                     "weighing: win/tie/loss", "mean difference", *sets], rows,
                    align="lllll" + "l" * len(sets))


def _shares_table() -> str:
    if not SHARES.is_file():
        return "(`python benchmarks/dense_research.py shares` has not been run.)"
    t = pd.read_csv(SHARES)
    return md_table(["dataset", "sets", "rows", "features (varying)", "labels",
                     "non-zero share", "`auto` takes"],
                    [[r.dataset, r.sets, r.rows, f"{r.features} ({r.varying})", r.labels,
                      f"{r.nonzero_share:.3f}", f"`{r.auto}`"] for r in t.itertuples()],
                    align="llrrrrl")


def load_all() -> pd.DataFrame:
    return beside_rivals([p for p in sorted(OUT.glob("*.csv")) if p not in (SHARES, MIXED)])


def beside_rivals(paths: list[Path]) -> pd.DataFrame:
    """Candidates' rows (one CSV per dataset) with rivals.md's rows of ``gds``, every rival
    and random on the same cells, example and macro F1."""
    parts = []
    for p in paths:
        mine = pd.read_csv(p)
        theirs = pd.read_csv(RIVALS_OUT / p.name)
        theirs = theirs[theirs.method.isin(["gds", "random", *RIVALS])]
        # the rivals' cells only where the candidates ran (same folds, k and evaluators)
        theirs = theirs.merge(mine[["evaluator", "k"]].drop_duplicates(), on=["evaluator", "k"])
        parts += [theirs, mine]
    df = pd.concat(parts, ignore_index=True)
    return df[df.measure.isin(MEASURES)]


def _what(c: str) -> str:
    return {"gds": "the default (auto)", "gds-information": "5, information",
            "gds-five": "5 at every size, auto"}.get(c) or BAGGED_WHAT.get(BAGGED.get(c)) or str(
        BINS.get(c, RELEVANCE.get(c, CONDITIONAL.get(c, NOISE_WHAT.get(
            NOISE.get(c), f"cmim, {CMIM_BINS[c]} bins" if c in CMIM_BINS
            else SUPERVISED_WHAT.get(c, 5))))))


def candidate_rows(df: pd.DataFrame, names: list[str], datasets: list[str],
                   what=_what) -> list[list]:
    """One row per candidate: ``what`` it is, its rank in gds's place among the rivals and
    random (on the cells all of them ran), its cells against the best rival, per dataset."""
    from coreselect.evaluation.significance import average_ranks
    from rivals import rank_cells

    rows = []
    for c in names:
        v = verdicts(df, c)
        ranked = rank_cells(df, [c, *RIVALS, "random"])
        rank = f"{average_ranks(ranked.to_numpy())[0]:.2f} ({len(ranked)})" if len(ranked) else "–"
        per = {d: _counts(v[v.dataset == d]) if (v.dataset == d).any() else "–" for d in datasets}
        rows.append([f"`{c}`", what(c), rank, _share(v), _counts(v),
                     int(v.below_random.sum()), *[per[d] for d in datasets]])
    return rows


def _table(df: pd.DataFrame, names: list[str], datasets: list[str]) -> str:
    return md_table(["candidate", "bins, relevance or criterion",
                     f"mean rank among it, the {len(RIVALS)} rivals and random (cells)",
                     "win or tie", "win/tie/loss", "below random", *datasets],
                    candidate_rows(df, names, datasets), align="lllllr" + "l" * len(datasets))


def _seconds(df: pd.DataFrame, datasets: list[str]) -> str:
    """Selection seconds per training fold of gds and gds-cmim beside l1 and trees (the
    rivals' rows), and the rivals' time over gds-cmim's."""
    rival = pd.concat([pd.read_csv(RIVALS_OUT / f"{d}.csv") for d in datasets])
    both = pd.concat([rival[rival.method.isin(["gds", "l1", "trees"])],
                      df[df.method == "gds-cmim"]])
    sec = (both.drop_duplicates(["dataset", "method", "fold", "select_seconds"])
           .groupby(["dataset", "method"])["select_seconds"].mean().unstack())
    rows = []
    for d in datasets:
        if d not in sec.index or pd.isna(sec.at[d, "gds-cmim"]):
            continue
        r = sec.loc[d]
        rows.append([d, f"{r['gds']:.2f}", f"{r['gds-cmim']:.2f}", f"{r['l1']:.2f}",
                     f"{r['trees']:.2f}", f"{r['gds-cmim'] / r['gds']:.1f}",
                     f"{r['l1'] / r['gds-cmim']:.1f}", f"{r['trees'] / r['gds-cmim']:.1f}"])
    return md_table(["dataset", "gds s", "gds-cmim s", "l1 s", "trees s", "gds-cmim / gds",
                     "l1 / gds-cmim", "trees / gds-cmim"], rows, align="lrrrrrrr")


def _not_run(sets: list[str]) -> str:
    """The sparse sets the rivals ran on but no candidate here (time)."""
    missing = [d for d in ORDER if d not in DENSE and d not in sets
               and (RIVALS_OUT / f"{d}.csv").is_file()]
    return ("\n\nNot run on " + ", ".join(missing) + " (its tens of thousands of columns: "
            "a conditional step keeps a features x labels table, see the time below)."
            if missing else "")


def report() -> None:
    df = load_all()
    names = ["gds", *[m for m in ["gds-information", *BINS, *RELEVANCE, *SUPERVISED, *SCREENED, *CONDITIONAL,
                                  *NOISE, *CMIM_BINS] if m in set(df.method)]]
    dense = df[df.dataset.isin(DENSE)]
    datasets = [d for d in ORDER if d in set(dense.dataset)]
    sparse_sets = [d for d in ORDER if d in set(df.dataset) and d not in DENSE]
    ran = dense.groupby("method")["dataset"].agg(set)
    full = [c for c in names if set(datasets) <= ran.get(c, set())]  # LODO: run on every set
    per, cells = leave_one_dataset_out(dense, full)
    lodo = md_table(["held out", "pick (on the others)", "win/tie/loss there"],
                    [[r.dataset, f"`{r.pick}`", _counts(r.cells)] for r in per.itertuples()],
                    align="lll")
    n = {d: int(load_rows(d, 6000)[0].shape[0] * 2 / 3) for d in datasets}
    partial = {c: [d for d in datasets if d in ran.get(c, set())] for c in names
               if c not in full}
    on_sparse = [c for c in names if (df[df.method == c].dataset.isin(sparse_sets)).any()]
    body = ("`gds` is the library default, `calibration=\"auto\"`, which takes `cmim` on "
            "these four sets and `information` on the sparse ones (the last section); "
            "`gds-information` is the weighing on every set (the default before `auto`). "
            "Candidates: centralized GDS, `gds-information` in all but one thing. A number: "
            "the bins of a column with more than that many distinct values (`cbrt`: the cube "
            "root of the training rows, at least 5: " + ", ".join(
                f"{d} {bins_for('cbrt', n[d])}" for d in datasets)
            + "). `ksg`: relevance from the nearest-neighbour estimate of I(x; l) on the raw "
              "column (Kraskov et al. 2004); `uc`: relevance as the share of each label's "
              "entropy a column explains; `mdl`: supervised cut points (Fayyad and Irani 1993). "
              "`jmi` and `cmim`: a conditional criterion in place of relevance against pairwise "
              "redundancy (Brown et al., JMLR 2012), on the default's codes and summed over the "
              "labels: the largest sum over the selected columns s of I(f; l | s) (joint mutual "
              "information), or the largest sum over labels of the smallest I(f; l | s) "
              "(conditional mutual information maximization; the library's "
              "`calibration=\"cmim\"`); `cmimj`: the largest smallest-over-s of the sum over "
              "labels, the labels taken together. `cmim, bias-corrected`: each I(f; l | s) less the "
              "plug-in estimate's bias under independence (Miller and Madow: its degrees of "
              "freedom over 2 N ln 2) before the smallest is taken; `cmim, then diversity`: "
              "the library's CMIM until nothing left passes a chi-squared test of "
              "independence (5 %, Bonferroni over candidates and labels), or until the best "
              "criterion falls to its expected bias, then the largest sum of distances to the "
              "selection (the paper's diversity); `cmim, diversity among near-ties` and "
              "`cmim, relevance among near-ties`: among the candidates whose criterion is within "
              "one standard deviation of the statistic under independence of the best, the one "
              "farthest from the selection, or the one of largest sum over labels of I(f; l); "
              "`cmim, each label's term over its entropy`: "
              "the library's CMIM with every I(f; l | s) divided by H(l) before the sum over "
              "labels, so a rare label, which macro F1 weighs as much as a frequent one, "
              "counts by the share of its uncertainty a column removes. "
              "Same protocol as [rivals.md](rivals.md) (3 folds, "
              "seed 0, BRkNN-b and the linear evaluator where rivals.md ran it, example and "
              "macro F1); `gds` and the rivals' rows are rivals.md's. A cell is a win or a loss "
              f"against the best of the {len(RIVALS)} rivals when the means differ by more than "
              "the larger fold standard deviation; below random: below random's mean by more "
              "than the larger standard deviation.\n\n## The dense sets\n\n"
            + _table(dense, names, datasets)
            + "\n\nLeave-one-dataset-out among the candidates run on every dense set ("
            + ", ".join(f"`{c}`" for c in full) + "; rule of rivals.md: the largest "
              "worse-kind share of win-or-tie cells on the other sets):\n\n" + lodo
            + "\n\nTotals of the picks on their held-out sets: " + _share(cells)
            + " win or tie (" + _counts(cells) + "), " + str(int(cells.below_random.sum()))
            + " below random."
            + ("\n\nRun on some sets only (time): " + "; ".join(
                f"`{c}` on {', '.join(ds)}" for c, ds in partial.items()) + "." if partial else "")
            + ("\n\n## The sparse sets\n\nThe candidates that select differently there "
               "(a binning candidate gives the default's codes on binary columns):\n\n"
               + _table(df[~df.dataset.isin(DENSE)], on_sparse, sparse_sets)
               + _not_run(sparse_sets) if len(on_sparse) > 1 else "")
            + "\n\n## Time\n\nSeconds per selection on one training fold (mean over the "
              "folds, wall time, one process on a shared 2-core machine), the rivals' rows "
              "from rivals.md; `gds-cmim` (whose smaller selections are the first picks of "
              "a larger one) is run once per fold, to an order of every column, which its "
              "cells share: its seconds are that order's, longer than a selection of k "
              "features where the columns are many:\n\n" + _seconds(df, [*datasets, *sparse_sets]))
    body += ("\n\n## What the default takes on each set\n\n`calibration=\"auto\"` (the "
             "default) takes `cmim` where at least half the cells of the non-constant binned "
             "columns hold a non-zero code (code 0 is a column's most frequent bin), "
             "`information` elsewhere; written by `python benchmarks/dense_research.py "
             "shares`:\n\n" + _shares_table())
    body += ("\n\n## Between dense and sparse\n\nThe four dense sets with every column cut to "
             "a share of non-zero cells between the sparse sets' and theirs (zero-inflated: "
             "the values below a column's (1 - s) quantile set to 0, as counts or histograms; "
             "binary: whether a value is above it, as one-hot or nominal columns), where the "
             "threshold of `auto` (0.5) decides: `cmim` against the weighing (`information`), "
             "cell by cell (BRkNN-b and the linear evaluator, example and macro F1, k in "
             "{10, 20, 50, 100} below the columns, 3 folds; a win or a loss: the means "
             "differ by more than the larger fold standard deviation); written by "
             "`python benchmarks/dense_research.py mixed`:\n\n" + _mixed_table())
    emit("The criterion on dense numeric columns", body, str(REPORT))


def main() -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = p.add_subparsers(dest="cmd", required=True,
                           help="run: cross-validate the candidates; shares: what the default takes on each set; "
                                "mixed: between dense and sparse; report: write the table")
    r = sub.add_parser("run", help="cross-validate the candidates")
    r.add_argument("--datasets", default=",".join(DENSE), help="comma-separated dataset names")
    r.add_argument("--methods", default=",".join(BINS), help="comma-separated candidates")
    r.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    r.add_argument("--max-rows", type=int, default=6000, help="random row cut (seed 0)")
    sh = sub.add_parser("shares", help="what calibration='auto' takes on every set")
    sh.add_argument("--max-rows", type=int, default=6000, help="random row cut (seed 0)")
    mx = sub.add_parser("mixed", help="cmim against the weighing on the dense sets cut to "
                                      "shares of non-zero cells between dense and sparse")
    mx.add_argument("--datasets", default=",".join(DENSE), help="comma-separated dataset names")
    mx.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    mx.add_argument("--max-rows", type=int, default=6000, help="random row cut (seed 0)")
    sub.add_parser("report", help="write docs/results/dense_research.md")
    a = p.parse_args()
    if a.cmd == "shares":
        shares(a.max_rows)
    elif a.cmd == "mixed":
        mixed(a.datasets.split(","), a.folds, a.max_rows)
    elif a.cmd == "run":
        run(a.datasets.split(","), a.methods.split(","), a.folds, a.max_rows)
    else:
        report()


if __name__ == "__main__":
    main()
