"""Relevance to many sparse binary labels without a features x labels matrix (exact).

Why: with 10^4 to 10^6 labels the dense relevance matrix (8 bytes per feature and label) does
not fit, but almost all of its entries follow from marginals alone.

Design. Let ``x`` be a feature (codes ``0 .. a``, code 0 implicit; ``nnz_x`` non-zero samples,
``base_x = sum_i m_i log2 m_i`` over its non-zero codes) and ``l`` a binary label column
(``c_l`` samples with code 1). If ``x`` and ``l`` never co-occur (no sample has both a
non-zero code of ``x`` and ``l = 1``), every cell of their joint table is a marginal:
``N[i, 1] = 0``, ``N[i, 0] = m_i``, ``N[0, 1] = c_l``, ``N[0, 0] = n - nnz_x - c_l``, so

    H(x, l) = log2 n - (base_x + c_l log2 c_l + f(n - nnz_x - c_l)) / n

and ``MI(x, l) = f_closed(key_x, c_l)`` depends on ``x`` only through its *key*
``(nnz_x, base_x)`` and on ``l`` only through ``c_l`` (NMI as well: ``H(x)`` is a function of
the key, ``H(l)`` of ``c_l``). The same float operations as the dense numpy kernel
(:func:`coreselect.core.entropy._joint_entropy_sparse`) are used, so such entries are
bit-identical to it. Co-occurring pairs are counted with one sparse product per block of labels
(labels x samples times samples x feature code slots) and their joint tables filled in the same
closed form as the dense kernel, again in the same order.

The greedy's relevance gains ``gain(v) = sum_l max(0, MI(v, l) - t_l)`` (``t_l`` the p-th
largest relevance to ``l`` among the selected, 0 while fewer than ``p`` are positive; exactly
:class:`coreselect.core.objective.RelevanceGains`' semantics, ties included) split as

    gain(v) = sum_c F_c(f_closed(key_v, c))                                     (A, per key)
            + sum_{l co-occurring with v} [max(0, MI(v, l) - t_l) - max(0, f_closed(key_v, c_l) - t_l)]   (B)

where labels are grouped by their count ``c`` and ``F_c(y) = sum_{l: c_l = c} max(0, y - t_l)``
is read off the group's sorted thresholds with a binary search and a prefix sum. When a label's
threshold rises, ``A`` changes by ``F_c^new - F_c^old`` for every key (a few thousand keys, one
pass per changed group) and ``B`` only on that label's co-occurring pairs still above the old
threshold: each label's pairs are kept sorted by ``max(MI, f_closed)`` so the pairs that can
still change are a shrinking prefix (as the dense version's active lists). Memory is
O(co-occurring pairs + features + labels x p + keys), never features x labels.

Only binary label columns qualify (``n_codes <= 2``; empty and all-ones labels are constant
columns with count 0 and are handled by the same closed form); many-valued labels keep the
dense path (:func:`choose_backend`). Used by every mode built on :class:`Problem`
(centralized, distributed parts through :meth:`SparseRelevance.take`, streaming, stores)
and by the row-sharded mode (:class:`MergedSparseRelevance`: the (label, feature code)
co-occurrence counts add over row shards, :class:`coreselect.core.shards.SparseShardCounts`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.entropy import ZERO_ENTROPY, entropy, xlogx_table, zero_small
from coreselect.core.objective import enter_top

#: ``relevance_backend="auto"`` takes the sparse form when the dense matrix would be larger
#: than this (and the labels are binary).
DENSE_RELEVANCE_MAX_BYTES = 256 * 2**20

#: Bound on the co-occurrence entries counted in one sparse product (temporaries ~ 60 bytes
#: per entry).
BLOCK_ENTRIES = 4_000_000

RELEVANCE_BACKENDS = ("auto", "dense", "sparse")

#: Stored pairs read per step of a scan over them (temporaries ~ 40 bytes per pair).
SCAN_PAIRS = 1 << 20


def work_blocks(work: np.ndarray, limit: float | None = None) -> list[tuple[int, int]]:
    """Consecutive ``(start, stop)`` blocks of items whose ``work`` adds up to about ``limit``
    (default :data:`BLOCK_ENTRIES`) each, an item larger than that alone (no Python loop
    over the items: a million labels)."""
    limit = BLOCK_ENTRIES if limit is None else limit
    work = np.asarray(work, dtype=np.float64)
    if work.size == 0:
        return []
    cum = np.cumsum(work)
    cuts = np.searchsorted(cum, limit * np.arange(1, int(cum[-1] // limit) + 1), side="left")
    bounds = np.unique(np.r_[0, cuts, work.size])
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def labels_are_binary(labels: DiscreteMatrix) -> bool:
    """Whether every label column has at most two codes (the sparse form's condition)."""
    return bool(np.all(labels.n_codes <= 2))


def choose_backend(features: DiscreteMatrix, labels: DiscreteMatrix, requested: str = "auto") -> str:
    """``"dense"`` or ``"sparse"`` for ``requested`` (``"auto"``: sparse when the labels are
    binary and the dense matrix would exceed :data:`DENSE_RELEVANCE_MAX_BYTES`)."""
    if requested not in RELEVANCE_BACKENDS:
        raise ValueError(f"unknown relevance_backend {requested!r}; choose from {RELEVANCE_BACKENDS}")
    if requested == "dense":
        return "dense"
    binary = labels_are_binary(labels)
    if requested == "sparse":
        if not binary:
            raise ValueError("relevance_backend='sparse' needs binary label columns")
        return "sparse"
    big = 8 * features.n_columns * labels.n_columns > DENSE_RELEVANCE_MAX_BYTES
    return "sparse" if binary and big else "dense"


def _inverse_sqrt(h: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(h >= ZERO_ENTROPY, 1.0 / np.sqrt(h), 0.0)


class SparseRelevance:
    """``MI(x, l)`` (or NMI) of every feature to every binary label, held as the co-occurring
    pairs plus closed forms (see the module docstring). Indexing with positions returns dense
    rows (``rel[positions]``, shape (m, L)), like the dense matrix; :meth:`take` restricts the
    features (a subproblem)."""

    def __init__(self, features: DiscreteMatrix, labels: DiscreteMatrix, kind: str = "mi",
                 *, progress: Callable[[int, int], None] | None = None,
                 _pairs: tuple | None = None):
        if kind not in ("mi", "nmi"):
            raise ValueError(f"unknown relevance {kind!r}")
        if not labels_are_binary(labels):
            raise ValueError("the sparse relevance needs binary label columns")
        if features.n_samples != labels.n_samples:
            raise ValueError("the two matrices have different numbers of samples")
        self.features, self.labels = features, labels
        n = features.n_samples
        xl = xlogx_table(max(n, 1))
        self._set_marginals(
            n, kind, features.nonzero_counts,
            np.bincount(features.expanded_owner, weights=xl[features.code_counts],
                        minlength=features.n_columns),
            entropy(features),
            # Labels: count of code 1 (0 for a constant label), its entropy and base.
            np.where(labels.n_codes >= 2, labels.nonzero_counts, 0).astype(np.int64),
            np.bincount(labels.expanded_owner, weights=xl[labels.code_counts],
                        minlength=labels.n_columns),
            entropy(labels), features.expanded_owner, features.code_counts)
        self.indptr, self.pair_feature, self.pair_value, self.pair_closed = (
            self._all_pairs(progress) if _pairs is None else _pairs)

    def _set_marginals(self, n, kind, nnz, base, h_x, count, base_l, h_l, slot_owner,
                       slot_counts) -> None:
        """What the closed forms read: per feature its key ``(nnz, base)`` and entropy, per
        label its count, base and entropy; per feature code slot its owner and count."""
        self.n, self.kind = int(n), kind
        self.xl = xlogx_table(max(self.n, 1))
        self.nnz, self.base, self.h_x = nnz, base, h_x
        self.count, self.base_l, self.h_l = count, base_l, h_l
        self.slot_owner, self.slot_counts = slot_owner, slot_counts
        self.n_features, self.n_labels = int(nnz.size), int(count.size)
        self.group_counts, self.label_group = np.unique(self.count, return_inverse=True)
        self.label_group = self.label_group.astype(np.int64).reshape(-1)
        # One label of each group stands for it in the closed forms (same count, same base).
        first = np.zeros(self.group_counts.size, dtype=np.int64)
        first[self.label_group[::-1]] = np.arange(self.n_labels)[::-1]
        self.group_label = first

    # -- shape -----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_features, self.n_labels)

    @property
    def n_pairs(self) -> int:
        return int(self.pair_feature.size)

    @property
    def nbytes(self) -> int:
        return int(self.pair_feature.nbytes + self.pair_value.nbytes + self.pair_closed.nbytes
                   + self.indptr.nbytes)

    # -- closed forms ------------------------------------------------------------------------
    def closed(self, feats: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Relevance of features ``feats`` and labels ``labels`` (broadcast together) as if
        they never co-occurred; the dense numpy kernel's float operations, in its order."""
        n, xl = self.n, self.xl
        if n == 0:
            return np.zeros(np.broadcast(feats, labels).shape)
        c = self.count[labels]
        n00 = np.maximum(n - self.nnz[feats] - c, 0)  # clamped: cancels where they co-occur
        cells = (self.base[feats] + self.base_l[labels]) + xl[n00]
        return self._finish(cells, feats, labels)

    def _finish(self, cells, feats, labels) -> np.ndarray:
        h_xl = zero_small(np.log2(self.n) - cells / self.n)
        h_x = self.h_x[feats]
        info = np.maximum(h_x - h_xl + self.h_l[labels], 0.0)
        if self.kind == "mi":
            return info
        info = info * _inverse_sqrt(h_x)
        info = info * _inverse_sqrt(self.h_l[labels])
        return np.minimum(info, 1.0)

    # -- co-occurring pairs ------------------------------------------------------------------
    def _from_counts(self, label: np.ndarray, slot: np.ndarray, count: np.ndarray):
        """Pairs ``(label, feature, relevance)`` from co-occurrence counts of (label, feature
        code slot) entries sorted by label then slot (a feature's slots are consecutive)."""
        xl = self.xl
        owner = self.slot_owner[slot]
        if label.size == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0)
        start = np.flatnonzero(np.r_[True, (label[1:] != label[:-1]) | (owner[1:] != owner[:-1])])
        m_i = self.slot_counts[slot]
        lens = np.diff(np.r_[start, label.size])
        s1 = _run_sums(xl[count], start, lens)
        s2 = _run_sums(xl[m_i - count] - xl[m_i], start, lens)
        together = np.add.reduceat(count, start)
        lab, f = label[start], owner[start]
        c = self.count[lab]
        s3 = xl[c - together] - xl[c]
        n00 = self.n - self.nnz[f] - c + together
        cells = ((s1 + s2) + s3) + ((self.base[f] + self.base_l[lab]) + xl[n00])
        return lab, f, self._finish(cells, f, lab)

    def _all_pairs(self, progress=None):
        """Every co-occurring pair, label-major, each label's pairs sorted by
        ``max(MI, f_closed)`` descending (the greedy's live prefixes): ``(indptr, feature,
        value, closed)``. Compiled when numba is available (one pass over the label's rows,
        no slot-level temporaries), else sparse products; the same numbers either way.
        ``progress(done, total)`` is called after each block of labels."""
        from coreselect.core.entropy import _numba_enabled

        if _numba_enabled("auto"):
            return self._all_pairs_compiled(progress)
        return self._all_pairs_sparse(progress)

    def _blocks(self, work: np.ndarray) -> list[tuple[int, int]]:
        return work_blocks(work)

    def _assemble(self, counts, out_f, out_v, out_c):
        L = self.n_labels
        indptr = np.zeros(L + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        pf = np.concatenate(out_f) if out_f else np.zeros(0, dtype=np.int32)
        pv = np.concatenate(out_v) if out_v else np.zeros(0)
        pc = np.concatenate(out_c) if out_c else np.zeros(0)
        return indptr, pf, pv, pc

    def _all_pairs_compiled(self, progress=None):
        from coreselect.core._numba_sparse import count_pairs, label_pairs

        feats, labels = self.features, self.labels
        rm = feats.row_major
        ycodes = labels.codes
        L = labels.n_columns
        mark = np.zeros(feats.n_columns, dtype=np.int8)
        touched = np.zeros(feats.n_columns, dtype=np.int64)
        # Blocks of labels of about equal work (one label's work: its rows' entries), so a
        # progress callback sees the pass move; the kernels run per block on slices.
        entries = np.r_[0, np.cumsum(np.diff(rm.indptr)[ycodes.indices], dtype=np.float64)]
        cum = np.cumsum(entries[ycodes.indptr[1:]] - entries[ycodes.indptr[:-1]] + 1.0)
        cuts = np.unique(np.r_[0, np.searchsorted(cum, cum[-1] * np.arange(1, 50) / 50)
                               if L else [], L]).astype(np.int64)
        # Counted first, so the pairs are written once into arrays of their exact size.
        sizes = np.zeros(L, dtype=np.int64)
        for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
            sizes[a:b] = count_pairs(ycodes.indptr[a:b + 1], ycodes.indices, rm.indptr,
                                     rm.indices, mark, touched)
            if progress is not None:
                progress(int(b), 2 * L)
        indptr = np.zeros(L + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        total = int(indptr[-1])
        feature = np.empty(total, dtype=np.int32)
        value, closed = np.empty(total), np.empty(total)
        log2n = float(np.log2(self.n)) if self.n else 0.0
        inv_x, inv_l = _inverse_sqrt(self.h_x), _inverse_sqrt(self.h_l)
        slot_count = np.zeros(int(feats.offsets[-1]), dtype=np.int64)
        for a, b in zip(cuts[:-1], cuts[1:]):
            label_pairs(indptr[a:b + 1], feature, value, closed, ycodes.indptr[a:b + 1],
                        ycodes.indices, rm.indptr, rm.indices, rm.data, feats.offsets,
                        feats.code_counts, self.nnz, self.base, self.h_x, inv_x,
                        self.count[a:b], self.base_l[a:b], self.h_l[a:b], inv_l[a:b], self.xl,
                        log2n, self.kind == "nmi", slot_count, mark, touched)
            if progress is not None:
                progress(L + int(b), 2 * L)
        return indptr, feature, value, closed

    def _all_pairs_sparse(self, progress=None):
        feats, labels = self.features, self.labels
        L = labels.n_columns
        ind_x = feats.indicator  # (n x slots) CSR
        ind_y = labels.indicator.T.tocsr()  # (label slots x n)
        slot_label = labels.expanded_owner
        work = ind_y @ np.diff(ind_x.indptr).astype(np.float64)  # entries per label, at most
        counts = np.zeros(L, dtype=np.int64)
        out_f, out_v, out_c = [], [], []
        for r0, r1 in self._blocks(work):
            co = (ind_y[r0:r1] @ ind_x).tocsr()
            co.sort_indices()
            rows = np.repeat(np.arange(r0, r1), np.diff(co.indptr))
            self._block_pairs(slot_label[rows], co.indices.astype(np.int64),
                              np.rint(co.data).astype(np.int64), counts, out_f, out_v, out_c)
            if progress is not None:
                progress(int(r1), int(work.size))
        return self._assemble(counts, out_f, out_v, out_c)

    def _block_pairs(self, label, slot, count, counts, out_f, out_v, out_c) -> None:
        """Pairs of a block of labels from their (label, slot) co-occurrence counts (sorted
        by label then slot), each label's sorted by ``max(MI, f_closed)`` descending,
        appended to ``out_*`` (``counts``: pairs per label, added to)."""
        lab, f, v = self._from_counts(label, slot, count)
        if lab.size == 0:
            return
        closed = self.closed(f, lab)
        order = np.lexsort((-np.maximum(v, closed), lab))
        counts += np.bincount(lab, minlength=counts.size)
        out_f.append(f[order].astype(np.int32))
        out_v.append(v[order])
        out_c.append(closed[order])

    def pairs_of(self, positions: np.ndarray):
        """Co-occurring pairs ``(feature, label, relevance)`` of some features (positions,
        increasing, no repeats); the same numbers as the stored pairs (same sums, same
        order), read from the features' columns only."""
        feats = self.features
        positions = np.asarray(positions, dtype=np.int64)
        codes = feats.codes
        starts, stops = codes.indptr[positions], codes.indptr[positions + 1]
        lens = stops - starts
        total = int(lens.sum())
        idx = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total)
        owner = np.repeat(positions, lens)
        slot = feats.offsets[owner] + codes.data[idx].astype(np.int64) - 1
        uniq, local = np.unique(slot, return_inverse=True)
        ind_t = sp.csr_matrix((np.ones(total), (local.reshape(-1), codes.indices[idx])),
                              shape=(uniq.size, self.n))
        co = (ind_t @ self.labels.indicator).tocsc()  # (chosen slots x label slots)
        co.sum_duplicates()
        co.sort_indices()
        label_slot = np.repeat(np.arange(co.shape[1]), np.diff(co.indptr))
        label = self.labels.expanded_owner[label_slot]
        # Within a label, rows of co are increasing slots, as in _all_pairs.
        return self._from_counts(label, uniq[co.indices], np.rint(co.data).astype(np.int64))

    # -- dense access for a few features ----------------------------------------------------
    def __getitem__(self, positions) -> np.ndarray:
        positions = np.atleast_1d(np.asarray(positions, dtype=np.int64))
        uniq, first, where = np.unique(positions, return_index=True, return_inverse=True)
        rows = positions if uniq.size == positions.size else uniq
        # One (rows x labels) array, in the caller's order when there are no repeats (with a
        # million labels each such row is 8 MB).
        out = self.closed(rows[:, None], self.group_label[None, :])[:, self.label_group]
        lab, f, v = self.pairs_of(uniq)
        at = np.searchsorted(uniq, f)
        out[first[at] if rows is positions else at, lab] = v
        return out if rows is positions else out[where.reshape(-1)]

    def row(self, u: int) -> np.ndarray:
        return self[np.array([u])][0]

    def toarray(self) -> np.ndarray:
        """The dense matrix (tests and small data only)."""
        return self[np.arange(self.n_features)]

    def take(self, positions: np.ndarray) -> "SparseRelevance":
        """The relevance of some features (in the given order), pairs filtered, not recounted."""
        positions = np.asarray(positions, dtype=np.int64)
        new_of = np.full(self.n_features, -1, dtype=np.int64)
        new_of[positions] = np.arange(positions.size)
        mapped = new_of[self.pair_feature]
        keep = mapped >= 0
        L = self.n_labels
        label_of = np.repeat(np.arange(L), np.diff(self.indptr))
        counts = np.bincount(label_of[keep], minlength=L)
        indptr = np.zeros(L + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        pairs = (indptr, mapped[keep].astype(np.int32), self.pair_value[keep],
                 self.pair_closed[keep])
        return self._taken(positions, pairs)

    def _taken(self, positions: np.ndarray, pairs: tuple) -> "SparseRelevance":
        return SparseRelevance(self.features.take(positions), self.labels, self.kind,
                               _pairs=pairs)

    def feature_sums(self, positions: np.ndarray) -> np.ndarray:
        """``sum_l MI(x, l)`` of some features, without a dense row: the closed form once per
        label count group (times the group's size) plus ``MI - f_closed`` of the feature's
        stored pairs. Memory follows the features and the pairs, never features x labels;
        equal to the dense rows' sums up to rounding (another order of additions)."""
        positions = np.asarray(positions, dtype=np.int64).reshape(-1)
        uniq, inverse = np.unique(positions, return_inverse=True)
        sizes = np.bincount(self.label_group, minlength=self.group_counts.size).astype(np.float64)
        out = np.empty(uniq.size)
        step = max(1, BLOCK_ENTRIES // max(1, sizes.size))
        for a in range(0, uniq.size, step):
            out[a:a + step] = self.closed(uniq[a:a + step, None], self.group_label[None, :]) @ sizes
        lookup = np.full(self.n_features, -1, dtype=np.int64)
        lookup[uniq] = np.arange(uniq.size)
        for a in range(0, self.n_pairs, SCAN_PAIRS):
            row = lookup[self.pair_feature[a:a + SCAN_PAIRS]]
            keep = np.flatnonzero(row >= 0)
            delta = self.pair_value[a + keep] - self.pair_closed[a + keep]
            out += np.bincount(row[keep], weights=delta, minlength=uniq.size)
        return out[inverse.reshape(-1)]

    def pairs_among(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The stored co-occurring pairs of some features (positions, no repeats) as
        ``(index into positions, label, relevance)``, label-major: one scan of the pairs a
        block at a time, so memory follows the pairs found."""
        positions = np.asarray(positions, dtype=np.int64).reshape(-1)
        lookup = np.full(self.n_features, -1, dtype=np.int64)
        lookup[positions] = np.arange(positions.size)
        found = []
        for a in range(0, self.n_pairs, SCAN_PAIRS):
            found.append(a + np.flatnonzero(lookup[self.pair_feature[a:a + SCAN_PAIRS]] >= 0))
        idx = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        label = np.searchsorted(self.indptr, idx, side="right") - 1
        return lookup[self.pair_feature[idx]], label, self.pair_value[idx]

    def gains_state(self, p: int, use_numba: bool = False) -> "SparseRelevanceGains":
        return SparseRelevanceGains(self, p, use_numba=use_numba)


class MergedSparseRelevance(SparseRelevance):
    """A :class:`SparseRelevance` from co-occurrence counts summed over row shards
    (:class:`coreselect.core.shards.SparseShardCounts`), without the data: the marginals are
    given, the pairs come from the merged ``(labels x feature code slots)`` counts with the
    same closed forms and sums as :meth:`SparseRelevance._all_pairs_sparse`, and the pairs
    of a few features (:meth:`pairs_of`) are read back from the stored pairs."""

    def __init__(self, n: int, kind: str, nnz: np.ndarray, base: np.ndarray, h_x: np.ndarray,
                 count: np.ndarray, base_l: np.ndarray, h_l: np.ndarray,
                 slot_owner: np.ndarray | None, slot_counts: np.ndarray | None,
                 co: sp.csr_matrix | None = None, *, _pairs: tuple | None = None):
        if kind not in ("mi", "nmi"):
            raise ValueError(f"unknown relevance {kind!r}")
        self._set_marginals(n, kind, nnz, base, h_x, count, base_l, h_l, slot_owner,
                            slot_counts)
        if _pairs is None:
            _pairs = self._pairs_from_merged(co)
        self.indptr, self.pair_feature, self.pair_value, self.pair_closed = _pairs
        self._by_feature = self._feature_ptr = None

    def _pairs_from_merged(self, co: sp.csr_matrix):
        """The pairs, written block by block into arrays sized for the count entries (at
        least the pairs) and shrunk in place at the end: never the pairs twice in memory."""
        co.sort_indices()
        per_label = np.diff(co.indptr).astype(np.float64)
        counts = np.zeros(self.n_labels, dtype=np.int64)
        capacity = int(co.nnz)
        feature = np.empty(capacity, dtype=np.int32)
        value, closed = np.empty(capacity), np.empty(capacity)
        at = 0
        for r0, r1 in self._blocks(per_label):
            a, b = int(co.indptr[r0]), int(co.indptr[r1])
            label = np.repeat(np.arange(r0, r1), np.diff(co.indptr[r0:r1 + 1]))
            out_f, out_v, out_c = [], [], []
            self._block_pairs(label, co.indices[a:b].astype(np.int64),
                              co.data[a:b].astype(np.int64), counts, out_f, out_v, out_c)
            if out_f:
                m = out_f[0].size
                feature[at:at + m], value[at:at + m], closed[at:at + m] = (
                    out_f[0], out_v[0], out_c[0])
                at += m
        for array in (feature, value, closed):
            array.resize(at, refcheck=False)
        indptr = np.zeros(self.n_labels + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr, feature, value, closed

    def pairs_of(self, positions: np.ndarray):
        """The stored pairs of some features, through a feature-major index of the pairs
        (built on first use: 4 bytes per pair, so a greedy step reads only its feature's)."""
        if self._by_feature is None:  # built whole before it is published (threads may read)
            index_type = np.int32 if self.n_pairs < 2**31 else np.int64
            ptr = np.zeros(self.n_features + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.pair_feature, minlength=self.n_features), out=ptr[1:])
            self._feature_ptr = ptr
            self._by_feature = np.argsort(self.pair_feature, kind="stable").astype(index_type)
        positions = np.unique(np.asarray(positions, dtype=np.int64))
        starts, stops = self._feature_ptr[positions], self._feature_ptr[positions + 1]
        lens = stops - starts
        total = int(lens.sum())
        at = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total)
        idx = np.sort(self._by_feature[at].astype(np.int64))
        label = np.searchsorted(self.indptr, idx, side="right") - 1
        return label, self.pair_feature[idx].astype(np.int64), self.pair_value[idx]

    def _taken(self, positions: np.ndarray, pairs: tuple) -> "MergedSparseRelevance":
        return MergedSparseRelevance(
            self.n, self.kind, self.nnz[positions], self.base[positions],
            self.h_x[positions], self.count, self.base_l, self.h_l, None, None, _pairs=pairs)


class SparseRelevanceGains:
    """:class:`coreselect.core.objective.RelevanceGains` over a :class:`SparseRelevance`:
    the same ``gains``, ``value`` and ``add`` (see the module docstring for how)."""

    def __init__(self, rel: SparseRelevance, p: int, use_numba: bool = False):
        self.rel = rel
        self.p = int(p)
        self._lower = None
        if use_numba:
            from coreselect.core._numba_sparse import lower_pairs

            self._lower = lower_pairs
        d, L = rel.shape
        # As RelevanceGains: S holds at most d features, so d columns suffice when p > d.
        # The table grows with S (labels x (|S| + 2) at most, doubling), not to p at once:
        # under p = all that is labels x d, while a selection holds k features. Until it has
        # all its columns its last one stays 0, as the full table's would.
        self.width = min(self.p, max(d, 1))
        self.n_added = 0
        self.top = np.zeros((L, min(self.width, 2)))
        keys = np.stack([rel.nnz, rel.base.view(np.int64)], axis=1)
        _, self.key_feature, self.key_of = np.unique(keys, axis=0, return_index=True,
                                                    return_inverse=True)
        self.key_of = self.key_of.reshape(-1)
        # Labels grouped by count; each group's thresholds kept sorted (all 0 at the start).
        self.group_order = np.argsort(rel.label_group, kind="stable")
        sizes = np.bincount(rel.label_group, minlength=rel.group_counts.size)
        self.group_ptr = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.group_ptr[1:])
        self.sorted_t = np.zeros(L)
        # A: with every threshold 0, F_c(y) = |c| * y. Each group keeps the keys that can
        # still gain from it (closed form above the group's lowest threshold) with their
        # closed forms; None until the group's first change (all keys).
        n_groups = sizes.size
        self.A = np.zeros(self.key_feature.size)
        for g in range(n_groups):
            self.A += sizes[g] * self._closed_keys(g)
        self.group_keys: list[np.ndarray | None] = [None] * n_groups
        self.group_vals: list[np.ndarray | None] = [None] * n_groups
        # B: sum over co-occurring pairs of MI - f_closed; every pair live.
        self.pair_closed = rel.pair_closed
        self.B = np.zeros(d)
        for a in range(0, rel.n_pairs, SCAN_PAIRS):  # no temporary the size of the pairs
            b = a + SCAN_PAIRS
            self.B += np.bincount(rel.pair_feature[a:b],
                                  weights=rel.pair_value[a:b] - rel.pair_closed[a:b], minlength=d)
        self.live = np.diff(rel.indptr).copy()
        self.gains = self.A[self.key_of] + self.B

    def _closed_keys(self, g: int, keys: np.ndarray | None = None) -> np.ndarray:
        feats = self.key_feature if keys is None else self.key_feature[keys]
        return self.rel.closed(feats, self.rel.group_label[g])

    @property
    def value(self) -> float:
        return float(self.top.sum())

    def add(self, u: int) -> None:
        w = self.top.shape[1]
        if w < self.width and self.n_added + 2 > w:
            wider = np.zeros((self.top.shape[0], min(self.width, max(2 * w, self.n_added + 2))))
            wider[:, :w] = self.top
            self.top = wider
        self.n_added += 1
        raised, old, new = enter_top(self.top, self.rel.row(u))
        if raised.size == 0:
            return
        self._pairs(raised, old[raised], new[raised])
        for g in np.unique(self.rel.label_group[raised]):
            lo, hi = self.group_ptr[g], self.group_ptr[g + 1]
            before = self.sorted_t[lo:hi]
            after = np.sort(new[self.group_order[lo:hi]])
            keys, y = self.group_keys[g], self.group_vals[g]
            if keys is None:
                keys = np.arange(self.key_feature.size)
                y = self._closed_keys(g)
            self.A[keys] += _hinge_sum(after, y) - _hinge_sum(before, y)
            self.sorted_t[lo:hi] = after
            keep = y > after[0]  # below every threshold of the group: no gain, ever
            self.group_keys[g], self.group_vals[g] = keys[keep], y[keep]
        self.gains = self.A[self.key_of] + self.B

    def _pairs(self, raised: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
        rel = self.rel
        lens = self.live[raised]
        some = lens > 0
        raised, low, high, lens = raised[some], low[some], high[some], lens[some]
        total = int(lens.sum())
        if total == 0:
            return
        if self._lower is not None:
            self._lower(raised, low, high, rel.indptr, self.live, rel.pair_feature,
                        rel.pair_value, self.pair_closed, self.B)
            return
        ends = np.cumsum(lens)
        idx = np.repeat(rel.indptr[raised] - (ends - lens), lens) + np.arange(total)
        feat = rel.pair_feature[idx]
        value = rel.pair_value[idx]
        closed = self.pair_closed[idx]
        a, b = np.repeat(low, lens), np.repeat(high, lens)
        # max(0, y - b) - max(0, y - a) = a - clip(y, a, b): closed form in, exact out.
        delta = np.clip(closed, a, b)
        delta -= np.clip(value, a, b)
        self.B += np.bincount(feat, weights=delta, minlength=self.B.size)
        still = (value > b) | (closed > b)
        self.live[raised] = np.add.reduceat(still, ends - lens, dtype=np.int64)


def _run_sums(values: np.ndarray, start: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Sum of each run ``values[start : start + lens]``, added left to right as the dense
    kernel's sparse products do (``np.add.reduceat`` pairs them differently: last-bit
    differences). Runs are a feature's code slots: a handful at most."""
    out = values[start].copy()
    for j in range(1, int(lens.max(initial=1))):
        more = np.flatnonzero(lens > j)
        out[more] += values[start[more] + j]
    return out


def _hinge_sum(sorted_t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``sum_t max(0, y - t)`` for every ``y``, ``sorted_t`` ascending."""
    below = np.searchsorted(sorted_t, y, side="left")
    prefix = np.zeros(sorted_t.size + 1)
    np.cumsum(sorted_t, out=prefix[1:])
    return below * y - prefix[below]
