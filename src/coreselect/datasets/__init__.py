"""Built-in and standard datasets: generators, registry, verified download cache, ``load``."""

# Eager, so that `coreselect.datasets.load` is always the function (the submodule of the
# same name would otherwise shadow it once imported). load.py imports nothing heavy.
from coreselect.datasets.load import load


def __getattr__(name: str):
    # Lazy: `import coreselect.datasets` must stay cheap for the CLI.
    if name in ("make_synthesized", "make_sparse_multilabel", "make_extreme_multilabel"):
        from coreselect.datasets import synthetic

        return getattr(synthetic, name)
    if name == "fetch_dataset":
        # Not "fetch": that name is the submodule coreselect.datasets.fetch.
        from coreselect.datasets.fetch import fetch

        return fetch
    if name == "REGISTRY":
        from coreselect.datasets.registry import REGISTRY

        return REGISTRY
    if name == "dataset_info":
        from coreselect.datasets.info import dataset_info

        return dataset_info
    raise AttributeError(name)


__all__ = ["make_synthesized", "make_sparse_multilabel", "make_extreme_multilabel", "load", "fetch_dataset", "REGISTRY", "dataset_info"]
