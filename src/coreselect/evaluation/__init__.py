"""Evaluation harness: Mulan-faithful BRkNN-b, BR logistic regression, the five measures,
k-fold CV, reports."""

from __future__ import annotations

from coreselect.evaluation.brknn import BRkNNb
from coreselect.evaluation.gds import CalibratedGDS
from coreselect.evaluation.linear import BRLogistic
from coreselect.evaluation.measures import MEASURE_LABELS, MEASURES, evaluate_all
from coreselect.evaluation.protocol import (
    EVALUATORS,
    METHOD_NAMES,
    method_factories,
    parse_k,
    parse_values,
    run_lambda_sweep,
    run_protocol,
)
from coreselect.evaluation.report import write_report

__all__ = [
    "BRkNNb",
    "BRLogistic",
    "CalibratedGDS",
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
    "write_report",
]
