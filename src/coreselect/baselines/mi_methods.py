"""Published multi-label feature selectors built on mutual information, as baselines.

Each is written from its paper's criterion on the core's discretization and count tables (see
:mod:`coreselect.baselines._mi_stats` for how the statistics are computed without any dense
features x features or features x labels x labels array). Notation: ``f`` a candidate feature,
``S`` the features selected so far, ``s`` one of them, ``l, l_i, l_j`` labels, all in bits;
``I(a; b; c) = I(a; b) - I(a; b | c)`` is the interaction (co-)information in the sign of Lee &
Kim (positive for redundancy). The greedy methods add, at every step, the candidate with the
largest score; scores within a relative ``1e-9`` of the best are ties, won by the lowest
feature index (the same rule as the slow references of the tests). A method's selection for
``k`` is the prefix of its selection for any larger ``k`` (no criterion involves ``k``), so
``coreselect evaluate`` fits each once per fold.

Where a paper leaves a choice open, the reading taken is stated in the class docstring.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from coreselect.baselines._mi_stats import MIStatistics, TIE_TOLERANCE, pick_best
from coreselect.errors import InputError

__all__ = ["PMU", "MDMR", "D2F", "SCLS", "LRFS", "LSMFS", "MLSMFS", "PPTMI", "IGMF", "ATR"]


class _MISelector(SelectorMixin, BaseEstimator):
    """Common part: checks, discretization, ``selected_`` / ``ranking_`` (selection order).

    Parameters
    ----------
    k : int, default=10
        Number of features to select.
    n_bins, strategy :
        Discretization of numeric features, as in :class:`coreselect.GDSSelector`.

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        The selection, in selection order.
    ranking_ : ndarray of shape (n_features,)
        ``selected_``, then the other features by their criterion at step ``k + 1``.
    scores_ : ndarray of shape (n_features,)
        ``n_features - position in ranking_`` (a greedy criterion changes with every step,
        so the rank is the only score all features share).
    """

    #: the selection for k is the prefix of the selection for any larger k
    is_ranker = True

    def __init__(self, k: int = 10, n_bins: int = 5, strategy: str = "auto"):
        self.k = k
        self.n_bins = n_bins
        self.strategy = strategy

    def fit(self, X, Y) -> "_MISelector":
        """Select ``k`` features of (X, Y); ``selected_`` is in selection order."""
        if X.shape[0] != Y.shape[0]:
            raise InputError("X and Y have different numbers of rows")
        if not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise InputError(f"k must be a positive integer, got {self.k!r}")
        if self.k > X.shape[1]:
            raise InputError(f"k={self.k} exceeds the number of features ({X.shape[1]})")
        stats = MIStatistics(X, Y, n_bins=self.n_bins, strategy=self.strategy)
        chosen, after = self._select(stats, int(self.k))
        self.selected_ = np.asarray(chosen, dtype=np.int64)
        rest = np.ones(X.shape[1], dtype=bool)
        rest[self.selected_] = False
        order = np.flatnonzero(rest)
        order = order[np.argsort(-np.asarray(after)[order], kind="stable")]
        self.ranking_ = np.concatenate([self.selected_, order])
        self.scores_ = np.empty(X.shape[1])
        self.scores_[self.ranking_] = np.arange(X.shape[1], 0, -1, dtype=np.float64)
        self.n_features_in_ = X.shape[1]
        return self

    def _select(self, st: MIStatistics, k: int) -> tuple[list[int], np.ndarray]:
        """The ``k`` chosen features in order, and every feature's criterion at step k + 1."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "selected_")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask


class _Greedy(_MISelector):
    """Forward selection of ``argmax_f J(f; S)``; subclasses give the criterion from running
    sums over ``S`` (``_start``, ``_add``) so a step costs one new ``s``'s statistics."""

    def _select(self, st, k):
        taken = np.zeros(st.d, dtype=bool)
        acc = self._start(st)
        chosen: list[int] = []
        for _ in range(k):
            s = pick_best(self._criterion(st, acc, len(chosen)), taken)
            chosen.append(s)
            taken[s] = True
            self._add(st, acc, s)
        return chosen, self._criterion(st, acc, len(chosen))

    def _start(self, st) -> dict:
        return {"rel": st.relevance.sum(axis=1), "mi": np.zeros(st.d)}

    def _add(self, st, acc, s) -> None:
        acc["mi"] += st.mi_with(s)

    def _criterion(self, st, acc, size) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def _mean(total: np.ndarray, size: int) -> np.ndarray:
    return total / size if size else total  # total is 0 while S is empty


