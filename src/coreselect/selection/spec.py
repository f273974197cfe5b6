"""The specification of a selection, checked in one place.

* :class:`Objective`: what is maximized (``k``, ``lam``, ``p``, ``relevance``, ``calibration``);
* :class:`Binning`: how raw values become codes (``n_bins``, ``strategy``, ``min_bin_count``)
  and whether constant columns may be picked (``keep_constant``);
* the run parameters (``mode``, ``partitions``, ``coreset_size``, ``engine``, ``n_workers``,
  ``backend``, ...), which the strategies of :mod:`coreselect.selection.strategies` take.

Every parameter is described once, in :data:`CONSTRAINTS`. That table is plain data read by
three consumers: :func:`check` (the one-line :class:`~coreselect.errors.InputError` of the
library and the CLI), ``GDSSelector._parameter_constraints`` (translated to scikit-learn's
``Interval``/``StrOptions`` in :mod:`coreselect.selector`: scikit-learn is not imported here,
so the command line starts fast), and the defaults of the public signatures.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from numbers import Integral, Real
from typing import Any, Callable, get_args

import numpy as np

from coreselect.core import objective as _objective
from coreselect.core.discretize import AUTO_BINS, MAX_BINS, STRATEGIES, resolve_n_bins
from coreselect.core.entropy import RELEVANCES, Backend
from coreselect.engines import ENGINES
from coreselect.errors import InputError

MODES = ("centralized", "distributed", "streaming", "rows")
BACKENDS: tuple[str, ...] = get_args(Backend)

#: ``progress(stage, done, total)``; stages ``"select"`` (centralized), ``"parts"``, ``"union"``.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Constraint:
    """What one parameter accepts.

    ``kind`` is ``"int"`` (bounds ``low``/``high``, both inclusive; ``options`` lists strings
    also accepted, such as ``"auto"``), ``"real"`` (finite, within ``[low, high]``),
    ``"choice"`` (one of ``options``), ``"str"`` (any string), ``"bool"``,
    ``"random_state"`` (None, a seed in ``[0, 2**32)`` or a ``RandomState``), ``"callable"``
    or ``"any"``. ``none`` allows None. ``options`` may be a function, read at every check
    (for tables that other modules extend). Booleans are never numbers here.
    """

    kind: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    options: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    none: bool = False
    why: str = ""  # appended to the refusal: where a bound comes from

    def choices(self) -> tuple[str, ...]:
        return tuple(self.options() if callable(self.options) else self.options)

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.none or self.kind in ("random_state", "any")
        if isinstance(value, str) and value in self.choices():
            return True
        if self.kind == "int":
            return (isinstance(value, Integral) and not isinstance(value, bool)
                    and self._in_range(value))
        if self.kind == "real":
            return (isinstance(value, Real) and not isinstance(value, bool)
                    and math.isfinite(value) and self._in_range(value))
        if self.kind == "bool":
            return isinstance(value, (bool, np.bool_))
        if self.kind == "random_state":
            return (isinstance(value, Integral) and not isinstance(value, bool)
                    and 0 <= value < 2**32) or isinstance(value, np.random.RandomState)
        if self.kind == "callable":
            return callable(value)
        if self.kind == "str":
            return isinstance(value, str)
        return self.kind == "any"

    def _in_range(self, value) -> bool:
        return ((self.low is None or value >= self.low)
                and (self.high is None or value <= self.high))

    def describe(self) -> str:
        """``"an integer >= 1"``, ``"in [0, 1]"``, ``"one of 'mi', 'nmi'"``, ..."""
        words = []
        opts = ", ".join(repr(o) for o in self.choices())
        if self.kind == "int":
            rng = (f"an integer >= {self.low:g}" if self.high is None
                   else f"an integer in [{self.low:g}, {int(self.high)}]")
            words.append(f"{opts} or {rng}" if opts else rng)
        elif self.kind == "real":
            words.append(f"a number in [{self.low:g}, {self.high:g}]")
        elif self.kind == "choice":
            words.append(f"one of {opts}")
        elif self.kind == "bool":
            words.append("True or False")
        elif self.kind == "random_state":
            words.append("None, an integer in [0, 2**32 - 1] or a numpy RandomState")
        elif self.kind == "callable":
            words.append("callable")
        elif self.kind == "str":
            words.append("a string")
        else:
            words.append("anything")
        if self.none and self.kind not in ("random_state", "any"):
            words.append("or None")
        if self.why:
            words.append(f"({self.why})")
        return " ".join(words)


#: Worker processes per core, and in all, that a run may ask for (``n_workers``, ``--workers``,
#: ``evaluate --jobs``): more cannot run at once, and a million processes would exhaust the
#: machine (BlockingIOError) or hang before the first task.
WORKERS_PER_CORE = 4
HARD_MAX_WORKERS = 256


def max_workers() -> int:
    """The most worker processes a run may start here: ``WORKERS_PER_CORE`` per core, at most
    ``HARD_MAX_WORKERS``."""
    return max(1, min(HARD_MAX_WORKERS, WORKERS_PER_CORE * (os.cpu_count() or 1)))


_WORKERS_WHY = (f"at most {WORKERS_PER_CORE} per core of this machine and "
                f"{HARD_MAX_WORKERS} in all")
#: ``p`` above this is refused (a count of features per label; S holds at most k of them).
MAX_P = _objective.P_ALL



def _calibrations() -> tuple[str, ...]:
    return _objective.accepted_calibrations()


#: The one table of parameters: name -> constraint (with its default).
CONSTRAINTS: dict[str, Constraint] = {
    # the objective
    # None: DEFAULT_K, at most the selectable features; "auto": chosen by internal
    # cross-validation of the greedy order's prefixes (coreselect.selection.autok)
    "k": Constraint("int", None, low=1, options=("auto",), none=True),
    # select ceil(percentile / 100 * selectable features) instead of k (0 is refused)
    "percentile": Constraint("real", None, low=0, high=100, none=True),
    "lam": Constraint("real", 0.5, low=0, high=1),
    # p larger than the candidates counts every selected feature (RelevanceGains keeps at most
    # d values per label); MAX_P keeps it a machine integer everywhere. None: the
    # calibration's own (coreselect.core.objective.default_p: 10, all for "information").
    "p": Constraint("int", None, low=1, high=MAX_P, none=True),
    "relevance": Constraint("choice", "mi", options=RELEVANCES),
    # None: coreselect.core.objective.DEFAULT_CALIBRATION when the Objective is made
    "calibration": Constraint("choice", None, options=_calibrations, none=True),
    # the binning
    # codes are at most 32-bit integers (and more bins than samples split nothing); "auto":
    # by the rows binned (coreselect.core.discretize.resolve_n_bins)
    "n_bins": Constraint("int", AUTO_BINS, low=2, high=MAX_BINS, options=(AUTO_BINS,),
                         why="codes are 32-bit integers"),
    "strategy": Constraint("choice", "auto", options=STRATEGIES),
    "min_bin_count": Constraint("int", 10, low=1),
    "keep_constant": Constraint("bool", False),
    # the run
    "mode": Constraint("choice", "centralized", options=MODES),
    "partitions": Constraint("int", "auto", low=1, options=("auto",)),
    "coreset_size": Constraint("int", None, low=1, none=True),
    # mode "rows": shards of the samples ("auto": a store's row blocks, else one per worker)
    "row_shards": Constraint("int", "auto", low=1, options=("auto",)),
    "engine": Constraint("choice", "local", options=ENGINES),
    "n_workers": Constraint("int", None, low=1, high=max_workers(), none=True, why=_WORKERS_WHY),
    "client": Constraint("any", None),
    "scheduler": Constraint("str", None, none=True),  # a Dask scheduler address
    "random_state": Constraint("random_state", None),
    "backend": Constraint("choice", "auto", options=BACKENDS),
    "progress": Constraint("callable", None, none=True),
}


def default(name: str) -> Any:
    """The default value of a parameter (from :data:`CONSTRAINTS`)."""
    return CONSTRAINTS[name].default


def check(name: str, value: Any) -> Any:
    """Return ``value`` if parameter ``name`` accepts it, else raise :class:`InputError` with a
    one-line reason."""
    constraint = CONSTRAINTS[name]
    if not constraint.accepts(value):
        raise InputError(f"{name} must be {constraint.describe()}, got {value!r}")
    return value


def default_calibration() -> str:
    return _objective.DEFAULT_CALIBRATION  # read at call time: another module sets it


#: ``k`` when none is given: this many, or every selectable feature when there are fewer.
DEFAULT_K = 10


@dataclass(frozen=True)
class Objective:
    """What is maximized: ``h(S) = (1 - lam) c g(S) + lam D(S)`` over ``|S| = k`` features,
    ``g`` counting the ``p`` best relevances (``relevance``: ``"mi"`` or ``"nmi"``) per label,
    the terms weighed by ``calibration`` (None: the library default; ``p`` None: the
    calibration's, :func:`coreselect.core.objective.default_p`)."""

    k: int = DEFAULT_K
    lam: float = default("lam")
    p: int = default("p")
    relevance: str = default("relevance")
    calibration: str | None = default("calibration")

    def __post_init__(self) -> None:
        if self.calibration is None:
            object.__setattr__(self, "calibration", default_calibration())
        given = self._weighing_given()
        if self.calibration == _objective.AUTO and given:
            # a weight, top-p cut or relevance measure belongs to the weighing: "auto" would
            # otherwise ignore it on the data it gives the conditional criterion
            object.__setattr__(self, "calibration", "information")
        if self.calibration in _objective.CONDITIONAL:
            for name in given:
                value = getattr(self, name)
                if not (name == "p" and value == _objective.default_p(self.calibration)):
                    raise InputError(f"{name}={value!r} does not apply to calibration="
                                     f"{self.calibration!r}: its conditional criterion has no "
                                     "weight, top-p cut or relevance measure")
        if self.p is None and self.calibration in _calibrations() and (
                self.calibration not in (_objective.AUTO, *_objective.SHARED_INFORMATION)):
            # "auto": the one it stands for sets p; "information": its p follows the number
            # of labels, set once the data is known (decided)
            object.__setattr__(self, "p", _objective.default_p(self.calibration))
        for f in fields(self):
            check(f.name, getattr(self, f.name))
        if not isinstance(self.k, (int, np.integer)):  # None / "auto" are resolved by select
            raise InputError(f"the objective needs a number of features, got k={self.k!r}")

    def _weighing_given(self) -> list[str]:
        """The weighing's options (``lam``, ``p``, ``relevance``) given other than their
        defaults."""
        return [name for name in ("lam", "p", "relevance")
                if getattr(self, name) is not None and not _is_default(name, getattr(self, name))]

    def decided(self, nonzero_share: float | None, n_features: int, n_labels: int,
                n_samples: int = 0) -> "Objective":
        """This objective on data of that shape: ``calibration="auto"`` replaced by what it
        stands for where the non-constant columns hold ``nonzero_share`` non-zero codes
        (:func:`coreselect.core.objective.data_calibration`), and ``p`` not given set to the
        calibration's for ``k`` and ``n_labels`` (:func:`coreselect.core.objective.default_p`)."""
        out = self
        if self.calibration == _objective.AUTO:
            out = replace(self, calibration=_objective.data_calibration(
                nonzero_share, n_features, n_labels, n_samples, int(self.k)))
        if out.p is None and out.calibration in _objective.SHARED_INFORMATION:
            out = replace(out, p=_objective.default_p(out.calibration, int(out.k), n_labels))
        return out

    def params(self, n_labels: int) -> _objective.ObjectiveParams:
        """The core's parameters of ``h`` for ``n_labels`` labels."""
        if self.calibration == _objective.AUTO:
            raise ValueError("calibration='auto' is decided from the data first (Objective.decided)")
        p = self.p if self.p is not None else _objective.default_p(self.calibration, int(self.k),
                                                                    n_labels)
        return _objective.ObjectiveParams(k=int(self.k), lam=float(self.lam), p=int(p),
                                          n_labels=int(n_labels), calibration=self.calibration)


@dataclass(frozen=True)
class Binning:
    """How raw values become codes (see :func:`coreselect.core.discretize.discretize`), and
    whether constant columns may be selected (they never are by default: they carry no
    information but sit at distance 1 from everything)."""

    n_bins: int = default("n_bins")
    strategy: str = default("strategy")
    min_bin_count: int = default("min_bin_count")
    keep_constant: bool = default("keep_constant")

    def __post_init__(self) -> None:
        for f in fields(self):
            check(f.name, getattr(self, f.name))

    def same_codes(self, other: "Binning", n_samples: int) -> bool:
        """Whether both give the same codes over ``n_samples`` rows (``keep_constant`` aside;
        ``n_bins="auto"`` stands for the bins it takes there)."""
        return ((resolve_n_bins(self.n_bins, n_samples), self.strategy, self.min_bin_count)
                == (resolve_n_bins(other.n_bins, n_samples), other.strategy,
                    other.min_bin_count))




# -- the option matrix: which runs use which option -----------------------------------------
#: Where the data of a run comes from: a data file (or in-memory arrays), or a column store.
SOURCES = ("file", "store")
#: The modes whose work runs on an engine (``engine``); the others run in this process.
ENGINE_MODES = ("distributed", "rows")

#: The run options of ``coreselect select`` and :func:`coreselect.select`: parameter name ->
#: command-line flag (``None``: API only). Output options of the command are listed too.
SELECT_OPTIONS: dict[str, str | None] = {
    "k": "-k", "percentile": "--percentile", "k_curve": "--k-curve", "lam": "--lam", "p": "--p", "relevance": "--relevance",
    "calibration": "--calibration", "n_bins": "--bins", "strategy": "--strategy",
    "min_bin_count": "--min-bin-count", "keep_constant": "--keep-constant", "mode": "--mode",
    "partitions": "--partitions", "coreset_size": "--coreset-size",
    "row_shards": "--row-shards", "engine": "--engine", "n_workers": "--workers",
    "scheduler": "--scheduler", "client": None, "random_state": "--seed",
    "labels": "--labels", "backend": "--backend", "progress": None,
    "as_json": "--json", "out": "--out", "export": "--export", "explain": "--explain",
    "coverage_png": "--coverage", "quiet": "--quiet", "verbose": "--verbose",
    "temp_dir": "--temp-dir", "labels_as_features": "--labels-as-features",
    "checkpoint": "--checkpoint",  # every mode, source and engine records and resumes
    "header": "--header",  # --header/--no-header: CSV files only (a reader option)
}

#: What a run's data is, for the rules of a reader option: a data file's format (the first
#: of several files), ``"dataset"`` for a built-in dataset name; None: not known before it
#: is read (the reader then decides).
DATA_FORMATS = ("csv", "arff", "libsvm", "xmc", "parquet", "dataset")


@dataclass(frozen=True)
class Unused:
    """A rule of the option matrix: a run with ``mode`` in ``modes``, its data from one of
    ``sources`` and (for :data:`ENGINE_MODES`) its work on one of ``engines`` ignores
    ``options`` (``together``: only when that option is given too; ``without``: only when that
    option is not given; ``formats``: only when the data's format, one of
    :data:`DATA_FORMATS`, is one of them), for the reason ``why``.
    ``api=False``: the command line refuses it, the library checks the value instead (the
    store's own seed and row blocks are accepted)."""

    options: tuple[str, ...]
    why: str
    modes: tuple[str, ...] = MODES
    sources: tuple[str, ...] = SOURCES
    engines: tuple[str, ...] = ENGINES
    together: str | None = None
    without: str | None = None
    api: bool = True
    formats: tuple[str, ...] | None = None

    def applies(self, option: str, mode: str, source: str, engine: str,
                given: Any = (), fmt: str | None = None) -> bool:
        return (option in self.options and mode in self.modes and source in self.sources
                and (self.formats is None or fmt in self.formats)
                and (mode not in ENGINE_MODES or engine in self.engines)
                and (self.together is None or self.together in given)
                and (self.without is None or self.without not in given))


_IN_PROCESS = "runs in this process"
#: The option matrix, as data: every rule names options a run would ignore. Everything not
#: named here is used by every mode, source and engine. ``coreselect select`` refuses an
#: option given explicitly that a rule names (one line, exit 2), :func:`check_used` does the
#: same for the library, and tests/test_option_matrix.py walks every cell.
UNUSED: tuple[Unused, ...] = (
    Unused(("percentile",), "-k and --percentile both say how many features to select: give "
           "one", together="k"),
    # "k_auto" stands for -k auto (a value, not an option) in the options given.
    Unused(("k_curve",), "only -k auto has a curve of k to draw", without="k_auto",
           api=False),
    Unused(("partitions", "coreset_size"), "only --mode distributed and streaming cut the "
           "columns into parts", modes=("centralized", "rows")),
    Unused(("engine", "n_workers", "scheduler", "client"),
           f"--mode centralized {_IN_PROCESS}", modes=("centralized",)),
    Unused(("engine", "n_workers", "scheduler", "client"),
           f"--mode streaming {_IN_PROCESS}, one part after another", modes=("streaming",)),
    Unused(("row_shards",), "only --mode rows cuts the samples into shards",
           modes=("centralized", "distributed", "streaming")),
    # The library refuses it too; GDSSelector takes it on every mode (and passes it on only
    # where it is used), as every scikit-learn estimator does: scikit-learn's checks and
    # searches set random_state on any estimator that has one.
    Unused(("random_state",), "it seeds the random partition of --mode distributed and "
           "streaming; this selection has none", modes=("centralized", "rows")),
    Unused(("n_bins", "strategy", "min_bin_count"), "a column store's codes were binned when "
           "it was built (store build --bins, --strategy, --min-bin-count)", sources=("store",)),
    Unused(("labels",), "a column store holds the labels it was built with (store build "
           "--labels)", sources=("store",)),
    Unused(("labels_as_features",), "a column store holds the labels and features it was "
           "built with (store build --labels-as-features)", sources=("store",), api=False),
    Unused(("labels_as_features",), "only --labels leaves declared labels out (without it "
           "every declared label is a label)", without="labels", api=False),
    Unused(("header",), "a column store holds the columns it was built with (store build "
           "--header/--no-header)", sources=("store",), api=False),
    Unused(("header",), "only a CSV file has a first row that may or may not name the "
           "columns", sources=("file",), formats=tuple(f for f in DATA_FORMATS if f != "csv"),
           api=False),
    Unused(("export",), "a column store holds discretized codes, not the data; export from "
           "the data file", sources=("store",)),
    # random_state on a store in --mode distributed/streaming is checked by the store: its
    # build seed is accepted (it is the partition), any other is refused (StoreSource).
    Unused(("row_shards",), "a column store's row shards are its row blocks (store build "
           "--row-block-size)", sources=("store",), modes=("rows",), api=False),
    Unused(("n_workers",), "the local engine visits the row shards one after another in this "
           "process (--engine dask spreads them over --workers)", modes=("rows",),
           engines=("local",)),
    Unused(("scheduler", "client"), "a Dask scheduler needs --engine dask",
           engines=("local",), modes=ENGINE_MODES),
    Unused(("n_workers",), "the scheduler at --scheduler has its own workers",
           together="scheduler"),
    Unused(("n_workers",), "the Dask client has its own workers", together="client"),
    Unused(("temp_dir",), "only --mode rows on a column store writes row copies",
           modes=("centralized", "distributed", "streaming")),
    Unused(("temp_dir",), "only a column store's row blocks are copied (a data file's rows "
           "stay in memory)", sources=("file",)),
    Unused(("temp_dir",), "with --engine dask the tiles stay on the workers (no row copies)",
           modes=("rows",), engines=("dask",)),
)


def unused_reason(option: str, mode: str, source: str, engine: str,
                  given: Any = (), *, api: bool = False, fmt: str | None = None) -> str | None:
    """Why a run (``mode``, ``source``, ``engine``, the options ``given``, a data file of
    format ``fmt``) would ignore ``option``, or None when it uses it. ``api=True``: only the
    rules the library enforces."""
    for rule in UNUSED:
        if (not api or rule.api) and rule.applies(option, mode, source, engine, given, fmt):
            return rule.why
    return None


def check_used(params: dict[str, Any], *, mode: str, source: str, engine: str) -> None:
    """Raise :class:`InputError` when a parameter of ``params`` passed with a value other than
    None and its default would be ignored by this run (see :data:`UNUSED`)."""
    given = {name: value for name, value in params.items()
             if value is not None and not _is_default(name, value)}
    for name in given:
        why = unused_reason(name, mode, source, engine, given, api=True)
        if why is not None:
            where = f"mode={mode!r}" + ("" if mode not in ENGINE_MODES
                                        else f", engine={engine!r}")
            raise InputError(f"{name}={given[name]!r} does not apply here ({where}, a "
                             f"{'column store' if source == 'store' else 'data'} source): "
                             f"{why}")


def _is_default(name: str, value: Any) -> bool:
    if name not in CONSTRAINTS or isinstance(value, np.random.RandomState):
        return False
    try:
        return bool(value == default(name))
    except Exception:  # noqa: BLE001 - an object that does not compare is not the default
        return False




# -- the option matrix of `coreselect evaluate` ---------------------------------------------
def is_gds_method(name: str) -> bool:
    """Whether an ``evaluate`` method is a GDS selection (``--lam``, ``--relevance`` apply;
    not to ``gds-tuned``, which chooses them on the training fold)."""
    return name in ("gds", "cgds", "dgds") or (
        name.startswith("gds-") and name != "gds-tuned"
        and name[4:] not in _objective.CONDITIONAL)  # gds-cmim: no weight or measure


#: ``evaluate`` options that some runs ignore: option -> ((condition, why), ...), with the
#: conditions ``"no_gds"`` (no GDS method in --methods), ``"sweep"`` (--lam-sweep given) and
#: ``"not_csv"`` (the data is known not to be a CSV file).
EVALUATE_UNUSED: dict[str, tuple[tuple[str, str], ...]] = {
    "header": (("not_csv", "only a CSV file has a first row that may or may not name the "
                           "columns"),),
    "lam": (("no_gds", "only the GDS methods (gds, gds-CALIBRATION, cgds, dgds) weigh "
                       "diversity by it (gds-tuned chooses, gds-cmim has no weight), and "
                       "--methods has none"),
            ("sweep", "--lam-sweep sets lambda itself")),
    "relevance": (("no_gds", "only the GDS methods (gds, gds-CALIBRATION, cgds, dgds) take "
                             "it (gds-tuned chooses, gds-cmim has no measure), and "
                             "--methods has none"),),
}


def evaluate_unused_reason(option: str, methods: Any, sweep: bool,
                           fmt: str | None = None) -> str | None:
    """Why ``coreselect evaluate`` with these methods (and a sweep or not) on data of format
    ``fmt`` (:data:`DATA_FORMATS`; None: not known) ignores ``option``."""
    holds = {"no_gds": not any(is_gds_method(m) for m in methods), "sweep": bool(sweep),
             "not_csv": fmt is not None and fmt != "csv"}
    for condition, why in EVALUATE_UNUSED.get(option, ()):
        if holds[condition]:
            return why
    return None


OBJECTIVE_PARAMETERS = tuple(f.name for f in fields(Objective))
BINNING_PARAMETERS = tuple(f.name for f in fields(Binning))
RUN_PARAMETERS = ("mode", "partitions", "coreset_size", "row_shards", "engine", "n_workers", "client",
                  "scheduler", "random_state", "backend", "progress")

__all__ = ["Objective", "Binning", "Constraint", "CONSTRAINTS", "MODES", "BACKENDS", "ENGINES",
           "Progress", "check", "default", "OBJECTIVE_PARAMETERS", "BINNING_PARAMETERS",
           "RUN_PARAMETERS", "DEFAULT_K", "SOURCES", "ENGINE_MODES", "SELECT_OPTIONS", "Unused",
           "UNUSED", "unused_reason", "DATA_FORMATS", "check_used", "max_workers", "EVALUATE_UNUSED",
           "evaluate_unused_reason", "is_gds_method"]
