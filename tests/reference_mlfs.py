"""Slow, obviously correct references of the published multi-label MI selectors.

Straight from the formulas in the docstrings of :mod:`coreselect.baselines.mi_methods`:
plug-in entropies (bits) of tuples of columns counted with Python loops over the samples, and
every criterion recomputed from scratch for every candidate at every step. Inputs are already
discrete columns (the fast code's discretization keeps a column with at most ``n_bins`` distinct
values as it is, and entropies do not depend on how the values are named).
"""

from __future__ import annotations

import math
from collections import Counter

TOL = 1e-9


def H(*cols) -> float:
    """Joint entropy (bits) of the given columns (sequences of equal length)."""
    n = len(cols[0]) if cols else 0
    if n == 0:
        return 0.0
    counts = Counter(tuple(c[i] for c in cols) for i in range(n))
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def I(a, b) -> float:
    return H(a) + H(b) - H(a, b)


def Ic(a, b, c) -> float:
    """I(a; b | c)."""
    return H(a, c) + H(b, c) - H(c) - H(a, b, c)


def co(a, b, c) -> float:
    """Interaction information I(a; b; c) = I(a; b) - I(a; b | c)."""
    return I(a, b) - Ic(a, b, c)


def cols_of(M):
    return [[row[j] for row in M] for j in range(len(M[0]))] if len(M) else []


def best(scores: dict[int, float]) -> int:
    top = max(scores.values())
    return min(f for f, v in scores.items() if v >= top - TOL * max(1.0, abs(top)))


def greedy(X, Y, k, J):
    F, L = cols_of(X), cols_of(Y)
    S: list[int] = []
    while len(S) < k:
        S.append(best({f: J(F, L, f, S) for f in range(len(F)) if f not in S}))
    return S


def _rel(F, L, f):
    return sum(I(F[f], l) for l in L)


def _mean_mi(F, f, S):
    return sum(I(F[f], F[s]) for s in S) / len(S) if S else 0.0


def J_pmu(F, L, f, S):
    return (_rel(F, L, f) - sum(co(F[f], F[s], l) for s in S for l in L)
            - sum(co(F[f], L[i], L[j]) for i in range(len(L)) for j in range(i + 1, len(L))))


def J_d2f(F, L, f, S):
    return _rel(F, L, f) - sum(co(F[f], F[s], l) for s in S for l in L)


def J_mdmr(F, L, f, S):
    if not S:
        return _rel(F, L, f)
    red = sum(I(F[f], F[s]) - sum(Ic(F[s], l, F[f]) for l in L) for s in S)
    return _rel(F, L, f) - red / len(S)


def J_scls(F, L, f, S):
    h = H(F[f])
    rel = _rel(F, L, f)
    if h == 0 or h < 1e-12:
        return 0.0
    return rel - sum(I(F[f], F[s]) / h for s in S) * rel


def _pairs(L):
    return [(i, j) for i in range(len(L)) for j in range(len(L)) if i != j]


def J_lrfs(F, L, f, S):
    return sum(Ic(F[f], L[i], L[j]) for i, j in _pairs(L)) - _mean_mi(F, f, S)


def J_lsmfs(F, L, f, S):
    """LSMFS as read here (the paper's text could not be checked, see mi_methods.LSMFS):

        J(f) = sum_i I(f; l_i) + sum_{i != j} max(0, I(f; l_i | l_j) - I(f; l_i))
               - 1/|S| sum_{s in S} I(f; s)

    (PyIT-MLFS reads the supplement as +max(0, I(f; l_i; l_j)) = +max(0, I(f; l_i) -
    I(f; l_i | l_j)), the opposite sign, and sums the redundancy over S: see
    ``J_lsmfs_pyit``.)"""
    supp = sum(max(0.0, Ic(F[f], L[i], L[j]) - I(F[f], L[i])) for i, j in _pairs(L))
    return _rel(F, L, f) + supp - _mean_mi(F, f, S)


def J_mlsmfs(F, L, f, S):
    """MLSMFS as read here:

        J(f) = sum_i max(I(f; l_i), max_{j != i} I(f; l_i | l_j)) - 1/|S| sum_{s in S} I(f; s)

    (PyIT-MLFS: sum_i I(f; l_i) + max_{i != j} I(f; l_i; l_j) - sum_{s in S} I(f; s): see
    ``J_mlsmfs_pyit``.)"""
    total = 0.0
    for i in range(len(L)):
        total += max([I(F[f], L[i])] + [Ic(F[f], L[i], L[j]) for j in range(len(L)) if j != i])
    return total - _mean_mi(F, f, S)


