"""How many of each label's selected features count on sparse data: the top-p cut of the
weighing (``calibration="information"``, what ``"auto"`` takes on sparse data), chosen
leave-one-dataset-out against every rival, with a guard on data with few labels.

    python benchmarks/sparse_research.py run [--datasets genbase,medical,...] [--folds 3]
    python benchmarks/sparse_research.py few [--datasets medical,bibtex,...] [--labels 2,5,10]
    python benchmarks/sparse_research.py report

Under ``"information"`` a candidate's relevance gain for a label is what it adds above that
label's ``p``-th best selected relevance (the paper's top-p sum). ``p`` counting every selected
feature (``p-all``, the default before) lets the labels with the most information draw pick
after pick; a small ``p`` sends the next picks to labels not yet served, but on data with few
labels it runs dry (every label holds its ``p`` best) and leaves the redundancy alone to pick.
The candidates: ``p-all``; ``p-3``, three per label; ``p-kC``, ``max(3, ceil(C k / |L|))``,
room in the labels' lists for ``C`` times the selection (``k`` the selection asked for, so it
grows with ``k``); ``p-NC``, ``max(3, ceil(C / |L|))``, room for ``C`` features whatever
``k`` (a selection of ``k`` stays the prefix of a longer one).

``run`` cross-validates each candidate with ``run_protocol`` (what ``coreselect evaluate``
runs: selection fit on the training folds only, seed 0) on the folds, k and evaluators of
``benchmarks/rivals.py run``; one CSV per dataset in docs/results/sparse_research/. ``few``
keeps only the 2, 5 and 10 most frequent labels of some of these sets (the same rows and
columns): there ``p`` decides most, so each candidate is put beside ``p-all`` cell by cell.
``report`` puts the rows beside rivals.md's (``gds``, the default, and every rival come from
there) and writes docs/results/sparse_research.md: every candidate's cells against the best
rival, the few-label guard, and the pick of a leave-one-dataset-out choice among the candidates
that pass the guard, for each held-out set.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import REPO_ROOT, emit, md_table, save_method_rows  # noqa: E402
from published import ORDER, load_rows  # noqa: E402
from dense_research import _Ranker, beside_rivals, candidate_rows, paired, win_tie_loss  # noqa: E402
from rivals import (DENSE, MEASURES, OUT as RIVALS_OUT, RIVALS, _counts, _share,  # noqa: E402
                    leave_one_dataset_out, verdicts)

OUT = REPO_ROOT / "docs" / "results" / "sparse_research"
REPORT = REPO_ROOT / "docs" / "results" / "sparse_research.md"
SPARSE = [d for d in ORDER if d not in DENSE]
FEW_SETS = ["medical", "bibtex", "tmc2007-500", "enron", "rcv1subset1"]
FEW_LABELS = (2, 5, 10)
#: a candidate passes the few-label guard when it loses to ``p-all`` in at most this share of
#: the few-label cells (a loss: the means differ by more than the larger fold std)
GUARD = 0.05

#: candidate -> (rule, constant): "all", ("fixed", p), ("k", C): max(3, ceil(C k / |L|)),
#: ("n", C): max(3, ceil(C / |L|))
RULES: dict[str, tuple] = {
    "p-all": ("all", None), "p-3": ("fixed", 3),
    "p-k1": ("k", 1), "p-k2": ("k", 2), "p-k4": ("k", 4),
    "p-N100": ("n", 100), "p-N200": ("n", 200),
}
#: the candidate the library's default is (coreselect.core.objective.default_p)
LIBRARY = "p-k4"


def p_for(name: str, k: int, n_labels: int) -> int | None:
    """The ``p`` of candidate ``name`` for ``k`` features and ``n_labels`` labels (None: every
    selected feature)."""
    rule, c = RULES[name]
    if rule == "all":
        return None
    if rule == "fixed":
        return int(c)
    return max(3, math.ceil((c * k if rule == "k" else c) / n_labels))


class _TopP(_Ranker):
    """Centralized GDS, ``calibration="information"``, with the ``p`` of one :data:`RULES`
    candidate (``kind``); a ranker (fit once per fold) when its ``p`` does not depend on
    ``k``."""

    @property
    def is_ranker(self) -> bool:
        return RULES[self.kind][0] != "k"

    def fit(self, X, Y) -> "_TopP":
        from coreselect.evaluation.gds import CalibratedGDS

        p = p_for(self.kind, self.k, Y.shape[1])
        inner = CalibratedGDS(k=self.k, calibration="information", p=p or 2**31 - 1,
                              random_state=self.seed).fit(X, Y)
        self.selected_, self.seconds_ = inner.selected_, inner.seconds_
        return self


def _made(names: list[str]) -> dict:
    return {m: (lambda m: lambda k, seed: _TopP(k, seed, m))(m) for m in names}


def run(datasets: list[str], methods: list[str], folds: int, max_rows: int) -> None:
    from _common import cross_validate

    for name in datasets:
        X, Y, n_rows = load_rows(name, max_rows)
        theirs = pd.read_csv(RIVALS_OUT / f"{name}.csv")
        ks = sorted(set(theirs[theirs.method == "gds"].k))
        evs = tuple(sorted(set(theirs.evaluator)))
        cross_validate(name, X, Y, n_rows, _made(methods), ks, OUT, folds, evs)


def few(datasets: list[str], labels: tuple[int, ...], methods: list[str], folds: int,
        max_rows: int) -> None:
    """The candidates on each set with only its ``labels`` most frequent labels kept."""
    from coreselect.evaluation.protocol import run_protocol

    for name in datasets:
        X, Y, _ = load_rows(name, max_rows)
        Y = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y)
        for n_labels in labels:
            keep = np.argsort(-Y.sum(axis=0), kind="stable")[:n_labels]
            df = run_protocol(X, Y[:, keep], _made(methods), [10, 20, 50, 100], n_folds=folds,
                              seed=0, evaluator=("brknn", "linear"))
            df = df[df.measure.isin(MEASURES)].copy()
            df.insert(0, "dataset", f"{name}, {n_labels} labels")
            save_method_rows(df, OUT / f"few_{name}_{n_labels}.csv", methods)
            print(f"{name}, {n_labels} labels: done", flush=True)


def load_all() -> pd.DataFrame:
    return beside_rivals([p for p in sorted(OUT.glob("*.csv")) if not p.name.startswith("few_")])


def few_against_all(names: list[str]) -> pd.DataFrame:
    """Per few-label set and candidate: its win/tie/loss against ``p-all``, cell by cell."""
    rows = []
    for p in sorted(OUT.glob("few_*.csv")):
        df = pd.read_csv(p)
        for c in names:
            if c == "p-all" or c not in set(df.method):
                continue
            diff, tol = paired(df, c, "p-all")
            win, _, loss = win_tie_loss(diff, tol)
            rows.append(dict(dataset=df.dataset.iloc[0], method=c, win=win, loss=loss,
                             cells=len(diff)))
    return pd.DataFrame(rows)


def report() -> None:
    df = load_all()
    names = [c for c in RULES if c in set(df.method)]
    sets = [d for d in SPARSE if d in set(df.dataset)]
    rows = candidate_rows(df, names, sets,
                          what=lambda c: "the library default" if c == LIBRARY else "")
    v = verdicts(df, "gds")
    rows.append(["`gds`", "the default as rivals.md ran it", "", _share(v), _counts(v),
                 int(v.below_random.sum()),
                 *[_counts(v[v.dataset == d]) if (v.dataset == d).any() else "–" for d in sets]])
    table = md_table(["candidate", "note", f"mean rank among it, the {len(RIVALS)} rivals and "
                      "random (cells)", "win or tie", "win/tie/loss", "below random", *sets],
                     rows, align="llllll" + "l" * len(sets))
    fw = few_against_all(names)
    guard_rows, passing = [], ["p-all"]
    for c in [n for n in names if n != "p-all"]:
        f = fw[fw.method == c]
        if f.empty:
            continue
        cells, wins, losses = int(f.cells.sum()), int(f.win.sum()), int(f.loss.sum())
        ok = losses <= GUARD * cells
        passing += [c] if ok else []
        worst = f.sort_values("loss").iloc[-1]
        guard_rows.append([f"`{c}`", f"{wins}/{cells - wins - losses}/{losses}",
                           f"{losses / cells:.1%}", f"{worst.dataset} ({int(worst.loss)})",
                           "yes" if ok else "no"])
    guard = md_table(["candidate", "against `p-all`: win/tie/loss", "loss share",
                      "most losses", "passes"], guard_rows, align="lllll")
    per, cells = leave_one_dataset_out(df[df.method.isin([*passing, *RIVALS, "random"])],
                                       passing)
    lodo = md_table(["held out", "pick (on the others)", "win/tie/loss there"],
                    [[r.dataset, f"`{r.pick}`", _counts(r.cells)] for r in per.itertuples()],
                    align="lll")
    few_sets = sorted({d.split(",")[0] for d in fw.dataset}) if len(fw) else []
    body = (
        "Candidates: centralized GDS with `calibration=\"information\"` (what the default "
        "takes on sparse data) and the top-p cut of each rule: `p-all` counts every selected "
        "feature (the default before); `p-3` each label's three best; `p-kC` is "
        "max(3, ceil(C k / |L|)), room in the labels' lists for C times the k features asked "
        "for; `p-NC` is max(3, ceil(C / |L|)), room for C features whatever k. Same protocol "
        "as [rivals.md](rivals.md) (3 folds, seed 0, BRkNN-b and the linear evaluator where "
        "rivals.md ran it, example and macro F1, k in {10, 20, 50, 100} below the selectable "
        "columns); `gds` and the rivals' rows are rivals.md's. A cell is a win or a loss "
        f"against the best of the {len(RIVALS)} rivals when the means differ by more than the "
        "larger fold standard deviation.\n\n## The sparse sets\n\n" + table
        + "\n\n## Few labels\n\nThe same rows and columns of " + ", ".join(few_sets)
        + " with only their " + ", ".join(str(n) for n in FEW_LABELS) + " most frequent "
        "labels, where a small p runs dry first: each candidate against `p-all`, cell by "
        "cell (BRkNN-b and the linear evaluator, example and macro F1, k in {10, 20, 50, "
        f"100}}). A candidate passes when it loses at most {GUARD:.0%} of these cells "
        "(written by `python benchmarks/sparse_research.py few`):\n\n" + guard
        + "\n\n## The choice\n\nLeave-one-dataset-out among the candidates that pass ("
        + ", ".join(f"`{c}`" for c in passing) + "; rule of rivals.md: the largest share of "
        "win-or-tie cells on the other sparse sets, ties to the smaller mean rank):\n\n"
        + lodo + "\n\nTotals of the picks on their held-out sets: " + _share(cells)
        + " win or tie (" + _counts(cells) + "), " + str(int(cells.below_random.sum()))
        + " below random. The library's default for `information` is `" + LIBRARY + "` "
        "(`coreselect.core.objective.default_p`).")
    emit("The top-p cut on sparse data", body, str(REPORT))


def main() -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = p.add_subparsers(dest="cmd", required=True,
                           help="run: the candidates on the sparse sets; few: on few labels; "
                                "report: write the table")
    r = sub.add_parser("run", help="cross-validate the candidates on the sparse sets")
    r.add_argument("--datasets", default=",".join(SPARSE), help="comma-separated dataset names")
    r.add_argument("--methods", default=",".join(RULES), help="comma-separated candidates")
    r.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    r.add_argument("--max-rows", type=int, default=6000, help="random row cut (seed 0)")
    f = sub.add_parser("few", help="the candidates on the sets with few labels kept")
    f.add_argument("--datasets", default=",".join(FEW_SETS), help="comma-separated dataset names")
    f.add_argument("--labels", default=",".join(map(str, FEW_LABELS)),
                   help="comma-separated numbers of most frequent labels kept")
    f.add_argument("--methods", default=",".join(RULES), help="comma-separated candidates")
    f.add_argument("--folds", type=int, default=3, help="cross-validation folds")
    f.add_argument("--max-rows", type=int, default=6000, help="random row cut (seed 0)")
    sub.add_parser("report", help="write docs/results/sparse_research.md")
    a = p.parse_args()
    if a.cmd == "run":
        run(a.datasets.split(","), a.methods.split(","), a.folds, a.max_rows)
    elif a.cmd == "few":
        few(a.datasets.split(","), tuple(int(x) for x in a.labels.split(",")),
            a.methods.split(","), a.folds, a.max_rows)
    else:
        report()


if __name__ == "__main__":
    main()
