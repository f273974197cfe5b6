"""``coreselect select FILE.xmc`` with many labels: the sparse relevance, progress bars for the
relevance and the greedy (and the row shards' counts in rows mode), and explanations of the
top labels only, said so in the output. The thresholds that a million labels would cross are
lowered here so that a small file takes the same code paths."""

from __future__ import annotations

import json

import numpy as np
import pytest

import coreselect.core.sparse_relevance as sparse_relevance
import coreselect.selection.explain as explain
from coreselect.cli import main
from coreselect.datasets.synthetic import make_extreme_multilabel
from coreselect.io.xmc import write_xmc

N_LABELS = 3000


@pytest.fixture(scope="module")
def xmc_file(tmp_path_factory):
    ds = make_extreme_multilabel(400, 300, N_LABELS, labels_per_sample=4, features_per_sample=25,
                                 n_signal_labels=10, random_state=0)
    path = tmp_path_factory.mktemp("xmc") / "many.xmc"
    write_xmc(ds, path)
    return path


@pytest.fixture
def many_labels(monkeypatch):
    """As with 10^6 labels: the sparse relevance, and top labels kept past 500 labels."""
    from coreselect.cli import _common

    monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", 0)
    monkeypatch.setattr(explain, "MAX_FULL_LABELS", 500)
    monkeypatch.setattr(explain, "TOP_LABELS", 40)
    monkeypatch.setattr(_common, "_is_tty", lambda stream: True)  # progress bars are drawn


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.mark.parametrize("mode,stages", [("centralized", ("relevance", "select")),
                                         ("rows", ("counts", "select"))])
def test_select_xmc_many_labels(capsys, tmp_path, xmc_file, many_labels, mode, stages):
    png = tmp_path / "cover.png"
    code, out, err = run(capsys, "select", xmc_file, "-k", 6, "--mode", mode, "--json",
                         "--explain", "--coverage", png)
    assert code == 0, err
    report = json.loads(out)
    assert len(report["selected"]) == 6
    used = report.get("relevance_backend") or report["engine_info"]["relevance_backend"]
    assert used == "sparse"
    assert report["labels_explained"] == {"top": 40, "of": N_LABELS}
    assert len(report["explanations"]) == 6
    assert png.stat().st_size > 0
    from coreselect.cli.select import STAGES

    for stage in stages:  # tqdm bars on the "terminal", named as the user reads them
        assert STAGES[stage] in err, err[-2000:]


def test_table_says_top_labels(capsys, xmc_file, many_labels):
    code, out, err = run(capsys, "select", xmc_file, "-k", 4, "--explain")
    assert code == 0, err
    assert f"the 40 of {N_LABELS} with the largest terms of g" in out


def test_same_selection_as_dense(capsys, xmc_file, monkeypatch):
    code, out, err = run(capsys, "select", xmc_file, "-k", 6, "--json", "--quiet")
    assert code == 0, err
    dense = json.loads(out)
    assert dense["relevance_backend"] == "dense" and "labels_explained" not in dense
    monkeypatch.setattr(sparse_relevance, "DENSE_RELEVANCE_MAX_BYTES", 0)
    code, out, err = run(capsys, "select", xmc_file, "-k", 6, "--json", "--quiet")
    sparse = json.loads(out)
    assert sparse["selected"] == dense["selected"]
    np.testing.assert_allclose(sparse["objective"], dense["objective"], rtol=1e-9)
