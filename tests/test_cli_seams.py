"""The seams a new user falls into between the command line, the API and the data folder:

* ``--labels`` / ``load(labels=...)`` name a label file under ``$COREDATA`` as the data path does;
* ``evaluate`` prints its table without ``--out``, caps ``--k`` at the features there are (one
  line says so), and scores a given train/test split (``--test FILE``, ``--split``);
* command-line errors name the command's options, never the Python parameters behind them;
* ``datasets list`` names every dataset the way the docs write it, matched in any case;
* each command says which files it wrote, one line each on stderr, and the row-sharded
  count pass on Dask reports its progress;
* the coverage plot's colour bar stands apart from its share panel, and evaluate's plots keep
  five methods' spreads apart.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import coreselect
from coreselect.cli import main


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


# ----------------------------------------------------------------- label files under $COREDATA
def test_label_file_is_looked_up_under_coredata_like_the_data(coredata, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no mulan/ here: both paths only exist under $COREDATA
    monkeypatch.setenv("COREDATA", str(coredata))
    rel_data, rel_xml = "mulan/emotions/emotions.arff", "mulan/emotions/emotions.xml"
    ds = coreselect.load(rel_data, labels=rel_xml)
    direct = coreselect.load(str(coredata / rel_data), labels=str(coredata / rel_xml))
    assert ds.label_names == direct.label_names and ds.X.shape == direct.X.shape
    code, out, err = run(capsys, "select", rel_data, "--labels", rel_xml, "-k", "3", "-q", "--json")
    assert code == 0, err
    code, out, err = run(capsys, "select", rel_data, "--labels", "mulan/emotions/nothing.xml",
                         "-k", "3", "-q")
    assert code == 2 and "no such label file" in err


# ----------------------------------------------------------------- evaluate
def _narrow(path, n=60, d=12, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, d))
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(d)])
    frame["y0"], frame["y1"] = (X[:, 0] > 1).astype(int), (X[:, 1] + X[:, 2] > 3).astype(int)
    frame.to_csv(path, index=False)
    return path


def test_evaluate_prints_its_table_without_out(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = _narrow(tmp_path / "narrow.csv")
    code, out, err = run(capsys, "evaluate", data, "--labels", "y0,y1", "--methods", "gds",
                         "--k", "3", "--folds", "2", "-q")
    assert code == 0, err
    assert out.startswith("mean ± std over 2 folds") and "Example-based F1" in out
    assert sorted(os.listdir(tmp_path)) == ["narrow.csv"]  # nothing written


def test_evaluate_caps_k_at_the_features_with_one_line(tmp_path, capsys):
    data = _narrow(tmp_path / "narrow.csv")
    code, out, err = run(capsys, "evaluate", data, "--labels", "y0,y1", "--methods", "br-chi2",
                         "--k", "5,20,100", "--folds", "2", "-q")
    assert code == 0, err
    assert err.strip() == "narrow has 12 features: k capped at 12 (k = 5,12)"
    rows = [line.split()[0] for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert rows[:2] == ["5", "12"]


def test_evaluate_scores_a_given_test_set(tmp_path, capsys):
    """``--test FILE``: trained on DATA, scored once on FILE; the full-feature reference's
    scores are those of BRkNN-b fitted on DATA and applied to FILE, computed here directly."""
    import pandas as pd

    from coreselect.evaluation import BRkNNb
    from coreselect.evaluation.measures import evaluate_all

    train, test = _narrow(tmp_path / "train.csv"), _narrow(tmp_path / "test.csv", n=30, seed=1)
    out_dir = tmp_path / "report"
    code, out, err = run(capsys, "evaluate", train, "--test", test, "--labels", "y0,y1",
                         "--methods", "all,gds", "--k", "4", "--out", out_dir, "-q")
    assert code == 0, err
    assert out.startswith("scores on the given test set") and "±" not in out
    results = pd.read_csv(out_dir / "results.csv")
    assert set(results["fold"]) == {0}
    a, b = coreselect.load(str(train), labels="y0,y1"), coreselect.load(str(test), labels="y0,y1")
    expected = evaluate_all(b.Y, BRkNNb(n_neighbors=5).fit(a.X, a.Y).predict(b.X))
    got = results[results["method"] == "all"].set_index("measure")["value"]
    for measure, value in expected.items():
        assert got[measure] == pytest.approx(value, abs=1e-6), measure
    # A test set with other columns is refused in one line.
    other = tmp_path / "other.csv"
    pd.read_csv(test).rename(columns={"f3": "g3"}).to_csv(other, index=False)
    code, _, err = run(capsys, "evaluate", train, "--test", other, "--labels", "y0,y1",
                       "--methods", "gds", "--k", "4", "-q")
    assert code == 2 and "'g3' where the training set has 'f3'" in err
    code, _, err = run(capsys, "evaluate", train, "--test", test, "--folds", "3", "-q")
    assert code == 2 and "--folds does not apply with --test" in err


def test_evaluate_mulan_split_is_the_train_and_test_files(coredata, tmp_path, capsys):
    base = ["--methods", "all", "--k", "5", "-q"]
    code, by_name, err = run(capsys, "evaluate", "emotions", "--mulan-split", *base)
    assert code == 0, err
    folder = coredata / "mulan/emotions"
    code, by_file, err = run(capsys, "evaluate", folder / "emotions.arff", "--mulan-split", *base)
    assert code == 0, err
    code, explicit, err = run(capsys, "evaluate", folder / "emotions-train.arff", "--test",
                              folder / "emotions-test.arff", *base)
    assert code == 0, err
    assert by_name == by_file == explicit and by_name.startswith("scores on the given test set")
    code, _, err = run(capsys, "evaluate", "cal500", "--mulan-split", *base)
    assert code == 2 and "no train/test split of its own" in err


# ----------------------------------------------------------------- errors in the command's words
_PYTHON_WORDS = re.compile(r"\b(None|True|False|keep_constant|n_bins|min_bin_count|n_workers|"
                           r"coreset_size|row_shards|random_state)\b|'auto'|\bk=")


def test_select_k_too_large_names_the_option_not_the_parameter(capsys):
    code, _, err = run(capsys, "select", "emotions", "-k", "500", "-q")
    assert code == 2
    assert err.strip() == ("coreselect: error: -k 500 is larger than the number of selectable "
                           "features (72)")


def test_select_k_too_large_with_constant_columns_names_keep_constant(tmp_path, capsys):
    data = tmp_path / "c.csv"
    data.write_text("a,b,c,y\n" + "".join(f"{i},5,{i % 2},{(i // 2) % 2}\n" for i in range(8)))
    code, _, err = run(capsys, "select", data, "--labels", "y", "-k", "3", "-q")
    assert code == 2 and "-k 3 is larger" in err and "--keep-constant allows them" in err
    assert not _PYTHON_WORDS.search(err), err


@pytest.mark.parametrize("args, flag", [
    (["-k", "0"], "-k"), (["-k", "-3"], "-k"), (["-k", "many"], "-k"), (["--p", "0"], "--p"),
    (["--bins", "1"], "--bins"), (["--min-bin-count", "0"], "--min-bin-count"),
    (["--percentile", "0"], "--percentile"), (["--lam", "2"], "--lam"),
    (["--mode", "distributed", "--partitions", "0"], "--partitions"),
    (["--mode", "distributed", "--coreset-size", "0"], "--coreset-size"),
    (["--mode", "distributed", "--workers", "0"], "--workers"),
    (["--mode", "rows", "--row-shards", "0"], "--row-shards"),
])
def test_select_refusals_name_the_options(capsys, args, flag):
    code, _, err = run(capsys, "select", "emotions", *args, "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"coreselect: error: {flag} "), err
    assert not _PYTHON_WORDS.search(err), err


def test_cli_words_translates_the_library_s_parameter_names():
    from coreselect.cli._common import cli_words

    flags = {"k": "-k", "n_bins": "--bins", "min_bin_count": "--min-bin-count",
             "strategy": "--strategy", "keep_constant": "--keep-constant"}
    text = ("2 have every sample in one bin (min_bin_count=10 on 593 samples, n_bins=5; a "
            "smaller min_bin_count or strategy='uniform' keeps more bins) (keep_constant=True "
            "allows constant columns)")
    assert cli_words(text, flags) == (
        "2 have every sample in one bin (--min-bin-count 10 on 593 samples, --bins 5; a "
        "smaller --min-bin-count or --strategy uniform keeps more bins) (--keep-constant "
        "allows constant columns)")
    assert cli_words("k must be 'auto' or an integer >= 1 or None, got 0", flags) == \
        "-k must be auto or an integer >= 1, got 0"
    # Words that are not parameters, and paths, stay as they are.
    assert cli_words("mulan/k=3/a_b.arff: bad 'x'", flags) == "mulan/k=3/a_b.arff: bad 'x'"


@pytest.mark.parametrize("args, start", [
    (["--k", "0"], "--k 0: "), (["--k", "10:x"], "--k 10:x: "),
    (["--lam-sweep", "0,2", "--methods", "gds"], "--lam-sweep 0,2: "),
])
def test_evaluate_refusals_name_the_option(capsys, args, start):
    code, _, err = run(capsys, "evaluate", "emotions", *args, "-q")
    assert code == 2 and err.startswith(f"coreselect: error: {start}"), err


# ----------------------------------------------------------------- datasets list
def test_datasets_list_is_complete_and_named_as_the_docs_write_them(capsys):
    import json

    code, out, err = run(capsys, "datasets", "list")
    assert code == 0, err
    lines = out.splitlines()
    names = [line.split()[0] for line in lines[1:] if line.strip() and not line.startswith("status")]
    assert names[0] == "synthesized" and "CAL500" in names and "Corel5k" in names
    assert "cal500" not in names and "no-sha" not in out
    assert lines[0].split()[6] == "status"
    legend = lines[-1]
    code, out, _ = run(capsys, "datasets", "list", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    for status in {r["status"] for r in rows}:
        assert f"{status}: " in legend, status  # every status word shown is explained
    synthesized = rows[0]
    ds = coreselect.load("synthesized")
    assert (synthesized["name"], synthesized["features"], synthesized["instances"],
            synthesized["labels"]) == ("synthesized", ds.n_features, ds.n_samples, ds.n_labels)


def test_fetch_of_the_listed_synthesized_says_there_is_nothing_to_fetch(capsys):
    code, out, err = run(capsys, "datasets", "fetch", "synthesized")
    assert code == 0 and out == "" and "nothing to fetch" in err


def test_registry_names_match_in_any_case(coredata):
    from coreselect.datasets import registry

    assert registry.find("cal500").name == registry.find("CAL500").name == "CAL500"
    assert registry.find("COREL5K").name == "Corel5k"
    assert "CAL500" in registry.close_names("cal50")
    assert coreselect.load("cal500").name == "CAL500"


# ----------------------------------------------------------------- progress and written files
def test_select_and_store_build_name_every_file_they_write(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "select", "emotions", "-k", "3", "--out", "r.json",
                         "--export", "e.arff", "--coverage", "c.png")
    assert code == 0, err
    assert [line for line in err.splitlines() if line.startswith("wrote ")] == [
        "wrote r.json", "wrote e.arff", "wrote e.xml", "wrote c.png"]
    assert all((tmp_path / name).is_file() for name in ("r.json", "e.arff", "e.xml", "c.png"))
    code, out, err = run(capsys, "store", "build", "emotions", "st")
    assert code == 0 and err.splitlines()[-1] == "wrote st (a column store)", err
    code, out, err = run(capsys, "select", "emotions", "-k", "3", "--out", "q.json", "-q")
    assert code == 0 and err == ""  # -q: results, warnings and errors only


@pytest.mark.dask
def test_row_sharded_counts_on_dask_report_progress():
    """``--mode rows --engine dask``: the count pass over the row shards reports its progress
    (it showed "starting the engine" and then nothing until the greedy steps)."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 12))
    Y = (rng.random((200, 2)) < 0.4).astype(int)
    events: list = []
    result = coreselect.select(X, Y, k=3, mode="rows", engine="dask", n_workers=2,
                               progress=lambda stage, done, total: events.append((stage, done, total)))
    counts = [e for e in events if e[0] == "counts"]
    assert counts and counts[-1][1] == counts[-1][2] >= 1, events
    assert [e[1] for e in counts] == list(range(1, counts[-1][2] + 1))
    stages = list(dict.fromkeys(e[0] for e in events))
    assert stages.index("engine") < stages.index("counts") < stages.index("select")
    reference = coreselect.select(X, Y, k=3)
    np.testing.assert_array_equal(result.selected, reference.selected)


