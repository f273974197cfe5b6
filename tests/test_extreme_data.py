"""make_extreme_multilabel and the XMC format (io/xmc.py): round trips, header checks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coreselect.datasets.synthetic import EXTREME_SHAPES, make_extreme_multilabel
from coreselect.errors import DatasetError, InputError
from coreselect.io import format_of, read, write
from coreselect.io.dataset import Dataset, IndexedNames


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 30), d=st.integers(1, 12), L=st.integers(1, 40),
       density=st.sampled_from([0.0, 0.1, 0.5]), seed=st.integers(0, 10**6),
       suffix=st.sampled_from([".xmc", ".xmc.gz"]))
def test_xmc_round_trip(tmp_path_factory, n, d, L, density, seed, suffix):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr")
    X.data = np.round(X.data * 10, 3)  # some integers, some fractions
    X.data[::3] = np.rint(X.data[::3]) + 1
    Y = sp.csr_matrix((rng.random((n, L)) < density).astype(np.int8))
    path = tmp_path_factory.mktemp("xmc") / f"data{suffix}"
    write(Dataset(X=X, Y=Y, feature_names=IndexedNames(d, "f"), label_names=IndexedNames(L, "l")), path)
    assert format_of(path) == "xmc"
    back = read(path)
    assert back.X.shape == (n, d) and back.Y.shape == (n, L)
    assert abs(back.X - X).max() == 0 if X.nnz else back.X.nnz == 0
    assert (sp.csr_matrix(back.Y) != Y).nnz == 0
    assert back.metadata.format == "xmc"


def test_xmc_header_is_required_and_checked(tmp_path):
    bad = tmp_path / "a.xmc"
    bad.write_text("1,2 0:1\n")
    with pytest.raises(DatasetError, match="header"):
        read(bad)
    short = tmp_path / "b.xmc"
    short.write_text("3 4 5\n1 0:1\n")  # declares 3 samples, holds 1
    with pytest.raises(DatasetError):
        read(short)
    ok = tmp_path / "c.xmc"
    ok.write_text("2 4 5\n1,4 0:1 3:2.5\n 2:1\n")  # second sample without labels
    data = read(ok)
    assert data.X.toarray().tolist() == [[1, 0, 0, 2.5], [0, 0, 1, 0]]
    assert np.asarray(sp.csr_matrix(data.Y).toarray()).tolist() == [[0, 1, 0, 0, 1], [0] * 5]
    with pytest.raises(DatasetError):
        read(ok, labels=2)


def test_generator_structure():
    a = make_extreme_multilabel(2000, 500, 3000, labels_per_sample=4, features_per_sample=30,
                                n_signal_labels=20, random_state=3)
    b = make_extreme_multilabel(2000, 500, 3000, labels_per_sample=4, features_per_sample=30,
                                n_signal_labels=20, random_state=3)
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0  # seeded
    assert sp.issparse(a.Y) and a.Y.shape == (2000, 3000) and a.X.shape == (2000, 500)
    counts = np.asarray(a.Y.sum(axis=0)).ravel()
    # Power law: the head is frequent, most labels are rare, and counts fall with rank.
    assert counts[:10].mean() > 20 * np.median(counts)
    assert np.median(counts) <= 5
    assert abs(a.Y.nnz / 2000 - 4) < 1
    # Planted signal: a signal word is present in most of its label's documents.
    Y = a.Y.tocsc()
    X = a.X.tocsc()
    for j, label in zip(a.meta["signal"][:10], a.meta["signal_label"][:10]):
        docs = Y.indices[Y.indptr[label]:Y.indptr[label + 1]]
        present = np.isin(docs, X.indices[X.indptr[j]:X.indptr[j + 1]]).mean()
        assert present > 0.4


def test_generator_shapes_and_errors():
    assert EXTREME_SHAPES["eurlex-4k"][:3] == (15_539, 5_000, 3_993)
    assert EXTREME_SHAPES["wiki10-31k"][:3] == (14_146, 101_938, 30_938)
    small = make_extreme_multilabel(n_samples=300, shape="wiki10-31k", n_features=2000,
                                    n_labels=400, n_signal_labels=10)
    assert small.X.shape == (300, 2000) and small.Y.shape == (300, 400)
    with pytest.raises(InputError):
        make_extreme_multilabel(shape="nope")
    with pytest.raises(InputError):
        make_extreme_multilabel(10, 5, 10, n_signal_labels=10, signal_features=3)
