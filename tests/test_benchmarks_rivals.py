"""benchmarks/rivals.py: the leave-one-dataset-out choice of the default never looks at the
held-out set (issue 30, point 6)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _rivals():
    sys.path.insert(0, str(BENCH))
    try:
        import rivals
    finally:
        sys.path.remove(str(BENCH))
    return rivals


def _cells(dataset: str, method: str, mean: float) -> list[dict]:
    return [dict(dataset=dataset, method=method, evaluator="brknn", measure=ms, k=k, fold=f,
                 value=mean + 0.01 * (f - 1))
            for ms in ("example_f1", "macro_f1") for k in (10, 20) for f in range(3)]


def test_the_pick_is_made_on_the_other_sets_and_scored_on_the_held_out_one():
    rivals = _rivals()
    good = {"gds": {"emotions": 0.6, "scene": 0.6, "yeast": 0.1},
            "gds-nmi": {"emotions": 0.1, "scene": 0.6, "yeast": 0.6}}
    rows = []
    for d in ("emotions", "scene", "yeast"):
        rows += _cells(d, "pmu", 0.5) + _cells(d, "random", 0.3)
        for c, by in good.items():
            rows += _cells(d, c, by[d])
    per, cells = rivals.leave_one_dataset_out(pd.DataFrame(rows), ["gds", "gds-nmi"])
    picks = dict(zip(per.dataset, per.pick))
    # held out yeast: gds wins on both others; held out scene: equal share and rank, so the
    # first candidate (the library default)
    assert picks == {"emotions": "gds-nmi", "scene": "gds", "yeast": "gds"}
    held = cells.groupby("dataset")["verdict"].agg(set)
    assert held["emotions"] == {"loss"} and held["yeast"] == {"loss"} and held["scene"] == {"win"}
    assert cells.groupby("dataset")["below_random"].all().to_dict() == {
        "emotions": True, "scene": False, "yeast": True}
    # pmu (0.5) is above random (0.3) in every cell: no rival below random beside the pick
    assert set(cells.rivals_below_random) == {0} and set(cells.rivals) == {1}


def test_rivals_below_random_are_counted_per_cell():
    """A cell says how many rivals are below random too (more than the larger fold std)."""
    rivals = _rivals()
    rows = _cells("scene", "random", 0.5) + _cells("scene", "gds", 0.4)
    rows += _cells("scene", "pmu", 0.45) + _cells("scene", "l1", 0.6) + _cells("scene", "trees", 0.49)
    v = rivals.verdicts(pd.DataFrame(rows))
    # each cell's three folds differ by 0.01: std 0.01; trees (0.49) is within it of random
    assert set(v.below_random) == {True} and set(v.rivals_below_random) == {1}
    assert set(v.rivals) == {3} and set(v.best) == {"l1"}


def test_ties_in_share_go_to_the_better_mean_rank():
    rivals = _rivals()
    rows = []
    for d in ("emotions", "scene", "yeast"):
        rows += _cells(d, "pmu", 0.5) + _cells(d, "gds", 0.51) + _cells(d, "gds-nmi", 0.52)
    per, _ = rivals.leave_one_dataset_out(pd.DataFrame(rows), ["gds", "gds-nmi"])
    assert set(per.pick) == {"gds-nmi"}  # both tie every cell; gds-nmi ranks first


def test_the_pick_serves_the_worse_kind_of_data_first():
    """More sparse sets than dense ones must not outvote the dense ones: a candidate that wins
    every sparse set and loses every dense one (the larger share over all cells) loses the
    pick to one that holds on both kinds."""
    rivals = _rivals()
    good = {"gds": {"emotions": 0.6, "scene": 0.6, "genbase": 0.6, "medical": 0.1,
                    "enron": 0.1, "bibtex": 0.1, "yeast": 0.6},
            "gds-range": {"emotions": 0.1, "scene": 0.1, "genbase": 0.6, "medical": 0.6,
                          "enron": 0.6, "bibtex": 0.6, "yeast": 0.1}}
    rows = []
    for d in good["gds"]:
        rows += _cells(d, "pmu", 0.5)
        for c, by in good.items():
            rows += _cells(d, c, by[d])
    per, _ = rivals.leave_one_dataset_out(pd.DataFrame(rows), ["gds", "gds-range"])
    row = per.set_index("dataset").loc["yeast"]
    assert row.pick == "gds" and row.worst == 0.25 and row.share == 0.5


def test_ranks_use_only_cells_where_every_method_ran_and_split_dense_from_sparse():
    rivals = _rivals()
    methods = ["gds", "pmu", "random"]
    rows = []
    for d, order in (("emotions", (0.6, 0.5, 0.3)), ("scene", (0.2, 0.5, 0.3)),
                     ("medical", (0.6, 0.5, 0.3))):
        for m, mean in zip(methods, order):
            rows += _cells(d, m, mean)
    rows += _cells("enron", "gds", 0.9)  # no rival ran there: not a ranked cell
    rows += [dict(r, k=30) for r in _cells("medical", "gds", 0.4) + _cells("medical", "pmu", 0.4)
             + _cells("medical", "random", 0.4)]  # every method equal (k = every feature)
    df = pd.DataFrame(rows)
    cells = rivals.rank_cells(df, methods)
    assert set(cells.index.get_level_values("dataset")) == {"emotions", "scene", "medical"}
    assert 30 not in set(cells.index.get_level_values("k"))
    pw = rivals.pairwise(df, rivals=["pmu", "random"])
    got = pw.groupby(["dataset", "rival"])["verdict"].agg(set).to_dict()
    assert got[("emotions", "pmu")] == {"win"} and got[("scene", "pmu")] == {"loss"}
    lines = rivals.ranks_section(df, ["emotions", "scene", "medical"], methods=methods, out=None)
    text = "\n".join(lines)
    # dense: gds first on emotions, last on scene -> 2.0; sparse: first on medical -> 1.0
    assert "| dense sets | 8 | 3 |" in text and "| sparse sets | 4 | 3 |" in text
    assert "2.00 (" in text and "1.00 (1 of 3)" in text
