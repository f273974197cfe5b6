"""``calibration="auto"``, the default: ``"cmim"`` where at least half the cells of the
non-constant binned columns hold a non-zero code (dense numeric data), ``"information"``
elsewhere. The share against a reference written from its definition (in memory and from a
column store's tile headers), the rule at its edges, and the same decision in every mode."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect import select
from coreselect.core.discretize import discretize
from coreselect.core.objective import (
    AUTO, CONDITIONAL_MAX_CELLS, CONDITIONAL_MAX_WORK, DEFAULT_CALIBRATION, DENSE_SHARE,
    data_calibration,
)
from coreselect.errors import InputError
from coreselect.selection.sources import InMemorySource, StoreSource
from coreselect.selection.spec import Binning, Objective


def reference_share(X, **binning) -> float:
    """Cells of the columns with more than one code that hold a non-zero code, over all the
    cells of those columns: from the dense codes, column by column."""
    codes = discretize(X, **binning).codes.toarray()
    varying = [j for j in range(codes.shape[1]) if len(set(codes[:, j].tolist())) > 1]
    if not varying or codes.shape[0] == 0:
        return 0.0
    return sum(int(np.sum(codes[:, j] != 0)) for j in varying) / (codes.shape[0] * len(varying))


@st.composite
def matrices(draw):
    """Mixed columns: dense numeric, mostly-zero counts, binary, constant (zero or not), with
    few or many rows (sources refuse fewer than 2); dense or CSR."""
    n = draw(st.sampled_from([2, 3, 7, 40]))
    d = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    cols = []
    for kind in draw(st.lists(st.sampled_from(["normal", "counts", "binary", "zero", "const"]),
                              min_size=d, max_size=d)):
        if kind == "normal":
            cols.append(rng.normal(size=n))
        elif kind == "counts":
            cols.append(rng.poisson(0.3, size=n).astype(float) * rng.choice([-1, 1], size=n))
        elif kind == "binary":
            cols.append((rng.random(n) < draw(st.floats(0, 1))).astype(float))
        elif kind == "zero":
            cols.append(np.zeros(n))
        else:
            cols.append(np.full(n, 3.5))
    X = np.column_stack(cols)
    return sp.csr_matrix(X) if draw(st.booleans()) else X


@settings(max_examples=60, deadline=None)
@given(matrices(), st.sampled_from([2, 3, 5]))
def test_the_share_is_the_definition(X, n_bins):
    binning = dict(n_bins=n_bins, min_bin_count=1)
    Y = np.zeros((X.shape[0], 1), dtype=np.int8)
    source = InMemorySource(X, Y, Binning(**binning))
    assert source.nonzero_share() == pytest.approx(reference_share(X, **binning), abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(matrices(), st.integers(1, 5), st.integers(1, 20))
def test_a_store_counts_the_share_of_its_codes_from_its_tiles(tmp_path_factory, X, block,
                                                               rows):
    """Every cut into row blocks and column blocks: the headers of the tiles give the share
    the codes give."""
    from coreselect.store import build_store

    Y = (np.arange(X.shape[0]) % 2)[:, None].astype(np.int8)
    store = build_store(X, Y, tmp_path_factory.mktemp("s") / "s", block_size=block,
                        row_block_size=rows, seed=0, min_bin_count=1)
    memory = InMemorySource(X, Y, Binning(min_bin_count=1))
    assert StoreSource(store).nonzero_share() == pytest.approx(memory.nonzero_share(),
                                                               abs=1e-12)


def test_the_rule_at_its_edges():
    assert DEFAULT_CALIBRATION == AUTO == "auto"
    assert data_calibration(DENSE_SHARE, 10, 3) == "cmim"
    assert data_calibration(np.nextafter(DENSE_SHARE, 0), 10, 3) == "information"
    assert data_calibration(1.0, 10, 3) == "cmim"
    assert data_calibration(0.0, 10, 3) == "information"
    assert data_calibration(None, 10, 3) == "information"  # a source that cannot tell
    # tables the conditional criterion would refuse: the weighing
    assert data_calibration(0.9, CONDITIONAL_MAX_CELLS, 1) == "cmim"
    assert data_calibration(0.9, CONDITIONAL_MAX_CELLS, 2) == "information"
    # steps that would cost too much: rows x features x labels x k
    n, d, L = 1000, 100, 10
    k = CONDITIONAL_MAX_WORK // (n * d * L)
    assert data_calibration(0.9, d, L, n, k) == "cmim"
    assert data_calibration(0.9, d, L, n, k + 1) == "information"
    assert data_calibration(0.9, d, L, n + 1, k) == "information"


def test_a_weight_top_p_or_measure_given_means_the_weighing():
    assert Objective(k=3).calibration == "auto" and Objective(k=3).p is None
    for given_ in (dict(lam=0.3), dict(p=4), dict(relevance="nmi")):
        assert Objective(k=3, **given_).calibration == "information", given_
    assert Objective(k=3, lam=0.5).calibration == "auto"  # the default value is no choice
    with pytest.raises(ValueError, match="decided from the data"):
        Objective(k=3).params(2)
    # decided: the other calibrations are left as they are
    assert Objective(k=3, calibration="paper").decided(0.9, 5, 2).calibration == "paper"
    # and the k asked for counts in the cost (k="auto": the cap)
    tall = CONDITIONAL_MAX_WORK // (50 * 2 * 3)
    assert Objective(k=3).decided(0.9, 50, 2, tall).calibration == "cmim"
    assert Objective(k=4).decided(0.9, 50, 2, tall).calibration == "information"


def _dense(seed=0, n=150, d=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X[:, :3] @ rng.normal(size=(3, 3)) + rng.normal(size=(n, 3)) > 0).astype(np.int8)
    return X, Y


def _sparse(seed=0, n=150, d=40):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.1, random_state=seed, format="csr")
    X.data = np.round(X.data * 4) + 1
    Y = (rng.random((n, 3)) < 0.3).astype(np.int8)
    return X, Y


@pytest.mark.parametrize("data, chosen", [(_dense, "cmim"), (_sparse, "information")])
def test_every_mode_decides_alike_and_selects_what_the_chosen_one_selects(tmp_path, data,
                                                                         chosen):
    from coreselect.store import build_store

    X, Y = data()
    want = select(X, Y, k=5, calibration=chosen)
    store = build_store(X, Y, tmp_path / "s", block_size=5, row_block_size=40, seed=0)
    runs = {
        "centralized": select(X, Y, k=5),
        "rows": select(X, Y, k=5, mode="rows", row_shards=3),
        "store": select(str(store.path), k=5),
        "store rows": select(str(store.path), k=5, mode="rows"),
    }
    for name, result in runs.items():
        assert result.spec["calibration"] == chosen, name
        assert list(result.selected) == list(want.selected), name
    for mode in ("distributed", "streaming"):
        got = select(X, Y, k=5, mode=mode, partitions=3, random_state=0)
        assert got.spec["calibration"] == chosen
        assert list(got.selected) == list(select(X, Y, k=5, mode=mode, partitions=3,
                                                 random_state=0, calibration=chosen).selected)
    assert list(select(X, Y, k="auto").ranking[:5]) == list(want.selected)


def test_a_checkpoint_is_refused_where_the_default_is_cmim_and_kept_elsewhere(tmp_path):
    X, Y = _dense()
    with pytest.raises(InputError, match="calibration='information'"):
        select(X, Y, k=4, checkpoint=tmp_path / "a.ck")
    assert not (tmp_path / "a.ck").exists()
    weighed = select(X, Y, k=4, checkpoint=tmp_path / "b.ck", calibration="information")
    assert weighed.spec["calibration"] == "information"
    X, Y = _sparse()
    resumable = select(X, Y, k=4, checkpoint=tmp_path / "c.ck")
    assert resumable.spec["calibration"] == "information"
    assert (tmp_path / "c.ck").is_file()


def _run(capsys, *args):
    from coreselect.cli import main

    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_the_command_line_says_which_one_the_default_took(tmp_path, capsys):
    from coreselect.io import from_arrays, write

    X, Y = _dense()
    path = tmp_path / "d.arff"
    write(from_arrays(X, Y, name="d"), path)
    code, out, err = _run(capsys, "select", path, "-k", "3")
    assert code == 0, err
    assert "cmim criterion" in out and "calibration cmim: the default" in out
    code, out, err = _run(capsys, "select", path, "-k", "3", "--calibration", "cmim")
    assert code == 0 and "the default" not in out  # chosen by the user: nothing to explain
    code, out, err = _run(capsys, "select", path, "-k", "3", "--json")
    assert json.loads(out)["calibration"] == "cmim" and json.loads(out)["lam"] is None
    code, out, err = _run(capsys, "select", path, "-k", "3", "--lam", "0.3", "--json")
    assert json.loads(out)["calibration"] == "information"
    code, out, err = _run(capsys, "select", path, "-k", "3", "--checkpoint", tmp_path / "ck")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--calibration" in err or "calibration='information'" in err


def test_an_opened_store_counts_its_non_zeros_without_reading_a_header_again(tmp_path,
                                                                            monkeypatch):
    """Opening a store checks every tile's headers; the share the default is decided from
    reuses that count (a remote store would pay a request per tile again); a store opened
    without the check reads the indices headers, once."""
    from coreselect.store import build_store, open_store
    from coreselect.store.reader import ColumnStore

    X, Y = _dense(n=120, d=9)
    built = build_store(X, Y, tmp_path / "s", block_size=4, row_block_size=50, seed=0)
    expected = int(InMemorySource(X, Y).nonzero_share() * 120 * 9 + 0.5)
    reads = []
    length = ColumnStore._npy_length
    monkeypatch.setattr(ColumnStore, "_npy_length",
                        lambda self, rel, block: reads.append(rel) or length(self, rel, block))
    checked = open_store(built.path)
    reads.clear()
    assert checked.n_nonzero() == expected and reads == []
    unchecked = open_store(built.path, check=False)
    assert unchecked.n_nonzero() == expected and unchecked.n_nonzero() == expected
    assert len(reads) == unchecked.n_row_blocks * unchecked.n_blocks  # one header per tile
    assert all(rel.endswith("indices.npy") and not rel.startswith("labels") for rel in reads)


def test_the_cost_counts_the_rows_and_k_auto_is_decided_at_its_cap(monkeypatch):
    """The cost bound counts rows x features x labels x k (the source passes its rows), and
    k="auto" decides once, for the order up to the cap: the chosen k's selection is that
    order's prefix, under the calibration that ranked it."""
    import coreselect.core.objective as objective
    from coreselect.selection.autok import cap_for

    X, Y = _dense()  # 150 x 12, 3 labels: dense, "auto" takes cmim unless it costs too much
    n, d, L = 150, 12, 3
    monkeypatch.setattr(objective, "CONDITIONAL_MAX_WORK", n * d * L * 5 - 1)
    assert select(X, Y, k=5).spec["calibration"] == "information"
    assert select(X, Y, k=4).spec["calibration"] == "cmim"
    cap = cap_for(d)
    monkeypatch.setattr(objective, "CONDITIONAL_MAX_WORK", n * d * L * cap - 1)
    auto = select(X, Y, k="auto")
    assert auto.spec["k"] < cap  # a smaller k alone would have been cmim's
    assert auto.spec["calibration"] == "information"
    ranked = select(X, Y, k=cap, calibration="information").selected
    assert list(auto.ranking) == list(ranked)
    assert list(auto.selected) == list(ranked[:auto.spec["k"]])
