"""Multi-label LIBSVM reader/writer: header, index bases, empty label lists, bad input, fuzzing."""

from __future__ import annotations

import random

import numpy as np
import pytest
import scipy.sparse as sp

from coreselect.errors import DatasetError
from coreselect.io import from_arrays, read, write
from coreselect.io.libsvm import read_libsvm


def _w(tmp_path, text, name="d.svm"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_one_based_without_header(tmp_path):
    p = _w(tmp_path, "1,3 1:0.5 4:2\n 2:1\n2 3:-1.25 # comment\n")
    ds = read_libsvm(p)
    assert sp.issparse(ds.X) and ds.X.shape == (3, 4)
    np.testing.assert_array_equal(ds.X.toarray(), [[0.5, 0, 0, 2], [0, 1, 0, 0], [0, 0, -1.25, 0]])
    # labels follow the features' base (1-based): 1,3 -> columns 0,2
    np.testing.assert_array_equal(ds.Y, [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    assert ds.meta["zero_based"] is False


def test_zero_based_header(tmp_path):
    p = _w(tmp_path, "3 5 4\n0,3 0:1 4:2\n\n2 1:3\n")
    ds = read_libsvm(p)
    assert ds.X.shape == (3, 5) and ds.Y.shape == (3, 4)
    np.testing.assert_array_equal(ds.X.toarray(), [[1, 0, 0, 0, 2], [0] * 5, [0, 3, 0, 0, 0]])
    np.testing.assert_array_equal(ds.Y, [[1, 0, 0, 1], [0] * 4, [0, 0, 1, 0]])


def test_explicit_base(tmp_path):
    p = _w(tmp_path, "1 1:1 2:2\n")
    assert read_libsvm(p, zero_based=True).X.shape == (1, 3)
    assert read_libsvm(p, zero_based=False).X.shape == (1, 2)


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        ("", 1, "empty file"),
        ("1 1:1\n1 a:1\n", 2, "bad feature entry"),
        ("1 1:1\n1 1:x\n", 2, "bad feature entry"),
        ("1 1:1\n1 1\n", 2, "expected 'index:value'"),
        ("1 1:1\nx 1:1\n", 2, "bad label"),
        ("2 3 2\n0 0:1\n1 7:1\n", 3, "out of range"),
        ("2 3 2\n0 0:1\n", 1, "announces 2 instances"),
        ("1 1.5:1\n", 1, "not an integer"),
    ],
)
def test_bad_input(tmp_path, text, line, pattern):
    p = _w(tmp_path, text, "bad.svm")
    with pytest.raises(DatasetError, match=pattern) as exc:
        read(p)
    assert f"bad.svm:{line}:" in str(exc.value)


def test_round_trip_keeps_shape_and_empty_rows(tmp_path):
    X = sp.random(20, 30, density=0.1, random_state=0, format="lil")
    X[3, :] = 0
    X = X.tocsr()
    Y = (np.random.default_rng(0).random((20, 5)) < 0.3).astype(np.int8)
    Y[3, :] = 0
    ds = from_arrays(X, Y)
    out = tmp_path / "o.svm"
    write(ds, out)
    back = read(out)
    assert back.X.shape == (20, 30) and back.Y.shape == (20, 5)
    np.testing.assert_array_equal(back.X.toarray(), X.toarray())
    np.testing.assert_array_equal(back.Y, Y)


def _mutate(rng, text):
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        if not b:
            break
        i = rng.randrange(len(b))
        op = rng.randrange(4)
        if op == 0:
            del b[i : i + rng.randint(1, 6)]
        elif op == 1:
            b[i:i] = b[rng.randrange(len(b)) :][: rng.randint(1, 8)]
        elif op == 2:
            b[i] = rng.choice(b":, \n#-.0123456789eax\xff")
        else:
            b = b[: rng.randrange(len(b) + 1)]
    return bytes(b)


def test_fuzz_only_dataset_errors(tmp_path):
    rng = random.Random(7)
    seeds = ["3 5 4\n0,3 0:1 4:2\n\n2 1:3\n", "1,3 1:0.5 4:2\n 2:1\n2 3:-1.25\n"]
    p = tmp_path / "f.svm"
    parsed = 0
    for n in range(400):
        p.write_bytes(_mutate(rng, seeds[n % 2]))
        try:
            ds = read_libsvm(p)
        except DatasetError:
            continue
        # What parses must be a consistent dataset that survives a write/read round trip.
        parsed += 1
        X = ds.X.toarray()
        Y = ds.Y.toarray() if sp.issparse(ds.Y) else np.asarray(ds.Y)
        assert X.shape[0] == Y.shape[0] and len(ds.feature_names) == X.shape[1]
        assert np.isfinite(X).all() and set(np.unique(Y).tolist()) <= {0, 1}
        write(ds, tmp_path / "again.svm")
        back = read_libsvm(tmp_path / "again.svm")
        np.testing.assert_array_equal(back.X.toarray(), X)
        np.testing.assert_array_equal(back.Y.toarray() if sp.issparse(back.Y) else back.Y, Y)
    assert parsed > 0
