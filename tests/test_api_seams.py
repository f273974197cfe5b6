"""Seams between the API, the CLI and the readers that a new user hit (issue 16), each as a
property over what varies, plus the examples of the issue.

* the test command is deterministic (hypothesis profile ``ci``);
* ``coreselect.select`` takes what the ``select`` command takes (a name, a path), and a result
  carries the label names of its data (``explain()`` names them as the CLI does), with a short
  repr; ``coreselect.errors`` is there after ``import coreselect``;
* a label subset never turns the other declared labels into features (unless asked);
* label sets as ``Y`` select what the same labels as a 0/1 matrix select; ragged lists,
  strings and complex labels are refused with a typed error;
* ``COREDATA`` given relative works from any folder (resolved against the working folder of
  its first read, and kept through a later ``os.chdir``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import coreselect
from coreselect.errors import DatasetError, InputError, InputTypeError

REPO = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "MPLBACKEND": "Agg", **extra}


# ----------------------------------------------------------------- A: the test command
def test_default_hypothesis_profile_is_deterministic():
    """tests/conftest.py makes ``ci`` the default: derandomized, no example database (a past
    failure is not replayed from .hypothesis/), the reproduce blob printed."""
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci" or any(
            a.startswith("--hypothesis-profile") for a in sys.argv):
        pytest.skip("another hypothesis profile was asked for")
    current = settings()
    assert current.derandomize is True
    assert current.database is None
    assert current.print_blob is True


def test_explore_profile_is_registered_and_random():
    explore = settings.get_profile("explore")
    assert explore.derandomize is False and explore.database is not None
    assert explore.max_examples > settings.get_profile("ci").max_examples


# ----------------------------------------------------------------- B: API = CLI
def test_errors_module_is_there_after_import_without_heavy_dependencies():
    code = ("import sys, coreselect; e = coreselect.errors; "
            "assert issubclass(e.InputError, ValueError) and e.DatasetError and e.InputTypeError; "
            "heavy = [m for m in ('numpy', 'scipy', 'sklearn', 'pandas', 'dask', 'matplotlib') "
            "if m in sys.modules]; assert not heavy, heavy; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_select_takes_a_name_or_path_as_the_cli_does(coredata, tmp_path):
    by_name = coreselect.select("emotions", k=5)
    by_path = coreselect.select(str(coredata / "mulan/emotions/emotions.arff"), k=5)
    by_rel = coreselect.select("mulan/emotions/emotions.arff", k=5)  # under $COREDATA
    loaded = coreselect.select(coreselect.load("emotions"), k=5)
    for r in (by_path, by_rel, loaded):
        np.testing.assert_array_equal(r.selected, by_name.selected)
    cli = subprocess.run([sys.executable, "-m", "coreselect", "select", "emotions", "-k", "5",
                          "--json"], capture_output=True, text=True, env=_env(), timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["selected"] == [int(i) for i in by_name.selected]
    with pytest.raises(InputError, match="own labels"):
        coreselect.select("emotions", np.zeros((593, 2)), k=5)
    with pytest.raises(DatasetError, match="neither a file"):
        coreselect.select("no-such-dataset-name", k=5)


def test_explain_names_the_labels_of_the_data(coredata):
    ds = coreselect.load("emotions")
    result = coreselect.select(ds, k=5)
    assert result.label_names == list(ds.label_names)
    named = {label for e in result.explain() for label in e.labels}
    assert named and named <= set(ds.label_names)
    assert not any(label.startswith("label") for label in named)
    # the GDSSelector explanations too
    sel = coreselect.GDSSelector(k=5).fit(ds.X, ds.Y)
    assert all(label.startswith("label") for e in sel.explanations_ for label in e.labels)
    import pandas as pd

    sel = coreselect.GDSSelector(k=5).fit(ds.X, pd.DataFrame(ds.Y, columns=ds.label_names))
    assert {label for e in sel.explanations_ for label in e.labels} <= set(ds.label_names)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(4, 60), d=st.integers(1, 40), L=st.integers(1, 5), seed=st.integers(0, 99),
       k=st.integers(1, 40))
def test_result_repr_is_short(n, d, L, seed, k):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (n, d))
    Y = rng.integers(0, 2, (n, L))
    try:
        result = coreselect.select(X, Y, k=k, min_bin_count=1, keep_constant=True)
    except InputError:
        return  # k larger than d
    text = repr(result)
    assert "\n" not in text and len(text) < 200, text
    assert f"k={len(result.selected)}" in text and "objective=" in text and "seconds=" in text
    assert str(int(result.selected[0])) in text


def test_gds_selector_docstring_describes_the_default_and_every_calibration():
    from coreselect.core.objective import CALIBRATIONS, DEFAULT_CALIBRATION

    doc = coreselect.GDSSelector.__doc__
    first = doc.strip().split("\n\n")[0]
    assert "Maximizes" not in first
    assert f'"{DEFAULT_CALIBRATION}"' in doc and "default" in doc
    for name in CALIBRATIONS:
        assert f'``"{name}"``' in doc, name


# ----------------------------------------------------------------- C: label subsets
@st.composite
def mulan_files(draw):
    """An ARFF file with declared labels (a Mulan XML beside it, or MEKA's -C), a label spec
    that names some of them, dense or sparse."""
    d = draw(st.integers(1, 5))
    L = draw(st.integers(2, 6))
    declare = draw(st.sampled_from(["xml", "meka-first", "meka-last"]))
    names = [f"f{j}" for j in range(d)]
    labels = [f"lab{j}" for j in range(L)]
    attrs = (labels + names) if declare == "meka-first" else (names + labels)
    chosen = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=L - 1, unique=True))
    spec = draw(st.sampled_from(["names", "list"]))
    sparse = draw(st.booleans())
    return attrs, labels, chosen, declare, spec, sparse


def _write(folder: Path, attrs, labels, declare: str, sparse: bool, n: int = 6) -> Path:
    rng = np.random.default_rng(len(attrs))
    c = {"xml": "", "meka-first": f" -C {len(labels)}", "meka-last": f" -C -{len(labels)}"}[declare]
    lines = [f"@relation 'r{c}'"] + [
        f"@attribute {a} {'{0,1}' if a in labels else 'numeric'}" for a in attrs] + ["@data"]
    for i in range(n):
        row = [int(rng.integers(0, 2)) if a in labels else int(rng.integers(0, 4)) for a in attrs]
        if sparse:
            lines.append("{" + ",".join(f"{j} {v}" for j, v in enumerate(row) if v) + "}")
        else:
            lines.append(",".join(map(str, row)))
    path = folder / "data.arff"
    path.write_text("\n".join(lines) + "\n")
    if declare == "xml":
        (folder / "data.xml").write_text(
            '<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">'
            + "".join(f'<label name="{a}"></label>' for a in labels) + "</labels>\n")
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=mulan_files())
def test_a_label_subset_leaves_the_other_declared_labels_out(tmp_path_factory, case):
    attrs, labels, chosen, declare, spec, sparse = case
    path = _write(tmp_path_factory.mktemp("arff"), attrs, labels, declare, sparse)
    how = ",".join(chosen) if spec == "names" else list(chosen)
    ds = coreselect.load(str(path), labels=how)
    assert list(ds.label_names) == chosen
    features = [a for a in attrs if a not in labels]
    assert list(ds.feature_names) == features  # no declared label is a feature
    assert ds.metadata.extra.get("labels_left_out", []) == [a for a in labels if a not in chosen]
    kept = coreselect.load(str(path), labels=how, labels_as_features=True)
    assert list(kept.feature_names) == [a for a in attrs if a not in chosen]
    # without a spec the declaration decides alone, and nothing is left out
    full = coreselect.load(str(path))
    assert list(full.label_names) == labels and list(full.feature_names) == features


def test_label_subset_on_emotions_picks_no_label(coredata):
    wanted = ["amazed-suprised", "happy-pleased"]
    ds = coreselect.load("emotions", labels=",".join(wanted))
    assert ds.X.shape[1] == 72 and list(ds.label_names) == wanted
    others = {"relaxing-calm", "quiet-still", "sad-lonely", "angry-aggresive"}
    assert not others & set(ds.feature_names)
    out = subprocess.run([sys.executable, "-m", "coreselect", "select", "emotions", "--labels",
                          ",".join(wanted), "-k", "5", "--json"],
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    assert not others & set(json.loads(out.stdout)["names"])
    with_them = coreselect.load("emotions", labels=",".join(wanted), labels_as_features=True)
    assert others <= set(with_them.feature_names)


def test_labels_as_features_is_refused_where_nothing_is_declared(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("a,b,y\n1,2,0\n3,4,1\n")
    with pytest.raises(DatasetError, match="ARFF files only"):
        coreselect.load(str(csv), labels="y", labels_as_features=True)
    with pytest.raises(DatasetError, match="True or False"):
        coreselect.io.read(str(_write(tmp_path, ["f0", "l0", "l1"], ["l0", "l1"], "xml", False)),
                           labels="l0", labels_as_features="yes")


# ----------------------------------------------------------------- D: label sets as Y
@st.composite
def label_matrices(draw):
    n = draw(st.integers(6, 40))
    L = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 10**6))
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, L)) < draw(st.floats(0.05, 0.9))).astype(np.int8)
    Y[0, 0] = 1  # at least one label occurs
    X = rng.integers(0, draw(st.integers(2, 6)), (n, draw(st.integers(2, 12))))
    names = draw(st.sampled_from(["ints", "strings"]))
    return X, Y, names


@settings(max_examples=40, deadline=None)
@given(label_matrices())
def test_label_sets_select_what_the_binary_matrix_selects(case):
    X, Y, names = case
    occurs = np.flatnonzero(Y.any(axis=0))  # MultiLabelBinarizer: a column per label present
    tag = (lambda j: j) if names == "ints" else (lambda j: f"c{j}")
    sets = [{tag(j) for j in np.flatnonzero(row)} for row in Y]
    k = min(3, X.shape[1])
    for calibration in ("paper", None):
        want = coreselect.select(X, Y[:, occurs], k=k, min_bin_count=1, keep_constant=True,
                                 calibration=calibration)
        got = coreselect.select(X, sets, k=k, min_bin_count=1, keep_constant=True,
                                calibration=calibration)
        np.testing.assert_array_equal(got.selected, want.selected)
        assert got.objective == pytest.approx(want.objective)
    assert got.label_names == [str(tag(j)) for j in occurs]  # sorted labels, as the columns
    fitted = coreselect.GDSSelector(k=k, min_bin_count=1, keep_constant=True).fit(X, sets)
    np.testing.assert_array_equal(fitted.selected_, got.selected)
    import pandas as pd

    as_series = coreselect.select(X, pd.Series(sets), k=k, min_bin_count=1, keep_constant=True)
    np.testing.assert_array_equal(as_series.selected, got.selected)


def test_label_sets_match_multilabel_binarizer():
    from sklearn.preprocessing import MultiLabelBinarizer

    from coreselect.selection.sources import label_sets_to_matrix

    sets = [{0, 2}, {1}, set(), {2, 5}]
    M, classes = label_sets_to_matrix(sets)
    mlb = MultiLabelBinarizer()
    np.testing.assert_array_equal(M, mlb.fit_transform(sets))
    assert classes == list(mlb.classes_)


ragged = st.lists(st.lists(st.integers(0, 1), min_size=0, max_size=4), min_size=2, max_size=8).filter(
    lambda rows: len({len(r) for r in rows}) > 1)


@settings(max_examples=30, deadline=None)
@given(ragged)
def test_ragged_lists_are_label_lists(rows):
    """Issue 32.7: rows of different lengths cannot be a matrix; they are label lists, read
    as MultiLabelBinarizer reads them (they used to be refused as ragged)."""
    from sklearn.preprocessing import MultiLabelBinarizer

    from coreselect.selection.sources import as_label_matrix

    np.testing.assert_array_equal(as_label_matrix(rows, len(rows)),
                                  MultiLabelBinarizer().fit_transform(rows))


@pytest.mark.parametrize("Y", [
    "0110",
    b"0110",
    [["0", "1"], ["1", "0"], ["0", "1"], ["1", "1"]],
    np.array([[1 + 0j, 0], [0, 1], [1, 0], [0, 1]]),
    sp.csr_matrix(np.array([[1, 0], [0, 1], [1, 0], [0, 1]]) * (1 + 0j)),
    [{0}, 1, {0, 1}, set()],            # sets mixed with other values
    [{0, "a"}, {1}, {0}, {"b"}],        # labels that cannot be sorted into columns
])
def test_bad_label_types_are_refused_with_a_typed_error(Y):
    X = np.arange(8).reshape(4, 2)
    with pytest.raises(InputTypeError):
        coreselect.select(X, Y, k=1, min_bin_count=1)


def test_all_empty_label_sets_are_refused():
    with pytest.raises(InputError, match="empty"):
        coreselect.select(np.arange(8).reshape(4, 2), [set()] * 4, k=1, min_bin_count=1)


# ----------------------------------------------------------------- E: COREDATA relative
def test_relative_coredata_from_a_subfolder(coredata, tmp_path):
    """A relative ``$COREDATA`` names the folder it named at its first read: an ``os.chdir``
    afterwards, to a folder where that relative path leads nowhere, does not lose the data."""
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    rel = os.path.relpath(coredata, sub)
    # Deeper than every ".." of rel can climb, under names no path of the data has: from
    # here rel ends inside this temporary tree, where nothing by its name exists.
    elsewhere = tmp_path.joinpath("elsewhere", *["nowhere"] * (len(sub.parts) + 1))
    elsewhere.mkdir(parents=True)
    assert not (elsewhere / rel).exists()  # the old per-call resolution fails from here
    code = ("import os, sys, coreselect; from coreselect.datasets.fetch import coredata_dir; "
            "p = coredata_dir(); assert p.is_absolute(), p; "
            "ds = coreselect.load('mulan/emotions/emotions.arff'); "
            "os.chdir(sys.argv[1]); ds2 = coreselect.load('emotions'); "  # read again after a chdir
            "ds3 = coreselect.load('mulan/emotions/emotions.arff'); "
            "print(ds.X.shape[1], ds2.X.shape[1], ds3.X.shape[1], coredata_dir() == p)")
    out = subprocess.run([sys.executable, "-c", code, str(elsewhere)], cwd=sub,
                         capture_output=True, text=True, env=_env(COREDATA=rel), timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["72", "72", "72", "True"], out.stderr
    cli = subprocess.run([sys.executable, "-m", "coreselect", "select", "emotions", "-k", "2"],
                         cwd=sub, capture_output=True, text=True, env=_env(COREDATA=rel),
                         timeout=300)
    assert cli.returncode == 0, cli.stderr


def test_coredata_is_resolved_against_the_folder_when_read(coredata, tmp_path, monkeypatch):
    from coreselect.datasets.fetch import coredata_dir

    sub = tmp_path / "x"
    sub.mkdir()
    monkeypatch.chdir(sub)
    monkeypatch.setenv("COREDATA", os.path.relpath(coredata, sub))
    assert coredata_dir() == Path(coredata).absolute()
    monkeypatch.setenv("COREDATA", "no-such-folder")
    with pytest.raises(DatasetError, match="not a folder"):
        coredata_dir()


# ----------------------------------------------------------------- issue 32: COREDATA unset
def test_names_resolve_to_shared_data_beside_the_checkout_without_coredata(coredata, tmp_path):
    """The README's test command runs with no variable set: a name then resolves to
    ``../shared/data`` beside the source checkout (the folder conftest.py defaults to), from any
    working folder, in the API and the CLI, with no download. In a checkout with no
    ``../shared/data`` beside it (COREDATA pointing elsewhere) it skips, or fails under CI."""
    from conftest import skip_or_fail

    if not (REPO.parent / "shared" / "data" / "SOURCES.md").is_file():
        skip_or_fail(f"no ../shared/data beside this checkout ({REPO.parent})")
    env = {k: v for k, v in _env().items() if k != "COREDATA"}
    env.update(COREDATA_HOME=str(tmp_path / "empty-cache"),
               COREDATA_MIRROR="http://127.0.0.1:9")  # a download would fail
    code = ("import coreselect; from coreselect.datasets.fetch import coredata_dir; "
            "print(coredata_dir()); print(coreselect.load('emotions').X.shape[1]); "
            "print(coreselect.select('mulan/emotions/emotions.arff', k=3).selected.tolist())")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    where, width, _ = out.stdout.splitlines()
    assert Path(where) == (REPO.parent / "shared" / "data").resolve() and width == "72"
    cli = subprocess.run([sys.executable, "-m", "coreselect", "select", "emotions", "-k", "3",
                          "--json"], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=600)
    assert cli.returncode == 0, cli.stderr
    assert not (tmp_path / "empty-cache").exists()  # nothing was downloaded


def test_ci_runs_the_test_command_without_coredata():
    """CI runs the README's test command as a newcomer does, with no variable set: an export
    of COREDATA in .ci/run hid that the library did not default to ../shared/data."""
    text = (REPO / ".ci" / "run").read_text()
    assert not re.search(r"^\s*(export\s+)?COREDATA=", text, re.M), \
        ".ci/run sets COREDATA; the test command must pass without it"
    assert re.search(r"^export CORESELECT_REQUIRE_DATA=1$", text, re.M)


def test_coredata_unset_empty_and_without_shared_data(tmp_path, monkeypatch):
    from coreselect.datasets import fetch

    monkeypatch.delenv("COREDATA", raising=False)
    assert fetch.coredata_dir() == fetch.default_coredata()
    monkeypatch.setenv("COREDATA", "")  # set but empty: no local copy
    assert fetch.coredata_dir() is None
    monkeypatch.delenv("COREDATA")
    lone = tmp_path / "clone"  # a checkout with nothing beside it
    lone.mkdir()
    monkeypatch.setattr(fetch, "source_checkout", lambda: lone)
    assert fetch.coredata_dir() is None
    (tmp_path / "shared" / "data").mkdir(parents=True)
    assert fetch.coredata_dir() == (tmp_path / "shared" / "data").resolve()
    monkeypatch.setattr(fetch, "source_checkout", lambda: None)  # installed, not a checkout
    assert fetch.coredata_dir() is None


# ----------------------------------------------------------------- issue 17: load()
@pytest.mark.parametrize("bad", [None, 3, 2.5, b"emotions", ["emotions"], object()])
def test_load_refuses_non_paths_with_a_typed_error(bad):
    with pytest.raises(InputTypeError, match="file path or a dataset name"):
        coreselect.load(bad)