# ----------------------------------------------------------------- plots
@pytest.mark.parametrize("n_labels, p", [(6, 3), (174, 10), (3, 2**31 - 1)])
def test_coverage_colour_bar_stands_apart_from_the_share_panel(n_labels, p):
    """The colour bar has a column of its own, a clear gap beside the share-of-g panel (it
    was drawn against the panel, over its frame, on every figure size)."""
    import io

    import matplotlib.pyplot as plt

    from coreselect.selection.explain import coverage_figure

    rel = np.random.default_rng(0).random((15, n_labels))
    names = [f"Mean_Acc1000_Mean_Mem40_MFCC{i}_Power_powerFFT_WinHamming" for i in range(15)]
    fig = coverage_figure(rel, p, feature_names=names,
                          label_names=[f"Genre-Label-{j}" for j in range(n_labels)])
    try:
        fig.savefig(io.BytesIO(), dpi=120, format="png")  # the layout the PNG gets
        *panels, colour_bar = [a.get_position() for a in fig.axes]
        for box in panels:
            gap_inches = (colour_bar.x0 - box.x1) * fig.get_figwidth()
            assert gap_inches >= 0.04, (box, colour_bar, gap_inches)
    finally:
        plt.close(fig)


def _five_methods(n_folds=3):
    import pandas as pd

    rng = np.random.default_rng(0)
    rows = [dict(method=m, k=k, fold=f, measure="example_f1", value=0.5 + 0.01 * k + rng.normal(0, 0.05),
                 select_seconds=0.1, fit_seconds=0.1, predict_seconds=0.1)
            for m in ("gds", "cgds", "br-ig", "br-chi2", "random") for k in (10, 20, 30)
            for f in range(n_folds)]
    return pd.DataFrame(rows)


