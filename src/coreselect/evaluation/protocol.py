"""The evaluation protocol of the paper (Section 5): k-fold cross-validation of selectors.

For every fold, every method and every number of features ``k``:

1. the selector is fit on the **training fold only** (no test row is ever seen);
2. the evaluator is fit on the training fold reduced to the selected features: BRkNN-b
   (:class:`~coreselect.evaluation.brknn.BRkNNb`, 5 neighbours; the paper's) or binary-relevance
   logistic regression (:class:`~coreselect.evaluation.linear.BRLogistic`) or the sparse
   cosine kNN scorer (:class:`~coreselect.evaluation.sparse_knn.SparseKNN`, 10⁵ labels);
3. the measures are computed on the test fold: by default the paper's five (on 0/1
   predictions); on request the ranking measures P@k, nDCG@k, PSP@k, PSnDCG@k (on the
   evaluator's scores: BRkNN-b's confidences, the logistic models' probabilities, SparseKNN's
   weighted votes; propensities from the training fold's labels).

Several evaluators can score the same selections in one run (one selection per cell).

The full-feature reference (method ``all``): the evaluator trained on every feature,
once per fold (its rows have ``k`` = the number of features), with the same measures; every
row records the evaluator's ``fit_seconds`` and ``predict_seconds``, so a selection's score
and training time can be read as a fraction of the full model's (:func:`full_reference`). The
rule that leaves it out: before any fit, the full model's memory is estimated as
:data:`FULL_MODEL_COPIES` times the bytes of the training fold's feature matrix as stored
(dense: 8 per cell; sparse: 12 per non-zero plus the row pointers); when that exceeds the
budget (``memory_budget``, default half the memory free at the start), the ``all`` rows are
not computed and ``df.attrs["notes"]`` says so in one line.

Stability: the selections of every method and ``k`` on the folds are compared in
pairs (:func:`selection_stability`: the mean Jaccard index and Kuncheva's consistency index);
the table is ``df.attrs["stability"]`` (records: ``method, k, jaccard, kuncheva, folds``).

A *ranker* (an estimator whose class sets ``is_ranker = True``, i.e. the baselines) is fit
once per fold with the largest ``k`` and its ranking prefix is reused for every smaller ``k``.
The greedy selectors (``cgds``, ``dgds``) are refit from scratch for every ``k``: their
selection for a smaller ``k`` is not assumed to be a prefix (for ``dgds`` the random
partition also changes), as in the paper.
"""

from __future__ import annotations

import contextlib
import functools
import math
import multiprocessing
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.model_selection import KFold

from coreselect.selection.autok import auto_cap
from coreselect.errors import InputError
from coreselect.evaluation.brknn import BRkNNb
from coreselect.evaluation.measures import MEASURES
from coreselect.evaluation.ranking import RANKING_MEASURES, is_ranking_measure, ranking_measures

__all__ = [
    "METHOD_NAMES",
    "GREEDY_METHODS",
    "RESULT_COLUMNS",
    "parse_k",
    "parse_values",
    "method_factories",
    "make_folds",
    "run_protocol",
    "run_lambda_sweep",
    "EVALUATORS",
    "make_evaluator",
    "ALL_MEASURES",
    "check_measures",
    "FULL_METHOD",
    "full_reference",
    "selection_stability",
    "kuncheva_index",
    "jaccard_index",
    "full_model_bytes",
]

#: a method factory: (k, seed) -> unfitted selector with fit(X, Y) and selected_
MethodFactory = Callable[[int, int], Any]
#: progress callback: (cells done so far, total cells)
Progress = Callable[[int, int], None]

GREEDY_METHODS = ("gds", "cgds", "dgds")
METHOD_NAMES = ("gds", "cgds", "dgds", "br-ig", "lp-ig", "br-rf", "lp-rf", "br-chi2", "random",
                "pmu", "mdmr", "d2f", "scls", "lrfs", "lsmfs", "mlsmfs", "ppt-mi", "igmf",
                "atr", "max-chi2", "l1", "trees", "gds-tuned", "all")
