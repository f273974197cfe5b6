"""The default against every rival on small dense data: the four dense sets cut to a few
hundred rows (and some to a few dozen columns), the size of most public dense multi-label sets.

    python benchmarks/small_dense.py run [--sets emotions-r200,scene-r300,...] [--folds 3]
                                         [--methods gds,atr,...]
    python benchmarks/small_dense.py auto [--sets ...] [--folds 3]
    python benchmarks/small_dense.py sparse [--sets ...] [--folds 3]
    python benchmarks/small_dense.py coarse [--sets ...] [--folds 3]
    python benchmarks/small_dense.py nominal [--sets ...] [--folds 3]
    python benchmarks/small_dense.py report

``run`` is ``benchmarks/rivals.py run`` (``run_protocol``, what ``coreselect evaluate`` runs;
selection fit on the training folds only, seed 0) on cuts of emotions, scene, yeast and
CAL500 (:data:`CUTS`: random rows and columns, seed 1; the smallest drawn again with seed 2),
scored by BRkNN-b and the linear evaluator at the ks of :data:`CUTS` (at most half the
columns); ``--methods`` also takes the candidates of ``dense_research.py``; one CSV per cut in
docs/results/small_dense/. ``auto`` runs the default with ``k="auto"`` (docs/results/
small_dense/auto/). ``sparse`` and ``coarse`` run the default and ``gds-five`` (five bins at
every size) on rcv1subset1 cut to a few hundred rows (:data:`SPARSE_CUTS`) and on the small
cuts with every column first cut into 4 or 5 levels (:data:`COARSE_CUTS`): what the default's
three bins below 240 rows change there. ``nominal`` runs the default on the small cuts with
every column first cut into 6 to 10 levels (:data:`NOMINAL_CUTS`), which the selection sees in
their order or under codes in no order (a nominal attribute's), grouped by frequency or not.
``report`` writes docs/results/small_dense.md: the
default against the best of all rivals per cell, below random, average ranks with the Friedman
test and the Nemenyi critical difference, the pairwise win/tie/loss (the tables of rivals.md);
each candidate in the default's place by band of training rows; a rule "the candidate below a
number of training rows" with the number chosen leave-one-dataset-out, and the default's
against five bins; the sparse, coarse and nominal cuts; and ``k="auto"`` against the best fixed k.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import REPO_ROOT, cross_validate, emit, md_table  # noqa: E402
from published import load_rows  # noqa: E402
import dense_research as DR  # noqa: E402
import rivals as R  # noqa: E402

OUT = REPO_ROOT / "docs" / "results" / "small_dense"
REPORT = REPO_ROOT / "docs" / "results" / "small_dense.md"
#: the seed of the random rows and columns
SEED = 1
#: cut name: (dense set, rows, columns or None for all, ks, seed); rows and columns drawn at
#: random, ks at most half the columns
CUTS = {
    "emotions-r200": ("emotions", 200, None, [5, 10, 20], SEED),
    "CAL500-r250": ("CAL500", 250, None, [5, 10, 20], SEED),
    "scene-r300": ("scene", 300, None, [5, 10, 20, 50], SEED),
    "scene-r300-c40": ("scene", 300, 40, [5, 10, 20], SEED),
    "yeast-r300": ("yeast", 300, None, [5, 10, 20, 50], SEED),
    "yeast-r300-c20": ("yeast", 300, 20, [5, 10], SEED),
}
#: a ladder of sizes on the two larger dense sets (and the smaller two cut further), to see
#: where a criterion's estimates become reliable enough to pay
LADDER = {f"{parent}-r{rows}": (parent, rows, None, ks, SEED)
          for parent, sizes, ks in (("scene", (200, 450, 600, 900, 1200), [5, 10, 20, 50]),
                                    ("yeast", (200, 450, 600, 900, 1200), [5, 10, 20, 50]),
                                    ("emotions", (150, 300, 400), [5, 10, 20]),
                                    ("CAL500", (150, 350), [5, 10, 20]))
          for rows in sizes}
CUTS.update(LADDER)
#: the small cuts drawn again (seed 2): whether what they say holds on other rows
REDRAWN = {f"{name}-s2": (*CUTS[name][:4], 2) for name in (
    "emotions-r150", "emotions-r200", "emotions-r300", "scene-r200", "scene-r300", "yeast-r200",
    "yeast-r300", "CAL500-r150", "CAL500-r250")}
CUTS.update(REDRAWN)
#: sparse columns with few rows: of the older sparse sets only rcv1subset1 has columns of more
#: than three values (the others are 0/1), the one place the default's bins change there
SPARSE_CUTS = {f"rcv1subset1-r{rows}" + ("-s2" if seed == 2 else ""):
               ("rcv1subset1", rows, None, [5, 10, 20, 50], seed)
               for rows in (150, 200, 300) for seed in (SEED, 2)}


#: columns of four or five values (ordinal codes): the small dense cuts with every column of
#: the parent coarsened to 4 or 5 equal-frequency levels (alternating), where the default's
#: three bins merge values that five bins keep
COARSE_CUTS = {f"{name}-q45": CUTS[name] for name in (
    "emotions-r150", "emotions-r200", "emotions-r300", "scene-r200", "scene-r300", "yeast-r200",
    "yeast-r300", "CAL500-r150", "CAL500-r250", "emotions-r200-s2", "scene-r200-s2",
    "yeast-r200-s2", "CAL500-r150-s2")}
#: the same small cuts with every column cut into 6, 8 or 10 levels, which the selectors see
#: under codes in no order (a nominal attribute: its declared values carry no order)
NOMINAL_CUTS = {f"{name[:-4]}-nom": cut for name, cut in COARSE_CUTS.items()}
#: every cut by name
ALL_CUTS = {**CUTS, **SPARSE_CUTS, **COARSE_CUTS, **NOMINAL_CUTS}


def leveled(X: np.ndarray, levels: tuple[int, ...]) -> np.ndarray:
    """Every column cut into equal-frequency levels (0, 1, ...) over all its rows, column ``j``
    into ``levels[j % len(levels)]``: codes with the column's own signal, in their order
    (``(4, 5)``: the coarse cuts; ``(6, 8, 10)``: the nominal cuts' categories)."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        count = levels[j % len(levels)]
        cuts = np.quantile(X[:, j], np.arange(1, count) / count)
        out[:, j] = np.searchsorted(np.unique(cuts), X[:, j], side="right")
    return out


def unordered(X: np.ndarray) -> np.ndarray:
    """The levels of :func:`leveled` under codes in no order: each column's own random
    permutation of its codes (seeded by the column), as a nominal attribute's declaration
    order would code them."""
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        perm = np.random.default_rng(1000 + j).permutation(int(X[:, j].max()) + 1)
        out[:, j] = perm[X[:, j].astype(np.int64)]
    return out


def most_frequent(X: np.ndarray, keep: int) -> np.ndarray:
    """Each column's ``keep - 1`` most frequent codes kept (ties: the smaller code), the
    others pooled into one code."""
    out = np.zeros_like(X)
    for j in range(X.shape[1]):
        values, counts = np.unique(X[:, j], return_counts=True)
        top = values[np.lexsort((values, -counts))][:keep - 1]
        for i, v in enumerate(top):
            out[X[:, j] == v, j] = i + 1
    return out


class Nominal(DR._Ranker):
    """The default on the nominal cuts as a ranker: the evaluators see the levels in order
    (``fit`` is given them), the selection sees them as ``how`` says: ``"ordered"`` the levels
    themselves (what ordered codes give), ``"unordered"`` codes in no order (the default as
    it takes a nominal attribute), ``"frequent"`` those codes with the most frequent
    categories kept and the rest pooled, as many groups as the default's bins for the rows,
    ``"every"`` those codes with every category its own bin (``n_bins=10``)."""

    def __init__(self, k: int, seed: int, how: str):
        super().__init__(k, seed)
        self.how = how

    def fit(self, X, Y) -> "Nominal":
        import time

        from coreselect.core.discretize import resolve_n_bins
        from coreselect.evaluation.gds import CalibratedGDS

        began = time.perf_counter()
        codes = X if self.how == "ordered" else unordered(X)
        options = {"n_bins": 10} if self.how == "every" else {}
        if self.how == "frequent":
            codes = most_frequent(codes, resolve_n_bins("auto", codes.shape[0]))
        self.selected_ = CalibratedGDS(k=self.k, random_state=self.seed,
                                       **options).fit(codes, Y).selected_
        self.seconds_ = time.perf_counter() - began
        return self


#: the nominal cuts' selections: method name -> :class:`Nominal`'s ``how``
NOMINAL_METHODS = {"nominal-ordered": "ordered", "nominal-default": "unordered",
                   "nominal-frequent": "frequent", "nominal-every": "every"}


def cut(name: str):
    """``(X, Y, rows of the parent)``: the parent's random rows, then random columns (for a
    coarse cut, of the coarsened parent)."""
    parent, rows, columns, _, seed = ALL_CUTS[name]
    X, Y, n_rows = load_rows(parent, 0)
    if name in COARSE_CUTS:
        X = leveled(X, (4, 5))
    elif name in NOMINAL_CUTS:
        X = leveled(X, (6, 8, 10))
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(X.shape[0], size=rows, replace=False))
    X, Y = X[keep], Y[keep]
    if columns:
        X = X[:, np.sort(rng.choice(X.shape[1], size=columns, replace=False))]
    return X, Y, n_rows


