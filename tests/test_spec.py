"""The one table of parameters: its checks, the spec objects, and scikit-learn's view of it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coreselect.errors import DatasetError, InputError
from coreselect.selection.spec import CONSTRAINTS, Binning, Objective, check, default


@pytest.mark.parametrize("name, value", [
    ("k", 0), ("k", 2.0), ("k", True), ("k", "3"), ("lam", 1.5), ("lam", -0.1),
    ("lam", float("nan")), ("p", 0), ("relevance", "x"), ("calibration", "x"), ("n_bins", 1),
    ("strategy", "x"), ("min_bin_count", 0), ("keep_constant", "yes"), ("mode", "x"),
    ("partitions", 0), ("partitions", "many"), ("coreset_size", 0), ("engine", "spark"),
    ("n_workers", 0), ("backend", "x"), ("scheduler", 8786), ("random_state", "x")])
def test_bad_values_are_one_line_input_errors(name, value):
    with pytest.raises(InputError) as exc:
        check(name, value)
    message = str(exc.value)
    assert message.startswith(f"{name} must be ") and repr(value) in message
    assert "\n" not in message


@pytest.mark.parametrize("name, value", [
    ("k", 1), ("k", np.int64(3)), ("lam", 0), ("lam", 1.0), ("lam", np.float32(0.5)),
    ("relevance", "nmi"), ("calibration", None), ("partitions", "auto"), ("partitions", 4),
    ("coreset_size", None), ("n_workers", None), ("keep_constant", np.bool_(True)),
    ("random_state", np.random.RandomState(0)), ("scheduler", "tcp://h:8786")])
def test_good_values_pass(name, value):
    assert check(name, value) is value


def test_every_default_passes_its_own_check():
    for name, constraint in CONSTRAINTS.items():
        check(name, constraint.default)


def test_objective_and_binning_are_checked_on_construction():
    # k's default (None: 10 capped at the selectable features) and "auto" are resolved by
    # select before an Objective is made; the Objective itself needs a number.
    assert Objective() == Objective(k=10, lam=default("lam"), p=default("p"))
    with pytest.raises(InputError, match="needs a number of features"):
        Objective(k=None)
    with pytest.raises(InputError, match="^k must be .*an integer >= 1.*, got 0$"):
        Objective(k=0)
    with pytest.raises(InputError, match="lam"):
        Objective(lam=2)
    with pytest.raises(InputError, match="n_bins"):
        Binning(n_bins=1)
    with pytest.raises(InputError, match="strategy"):
        Binning(strategy="kmeans")
    params = Objective(k=4, lam=0.25, p=2).params(n_labels=3)
    assert (params.k, params.lam, params.p, params.n_labels) == (4, 0.25, 2, 3)


def test_calibration_is_read_when_used(monkeypatch):
    """Other modules add calibrations and change the default: the spec reads both late."""
    import coreselect.core.objective as objective

    assert Objective(k=10).calibration == objective.DEFAULT_CALIBRATION
    monkeypatch.setattr(objective, "CALIBRATIONS", objective.CALIBRATIONS + ("other",))
    monkeypatch.setattr(objective, "DEFAULT_CALIBRATION", "other")
    assert Objective(k=10).calibration == "other"
    assert Objective(k=10).params(2).calibration == "other"
    assert "other" in CONSTRAINTS["calibration"].choices()

    from coreselect.selector import GDSSelector

    options = GDSSelector._parameter_constraints["calibration"][1].options
    assert "other" in options


# -- the table seen by scikit-learn agrees with our checks ------------------------------------------
_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 12), st.floats(allow_nan=True),
    st.sampled_from(sorted({o for c in CONSTRAINTS.values() for o in c.choices()} | {"x", ""})),
    st.just(np.random.RandomState(0)), st.just(print), st.just(np.int64(2)),
    st.just(np.float64(0.5)))


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(set(CONSTRAINTS) - {"client"})), value=_values)
def test_sklearn_constraints_agree_with_check(name, value):
    from sklearn.utils._param_validation import (
        InvalidParameterError,
        validate_parameter_constraints,
    )

    from coreselect.selector import _sklearn_constraint

    if isinstance(value, bool) and CONSTRAINTS[name].kind in ("int", "real", "random_state"):
        # scikit-learn takes True for 1; ours refuses it (k=True is a mistake).
        # GDSSelector then raises our InputError (a ValueError) from fit.
        return
    try:
        check(name, value)
        ours = True
    except InputError:
        ours = False
    try:
        validate_parameter_constraints({name: _sklearn_constraint(CONSTRAINTS[name])},
                                       {name: value}, caller_name="test")
        theirs = True
    except InvalidParameterError:
        theirs = False
    assert ours == theirs, (name, value)


# -- the flat library call ---------------------------------------------------------------------------
def test_select_builds_spec_strategy_and_source():
    from coreselect import AltGreedy, DistributedGreedy, InMemorySource, select
    from coreselect.datasets import make_synthesized
    from coreselect.selection import as_source, make_strategy

    ds = make_synthesized(random_state=4)
    assert isinstance(make_strategy("centralized"), AltGreedy)
    stream = make_strategy("streaming", partitions=3)
    assert isinstance(stream, DistributedGreedy) and stream.streaming
    with pytest.raises(InputError, match="mode"):
        make_strategy("parallel")
    with pytest.raises(InputError, match="partitions"):
        make_strategy("centralized", partitions=0)  # checked even where unused
    obj = Objective(k=5, relevance="nmi")
    a = select(ds, k=5, relevance="nmi")  # a Dataset: its candidate columns and names
    b = AltGreedy().run(obj, InMemorySource(ds.X, ds.Y))
    np.testing.assert_array_equal(a.selected, b.selected)
    assert a.names == [ds.feature_names[i] for i in a.selected] and b.names is None
    assert a.data["dataset"] == ds.name
    src = as_source(ds.X, ds.Y, n_bins=3)
    assert src.binning == Binning(n_bins=3)
    with pytest.raises(InputError, match="source itself"):
        as_source(src, n_bins=4)
    # A path that is not a folder is read as the command line reads it (coreselect.load).
    with pytest.raises(DatasetError, match="no such file"):
        select("some-file.arff", k=3)


def test_id_columns_are_never_candidates():
    from coreselect import select
    from coreselect.io.dataset import Dataset

    rng = np.random.default_rng(0)
    Y = (rng.random((60, 2)) < 0.5).astype(int)
    X = np.hstack([np.arange(60)[:, None], Y * 2.0, rng.random((60, 3))])
    ds = Dataset(X, Y, [f"f{i}" for i in range(6)], ["a", "b"], meta={"id_columns": [0]})
    res = select(ds, k=5)
    assert 0 not in res.selected and sorted(res.selected) == [1, 2, 3, 4, 5]
    assert res.data["n_features"] == 6