#: GDS whose objective's form the training fold chooses (coreselect.tuning)
TUNED_METHOD = "gds-tuned"
#: the full-feature reference: the evaluator on every feature (not a selector)
FULL_METHOD = "all"
#: the full model's memory estimate, in copies of the training fold's feature matrix (the
#: fold itself, the evaluator's scaled copy, the solver's or distance code's working copy,
#: the test rows' copy)
FULL_MODEL_COPIES = 4
RESULT_COLUMNS = ["method", "k", "fold", "measure", "value", "select_seconds", "fit_seconds",
                  "predict_seconds"]
EVALUATORS = ("brknn", "linear", "sparse-knn")
#: every measure the protocol can report, in the order of files and plots
ALL_MEASURES = tuple(MEASURES) + RANKING_MEASURES

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


#: Most values a range may expand to (checked before expanding it).
MAX_RANGE_VALUES = 10_000


def _range(start: float, stop: float, step: float) -> list[float]:
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise InputError(f"bad range {start}:{stop}:{step} (values must be finite)")
    if step <= 0 or stop < start:
        raise InputError(f"bad range {start}:{stop}:{step} (need step > 0 and start <= stop)")
    count = math.floor((stop - start) / step + 1e-9) + 1
    if count > MAX_RANGE_VALUES:
        raise InputError(f"range {start:g}:{stop:g}:{step:g} has {count:,} values, more than "
                         f"{MAX_RANGE_VALUES:,}")
    n = int(count)
    return [start + i * step for i in range(n)]


def parse_values(spec: str) -> list[float]:
    """Parse ``"a,b,c"``, ``"start:stop:step"`` (stop included) or ``"a,b,...,z"``.

    ``"0,0.1,...,1"`` expands with the step ``b - a``. Values are rounded to 10 decimals.
    """
    text = str(spec).strip().replace(" ", "")
    if not text:
        raise InputError("empty list of values")
    try:
        if ":" in text:
            parts = [float(p) for p in text.split(":")]
            if len(parts) == 2:
                parts.append(1.0)
            if len(parts) != 3:
                raise ValueError
            vals = _range(*parts)
        elif "..." in text:
            m = re.fullmatch(rf"({_NUM}),({_NUM}),(?:\.\.\.|…),({_NUM})", text)
            if not m:
                raise ValueError
            a, b, z = (float(g) for g in m.groups())
            vals = _range(a, z, b - a)
        else:
            vals = [float(p) for p in text.split(",")]
    except InputError:  # a range's own message says what is wrong
        raise
    except (ValueError, TypeError):
        raise InputError(f"cannot parse {spec!r}: use a list '10,20,50' or a range '10:100:10'") from None
    return [round(v, 10) for v in vals]


#: Methods that take ``k="auto"`` themselves (with every ``gds-CALIBRATION``).
AUTO_K_METHODS = ("gds", "cgds")


def parse_k(spec: str | Iterable[int]) -> list:
    """Parse the ``--k`` option: ``"10,20,50"`` or ``"10:100:10"``; sorted, unique, >= 1; or
    ``"auto"`` (``["auto"]``: each selection's k is chosen on the training fold by
    :mod:`coreselect.selection.autok`: a GDS method itself, any other over its ranking)."""
    if spec == "auto" or list(spec) == ["auto"]:
        return ["auto"]
    vals = list(spec) if not isinstance(spec, str) else parse_values(spec)
    out = []
    for v in vals:
        if not math.isfinite(float(v)) or float(v) != int(float(v)) or int(v) < 1:
            raise InputError(f"numbers of features must be positive integers, got {v!r}")
        out.append(int(v))
    return sorted(set(out))


def _make_gds(k: int, seed: int, *, mode: str, lam: float, relevance: str, p: int | None):
    from coreselect import GDSSelector

    # cgds/dgds are the paper's method: eq. (2), whatever the library's default calibration.
    return GDSSelector(k=k, lam=lam, p=p, relevance=relevance, mode=mode, random_state=seed,
                       calibration="paper")


def _make_calibrated(k: int, seed: int, *, lam: float, relevance: str, p: int | None,
                     calibration: str):
    from coreselect.evaluation.gds import CalibratedGDS

    return CalibratedGDS(k=k, lam=lam, p=p, relevance=relevance, calibration=calibration,
                         random_state=seed)


def _make_tuned(k: int, seed: int):
    from coreselect.evaluation.gds import TunedGDS

    return TunedGDS(k=k, random_state=seed)


