"""No output ever replaces an input (issue 17, "Data loss"): generated, not single examples.

Every file a run reads is an input, named or found: the data file, the label XML found beside
an ARFF file, a ``--labels`` file, every file of a column store, and for a dataset given by
name the files it resolves to in ``$COREDATA`` and in the download cache. The generators
below vary which input is hit, how the output path reaches it (the same path, ``..``,
absolute, a symbolic link, a hard link), which option writes it, and which command runs;
each case must exit 2 before any work with the input byte for byte as it was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coreselect.cli import main
from coreselect.datasets.inputs import input_files
from coreselect.io import from_arrays, write

FAST = settings(max_examples=30, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _run(capsys, *args) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    return exc.value.code, capsys.readouterr().err


def _dataset(n=30, d=6, L=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, d)).astype(float)
    Y = (X[:, :L] > 0).astype(int)
    return from_arrays(X, Y, feature_names=[f"f{i}" for i in range(d)], label_names=[f"y{j}" for j in range(L)])


def _make_input(folder: Path, fmt: str) -> tuple[list[str], dict[str, Path]]:
    """The DATA arguments of a run on ``fmt`` data in ``folder``, and its input files by role."""
    ds = _dataset()
    if fmt == "arff":  # labels from the XML found beside (never named)
        write(ds, folder / "d.arff")
        return ["d.arff"], {"data": folder / "d.arff", "xml": folder / "d.xml"}
    if fmt == "arff-labels":  # labels from an XML named with --labels
        write(ds, folder / "d.arff", xml=folder / "lab.xml")
        return ["d.arff", "--labels", "lab.xml"], {"data": folder / "d.arff", "xml": folder / "lab.xml"}
    if fmt == "csv":
        write(ds, folder / "d.csv")
        return ["d.csv", "--labels", "2"], {"data": folder / "d.csv"}
    if fmt == "libsvm":
        write(ds, folder / "d.svm")
        return ["d.svm"], {"data": folder / "d.svm"}
    raise AssertionError(fmt)


def _alias(folder: Path, target: Path, how: str, tag: str) -> Path:
    """A path that reaches ``target`` another way."""
    if how == "same":
        return Path(target.name)
    if how == "absolute":
        return target.resolve()
    if how == "dotdot":
        (folder / "sub").mkdir(exist_ok=True)
        return Path("sub") / ".." / target.name
    link = folder / f"link-{tag}{''.join(target.suffixes)}"
    if how == "symlink":
        link.symlink_to(target)
    elif how == "hardlink":
        os.link(target, link)
    return Path(link.name)


def _bytes(paths) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


@FAST
@given(fmt=st.sampled_from(["arff", "arff-labels", "csv", "libsvm"]),
       role=st.sampled_from(["data", "xml"]),
       how=st.sampled_from(["same", "absolute", "dotdot", "symlink", "hardlink"]),
       option=st.sampled_from(["--out", "--coverage", "--export"]),
       mode=st.sampled_from(["centralized", "rows"]))
def test_select_never_writes_over_an_input(tmp_path_factory, monkeypatch, capsys, fmt, role, how, option, mode):
    folder = tmp_path_factory.mktemp("sel")
    monkeypatch.chdir(folder)
    data_args, inputs = _make_input(folder, fmt)
    victim = inputs.get(role, inputs["data"])
    out = _alias(folder, victim, how, "o")
    before = _bytes(inputs.values())
    code, err = _run(capsys, "select", *data_args, "-k", "2", "--mode", mode, option, out)
    assert code == 2, err
    assert "input" in err and err.count("\n") == 1, err
    assert _bytes(inputs.values()) == before
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


@FAST
@given(how=st.sampled_from(["same", "absolute", "symlink", "hardlink"]),
       option=st.sampled_from(["--out", "--coverage"]),
       which=st.sampled_from(["store.json", "tile"]))
def test_select_never_writes_over_a_store_file(tmp_path_factory, monkeypatch, capsys, how, option, which):
    from coreselect.store import build_store

    folder = tmp_path_factory.mktemp("st")
    monkeypatch.chdir(folder)
    ds = _dataset()
    build_store(ds.X, ds.Y, folder / "store", block_size=3, label_names=ds.label_names)
    files = sorted(p for p in (folder / "store").rglob("*") if p.is_file())
    victim = folder / "store" / "store.json" if which == "store.json" else \
        next(p for p in files if p.name != "store.json")
    if how == "same":
        out = victim.relative_to(folder)
    else:
        out = _alias(folder, victim, how, "s")
    before = _bytes(files)
    code, err = _run(capsys, "select", "store", "-k", "2", option, out)
    assert code == 2, err
    assert _bytes(files) == before


# --- a dataset given by name: resolved through $COREDATA and the cache before the check -------

def _emotions(coredata: Path, root: Path) -> Path:
    """A copy of emotions under ``root`` (mode 0644: a read-only copy would be refused anyway)."""
    for name in ("emotions.arff", "emotions.xml"):
        (root / "mulan" / "emotions").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(coredata / "mulan" / "emotions" / name, root / "mulan" / "emotions" / name)
    return root / "mulan" / "emotions"


@pytest.mark.parametrize("where", ["coredata", "cache", "to-download"])
@pytest.mark.parametrize("data", ["emotions", "mulan/emotions/emotions.arff"])
@pytest.mark.parametrize("victim", ["emotions.arff", "emotions.xml"])
@pytest.mark.parametrize("option", ["--out", "--export"])
def test_a_name_is_resolved_before_the_output_check(tmp_path, monkeypatch, capsys, coredata, where, data,
                                                    victim, option):
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setenv("COREDATA_HOME", str(cache))
    monkeypatch.setenv("COREDATA_MIRROR", "file:///nonexistent")  # never the network
    if where == "coredata":
        folder = _emotions(coredata, tmp_path / "data")
        monkeypatch.setenv("COREDATA", str(tmp_path / "data"))
    else:
        monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
        folder = cache / "mulan" / "emotions"
        if where == "cache":
            _emotions(coredata, cache)
    target = folder / victim
    before = target.read_bytes() if target.exists() else None
    if where == "to-download" and data.startswith("mulan/"):
        data = "emotions"  # a registry file path that is nowhere yet is the same download
    code, err = _run(capsys, "select", data, "-k", "2", option, target)
    assert code == 2, err
    assert "input" in err, err
    assert (target.read_bytes() if target.exists() else None) == before


def test_input_files_follow_the_loader(tmp_path, monkeypatch, coredata):
    """input_files() names exactly the files load() then reads (metadata.files_read)."""
    import coreselect

    copy = _emotions(coredata, tmp_path / "data")
    monkeypatch.setenv("COREDATA", str(tmp_path / "data"))
    monkeypatch.setenv("COREDATA_HOME", str(tmp_path / "cache"))
    for data in ("emotions", "mulan/emotions/emotions.arff", str(copy / "emotions.arff")):
        found, later = input_files(data)
        read = coreselect.load(data).metadata.files_read
        assert {Path(p).resolve() for p in read} <= {p.resolve() for p in found}, (data, read, found)
        assert later == [p for p in later if not p.exists()]


# --- evaluate: its report files are outputs, DATA an input -----------------------------------

@FAST
@given(how=st.sampled_from(["same-folder", "symlink", "hardlink"]),
       name=st.sampled_from(["results.csv", "summary.md", "macro_f1.png"]))
def test_evaluate_never_writes_over_its_input(tmp_path_factory, monkeypatch, capsys, how, name):
    folder = tmp_path_factory.mktemp("ev")
    monkeypatch.chdir(folder)
    (folder / "ev").mkdir()
    if how == "same-folder":  # `evaluate results.csv --out .`
        data = folder / "results.csv"
        write(_dataset(), data)
        out_dir = "."
    else:
        data = folder / "d.csv"
        write(_dataset(), data)
        (folder / "ev" / name).symlink_to(data) if how == "symlink" else os.link(data, folder / "ev" / name)
        out_dir = "ev"
    before = data.read_bytes()
    code, err = _run(capsys, "evaluate", data.name, "--labels", "2", "--methods", "gds", "--k", "2",
                     "--folds", "2", "--out", out_dir, "--quiet")
    assert code == 2, err
    assert "input" in err
    assert data.read_bytes() == before


def test_store_build_and_fetch_never_write_over_an_input(tmp_path, monkeypatch, capsys, coredata):
    monkeypatch.chdir(tmp_path)
    data_args, inputs = _make_input(tmp_path, "arff")
    before = _bytes(inputs.values())
    for target in (inputs["xml"], tmp_path / "link-dir"):
        if target.name == "link-dir":
            target.symlink_to(inputs["data"])
        code, err = _run(capsys, "store", "build", *data_args, target, "--quiet")
        assert code == 2, err
    assert _bytes(inputs.values()) == before
    # datasets fetch --force with the cache on $COREDATA: the download would replace the copy.
    copy = _emotions(coredata, tmp_path / "data")
    monkeypatch.setenv("COREDATA", str(tmp_path / "data"))
    monkeypatch.setenv("COREDATA_MIRROR", "file:///nonexistent")
    before = _bytes([copy / "emotions.arff", copy / "emotions.xml"])
    for cache in (tmp_path / "data", tmp_path / "linked-cache"):
        if cache.name == "linked-cache":
            (cache / "mulan" / "emotions").mkdir(parents=True)
            (cache / "mulan" / "emotions" / "emotions.xml").symlink_to(copy / "emotions.xml")
        monkeypatch.setenv("COREDATA_HOME", str(cache))
        code, err = _run(capsys, "datasets", "fetch", "emotions", "--force", "--quiet")
        assert code == 2 and "input" in err, err
    assert _bytes([copy / "emotions.arff", copy / "emotions.xml"]) == before
