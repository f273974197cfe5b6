"""The five measures pinned on hand-worked examples (Mulan conventions)."""

from __future__ import annotations

import numpy as np
import pytest

from coreselect.evaluation.measures import (
    MEASURES,
    evaluate_all,
    example_accuracy,
    example_f1,
    macro_f1,
    micro_f1,
    subset_accuracy,
)

# 4 examples, 3 labels.
#   ex0: L={0}    L'={0,1}   |∩|=1 |∪|=2  F1 = 2/3
#   ex1: L={}     L'={}      both empty -> 1 (Mulan)
#   ex2: L={0,1}  L'={1}     |∩|=1 |∪|=2  F1 = 2/3
#   ex3: L={}     L'={2}     0            0
# per label: l0 tp1 fp0 fn1 -> 2/3; l1 tp1 fp1 fn0 -> 2/3; l2 tp0 fp1 fn0 -> 0
# pooled: tp2 fp2 fn1 -> 4/7
T = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 0], [0, 0, 0]])
P = np.array([[1, 1, 0], [0, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_subset_accuracy():
    assert subset_accuracy(T, P) == pytest.approx(1 / 4)


def test_example_accuracy():
    assert example_accuracy(T, P) == pytest.approx((1 / 2 + 1 + 1 / 2 + 0) / 4)


def test_example_f1():
    assert example_f1(T, P) == pytest.approx((2 / 3 + 1 + 2 / 3 + 0) / 4)


def test_micro_f1():
    assert micro_f1(T, P) == pytest.approx(4 / 7)


def test_macro_f1():
    assert macro_f1(T, P) == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)


def test_label_never_present_nor_predicted_scores_one_in_macro():
    T2 = np.column_stack([T, np.zeros(4, int)])
    P2 = np.column_stack([P, np.zeros(4, int)])
    assert macro_f1(T2, P2) == pytest.approx((2 / 3 + 2 / 3 + 0 + 1) / 4)
    assert micro_f1(T2, P2) == pytest.approx(4 / 7)


def test_all_empty_is_perfect():
    Z = np.zeros((3, 4), int)
    assert evaluate_all(Z, Z) == {m: 1.0 for m in MEASURES}


def test_perfect_and_sparse_input():
    import scipy.sparse as sp

    vals = evaluate_all(sp.csr_matrix(T), T)
    assert vals == {m: 1.0 for m in MEASURES}


def test_shape_mismatch():
    with pytest.raises(ValueError):
        subset_accuracy(T, P[:, :2])
