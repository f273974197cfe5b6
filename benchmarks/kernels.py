"""Kernel speed: the feature-by-label MI matrix and one greedy distance step.

Compared, in one process, with

* (a) the slow reference implementation of the test suite (``tests/reference.py``: count
  tables built in pure Python, one pair at a time), timed on a sample of columns and
  extrapolated to all of them (the table says so);
* (b) scikit-learn: ``mutual_info_classif(X, y, discrete_features=True)`` called once per
  label (the obvious way to get an MI matrix today), and, for the distance step, called once
  with the selected feature as the target (``d(u, v) = 1 - I(u, v) / H(u, v)`` with
  ``H(u, v) = H(u) + H(v) - I(u, v)``). sklearn gets the *same discretized codes* (a sparse
  CSC matrix), so only the kernels differ; on big data it runs on a subset of labels (or
  columns) and is extrapolated linearly (the table says so). Its values are checked
  against ours (nats converted to bits).

Datasets: scene, Corel5k, rcv1subset1, and rcv1subset1 binarized (word present/absent: the
"binary data" of the distance-step target).

    python benchmarks/kernels.py [--quick] [--datasets scene,corel5k,rcv1subset1,rcv1-binary]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

LN2 = math.log(2.0)


def _reference():
    sys.path.insert(0, str(C.REPO_ROOT / "tests"))
    import reference

    return reference


def prepare(name: str, quick: bool):
    import numpy as np
    import scipy.sparse as sp
    from coreselect.core import discretize, discretize_labels

    base = "rcv1subset1" if name == "rcv1-binary" else name
    ds = C.load(base)
    X, Y = ds.X, ds.Y
    if quick:  # tiny: first 300 rows, 60 columns, 4 labels
        X = X[:300, :60]
        Y = (Y.toarray() if sp.issparse(Y) else np.asarray(Y))[:300, :4]
    if name == "rcv1-binary":
        X = sp.csr_matrix(X)
        X = sp.csr_matrix((np.ones_like(X.data), X.indices, X.indptr), shape=X.shape)
    disc_s, F = C.timed(lambda: discretize(X))
    L = discretize_labels(Y)
    return F, L, disc_s


def mi_rows(name, F, L, quick, sk_labels, ref_pairs):
    """Rows of the MI-matrix table."""
    import numpy as np
    import scipy.sparse as sp
    from coreselect.core import relevance_matrix
    from sklearn.feature_selection import mutual_info_classif

    d, n_lab = F.n_columns, L.n_columns
    repeat = 1 if quick else 3
    t_nb, mi = C.best_of(lambda: relevance_matrix(F, L, "mi", backend="numba"), repeat)
    t_np, mi_np = C.best_of(lambda: relevance_matrix(F, L, "mi", backend="numpy"), repeat)
    assert np.allclose(mi, mi_np, atol=1e-9)

    # (b) sklearn, one call per label, on the same codes
    Xc = sp.csc_matrix(F.codes)
    Yd = L.dense_codes()
    labs = list(range(min(n_lab, sk_labels)))
    start = time.perf_counter()
    sk = np.column_stack([
        mutual_info_classif(Xc, Yd[:, j], discrete_features=True) for j in labs
    ]) / LN2
    t_sk_part = time.perf_counter() - start
    t_sk = t_sk_part * n_lab / len(labs)
    sk_err = float(np.abs(sk - mi[:, labs]).max())
    sk_note = "" if len(labs) == n_lab else f" ({len(labs)}/{n_lab} labels, extrapolated)"

    # (a) the reference, on a sample of (feature, label) pairs
    ref = _reference()
    rng = np.random.default_rng(0)
    n_pairs = min(ref_pairs, d * n_lab)
    pick = rng.choice(d * n_lab, size=n_pairs, replace=False)
    fcols, lcols = pick // n_lab, pick % n_lab
    Fd = F.take(np.unique(fcols)).dense_codes()
    col_of = {c: i for i, c in enumerate(np.unique(fcols))}
    start = time.perf_counter()
    ref_vals = [ref.relevance(Fd[:, col_of[f]], Yd[:, l], "mi") for f, l in zip(fcols, lcols)]
    t_ref_part = time.perf_counter() - start
    t_ref = t_ref_part * d * n_lab / n_pairs
    ref_err = float(np.abs(np.array(ref_vals) - mi[fcols, lcols]).max())
    ref_note = "" if n_pairs == d * n_lab else f" ({n_pairs:,} of {d * n_lab:,} pairs, extrapolated)"

    return [
        name, f"{F.n_samples:,} x {d:,} x {n_lab}",
        C.seconds_str(t_nb), C.seconds_str(t_np),
        C.seconds_str(t_sk) + sk_note, f"{t_sk / t_nb:,.0f}x",
        C.seconds_str(t_ref) + ref_note, f"{t_ref / t_nb:,.0f}x",
        f"{max(sk_err, ref_err):.1e}",
    ], t_sk / t_nb


def distance_rows(name, F, quick, sk_cols, ref_cols, n_steps):
    """Rows of the distance-step table: distances from one feature to all d features."""
    import numpy as np
    import scipy.sparse as sp
    from coreselect.core import DistanceOracle
    from sklearn.feature_selection import mutual_info_classif

    d = F.n_columns
    ok = np.flatnonzero(~F.is_constant)
    rng = np.random.default_rng(1)
    us = rng.choice(ok, size=min(n_steps, ok.size), replace=False)
    out = {}
    for backend in ("numba", "numpy"):
        oracle = DistanceOracle(F, backend=backend)
        oracle.distances_from(int(us[0]))  # warm
        steps = []
        for u in us[: (len(us) if backend == "numba" else max(3, len(us) // 10))]:
            t0 = time.perf_counter()
            oracle.distances_from(int(u))
            steps.append(time.perf_counter() - t0)
        out[backend] = (float(np.median(steps)), float(np.percentile(steps, 90)))
    oracle = DistanceOracle(F, backend="numba")
    u = int(us[0])
    ours = oracle.distances_from(u)
    h = oracle.entropies

    # (b) sklearn: one mutual_info_classif call with feature u as the target
    Xc = sp.csc_matrix(F.codes)
    cols = np.arange(min(d, sk_cols))
    yu = F.take([u]).dense_codes()[:, 0]
    t0 = time.perf_counter()
    info = mutual_info_classif(Xc[:, cols], yu, discrete_features=True) / LN2
    joint = h[u] + h[cols] - info
    sk_dist = np.where(joint > 0, 1 - info / np.where(joint > 0, joint, 1), 0)
    t_sk = (time.perf_counter() - t0) * d / cols.size
    sk_err = float(np.abs(np.clip(sk_dist, 0, 1) - ours[cols]).max())
    sk_note = "" if cols.size == d else f" ({cols.size:,}/{d:,} columns, extrapolated)"

    # (a) reference distance, pair by pair
    ref = _reference()
    rcols = rng.choice(d, size=min(d, ref_cols), replace=False)
    Fd = F.take(np.concatenate([[u], rcols])).dense_codes()
    t0 = time.perf_counter()
    rv = [ref.distance(Fd[:, 0], Fd[:, i + 1]) for i in range(rcols.size)]
    t_ref = (time.perf_counter() - t0) * d / rcols.size
    ref_err = float(np.abs(np.array(rv) - ours[rcols]).max())
    ref_note = "" if rcols.size == d else f" ({rcols.size:,}/{d:,} columns, extrapolated)"

    med, p90 = out["numba"]
    return [
        name, f"{d:,}", f"{med * 1e3:.3f} / {p90 * 1e3:.3f}",
        f"{out['numpy'][0] * 1e3:.2f}",
        C.seconds_str(t_sk) + sk_note, f"{t_sk / med:,.0f}x",
        C.seconds_str(t_ref) + ref_note, f"{t_ref / med:,.0f}x",
        f"{max(sk_err, ref_err):.1e}",
    ], med


def main(argv=None) -> str:
    ap = C.parser(__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--sklearn-labels", type=int, default=None,
                    help="labels for the sklearn loop (default: as many as keep it to about "
                    "40,000 feature-label pairs, at least 1)")
    args = ap.parse_args(argv)
    quick = args.quick
    names = (args.datasets or ("scene" if quick else "scene,corel5k,rcv1subset1,rcv1-binary")).split(",")

    # load the compiled kernels once
    import numpy as np
    from coreselect.core import DistanceOracle, discretize, discretize_labels, relevance_matrix

    small = discretize(np.random.default_rng(0).integers(0, 3, (40, 8)))
    relevance_matrix(small, discretize_labels(np.eye(2, dtype=int)[np.arange(40) % 2]), "mi")
    DistanceOracle(small).distances_from(0)

    mi_table, dist_table, notes, disc = [], [], [], []
    for name in names:
        base = "rcv1subset1" if name == "rcv1-binary" else name
        if not C.have_data(base):
            notes.append(f"{name}: data not found at {C.data_path(base)}, skipped")
            continue
        F, L, disc_s = prepare(name, quick)
        disc.append(f"{name}: discretize {C.seconds_str(disc_s)}")
        big = F.n_columns > 2000
        # sklearn makes one mutual_info_score call per (feature, label): cap them at ~40,000
        sk_labels = args.sklearn_labels or max(1, min(L.n_columns, 40_000 // F.n_columns))
        if name != "rcv1-binary":
            row, ratio = mi_rows(name, F, L, quick, sk_labels, ref_pairs=40 if quick else 400)
            mi_table.append(row)
        row, med = distance_rows(name, F, quick, sk_cols=F.n_columns if not big else 5000,
                                 ref_cols=20 if quick else 200, n_steps=10 if quick else 200)
        dist_table.append(row)

    body = [
        "### Feature-by-label MI matrix (bits), all features x all labels",
        "",
        C.md_table(["dataset", "n x d x labels", "coreselect numba", "coreselect numpy",
                    "sklearn loop", "numba speed-up vs sklearn", "reference",
                    "speed-up vs reference", "max abs diff"], mi_table),
        "",
        "### One greedy distance step: d(u, v) from one feature u to all d features",
        "",
        C.md_table(["dataset", "d", "numba ms (median / p90)", "numpy ms (median)",
                    "sklearn (u as target)", "speed-up vs sklearn", "reference",
                    "speed-up vs reference", "max abs diff"], dist_table),
        "",
        "Times are best of 3 (MI) or the median over %s random non-constant features u "
        "(distance). sklearn and the reference run on the same discretized codes; where they "
        "run on part of the work the note says how much, and the time shown is extrapolated "
        "linearly to the whole. *max abs diff*: largest difference between their values and "
        "ours on the part they computed." % ("10" if quick else "200"),
        "",
        "Discretization (not in the times above): " + "; ".join(disc) + ".",
    ]
    if notes:
        body += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return C.emit("Kernels: MI matrix and distance step (coreselect vs sklearn vs reference)",
                  "\n".join(body), args.out)


if __name__ == "__main__":
    main()