def factories(methods: list[str]) -> dict:
    """The rivals' factories (``rivals.py``), and the candidates of ``dense_research.py``."""
    known = set(R.METHODS) | set(R.CANDIDATES)
    made = R.factories([m for m in methods if m in known])
    return {m: made[m] if m in known else DR.factory(m) for m in methods}


def run(names: list[str], folds: int, methods: list[str]) -> None:
    for name in names:
        X, Y, n_rows = cut(name)
        cross_validate(name, X, Y, n_rows, factories(methods), CUTS[name][3], OUT, folds)


#: bands of training rows (two thirds of a cut's rows) the candidates are compared in
BANDS = ((0, 200, "at most 200"), (201, 400, "201 to 400"), (401, 10**9, "over 400"))
#: thresholds of training rows a rule may take (below: the candidate; from there: the default)
THRESHOLDS = (0, 120, 150, 180, 210, 240, 280, 350, 450, 10**9)
#: rows of the whole dense sets (their rows of docs/results/rivals/ and dense_research/ join
#: the cuts in the rule's choice)
WHOLE = {"emotions": 593, "scene": 2407, "yeast": 2417, "CAL500": 502}


def train_rows(name: str) -> int:
    """Rows of a training fold (3 folds): two thirds of the cut's (or the whole set's)."""
    return (ALL_CUTS[name][1] if name in ALL_CUTS else WHOLE[name]) * 2 // 3