def _make_baseline(k: int, seed: int, *, name: str, options: dict | None = None):
    from coreselect.baselines import BASELINES

    cls = BASELINES[name]
    params = cls().get_params()
    kwargs = {key: v for key, v in (options or {}).items() if key in params}
    if "random_state" in params:
        kwargs["random_state"] = seed
    return cls(k=k, **kwargs)


class _AllFeatures:
    """The full-feature reference: "selects" every feature (``run_protocol`` scores it once per
    fold, at k = the number of features)."""

    is_ranker = False
    is_full = True

    def __init__(self, k: int = 1):
        self.k = k

    def fit(self, X, Y) -> "_AllFeatures":
        self.selected_ = self.ranking_ = np.arange(X.shape[1])
        return self


def _make_all(k: int, seed: int) -> _AllFeatures:
    return _AllFeatures(k)


def method_factories(
    names: Sequence[str], lam: float = 0.5, relevance: str = "mi", p: int | None = None,
    baseline_options: dict | None = None,
) -> dict[str, MethodFactory]:
    """Picklable factories for the named methods (see ``METHOD_NAMES``).

    ``gds`` is centralized GDS with the library's default calibration
    (:data:`coreselect.core.objective.DEFAULT_CALIBRATION`); ``cgds``/``dgds`` are the
    paper's objective (eq. 2), centralized or distributed; ``gds-NAME`` is centralized GDS
    with the calibration ``NAME`` (for comparing calibrations). ``baseline_options`` are
    passed to the baselines that take them (e.g. ``{"n_samples": 1000}``: ReliefF on a
    random sample of 1000 instances).
    """
    from coreselect.core.objective import CONDITIONAL, DEFAULT_CALIBRATION, accepted_calibrations

    out: dict[str, MethodFactory] = {}
    for name in names:
        if name == TUNED_METHOD:
            out[name] = _make_tuned
            continue
        cal = DEFAULT_CALIBRATION if name == "gds" else (
            name[4:] if name.startswith("gds-") else None)
        if cal is not None:
            known = accepted_calibrations()
            if cal not in known:
                raise InputError(f"unknown calibration in {name!r}; choose from {', '.join(known)}")
            if cal in CONDITIONAL:  # no weight, top-p or relevance measure to pass on
                out[name] = functools.partial(_make_calibrated, lam=None, relevance=None,
                                              p=None, calibration=cal)
            else:
                out[name] = functools.partial(_make_calibrated, lam=lam, relevance=relevance,
                                              p=p, calibration=cal)
        elif name == "cgds":
            out[name] = functools.partial(_make_gds, mode="centralized", lam=lam, relevance=relevance, p=p)
        elif name == "dgds":
            out[name] = functools.partial(_make_gds, mode="distributed", lam=lam, relevance=relevance, p=p)
        elif name == FULL_METHOD:
            out[name] = _make_all
        elif name in METHOD_NAMES:
            out[name] = functools.partial(_make_baseline, name=name, options=baseline_options)
        else:
            raise InputError(f"unknown method {name!r}; choose from {', '.join(METHOD_NAMES)}")
    return out


