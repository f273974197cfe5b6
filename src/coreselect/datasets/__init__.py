"""Built-in and standard datasets: generators, registry, verified download cache, ``load``."""

from coreselect.datasets.synthetic import make_synthesized

__all__ = ["make_synthesized"]
