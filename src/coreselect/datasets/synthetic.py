"""Synthetic multi-label data with known structure."""

from __future__ import annotations


import numpy as np
import scipy.sparse as sp
from coreselect.utils import check_random_state

from coreselect.errors import InputError
from coreselect.io.dataset import Dataset, DatasetMeta, IndexedNames


def make_synthesized(
    n_samples: int = 256,
    n_labels: int = 8,
    copies: int = 50,
    random_state: int | np.random.RandomState | None = 0,
) -> Dataset:
    """The paper's *Synthesized* dataset (Ghadiri & Schmidt 2019, Section 5).

    Reading of the paper's one-sentence description, made explicit here: each label is an
    independent fair coin per sample. Each label ``l`` has two *original* binary features:

    * ``l<l>_half``: equals the label on a random half of the samples (chosen once per
      feature) and is a fair coin on the other half;
    * ``l<l>_quarter``: equals the label on a random quarter of the samples and is a fair
      coin elsewhere.

    Each original feature is repeated ``copies`` times (exact duplicates), so there are
    ``2 * n_labels`` originals and ``2 * n_labels * copies`` columns. Columns are grouped by
    original: the copies of original ``f`` are columns ``f*copies .. (f+1)*copies - 1`` and
    are named ``l<l>_half_c<j>`` / ``l<l>_quarter_c<j>``. A good selector of
    ``k = 2 * n_labels`` features picks exactly one copy of every original.
    """
    if n_samples < 1 or n_labels < 1 or copies < 1:
        raise InputError("make_synthesized needs n_samples, n_labels and copies >= 1")
    rng = check_random_state(random_state)
    Y = rng.randint(0, 2, size=(n_samples, n_labels)).astype(np.int8)
    originals = []
    names = []
    for label in range(n_labels):
        for kind, share in (("half", n_samples // 2), ("quarter", n_samples // 4)):
            feature = rng.randint(0, 2, size=n_samples).astype(np.int8)
            agree = rng.choice(n_samples, size=share, replace=False)
            feature[agree] = Y[agree, label]
            originals.append(feature)
            names.extend(f"l{label}_{kind}_c{j}" for j in range(copies))
    X = np.repeat(np.column_stack(originals), copies, axis=1)
    return Dataset(
        X=X,
        Y=Y,
        feature_names=names,
        label_names=[f"label{l}" for l in range(n_labels)],
        name="synthesized",
        metadata=DatasetMeta(format="synthetic", extra={"originals": 2 * n_labels, "copies": copies}),
    )


def make_sparse_multilabel(
    n_samples: int = 20_000,
    n_features: int = 2_000_000,
    n_labels: int = 50,
    density: float = 0.0005,
    n_relevant: int = 100,
    n_redundant: int = 200,
    random_state: int | np.random.RandomState | None = 0,
) -> Dataset:
    """A huge, very sparse multi-label dataset with planted relevant and redundant features.

    * Labels: label ``l`` is on for each sample with its own prevalence (5% to 30%).
    * Background features: each column has ``Binomial(n_samples, density)`` non-zeros at
      random rows, with small integer values 1 to 3 (like term counts). They carry no
      information about the labels.
    * Relevant features (``n_relevant``): each is tied to one label (round robin) and is
      non-zero on a random 60% of that label's positive samples plus ``density`` noise.
    * Redundant features (``n_redundant``): noisy copies of relevant ones (each non-zero kept
      with probability 0.9, plus ``density`` noise), so a diverse selection takes one per group.

    Planted columns sit at random positions; ``meta`` holds ``relevant`` (ids),
    ``redundant`` (ids) and ``redundant_of`` (the relevant id each copies), ``relevant_label``.
    ``X`` is CSC with int32 row indices and float32 values (about 8 bytes per non-zero:
    d = 2,000,000, n = 20,000 at density 0.05% is 20 million non-zeros, 160 MB), ``Y`` a dense
    int8 matrix. Feature names are ``x0, x1, ...`` made on demand.
    """
    n, d, L = int(n_samples), int(n_features), int(n_labels)
    if n < 1 or d < 1 or L < 1:
        raise InputError("make_sparse_multilabel needs n_samples, n_features, n_labels >= 1")
    if not 0 < density <= 1:
        raise InputError(f"density must be in (0, 1], got {density}")
    if n_relevant < 0 or n_redundant < 0 or n_relevant + n_redundant > d:
        raise InputError("n_relevant + n_redundant must be between 0 and n_features")
    if n_redundant and not n_relevant:
        raise InputError("redundant features copy relevant ones: n_relevant must be > 0")
    rng = check_random_state(random_state)
    prevalence = rng.uniform(0.05, 0.3, size=L)
    Y = (rng.random_sample((n, L)) < prevalence).astype(np.int8)

    counts = rng.binomial(n, density, size=d).astype(np.int64)
    planted = rng.choice(d, size=n_relevant + n_redundant, replace=False)
    relevant, redundant = planted[:n_relevant], planted[n_relevant:]
    relevant_label = np.arange(n_relevant) % L
    redundant_of = relevant[rng.randint(0, max(n_relevant, 1), size=n_redundant)] \
        if n_redundant else np.zeros(0, dtype=np.int64)

    # Rows of the planted columns first (they decide those columns' counts).
    planted_rows: dict[int, np.ndarray] = {}
    for j, label in zip(relevant, relevant_label):
        pos = np.flatnonzero(Y[:, label])
        keep = pos[rng.random_sample(pos.size) < 0.6]
        noise = rng.randint(0, n, size=rng.binomial(n, density))
        planted_rows[int(j)] = np.union1d(keep, noise)
    for j, src in zip(redundant, redundant_of):
        base = planted_rows[int(src)]
        keep = base[rng.random_sample(base.size) < 0.9]
        noise = rng.randint(0, n, size=rng.binomial(n, density))
        planted_rows[int(j)] = np.union1d(keep, noise)
    for j, rows in planted_rows.items():
        counts[j] = rows.size

    indptr = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    indices = np.empty(nnz, dtype=np.int32)
    # Background rows in chunks (bounded temporaries); duplicates inside a column are
    # summed away below, which only lowers its count slightly.
    chunk = 1 << 24
    for a in range(0, nnz, chunk):
        z = min(nnz, a + chunk)
        indices[a:z] = rng.randint(0, n, size=z - a).astype(np.int32)
    for j, rows in planted_rows.items():
        indices[indptr[j]:indptr[j + 1]] = rows
    data = np.empty(nnz, dtype=np.float32)
    for a in range(0, nnz, chunk):
        z = min(nnz, a + chunk)
        data[a:z] = rng.randint(1, 4, size=z - a)
    X = sp.csc_matrix((data, indices, indptr), shape=(n, d))
    X.sum_duplicates()  # sorts each column's rows too
    return Dataset(
        X=X,
        Y=Y,
        feature_names=IndexedNames(d, "x"),
        label_names=[f"label{l}" for l in range(L)],
        name=f"sparse_multilabel_{n}x{d}",
        metadata=DatasetMeta(format="synthetic", extra={
            "relevant": relevant.astype(np.int64),
            "relevant_label": relevant_label,
            "redundant": redundant.astype(np.int64),
            "redundant_of": redundant_of.astype(np.int64),
            "density": float(density),
        }),
    )


#: Shapes (samples, features, labels, mean labels per sample, mean features per sample) of the
#: extreme classification benchmarks (the Extreme Classification Repository's statistics), and
#: a million-label shape; ``make_extreme_multilabel(shape=...)`` takes the name.
EXTREME_SHAPES: dict[str, tuple[int, int, int, float, float]] = {
    "eurlex-4k": (15_539, 5_000, 3_993, 5.31, 236.7),
    "wiki10-31k": (14_146, 101_938, 30_938, 18.64, 673.4),
    "amazoncat-13k": (1_186_239, 203_882, 13_330, 5.04, 71.1),
    "labels-1m": (500_000, 100_000, 1_000_000, 5.0, 50.0),
}


def _power_law_rows(rng, n: int, weights: np.ndarray, total: float) -> tuple[np.ndarray, np.ndarray]:
    """(column, row) pairs of columns whose expected counts follow ``weights`` (scaled to
    ``total`` entries in all, each at most ``n / 2``), rows drawn at random, no repeats."""
    expected = np.minimum(weights / weights.sum() * total, n / 2.0)
    counts = rng.binomial(n, expected / n).astype(np.int64)
    cols = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    rows = rng.randint(0, n, size=int(counts.sum())).astype(np.int64)
    key = np.unique(cols * n + rows)  # drop repeated (column, row) draws
    return key // n, key % n


def make_extreme_multilabel(
    n_samples: int | None = None,
    n_features: int | None = None,
    n_labels: int | None = None,
    *,
    shape: str | None = None,
    labels_per_sample: float = 5.0,
    features_per_sample: float = 100.0,
    label_exponent: float = 1.0,
    feature_exponent: float = 1.0,
    n_signal_labels: int = 200,
    signal_features: int = 3,
    random_state: int | np.random.RandomState | None = 0,
) -> Dataset:
    """Documents with many labels of power-law frequencies (extreme multi-label data).

    ``shape`` (a key of :data:`EXTREME_SHAPES`: ``"eurlex-4k"``, ``"wiki10-31k"``,
    ``"amazoncat-13k"``, ``"labels-1m"``) sets the sizes and the mean numbers of labels and
    features per sample; explicit sizes override it.

    * Labels: label ``r`` (by rank) has expected frequency proportional to
      ``1 / (r + 1) ** label_exponent``, scaled to ``labels_per_sample`` per sample (at most
      half the samples): most labels are rare, as in tagging data.
    * Words (features): the same with ``feature_exponent`` and ``features_per_sample``; values
      are term counts 1 to 4 (float32), independent of the labels.
    * Signal: each of the ``n_signal_labels`` most frequent labels gets ``signal_features``
      planted words, each present in a random 60% of that label's documents and in 0.2% of
      the others. ``meta["signal"]`` holds their ids, ``meta["signal_label"]`` their labels.

    ``X`` is CSR (float32), ``Y`` a sparse CSR int8 matrix (never dense: a million labels).
    """
    if shape is not None:
        if shape not in EXTREME_SHAPES:
            raise InputError(f"unknown shape {shape!r}; choose from {', '.join(EXTREME_SHAPES)}")
        sn, sd, sl, lps, fps = EXTREME_SHAPES[shape]
        n_samples = sn if n_samples is None else n_samples
        n_features = sd if n_features is None else n_features
        n_labels = sl if n_labels is None else n_labels
        labels_per_sample, features_per_sample = lps, fps
    n = int(n_samples if n_samples is not None else 2_000)
    d = int(n_features if n_features is not None else 1_000)
    L = int(n_labels if n_labels is not None else 500)
    if n < 1 or d < 1 or L < 1:
        raise InputError("make_extreme_multilabel needs n_samples, n_features, n_labels >= 1")
    if labels_per_sample <= 0 or features_per_sample <= 0:
        raise InputError("labels_per_sample and features_per_sample must be positive")
    n_signal_labels = min(int(n_signal_labels), L)
    n_signal = n_signal_labels * int(signal_features)
    if n_signal > d:
        raise InputError(f"{n_signal} signal features do not fit in {d} features")
    rng = check_random_state(random_state)

    lab_cols, lab_rows = _power_law_rows(
        rng, n, 1.0 / (1.0 + np.arange(L)) ** label_exponent, labels_per_sample * n)
    Y = sp.csc_matrix((np.ones(lab_rows.size, dtype=np.int8), (lab_rows, lab_cols)), shape=(n, L))

    feat_cols, feat_rows = _power_law_rows(
        rng, n, 1.0 / (1.0 + np.arange(d)) ** feature_exponent, features_per_sample * n)
    # Signal words at random positions, replacing background words there.
    signal = np.sort(rng.choice(d, size=n_signal, replace=False)) if n_signal else np.zeros(0, np.int64)
    signal_label = np.repeat(np.arange(n_signal_labels), int(signal_features))
    rng.shuffle(signal_label)
    keep = ~np.isin(feat_cols, signal)
    cols, rows = [feat_cols[keep]], [feat_rows[keep]]
    for j, label in zip(signal, signal_label):
        on = Y.indices[Y.indptr[label]:Y.indptr[label + 1]]
        hit = on[rng.random_sample(on.size) < 0.6]
        noise = rng.randint(0, n, size=rng.binomial(n, 0.002))
        r = np.union1d(hit, noise)
        cols.append(np.full(r.size, j, dtype=np.int64))
        rows.append(r.astype(np.int64))
    cols, rows = np.concatenate(cols), np.concatenate(rows)
    values = rng.randint(1, 5, size=rows.size).astype(np.float32)
    X = sp.csr_matrix((values, (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    return Dataset(
        X=X,
        Y=sp.csr_matrix(Y),
        feature_names=IndexedNames(d, "w"),
        label_names=IndexedNames(L, "l"),
        name=shape or f"extreme_{n}x{d}x{L}",
        metadata=DatasetMeta(format="synthetic", extra={
            "signal": signal.astype(np.int64),
            "signal_label": signal_label.astype(np.int64),
        }),
    )
