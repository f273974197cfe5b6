"""``GDSSelector``: the scikit-learn face of coreselect (greedy diversity plus submodular)."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Callable

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.feature_selection import SelectorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from coreselect.errors import InputError
from coreselect.selection import select
from coreselect.selection.spec import CONSTRAINTS, Constraint, default


def _sklearn_constraint(c: Constraint) -> list | str:
    """One row of :data:`coreselect.selection.spec.CONSTRAINTS` in scikit-learn's terms."""
    if c.kind == "any":
        return "no_validation"
    out: list = [None] if c.none else []
    if c.kind == "random_state":
        return ["random_state"]
    if c.kind == "bool":
        return out + ["boolean"]
    if c.kind == "callable":
        return out + [callable]
    if c.kind == "str":
        return out + [str]
    if c.choices():
        out.append(StrOptions(set(c.choices())))
    if c.kind in ("int", "real"):
        closed = "left" if c.high is None else "both"
        out.append(Interval(Integral if c.kind == "int" else Real, c.low, c.high, closed=closed))
    return out


class _Constraints:
    """``_parameter_constraints`` built from the table on every access, so that options other
    modules add (calibrations) are seen."""

    def __get__(self, obj, owner) -> dict:
        return {name: _sklearn_constraint(CONSTRAINTS[name]) for name in owner._get_param_names()}


