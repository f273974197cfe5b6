"""coreselect: multi-label feature selection on huge datasets.

Implements and extends Ghadiri & Schmidt, *Distributed Maximization of Submodular plus
Diversity Functions for Multi-label Feature Selection on Huge Datasets* (AISTATS 2019).

The public API::

    coreselect.load(name_or_path)                 -> Dataset
    coreselect.select(data, Y, k=..., ...)        -> SelectionResult   (flat parameters)
    coreselect.GDSSelector(k=..., ...)            scikit-learn selector
    strategy.run(Objective(...), source)          -> SelectionResult
        strategies: AltGreedy(), Greedy(), DistributedGreedy(partitions=..., engine=...),
        RowSharded(row_shards=..., engine=...)
        sources:    InMemorySource(X, Y, Binning(...)), StoreSource(path)
    coreselect.warm_up()                          load the compiled kernels ahead of a fit
    coreselect.errors                             typed exceptions (InputError, ...)
"""

from __future__ import annotations

# The README tells users to catch coreselect.errors.*: it must be there right after
# `import coreselect`. The module is plain Python with no imports, so this costs nothing.
from coreselect import errors  # noqa: E402

# name -> module. The names are imported on first use (PEP 562), not here: `import coreselect`
# and the CLI's --help must not pay for numpy, scipy and scikit-learn (~1-2 s) up front.
_LAZY = {
    "GDSSelector": "coreselect.selector",
    "select": "coreselect.selection",
    "load": "coreselect.datasets.load",
    "Dataset": "coreselect.io.dataset",
    "Objective": "coreselect.selection.spec",
    "Binning": "coreselect.selection.spec",
    "AltGreedy": "coreselect.selection.strategies",
    "Greedy": "coreselect.selection.strategies",
    "DistributedGreedy": "coreselect.selection.strategies",
    "RowSharded": "coreselect.selection.strategies",
    "SelectionResult": "coreselect.selection.strategies",
    "InMemorySource": "coreselect.selection.sources",
    "StoreSource": "coreselect.selection.sources",
    "warm_up": "coreselect.selection",
}

__all__ = sorted(_LAZY) + ["__version__", "errors"]


def __getattr__(name: str):
    if name == "__version__":  # looked up on first use: importlib.metadata costs ~30 ms
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("coreselect")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            value = "0.0.0"
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'coreselect' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return list(__all__)
