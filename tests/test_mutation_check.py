"""`tests/tools/mutation.py --check` can fail: it exits 1 when a mutant no longer applies to
the code (its snippet moved), and passes on the current code (every mutant applies)."""

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