def J_lsmfs_pyit(F, L, f, S):
    """PyIT-MLFS's ``lsmfs.__J`` (classes/lsmfs.py): pyitlib's co-information
    ``I(f; l_i; l_j) = I(f; l_i) - I(f; l_i | l_j)`` summed where positive, and the sum (not the
    mean) of ``I(f; s)``. For the docs' comparison only; not the baseline."""
    supp = sum(max(0.0, co(F[f], L[i], L[j])) for i, j in _pairs(L))
    return _rel(F, L, f) + supp - sum(I(F[f], F[s]) for s in S)


def J_mlsmfs_pyit(F, L, f, S):
    """PyIT-MLFS's ``mlsmfs.__J``: one maximum of the co-information over all ordered label
    pairs, added once, and the sum of ``I(f; s)``."""
    pairs = _pairs(L)
    supp = max(co(F[f], L[i], L[j]) for i, j in pairs) if pairs else float("-inf")
    return _rel(F, L, f) + supp - sum(I(F[f], F[s]) for s in S)


def ppt_classes(Y, tau=6):
    """Read's pruned problem transformation: the kept rows and their label sets (``tau``
    lowered until two label sets remain, or to 1)."""
    C = labelsets(Y)
    count = Counter(C)
    while tau > 1 and sum(1 for v in count.values() if v >= tau) < 2:
        tau -= 1
    keep = [i for i in range(len(C)) if count[C[i]] >= tau]
    return keep, [C[i] for i in keep]


def atr(X, Y, k, tau=6):
    """ATR (Eskandari & Ghassabi 2023, the authors' PyIT-MLFS ``atr.rank``):

        J(f) = 1/|L| sum_l I(f; l) + I(f; C_PPT) - 1/|S| sum_{s in S} I(f; s)

    with ``I(f; C_PPT)`` on the rows kept by the pruned problem transformation."""
    F, L = cols_of(X), cols_of(Y)
    keep, Ck = ppt_classes(Y, tau)
    Fk = [[col[i] for i in keep] for col in F]

    def J(F, L, f, S):
        mean_rel = sum(I(F[f], l) for l in L) / len(L) if L else 0.0
        return mean_rel + (I(Fk[f], Ck) if Ck else 0.0) - _mean_mi(F, f, S)

    S: list[int] = []
    while len(S) < k:
        S.append(best({f: J(F, L, f, S) for f in range(len(F)) if f not in S}))
    return S


CRITERIA = {"pmu": J_pmu, "d2f": J_d2f, "mdmr": J_mdmr, "scls": J_scls, "lrfs": J_lrfs,
            "lsmfs": J_lsmfs, "mlsmfs": J_mlsmfs}


def labelsets(Y):
    return [tuple(row) for row in Y]


def igmf(X, Y, k):
    F = cols_of(X)
    C = labelsets(Y)
    su = {}
    for f in range(len(F)):
        denom = H(F[f]) + H(C)
        su[f] = 2 * I(F[f], C) / denom if denom > 1e-12 else 0.0
    out = []
    while len(out) < k:
        out.append(best({f: v for f, v in su.items() if f not in out}))
    return out


def ppt_mi(X, Y, k, tau=6):
    C = labelsets(Y)
    count = Counter(C)
    while tau > 1 and sum(1 for v in count.values() if v >= tau) < 2:
        tau -= 1
    keep = [i for i in range(len(C)) if count[C[i]] >= tau]
    Xk = [X[i] for i in keep]
    Ck = [C[i] for i in keep]
    F = cols_of(Xk) if Xk else [[] for _ in range(len(X[0]))]
    S: list[int] = []
    while len(S) < k:
        cand = [f for f in range(len(F)) if f not in S]
        joint = {f: I(list(zip(*([F[s] for s in S] + [F[f]]))) if Ck else [], Ck) for f in cand}
        top = max(joint.values())
        near = [f for f in cand if joint[f] >= top - TOL * max(1.0, abs(top))]
        S.append(best({f: I(F[f], Ck) for f in near}))
    return S


def select(name: str, X, Y, k: int) -> list[int]:
    """The reference selection of ``name`` (lists of lists of ints in, feature indices out)."""
    if name == "igmf":
        return igmf(X, Y, k)
    if name == "ppt-mi":
        return ppt_mi(X, Y, k)
    if name == "atr":
        return atr(X, Y, k)
    return greedy(X, Y, k, CRITERIA[name])