def parent_of(name: str) -> str:
    return CUTS[name][0] if name in CUTS else name


def load() -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in sorted(OUT.glob("*.csv")) if ".stability." not in p.name]
    if not frames:
        raise SystemExit("no results in docs/results/small_dense/")
    df = pd.concat(frames, ignore_index=True)
    return df[df.measure.isin(R.MEASURES)]


#: the default before its bins followed the rows: five at every size (the base of the rules)
FORMER = "gds-five"


def whole_sets(candidates: list[str]) -> pd.DataFrame:
    """The whole dense sets: the default and the rivals (docs/results/rivals/), the
    candidates (docs/results/dense_research/). Every whole set has more than
    :data:`~coreselect.core.discretize.FEW_ROWS` training rows, where the default takes five
    bins: its rows there are :data:`FORMER`'s too."""
    from coreselect.core.discretize import FEW_ROWS

    frames = []
    for name in WHOLE:
        assert WHOLE[name] * 2 // 3 >= FEW_ROWS, name
        rivals = pd.read_csv(R.OUT / f"{name}.csv")
        frames += [rivals, rivals[rivals.method == "gds"].assign(method=FORMER)]
        extra = DR.OUT / f"{name}.csv"
        if extra.exists():
            more = pd.read_csv(extra)
            frames.append(more[more.method.isin(candidates)])
    df = pd.concat(frames, ignore_index=True)
    return df[df.measure.isin(R.MEASURES)]