class GDSSelector(SelectorMixin, BaseEstimator):
    """Select ``k`` features for multi-label data by relevance plus diversity.

    A greedy selection (AltGreedy, Ghadiri & Schmidt 2019) over features discretized per
    column (see :mod:`coreselect.core.discretize`). Two quantities are traded off:

    * relevance ``g(S) = sum_l top^p_{x in S} MI(x, l)``: for each label, the ``p`` selected
      features most informative about it;
    * diversity ``D(S) = sum_{pairs in S} d(u, v)``, with ``d(u, v) = 1 - I(u, v) / H(u, v)``
      the normalized variation of information (1: independent, 0: copies).

    The default calibration, ``"auto"``, is decided from the binned data: ``"cmim"`` (below)
    where at least half the cells of the non-constant columns hold a non-zero code (dense
    numeric data), ``"information"`` elsewhere, or wherever ``lam``, ``p`` or ``relevance``
    is given. ``result_.spec["calibration"]`` says which one ran.

    Under ``"information"``, each greedy step takes the candidate
    with the best ``(1 - lam) * dg' + lam * dR'``, where ``dg`` is the candidate's relevance
    ``sum_l MI(v, l)`` (``p`` is by default larger than any selection: every selected
    feature's relevance counts), ``dR = -sum_{x in S} I(x, v)`` minus the information it
    shares with the selection in bits, and ``'`` min-max scales over the remaining
    candidates: a unit-free trade-off of relevance against redundancy, which classified
    better on the shared datasets than the paper's objective and the previous default
    ``"range"`` (docs/results/calibration.md, docs/results/scoreboard.md). It does *not*
    maximize the paper's ``h(S) = (1 - lam) * k(k-1)/(2 p |L|) * g(S) + lam * D(S)``;
    ``calibration="paper"`` does (the greedy of eq. (2), with its approximation guarantee).
    ``objective_`` reports ``h`` of the selection whichever calibration chose it
    (``"fixed"``: its own ``h``, below).

    Calibrations (``calibration=``; :data:`coreselect.core.objective.CALIBRATIONS`):

    * ``"auto"`` (default): ``"cmim"`` or ``"information"``, as above;
    * ``"information"``: as above;
    * ``"cmim"``: not a weighing: after the most relevant feature, the candidate of largest
      ``sum_l min_{s in S} I(f; l | s)``, what it still tells about each label given the
      selected feature that explains it best (CMIM; ``lam``, ``p`` and ``relevance`` do not
      apply, and no checkpoint records it);
    * ``"range"``: each gain min-max scaled over the candidates, then
      ``(1 - lam) * dg' + lam * dD'`` (with the distances; an earlier default);
    * ``"paper"``: eq. (2) exactly, ``(1 - lam) * c * dg + lam * dD`` with
      ``c = k(k-1)/(2 p |L|)``; reproduces the paper's Table 2;
    * ``"spread"``: each gain divided by its standard deviation over the candidates;
    * ``"balanced"``: as ``"range"``, but the diversity gains are scaled by at least one
      distance unit, so candidates whose diversity differs by a fraction of a distance do not
      get the full weight of the diversity term;
    * ``"ratio"``: the product ``dg^(1-lam) * (dD/|S|)^lam`` (relevance gain times a power of
      the mean distance to the selection; no exchange rate between bits and distances);
    * ``"fixed"``: one objective for the whole run, ``h = (1 - lam) g / R_g + lam D / R_D``,
      ``R_g`` the range of ``g({v})`` and ``R_D`` that of ``d(u0, v)`` over the candidates
      (``u0`` the first pick), measured once on the whole data (before partitioning in
      distributed mode); the paper's guarantees hold for it.

    All but ``"paper"`` select the same features whether MI is in bits or nats; all but
    ``"paper"`` and ``"fixed"`` take no copy (distance 0) of a selected feature while anything
    else is left.

    Parameters
    ----------
    k : int, "auto" or None, default=None
        Number of features to select. None: 10, or every selectable feature when there are
        fewer (so the default estimator fits tiny data). ``"auto"``: chosen on the training
        data by internal cross-validation of the greedy order's prefixes (:mod:`coreselect.selection.autok`:
        the order is computed once up to ``min(selectable, 100)`` features; BRkNN-b, 5 folds of
        at most 1000 rows; the larger of the best-mean k of example F1 and of macro F1, at most
        half the varying features unless the curve rises beyond by more than its standard
        error; in-memory data, ``mode="centralized"``); ``k_`` is the choice and
        ``cv_results_`` the curves.
    percentile : float in (0, 100], optional
        Select ``ceil(percentile / 100 * selectable features)`` instead (not with ``k``).
    lam : float in [0, 1], default=0.5
        Weight of diversity against relevance.
    p : int or None, default=None
        Number of features per label that count in ``g``; None: the calibration's
        (:func:`coreselect.core.objective.default_p`: ``max(3, ceil(4 k / n_labels))`` under
        ``"information"``, the paper's 10 under the others).
    relevance : {"mi", "nmi"}, default="mi"
        ``"mi"``: raw ``I(x,l)`` in bits, which is what reproduces the objective values of the
        paper's Table 2, and which classified better in our measurements (docs/results:
        better on rcv1subset1 and emotions, a tie on scene, slightly worse on Corel5k).
        ``"nmi"``: ``I(x,l)/sqrt(H(x)H(l))``, the definition in the paper's text; on sparse
        text it favours very rare words.
    calibration : str or None, default=None
        How relevance and diversity are weighed in each greedy step: one of the calibrations
        listed above. None:
        ``coreselect.core.objective.DEFAULT_CALIBRATION`` (``"auto"``).
    n_bins : int or "auto", default="auto"
        Bins per split column. ``"auto"``: three below 240 samples, five from there (on a few
        hundred rows of dense columns three bins estimate the conditional tables better;
        :func:`coreselect.core.discretize.resolve_n_bins`).
    strategy : {"auto", "quantile", "uniform", "none"}, default="auto"
        How columns with more than ``n_bins`` distinct values are split.
    min_bin_count : int, default=10
        Smallest bin of a split column (smaller ones are merged into a neighbour), at most
        ``max(1, n_samples // (2 * n_bins))``: on fewer than ``20 * n_bins`` samples the
        bound shrinks so that a column of distinct values keeps two bins or more
        (:func:`coreselect.core.discretize.effective_min_bin_count`).
    keep_constant : bool, default=False
        Constant columns carry no information but sit at distance 1 from everything, so the
        greedy would pick them for "diversity"; by default they are never selected.
        ``True`` reproduces the paper's runs.
    mode : {"centralized", "distributed", "streaming", "rows"}, default="centralized"
        ``"centralized"``: AltGreedy over all features (the paper's CGDS).
        ``"distributed"``/``"streaming"``: Algorithm 3 (DGDS), see :mod:`coreselect.selection.distributed`.
        ``"rows"``: the centralized selection, exactly, with the samples cut into
        ``row_shards`` whose count tables are summed (tall data; see :mod:`coreselect.engines.rowsharded`).
    partitions : "auto" or int, default="auto"
        Number of parts for the distributed modes (``"auto"``: ``ceil(sqrt(d / k))``).
    coreset_size : int, optional
        Features kept per part in the distributed modes (default ``k``).
    row_shards : "auto" or int, default="auto"
        Shards of the samples for ``mode="rows"`` (``"auto"``: one, or one per Dask worker).
    engine : {"local", "dask"}, default="local"
        Engine for the distributed modes. ``"dask"`` without a ``client`` starts a
        ``LocalCluster``, whose worker processes import the calling script: guard the
        script's entry point with ``if __name__ == "__main__":``.
    n_workers : int, optional
        Worker processes for the engine (default: in-process for ``local``).
    client : dask.distributed.Client, optional
        An existing Dask client (``engine="dask"``).
    random_state : int, RandomState or None
        Seed of the random partition (distributed modes). Taken, and unused, in the other
        modes, as scikit-learn expects of an estimator (:func:`coreselect.select` refuses it
        there, as the CLI refuses ``--seed``).
    backend : {"auto", "numba", "numpy"}, default="auto"
        Kernel implementation; both select the same features.
    progress : callable, optional
        ``progress(stage, done, total)`` is called as work proceeds;
        :class:`coreselect.progress.Reporter` draws it as the CLI does.

    Notes
    -----
    The parameters are checked against one table, :data:`coreselect.selection.spec.CONSTRAINTS`
    (``_parameter_constraints`` is made from it), and :func:`coreselect.select` runs the
    selection.

    Attributes
    ----------
    k_ : int
        The number of features selected (``k``, its default, the percentile's or the
        automatic choice).
    scores_ : ndarray of shape (n_features,)
        Each feature's relevance summed over the labels, ``sum_l MI(x, l)`` in bits
        (``relevance="nmi"``: the sum of the normalized form), 0 for constant columns: the
        relevance term of the objective, as ``SelectKBest.scores_`` (rank, threshold or
        percentile on it). Computed by every centralized fit (None in the other modes).
    ranking_ : ndarray of int
        The greedy order as far as the fit computed it: ``selected_`` for an integer ``k`` or
        a percentile, the order up to the cap for ``k="auto"`` (its first ``k_`` are
        ``selected_``). Under the default calibration the selection of any smaller ``k`` is
        a prefix of it.
    cv_results_ : dict or None
        ``k="auto"``: the curve (``n_features``, ``mean_test_score``, ``std_test_score``,
        ``split{i}_test_score``, as ``RFECV.cv_results_``); ``auto_k_`` has the rule, the cap
        and the best ``k``. None otherwise.
    classes_ : ndarray
        The label of each column of the label matrix: label sets and lists, and class
        vectors, sorted as ``MultiLabelBinarizer`` sorts them; a DataFrame's column names;
        otherwise ``0 .. n_labels - 1``. Explanations name the labels by them.
    selected_ : ndarray of int
        Selected column indices, in selection order (the first is the most relevant feature).
        :meth:`transform` and :meth:`get_feature_names_out` keep the column order of ``X``,
        as every scikit-learn selector does; :meth:`transform_ordered` gives the columns in
        selection order, and ``feature_names_in_[selected_]`` their names.
    objective_, relevance_, diversity_ : float
        ``h``, ``g`` and ``D`` of the selection.
    support_ : ndarray of bool
        Mask of the selected columns.
    feature_relevance_ : ndarray
        ``sum_l MI(x, l)`` of each selected feature, in selection order.
    pair_distances_ : ndarray, shape (k, k)
        Distances among the selected features, in selection order.
    label_relevance_ : ndarray, shape (k, n_labels)
        Relevance of each selected feature (selection order) to each label (with more than
        :data:`coreselect.selection.explain.MAX_FULL_LABELS` labels, to the top labels only:
        ``result_.label_ids``).
    explanations_ : list of coreselect.selection.explain.FeatureExplanation
        Why each feature was picked, in selection order: the labels for which it is among
        the top-p of the selection, its share of ``g``, and its nearest selected neighbour by
        ``d``. Label names come from ``Y``'s columns when ``Y`` is a DataFrame (the labels
        themselves for label sets).
    result_ : coreselect.selection.strategies.SelectionResult
        The full result of the run (per-part selections for the distributed modes).
    seconds_ : float
        Time spent in discretization plus selection.
    timings_ : dict
        Seconds per stage: ``discretize``, ``relevance``, ``select`` (distributed modes:
        ``engine_start``, ``parts``, ``union`` instead of ``select``).
    """

    _parameter_constraints = _Constraints()

    def __init__(
        self,
        k: int | str | None = default("k"),
        *,
        percentile: float | None = default("percentile"),
        lam: float = default("lam"),
        p: int | None = default("p"),
        relevance: str = default("relevance"),
        calibration: str | None = default("calibration"),
        n_bins: int = default("n_bins"),
        strategy: str = default("strategy"),
        min_bin_count: int = default("min_bin_count"),
        keep_constant: bool = default("keep_constant"),
        mode: str = default("mode"),
        partitions: str | int = default("partitions"),
        coreset_size: int | None = default("coreset_size"),
        row_shards: str | int = default("row_shards"),
        engine: str = default("engine"),
        n_workers: int | None = default("n_workers"),
        client=None,
        random_state=None,
        backend: str = default("backend"),
        progress: Callable[[str, int, int], None] | None = None,
    ):
        self.k = k
        self.percentile = percentile
        self.lam = lam
        self.p = p
        self.relevance = relevance
        self.calibration = calibration
        self.n_bins = n_bins
        self.strategy = strategy
        self.min_bin_count = min_bin_count
        self.keep_constant = keep_constant
        self.mode = mode
        self.partitions = partitions
        self.coreset_size = coreset_size
        self.row_shards = row_shards
        self.engine = engine
        self.n_workers = n_workers
        self.client = client
        self.random_state = random_state
        self.backend = backend
        self.progress = progress

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y):
        """Select ``k`` columns of ``X`` (dense or sparse) for the labels ``Y``.

        ``Y`` is a binary (n_samples, n_labels) matrix, dense or sparse (a DataFrame's columns
        name the labels); label lists as scikit-learn's ``MultiLabelBinarizer`` takes them
        (a list, tuple, 1-D object array or pandas Series of sets, lists or tuples of labels:
        ``[["rock", "pop"], ["jazz"], []]``; one column per label that occurs, in sorted
        order); or a 1-D vector of classes, one-hot encoded (one binary label per class, one
        label for two classes). Equal-length lists of 0s and 1s are a 0/1 matrix when some
        row holds a value twice, and refused as ambiguous when none does (pass a numpy array
        for a matrix). Complex values, string matrices and deeper nesting are refused
        (:class:`~coreselect.errors.InputTypeError`).
        """
        import scipy.sparse as sp

        from coreselect.selection.sources import check_sparse_structure

        if sp.issparse(X):
            check_sparse_structure(X)  # before scikit-learn's validation reads the arrays
        try:
            X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype="numeric",
                              ensure_min_samples=2, ensure_all_finite=True)
        except ValueError as exc:  # scikit-learn's message, in one line (its first)
            first = str(exc).strip().split("\n", 1)[0]
            if "NaN" in first or "infinity" in first:
                first += " GDSSelector needs finite values: impute or drop the missing ones first."
            raise InputError(first) from None
        # The spec, strategy and source are built in one place: coreselect.selection.select.
        # random_state seeds the partition of mode distributed/streaming only; the library
        # refuses it elsewhere (coreselect.selection.spec.UNUSED), the estimator takes it as every
        # scikit-learn estimator does (scikit-learn's checks and searches set it on any mode).
        params = self.get_params(deep=False)
        if self.mode not in ("distributed", "streaming"):
            params["random_state"] = None
        result = select(X, Y, **params)
        self.result_ = result
        self.selected_ = result.selected
        self.objective_ = result.objective
        self.relevance_ = result.relevance
        self.diversity_ = result.diversity
        self.feature_relevance_ = result.feature_relevance
        self.pair_distances_ = result.pair_distances
        self.label_relevance_ = result.label_relevance
        names = getattr(self, "feature_names_in_", None)
        picked = ([str(names[i]) for i in self.selected_] if names is not None
                  else [f"x{i}" for i in self.selected_])
        from coreselect.selection.explain import explain_selection

        self.explanations_ = explain_selection(
            result.label_relevance, int(result.spec["p"]), result.pair_distances,
            feature_names=picked,
            label_names=result.shown_label_names())
        self.k_ = int(len(result.selected))
        self.scores_ = None if result.scores is None else np.nan_to_num(result.scores)
        self.ranking_ = np.asarray(result.ranking, dtype=np.int64)
        self.auto_k_ = result.auto_k
        self.cv_results_ = None if result.auto_k is None else dict(result.auto_k.cv_results)
        n_labels = int(result.n_labels or 0)
        labels = result.label_names
        self.classes_ = (np.asarray(result.label_classes)
                         if result.label_classes is not None
                         else np.asarray(labels) if labels is not None
                         else np.arange(n_labels))
        self.timings_ = result.timings
        self.seconds_ = result.seconds
        self.support_ = np.zeros(X.shape[1], dtype=bool)
        self.support_[self.selected_] = True
        return self

    def transform_ordered(self, X):
        """``X`` reduced to the selected columns in *selection order* (``X[:, selected_]``),
        where :meth:`transform` keeps the column order of ``X``."""
        check_is_fitted(self, "support_")
        # transform's columns (X's order), put in selection order: set_output (pandas,
        # polars) and every check of transform apply alike.
        out = self.transform(X)
        order = np.searchsorted(np.sort(self.selected_), self.selected_)
        if hasattr(out, "iloc"):  # pandas
            return out.iloc[:, order]
        if hasattr(out, "select") and hasattr(out, "columns"):  # polars
            return out.select([out.columns[i] for i in order])
        return out[:, order]

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "support_")
        return self.support_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = False
        return tags
