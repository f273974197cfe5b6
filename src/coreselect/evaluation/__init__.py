"""Evaluation harness: Mulan-faithful BRkNN-b, BR logistic regression, a sparse kNN scorer for
10⁵ labels, the five measures and the ranking measures of extreme classification (P@k, nDCG@k,
PSP@k, PSnDCG@k), k-fold CV, reports."""

from __future__ import annotations

from coreselect.evaluation.brknn import BRkNNb
from coreselect.evaluation.gds import CalibratedGDS
from coreselect.evaluation.linear import BRLogistic
from coreselect.evaluation.measures import MEASURE_LABELS, MEASURES, evaluate_all
from coreselect.evaluation.protocol import (
    ALL_MEASURES,
    EVALUATORS,
    METHOD_NAMES,
    full_reference,
    method_factories,
    parse_k,
    parse_values,
    run_lambda_sweep,
    run_protocol,
    selection_stability,
)
from coreselect.evaluation.ranking import RANKING_LABELS, RANKING_MEASURES, inverse_propensity, ranking_measures
from coreselect.evaluation.report import write_report
from coreselect.evaluation.sparse_knn import SparseKNN

__all__ = [
    "BRkNNb",
    "BRLogistic",
    "CalibratedGDS",
    "SparseKNN",
    "ALL_MEASURES",
    "RANKING_MEASURES",
    "RANKING_LABELS",
    "inverse_propensity",
    "ranking_measures",
    "EVALUATORS",
    "MEASURES",
    "MEASURE_LABELS",
    "evaluate_all",
    "METHOD_NAMES",
    "method_factories",
    "parse_k",
    "parse_values",
    "run_protocol",
    "run_lambda_sweep",
    "full_reference",
    "selection_stability",
    "write_report",
]
