"""``n_bins="auto"``: three bins per split column below 240 rows, five from there.

* the rule by hand on both sides of the threshold, and the refusals;
* every way of binning (in memory, ``build_store``, ``build_store_from_chunks``, the ingest
  from files in chunks) decides it from the rows of the whole data, so each gives the codes
  and the selection of the others on 239 and on 240 rows; the store records the bins it took;
* an explicit ``n_bins`` is used as it is at any size;
* the command line takes ``--bins auto`` and refuses anything else in one line, exit 2.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from coreselect.cli import main
from coreselect.core.discretize import FEW_ROWS, discretize, resolve_n_bins
from coreselect.errors import InputError
from coreselect.io import Dataset, write
from coreselect.io.dataset import IndexedNames
from coreselect.selection import select
from coreselect.store import build_store, build_store_from_chunks
from coreselect.store.ingest import BuildOptions, WholeFileChunks, build_store_from_source

import reference as ref


def test_the_rule_by_hand():
    assert FEW_ROWS == 240
    assert [resolve_n_bins("auto", n) for n in (0, 1, 100, 239, 240, 241, 10**9)] == \
        [3, 3, 3, 3, 5, 5, 5]
    assert [resolve_n_bins(b, n) for b in (2, 5, 12) for n in (10, 10**6)] == \
        [2, 2, 5, 5, 12, 12]
    for bad in (1, 0, -3, 2**31, "five", "AUTO", True, 2.5, None):
        with pytest.raises(InputError, match="n_bins"):
            resolve_n_bins(bad, 100)


def _data(n: int, seed: int = 0):
    """Dense continuous columns (split into as many bins as asked), one sparse-like column
    with its zero bin, a 4-valued one (kept as is by five bins, merged by three)."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, 3)) < 0.4).astype(np.int8)
    X = np.column_stack([
        rng.normal(size=(n, 5)) + Y[:, [0, 1, 2, 0, 1]],
        np.where(rng.random(n) < 0.7, 0.0, rng.exponential(size=n)),
        rng.integers(0, 4, n) + Y[:, 2],
    ]).round(3)
    return X, Y


