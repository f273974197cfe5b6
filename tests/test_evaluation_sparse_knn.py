"""SparseKNN (coreselect.evaluation.sparse_knn) against a loop written from its definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.errors import InputError
from coreselect.evaluation.sparse_knn import SparseKNN


def ref_scores(Xtr, Ytr, Xq, m, n_prior=10) -> np.ndarray:
    """Cosine similarities one pair at a time; neighbours by (-similarity, index); weights
    max(sim, 0) normalised; no positive weight: the n_prior most frequent labels' frequencies."""
    n_train, L = Ytr.shape
    freq = [sum(1 for i in range(n_train) if Ytr[i, j]) for j in range(L)]
    prior = sorted(range(L), key=lambda j: (-freq[j], j))[:n_prior]
    out = np.zeros((len(Xq), L))
    for q in range(len(Xq)):
        sims = []
        for i in range(n_train):
            a, b = Xq[q], Xtr[i]
            na, nb = math.sqrt(sum(v * v for v in a)), math.sqrt(sum(v * v for v in b))
            sims.append(sum(x * y for x, y in zip(a, b)) / (na * nb) if na > 0 and nb > 0 else 0.0)
        nbrs = sorted(range(n_train), key=lambda i: (-round(sims[i], 12), i))[: min(m, n_train)]
        w = {i: max(sims[i], 0.0) for i in nbrs}
        total = sum(w.values())
        if total > 0:
            for i in nbrs:
                for j in range(L):
                    if Ytr[i, j]:
                        out[q, j] += w[i] / total
        else:
            for j in prior:
                if freq[j] > 0:
                    out[q, j] = freq[j] / n_train
    return out


@st.composite
def problems(draw):
    n_train = draw(st.integers(1, 9))
    n_q = draw(st.integers(0, 7))
    d = draw(st.integers(1, 5))
    L = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # small integers: exact ties in similarity; zero rows; mixed signs
    values = draw(st.sampled_from([[0, 1], [0, 1, 2], [-1, 0, 1]]))
    Xtr = rng.choice(values, size=(n_train, d)).astype(float)
    Xq = rng.choice(values, size=(n_q, d)).astype(float)
    Ytr = (rng.random((n_train, L)) < draw(st.sampled_from([0.0, 0.3, 0.7]))).astype(int)
    return Xtr, Ytr, Xq, draw(st.integers(1, 10)), draw(st.sampled_from([1, 3, 1 << 22]))


@settings(max_examples=120, deadline=None)
@given(problems(), st.booleans())
def test_scores_agree_with_the_loop(problem, sparse_input):
    Xtr, Ytr, Xq, m, cells = problem
    est = SparseKNN(n_neighbors=m, block_cells=cells, n_prior=3)
    conv = sp.csr_matrix if sparse_input else np.asarray
    est.fit(conv(Xtr), conv(Ytr))
    got = est.predict_scores(conv(Xq))
    assert sp.isspmatrix_csr(got) and got.shape == (len(Xq), Ytr.shape[1])
    np.testing.assert_allclose(got.toarray(), ref_scores(Xtr, Ytr, Xq, m, 3), rtol=1e-9, atol=1e-12)
    # predict: the threshold on the scores, or the top labels
    pred = est.predict(conv(Xq)).toarray()
    assert np.array_equal(pred, (got.toarray() >= 0.5) & (got.toarray() > 0))
    est.set_params(top=2)
    top = est.predict(conv(Xq)).toarray()
    assert (top.sum(axis=1) == min(2, Ytr.shape[1])).all()


def test_equal_similarities_tie_by_index():
    X = np.array([[3.0, 3.0], [1.0, 1.0], [2.0, 2.0], [1.0, 0.0], [7.0, 7.0]])
    Y = np.eye(5)
    est = SparseKNN(n_neighbors=4).fit(sp.csr_matrix(X), Y)
    idx, sim = est.kneighbors(np.array([[5.0, 5.0], [0.0, 0.0]]))
    assert idx[0].tolist() == [0, 1, 2, 4] and np.allclose(sim[0], 1.0)
    # a zero query: no similar row; the prior (most frequent labels, ties by index) scores it
    assert est.predict_scores(np.array([[0.0, 0.0]])).nonzero()[1].tolist() == [0, 1, 2, 3, 4]


