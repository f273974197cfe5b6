"""`tests/tools/mutation.py --check` can fail: it exits 1 when a mutant no longer applies to
the code (its snippet moved), and passes on the current code (every mutant applies). The
temporary copy holds the docs the tests read, and a run names its first failing test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def mutation(monkeypatch):
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "tests" / "tools" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts benchmarks/ first
    monkeypatch.setitem(sys.modules, "mutation_script", module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["mutation.py", "--check"])
    return module


def test_check_passes_on_the_current_code(mutation, capsys):
    with pytest.raises(SystemExit) as exc:
        mutation.main()
    out = capsys.readouterr().out
    assert exc.value.code == 0, [line for line in out.splitlines() if line.startswith("STALE")]
    n = len(mutation.MUTANTS)
    assert out.splitlines()[-1] == f"{n} of {n} mutants apply, 0 stale"


def test_check_fails_on_a_stale_mutant(mutation, capsys, monkeypatch):
    stale = mutation.Mutant("selection/__init__.py", "text the code does not hold", "x", "a stale one")
    monkeypatch.setattr(mutation, "MUTANTS", mutation.MUTANTS + [stale])
    with pytest.raises(SystemExit) as exc:
        mutation.main()
    out = capsys.readouterr().out
    assert exc.value.code == 1 and "STALE selection/__init__.py: a stale one" in out
    assert out.splitlines()[-1].endswith("mutants apply, 1 stale")


def test_the_copy_holds_the_docs_the_tests_read_not_the_results(mutation):
    import shutil

    copy = mutation.make_copy(ROOT)
    try:
        assert (copy / "docs" / "options.md").is_file()  # tests/test_option_matrix.py reads it
        assert not (copy / "docs" / "results").exists()
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)


def test_a_run_names_its_first_failing_test_and_the_counts(mutation, tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_probe.py").write_text(
        "def test_passes():\n    pass\n\n\ndef test_fails():\n    assert 1 == 2\n\n\n"
        "def test_not_reached():\n    pass\n")
    outcome, _, _, killer, counts = mutation.run_tests(tmp_path, ["tests/test_probe.py"], 120, 1)
    assert (outcome, killer, counts) == ("fail", "tests/test_probe.py::test_fails", "1 failed, 1 passed")
    (tmp_path / "tests" / "test_probe.py").write_text("def test_passes():\n    pass\n")
    outcome, _, _, killer, counts = mutation.run_tests(tmp_path, ["tests/test_probe.py"], 120, 1)
    assert (outcome, killer, counts) == ("pass", "", "1 passed")