@pytest.mark.parametrize("n", [FEW_ROWS - 1, FEW_ROWS])
def test_every_way_of_binning_decides_alike(n, tmp_path):
    X, Y = _data(n)
    bins = 3 if n < FEW_ROWS else 5
    codes = discretize(X)
    assert codes.n_codes[:5].tolist() == [bins] * 5
    assert codes.n_codes[6] == bins  # 5 values: kept by five bins, merged by three
    expected = ref.codes_of(X)  # the rule written from the docstring, one column at a time
    assert all(ref.same_partition(codes.dense_codes()[:, j], expected[:, j])
               for j in range(X.shape[1]))
    want = select(X, Y, k=4)
    assert want.spec["n_bins"] == bins
    names = IndexedNames(X.shape[1], "x")
    stores = {"build_store": build_store(X, Y, tmp_path / "a", feature_names=names),
              "from_chunks": build_store_from_chunks(
                  ((X[a:a + 50], Y[a:a + 50]) for a in range(0, n, 50)), tmp_path / "b",
                  feature_names=names)}
    files = []
    for i, (a, b) in enumerate(((0, 1), (1, n // 2), (n // 2, n))):  # a one-row file
        path = tmp_path / f"part{i}.svm"
        write(Dataset(X[a:b], Y[a:b], feature_names=names,
                      label_names=IndexedNames(3, "y"), name="parts"), path)
        files.append(str(path))
    stores["ingest"] = build_store_from_source(WholeFileChunks(files, chunk_rows=37),
                                               tmp_path / "c", options=BuildOptions())
    for how, store in stores.items():
        assert store.meta["discretization"]["n_bins"] == bins, how
        got = select(store, k=4)
        assert got.selected.tolist() == want.selected.tolist(), how
        assert got.spec["n_bins"] == bins, how
        assert got.objective == pytest.approx(want.objective, abs=1e-9), how
    # Rows and distributed from the memory source, on the same codes.
    assert select(X, Y, k=4, mode="rows", row_shards=3).selected.tolist() == \
        want.selected.tolist()


def test_an_explicit_number_of_bins_is_used_at_any_size(tmp_path):
    X, Y = _data(60)
    assert discretize(X, n_bins=5).n_codes[:5].tolist() == [5] * 5
    assert discretize(sp.csr_matrix(X), n_bins=4).n_codes[:5].tolist() == [4] * 5
    store = build_store(X, Y, tmp_path / "s", n_bins=5)
    assert store.meta["discretization"]["n_bins"] == 5
    assert select(store, k=3).selected.tolist() == select(X, Y, k=3, n_bins=5).selected.tolist()
    with pytest.raises(InputError, match="built with n_bins=5"):
        select(store, k=3, n_bins=3)
    # "auto" given to a store built with it stands for the bins it took there (3 on 60 rows)
    small = build_store(X, Y, tmp_path / "auto")
    assert select(small, k=3, n_bins="auto").spec["n_bins"] == 3
    with pytest.raises(InputError, match="built with n_bins=3"):
        select(small, k=3, n_bins=5)


def test_bad_bins_are_refused_before_any_file_is_read(tmp_path):
    with pytest.raises(InputError, match="n_bins"):  # not "no such file": nothing was read
        build_store_from_source(WholeFileChunks([str(tmp_path / "missing.svm")]),
                                tmp_path / "s", options=BuildOptions(n_bins="many"))
    assert not (tmp_path / "s").exists()


def _run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_the_command_line_takes_auto_and_refuses_the_rest(capsys, tmp_path):
    X, Y = _data(100)
    data = tmp_path / "small.svm"
    write(Dataset(X, Y, feature_names=IndexedNames(X.shape[1], "x"),
                  label_names=IndexedNames(3, "y"), name="small"), data)
    code, out, err = _run(capsys, "select", data, "-k", 3, "--json", "--bins", "auto")
    assert code == 0, err
    auto = json.loads(out)
    code, out, err = _run(capsys, "select", data, "-k", 3, "--json", "--bins", 3)
    assert code == 0 and json.loads(out)["selected"] == auto["selected"]
    for bad in ("1", "many", "2.5"):
        code, out, err = _run(capsys, "select", data, "-k", 3, "--bins", bad)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--bins" in err, err
        code, out, err = _run(capsys, "store", "build", data, tmp_path / f"s{bad}",
                              "--bins", bad)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--bins" in err, err
        assert not (tmp_path / f"s{bad}").exists()
        code, out, err = _run(capsys, "store", "build", data, tmp_path / f"s{bad}",
                              "--bins", bad, "--checkpoint", tmp_path / "ck")
        assert code == 2 and "--bins" in err, err
        assert not list(tmp_path.glob("ck*")) and not (tmp_path / f"s{bad}").exists()
    code, out, err = _run(capsys, "store", "build", data, tmp_path / "s", "--quiet")
    assert code == 0, err
    meta = json.loads((tmp_path / "s" / "store.json").read_text())
    assert meta["discretization"]["n_bins"] == 3
    # The summary says when the command's default took three bins, and only then.
    said = "bins: 3 per split column, as --bins auto takes on fewer than 240 samples"
    for args, says in (((), True), (("--mode", "streaming"), True), (("--bins", "3"), False),
                       (("--bins", "auto"), False)):
        code, out, err = _run(capsys, "select", data, "-k", 3, *args)
        assert code == 0 and (said in out) == says, (args, out)
    code, out, err = _run(capsys, "select", tmp_path / "s", "-k", 3)  # a store: built so
    assert code == 0 and said not in out
    large = tmp_path / "large.svm"
    X, Y = _data(FEW_ROWS)
    write(Dataset(X, Y, feature_names=IndexedNames(X.shape[1], "x"),
                  label_names=IndexedNames(3, "y"), name="large"), large)
    code, out, err = _run(capsys, "select", large, "-k", 3)
    assert code == 0 and "bins:" not in out
