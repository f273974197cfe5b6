"""Result files of an evaluation: ``results.csv``, ``summary.md`` and PNG plots.

Every file is written atomically (a temporary file renamed into place), and
:func:`write_report` writes them as one set (:func:`coreselect.io.files.output_set`): all are
renamed into place only when every one was written, so a failed or interrupted report
leaves each file as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from coreselect.io.files import atomic_path, output_set
from coreselect.evaluation.measures import MEASURE_LABELS as _CLASSIC_LABELS
from coreselect.evaluation.ranking import RANKING_LABELS

#: every measure a run may report (the paper's five, then the ranking ones), in file order
MEASURE_LABELS = {**_CLASSIC_LABELS, **RANKING_LABELS}
MEASURES = tuple(MEASURE_LABELS)

__all__ = ["summarize", "summary_text", "write_results", "write_summary", "plot_measures", "plot_lambda_sweep", "write_report",
           "report_paths"]

_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


def summarize(df: pd.DataFrame, by: Sequence[str] = ("method", "k")) -> pd.DataFrame:
    """Mean and standard deviation over folds per ``by`` columns and measure."""
    keys = list(by) + ["measure"]
    g = df.groupby(keys, sort=False)["value"]
    out = g.agg(mean="mean", std=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, folds="count")
    sec = df.groupby(keys, sort=False)["select_seconds"].mean().rename("select_seconds")
    return out.join(sec).reset_index()


def write_results(df: pd.DataFrame, path: str | Path) -> None:
    """Write the per-fold results as CSV."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")


EVALUATOR_LABELS = {"brknn": "BRkNN-b, 5 neighbours", "linear": "BR logistic regression",
                    "sparse-knn": "sparse cosine kNN, 10 neighbours"}


def _grid(summary: pd.DataFrame, row: str, col: str, measure: str, best_in: str = "row"):
    """Rows, columns and cells ``(mean ± std, best)`` of one measure (None where a cell has no
    result); ``best``: the best mean of its row (``best_in="row"``) or column (``"col"``)."""
    s = summary[summary["measure"] == measure]
    rows = list(dict.fromkeys(s[row]))
    cols = list(dict.fromkeys(s[col]))
    by = row if best_in == "row" else col
    best = s.groupby(by)["mean"].max()
    cells = []
    for r in rows:
        line = []
        for c in cols:
            hit = s[(s[row] == r) & (s[col] == c)]
            if hit.empty:
                line.append(None)
                continue
            m, sd = float(hit["mean"].iloc[0]), float(hit["std"].iloc[0])
            once = int(hit["folds"].iloc[0]) == 1  # a given train/test split: no spread
            line.append((f"{m:.4f}" if once else f"{m:.4f} ± {sd:.4f}",
                         bool(np.isclose(m, best[r if best_in == "row" else c]))))
        cells.append(line)
    return rows, cols, cells


