"""Evaluation values pinned: every measure by its registry name against hand-worked values,
and the cross-validation protocol against a slow BRkNN-b and slow measures written here.

The fixture below is chosen so that the five measures all take different values and every
Mulan convention (both-empty example, label never present nor predicted) changes a result,
so a swapped registry entry or a changed convention cannot pass.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from sklearn.model_selection import KFold

from coreselect.baselines.transform import RankingSelector
from coreselect.evaluation.measures import MEASURES, evaluate_all
from coreselect.evaluation.protocol import run_protocol

# 5 examples, 4 labels (label 3 is never present nor predicted).
#   ex0: L={0,2}  L'={0}    |∩|=1 |∪|=2  jacc 1/2  F1 2/3   not exact
#   ex1: L={1}    L'={1}    |∩|=1 |∪|=1  jacc 1    F1 1     exact
#   ex2: L={0,1}  L'={0,2}  |∩|=1 |∪|=3  jacc 1/3  F1 1/2   not exact
#   ex3: L={}     L'={}     both empty:  jacc 1    F1 1     exact (Mulan)
#   ex4: L={2}    L'={}                  jacc 0    F1 0     not exact
# per label: l0 tp2 fp0 fn0 -> 1; l1 tp1 fp0 fn1 -> 2/3; l2 tp0 fp1 fn2 -> 0; l3 none -> 1
# pooled: tp3 fp1 fn3 -> 2*3 / (2*3 + 1 + 3) = 3/5
T = np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]])
P = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
PINNED = {
    "subset_accuracy": F(2, 5),
    "example_accuracy": (F(1, 2) + 1 + F(1, 3) + 1 + 0) / 5,  # 17/30
    "example_f1": (F(2, 3) + 1 + F(1, 2) + 1 + 0) / 5,  # 19/30
    "micro_f1": F(3, 5),
    "macro_f1": (1 + F(2, 3) + 0 + 1) / 4,  # 2/3
}


def test_registry_holds_exactly_the_five_measures():
    assert list(MEASURES) == list(PINNED)
    assert len({float(v) for v in PINNED.values()}) == 5  # the fixture tells them apart


@pytest.mark.parametrize("name", sorted(PINNED))
def test_measure_by_name(name):
    assert MEASURES[name](T, P) == pytest.approx(float(PINNED[name]), abs=1e-12)
    assert evaluate_all(T, P)[name] == pytest.approx(float(PINNED[name]), abs=1e-12)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_measure_is_one_on_a_perfect_prediction(name):
    assert MEASURES[name](T, T) == 1.0


# -- slow measures and a slow BRkNN-b, from Mulan's definitions ---------------------------------
def _slow_measures(T, P) -> dict:
    T, P = np.asarray(T) != 0, np.asarray(P) != 0
    n, L = T.shape
    exact = jacc = f1 = 0.0
    for t, p in zip(T, P):
        inter, union, size = int((t & p).sum()), int((t | p).sum()), int(t.sum() + p.sum())
        exact += float((t == p).all())
        jacc += 1.0 if union == 0 else inter / union
        f1 += 1.0 if size == 0 else 2 * inter / size
    tp = (T & P).sum(axis=0)
    fp = (~T & P).sum(axis=0)
    fn = (T & ~P).sum(axis=0)
    per_label = [1.0 if a + b + c == 0 else 2 * a / (2 * a + b + c) for a, b, c in zip(tp, fp, fn)]
    TP, FP, FN = tp.sum(), fp.sum(), fn.sum()
    return {"subset_accuracy": exact / n, "example_accuracy": jacc / n, "example_f1": f1 / n,
            "micro_f1": 1.0 if TP + FP + FN == 0 else 2 * TP / (2 * TP + FP + FN),
            "macro_f1": sum(per_label) / L}


def _slow_brknn_b(Xtr, Ytr, Xte, n_neighbors=5, seed=1):
    """Mulan's BRkNN-b: min-max normalized Euclidean distance, the k nearest plus every tie
    at the k-th distance, confidences (c_j + 1/n) / (K + L/n), label count rounded half up,
    ties among labels at the cut broken by a generator seeded with ``seed``."""
    n, L = Ytr.shape
    lo, hi = Xtr.min(axis=0), Xtr.max(axis=0)

    def norm(row):
        return [0.0 if hi[j] == lo[j] else (row[j] - lo[j]) / (hi[j] - lo[j]) for j in range(len(row))]

    train = [norm(r) for r in Xtr]
    rng = np.random.default_rng(seed)
    out = np.zeros((len(Xte), L), dtype=int)
    for i, row in enumerate(Xte):
        q = norm(row)
        dist = [sum((a - b) ** 2 for a, b in zip(q, t)) for t in train]
        kth = sorted(dist)[min(n_neighbors, n) - 1]
        near = [t for t in range(n) if dist[t] <= kth + 1e-12 * max(1.0, kth)]
        K = len(near)
        counts = np.array([sum(int(Ytr[t, j]) for t in near) for j in range(L)], dtype=float)
        conf = (counts + 1.0 / n) / (K + L / n)
        m = math.floor(counts.sum() / (K + L / n) + 0.5)
        if m == 0:
            continue
        cut = sorted(conf, reverse=True)[m - 1]
        above = [j for j in range(L) if conf[j] > cut]
        tied = np.array([j for j in range(L) if conf[j] == cut])
        out[i, above] = 1
        if m - len(above) > 0:
            out[i, rng.choice(tied, size=m - len(above), replace=False)] = 1
    return out


RANKING = [3, 0, 5, 1, 2, 4]


class FixedRanker(RankingSelector):
    """A ranker (fit once per fold, prefixes reused for every k) with a fixed ranking."""

    def _scores(self, X, Y):
        scores = np.zeros(X.shape[1])
        scores[RANKING] = -np.arange(len(RANKING), dtype=float)
        return scores


def _ranker(k, seed):
    return FixedRanker(k=k)


class FixedColumns:
    """A selector that always picks the first k columns (the protocol's wiring is what is tested)."""

    def __init__(self, k):
        self.k = k

    def fit(self, X, Y):
        self.selected_ = np.arange(self.k)
        return self


def _fixed(k, seed):
    return FixedColumns(k)


def _protocol_data():
    rng = np.random.default_rng(3)
    n = 36
    X = rng.normal(size=(n, 6))
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] + 0.5 * rng.normal(size=n) > 0,
                         rng.random(n) < 0.3]).astype(int)
    return X, Y