class D2F(_Greedy):
    """``d2f``: Lee & Kim, "Mutual information-based multi-label feature selection using
    interaction information", Expert Systems with Applications 42 (2015)::

        J(f) = sum_l I(f; l) - sum_{s in S} sum_l I(f; s; l)

    Parameters: see :class:`PMU`.
    """

    def _start(self, st):
        return {"rel": st.relevance.sum(axis=1), "co": np.zeros(st.d)}

    def _add(self, st, acc, s):
        acc["co"] += (st.relevance - st.given_feature(s)).sum(axis=1)

    def _criterion(self, st, acc, size):
        return acc["rel"] - acc["co"]


class PMU(D2F):
    """``pmu``: Lee & Kim, "Feature selection for multi-label classification using
    multivariate mutual information", Pattern Recognition Letters 34 (2013), the incremental
    criterion (third-order approximation of ``I(S; L)``)::

        J(f) = sum_l I(f; l) - sum_{s in S} sum_l I(f; s; l) - sum_{i < j} I(f; l_i; l_j)

    Reading: the label-label term runs over unordered pairs ``i < j`` as in the paper's
    expansion (a public re-implementation sums all ordered pairs, which doubles it and adds
    ``sum_l I(f; l)``).

    Parameters
    ----------
    k : int, default=10
    n_bins, strategy : discretization, as in :class:`coreselect.GDSSelector`.
    """

    def _start(self, st):
        acc = super()._start(st)
        pairs = st.label_pairs
        # sum_{i<j} I(f; l_i; l_j) = 1/2 sum_{i != j} [I(f; l_i) - I(f; l_i | l_j)]
        acc["labels"] = 0.5 * ((st.n_labels - 1) * acc["rel"] - pairs["sum_cond"])
        return acc

    def _criterion(self, st, acc, size):
        return acc["rel"] - acc["co"] - acc["labels"]


class MDMR(_Greedy):
    """``mdmr``: Lin, Hu, Liu & Duan, "Multi-label feature selection based on max-dependency
    and min-redundancy", Neurocomputing 168 (2015)::

        J(f) = sum_l I(f; l) - 1/|S| sum_{s in S} [ I(f; s) - sum_l I(s; l | f) ]

    Reading: the conditional term is the paper's "new classification information" of the
    selected ``s`` about ``l`` given the candidate ``f``, ``I(s; l | f)``; it is computed
    exactly as ``I(s; l) - I(f; l) + I(f; l | s)`` (the same plug-in entropies).

    Parameters: see :class:`PMU`.
    """

    def _start(self, st):
        return {"rel": st.relevance.sum(axis=1), "red": np.zeros(st.d)}

    def _add(self, st, acc, s):
        rel = st.relevance
        cond = rel[s][None, :] - rel + st.given_feature(s)  # I(s; l | f)
        acc["red"] += st.mi_with(s) - cond.sum(axis=1)

    def _criterion(self, st, acc, size):
        return acc["rel"] - _mean(acc["red"], size)


class SCLS(_Greedy):
    """``scls``: Lee & Kim, "SCLS: Multi-label feature selection based on scalable criterion
    for large label set", Pattern Recognition 66 (2017): relevance scaled down by the share of
    the candidate's entropy already explained by the selected features::

        J(f) = sum_l I(f; l) - sum_{s in S} (I(f; s) / H(f)) sum_l I(f; l)

    A constant feature (``H(f) = 0``) has no relevance and scores 0.

    Parameters: see :class:`PMU`.
    """

    def _criterion(self, st, acc, size):
        h = st.feature_entropy
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(h > 0, acc["mi"] / np.where(h > 0, h, 1.0), 0.0)
        return acc["rel"] - share * acc["rel"]


