"""coreselect: multi-label feature selection on huge datasets.

Implements and extends Ghadiri & Schmidt, *Distributed Maximization of Submodular plus
Diversity Functions for Multi-label Feature Selection on Huge Datasets* (AISTATS 2019).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("coreselect")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["GDSSelector", "load", "Dataset", "__version__"]


def __getattr__(name: str):
    # Lazy re-exports keep `import coreselect` (and the CLI's --help) fast.
    if name == "GDSSelector":
        from coreselect.selector import GDSSelector

        return GDSSelector
    if name == "load":
        from coreselect.datasets.load import load

        return load
    if name == "Dataset":
        from coreselect.io.dataset import Dataset

        return Dataset
    raise AttributeError(name)