def test_neighbours_match_sklearn_without_ties():
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(0)
    X = sp.random(300, 40, density=0.3, random_state=3, format="csr")
    Q = sp.random(50, 40, density=0.3, random_state=4, format="csr")
    Y = sp.csr_matrix(rng.random((300, 7)) < 0.2)
    idx, sim = SparseKNN(n_neighbors=5, block_cells=1000).fit(X, Y).kneighbors(Q)
    dist, ref = NearestNeighbors(n_neighbors=5, metric="cosine", algorithm="brute").fit(X).kneighbors(Q)
    ok = np.asarray(Q.getnnz(axis=1) > 0)  # sklearn's distance of a zero row is arbitrary
    assert np.array_equal(idx[ok], ref[ok])
    np.testing.assert_allclose(sim[ok], 1 - dist[ok], atol=1e-9)


def test_many_labels_stay_sparse():
    X = sp.random(400, 30, density=0.2, random_state=0, format="csr")
    Y = sp.random(400, 100_000, density=4 / 100_000, random_state=1, format="csr")
    scores = SparseKNN(n_neighbors=10).fit(X, Y).predict_scores(X[:100])
    assert sp.issparse(scores) and scores.nnz <= 100 * 10 * Y.getnnz(axis=1).max()


def test_errors():
    with pytest.raises(InputError):
        SparseKNN(n_neighbors=0).fit(np.ones((2, 2)), np.ones((2, 1)))
    with pytest.raises(InputError):
        SparseKNN().fit(np.ones((2, 2)), np.ones((3, 1)))
    est = SparseKNN().fit(np.ones((2, 2)), np.ones((2, 1)))
    with pytest.raises(InputError):
        est.predict_scores(np.ones((1, 3)))


@pytest.mark.parametrize("evaluator", ["sparse-knn", "brknn", "linear"])
def test_protocol_reports_ranking_measures(evaluator):
    from coreselect.evaluation.protocol import method_factories, run_protocol

    rng = np.random.default_rng(0)
    Y = sp.csr_matrix(rng.random((60, 12)) < 0.25)
    X = sp.csr_matrix(rng.random((60, 8)) * (rng.random((60, 8)) < 0.5) + Y.toarray()[:, :8])
    measures = ["micro_f1", "p@1", "ndcg@3", "psp@5", "psndcg@2"]
    df = run_protocol(X, Y, method_factories(["br-chi2"]), [3], n_folds=2, evaluator=evaluator,
                      measures=measures)
    assert list(dict.fromkeys(df["measure"])) == measures
    assert len(df) == 2 * len(measures)
    assert ((df["value"] >= 0) & (df["value"] <= 1)).all()
    with pytest.raises(InputError):
        run_protocol(X, Y, method_factories(["br-chi2"]), [3], n_folds=2, measures=["p@7"])


def test_cli_evaluate_sparse_knn(tmp_path, capsys):
    from coreselect.cli import main

    rng = np.random.default_rng(1)
    Y = (rng.random((40, 5)) < 0.3).astype(int)
    X = rng.normal(size=(40, 6)) + Y @ rng.normal(size=(5, 6))
    from coreselect.io import from_arrays, write

    path = tmp_path / "d.arff"
    write(from_arrays(X, Y, feature_names=[f"f{j}" for j in range(6)],
                      label_names=[f"y{i}" for i in range(5)], name="d"), path)
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(path), "--methods", "br-chi2", "--k", "2", "--folds", "2",
              "--evaluator", "sparse-knn", "--measures", "p@1,psndcg@1..2", "--out", str(tmp_path / "o"), "-q"])
    assert exc.value.code == 0, capsys.readouterr().err
    summary = (tmp_path / "o" / "summary.md").read_text()
    assert "Precision@1" in summary and "Propensity-scored nDCG@2" in summary
    assert (tmp_path / "o" / "psndcg@2.png").exists()
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(path), "--methods", "br-chi2", "--k", "2", "--folds", "2",
              "--measures", "p@9", "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and not (tmp_path / "p").exists()