def _table(summary: pd.DataFrame, row: str, col: str, measure: str, best_in: str = "row") -> str:
    """Markdown table of ``mean ± std``; bold the best mean of each row (``best_in="row"``)
    or of each column (``"col"``)."""
    rows, cols, cells = _grid(summary, row, col, measure, best_in)
    lines = [f"| {row} | " + " | ".join(str(c) for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for r, line in zip(rows, cells):
        text = ["" if c is None else f"**{c[0]}**" if c[1] else c[0] for c in line]
        lines.append(f"| {r} | " + " | ".join(text) + " |")
    return "\n".join(lines)


def _text_table(summary: pd.DataFrame, row: str, col: str, measure: str,
                best_in: str = "row") -> list[str]:
    """The same table as plain aligned text for a terminal; ``*`` marks the best."""
    rows, cols, cells = _grid(summary, row, col, measure, best_in)
    grid = [[str(row)] + [str(c) for c in cols]]
    grid += [[str(r)] + ["-" if c is None else c[0] + (" *" if c[1] else "  ") for c in line]
             for r, line in zip(rows, cells)]
    widths = [max(len(g[i]) for g in grid) for i in range(len(grid[0]))]
    return ["  " + "  ".join(cell.rjust(w) if i else cell.ljust(w)
                             for i, (cell, w) in enumerate(zip(g, widths))).rstrip() for g in grid]


def _over_folds(df: pd.DataFrame) -> str:
    """What a cell is: ``mean ± std over 10 folds``, or the score on one given split."""
    n_folds = df["fold"].nunique()
    return "scores on the given test set" if n_folds == 1 else f"mean ± std over {n_folds} folds"


def summary_text(df: pd.DataFrame) -> str:
    """The results of a run for a terminal (``coreselect evaluate`` prints it on stdout): per
    measure a table of ``mean ± std`` over the folds, rows = k and columns = method (a lambda
    sweep: rows = lambda, columns = k, per method); ``*`` marks the best mean of each row (of
    each column in a sweep)."""
    sweep = "lam" in df.columns
    summary = summarize(df, ("method", "lam", "k") if sweep else ("method", "k"))
    where = "the best lambda at each k" if sweep else "the best method at each k"
    out = [f"{_over_folds(df)}; * marks {where}"]
    for measure, method, sub, row, col, best_in in _tables(summary, sweep):
        title = f"{MEASURE_LABELS[measure]} ({measure})"
        out += ["", title + (f", {method}: rows = lambda, columns = k" if method else "")]
        out += _text_table(sub, row, col, measure, best_in=best_in)
    return "\n".join(out)


def _tables(summary: pd.DataFrame, sweep: bool):
    """Each table of a summary, as ``(measure, method, frame, row, col, best_in)``: per measure
    one table rows = k by columns = method, or in a lambda sweep one per method, rows = lambda
    by columns = k (method is None outside a sweep)."""
    for measure in MEASURES:
        if measure not in set(summary["measure"]):
            continue
        if not sweep:
            yield measure, None, summary, "k", "method", "row"
            continue
        for method in dict.fromkeys(summary["method"]):
            yield measure, method, summary[summary["method"] == method], "lam", "k", "col"


def write_summary(df: pd.DataFrame, path: str | Path, title: str = "Evaluation", notes: str = "") -> None:
    """Markdown tables: one per measure, rows = k (or lambda), columns = method (or k).

    Every cell is ``mean ± std`` over the folds; the best mean of a row is bold (in a lambda
    sweep, rows = lambda and columns = k, the best lambda of each column is bold).
    """
    with atomic_path(path) as tmp:
        tmp.write_text(_summary_text(df, title, notes), encoding="utf-8")


def _summary_text(df: pd.DataFrame, title: str, notes: str) -> str:
    sweep = "lam" in df.columns
    summary = summarize(df, ("method", "lam", "k") if sweep else ("method", "k"))
    parts = [f"# {title}", ""]
    if notes:
        parts += [notes, ""]
    where = "the best lambda for each k (column)" if sweep else "the best mean of each row"
    over = _over_folds(df).replace("mean ± std", "Mean ± standard deviation")
    parts += [f"{over[0].upper()}{over[1:]}; {where} is in bold.", ""]
    for measure, method, sub, row, col, best_in in _tables(summary, sweep):
        shape = f", {method}: rows = lambda, columns = k" if method else ": rows = k, columns = method"
        parts += [f"## {MEASURE_LABELS[measure]} (`{measure}`){shape}", ""]
        parts += [_table(sub, row, col, measure, best_in=best_in), ""]
    secs = df.groupby("method", sort=False)["select_seconds"].mean()
    parts += ["## Mean selection time per fit (seconds)", ""]
    parts += ["| method | seconds |", "|---|---|"] + [f"| {m} | {s:.3g} |" for m, s in secs.items()] + [""]
    if not sweep:
        parts += _reference_and_stability(df)
    return "\n".join(parts)


def _reference_and_stability(df: pd.DataFrame) -> list[str]:
    """Issue 30's sections: every method's score as a fraction of the full-feature reference
    (``all``) and its evaluator's training time as a ratio to the full model's; the stability
    of each method's selection across folds; the run's notes (``df.attrs``)."""
    from coreselect.evaluation.protocol import FULL_METHOD, full_reference

    parts: list[str] = []
    for note in df.attrs.get("notes", []):
        parts += [f"Note: {note}.", ""]
    fr = full_reference(df) if "fit_seconds" in df.columns else pd.DataFrame()
    fr = fr[fr["method"] != FULL_METHOD] if len(fr) else fr
    if len(fr):
        methods = list(dict.fromkeys(fr["method"]))
        for measure in [m for m in MEASURES if m in set(fr["measure"])]:
            s = fr[fr["measure"] == measure]
            parts += [f"## {MEASURE_LABELS[measure]} as a fraction of the full-feature model "
                      f"(`{FULL_METHOD}`): rows = k, columns = method", ""]
            parts += ["| k | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
            for k in sorted(set(s["k"])):
                cells = [s[(s["method"] == m) & (s["k"] == k)]["fraction"] for m in methods]
                parts.append(f"| {k} | " + " | ".join(f"{c.iloc[0]:.3f}" if len(c) else "" for c in cells) + " |")
            parts.append("")
        s = fr.drop_duplicates(["method", "k"])
        parts += ["## Evaluator training time as a ratio to the full-feature model's: rows = k, "
                  "columns = method", ""]
        parts += ["| k | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
        for k in sorted(set(s["k"])):
            cells = [s[(s["method"] == m) & (s["k"] == k)]["fit_ratio"] for m in methods]
            parts.append(f"| {k} | " + " | ".join(f"{c.iloc[0]:.3g}" if len(c) else "" for c in cells) + " |")
        parts.append("")
    stab = pd.DataFrame(df.attrs.get("stability", []))
    if len(stab):
        parts += ["## Stability of the selection across folds (mean pairwise Jaccard / Kuncheva "
                  "index; Kuncheva is 0 for random selections, 1 for identical ones)", "",
                  "| method | k | Jaccard | Kuncheva |", "|---|---|---|---|"]
        parts += [f"| {r.method} | {r.k} | {r.jaccard:.3f} | {r.kuncheva:.3f} |" for r in stab.itertuples()]
        parts.append("")
    return parts


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def plot_measures(df: pd.DataFrame, out_dir: str | Path, dataset: str = "",
                  evaluator: str = "brknn") -> list[Path]:
    """One PNG per measure (``<measure>.png`` in ``out_dir``): a line per method over k,
    mean with a ±1 std band."""
    paths = [Path(out_dir) / f"{m}.png" for m in _measures_in(df)]
    with output_set(paths) as tmps:
        _plot_measures_to(df, dict(zip(_measures_in(df), tmps)), dataset, evaluator)
    return paths


def _measures_in(df: pd.DataFrame) -> list[str]:
    present = set(df["measure"])
    return [m for m in MEASURES if m in present]


#: Line styles cycled with the colours: lines of close methods stay apart in grey print too.
_LINESTYLES = ["-", "--", "-.", ":"]


def _how_scored(n_folds: int) -> str:
    return ("one given train/test split" if n_folds == 1
            else f"{n_folds}-fold CV; bars = ±1 std over the folds")


def _spread_line(ax, x, y, sd, i: int, n: int, label: str, n_folds: int) -> None:
    """Line ``i`` of ``n``: its own colour (tab10), marker and line style, and ±1 std as
    error bars, each line's nudged sideways so that no two lines' bars cover each other
    (filled bands of five methods blurred into one colour)."""
    import numpy as np

    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):  # k="auto": each run chose its own k, one category
        names = list(dict.fromkeys(str(v) for v in x))
        x = np.array([names.index(str(v)) for v in x], dtype=float)
        ax.set_xticks(range(len(names)), names)
    steps = np.diff(np.unique(x))
    width = float(steps.min()) if steps.size else 1.0
    dx = (i - (n - 1) / 2) * 0.5 * width / max(n, 1)  # the lines of one x within half a step
    style = dict(color=f"C{i % 10}", marker=_MARKERS[i % len(_MARKERS)],
                 linestyle=_LINESTYLES[(i // 10 + i) % len(_LINESTYLES)], linewidth=1.5,
                 markersize=5, label=label)
    if n_folds > 1:
        ax.errorbar(x + dx, y, yerr=sd, capsize=2.5, elinewidth=1.0, alpha=0.95, **style)
    else:
        ax.plot(x + dx, y, **style)


def _plot_measures_to(df: pd.DataFrame, targets: dict[str, Path], dataset: str, evaluator: str) -> None:
    plt = _pyplot()
    summary = summarize(df)
    n_folds = df["fold"].nunique()
    from coreselect.evaluation.protocol import FULL_METHOD

    for measure, path in targets.items():
        s = summary[summary["measure"] == measure]
        full = s[s["method"] == FULL_METHOD]
        s = s[s["method"] != FULL_METHOD]
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
        if len(full):  # the full-feature model: a level every selection is read against
            ax.axhline(float(full["mean"].iloc[0]), color="black", linestyle="--", linewidth=1.2,
                       label=f"ALL ({int(full['k'].iloc[0])} features)")
        methods = list(dict.fromkeys(s["method"]))
        for i, method in enumerate(methods):
            m = s[s["method"] == method].sort_values("k")
            _spread_line(ax, m["k"].to_numpy(), m["mean"].to_numpy(), m["std"].to_numpy(),
                         i, len(methods), method.upper(), n_folds)
        name = MEASURE_LABELS[measure]
        ax.set_title(f"{dataset + ': ' if dataset else ''}{name}\n"
                     f"({EVALUATOR_LABELS.get(evaluator, evaluator)}, {_how_scored(n_folds)})")
        ax.set_xlabel("number of selected features k")
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
        # outside the axes: the lines of close methods must stay visible
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
        fig.tight_layout()
        try:
            fig.savefig(path, format="png")
        finally:
            plt.close(fig)


def plot_lambda_sweep(df: pd.DataFrame, path: str | Path, dataset: str = "",
                      evaluator: str = "brknn") -> Path:
    """The paper's Figure 4: every measure against lambda, a line per k."""
    with atomic_path(path) as tmp:
        _plot_lambda_sweep_to(df, tmp, dataset, evaluator)
    return Path(path)


def _plot_lambda_sweep_to(df: pd.DataFrame, path: Path, dataset: str, evaluator: str) -> None:
    plt = _pyplot()
    summary = summarize(df, ("method", "lam", "k"))
    measures = [m for m in MEASURES if m in set(summary["measure"])]
    ncols = min(3, len(measures))
    nrows = -(-len(measures) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.9 * nrows), dpi=110, squeeze=False)
    flat = list(axes.ravel())
    method = ", ".join(m.upper() for m in dict.fromkeys(summary["method"]))
    for ax, measure in zip(flat, measures):
        s = summary[summary["measure"] == measure]
        ks = sorted(set(s["k"]))
        for i, k in enumerate(ks):
            m = s[s["k"] == k].sort_values("lam")
            _spread_line(ax, m["lam"].to_numpy(), m["mean"].to_numpy(), m["std"].to_numpy(),
                         i, len(ks), f"k={k}", df["fold"].nunique())
        ax.set_title(MEASURE_LABELS[measure])
        ax.set_xlabel("λ (weight of diversity)")
        ax.set_ylabel(MEASURE_LABELS[measure])
        ax.grid(True, alpha=0.3)
    handles, labels = flat[0].get_legend_handles_labels()
    for ax in flat[len(measures):]:
        ax.axis("off")
    if len(flat) > len(measures):  # the legend takes the free panel
        flat[-1].legend(handles, labels, loc="center", fontsize=11, title="selected features")
    else:
        flat[-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    fig.suptitle(f"{dataset + ': ' if dataset else ''}effect of λ on {method} "
                 f"({EVALUATOR_LABELS.get(evaluator, evaluator)}, {_how_scored(df['fold'].nunique())})")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)


def report_paths(out_dir: str | Path, sweep: bool, measures: Sequence[str] | None = None) -> list[Path]:
    """The files :func:`write_report` writes in ``out_dir``: results.csv, summary.md, and
    ``lambda_sweep.png`` (a lambda sweep) or one ``<measure>.png`` per measure (default: the
    paper's five, the default measures of a run).
    Known before the run, so that the CLI checks them against its inputs before any work.
    A URL (``s3://...``) is refused (:class:`~coreselect.errors.InputError`): reports are
    written to local folders only, never to one named ``s3:``."""
    from coreselect.store.fs import refuse_url

    refuse_url(out_dir, "--out")
    out = Path(out_dir)
    default = tuple(_CLASSIC_LABELS)  # what a run without a choice of measures reports
    pngs = ["lambda_sweep.png"] if sweep else [f"{m}.png" for m in (default if measures is None else measures)]
    return [out / "results.csv", out / "summary.md", *(out / n for n in pngs)]


def write_report(df: pd.DataFrame, out_dir: str | Path, dataset: str = "", notes: str = "",
                 evaluator: str = "brknn") -> list[Path]:
    """Write results.csv, summary.md and the plots (per-measure PNGs or lambda_sweep.png),
    all or none: they are renamed into place together, only when every one was written."""
    out = Path(out_dir)
    sweep = "lam" in df.columns
    paths = report_paths(out, sweep, _measures_in(df))
    title = f"{dataset}: " if dataset else ""
    with output_set(paths) as tmps:
        with open(tmps[0], "w", newline="") as fh:
            df.to_csv(fh, index=False, float_format="%.6g")
        if sweep:
            Path(tmps[1]).write_text(_summary_text(df, f"{title}effect of lambda", notes), encoding="utf-8")
            _plot_lambda_sweep_to(df, tmps[2], dataset, evaluator)
        else:
            Path(tmps[1]).write_text(_summary_text(df, f"{title}feature selection comparison", notes), encoding="utf-8")
            _plot_measures_to(df, dict(zip(_measures_in(df), tmps[2:])), dataset, evaluator)
    return paths