def test_evaluate_plot_keeps_five_methods_apart(tmp_path, monkeypatch):
    """Five methods' ±std spreads stay readable: each its own colour and marker, error bars
    nudged apart at every k (not five translucent bands over one another)."""
    import matplotlib.collections as mcoll
    import matplotlib.figure

    from coreselect.evaluation.report import plot_measures

    figures = []
    real = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return real(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    plot_measures(_five_methods(), tmp_path, dataset="toy")
    (fig,) = figures
    ax = fig.axes[0]
    assert not [c for c in ax.collections if isinstance(c, mcoll.PolyCollection)]  # no bands
    from matplotlib.container import ErrorbarContainer

    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in bars] == ["GDS", "CGDS", "BR-IG", "BR-CHI2", "RANDOM"]
    lines = [c.lines[0] for c in bars]
    assert len({line.get_color() for line in lines}) == 5
    assert len({line.get_marker() for line in lines}) == 5
    xs = np.array([line.get_xdata() for line in lines])
    assert all(len(set(column)) == 5 for column in xs.T)  # apart at every k
    assert np.allclose(np.round(xs.mean(axis=0)), [10, 20, 30])  # around the true k
    assert sum(isinstance(c, mcoll.LineCollection) for c in ax.collections) >= 5  # error bars
    assert "±1 std" in ax.get_title()
