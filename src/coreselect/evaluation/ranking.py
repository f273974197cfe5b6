"""Ranking measures of extreme multi-label classification, computed on scores, sparse throughout.

precision@k, nDCG@k and their propensity-scored forms PSP@k, PSnDCG@k (Jain, Prabhu & Varma,
KDD 2016), for ``k`` in 1..5, from a CSR matrix of true labels (n x L; a non-zero is a true
label) and a sparse or dense score matrix. The top-k of every row is found without densifying
the n x L scores: memory is O(n*k + nnz).

Conventions (the slow reference in tests/test_evaluation_ranking.py follows them literally):

* **Ranking and ties.** A row's labels are ranked by decreasing score; equal scores rank by
  increasing label index. Labels absent from a sparse score row score 0 (so a stored negative
  score ranks below every absent label). With fewer than ``k`` labels (L < k) the missing
  positions count as misses.
* **P@k** = mean over rows of ``|top-k ∩ true| / k``. **nDCG@k** = mean over rows of
  ``DCG@k / IDCG@k`` with ``DCG@k = Σ_{r≤k} y_{π(r)} / log2(r + 1)`` and
  ``IDCG@k = Σ_{r ≤ min(k, |true|)} 1 / log2(r + 1)``.
* **Rows with no true label** stay in the averages of P@k and nDCG@k and score 0 there (the
  XMC repository and pyxclib divide by the number of test points). They add 0 to both the
  numerator and the denominator of the propensity-scored measures.
* **Propensity** of label l: ``p_l = 1 / (1 + C·exp(−A·log(N_l + B)))``,
  ``C = (log N − 1)·(B + 1)^A`` (natural logarithms), with ``N`` the rows and ``N_l`` the
  rows with label l *of the training labels* (A=0.55, B=1.5 by default, the XMC repository's
  general setting; Wikipedia uses 0.5, 0.4 and Amazon 0.6, 2.6). With fewer than 3 training
  rows (log N < 1) C is clamped at 0: every propensity is then 1.
* **Normalisation of the propensity-scored measures**: by their maximum achievable value over
  the whole data set (the XMC repository's Matlab tools and pyxclib's ``psprecision``):
  ``PSP@k = Σ_i Σ_{r≤k} y_{iπ(r)}/p_{π(r)} / Σ_i max_{S ⊆ true_i, |S|≤k} Σ_{l∈S} 1/p_l`` and
  ``PSnDCG@k = Σ_i PSDCG@k(π_i) / Σ_i PSDCG@k(ideal_i)``, ``PSDCG@k(π) = Σ_{r≤k}
  y_{π(r)} / (p_{π(r)} log2(r + 1))``, the ideal ranking putting the true labels by decreasing
  ``1/p``. Both lie in [0, 1] and equal 1 for a ranking that is ideal on every row.
  A data set with no true label at all scores 0. No rows (n = 0): every measure is NaN.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import InputError

__all__ = [
    "RANKING_MEASURES", "RANKING_LABELS", "MAX_K", "inverse_propensity", "top_k", "hits_at_k",
    "precision_at_k", "ndcg_at_k", "psp_at_k", "psndcg_at_k", "ranking_measures",
    "parse_measures", "is_ranking_measure",
]

MAX_K = 5
RANKING_MEASURES = tuple(f"{kind}@{k}" for kind in ("p", "ndcg", "psp", "psndcg")
                         for k in range(1, MAX_K + 1))
_KIND_LABELS = {"p": "Precision", "ndcg": "nDCG", "psp": "Propensity-scored precision",
                "psndcg": "Propensity-scored nDCG"}
RANKING_LABELS = {m: f"{_KIND_LABELS[m.split('@')[0]]}@{m.split('@')[1]}" for m in RANKING_MEASURES}

#: entries per block of a dense score matrix (bounds the temporaries to ~this many cells)
_DENSE_CELLS = 1 << 22


def is_ranking_measure(name: str) -> bool:
    return name in RANKING_MEASURES


def parse_measures(spec: str, classic: Sequence[str]) -> list[str]:
    """``"p@1,ndcg@3"`` -> names; ``"ranking"`` expands to all ranking measures, ``"classic"``
    to ``classic`` (the five measures of the paper); ``"p@1..5"`` to p@1,...,p@5."""
    out: list[str] = []
    for part in (p.strip().lower() for p in str(spec).split(",")):
        if not part:
            continue
        if part == "classic":
            out.extend(classic)
        elif part == "ranking":
            out.extend(RANKING_MEASURES)
        elif ".." in part and "@" in part:
            kind, rng = part.split("@", 1)
            lo, _, hi = rng.partition("..")
            try:
                ks = range(int(lo), int(hi) + 1)
            except ValueError:
                raise InputError(f"cannot parse measure {part!r}") from None
            out.extend(f"{kind}@{k}" for k in ks)
        else:
            out.append(part)
    known = list(classic) + list(RANKING_MEASURES)
    for name in out:
        if name not in known:
            raise InputError(f"unknown measure {name!r}; choose from {', '.join(known)}, "
                             f"'classic' or 'ranking'")
    if not out:
        raise InputError("no measures given")
    return list(dict.fromkeys(out))


def _csr_true(Y_true) -> sp.csr_matrix:
    Y = sp.csr_matrix(Y_true) if not sp.issparse(Y_true) else Y_true.tocsr()
    Y = Y.copy()
    Y.data = (Y.data != 0).astype(np.float64)
    Y.eliminate_zeros()
    Y.sum_duplicates()
    Y.sort_indices()
    return Y


def inverse_propensity(Y_train, A: float = 0.55, B: float = 1.5) -> np.ndarray:
    """``1 / p_l`` for every label, from the training labels (rows x L; non-zero = present)."""
    Y = _csr_true(Y_train)
    n = Y.shape[0]
    counts = np.bincount(Y.indices, minlength=Y.shape[1]).astype(np.float64)
    # below e training rows the formula's C turns negative (propensities above 1, or weights
    # that change sign): clamp it at 0, i.e. every propensity 1
    C = max(np.log(max(n, 1)) - 1.0, 0.0) * (B + 1.0) ** A
    return 1.0 + C * np.exp(-A * np.log(counts + B))


def _select_rows(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int, k: int) -> np.ndarray:
    """(n, k) indices: per row, the candidates ordered by (-value, index), first k; -1 pads."""
    order = np.lexsort((cols, -vals, rows))
    rows, cols = rows[order], cols[order]
    starts = np.searchsorted(rows, np.arange(n))
    rank = np.arange(rows.size) - starts[rows]
    keep = rank < k
    out = np.full((n, k), -1, dtype=np.int64)
    out[rows[keep], rank[keep]] = cols[keep]
    return out


def top_k(scores, k: int) -> np.ndarray:
    """The ``k`` best labels of every row, best first, as an (n, k) int64 array (-1 pads when
    L < k). Ties rank by increasing label index; labels absent from a sparse row score 0."""
    if k < 1:
        raise InputError(f"k must be at least 1, got {k}")
    if sp.issparse(scores):
        S = scores.tocsr().copy()
        S.sum_duplicates()
        n, L = S.shape
        kk = min(k, L)
        rows = np.repeat(np.arange(n), np.diff(S.indptr))
        cols, vals = S.indices.astype(np.int64), S.data.astype(np.float64)
        if np.isnan(vals).any():
            raise InputError("scores contain NaN")
        # A stored positive score beats every absent label (score 0). A row needs absent labels
        # as candidates only when fewer than k of its scores are positive: then the first kk
        # absent indices (the ties among zeros go to the smallest index) join its candidates.
        positive = np.bincount(rows[vals > 0], minlength=n)
        short = np.flatnonzero((positive < kk) & (np.diff(S.indptr) < L))
        extra_r, extra_c = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
        for i in short:  # O(stored + k) each
            stored = cols[S.indptr[i]:S.indptr[i + 1]]
            absent = np.setdiff1d(np.arange(min(L, kk + stored.size)), stored, assume_unique=True)[:kk]
            extra_r.append(np.full(absent.size, i, np.int64))
            extra_c.append(absent.astype(np.int64))
        er, ec = np.concatenate(extra_r), np.concatenate(extra_c)
        top = _select_rows(np.concatenate([rows, er]), np.concatenate([cols, ec]),
                           np.concatenate([vals, np.zeros(ec.size)]), n, kk)
    else:
        S = np.asarray(scores, dtype=np.float64)
        if S.ndim != 2:
            raise InputError("scores must be 2-D (n_samples, n_labels)")
        if np.isnan(S).any():
            raise InputError("scores contain NaN")
        n, L = S.shape
        kk = min(k, L)
        parts = []
        block = max(1, _DENSE_CELLS // max(L, 1))
        for s in range(0, n, block):
            B = S[s:s + block]
            if B.shape[0] == 0 or kk == 0:
                parts.append(np.full((B.shape[0], kk), -1, np.int64))
                continue
            kth = -np.partition(-B, kk - 1, axis=1)[:, kk - 1]  # the k-th largest value per row
            # candidates: every value above the k-th, and the first kk equal to it (ties go to
            # the smallest index), so at most 2*kk per row whatever the ties
            eq = B == kth[:, None]
            r, c = np.nonzero((B > kth[:, None]) | (eq & (np.cumsum(eq, axis=1) <= kk)))
            parts.append(_select_rows(r, c.astype(np.int64), B[r, c], B.shape[0], kk))
        top = np.concatenate(parts) if parts else np.empty((0, kk), np.int64)
    if kk < k:
        top = np.hstack([top, np.full((top.shape[0], k - kk), -1, np.int64)])
    return top


def hits_at_k(Y_true, top: np.ndarray) -> np.ndarray:
    """Boolean (n, k): is ``top[i, r]`` a true label of row i (by binary search, no densifying)."""
    Y = _csr_true(Y_true)
    n, L = Y.shape
    if top.shape[0] != n:
        raise InputError(f"scores have {top.shape[0]} rows, the true labels {n}")
    keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(Y.indptr)) * L + Y.indices
    q = np.arange(n, dtype=np.int64)[:, None] * L + top
    pos = np.searchsorted(keys, q)
    found = keys[np.minimum(pos, keys.size - 1)] == q if keys.size else np.zeros(q.shape, bool)
    return found & (top >= 0)


def _discount(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def _ideal_ps(Y: sp.csr_matrix, w: np.ndarray, k: int) -> np.ndarray:
    """(n, k): per row, the weights 1/p of its true labels sorted decreasing, first k (0 pads)."""
    n = Y.shape[0]
    rows = np.repeat(np.arange(n), np.diff(Y.indptr))
    vals = w[Y.indices]
    order = np.lexsort((-vals, rows))
    rank = np.arange(rows.size) - Y.indptr[rows[order]]
    keep = rank < k
    out = np.zeros((n, k))
    out[rows[order][keep], rank[keep]] = vals[order][keep]
    return out


def _check_shapes(Y: sp.csr_matrix, scores) -> None:
    if Y.shape != scores.shape:
        raise InputError(f"true labels {Y.shape} and scores {scores.shape} differ in shape")


def ranking_measures(Y_true, scores, names: Sequence[str] = RANKING_MEASURES, *,
                     inv_propensity: np.ndarray | None = None, Y_train=None,
                     A: float = 0.55, B: float = 1.5) -> dict[str, float]:
    """Every named measure (see ``RANKING_MEASURES``) from one top-5 of the scores.

    The propensity-scored measures need ``inv_propensity`` (``1/p`` per label) or ``Y_train``
    (whose label counts give it, with ``A``, ``B``).
    """
    names = list(names)
    for m in names:
        if m not in RANKING_MEASURES:
            raise InputError(f"unknown ranking measure {m!r}")
    Y = _csr_true(Y_true)
    _check_shapes(Y, scores)
    n = Y.shape[0]
    if n == 0:
        return {m: float("nan") for m in names}
    kmax = max([int(m.split("@")[1]) for m in names], default=1)
    top = top_k(scores, kmax)
    hits = hits_at_k(Y, top).astype(np.float64)
    disc = _discount(kmax)
    n_true = np.diff(Y.indptr)
    idcg = np.concatenate([[0.0], np.cumsum(disc)])  # idcg[j] = Σ_{r≤j} disc
    w = None
    if any(m.startswith("ps") for m in names):
        if inv_propensity is None:
            if Y_train is None:
                raise InputError("propensity-scored measures need the training labels")
            inv_propensity = inverse_propensity(Y_train, A, B)
        w = np.asarray(inv_propensity, dtype=np.float64)
        if w.shape != (Y.shape[1],):
            raise InputError(f"inv_propensity has shape {w.shape}, expected ({Y.shape[1]},)")
        ps_hits = hits * w[np.maximum(top, 0)]
        ideal = _ideal_ps(Y, w, kmax)
    out = {}
    for m in names:
        kind, k = m.split("@")
        k = int(k)
        if kind == "p":
            out[m] = float(hits[:, :k].sum(axis=1).mean() / k)
        elif kind == "ndcg":
            dcg = hits[:, :k] @ disc[:k]
            norm = idcg[np.minimum(n_true, k)]
            out[m] = float(np.divide(dcg, norm, out=np.zeros(n), where=norm > 0).mean())
        elif kind == "psp":
            den = ideal[:, :k].sum()
            out[m] = float(ps_hits[:, :k].sum() / den) if den > 0 else 0.0
        else:  # psndcg
            den = (ideal[:, :k] @ disc[:k]).sum()
            out[m] = float((ps_hits[:, :k] @ disc[:k]).sum() / den) if den > 0 else 0.0
    return out


def precision_at_k(Y_true, scores, k: int = 1) -> float:
    """P@k (see the module's conventions)."""
    return ranking_measures(Y_true, scores, [f"p@{k}"])[f"p@{k}"]


def ndcg_at_k(Y_true, scores, k: int = 1) -> float:
    """nDCG@k (see the module's conventions)."""
    return ranking_measures(Y_true, scores, [f"ndcg@{k}"])[f"ndcg@{k}"]


def psp_at_k(Y_true, scores, k: int = 1, *, inv_propensity=None, Y_train=None,
             A: float = 0.55, B: float = 1.5) -> float:
    """PSP@k, normalised by its maximum over the data set (see the module's conventions)."""
    return ranking_measures(Y_true, scores, [f"psp@{k}"], inv_propensity=inv_propensity,
                            Y_train=Y_train, A=A, B=B)[f"psp@{k}"]


def psndcg_at_k(Y_true, scores, k: int = 1, *, inv_propensity=None, Y_train=None,
                A: float = 0.55, B: float = 1.5) -> float:
    """PSnDCG@k, normalised by its maximum over the data set (see the module's conventions)."""
    return ranking_measures(Y_true, scores, [f"psndcg@{k}"], inv_propensity=inv_propensity,
                            Y_train=Y_train, A=A, B=B)[f"psndcg@{k}"]