def _expected(X, Y, ks, n_folds, seed, n_neighbors=5, order=None):
    rows = {}
    for fold, (tr, te) in enumerate(KFold(n_folds, shuffle=True, random_state=seed).split(X)):
        for k in ks:
            cols = np.arange(k) if order is None else np.asarray(order[:k])
            pred = _slow_brknn_b(X[tr][:, cols], Y[tr], X[te][:, cols], n_neighbors)
            for name, value in _slow_measures(Y[te], pred).items():
                rows[(k, fold, name)] = value
    return rows


def test_protocol_equals_slow_brknn_b_and_slow_measures():
    X, Y = _protocol_data()
    ks, n_folds, seed = [2, 4], 3, 4
    df = run_protocol(X, Y, {"fixed": _fixed}, ks, n_folds=n_folds, seed=seed)
    got = {(int(r.k), int(r.fold), r.measure): float(r.value) for r in df.itertuples()}
    expected = _expected(X, Y, ks, n_folds, seed)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    # The fixture is sensitive to the wiring: other neighbour counts give other numbers, so
    # the comparison above pins n_neighbors=5.
    for other in (3, 7):
        assert _expected(X, Y, ks, n_folds, seed, n_neighbors=other) != expected


def test_protocol_uses_the_rankers_top_k_prefix():
    X, Y = _protocol_data()
    ks, n_folds, seed = [1, 2, 4], 2, 7
    df = run_protocol(X, Y, {"ranked": _ranker}, ks, n_folds=n_folds, seed=seed)
    got = {(int(r.k), int(r.fold), r.measure): float(r.value) for r in df.itertuples()}
    expected = _expected(X, Y, ks, n_folds, seed, order=RANKING)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    assert _expected(X, Y, ks, n_folds, seed, order=RANKING[1:]) != expected


SEEN: list[tuple[int, int]] = []


class SeedSpy(FixedColumns):
    def fit(self, X, Y):
        SEEN.append((self.k, self.seed))
        return super().fit(X, Y)


def _seed_spy(k, seed):
    spy = SeedSpy(k)
    spy.seed = seed
    return spy


def test_protocol_gives_fold_f_the_seed_plus_f():
    SEEN.clear()
    X, Y = _protocol_data()
    run_protocol(X, Y, {"spy": _seed_spy}, [1, 3], n_folds=3, seed=10)
    assert sorted(SEEN) == [(1, 10), (1, 11), (1, 12), (3, 10), (3, 11), (3, 12)]
