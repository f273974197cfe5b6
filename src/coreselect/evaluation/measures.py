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