class Cells:
    """Per (dataset, evaluator, measure, k) cell: each method's mean and fold std, whether a
    method wins or ties the best rival, and its rank among the rivals and random."""

    def __init__(self, df: pd.DataFrame, methods: list[str]):
        key = ["dataset", "evaluator", "measure", "k"]
        st = df.groupby(key + ["method"])["value"].agg(["mean", "std"]).reset_index()
        mean = st.pivot_table(index=key, columns="method", values="mean")
        std = st.pivot_table(index=key, columns="method", values="std")
        ok = mean.reindex(columns=[*methods, *R.RIVALS, "random"]).notna().all(axis=1)
        ok &= mean[R.RIVALS].max(axis=1) - mean[R.RIVALS].min(axis=1) > 1e-12
        self.mean, self.std = mean[ok], std[ok]
        names = self.mean.index.get_level_values("dataset")
        self.rows = np.array([train_rows(d) for d in names])
        self.parent = np.array([parent_of(d) for d in names])
        best = self.mean[R.RIVALS].idxmax(axis=1)
        self.best = self.mean[R.RIVALS].max(axis=1).to_numpy()
        self.best_std = np.array([self.std.at[i, b] for i, b in zip(self.mean.index, best)])

    def holds(self, m: str) -> np.ndarray:
        """Wins or ties the best rival (within the larger fold std)."""
        tol = np.maximum(self.std[m].to_numpy(), self.best_std)
        return self.mean[m].to_numpy() - self.best >= -tol

    def rank(self, m: str) -> np.ndarray:
        """Rank (1 = best) among itself, every rival and random."""
        return self.mean[[m, *R.RIVALS, "random"]].rank(axis=1, ascending=False)[m].to_numpy()

    def against(self, m: str, cells: np.ndarray, base: str = "gds") -> tuple[float, str]:
        """Over the ``cells`` (a mask): the mean difference from ``base``, and win/tie/loss
        against it (the larger fold std)."""
        d = (self.mean[m] - self.mean[base]).to_numpy()[cells]
        tol = np.maximum(self.std[m], self.std[base]).to_numpy()[cells]
        return float(d.mean()), (f"{int((d > tol).sum())}/{int((abs(d) <= tol).sum())}/"
                                 f"{int((d < -tol).sum())}")


def candidates_section(df: pd.DataFrame) -> str:
    every = set(CUTS)
    cands = [m for m in sorted(set(df.method)) if m.startswith("gds-")
             and every <= set(df[df.method == m].dataset)]
    c = Cells(df, ["gds", *cands])
    rows = []
    for m in ["gds", *cands]:
        row = [f"`{m}`" if m == "gds" else m, DR._what(m)]
        for lo, hi, _ in BANDS:
            band = (c.rows >= lo) & (c.rows <= hi)
            diff, wtl = c.against(m, band)
            row.append(f"{c.rank(m)[band].mean():.2f} · {100 * c.holds(m)[band].mean():.0f} % · "
                       + ("–" if m == "gds" else f"{diff:+.4f} · {wtl}"))
        rows.append(row)
    return md_table(["method", "bins or criterion", *[
        f"training rows {label}: rank · wins or ties the best rival · F1 over the default · "
        "against it (w/t/l)" for _, _, label in BANDS]], rows, align="lllll")


