"""Evaluation harness: Mulan-faithful BRkNN-b, the five measures, k-fold CV, reports."""

from __future__ import annotations

from coreselect.evaluation.brknn import BRkNNb
from coreselect.evaluation.measures import MEASURE_LABELS, MEASURES, evaluate_all
from coreselect.evaluation.protocol import (
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