def make_folds(n_samples: int, n_folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Shuffled k-fold split (Mulan's cross-validation randomizes, then cuts in folds)."""
    if n_folds < 2:
        raise InputError(f"folds must be at least 2, got {n_folds}")
    if n_folds > n_samples:
        raise InputError(f"{n_folds} folds need at least {n_folds} instances, got {n_samples}")
    kf = KFold(n_splits=n_folds, shuffle=True, random_state=seed)
    return [(tr, te) for tr, te in kf.split(np.zeros((n_samples, 1)))]


def _rows(X, Y):
    # Sparse labels stay sparse (10⁵ labels); the evaluators that need them dense convert a fold.
    return (X.tocsr() if sp.issparse(X) else np.asarray(X)), (Y.tocsr() if sp.issparse(Y) else np.asarray(Y))


def make_evaluator(name: str):
    """An unfitted multi-label classifier: ``"brknn"`` (BRkNN-b, 5 neighbours),
    ``"linear"`` (binary-relevance logistic regression) or ``"sparse-knn"`` (cosine
    10-nearest-neighbour scorer, sparse throughout: 10⁵ labels)."""
    if name == "brknn":
        return BRkNNb(n_neighbors=5)
    if name == "linear":
        from coreselect.evaluation.linear import BRLogistic

        return BRLogistic()
    if name == "sparse-knn":
        from coreselect.evaluation.sparse_knn import SparseKNN

        return SparseKNN(n_neighbors=10)
    raise InputError(f"unknown evaluator {name!r}; choose from {', '.join(EVALUATORS)}")


def check_measures(measures: Sequence[str] | None) -> tuple[str, ...]:
    """The measures to report (default: the five of the paper), validated."""
    if measures is None:
        return tuple(MEASURES)
    names = tuple(dict.fromkeys(measures))
    if not names:
        raise InputError("no measures given")
    for m in names:
        if m not in ALL_MEASURES:
            raise InputError(f"unknown measure {m!r}; choose from {', '.join(ALL_MEASURES)}")
    return names


def _label_scores(clf, X):
    """Per-label scores of a fitted evaluator, for the ranking measures."""
    if hasattr(clf, "predict_scores"):
        return clf.predict_scores(X)
    if hasattr(clf, "predict_proba"):
        return clf.predict_proba(X)
    # BRLogistic: P(label) per binary model; a label constant in training scores its constant
    Xs = clf.scaler_.transform(X)
    out = np.zeros((Xs.shape[0], len(clf.models_)))
    for j, m in enumerate(clf.models_):
        out[:, j] = float(m) if isinstance(m, int) else m.predict_proba(Xs)[:, 1]
    return out


#: measures averaged over labels: scored on each label's own decision where an evaluator has one
LABEL_BASED = frozenset({"micro_f1", "macro_f1"})


def _score(Xtr, Ytr, Xte, Yte, selected: np.ndarray, evaluator: str = "brknn",
           measures: Sequence[str] | None = None, timings: dict | None = None) -> dict[str, float]:
    """The measures of the evaluator fitted on the training fold's ``selected`` columns and
    applied to the test fold's; ``timings`` (if given) receives ``fit_seconds`` and
    ``predict_seconds`` (every prediction the measures need)."""
    sel = np.asarray(selected, dtype=np.int64)
    names = check_measures(measures)
    if evaluator != "sparse-knn" and sp.issparse(Ytr):
        Ytr = Ytr.toarray()  # brknn / linear work on dense labels
    t0 = time.perf_counter()
    clf = make_evaluator(evaluator).fit(Xtr[:, sel], Ytr)
    t1 = time.perf_counter()
    out: dict[str, float] = {}
    classic = [m for m in names if not is_ranking_measure(m)]
    pred = clf.predict(Xte[:, sel]) if classic else None
    ranking = [m for m in names if is_ranking_measure(m)]
    scores = _label_scores(clf, Xte[:, sel]) if ranking else None
    # the linear evaluator's per-label cuts serve the label-based measures; its label sets
    # (with the empty-set model) the example-based ones (evaluation/linear.py)
    per_label = (clf.predict_per_label(Xte[:, sel])
                 if hasattr(clf, "predict_per_label") and set(classic) & LABEL_BASED else None)
    t2 = time.perf_counter()
    for m in classic:
        out[m] = MEASURES[m](Yte, per_label if per_label is not None and m in LABEL_BASED else pred)
    if ranking:
        out.update(ranking_measures(Yte, scores, ranking, Y_train=Ytr))
    if timings is not None:
        timings.update(fit_seconds=t1 - t0, predict_seconds=t2 - t1)
    return {m: out[m] for m in names}


# -- the full-feature reference and stability ---------------------------------------------------
def full_model_bytes(X, n_train: int) -> int:
    """The memory rule of the full-feature reference: :data:`FULL_MODEL_COPIES` times the bytes
    of a training fold of ``n_train`` rows of ``X`` as stored (dense: 8 bytes a cell; sparse:
    12 a non-zero, the non-zeros pro rata, plus 8 a row pointer)."""
    n, d = X.shape
    if sp.issparse(X):
        one = 12 * X.nnz * (n_train / max(n, 1)) + 8 * (n_train + 1)
    else:
        one = 8.0 * n_train * d
    return int(FULL_MODEL_COPIES * one)


def _size(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _free_memory() -> int:
    import os

    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # not POSIX: no limit known
        return 2**62


def jaccard_index(a: Iterable[int], b: Iterable[int]) -> float:
    """``|A ∩ B| / |A ∪ B|`` (1 for two empty sets)."""
    a, b = set(a), set(b)
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def kuncheva_index(a: Iterable[int], b: Iterable[int], n_features: int) -> float:
    """Kuncheva's consistency index of two selections of the same size ``k`` out of
    ``n_features`` (Kuncheva, "A stability index for feature selection", AIA 2007):
    ``(r d - k^2) / (k (d - k))`` with ``r = |A ∩ B|``; 1 for identical sets, about 0 for
    random ones, corrected for chance (unlike Jaccard). NaN when ``k`` is 0 or ``d``."""
    a, b = set(a), set(b)
    k, d = len(a), int(n_features)
    if len(b) != k:
        raise InputError("Kuncheva's index compares selections of the same size")
    if k == 0 or k >= d:
        return float("nan")
    r = len(a & b)
    return (r * d - k * k) / (k * (d - k))


def selection_stability(selections: dict, n_features: int) -> pd.DataFrame:
    """Per ``(method, k)``, the mean over pairs of folds of the Jaccard and Kuncheva indices of
    the selected sets. ``selections``: ``(method, k) -> [selected indices of each fold]``.
    Columns ``method, k, jaccard, kuncheva, folds``; one fold gives NaN. With ``k = "auto"``
    the folds may choose different sizes: Kuncheva's index is defined for equal sizes only, so
    it is the mean over the pairs of equal size (NaN when there is none); Jaccard takes all."""
    rows = []
    for (method, k), sets in selections.items():
        pairs = [(a, b) for i, a in enumerate(sets) for b in sets[i + 1:]]
        jac = float(np.mean([jaccard_index(a, b) for a, b in pairs])) if pairs else float("nan")
        same = [(a, b) for a, b in pairs if len(set(a)) == len(set(b))]
        kun = (float(np.mean([kuncheva_index(a, b, n_features) for a, b in same]))
               if same else float("nan"))
        rows.append(dict(method=method, k=k if k == "auto" else int(k), jaccard=jac,
                         kuncheva=kun, folds=len(sets)))
    return pd.DataFrame(rows, columns=["method", "k", "jaccard", "kuncheva", "folds"])


def full_reference(df: pd.DataFrame) -> pd.DataFrame:
    """Every method's mean score as a fraction of the full-feature reference's (``all``) on the
    same evaluator and measure, and its evaluator's training time as a ratio to the full
    model's: columns ``method, [evaluator,] k, measure, mean, fraction, fit_ratio``.
    Empty when the run has no ``all`` rows."""
    keys = ["evaluator"] if "evaluator" in df.columns else []
    full = df[df["method"] == FULL_METHOD]
    if full.empty:
        return pd.DataFrame(columns=["method", *keys, "k", "measure", "mean", "fraction", "fit_ratio"])
    ref = full.groupby(keys + ["measure"], sort=False).agg(ref=("value", "mean"),
                                                           ref_fit=("fit_seconds", "mean"))
    g = df.groupby(["method", *keys, "k", "measure"], sort=False).agg(
        mean=("value", "mean"), fit=("fit_seconds", "mean")).reset_index()
    g = g.join(ref, on=keys + ["measure"])
    with np.errstate(divide="ignore", invalid="ignore"):
        g["fraction"] = np.where(g["ref"] > 0, g["mean"] / g["ref"], np.nan)
        g["fit_ratio"] = np.where(g["ref_fit"] > 0, g["fit"] / g["ref_fit"], np.nan)
    return g[["method", *keys, "k", "measure", "mean", "fraction", "fit_ratio"]]


# worker-side state, set once per process so the data is not pickled for every task
_STATE: dict[str, Any] = {}


def _init_state(X, Y, folds, methods, evaluators=("brknn",), measures=None) -> None:
    _STATE.update(X=X, Y=Y, folds=folds, methods=methods, evaluators=evaluators, measures=measures)


def _init_worker(parent_pid: int, *state) -> None:
    """A pool worker's start: Ctrl-C (sent to the whole group) is the parent's to act on (it
    stops the pool), and the worker dies with the parent, even a SIGKILLed one."""
    import signal

    from coreselect.utils import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # started while the parent held them (_signals_held)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {getattr(signal, name) for name in _HELD})
    die_with_parent(parent_pid)
    _init_state(*state)


_HELD = ("SIGINT", "SIGTERM")


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM held back in the block, then acted on, where it can be done: the
    main thread of a POSIX process. Blocked in this thread, so a child started in the block
    inherits the mask (a pool worker unblocks them first thing, :func:`_init_worker`); and
    recorded by a handler meanwhile, because the kernel hands a process's signal to any
    thread that has it unblocked (a kernel pool's, started earlier), and Python then runs
    the handler in this thread all the same. On leaving, a recorded signal is raised again
    for the handler of the time."""
    import signal
    import threading

    held = {getattr(signal, name) for name in _HELD}
    if (not hasattr(signal, "pthread_sigmask")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    got: list[int] = []
    previous = {}
    for sig in held:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, lambda signum, frame: got.append(signum))
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        # The handlers first: a signal still pending on this thread then meets its own.
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if got:
            signal.raise_signal(got[0])


def _stop_workers(ex: ProcessPoolExecutor) -> None:
    """Kill a pool's workers (SIGKILL: a worker half way through reading its task prints no
    traceback) and wait for them, then drop the pool without waiting for its tasks."""
    import contextlib

    procs = list((getattr(ex, "_processes", None) or {}).values())
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(10)
    with contextlib.suppress(Exception):
        ex.shutdown(wait=False, cancel_futures=True)


def _run_task(method: str, ks: tuple[int, ...], fold: int, seed: int) -> list[dict]:
    """One selection (or one ranking for all ``ks``) on one fold; rows for every k."""
    X, Y, folds, methods = _STATE["X"], _STATE["Y"], _STATE["folds"], _STATE["methods"]
    train, test = folds[fold]
    Xtr, Ytr, Xte, Yte = X[train], Y[train], X[test], Y[test]
    # ("auto",): a GDS method chooses k itself (nested); any other method's ranking up to the
    # cap gets the same rule (coreselect.selection.autok) here, on the training fold only.
    by_rule = ks == ("auto",) and not chooses_own_k(method)
    cap = auto_cap(Xtr) if by_rule else None  # as for GDS: the columns that vary, capped
    est = methods[method](cap or max(ks), seed)
    t0 = time.perf_counter()
    est.fit(Xtr, Ytr)
    if by_rule:
        from coreselect.selection.autok import choose_k

        order = np.asarray(est.ranking_)[:cap]
        auto_selected = order[:choose_k(Xtr, Ytr, order).k]
    seconds = time.perf_counter() - t0
    rows = []
    chosen = []
    for k in ks:
        if by_rule:
            selected = auto_selected
        elif len(ks) > 1:  # a ranker: the top-k prefix of one ranking
            selected = np.asarray(est.ranking_)[:k]
        else:
            selected = np.asarray(est.selected_)
        chosen.append((method, k, fold, [int(i) for i in selected]))
        for ev in _STATE["evaluators"]:
            times: dict = {}
            for measure, value in _score(Xtr, Ytr, Xte, Yte, selected, ev,
                                         _STATE.get("measures"), times).items():
                rows.append(dict(method=method, evaluator=ev, k=k, fold=fold, measure=measure,
                                 value=value, select_seconds=seconds, k_chosen=len(selected),
                                 **times))
    return rows, chosen


def chooses_own_k(method: str) -> bool:
    """Whether ``method`` takes ``k="auto"`` itself (the GDS methods); the others get the same
    rule over their ranking in :func:`run_protocol`."""
    return method in AUTO_K_METHODS or method.startswith("gds-")


def _is_ranker(factory: MethodFactory) -> bool:
    return bool(getattr(factory(1, 0), "is_ranker", False))


def run_protocol(
    X,
    Y,
    methods: dict[str, MethodFactory],
    ks: Sequence[int],
    n_folds: int = 10,
    seed: int = 0,
    jobs: int = 1,
    progress: Progress | None = None,
    evaluator: str | Sequence[str] = "brknn",
    measures: Sequence[str] | None = None,
    memory_budget: int | None = None,
    folds: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Cross-validate every method at every ``k``.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
    Y : array or sparse matrix, shape (n, L), binary
    methods : dict
        Name -> factory ``(k, seed) -> selector``. With ``jobs > 1`` the factories must be
        picklable (use :func:`method_factories` or ``functools.partial`` of module-level
        functions).
    ks : sequence of int
        Numbers of features to select.
    n_folds : int, default=10
    seed : int, default=0
        Seeds the fold split; the selector of fold ``f`` gets ``seed + f``.
    jobs : int, default=1
        Worker processes; 1 runs in this process.
    progress : callable, optional
        Called as ``progress(done, total)`` after every finished task; cells are
        ``(method, k, fold)`` triples.
    evaluator : str or sequence of str, default="brknn"
        ``"brknn"`` (BRkNN-b), ``"linear"`` (:class:`~coreselect.evaluation.linear.BRLogistic`),
        ``"sparse-knn"`` (:class:`~coreselect.evaluation.sparse_knn.SparseKNN`, for 10⁵ labels),
        or several: each selection is then scored by every one of them.
    measures : sequence of str, optional
        Names from :data:`ALL_MEASURES`: the five measures of the paper (on 0/1 predictions;
        the default) and/or the ranking measures ``p@k, ndcg@k, psp@k, psndcg@k`` (k = 1..5,
        on the evaluator's scores; propensities from the training fold's labels).
    memory_budget : int, optional
        Bytes the full-feature reference (method ``all``) may take by the rule of
        :func:`full_model_bytes`; default half the memory free now. Over it, ``all`` is left
        out with a note.
    folds : sequence of (train rows, test rows), optional
        The splits to score instead of ``n_folds`` shuffled folds: e.g. one pair, a given
        train/test split of the rows (``n_folds`` is then not used).

    Returns
    -------
    pandas.DataFrame
        Columns ``method, k, fold, measure, value, select_seconds, fit_seconds,
        predict_seconds`` (plus ``evaluator`` after ``method`` when several evaluators are
        given); for rankers ``select_seconds`` is the time of the one ranking shared by all
        ``k`` of the fold; ``fit_seconds`` / ``predict_seconds`` are the evaluator's. The
        ``all`` rows have ``k`` = the number of features. ``df.attrs``: ``"stability"``
        (records of :func:`selection_stability`), ``"notes"`` (lines: e.g. why ``all`` was
        left out).
    """
    evaluators = (evaluator,) if isinstance(evaluator, str) else tuple(evaluator)
    if not evaluators:
        raise InputError("no evaluator given")
    for ev in evaluators:
        make_evaluator(ev)  # validates the name
    measures = check_measures(measures)
    X, Y = _rows(X, Y)
    if X.shape[0] != Y.shape[0]:
        raise InputError("X and Y have different numbers of rows")
    ks = parse_k(ks)
    if not ks:
        raise InputError("no numbers of features given")
    if ks != ["auto"] and ks[-1] > X.shape[1]:
        raise InputError(f"k={ks[-1]} exceeds the number of features ({X.shape[1]})")
    if not methods:
        raise InputError("no methods given")
    if folds is None:
        folds = make_folds(X.shape[0], n_folds, seed)
    else:
        folds = [(np.asarray(tr, dtype=np.intp), np.asarray(te, dtype=np.intp)) for tr, te in folds]
        if not folds or any(tr.size == 0 or te.size == 0 for tr, te in folds):
            raise InputError("every given split needs training and test rows")
    n_folds = len(folds)
    notes: list[str] = []
    methods = dict(methods)
    full = [name for name, factory in methods.items() if getattr(factory(1, 0), "is_full", False)]
    if full:
        need = full_model_bytes(X, max(len(tr) for tr, _ in folds))
        budget = _free_memory() // 2 if memory_budget is None else int(memory_budget)
        if need > budget:
            for name in full:
                del methods[name]
            notes.append(f"{FULL_METHOD}: left out: the full model on {X.shape[1]:,} features "
                         f"needs about {_size(need)} ({FULL_MODEL_COPIES} x the training fold's "
                         f"feature matrix), over the {_size(budget)} budget")
            if not methods:
                raise InputError(notes[-1])
    tasks: list[tuple[str, tuple[int, ...], int, int]] = []
    for name, factory in methods.items():
        if name in full:
            groups = [(X.shape[1],)]
        else:
            groups = [tuple(ks)] if _is_ranker(factory) else [(k,) for k in ks]
        for f in range(n_folds):
            tasks.extend((name, g, f, seed + f) for g in groups)
    total = sum(len(t[1]) for t in tasks)
    done = 0
    rows: list[dict] = []
    chosen: list[tuple] = []
    if progress:
        progress(0, total)
    if jobs <= 1:
        _init_state(X, Y, folds, methods, evaluators, measures)
        try:
            for t in tasks:
                got, sel = _run_task(*t)
                rows.extend(got)
                chosen.extend(sel)
                done += len(t[1])
                if progress:
                    progress(done, total)
        finally:
            _STATE.clear()
    else:
        # "spawn": forking a parent that already runs BLAS / numba threads can deadlock.
        ctx = multiprocessing.get_context("spawn")
        ex = ProcessPoolExecutor(
            max_workers=jobs, mp_context=ctx, initializer=_init_worker,
            initargs=(os.getpid(), X, Y, folds, methods, evaluators, measures)
        )
        try:
            # The workers are spawned inside submit(), each sent its start-up data through a
            # pipe: a signal raised half way through that write closed the pipe under the
            # child, which printed an EOFError traceback before it could be killed. Held for
            # the few milliseconds of the submits, the signal then stops whole workers.
            with _signals_held():
                futures = {ex.submit(_run_task, *t): t for t in tasks}
            for fut in as_completed(futures):
                got, sel = fut.result()
                rows.extend(got)
                chosen.extend(sel)
                done += len(futures[fut][1])
                if progress:
                    progress(done, total)
        except BaseException:
            _stop_workers(ex)  # a signal or a failure: the workers go first, silently
            raise
        ex.shutdown(wait=True)
    multi = len(evaluators) > 1
    columns = RESULT_COLUMNS[:1] + ["evaluator"] + RESULT_COLUMNS[1:] if multi else RESULT_COLUMNS
    if ks == ["auto"]:
        columns = columns + ["k_chosen"]  # k is "auto"; the k each fold's selection chose
    df = pd.DataFrame(rows, columns=columns)
    order = {m: i for i, m in enumerate(methods)}
    df["_o"] = df["method"].map(order)
    df["_m"] = df["measure"].map({m: i for i, m in enumerate(ALL_MEASURES)})
    keys = ["_o", "evaluator", "k", "fold", "_m"] if multi else ["_o", "k", "fold", "_m"]
    df = df.sort_values(keys).drop(columns=["_o", "_m"]).reset_index(drop=True)
    sets: dict = {}
    for method, k, fold, selected in sorted(chosen, key=lambda c: (order[c[0]], c[1], c[2])):
        if method not in full:
            sets.setdefault((method, k), []).append(selected)
    df.attrs["stability"] = selection_stability(sets, X.shape[1]).to_dict("records")
    df.attrs["notes"] = notes
    return df


def run_lambda_sweep(
    X,
    Y,
    lams: Sequence[float],
    ks: Sequence[int],
    method: str = "cgds",
    relevance: str = "mi",
    n_folds: int = 10,
    seed: int = 0,
    jobs: int = 1,
    progress: Progress | None = None,
    evaluator: str | Sequence[str] = "brknn",
    measures: Sequence[str] | None = None,
    folds: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """The paper's Figure 4 experiment: cross-validate a GDS method for every ``lam`` and ``k``
    (``folds``: given splits instead, as in :func:`run_protocol`).

    Returns the columns of :func:`run_protocol` plus ``lam`` (after ``method``).
    """
    if method not in GREEDY_METHODS:
        raise InputError(f"the lambda sweep needs a GDS method ({', '.join(GREEDY_METHODS)}), got {method!r}")
    lams = [float(v) for v in lams]
    bad = [v for v in lams if not 0.0 <= v <= 1.0]
    if bad:
        raise InputError(f"lambda values must lie in [0, 1], got {bad}")
    # A sweep of the weight: gds weighs ("auto" would take the unweighed cmim on dense data).
    name = "gds-information" if method == "gds" else method
    methods = {f"{method}@{lam!r}": method_factories([name], lam=lam, relevance=relevance)[name]
               for lam in lams}
    df = run_protocol(X, Y, methods, ks, n_folds=n_folds, seed=seed, jobs=jobs, progress=progress,
                      evaluator=evaluator, measures=measures, folds=folds)
    lam_col = df["method"].str.split("@").str[1].astype(float)
    df["method"] = method
    df.insert(1, "lam", lam_col)
    return df