def rule_section(df: pd.DataFrame, candidates: list[str]) -> str:
    """A candidate below a number of training rows, the former default (:data:`FORMER`) from
    there: the threshold chosen on three dense sets' cuts (and whole sets), judged on the
    fourth's; then the default as it is, against the former."""
    whole = whole_sets(candidates)
    rows = []
    for m in candidates:
        c = Cells(pd.concat([df, whole], ignore_index=True), [FORMER, m])
        hold_m, hold_g = c.holds(m), c.holds(FORMER)
        rank_m, rank_g = c.rank(m), c.rank(FORMER)

        def rule(t: int):
            low = c.rows < t
            return np.where(low, hold_m, hold_g), np.where(low, rank_m, rank_g)

        pooled_rule, pooled_default = [], []
        for parent in WHOLE:
            train, test = c.parent != parent, c.parent == parent
            # most cells won or tied on the other sets, then the better rank, then the lower t
            t = max(THRESHOLDS, key=lambda t: (rule(t)[0][train].mean(),
                                               -rule(t)[1][train].mean(), -t))
            held, ranked = rule(t)
            pooled_rule.append(held[test])
            pooled_default.append(hold_g[test])
            rows.append([m, parent, "never" if t == 0 else ("always" if t >= 10**9 else f"< {t}"),
                         int(test.sum()),
                         f"{100 * held[test].mean():.0f} % · {ranked[test].mean():.2f}",
                         f"{100 * hold_g[test].mean():.0f} % · {rank_g[test].mean():.2f}"])
        rows.append([m, "all four", "", int(sum(map(len, pooled_rule))),
                     f"{100 * np.concatenate(pooled_rule).mean():.0f} %",
                     f"{100 * np.concatenate(pooled_default).mean():.0f} %"])
    from coreselect.core.discretize import FEW_ROWS

    # The default as it is: cmim on three bins below FEW_ROWS (chosen on all four sets).
    c = Cells(pd.concat([df, whole], ignore_index=True), [FORMER, "gds"])
    for parent in [*WHOLE, "all four"]:
        test = c.parent == parent if parent in WHOLE else np.ones(len(c.rows), bool)
        rows.append(["`gds`, the default", parent, f"< {FEW_ROWS}, chosen on all four",
                     int(test.sum()),
                     f"{100 * c.holds('gds')[test].mean():.0f} % · {c.rank('gds')[test].mean():.2f}",
                     f"{100 * c.holds(FORMER)[test].mean():.0f} % · "
                     f"{c.rank(FORMER)[test].mean():.2f}"])
    return md_table(["candidate below the threshold", "held-out set (its cuts and the whole set)",
                     "threshold of training rows chosen on the other three", "cells",
                     "rule: wins or ties the best rival · rank",
                     f"{FORMER}, five bins at every size: the same"], rows, align="lllrll")


AUTO = OUT / "auto"
SPARSE = OUT / "sparse"
COARSE = OUT / "coarse"
NOMINAL = OUT / "nominal"


def run_against_five(names: list[str], folds: int, out: Path) -> None:
    """The default and the former default on the sparse or coarse cuts (no rivals: what the
    bins change)."""
    for name in names:
        X, Y, n_rows = cut(name)
        cross_validate(name, X, Y, n_rows, factories(["gds", FORMER]),
                       ALL_CUTS[name][3], out, folds)


def run_nominal(names: list[str], folds: int) -> None:
    """The default on the nominal cuts, given the levels in order, in no order, and in no
    order with its categories grouped by frequency or each kept (no rivals)."""
    made = {m: (lambda how: lambda k, seed: Nominal(k, seed, how))(how)
            for m, how in NOMINAL_METHODS.items()}
    for name in names:
        X, Y, n_rows = cut(name)
        cross_validate(name, X, Y, n_rows, made, ALL_CUTS[name][3], NOMINAL, folds)


