"""Import hygiene: the core and the package import nothing heavy; dir() shows the API."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("dask", "distributed", "matplotlib", "sklearn", "pandas")


def _loaded_after(statement: str) -> list[str]:
    code = (f"import sys, json\n{statement}\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("statement", [
    "import coreselect",
    "import coreselect.core",
    # the library call the CLI uses: no scikit-learn, no Dask until an engine needs it
    "import coreselect.selection",
    "import coreselect.cli.select",
])
def test_no_heavy_imports(statement):
    assert _loaded_after(statement) == []


def test_dir_lists_the_public_api():
    import coreselect

    names = dir(coreselect)
    for name in ("GDSSelector", "select", "load", "Dataset", "Objective", "Binning",
                 "AltGreedy", "Greedy", "DistributedGreedy", "InMemorySource", "StoreSource",
                 "SelectionResult", "__version__"):
        assert name in names
        assert getattr(coreselect, name) is not None
    with pytest.raises(AttributeError):
        coreselect.no_such_name  # noqa: B018
