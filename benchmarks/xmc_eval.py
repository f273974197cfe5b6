"""Evaluation at extreme-classification scale: the sparse-knn evaluator and the ranking measures.

Synthetic sparse data with 10^5 labels of power-law frequencies (a few labels per row) and a
tf-idf-like feature matrix restricted to ``--features`` columns (a selection). Every size runs in
its own process, so each peak RSS (``ru_maxrss``, of the whole process including the data) is
its own. Columns: SparseKNN fit, predict_scores on the test rows, all 20 ranking measures
(p@1..5, ndcg@1..5, psp@1..5, psndcg@1..5) from those scores, and p@1 / psp@5 as a check
(the labels are planted in the features, so they are well above chance).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402


def _data(n: int, d: int, L: int, per_row: int, nnz_row: int, seed: int):
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    # power-law label frequencies (Zipf-like), per_row labels a row on average
    weights = 1.0 / np.arange(1, L + 1) ** 0.8
    weights /= weights.sum()
    counts = rng.poisson(per_row, n).clip(1, None)
    rows = np.repeat(np.arange(n), counts)
    labels = rng.choice(L, size=rows.size, p=weights)
    Y = sp.csr_matrix((np.ones(rows.size), (rows, labels)), shape=(n, L))
    Y.data[:] = 1.0
    # each label plants a few features: a row's features are its labels' plus background noise
    plant = rng.integers(0, d, size=(L, 3))
    frows = np.concatenate([rows.repeat(3), np.repeat(np.arange(n), nnz_row)])
    fcols = np.concatenate([plant[labels].ravel(), rng.integers(0, d, n * nnz_row)])
    X = sp.csr_matrix((rng.random(frows.size) + 0.5, (frows, fcols)), shape=(n, d))
    return X, Y


def child(payload: dict) -> dict:
    import numpy as np

    from coreselect.evaluation.ranking import RANKING_MEASURES, ranking_measures
    from coreselect.evaluation.sparse_knn import SparseKNN

    t0 = time.perf_counter()
    X, Y = _data(payload["n"], payload["d"], payload["labels"], payload["per_row"],
                 payload["nnz_row"], 0)
    gen = time.perf_counter() - t0
    n_test = max(1, int(payload["n"] * payload["test"]))
    Xtr, Ytr, Xte, Yte = X[n_test:], Y[n_test:], X[:n_test], Y[:n_test]
    data_peak = _common.peak_rss_mib()
    est = SparseKNN(n_neighbors=payload["neighbors"])
    # wall and CPU seconds: on a shared, loaded machine the CPU time is the fairer number
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(Xtr, Ytr)
    fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    scores = est.predict_scores(Xte)
    predict_s, predict_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    values = ranking_measures(Yte, scores, RANKING_MEASURES, Y_train=Ytr)
    measures_s, measures_cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"gen_s": gen, "fit_s": fit_s, "predict_s": predict_s, "measures_s": measures_s,
            "fit_cpu": fit_cpu, "predict_cpu": predict_cpu, "measures_cpu": measures_cpu,
            "n_test": n_test, "score_nnz": int(scores.nnz), "label_nnz": int(Y.nnz),
            "feature_nnz": int(X.nnz), "data_peak_mib": data_peak,
            "peak_mib": _common.peak_rss_mib(), "p@1": values["p@1"], "psp@5": values["psp@5"],
            "dense_scores_mib": n_test * payload["labels"] * 8 / 2**20,
            "measures": {k: float(np.round(v, 4)) for k, v in values.items()}}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    p = _common.parser(__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000],
                   help="numbers of rows, each in its own process")
    p.add_argument("--labels", type=int, default=100_000, help="labels")
    p.add_argument("--features", type=int, default=200, help="selected features (columns)")
    p.add_argument("--per-row", type=float, default=5.0, help="mean labels per row")
    p.add_argument("--nnz-row", type=int, default=10, help="background non-zeros per row")
    p.add_argument("--neighbors", type=int, default=10, help="neighbours of SparseKNN")
    p.add_argument("--test", type=float, default=0.2, help="share of rows scored (the rest train)")
    args = p.parse_args()
    sizes = [2000] if args.quick else args.sizes
    labels = 5000 if args.quick else args.labels
    rows, results = [], {}
    for n in sizes:
        payload = {"n": n, "d": args.features, "labels": labels, "per_row": args.per_row,
                   "nnz_row": args.nnz_row, "neighbors": args.neighbors, "test": args.test}
        res = _common.run_case(__file__, payload)
        results[n] = res
        if "error" in res:
            rows.append([f"{n:,}", "error: " + res["error"][:60]] + [""] * 7)
            continue
        rows.append([f"{n:,}", f"{res['n_test']:,}",
                     f"{_common.fmt(res['fit_s'])} / {_common.fmt(res['fit_cpu'])}",
                     f"{_common.fmt(res['predict_s'])} / {_common.fmt(res['predict_cpu'])}",
                     f"{_common.fmt(res['measures_s'])} / {_common.fmt(res['measures_cpu'])}",
                     f"{res['score_nnz']:,}", f"{res['data_peak_mib']:.0f} / {res['peak_mib']:.0f}",
                     f"{res['dense_scores_mib']:.0f}", f"{res['p@1']:.3f} / {res['psp@5']:.3f}"])
    load = os.getloadavg()
    title = (f"xmc_eval: {labels:,} labels, {args.features} features, {args.per_row:g} labels/row, "
             f"sparse-knn ({args.neighbors} neighbours), {args.test:.0%} of rows scored")
    table = _common.md_table(
        ["rows", "scored", "fit s (wall / CPU)", "predict_scores s (wall / CPU)",
         "20 measures s (wall / CPU)", "score nnz",
         "peak RSS MiB (data / total)", "dense scores would be MiB", "p@1 / psp@5"], rows)
    body = (table + f"\n\nLoad average while running: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
            f"(a shared machine: times are noisy).\n\n```json\n"
            + json.dumps({str(k): v for k, v in results.items()}, indent=1) + "\n```")
    _common.emit(title, body, args.out)


if __name__ == "__main__":
    main()