def nominal_section() -> str:
    """Each selection of the nominal cuts against the default on codes in no order:
    win/tie/loss (the larger fold std), the mean difference; and the four's average rank."""
    frames = [pd.read_csv(p) for p in sorted(NOMINAL.glob("*.csv")) if ".stability." not in p.name]
    if not frames:
        return "Not run: `python benchmarks/small_dense.py nominal`."
    df = pd.concat(frames, ignore_index=True)
    df = df[df.measure.isin(R.MEASURES)]
    st = (df.groupby(["dataset", "evaluator", "measure", "k", "method"])["value"]
          .agg(["mean", "std"]).unstack("method"))
    ranks = st["mean"].rank(axis=1, ascending=False).mean()
    base = "nominal-default"
    what = {"nominal-ordered": "the same categories coded in their order",
            "nominal-default": "the default (codes in no order)",
            "nominal-frequent": "the most frequent categories kept, the rest pooled",
            "nominal-every": "every category its own bin (`n_bins=10`)"}
    rows = []
    for m in NOMINAL_METHODS:
        cells = (["–", "–", "–"] if m == base else
                 _wtl(st["mean"][m] - st["mean"][base],
                      np.maximum(st["std"][m], st["std"][base]))[:3])
        rows.append([f"`{m}`", what[m], f"{ranks[m]:.2f}", *cells])
    return md_table(["selection", "what the selection sees", "average rank of the four",
                     "cells", "against the default: win/tie/loss", "mean F1 difference"],
                    rows, align="llrrlr")


def _wtl(d: pd.Series, tol: pd.Series) -> list:
    """Cells, win/tie/loss (beyond ``tol``), the mean difference, the cells of equal value."""
    return [len(d), f"{int((d > tol).sum())}/{int((d.abs() <= tol).sum())}/"
                    f"{int((d < -tol).sum())}", f"{d.mean():+.4f}", f"{int((d.abs() < 1e-12).sum())}"]


def against_five_section(folder: Path, cuts: dict, command: str) -> str:
    """The default against :data:`FORMER` on the sparse or coarse cuts: win/tie/loss (the
    larger fold std) and the mean difference, per cut and in all."""
    frames = [pd.read_csv(p) for p in sorted(folder.glob("*.csv")) if ".stability." not in p.name]
    if not frames:
        return f"Not run: `python benchmarks/small_dense.py {command}`."
    df = pd.concat(frames, ignore_index=True)
    df = df[df.measure.isin(R.MEASURES)]
    rows, every = [], []
    for name in [n for n in cuts if n in set(df.dataset)]:
        st = (df[df.dataset == name].groupby(["evaluator", "measure", "k", "method"])["value"]
              .agg(["mean", "std"]).unstack("method"))
        d = st["mean"]["gds"] - st["mean"][FORMER]
        tol = np.maximum(st["std"]["gds"], st["std"][FORMER])
        every.append((d, tol))
        rows.append([name, train_rows(name), *_wtl(d, tol)])
    d, tol = (pd.concat(x) for x in zip(*every))
    rows.append(["all", "", *_wtl(d, tol)])
    return md_table(["cut", "training rows", "cells", "default against five bins: win/tie/loss",
                     "mean F1 difference", "cells with the same value"], rows, align="lrrlrr")


def run_auto(names: list[str], folds: int) -> None:
    """The default with ``k="auto"`` (its inner cross-validation on the training fold only)."""
    for name in names:
        X, Y, n_rows = cut(name)
        df = cross_validate(name, X, Y, n_rows, R.factories(["gds"]), ["auto"], AUTO, folds)
        print(f"{name}: k chosen {sorted(set(df.k_chosen))}", flush=True)


def auto_section(df: pd.DataFrame) -> str:
    """``k="auto"`` against the default's best fixed k of the cut, per (cut, evaluator,
    measure): within one fold std (the larger of the two) or not, by band of training rows."""
    frames = [pd.read_csv(p) for p in sorted(AUTO.glob("*.csv"))]
    if not frames:
        return "Not run: `python benchmarks/small_dense.py auto`."
    auto = pd.concat(frames, ignore_index=True)
    auto = auto[auto.measure.isin(R.MEASURES)]
    fixed = df[df.method == "gds"]
    rows = []
    for lo, hi, label in BANDS:
        near, cells, share, kept = 0, 0, [], []
        for (name, ev, measure), a in auto.groupby(["dataset", "evaluator", "measure"]):
            if not lo <= train_rows(name) <= hi:
                continue
            f = fixed[(fixed.dataset == name) & (fixed.evaluator == ev) & (fixed.measure == measure)]
            if f.empty:
                continue
            by_k = f.groupby("k")["value"].agg(["mean", "std"])
            best = by_k["mean"].idxmax()
            tol = max(float(a["value"].std()), float(by_k.at[best, "std"]))
            cells += 1
            near += bool(a["value"].mean() >= by_k.at[best, "mean"] - tol)
            columns = CUTS[name][2] or int(a["n_features"].iloc[0])
            if ev == "brknn" and measure == R.MEASURES[0]:  # the chosen k, once per fold
                share += list(a["k_chosen"] / columns)
                kept += list(a["k_chosen"] > columns / 2)
        if cells:
            rows.append([label, f"{near} of {cells} ({100 * near / cells:.0f} %)",
                         f"{100 * np.median(share):.0f} % ({100 * min(share):.0f} % to "
                         f"{100 * max(share):.0f} %)", f"{sum(kept)} of {len(kept)}"])
    return md_table(["training rows", "k=auto within one fold std of the best fixed k",
                     "chosen k over the columns: median (range)",
                     "folds keeping more than half the columns"], rows, align="llll")


