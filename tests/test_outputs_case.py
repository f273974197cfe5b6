"""The letter-case rule of label XML files (issue 17).

The rule: the label XML of ``X.arff`` is ``X.xml`` (or the stem without -train/-test/-sparse)
matched **byte for byte** against the folder's listing, never case-folded. A name that
differs only in case is never taken silently: reading refuses it with a message naming it
(pass it with --labels), and an ARFF export refuses to write ``X.xml`` beside a case variant
(on a case-insensitive filesystem the two are one file). The answers must be the same on a
case-sensitive filesystem and on a simulated case-insensitive one.
"""

from __future__ import annotations

import os
import pathlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coreselect.errors import DatasetError
from coreselect.io import from_arrays, read, write
from coreselect.io.arff import find_label_xml, label_xml_text, write_arff


def _ds(labels=("p", "q")):
    X = np.arange(12, dtype=float).reshape(4, 3) % 3
    Y = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    return from_arrays(X, Y, feature_names=["a", "b", "c"], label_names=list(labels))


def _case_variants(name: str) -> st.SearchStrategy[str]:
    letters = [i for i, ch in enumerate(name) if ch.lower() != ch.upper()]
    return st.sets(st.sampled_from(letters), min_size=1).map(
        lambda flip: "".join(ch.swapcase() if i in flip else ch for i, ch in enumerate(name)))


@pytest.fixture(params=["case-sensitive", "case-insensitive"])
def fs(request, monkeypatch):
    """The filesystem's answer to exists()/is_file(): as it is, or folded as on macOS/Windows."""
    if request.param == "case-insensitive":
        real_exists, real_is_file = pathlib.Path.exists, pathlib.Path.is_file

        def folded(self: Path) -> Path | None:
            if real_exists(self):
                return self
            try:
                for e in os.listdir(self.parent):
                    if e.lower() == self.name.lower():
                        return self.parent / e
            except OSError:
                pass
            return None

        monkeypatch.setattr(pathlib.Path, "exists", lambda self, **kw: folded(self) is not None)
        monkeypatch.setattr(pathlib.Path, "is_file",
                            lambda self: (f := folded(self)) is not None and real_is_file(f))
    return request.param


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stem=st.sampled_from(["emo", "Emotions", "corel5k-train", "scene_test"]), data=st.data())
def test_lookup_is_exact_or_refuses(tmp_path_factory, fs, stem, data):
    folder = tmp_path_factory.mktemp("xml")
    (folder / f"{stem}.arff").write_text("")
    base = stem.split("-")[0].split("_")[0]
    exact = data.draw(st.booleans(), label="exact beside")
    variant = data.draw(_case_variants(f"{base}.xml"), label="case variant")
    (folder / variant).write_text(label_xml_text(["other"]))
    if exact:
        (folder / f"{base}.xml").write_text(label_xml_text(["mine"]))
    if exact:
        assert find_label_xml(folder / f"{stem}.arff").name == f"{base}.xml"
    else:
        with pytest.raises(DatasetError, match="letter case") as info:
            find_label_xml(folder / f"{stem}.arff")
        assert variant in str(info.value)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_export_refuses_to_write_beside_a_case_variant(tmp_path_factory, fs, data):
    folder = tmp_path_factory.mktemp("exp")
    variant = data.draw(_case_variants("emo.xml"), label="variant")
    same_labels = data.draw(st.booleans(), label="variant names the same labels")
    (folder / variant).write_text(label_xml_text(["p", "q"] if same_labels else ["someone", "else"]))
    before = (folder / variant).read_bytes()
    with pytest.raises(DatasetError, match="letter case"):
        write(_ds(), folder / "emo.arff")
    assert sorted(os.listdir(folder)) == [variant]
    assert (folder / variant).read_bytes() == before
    # Naming the XML elsewhere (or none) works, and the export reads back with its own labels.
    write_arff(_ds(), folder / "emo.arff", xml=folder / "labels-of-emo.xml")
    ds = read(folder / "emo.arff", labels=folder / "labels-of-emo.xml")
    assert ds.label_names == ["p", "q"]


def test_export_beside_a_case_variant_reads_back_its_own_labels(tmp_path):
    """The campaign's case: emo.arff exported beside another dataset's Emo.xml."""
    (tmp_path / "Emo.xml").write_text(label_xml_text(["a"]))  # another dataset's
    write(_ds(), tmp_path / "elsewhere.arff")  # an export with its own emo-less name is fine
    assert read(tmp_path / "elsewhere.arff").label_names == ["p", "q"]
    (tmp_path / "emo.xml").write_text(label_xml_text(["p", "q"]))  # exact beside: it wins
    write_arff(_ds(), tmp_path / "emo.arff", xml=False)
    assert read(tmp_path / "emo.arff").label_names == ["p", "q"]
    (tmp_path / "emo.xml").unlink()
    with pytest.raises(DatasetError, match="Emo.xml"):  # never Emo.xml's labels silently
        read(tmp_path / "emo.arff")


def test_cli_export_refuses_before_the_selection(tmp_path, monkeypatch, capsys):
    from coreselect.cli import main

    write(_ds(), tmp_path / "d.csv")
    (tmp_path / "EMO.xml").write_text(label_xml_text(["x", "y"]))
    import coreselect.selection as selection

    monkeypatch.setattr(selection, "select", lambda *a, **k: pytest.fail("selection ran"))
    with pytest.raises(SystemExit) as exc:
        main(["select", str(tmp_path / "d.csv"), "--labels", "2", "-k", "2",
              "--export", str(tmp_path / "emo.arff")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "EMO.xml" in err, err
    assert sorted(os.listdir(tmp_path)) == ["EMO.xml", "d.csv"]