class LRFS(_Greedy):
    """``lrfs``: Zhang, Liu, Gao & Song, "Distinguishing two types of labels for multi-label
    feature selection", Pattern Recognition 95 (2019): label-redundancy-aware relevance::

        J(f) = sum_i sum_{j != i} I(f; l_i | l_j) - 1/|S| sum_{s in S} I(f; s)

    Parameters: see :class:`PMU`.
    """

    def _start(self, st):
        acc = super()._start(st)
        acc["lr"] = st.label_pairs["sum_cond"]
        return acc

    def _criterion(self, st, acc, size):
        return acc["lr"] - _mean(acc["mi"], size)


class LSMFS(_Greedy):
    """``lsmfs``: Zhang, Gao, Hu & Li (P. Zhang et al.), "Multi-label feature selection
    considering label supplementation", Pattern Recognition 120 (2021)::

        J(f) = sum_i I(f; l_i) + sum_i sum_{j != i} LS(f; l_i, l_j) - 1/|S| sum_{s in S} I(f; s)
        LS(f; l_i, l_j) = max(0, I(f; l_i | l_j) - I(f; l_i))

    Reading: the label supplementation of ``l_j`` to ``l_i`` is what ``f`` tells about ``l_i``
    once ``l_j`` is known beyond what it tells alone (``-I(f; l_i; l_j)``), counted only where
    it is positive; the redundancy is the mean over ``S`` as in the authors' LRFS. The paper's
    text could not be checked (no copy was found); PyIT-MLFS (``classes/lsmfs.py``)
    reads it with the opposite sign, ``+ sum_{i != j} max(0, I(f; l_i; l_j))`` (pyitlib's
    co-information ``I(f; l_i) - I(f; l_i | l_j)``), and sums ``I(f; s)`` over ``S`` instead of
    averaging (``tests/reference_mlfs.py``: ``J_lsmfs_pyit``; docs/results/README.md).

    Parameters: see :class:`PMU`.
    """

    def _start(self, st):
        acc = super()._start(st)
        acc["rel"] = acc["rel"] + st.label_pairs["sum_supp"]
        return acc

    def _criterion(self, st, acc, size):
        return acc["rel"] - _mean(acc["mi"], size)


class MLSMFS(_Greedy):
    """``mlsmfs``: the max-supplementation variant of :class:`LSMFS` (same paper)::

        J(f) = sum_i max(I(f; l_i), max_{j != i} I(f; l_i | l_j)) - 1/|S| sum_{s in S} I(f; s)

    Reading: each label counts with the most that ``f`` tells about it, alone or given the
    label that supplements it best (``I(f; l_i) + max_j LS(f; l_i, l_j)``). Not checked against
    the paper's text (see :class:`LSMFS`); PyIT-MLFS (``classes/mlsmfs.py``) adds one maximum
    of the co-information ``I(f; l_i; l_j)`` over all label pairs to ``sum_i I(f; l_i)`` and
    sums the redundancy over ``S`` (``tests/reference_mlfs.py``: ``J_mlsmfs_pyit``).

    Parameters: see :class:`PMU`.
    """

    def _start(self, st):
        acc = super()._start(st)
        acc["rel"] = np.maximum(st.relevance, st.label_pairs["max_cond"]).sum(axis=1)
        return acc

    def _criterion(self, st, acc, size):
        return acc["rel"] - _mean(acc["mi"], size)


def _labelset_class(ids: np.ndarray):
    from coreselect.core.discretize import discretize

    return discretize(ids.reshape(-1, 1), strategy="none")