def report() -> None:
    df = load()
    names = [d for d in CUTS if d in set(df.dataset)]
    v = R.verdicts(df)
    order = sorted(names, key=lambda d: (list(WHOLE).index(CUTS[d][0]), CUTS[d][1], d))
    per = [[d, train_rows(d), CUTS[d][2] or "all", R._counts(v[v.dataset == d]),
            int(v[v.dataset == d].below_random.sum()),
            ", ".join(sorted(set(v[(v.dataset == d) & (v.verdict == "loss")].best))) or "–"]
           for d in order]
    methods = [m for m in R.RANKED if m in set(df.method)]
    ranks = R.ranks_section(df, names, methods=methods, out=None, dense=names)
    candidates = [m for m in ("gds-mdl", "gds-mdl-bins", "gds-information", "gds-cmim-b3", "gds-b3")
                  if set(CUTS) <= set(df[df.method == m].dataset)]
    body = ("The default (`gds`) against the best of the rivals (" + ", ".join(
        m for m in methods if m not in ("gds", "random")) + ") on the four dense sets cut to "
        f"a few hundred rows, the size of most public dense multi-label sets (random rows, and "
        f"for two cuts random columns, seed {SEED}; the cuts named -s2 draw the smallest again, "
        "seed 2): BRkNN-b and the linear evaluator, 3-fold "
        "cross-validation (seed 0), example and macro F1, k up to half the columns. A win or a "
        "loss: the means differ by more than the larger fold standard deviation."
        + "\n\n" + md_table(["cut", "training rows", "columns", "win/tie/loss", "below random",
                               "beaten by"], per, align="lrrlrl")
        + f"\n\nAll cells: {R._share(v)} win or tie ({R._counts(v)}), "
          f"{int(v.below_random.sum())} below random.\n\n" + "\n".join(ranks[2:])
        + "\n\n## The candidates of the dense research on the cuts\n\n"
          "Each candidate of [dense_research.md](dense_research.md) in the default's place, by "
          "the rows of the training fold: its average rank among itself, the fifteen rivals and "
          "random (1 = best); the share of cells where it wins or ties the best rival; its "
          "mean example or macro F1 over the default's; and its win/tie/loss against the "
          "default (the larger fold standard deviation). Written by `python "
          "benchmarks/small_dense.py run --methods NAME` and `report`.\n\n"
        + candidates_section(df)
        + "\n\n## A rule by the number of rows\n\n"
          "A candidate below a number of training rows and the former default (`gds-five`: "
          "five bins at every size) from there, the number chosen leave-one-dataset-out: on "
          "the other three dense sets' cuts and whole sets (their rows of "
          "[rivals.md](rivals.md) and [dense_research.md](dense_research.md)) the threshold "
          "with the most cells won or tied (then the better rank), judged on the held-out "
          "set's cuts and whole set. `cmim` on three bins is the one rule no worse than the "
          "former default on any held-out set, in both measures; its threshold chosen the same "
          "way on all four sets, 240 training rows, is the default's now (`n_bins=\"auto\"`: "
          "three bins below 240 rows, five from there), in its last rows.\n\n"
        + rule_section(df, candidates)
        + "\n\n## Sparse columns with few rows\n\n"
          "The bins change only columns of more than three values; of the older sparse sets "
          "only rcv1subset1 has them (the others hold 0/1 words). Its cuts to 150, 200 and 300 "
          "random rows (seeds 1 and 2), the default against `gds-five` (written by `python "
          "benchmarks/small_dense.py sparse`; no rivals), BRkNN-b and the linear evaluator, "
          "example and macro F1:\n\n"
        + against_five_section(SPARSE, SPARSE_CUTS, "sparse")
        + "\n\n## Columns of four or five values\n\n"
          "Three bins merge the values of a column that five bins keep whole (a small category "
          "code, a count, a rating). The measurements above hold none: every column of the dense "
          "cuts has more than five values. The small cuts again, with every column of the "
          "parent set first cut into 4 or 5 equal-frequency levels (alternating; ordinal codes "
          "with the columns' own signal), the default against `gds-five` (written by `python "
          "benchmarks/small_dense.py coarse`; no rivals):\n\n"
        + against_five_section(COARSE, COARSE_CUTS, "coarse")
        + "\n\n## Category codes in no order\n\n"
          "A nominal attribute (an ARFF `{a, b, c}` declaration, a category id) is read as "
          "its values' codes, and the bins group neighbouring codes, which the declaration "
          "order puts together by chance. The 13 small cuts again, every column of the parent "
          "set first cut into 6, 8 or 10 equal-frequency levels (alternating), which the "
          "evaluators see in their order, and the default given them in their order or under "
          "codes permuted per column, with the most frequent categories kept and the rest "
          "pooled (as many groups as its bins), or with every category its own bin (written "
          "by `python benchmarks/small_dense.py nominal`; no rivals), BRkNN-b and the linear "
          "evaluator, example and macro F1:\n\n"
        + nominal_section()
        + "\n\n## Automatic k on the cuts\n\n"
          "The default with `k=\"auto\"` (written by `python benchmarks/small_dense.py auto`) "
          "against its best fixed k of the cut (the ks above, at most half the columns), per "
          "(cut, evaluator, measure): within one fold standard deviation (the larger of the "
          "two) or not; and the k it chose on each training fold.\n\n" + auto_section(df))
    emit("Small dense data: the dense sets cut to a few hundred rows", body, str(REPORT))


