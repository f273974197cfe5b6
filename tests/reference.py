"""Slow, obviously-correct implementations written straight from the definitions.

Everything here works on dense arrays, one column or one pair at a time, with no closed forms,
no sparse tricks and no incremental state; the fast paths of coreselect are tested against it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

TIE_RTOL = 1e-9


# -- discretization ------------------------------------------------------------------------
def discretize_column(x, n_bins="auto", strategy="auto", min_bin_count=10, sparse_input=False):
    """Codes of one column, by the rules in coreselect.core.discretize's docstring.

    ``sparse_input`` is accepted and ignored: the rules read the values, not the container."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n_bins == "auto":  # three bins below 240 rows, five from there
        n_bins = 3 if n < 240 else 5
    distinct = np.unique(x)
    if strategy == "none" or distinct.size <= n_bins:
        return np.searchsorted(distinct, x)
    # Rule 4's bound on tiny data: at most half an equal-frequency bin's share, at least 1.
    min_bin_count = min(min_bin_count, max(1, n // (2 * n_bins)))
    # Rule 2: non-negative and more than half zero (whatever the container).
    zero_bin = strategy == "auto" and x.min() >= 0 and 2 * (x == 0).sum() > n
    split_values = x[x != 0] if zero_bin else x
    q = n_bins - 1 if zero_bin else n_bins
    bin_of = {}
    for v in np.unique(split_values):
        if strategy == "uniform":
            lo, hi = x.min(), x.max()
            b = min(int(math.floor(n_bins * (v - lo) / (hi - lo))), n_bins - 1)
        else:
            before = int((split_values < v).sum())
            b = (q * before) // split_values.size
        bin_of[v] = b
    # Bins in order with their sizes; merge the smallest one below min_bin_count into its
    # smaller neighbour (left on a tie) until none is left or one bin remains.
    groups = sorted(set(bin_of.values()))
    members = [[v for v in bin_of if bin_of[v] == g] for g in groups]
    sizes = [int(sum((split_values == v).sum() for v in m)) for m in members]
    while len(sizes) > 1 and min(sizes) < min_bin_count:
        j = min(range(len(sizes)), key=lambda i: (sizes[i], i))
        left = sizes[j - 1] if j > 0 else math.inf
        right = sizes[j + 1] if j + 1 < len(sizes) else math.inf
        t = j - 1 if left <= right else j + 1
        sizes[t] += sizes[j]
        members[t] += members[j]
        del sizes[j], members[j]
    final = {v: i for i, m in enumerate(members) for v in m}
    codes = np.empty(n, dtype=int)
    for i, v in enumerate(x):
        if zero_bin and v == 0:
            codes[i] = 0
        else:
            codes[i] = final[v] + (1 if zero_bin else 0)
    return codes


def same_partition(a, b) -> bool:
    """True when two code vectors group the samples identically (codes may be relabelled)."""
    a, b = np.asarray(a), np.asarray(b)
    pairs = len({(int(i), int(j)) for i, j in zip(a, b)})
    return pairs == len(set(a.tolist())) == len(set(b.tolist()))


# -- information ---------------------------------------------------------------------------
def entropy(*columns) -> float:
    """Joint entropy in bits of one or more discrete columns, from the count table."""
    table = {}
    for cell in zip(*columns):
        table[cell] = table.get(cell, 0) + 1
    n = len(columns[0])
    return -sum(c / n * math.log2(c / n) for c in table.values())


def mutual_information(x, y) -> float:
    return entropy(x) + entropy(y) - entropy(x, y)


def relevance(x, label, kind="nmi") -> float:
    info = mutual_information(x, label)
    if kind == "mi":
        return max(info, 0.0)
    hx, hl = entropy(x), entropy(label)
    if hx == 0 or hl == 0:
        return 0.0
    return min(max(info / math.sqrt(hx * hl), 0.0), 1.0)


def distance(u, v) -> float:
    h = entropy(u, v)
    if h == 0:
        return 0.0
    return min(max(1.0 - mutual_information(u, v) / h, 0.0), 1.0)


# -- objective -----------------------------------------------------------------------------
def g(codes, labels, subset, p, kind="nmi") -> float:
    total = 0.0
    for l in range(labels.shape[1]):
        values = sorted((relevance(codes[:, x], labels[:, l], kind) for x in subset), reverse=True)
        total += sum(values[:p])
    return total


def diversity(codes, subset) -> float:
    return sum(distance(codes[:, a], codes[:, b]) for a, b in itertools.combinations(subset, 2))


#: a p that counts every selected feature (coreselect's P_ALL)
P_ALL = 2**31 - 1


def information_p(k: int, n_labels: int) -> int:
    """The "information" calibration's p when none is given: the smallest p of at least 3
    whose per-label top-p lists hold 4 k features in all."""
    p = 3
    while p * n_labels < 4 * k:
        p += 1
    return p


def h(codes, labels, subset, k, lam, p, kind="nmi", calibration="paper") -> float:
    """Eq. (2); a per-step calibration's "every selected feature" p counts at most k per
    label, so its reported h takes k for p in c."""
    p_c = k if p >= P_ALL and calibration not in ("paper", "fixed") else p
    c = k * (k - 1) / (2 * p_c * labels.shape[1])
    return (1 - lam) * c * g(codes, labels, subset, p, kind) + lam * diversity(codes, subset)


def _argmax_first(scores: dict) -> int:
    best = max(scores.values())
    tol = TIE_RTOL * max(1.0, abs(best))
    return min(u for u, s in scores.items() if s >= best - tol)


def _range_scaled(values: dict) -> dict:
    """Each value mapped to [0, 1] by the min and max over the candidates (0 if all equal)."""
    low, high = min(values.values()), max(values.values())
    return {u: (v - low) / (high - low) if high > low else 0.0 for u, v in values.items()}


def greedy(codes, labels, k, lam=0.5, p=10, kind="nmi", alternate=False, selectable=None,
           n_select=None, calibration="paper"):
    """Algorithm 1 (alternate=False) or 2 (True), recomputing g and D from scratch.

    ``k`` fixes the coefficient c; ``n_select`` (default k) is how many are picked (a part of
    Algorithm 3 picks its coreset size). ``calibration="range"`` scores a candidate by
    ``(1-lam) * dg' + lam * dD'``, each marginal gain min-max scaled over the remaining
    candidates of the step (relevance gains under 1e-9 of the largest single relevance count
    as 0; no AltGreedy halving), and skips a candidate at distance 0 from a selected feature
    (a copy) while any other candidate is left; ``"information"`` is ``"range"`` with ``dD``
    the negative information the candidate shares with the chosen (:func:`redundancy`);
    ``"paper"`` is eq. (2)."""
    n_select = k if n_select is None else n_select
    d = codes.shape[1]
    allowed = [u for u in range(d) if selectable is None or selectable[u]]
    c = k * (k - 1) / (2 * p * labels.shape[1])
    half = 0.5 if alternate else 1.0
    singles = {u: g(codes, labels, [u], p, kind) for u in allowed}
    first = _argmax_first(singles)
    chosen = [first]
    while len(chosen) < n_select:
        g_now, d_now = g(codes, labels, chosen, p, kind), diversity(codes, chosen)
        if calibration == "information":
            d_now = -redundancy(codes, chosen)
        dg, dd = {}, {}
        candidates = [u for u in allowed if u not in chosen]
        if calibration != "paper":
            fresh = [u for u in candidates
                     if min(distance(codes[:, u], codes[:, x]) for x in chosen) > 1e-9]
            candidates = fresh or candidates
        for u in candidates:
            cand = chosen + [u]
            dg[u] = g(codes, labels, cand, p, kind) - g_now
            dd[u] = (-redundancy(codes, cand) if calibration == "information"
                     else diversity(codes, cand)) - d_now
        if calibration == "paper":
            scores = {u: (1 - lam) * c * half * dg[u] + lam * dd[u] for u in dg}
        elif calibration in ("range", "information"):
            floor = 1e-9 * max(singles.values())
            dg = _range_scaled({u: v if v > floor else 0.0 for u, v in dg.items()})
            dd = _range_scaled(dd)
            scores = {u: (1 - lam) * dg[u] + lam * dd[u] for u in dg}
        else:
            raise ValueError("the reference knows 'paper', 'range' and 'information', not "
                             f"{calibration!r}")
        chosen.append(_argmax_first(scores))
    return chosen, h(codes, labels, chosen, k, lam, p, kind, calibration)


# -- whole selections (every field a product path reports) -----------------------------------
def codes_of(X, n_bins="auto", strategy="auto", min_bin_count=10):
    """Codes of every column of ``X`` (dense or sparse), one column at a time."""
    sparse = sp.issparse(X)
    dense = X.toarray() if sparse else np.asarray(X, dtype=float)
    return np.column_stack([discretize_column(dense[:, j], n_bins, strategy, min_bin_count, sparse)
                            for j in range(dense.shape[1])])


@dataclass
class Selection:
    """What a selection path reports, computed from the definitions."""

    selected: list
    objective: float
    relevance: float
    diversity: float
    pair_distances: np.ndarray
    feature_relevance: np.ndarray
    parts: list | None = None  # each part's selection (original ids, selection order)
    union: list | None = None  # sorted ids AltGreedy chose from


def describe(codes, labels, chosen, k, lam, p, kind, calibration="paper", **extra) -> Selection:
    """Every field of a selection, recomputed from scratch for the chosen column ids."""
    m = len(chosen)
    pair = np.zeros((m, m))
    for i, j in itertools.combinations(range(m), 2):
        pair[i, j] = pair[j, i] = distance(codes[:, chosen[i]], codes[:, chosen[j]])
    feat = np.array([sum(relevance(codes[:, x], labels[:, l], kind) for l in range(labels.shape[1]))
                     for x in chosen])
    return Selection(selected=list(chosen),
                     objective=h(codes, labels, chosen, k, lam, p, kind, calibration),
                     relevance=g(codes, labels, chosen, p, kind), diversity=diversity(codes, chosen),
                     pair_distances=pair, feature_relevance=feat, **extra)


def _selectable(codes, keep_constant):
    return [keep_constant or len(set(codes[:, j].tolist())) > 1 for j in range(codes.shape[1])]


def centralized(codes, labels, k, lam=0.5, p=10, kind="mi", keep_constant=False,
                calibration="paper") -> Selection:
    """CGDS: AltGreedy over every (selectable) column."""
    chosen, _ = greedy(codes, labels, k, lam, p, kind, True, _selectable(codes, keep_constant),
                       calibration=calibration)
    return describe(codes, labels, chosen, k, lam, p, kind, calibration)


def auto_partitions(d, k) -> int:
    """The paper's m = ceil(sqrt(d / k))."""
    return max(1, math.ceil(math.sqrt(d / k)))


def distributed(codes, labels, parts, k, lam=0.5, p=10, kind="mi", keep_constant=False,
                coreset_size=None, calibration="paper") -> Selection:
    """Algorithm 3: Greedy (Algorithm 1) picks ``coreset_size`` (default k, fewer when a part
    has fewer selectable columns) on every part, then AltGreedy (Algorithm 2) picks k from the
    union. ``parts`` lists each part's original column ids; inside a part (and in the union)
    ties go to the lowest original id."""
    n_keep = k if coreset_size is None else coreset_size
    ok = _selectable(codes, keep_constant)
    picked = []
    for part in parts:
        ids = sorted(int(i) for i in part)
        sel = [ok[i] for i in ids]
        n = min(n_keep, sum(sel))
        if n == 0:
            picked.append([])
            continue
        local, _ = greedy(codes[:, ids], labels, k, lam, p, kind, False, sel, n_select=n,
                          calibration=calibration)
        picked.append([ids[i] for i in local])
    union = sorted(i for part in picked for i in part)
    local, _ = greedy(codes[:, union], labels, k, lam, p, kind, True, calibration=calibration)
    chosen = [union[i] for i in local]
    return describe(codes, labels, chosen, k, lam, p, kind, calibration, parts=picked,
                    union=union)


# -- every calibration of a greedy step (coreselect.core.objective.CALIBRATIONS) -------------
GAIN_RTOL = 1e-9  # a relevance gain at most this fraction of the largest g({v}) counts as 0


def _pstd(values: list) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def calibrated_scores(how, dg: dict, dd: dict, n_selected, lam, coefficient=1.0,
                      alternate=False, relevance_scale=None, ranges=None) -> dict:
    """Score of every *live* candidate ``u`` (the keys of ``dg`` and ``dd``: relevance gain
    ``g(S+u) - g(S)`` and distance sum ``sum_{x in S} d(x, u)``) in one step after the first,
    one candidate at a time, from the definitions of the calibrations:

    * paper: ``(1-lam) c dg + lam dD`` (c halved for AltGreedy);
    * the others first count a relevance gain of at most 1e-9 times ``relevance_scale``
      (default: the largest live gain) as 0, and take every spread over the live candidates;
    * spread: ``(1-lam) dg / sd(dg) + lam dD / sd(dD)`` (population standard deviation; a
      term is 0 when its sd is 0);
    * range: ``(1-lam) (dg - min) / (max - min) + lam (dD - min) / (max - min)`` (0 when
      max = min);
    * balanced: as range, the diversity term divided by ``max(max - min, 1)``;
    * information: as range (its ``dD`` is ``-sum_{x in S} I(x; u)``, :func:`redundancy`);
    * ratio: ``(1-lam) log dg + lam log(dD / |S|)`` (log 0 = -inf; dD / |S| at least
      1e-300); only the mean distance ``log(dD / |S|)`` once no live candidate gains any
      relevance, or when lam = 1;
    * fixed: ``(1-lam)/R_g dg + lam/R_D dD`` with ``ranges = (R_g, R_D)`` (a range of 0
      counts as 1; the relevance weight halved for AltGreedy), no residue rule.
    """
    live = sorted(dg)
    if how == "paper":
        w = (1 - lam) * coefficient * (0.5 if alternate else 1.0)
        return {u: w * dg[u] + lam * dd[u] for u in live}
    if how == "fixed":
        a, b = fixed_weights(lam, ranges)
        return {u: a * (0.5 if alternate else 1.0) * dg[u] + b * dd[u] for u in live}
    scale = max(dg.values()) if relevance_scale is None else relevance_scale
    dg = {u: dg[u] if dg[u] > GAIN_RTOL * scale else 0.0 for u in live}

    def by_range(values, floor=0.0):
        low, high = min(values.values()), max(values.values())
        spread = max(high - low, floor)
        return {u: (values[u] - low) / spread if spread > 0 else 0.0 for u in live}

    def by_std(values):
        sd = _pstd([values[u] for u in live])
        return {u: values[u] / sd if sd > 0 else 0.0 for u in live}

    if how in ("range", "balanced", "spread", "information"):
        if how == "spread":
            a, b = by_std(dg), by_std(dd)
        else:
            a, b = by_range(dg), by_range(dd, 1.0 if how == "balanced" else 0.0)
        return {u: (1 - lam) * a[u] + lam * b[u] for u in live}
    if how == "ratio":
        mean_d = {u: math.log(max(dd[u] / n_selected, 1e-300)) for u in live}
        if lam >= 1 or not any(dg[u] > 0 for u in live):
            return mean_d
        return {u: ((1 - lam) * math.log(dg[u]) if dg[u] > 0 else -math.inf) + lam * mean_d[u]
                for u in live}
    raise ValueError(f"unknown calibration {how!r}")


def fixed_weights(lam, ranges) -> tuple[float, float]:
    """``(a, b)`` of the "fixed" objective ``a g + b D`` from its ranges ``(R_g, R_D)``."""
    r_g, r_d = ranges
    return (1 - lam) / (r_g if r_g > 0 else 1.0), lam / (r_d if r_d > 0 else 1.0)


def fixed_ranges(relevance_matrix, codes, selectable=None) -> tuple[float, float]:
    """``(R_g, R_D)`` from the definitions: the range of ``g({v}) = sum_l MI(v, l)`` over the
    selectable columns, and the range of ``d(u0, v)`` over the other selectable columns, ``u0``
    the largest ``g({u})`` (lowest index on ties)."""
    d = codes.shape[1]
    allowed = [u for u in range(d) if selectable is None or selectable[u]]
    singles = {u: float(sum(relevance_matrix[u])) for u in allowed}
    first = _argmax_first(singles)
    dist = [distance(codes[:, first], codes[:, v]) for v in allowed if v != first]
    r_d = max(dist) - min(dist) if dist else 0.0
    return max(singles.values()) - min(singles.values()), r_d


def redundancy(codes, subset) -> float:
    """``sum over unordered pairs of I(a; b)``: the information the subset's features share
    (the negative of the ``"information"`` calibration's diversity)."""
    return sum(mutual_information(codes[:, a], codes[:, b])
               for a, b in itertools.combinations(subset, 2))


def greedy_calibrated(relevance_matrix, codes, k, lam, p, calibration, alternate=True,
                      selectable=None, ranges=None):
    """Greedy / AltGreedy under any calibration, from set functions recomputed at every step:
    ``g`` is the sum over labels of the top-``p`` of ``relevance_matrix`` (rows: columns of
    ``codes``), ``D`` the sum of pairwise :func:`distance` (``"information"``: minus
    :func:`redundancy`, the information shared in bits). The first pick is the largest
    ``g({u})``; calibrated steps skip copies of a selected feature (distance 0) while any
    other candidate is left; ties go to the lowest index."""
    d = codes.shape[1]
    n_labels = relevance_matrix.shape[1]
    allowed = [u for u in range(d) if selectable is None or selectable[u]]

    def g_of(subset):
        return sum(sum(sorted((relevance_matrix[x, l] for x in subset), reverse=True)[:p])
                   for l in range(n_labels))

    def d_of(subset):
        if calibration == "information":
            return -redundancy(codes, subset)
        return sum(distance(codes[:, a], codes[:, b]) for a, b in itertools.combinations(subset, 2))

    c = k * (k - 1) / (2 * p * n_labels)
    if calibration == "fixed" and ranges is None:  # a part gets the whole data's instead
        ranges = fixed_ranges(relevance_matrix, codes, selectable)
    singles = {u: g_of([u]) for u in allowed}
    chosen = [_argmax_first(singles)]
    while len(chosen) < k:
        candidates = [u for u in allowed if u not in chosen]
        if calibration not in ("paper", "fixed"):  # the per-step ones skip copies
            fresh = [u for u in candidates
                     if min(distance(codes[:, u], codes[:, x]) for x in chosen) > 1e-9]
            candidates = fresh or candidates
        g_now, d_now = g_of(chosen), d_of(chosen)
        dg = {u: g_of(chosen + [u]) - g_now for u in candidates}
        dd = {u: d_of(chosen + [u]) - d_now for u in candidates}
        scores = calibrated_scores(calibration, dg, dd, len(chosen), lam, c, alternate,
                                   relevance_scale=max(singles.values()), ranges=ranges)
        chosen.append(_argmax_first(scores))
    return chosen
