"""Synthetic multi-label data with known structure."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from coreselect.errors import InputError
from coreselect.io.dataset import Dataset


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
        meta={"originals": 2 * n_labels, "copies": copies},
    )