def main() -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = p.add_subparsers(dest="cmd", required=True,
                           help="run: cross-validate on the cuts; report: write the tables")
    runs = {"run": ("cross-validate the default and the rivals", CUTS),
            "auto": ("cross-validate the default with k='auto'", CUTS),
            "sparse": ("the default against five bins on sparse cuts", SPARSE_CUTS),
            "coarse": ("the default against five bins on cuts of 4-5 values", COARSE_CUTS),
            "nominal": ("the default on cuts of category codes in no order", NOMINAL_CUTS)}
    for cmd, (text, cuts) in runs.items():
        r = sub.add_parser(cmd, help=text)
        r.add_argument("--sets", default=",".join(cuts), help="comma-separated cuts")
        r.add_argument("--folds", type=int, default=3, help="cross-validation folds")
        if cmd == "run":
            r.add_argument("--methods", default=",".join(R.RANKED), help="comma-separated methods")
    sub.add_parser("report", help="write docs/results/small_dense.md")
    a = p.parse_args()
    if a.cmd in runs:
        known = runs[a.cmd][1]
        unknown = [s for s in a.sets.split(",") if s not in known]
        if unknown:
            raise SystemExit(f"unknown cuts: {', '.join(unknown)}; choose among {', '.join(known)}")
        if a.cmd == "run":
            run(a.sets.split(","), a.folds, a.methods.split(","))
        elif a.cmd == "auto":
            run_auto(a.sets.split(","), a.folds)
        elif a.cmd == "nominal":
            run_nominal(a.sets.split(","), a.folds)
        else:
            run_against_five(a.sets.split(","), a.folds, SPARSE if a.cmd == "sparse" else COARSE)
    else:
        report()


if __name__ == "__main__":
    main()
