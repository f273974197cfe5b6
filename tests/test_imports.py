"""Import hygiene: the core and the package import nothing heavy; dir() shows the API."""

from __future__ import annotations

import json
import os
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


def _tiny_arff(tmp_path, suffix: str):
    """A small sparse multi-label ARFF (MEKA header: the last 3 attributes are labels)."""
    import gzip

    rng = __import__("numpy").random.default_rng(0)
    n_feat = 30
    header = [f"@relation 'r: -C -3'"] + [f"@attribute f{i} numeric" for i in range(n_feat)] + [
        f"@attribute y{j} {{0,1}}" for j in range(3)] + ["@data"]
    rows = []
    for _ in range(60):
        cells = [f"{i} {rng.integers(1, 9) / 4}" for i in range(n_feat) if rng.random() < 0.3]
        cells += [f"{n_feat + j} 1" for j in range(3) if rng.random() < 0.4]
        rows.append("{" + ",".join(cells) + "}")
    text = "\n".join(header + rows) + "\n"
    path = tmp_path / f"tiny{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    return path


def _select_statement(path) -> str:
    return ("from coreselect.cli import main\n"
            "try:\n"
            f"    main(['select', {str(path)!r}, '-k', '3', '--json'])\n"
            "except SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code")


@pytest.mark.parametrize("suffix", [".arff", ".arff.gz"])
def test_cli_select_on_a_data_file_imports_nothing_heavy(tmp_path, suffix):
    """``coreselect select FILE`` with default options (a sparse ARFF, plain and gzipped):
    none of scikit-learn, pandas, Dask or matplotlib is imported by the whole run."""
    assert _loaded_after(_select_statement(_tiny_arff(tmp_path, suffix))) == []


def test_cli_select_compiles_nothing_on_a_warm_run(tmp_path):
    """Every compiled kernel a default ``coreselect select FILE`` calls comes from numba's
    on-disk cache on the second run (cache=True on each, and the warm-up and the real calls
    share their signatures): nothing is compiled at start-up."""
    path = _tiny_arff(tmp_path, ".arff")
    code = (_select_statement(path) + "\n"
            "import gc, json\n"
            "from numba.core.registry import CPUDispatcher\n"
            "used = {d.py_func.__qualname__: sum(d.stats.cache_misses.values())\n"
            "        for d in gc.get_objects() if isinstance(d, CPUDispatcher) and d.signatures}\n"
            "print(json.dumps(used))")
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                      text=True, check=True, timeout=300).stdout.splitlines()[-1])
            for _ in range(2)]  # the first run may compile (a fresh checkout) and fill the cache
    assert "discretize_columns" in runs[1] and "add_distance_step" in runs[1]
    assert {name: misses for name, misses in runs[1].items() if misses} == {}


_WARMED_THEN_FIT = """
import gc, json
import numpy as np, scipy.sparse as sp
import coreselect
from numba.core.registry import CPUDispatcher

def loaded():
    # coreselect's kernels only: numba's own overload implementations (np.empty's, ...) may
    # gain a signature when a kernel is loaded beside one the warm-up had to compile
    return {d.py_func.__qualname__: sorted(map(str, d.signatures)) for d in gc.get_objects()
            if isinstance(d, CPUDispatcher) and d.signatures
            and d.py_func.__module__.startswith("coreselect.")}

assert coreselect.warm_up() is True
warmed = loaded()
rng = np.random.default_rng(0)
dense = rng.normal(size=(300, 40))  # numeric: the default is CMIM
sparse = sp.random(2000, 1500, density=0.05, random_state=0, format="csr")  # the greedy
for X in (dense, sparse):
    Y = (rng.random((X.shape[0], 6)) < 0.3).astype(int)
    if sp.issparse(X):  # a first pick of five even bins (most rows non-zero): a step of
        # many cells, on threads
        first = 5 * Y[:, :1] + rng.integers(1, 6, (X.shape[0], 1))
        X = sp.hstack([sp.csr_matrix(first.astype(float)), X], format="csr")
    coreselect.GDSSelector(k=12).fit(X, Y)
coreselect.GDSSelector(k="auto").fit(dense, Y[:dense.shape[0]])  # the inner cross-validation
after = loaded()
print(json.dumps({"new": {k: v for k, v in after.items() if warmed.get(k) != v},
                  "warmed": sorted(warmed)}))
"""


def test_warm_up_loads_every_kernel_a_default_fit_calls():
    """``coreselect.warm_up()`` in a fresh process, then a default fit on dense data (CMIM),
    on sparse data (the greedy) and one with ``k="auto"``: the fits load no kernel, and no
    signature of one, that the warm-up did not load already (so the first fit waits for
    none)."""
    proc = subprocess.run([sys.executable, "-c", _WARMED_THEN_FIT], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert {"add_part", "add_distance_step", "discretize_columns",
            "prefix_step"} <= set(got["warmed"])
    assert got["new"] == {}


@pytest.mark.parametrize("auto_k", [False, True])
def test_the_cli_warm_up_thread_loads_both_defaults_kernels(auto_k):
    """What the CLI runs in a thread while it reads the file (``_warm_up``) loads the kernels
    of both default selections, CMIM's on dense data included, in a fresh process; with
    ``-k auto`` the inner cross-validation's too, and only then."""
    code = ("import gc, json\n"
            "from coreselect.cli.select import _warm_up\n"
            f"_warm_up({auto_k})\n"
            "from numba.core.registry import CPUDispatcher\n"
            "print(json.dumps(sorted(d.py_func.__qualname__ for d in gc.get_objects()\n"
            "                        if isinstance(d, CPUDispatcher) and d.signatures)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    assert {"add_part", "add_distance_step", "discretize_columns"} <= loaded
    assert ("prefix_step" in loaded) == auto_k


def test_warm_up_with_the_numpy_kernels_loads_nothing():
    """With ``CORESELECT_NUMBA=0`` (the numpy kernels) the warm-up says so and does not
    import numba at all."""
    code = ("import sys, coreselect\n"
            "print(coreselect.warm_up(), 'numba' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CORESELECT_NUMBA": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["False", "False"]
