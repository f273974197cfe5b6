"""ReliefF (Kononenko 1994; Robnik-Sikonja & Kononenko 2003), vectorized and chunked.

For each sampled instance ``R`` (all instances by default) and each class ``C``:

* the ``k`` nearest *hits* (same class, ``R`` itself excluded) lower the weight of feature
  ``A`` by ``diff(A, R, H) / (m * k_hit)``;
* the ``k`` nearest *misses* of every other class ``C`` raise it by
  ``P(C) / (1 - P(class(R))) * diff(A, R, M) / (m * k_C)``;

with ``diff(A, x, y) = |x_A - y_A| / (max_A - min_A)`` (0 for a constant feature), priors
``P`` estimated on all instances, and ``k_hit``, ``k_C`` the numbers of neighbours actually
found (fewer than ``k`` when a class is small), as in Weka's ``ReliefFAttributeEval``.
Neighbours are found with the Manhattan distance on range-normalized features (the sum of
the ``diff`` values, Weka's choice); distance ties are broken by instance order.

Memory: distances are computed for a block of query rows against all instances at a time
(``sklearn.metrics.pairwise_distances``; sparse input stays sparse), so no ``n x n`` matrix
is ever held. Several class columns (binary relevance: one per label) share one distance
computation.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances
from sklearn.utils import check_random_state

from coreselect.baselines.transform import RankingSelector, binary_relevance_targets, labelset_ids
from coreselect.errors import InputError

__all__ = ["relieff_scores", "BRReliefF", "LPReliefF"]

# bytes of distance/scratch per query block; bounds memory to a few hundred MB at most
_BLOCK_BYTES = 64 * 2**20


def _range_normalize(X):
    """Scale every column by 1/range (0 for constant columns); sparse stays sparse.

    Shifting by the minimum is unnecessary: both diff and the Manhattan distance only use
    differences.
    """
    if sp.issparse(X):
        Xc = sp.csc_matrix(X, dtype=np.float64)
        mins = np.asarray(Xc.min(axis=0).toarray()).ravel()
        maxs = np.asarray(Xc.max(axis=0).toarray()).ravel()
        rng = maxs - mins
        scale = np.divide(1.0, rng, out=np.zeros_like(rng), where=rng > 0)
        return sp.csr_matrix(Xc @ sp.diags(scale))
    X = np.asarray(X, dtype=np.float64)
    rng = X.max(axis=0) - X.min(axis=0) if X.shape[0] else np.zeros(X.shape[1])
    scale = np.divide(1.0, rng, out=np.zeros_like(rng), where=rng > 0)
    return X * scale


def _pair_diff_sum(Xn, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_p weights[p] * |Xn[rows[p]] - Xn[cols[p]]|`` as a vector over features."""
    d = Xn.shape[1]
    out = np.zeros(d)
    if len(rows) == 0:
        return out
    step = max(1, _BLOCK_BYTES // (8 * max(d, 1) * 3))
    for s in range(0, len(rows), step):
        r, c, w = rows[s : s + step], cols[s : s + step], weights[s : s + step]
        if sp.issparse(Xn):
            diff = abs(Xn[r] - Xn[c])
            out += np.asarray(diff.T @ w).ravel()
        else:
            out += w @ np.abs(Xn[r] - Xn[c])
    return out


def relieff_scores(
    X,
    classes: np.ndarray,
    n_neighbors: int = 10,
    n_samples: int | None = None,
    random_state=None,
) -> np.ndarray:
    """ReliefF weights of every feature for one or several class columns.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
    classes : int array, shape (n,) or (n, T)
        Class of every instance; with ``T`` columns (binary relevance) the weights of the
        ``T`` single-label problems are computed together, sharing the distances.
    n_neighbors : int, default=10
        Nearest hits and nearest misses per class.
    n_samples : int or None, default=None
        ``m``: the number of randomly sampled instances; None uses every instance.
    random_state : int, RandomState or None
        Used only to sample ``m`` instances.

    Returns
    -------
    ndarray, shape (d,) or (d, T)
        The ReliefF weight of every feature (per class column when ``classes`` is 2-D).
    """
    classes = np.asarray(classes)
    one_column = classes.ndim == 1
    if one_column:
        classes = classes[:, None]
    n, d = X.shape
    if classes.shape[0] != n:
        raise InputError("X and the class vector have different numbers of rows")
    if n < 2:
        raise InputError("ReliefF needs at least two instances")
    if n_neighbors < 1:
        raise InputError("n_neighbors must be >= 1")
    # codes 0..C-1 per column
    codes = np.empty(classes.shape, dtype=np.int64)
    priors = []
    for t in range(classes.shape[1]):
        _, codes[:, t] = np.unique(classes[:, t], return_inverse=True)
        priors.append(np.bincount(codes[:, t]) / n)
    if n_samples is None or n_samples >= n:
        sample = np.arange(n)
    else:
        if n_samples < 1:
            raise InputError("n_samples must be >= 1")
        sample = np.sort(check_random_state(random_state).choice(n, size=n_samples, replace=False))
    m = len(sample)
    Xn = _range_normalize(X)
    k = n_neighbors
    weights = np.zeros((d, classes.shape[1]))
    block = max(1, _BLOCK_BYTES // (8 * n * 4))
    for s in range(0, m, block):
        q = sample[s : s + block]
        dist = pairwise_distances(Xn[q], Xn, metric="manhattan")
        dist[np.arange(len(q)), q] = np.inf  # never one's own neighbour
        order = np.argsort(dist, axis=1, kind="stable")  # ties: lower instance index first
        for t in range(classes.shape[1]):
            cls_sorted = codes[order, t]
            # group by class, keeping distance order inside every class
            grp = np.argsort(cls_sorted, axis=1, kind="stable")
            cls_g = np.take_along_axis(cls_sorted, grp, axis=1)
            idx_g = np.take_along_axis(order, grp, axis=1)
            n_cls = len(priors[t])
            counts = np.bincount(codes[:, t], minlength=n_cls)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            own = codes[q, t]
            # within-class rank; the query itself (distance inf) sorts last in its class
            rank = np.arange(n)[None, :] - starts[cls_g]
            avail = counts[None, :].repeat(len(q), 0)
            avail[np.arange(len(q)), own] -= 1  # the query is not its own hit
            found = np.minimum(avail, k).astype(np.float64)  # (|q|, C) neighbours per class
            keep = rank < found[np.arange(len(q))[:, None], cls_g]
            rr, pos = np.nonzero(keep)
            nb = idx_g[rr, pos]
            c_nb = cls_g[rr, pos]
            own_r = own[rr]
            p_own = priors[t][own_r]
            hit = c_nb == own_r
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(
                    hit,
                    -1.0 / (m * found[rr, c_nb]),
                    priors[t][c_nb] / np.where(p_own < 1, 1.0 - p_own, 1.0) / (m * found[rr, c_nb]),
                )
            weights[:, t] += _pair_diff_sum(Xn, q[rr], nb, w)
    return weights[:, 0] if one_column else weights


class _ReliefF(RankingSelector):
    def __init__(self, k: int = 10, n_neighbors: int = 10, n_samples: int | None = None, random_state=None):
        super().__init__(k=k)
        self.n_neighbors = n_neighbors
        self.n_samples = n_samples
        self.random_state = random_state


class BRReliefF(_ReliefF):
    """``br-rf``: the sum over labels of the ReliefF weights of the per-label problems.

    Parameters
    ----------
    k : int, default=10
        Number of features to select.
    n_neighbors : int, default=10
        Nearest hits / misses per class.
    n_samples : int or None, default=None
        Sample this many instances (``m``); None uses all of them.
    random_state : int, RandomState or None
        Seed of the instance sample.

    References
    ----------
    ReliefF: Kononenko, "Estimating attributes: analysis and extensions of RELIEF", ECML (1994),
    and Robnik-Šikonja & Kononenko, "Theoretical and empirical analysis of ReliefF and
    RReliefF", Machine Learning 53 (2003); its BR and LP forms as compared in Spolaôr et al.
    (2013) and as the baselines of Ghadiri & Schmidt (AISTATS 2019).
    """

    def _scores(self, X, Y) -> np.ndarray:
        w = relieff_scores(
            X, binary_relevance_targets(Y), self.n_neighbors, self.n_samples, self.random_state
        )
        return w.sum(axis=1)


class LPReliefF(_ReliefF):
    """``lp-rf``: ReliefF with the distinct label sets as the classes.

    Parameters are those of :class:`BRReliefF`.

    References
    ----------
    ReliefF: Kononenko, "Estimating attributes: analysis and extensions of RELIEF", ECML (1994),
    and Robnik-Šikonja & Kononenko, "Theoretical and empirical analysis of ReliefF and
    RReliefF", Machine Learning 53 (2003); its BR and LP forms as compared in Spolaôr et al.
    (2013) and as the baselines of Ghadiri & Schmidt (AISTATS 2019).
    """

    def _scores(self, X, Y) -> np.ndarray:
        return relieff_scores(X, labelset_ids(Y), self.n_neighbors, self.n_samples, self.random_state)
