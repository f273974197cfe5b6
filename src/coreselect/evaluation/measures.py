"""The five multi-label evaluation measures of the paper (Appendix C), with Mulan's conventions.

Conventions (Mulan 1.5, ``mulan.evaluation.measure``):

* an example whose true and predicted label sets are both empty scores 1 for example-based
  accuracy and example-based F1 (and, trivially, for subset accuracy);
* a label that is neither present nor predicted in any example scores an F1 of 1 in the
  macro average (Mulan's ``InformationRetrievalMeasures.fMeasure`` returns 1 when
  ``tp + fp + fn == 0``); the same holds for micro F1 on an all-empty matrix.

Note: the paper's Appendix C swaps the names of the micro and macro averages; the
definitions here are the standard ones (macro = mean of per-label F1, micro = F1 of the
pooled counts), which are the ones Mulan computes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import accuracy_score, f1_score, jaccard_score

__all__ = [
    "MEASURES",
    "MEASURE_LABELS",
    "subset_accuracy",
    "example_accuracy",
    "example_f1",
    "micro_f1",
    "macro_f1",
    "evaluate_all",
    "top_k_labels",
    "precision_at_k",
    "ndcg_at_k",
    "jain_propensities",
    "ranking_measures",
]


def _as_bool(Y) -> np.ndarray:
    if sp.issparse(Y):
        Y = Y.toarray()
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise ValueError("label matrices must be 2-D (n_samples, n_labels)")
    return Y != 0


def _check(Y_true, Y_pred) -> tuple[np.ndarray, np.ndarray]:
    t, p = _as_bool(Y_true), _as_bool(Y_pred)
    if t.shape != p.shape:
        raise ValueError(f"label matrices differ in shape: {t.shape} vs {p.shape}")
    return t, p


def subset_accuracy(Y_true, Y_pred) -> float:
    """Fraction of examples whose predicted label set equals the true one exactly."""
    t, p = _check(Y_true, Y_pred)
    return float(accuracy_score(t, p))


def example_accuracy(Y_true, Y_pred) -> float:
    """Mean over examples of ``|L ∩ L'| / |L ∪ L'|`` (Jaccard); both empty counts as 1."""
    t, p = _check(Y_true, Y_pred)
    return float(jaccard_score(t, p, average="samples", zero_division=1.0))


def example_f1(Y_true, Y_pred) -> float:
    """Mean over examples of ``2 |L ∩ L'| / (|L| + |L'|)``; both empty counts as 1."""
    t, p = _check(Y_true, Y_pred)
    return float(f1_score(t, p, average="samples", zero_division=1.0))


def micro_f1(Y_true, Y_pred) -> float:
    """F1 of the counts pooled over all labels: ``2 TP / (2 TP + FP + FN)``."""
    t, p = _check(Y_true, Y_pred)
    return float(f1_score(t, p, average="micro", zero_division=1.0))


def macro_f1(Y_true, Y_pred) -> float:
    """Mean over labels of the per-label F1; a label never present nor predicted scores 1."""
    t, p = _check(Y_true, Y_pred)
    return float(f1_score(t, p, average="macro", zero_division=1.0))


#: identifier -> function, in the order used in files and plots
MEASURES: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "subset_accuracy": subset_accuracy,
    "example_accuracy": example_accuracy,
    "example_f1": example_f1,
    "micro_f1": micro_f1,
    "macro_f1": macro_f1,
}

#: identifier -> human-readable name for plots and tables
MEASURE_LABELS: dict[str, str] = {
    "subset_accuracy": "Subset accuracy",
    "example_accuracy": "Example-based accuracy",
    "example_f1": "Example-based F1",
    "micro_f1": "Micro-averaged F1",
    "macro_f1": "Macro-averaged F1",
}


def evaluate_all(Y_true, Y_pred) -> dict[str, float]:
    """All five measures as ``{identifier: value}``."""
    t, p = _check(Y_true, Y_pred)
    return {name: fn(t, p) for name, fn in MEASURES.items()}


# -- ranking measures of extreme classification ------------------------------------------------
# (The Extreme Classification Repository's definitions: Jain, Prabhu & Varma, KDD 2016.) Scores
# may be a dense (n, L) array or a sparse matrix holding only each row's candidates (with 10^5
# labels a dense score matrix does not fit); only each row's top k are ever sorted.


def top_k_labels(scores, k: int) -> np.ndarray:
    """Each row's ``k`` highest-scoring labels, best first, shape (n, k); ties go to the lower
    label index; -1 pads rows of a sparse ``scores`` with fewer than ``k`` candidates."""
    k = int(k)
    if k < 1:
        raise ValueError("k must be at least 1")
    if sp.issparse(scores):
        S = sp.csr_matrix(scores)
        out = np.full((S.shape[0], k), -1, dtype=np.int64)
        for i in range(S.shape[0]):
            a, b = S.indptr[i], S.indptr[i + 1]
            cols, vals = S.indices[a:b], S.data[a:b]
            order = np.lexsort((cols, -vals))[:k]
            out[i, :order.size] = cols[order]
        return out
    S = np.asarray(scores, dtype=np.float64)
    n, L = S.shape
    out = np.full((n, k), -1, dtype=np.int64)
    take = min(k, L)
    for r0 in range(0, n, 1024):  # bounded temporaries
        block = S[r0:r0 + 1024]
        if take < L:
            cand = np.argpartition(-block, take - 1, axis=1)[:, :take]
            # Ties at the cut: the lowest indices among equal scores must win.
            kth = np.take_along_axis(block, cand, axis=1).min(axis=1)
            for j, row in enumerate(block):
                above = np.flatnonzero(row > kth[j])
                tied = np.flatnonzero(row == kth[j])[: take - above.size]
                cand[j] = np.concatenate([above, tied])
        else:
            cand = np.tile(np.arange(L), (block.shape[0], 1))
        vals = np.take_along_axis(block, cand, axis=1)
        for j in range(block.shape[0]):
            o = np.lexsort((cand[j], -vals[j]))
            out[r0 + j, :take] = cand[j][o]
    return out


def _truth(Y_true) -> sp.csr_matrix:
    Y = sp.csr_matrix(Y_true)
    Y.eliminate_zeros()
    Y.sort_indices()
    return Y


def _hits(Y: sp.csr_matrix, top: np.ndarray) -> np.ndarray:
    """(n, k) booleans: is the label at each rank a true label of its row."""
    hits = np.zeros(top.shape, dtype=bool)
    for i in range(Y.shape[0]):
        true = Y.indices[Y.indptr[i]:Y.indptr[i + 1]]
        hits[i] = np.isin(top[i], true) & (top[i] >= 0)
    return hits


def jain_propensities(Y_train, A: float = 0.55, B: float = 1.5) -> np.ndarray:
    """Label propensities ``p_l = 1 / (1 + C exp(-A log(N_l + B)))``, ``C = (log N - 1)
    (B + 1)^A`` (Jain et al. 2016; A = 0.55, B = 1.5 is their default; 0.6/2.6 for Amazon,
    0.5/0.4 for Wikipedia data), from the training label counts ``N_l``."""
    Y = _truth(Y_train)
    n = Y.shape[0]
    counts = np.asarray(Y.sum(axis=0)).ravel()
    c = (np.log(n) - 1.0) * (B + 1.0) ** A
    return 1.0 / (1.0 + c * np.exp(-A * np.log(counts + B)))


def _ranked(Y_true, scores, k):
    Y = _truth(Y_true)
    top = top_k_labels(scores, k)
    if top.shape[0] != Y.shape[0]:
        raise ValueError("Y_true and scores have different numbers of rows")
    return Y, top, _hits(Y, top)


def precision_at_k(Y_true, scores, k: int = 5, propensities: np.ndarray | None = None) -> float:
    """P@k ``= (1/k) sum over the top k of y_l``, averaged over samples; with
    ``propensities``, PSP@k ``= (1/k) sum of y_l / p_l`` (unnormalized, as the repository
    defines it)."""
    Y, top, hits = _ranked(Y_true, scores, k)
    w = hits.astype(np.float64)
    if propensities is not None:
        w = w / np.where(top >= 0, np.asarray(propensities)[np.maximum(top, 0)], 1.0)
    return float(w.sum(axis=1).mean() / k) if Y.shape[0] else 0.0


def ndcg_at_k(Y_true, scores, k: int = 5, propensities: np.ndarray | None = None) -> float:
    """nDCG@k ``= sum_r y_(r) / log2(r + 1) / sum_{r <= min(k, |y|)} 1 / log2(r + 1)``,
    averaged over samples (0 for a sample without labels); with ``propensities``, PSnDCG@k
    ``= sum_r y_(r) / (p_(r) log2(r + 1)) / sum_{r <= k} 1 / log2(r + 1)``."""
    Y, top, hits = _ranked(Y_true, scores, k)
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    w = hits.astype(np.float64)
    if propensities is not None:
        w = w / np.where(top >= 0, np.asarray(propensities)[np.maximum(top, 0)], 1.0)
        return float((w * disc).sum(axis=1).mean() / disc.sum()) if Y.shape[0] else 0.0
    n_true = np.minimum(np.diff(Y.indptr), k)
    ideal = np.concatenate([[0.0], np.cumsum(disc)])[n_true]
    gain = (w * disc).sum(axis=1)
    return float(np.where(ideal > 0, gain / np.where(ideal > 0, ideal, 1.0), 0.0).mean()) \
        if Y.shape[0] else 0.0


def ranking_measures(Y_true, scores, ks=(1, 3, 5), propensities: np.ndarray | None = None
                     ) -> dict[str, float]:
    """P@k and nDCG@k for each ``k`` (and PSP@k, PSnDCG@k with ``propensities``)."""
    out = {}
    for k in ks:
        out[f"P@{k}"] = precision_at_k(Y_true, scores, k)
        out[f"nDCG@{k}"] = ndcg_at_k(Y_true, scores, k)
        if propensities is not None:
            out[f"PSP@{k}"] = precision_at_k(Y_true, scores, k, propensities)
            out[f"PSnDCG@{k}"] = ndcg_at_k(Y_true, scores, k, propensities)
    return out