class IGMF(_MISelector):
    """``igmf``: Li, Liu, Ma, Mo, Duan, Zhou & Zhao, "Multi-label feature selection via
    information gain", ADMA 2014 (LNAI 8933): the information gain between a feature and the
    label set, normalized as symmetric uncertainty::

        SU(f) = 2 (H(f) + H(Y) - H(f, Y)) / (H(f) + H(Y))

    ``Y`` is the whole label vector (``H(Y)`` the entropy of the label sets). Reading: the
    paper keeps the features above a threshold; here the ``k`` with the largest ``SU`` (0 when
    both entropies are 0), ties to the lowest index.

    Parameters: see :class:`PMU`.
    """

    def _select(self, st, k):
        from coreselect.core.entropy import entropy, relevance_matrix

        cls = _labelset_class(st.labelset_ids())
        info = relevance_matrix(st.features, cls, kind="mi")[:, 0]
        denom = st.feature_entropy + entropy(cls)[0]
        su = np.where(denom > 0, 2.0 * info / np.where(denom > 0, denom, 1.0), 0.0)
        taken = np.zeros(st.d, dtype=bool)
        out = []
        for _ in range(k):
            s = pick_best(su, taken)
            out.append(s)
            taken[s] = True
        return out, su


class PPTMI(_MISelector):
    """``ppt-mi``: Doquire & Verleysen, "Feature selection for multi-label classification
    problems", IWANN 2011 (LNCS 6691): Read's pruned problem transformation (PPT), then greedy
    forward selection on the multidimensional mutual information with the transformed class::

        C = label set of each instance; instances whose label set occurs fewer than tau
            times in the training data are removed (Read 2008, without reintroduction)
        J(f) = I(S + {f}; C)

    Readings: ``I(S + {f}; C)`` is the plug-in estimate on the discretized features (the paper
    uses a Kraskov k-NN estimator on continuous features), computed exactly from the partition
    of the rows by the selected features' codes. Once that estimate stops separating the
    candidates (for example when ``S`` already determines ``C`` on the training rows), ties go
    to the larger ``I(f; C)``, then to the lowest index. When pruning at ``tau`` would leave
    fewer than two classes, ``tau`` is lowered until two remain (``prune_threshold_``).

    Parameters
    ----------
    k : int, default=10
    prune_threshold : int, default=6
        ``tau``: label sets seen fewer times are pruned.
    n_bins, strategy : discretization, as in :class:`coreselect.GDSSelector`.
    """

    def __init__(self, k: int = 10, prune_threshold: int = 6, n_bins: int = 5,
                 strategy: str = "auto"):
        super().__init__(k=k, n_bins=n_bins, strategy=strategy)
        self.prune_threshold = prune_threshold

    def _select(self, st, k):
        from coreselect.baselines._mi_kernels import partition_joint_entropy
        from coreselect.core.discretize import DiscreteMatrix
        from coreselect.core.entropy import entropy, relevance_matrix

        ids = st.labelset_ids()
        counts = np.bincount(ids)
        tau = max(int(self.prune_threshold), 1)
        while tau > 1 and np.count_nonzero(counts >= tau) < 2:
            tau -= 1
        self.prune_threshold_ = tau
        rows = np.flatnonzero(counts[ids] >= tau)
        self.n_rows_kept_ = int(rows.size)
        _, cls = np.unique(ids[rows], return_inverse=True)
        cls = cls.ravel().astype(np.int64)
        feats = DiscreteMatrix(st.features.codes[rows], st.features.n_codes)
        codes = feats.codes
        xl = st.xl
        h_c = float(entropy(_labelset_class(cls))[0])
        single = relevance_matrix(feats, _labelset_class(cls), kind="mi")[:, 0]

        def joint(group: np.ndarray) -> np.ndarray:
            out = np.empty(feats.n_columns)
            partition_joint_entropy(codes.indptr, codes.indices, codes.data, feats.n_codes,
                                    group, np.bincount(group).astype(np.int64), xl, out)
            return out

        def refine(group: np.ndarray, s: int) -> np.ndarray:
            col = np.zeros(rows.size, dtype=np.int64)
            lo, hi = codes.indptr[s], codes.indptr[s + 1]
            col[codes.indices[lo:hi]] = codes.data[lo:hi]
            _, inv = np.unique(group * int(max(feats.n_codes[s], 1)) + col, return_inverse=True)
            return inv.ravel().astype(np.int64)

        g = np.zeros(rows.size, dtype=np.int64)  # partition by S (one block while S is empty)
        gc = cls.copy()  # partition by (S, C)
        taken = np.zeros(st.d, dtype=bool)
        out: list[int] = []
        for step in range(k):
            score = joint(g) + h_c - joint(gc)  # I(S + {f}; C)
            score = np.where(taken, -np.inf, score)
            top = score.max()
            near = score >= top - TIE_TOLERANCE * max(1.0, abs(top))
            s = pick_best(single, ~near | taken)
            out.append(s)
            taken[s] = True
            g, gc = refine(g, s), refine(gc, s)
        # the rest: by I(S + {f}; C), then I(f; C) (a lexicographic key in one float order)
        last = joint(g) + h_c - joint(gc)
        rank = np.lexsort((-single, -np.round(last, 9)))
        after = np.empty(st.d)
        after[rank] = np.arange(st.d, 0, -1, dtype=np.float64)
        return out, after


