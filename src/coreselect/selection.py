"""One call from raw arrays to a selection: validation, discretization, relevance, and the
chosen mode (centralized AltGreedy, or Algorithm 3 distributed/streaming).

``GDSSelector.fit`` and the ``select`` command both call :func:`select_features`. It imports
nothing from scikit-learn, so the command line starts fast.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from coreselect.core.discretize import STRATEGIES
from coreselect.core.entropy import RELEVANCES
from coreselect.core.problem import Problem, centralized
from coreselect.errors import InputError

MODES = ("centralized", "distributed", "streaming")
ENGINES = ("local", "dask")
BACKENDS = ("auto", "numba", "numpy")


@dataclass
class Selection:
    """A selection and what it is worth.

    ``selected`` holds column indices in selection order; ``objective``, ``relevance`` and
    ``diversity`` are ``h``, ``g`` and ``D``; ``feature_relevance`` is ``sum_l MI(x, l)`` of
    each selected feature; ``pair_distances`` the distances among them (selection order);
    ``result`` the engine's full result; ``timings`` seconds per stage.
    """

    selected: np.ndarray
    objective: float
    relevance: float
    diversity: float
    feature_relevance: np.ndarray
    pair_distances: np.ndarray
    result: Any
    timings: dict
    seconds: float


def check_parameters(*, k, lam, p, relevance, n_bins, strategy, min_bin_count, mode,
                     partitions, coreset_size, engine, n_workers, backend) -> None:
    """Raise :class:`InputError` with a one-line reason for any parameter out of range."""

    def need(ok: bool, message: str) -> None:
        if not ok:
            raise InputError(message)

    def is_int(v) -> bool:
        return isinstance(v, Integral) and not isinstance(v, bool)

    need(is_int(k) and k >= 1, f"k must be an integer >= 1, got {k!r}")
    need(isinstance(lam, Real) and 0.0 <= lam <= 1.0, f"lam must be in [0, 1], got {lam!r}")
    need(is_int(p) and p >= 1, f"p must be an integer >= 1, got {p!r}")
    need(relevance in RELEVANCES, f"relevance must be one of {RELEVANCES}, got {relevance!r}")
    need(is_int(n_bins) and n_bins >= 2, f"n_bins must be an integer >= 2, got {n_bins!r}")
    need(strategy in STRATEGIES, f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    need(is_int(min_bin_count) and min_bin_count >= 1,
         f"min_bin_count must be an integer >= 1, got {min_bin_count!r}")
    need(mode in MODES, f"mode must be one of {MODES}, got {mode!r}")
    need(partitions == "auto" or (is_int(partitions) and partitions >= 1),
         f"partitions must be 'auto' or an integer >= 1, got {partitions!r}")
    need(coreset_size is None or (is_int(coreset_size) and coreset_size >= 1),
         f"coreset_size must be an integer >= 1, got {coreset_size!r}")
    need(engine in ENGINES, f"engine must be one of {ENGINES}, got {engine!r}")
    need(n_workers is None or (is_int(n_workers) and n_workers >= 1),
         f"n_workers must be an integer >= 1, got {n_workers!r}")
    need(backend in BACKENDS, f"backend must be one of {BACKENDS}, got {backend!r}")


def check_features(X) -> np.ndarray | sp.spmatrix:
    """A 2-D numeric dense array or CSR/CSC matrix with at least two samples."""
    if sp.issparse(X):
        X = X.tocsr() if X.format not in ("csr", "csc") else X
    else:
        try:
            X = np.asarray(X)
            if X.dtype.kind not in "biuf":
                X = X.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError("the features must be numeric") from None
    if X.ndim != 2:
        raise InputError(f"the features must be a 2-D matrix, got shape {X.shape}")
    if X.shape[0] < 2:
        raise InputError(f"need at least 2 samples, got {X.shape[0]} sample(s)")
    if X.shape[1] < 1:
        raise InputError("there are no feature columns")
    return X


def as_label_matrix(Y, n_samples: int):
    """A binary (n_samples, n_labels) matrix from a label matrix or a 1-D class vector
    (one binary label per class; one label for two classes)."""
    if Y is None:
        raise InputError("no labels: GDSSelector requires y to be passed, but the target y is None")
    if sp.issparse(Y):
        Y = sp.csc_matrix(Y)
    else:
        Y = np.asarray(Y)
        if Y.ndim == 1:
            if Y.dtype.kind == "f" and not np.all(np.isfinite(Y)):
                raise InputError("the labels contain NaN or infinite values")
            classes, y = np.unique(Y, return_inverse=True)
            if classes.size > 2:
                Y = np.eye(classes.size, dtype=np.int8)[y]
            else:
                Y = (y == classes.size - 1).astype(np.int8)[:, None]
        elif Y.ndim != 2:
            raise InputError(f"labels must be a 1-D or 2-D array, got shape {Y.shape}")
    if Y.shape[0] != n_samples:
        raise InputError(f"X has {n_samples} samples but the labels have {Y.shape[0]}")
    if Y.shape[1] == 0:
        raise InputError("there are no label columns")
    return Y


def select_features(
    X,
    Y,
    *,
    k: int = 10,
    lam: float = 0.5,
    p: int = 10,
    relevance: str = "mi",
    n_bins: int = 5,
    strategy: str = "auto",
    min_bin_count: int = 10,
    keep_constant: bool = False,
    mode: str = "centralized",
    partitions: str | int = "auto",
    coreset_size: int | None = None,
    engine: str = "local",
    n_workers: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
    random_state: Any = None,
    backend: str = "auto",
    progress: Callable[[str, int, int], None] | None = None,
) -> Selection:
    """Select ``k`` columns of ``X`` for the binary labels ``Y``; see :class:`GDSSelector`
    for the parameters. Raises :class:`InputError` on bad data or parameters."""
    check_parameters(k=k, lam=lam, p=p, relevance=relevance, n_bins=n_bins, strategy=strategy,
                     min_bin_count=min_bin_count, mode=mode, partitions=partitions,
                     coreset_size=coreset_size, engine=engine, n_workers=n_workers,
                     backend=backend)
    X = check_features(X)
    labels = as_label_matrix(Y, X.shape[0])
    start = time.perf_counter()
    problem = Problem.build(X, labels, k=k, lam=lam, p=p, relevance=relevance, n_bins=n_bins,
                            strategy=strategy, min_bin_count=min_bin_count,
                            keep_constant=keep_constant)
    if mode == "centralized":
        callback = None
        if progress is not None:
            def callback(done: int, total: int) -> None:
                progress("select", done, total)
        result = centralized(problem, backend=backend, callback=callback)
    else:
        from coreselect.distributed import select_distributed

        result = select_distributed(
            problem, mode=mode, partitions=partitions, coreset_size=coreset_size,
            engine=engine, n_workers=n_workers, client=client, scheduler=scheduler,
            random_state=random_state, backend=backend, progress=progress,
        )
    selected = np.asarray(result.selected, dtype=np.int64)
    return Selection(
        selected=selected,
        objective=float(result.objective),
        relevance=float(result.relevance),
        diversity=float(result.diversity),
        feature_relevance=problem.relevance[problem.positions_of(selected)].sum(axis=1),
        pair_distances=np.asarray(result.pair_distances),
        result=result,
        timings={**problem.timings, "select": float(result.seconds)},
        seconds=time.perf_counter() - start,
    )
