"""Issue 32, point 10: small command-line promises (outputs only under an existing folder,
`datasets fetch` says where its files came from)."""

from __future__ import annotations

import json

import pytest

from coreselect.cli import main


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.mark.parametrize("option", ["--out", "--coverage"])
def test_an_output_under_a_missing_folder_is_one_line(capsys, tmp_path, option):
    """Only the output's own folder is created; a missing folder above it is refused before
    any work, naming it, and nothing is created (no chain of folders from the root)."""
    target = tmp_path / "missing" / "dir" / "x.json"
    code, out, err = run(capsys, "select", "synthesized", "-k", 2, option, target)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"the folder {tmp_path / 'missing'} does not exist" in err
    assert not (tmp_path / "missing").exists()
    code, out, err = run(capsys, "evaluate", "synthesized", "--methods", "random", "--k", 2,
                         "--folds", 2, "--out", tmp_path / "missing" / "report")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "does not exist" in err, err
    assert not (tmp_path / "missing").exists()
    # its own folder is made
    code, out, err = run(capsys, "select", "synthesized", "-k", 2, "--out",
                         tmp_path / "new" / "x.json", "--json")
    assert code == 0, err
    assert json.loads((tmp_path / "new" / "x.json").read_text())["selected"] == \
        json.loads(out)["selected"]


def test_output_folder_rule_in_the_library(tmp_path):
    from coreselect.errors import OutputError
    from coreselect.io.files import atomic_path, output_set

    with pytest.raises(OutputError, match="does not exist"):
        with output_set([tmp_path / "a" / "b" / "x.txt"]):
            pass
    with pytest.raises(OutputError, match="does not exist"):
        with atomic_path(tmp_path / "a" / "b" / "x.txt"):
            pass
    assert not (tmp_path / "a").exists()
    with atomic_path(tmp_path / "a" / "x.txt") as tmp:
        tmp.write_text("ok")
    assert (tmp_path / "a" / "x.txt").read_text() == "ok"


def test_fetch_says_it_used_the_local_copy(capsys, monkeypatch, coredata):
    monkeypatch.setenv("COREDATA", str(coredata))
    code, out, err = run(capsys, "datasets", "fetch", "emotions")
    assert code == 0, err
    assert out.strip() == str(coredata / "mulan" / "emotions" / "emotions.arff")
    assert err.strip() == (f"coreselect: emotions: used 1 file(s) from the local copy in "
                           f"$COREDATA ({coredata}); nothing downloaded")
    code, out, err = run(capsys, "datasets", "fetch", "emotions", "-q")
    assert code == 0 and err == ""