def _ppt_rows(ids: np.ndarray, threshold: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Read's pruned problem transformation: the rows whose label set occurs at least ``tau``
    times, their class (label set) ids renumbered, and ``tau`` (lowered from ``threshold``
    until two classes remain, or to 1)."""
    counts = np.bincount(ids)
    tau = max(int(threshold), 1)
    while tau > 1 and np.count_nonzero(counts >= tau) < 2:
        tau -= 1
    rows = np.flatnonzero(counts[ids] >= tau)
    _, cls = np.unique(ids[rows], return_inverse=True)
    return rows, cls.ravel().astype(np.int64), tau


class ATR(_Greedy):
    """``atr``: Eskandari & Ghassabi, "Multi-label feature selection using adaptive and
    transformed relevance", arXiv:2309.14768 (2023); the tenth selector of the PyIT-MLFS
    collection (github.com/Sadegh28/PyIT-MLFS, ``classes/atr.py``; the authors' code is also
    github.com/Sadegh28/ATR). Relevance to the labels one at a time (algorithm adaptation,
    averaged over the labels) plus relevance to the pruned label-powerset class (problem
    transformation), minus the mean redundancy with the selected features::

        C = label set of each instance, on the rows whose label set occurs at least tau
            times (Read's PPT, as in :class:`PPTMI`)
        J(f) = 1/|L| sum_l I(f; l) + I(f; C) - 1/|S| sum_{s in S} I(f; s)

    Reading: the formula is the authors' ``rank`` (their default, "pre_eval" mode: the mean
    over labels, ``I(f; C)`` on the pruned rows, the mean over ``S``); the paper's text was
    not available to check it (only its abstract: "ranks features considering individual
    labels as well as abstract label space discriminative powers"). Their on-demand
    ("post_eval") path sums over the labels and has no PPT term; it is not taken. ``tau`` is
    lowered, as in :class:`PPTMI`, when pruning at 6 would leave fewer than two classes (the
    authors' code then fails). ``I(f; C)`` uses the discretization of the whole training fold.

    Parameters
    ----------
    k : int, default=10
    prune_threshold : int, default=6
        ``tau``: label sets seen fewer times are pruned for the ``I(f; C)`` term.
    n_bins, strategy : discretization, as in :class:`coreselect.GDSSelector`.
    """

    def __init__(self, k: int = 10, prune_threshold: int = 6, n_bins: int = 5,
                 strategy: str = "auto"):
        super().__init__(k=k, n_bins=n_bins, strategy=strategy)
        self.prune_threshold = prune_threshold

    def _start(self, st):
        from coreselect.core.discretize import DiscreteMatrix
        from coreselect.core.entropy import relevance_matrix

        rows, cls, self.prune_threshold_ = _ppt_rows(st.labelset_ids(), self.prune_threshold)
        feats = DiscreteMatrix(st.features.codes[rows], st.features.n_codes)
        ppt = relevance_matrix(feats, _labelset_class(cls), kind="mi")[:, 0]
        mean_rel = st.relevance.mean(axis=1) if st.n_labels else np.zeros(st.d)
        return {"rel": mean_rel + np.asarray(ppt), "mi": np.zeros(st.d)}

    def _criterion(self, st, acc, size):
        return acc["rel"] - _mean(acc["mi"], size)
