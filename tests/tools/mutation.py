"""Mutation run: how many deliberately planted bugs does the test suite catch?

A fixed list of meaningful mutations (the slips a maintainer makes by accident: an operator,
a forgotten term, a wrong flag, an index not mapped back) is applied **one at a time** to a
temporary copy of the repository (never the working tree), and the test files relevant to
the mutated module are run against the copy with a timeout. A mutant is

* **killed** when the tests fail (or time out),
* **survived** when they pass,
* **stale** when its exact ``old`` snippet no longer occurs exactly once in the file (the code
  was refactored): reported apart, never counted as killed.

Prints a Markdown table of the kill rate per module and the list of survivors. Not part of CI
(minutes of work); run it after changing the code or the tests::

    python tests/tools/mutation.py                 # every mutant
    python tests/tools/mutation.py --only named    # the three from issue 13
    python tests/tools/mutation.py --only core/greedy.py --jobs 2
    python tests/tools/mutation.py --match "RowSharded,indptr"   # by description

Tests that fail on the unmutated code (real bugs, see ``KNOWN_FAILING``) are deselected.
The last run's results are in docs/mutation.md.

The copy imports its own ``src`` (``PYTHONPATH`` comes before the editable install's path
entry), and the tests run with the interpreter that runs this script.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _common import REPO_ROOT, emit, md_table  # noqa: E402

SRC = "src/coreselect/"


@dataclass(frozen=True)
class Mutant:
    file: str  # relative to src/coreselect/
    old: str
    new: str
    description: str
    named: bool = False  # one of the three issue 13 names
    round: int = 1  # 1: issue 13's list; 2: issue 16's, chosen by someone who wrote none of the tests; 3, 4: likewise


M = Mutant
MUTANTS: list[Mutant] = [
    # -- core/discretize.py ----------------------------------------------------------------
    M("core/discretize.py", "& (col_min >= 0) & (zero_w * 2 > n)", "& (col_min >= 0) & (zero_w * 2 >= n)",
      "zero-bin rule: exactly half zeros counts as mostly zero"),
    M("core/discretize.py", "small = valid & (table < min_count)", "small = valid & (table <= min_count)",
      "merging: a bin of exactly min_bin_count is merged"),
    M("core/discretize.py", "go_left = left_ok & (left <= right)", "go_left = left_ok & (left < right)",
      "merging: a tie between neighbours goes right"),
    M("core/discretize.py", "raw = (q[u_col] * before) // np.maximum(total[u_col], 1)",
      "raw = (n_bins * before) // np.maximum(total[u_col], 1)",
      "equal frequency: q ignores the kept zero bin"),
    M("core/discretize.py", "raw = np.minimum(raw, n_bins - 1)", "raw = np.minimum(raw, n_bins)",
      "uniform: the maximum gets a bin of its own"),
    # -- core/_numba_discretize.py (the compiled twin of the five above) --------------------
    M("core/_numba_discretize.py", "and col_min >= 0 and zero_w * 2 > n",
      "and col_min >= 0 and zero_w * 2 >= n", "compiled zero-bin rule: exactly half zeros counts as mostly zero"),
    M("core/_numba_discretize.py", "if table[b] < min_count and", "if table[b] <= min_count and",
      "compiled merging: a bin of exactly min_bin_count is merged"),
    M("core/_numba_discretize.py", "go_left = j > 0 and left <= right", "go_left = j > 0 and left < right",
      "compiled merging: a tie between neighbours goes right"),
    M("core/_numba_discretize.py", "raw[g] = (q * before) // tot", "raw[g] = (n_bins * before) // tot",
      "compiled equal frequency: q ignores the kept zero bin"),
    M("core/_numba_discretize.py", "/ width)), n_bins - 1)", "/ width)), n_bins)",
      "compiled uniform: the maximum gets a bin of its own"),
    # -- core/entropy.py ---------------------------------------------------------------------
    M("core/entropy.py", "inv_x = np.where(h_x >= ZERO_ENTROPY, 1.0 / np.sqrt(h_x), 0.0)",
      "inv_x = np.where(h_x >= ZERO_ENTROPY, 1.0 / h_x, 0.0)", "nmi: divides by H(x) instead of sqrt(H(x))"),
    M("core/entropy.py", "dist = np.where(ok, (2.0 * h_uv - h_u - h_v)",
      "dist = np.where(ok, (h_uv + h_u - h_v)", "distance: wrong numerator"),
    M("core/entropy.py", "return zero_small(np.log2(n) - (s + xl[zero]) / n)",
      "return zero_small(np.log2(n) - s / n)", "entropy: forgets the implicit-zero cell"),
    # -- core/objective.py -------------------------------------------------------------------
    M("core/objective.py", "return self.k * (self.k - 1) / (2.0 * p * self.n_labels)",
      "return self.k * (self.k - 1) / (p * self.n_labels)", "coefficient c without the 2"),
    M("core/objective.py", "return (1.0 - self.lam) * self.coefficient, self.lam",
      "return self.lam * self.coefficient, 1.0 - self.lam",
      "h: lambda weighs the wrong term"),
    M("core/objective.py", "part = np.partition(values, values.shape[0] - p, axis=0)[values.shape[0] - p:]",
      "part = np.partition(values, values.shape[0] - p, axis=0)[values.shape[0] - p + 1:]",
      "top-p sums only p - 1 values"),
    M("core/objective.py", "return int(np.flatnonzero(scores >= best - tol)[0])",
      "return int(np.flatnonzero(scores >= best - tol)[-1])", "ties go to the highest index"),
    # (The same slip in the first-rise branch, ``self.gains -= np.clip(column, low, high) - low``,
    # is equivalent: a label's threshold first rises from 0, so ``low`` is 0 there.)
    M("core/objective.py", "self.gains[live] -= np.clip(vals, low, high) - low",
      "self.gains[live] -= np.clip(vals, low, high)",
      "gain update forgets the old threshold (numpy path)"),
    M("core/_numba.py", "drop = (m if m < high else high) - low",
      "drop = (m if m < high else high)",
      "gain update forgets the old threshold (numba kernel)"),
    # -- core/greedy.py ----------------------------------------------------------------------
    M("core/greedy.py", "params.coefficient * (0.5 if alternate else 1.0)",
      "params.coefficient * 1.0", "AltGreedy does not halve the relevance gain"),
    M("core/greedy.py", "u = argmax_first(gains.gains + penalty)  # the largest g({u})",
      "u = argmax_first(weight_g * gains.gains + penalty)",
      "first pick weighted by (1 - lam) c (lowest index when lam = 1)"),
    M("core/greedy.py", "        diversity += diversity_to_s[u]\n", "",
      "reported diversity D stays 0"),
    M("core/greedy.py", "pair = np.maximum(pair, pair.T)", "pair = pair",
      "pair distances only in the lower triangle"),
    # -- core/problem.py ---------------------------------------------------------------------
    M("core/problem.py", "            selectable &= ~features.is_constant\n", "            pass\n",
      "constant columns become selectable"),
    M("core/problem.py", 'positions = positions[np.argsort(self.column_ids[positions], kind="stable")]',
      "positions = positions", "a part keeps the partition's column order (tie-breaking)"),
    # -- distributed.py (Algorithm 3) --------------------------------------------------------
    M("selection/strategies.py", "final = union.run(k, alternate=True,",
      "final = union.run(k, alternate=False,",
      "Algorithm 3's last step runs Greedy instead of AltGreedy", named=True),
    M("selection/distributed.py", "                                    relevance=o.relevance, calibration=o.calibration,\n"
      "                                    keep_constant=self.keep_constant, column_ids=ids[sort])",
      '                                    relevance="mi", calibration=o.calibration,\n'
      "                                    keep_constant=self.keep_constant, column_ids=ids[sort])",
      "the store's parts ignore relevance='nmi'", named=True),
    M("selection/distributed.py", "return max(1, math.ceil(math.sqrt(n_columns / max(k, 1))))",
      "return max(1, math.floor(math.sqrt(n_columns / max(k, 1))))", "auto m rounds down"),
    M("selection/distributed.py", "n = min(task.n_select, int(sub.selectable.sum()))",
      "n = min(task.settings.k, int(sub.selectable.sum()))", "coreset_size ignored (parts pick k)"),
    M("selection/distributed.py", '    sort = np.argsort(ids, kind="stable")\n    return Problem(',
      "    sort = np.arange(ids.size)\n    return Problem(",
      "the union is not in original-id order (tie-breaking)"),
    M("selection/distributed.py", "        if not self.keep_constant:\n            sort = sort[~block.is_constant[sort]]",
      "        if True:\n            sort = sort[~block.is_constant[sort]]",
      "store parts drop constant columns even with keep_constant"),
    M("selection/sources/store.py", "shared = StoreParts(self.store.ref, objective, self.binning.keep_constant)",
      "shared = StoreParts(self.store.ref, objective, False)",
      "StoreSource ignores keep_constant in the parts"),
    M("selection/distributed.py", "    order = shuffled_order(n_columns, random_state)\n    bounds",
      "    order = np.arange(n_columns)\n    bounds",
      "in-memory partition not shuffled (differs from the store's)"),
    # -- store.py ------------------------------------------------------------------------------
    M("store/reader.py", "min(stop, (b + 1) * bs) - b * bs", "min(stop, (b + 1) * bs - 1) - b * bs",
      "read_range drops the last column of each block"),
    M("store/build.py", '"n_constant": int((n_codes <= 1).sum()),', '"n_constant": 0,',
      "store metadata miscounts constant columns (k check)"),
    # -- selection.py --------------------------------------------------------------------------
    M("selection/strategies.py", "        feature_relevance=sums,\n        label_relevance=rows,",
      "        feature_relevance=rows.max(axis=1),\n        label_relevance=rows,",
      "feature relevance is the max, not the sum, over labels"),
    M("selection/__init__.py", "scheduler=scheduler, random_state=random_state,\n",
      "scheduler=scheduler, random_state=None,\n",
      "the seed does not reach the partition"),
    M("selection/sources/memory.py", "if classes.size > 2:", "if classes.size >= 2:",
      "two classes become two labels"),
    # -- new code (after the redesign): calibration, row shards, store checks, spec, files ----
    M("core/greedy.py", "return (values - low) / spread if spread > 0", "return values / spread if spread > 0",
      "range calibration: min-max scaling forgets to subtract the minimum"),
    M("core/greedy.py", "spread = max(vals.max() - low, floor)", "spread = max(vals.max(), floor)",
      "range calibration: spread is the max, not max - min"),
    M("core/greedy.py", "            if skip_copies and np.any(live & ~copies):\n",
      "            if False:\n", "calibrated steps no longer skip copies of selected features"),
    M("core/greedy.py", "COPY_ATOL = 1e-9", "COPY_ATOL = 1e-3",
      "copy rule: near (not identical) columns count as copies"),
    M("core/greedy.py", "relevance_gains = np.where(relevance_gains > GAIN_RTOL * relevance_scale, relevance_gains, 0.0)",
      "relevance_gains = relevance_gains",
      "calibration: no floor for the rounding residue of relevance gains"),
    M("core/greedy.py", "            return (1.0 - lam) * np.log(relevance_gains) + lam * np.log(mean_d)",
      "            return lam * np.log(relevance_gains) + (1.0 - lam) * np.log(mean_d)",
      "ratio calibration: lambda weighs the wrong term"),
    M("core/shards.py", "a.joint + b.joint)", "a.joint + a.joint)",
      "shard merge: the joint counts of the second shard are lost"),
    M("core/shards.py", "return ShardCounts(a.n_samples + b.n_samples,", "return ShardCounts(a.n_samples,",
      "shard merge: the sample count is not summed"),
    M("core/shards.py", "    s += xlogx(n - nnz_u - stats.nonzero_counts + together)\n", "",
      "row-sharded oracle: forgets the (0, 0) cell of the joint table"),
    M("engines/rowsharded.py", "return self.oracle.distances_from(int(self.positions[u]))[self.positions]",
      "return self.oracle.distances_from(int(u))[self.positions]",
      "restricted row-sharded oracle: local position used as a global column"),
    M("selection/strategies.py", "selected = positions if ids is None else np.asarray(ids, dtype=np.int64)[positions]",
      "selected = positions", "RowSharded reports shard positions, not column ids"),
    M("store/reader.py", "            if actual != crc:\n", "            if False:\n",
      "store: block checksums are not verified"),
    M("store/reader.py", 'if meta.get("checksum") != meta_checksum(meta):', "if False:",
      "store: the store.json checksum is not verified"),
    M("store/reader.py", "        if np.any(top != np.maximum(n_codes - 1, 0)):\n", "        if False:\n",
      "store: a tile's codes are not checked against n_codes"),
    M("store/reader.py", "        if indptr.size != width + 1:\n", "        if indptr.size < width:\n",
      "store: a tile's indptr length is checked loosely"),
    M("selection/spec.py", '"lam": Constraint("real", 0.5, low=0, high=1),', '"lam": Constraint("real", 0.5, low=0),',
      "spec: lam has no upper bound"),
    M("selection/spec.py", '"k": Constraint("int", None, low=1,', '"k": Constraint("int", None, low=0,',
      "spec: k = 0 accepted"),
    M("io/files.py", "                    os.replace(backups[i], q.target)\n", "",
      "output_set: a failed set leaves replaced outputs new (no rollback)"),
    M("io/files.py", "                else:\n                    os.unlink(q.target)\n", "",
      "output_set: a failed set leaves newly created outputs behind"),
    # -- engines ------------------------------------------------------------------------------
    M("engines/local.py", "results[futures[fut]] = fut.result()", "results[done - 1] = fut.result()",
      "process pool returns parts in completion order"),
    M("engines/dask.py", "results[index[fut.key]] = fut.result()", "results[done - 1] = fut.result()",
      "Dask returns parts in completion order"),
    M("engines/dask.py", "return (CancelledError, OSError, ClosedClientError)  # CommClosedError is an OSError",
      "return (OSError, ClosedClientError)  # CommClosedError is an OSError",
      "cancelled futures escape as a raw Dask error"),
    M("engines/base.py", "        out.append(result)\n", "        out.insert(0, result)\n",
      "in-process/streaming engine returns the parts in reverse order"),
    # -- cli -----------------------------------------------------------------------------------
    # The CLI no longer maps indices itself: the source carries the candidates' original ids
    # (in memory: ``column_ids`` of the problem; store: ``data_columns``).
    M("selection/sources/memory.py", "            ids = self.column_ids\n",
      "            ids = None\n",
      "select reports indices not mapped back through dropped ID columns (in memory)",
      named=True),
    M("selection/sources/store.py", "return ids if file_ids is None else file_ids[ids]", "return ids",
      "a store of a file with ID columns reports store ids, not file columns"),
    M("selection/strategies.py", "        result.selected = source.data_columns(result.selected)\n", "",
      "Strategy.run does not map the selection through data_columns"),
    M("cli/select.py", "if \"random_state\" in given\n                            else None, **params)",
      "if \"random_state\" in given\n                            else None, "
      "**{**params, 'relevance': 'mi'})",
      "select STORE ignores --relevance"),
    # -- evaluation ------------------------------------------------------------------------------
    M("evaluation/protocol.py", "return BRkNNb(n_neighbors=5)",
      "return BRkNNb(n_neighbors=3)", "protocol uses 3 neighbours"),
    M("evaluation/protocol.py", "Xtr, Ytr, Xte, Yte = X[train], Y[train], X[test], Y[test]",
      "Xtr, Ytr, Xte, Yte = X[test], Y[test], X[train], Y[train]", "folds swapped (leakage)"),
    M("evaluation/protocol.py", "selected = np.asarray(est.ranking_)[:k]",
      "selected = np.asarray(est.ranking_)[1:k + 1]", "ranker prefix off by one"),
    M("evaluation/protocol.py", "pred = clf.predict(Xte[:, sel])", "pred = clf.predict(Xte[:, sel[::-1]])",
      "test columns in the wrong order"),
    M("evaluation/measures.py", 'return float(f1_score(t, p, average="macro", zero_division=1.0))',
      'return float(f1_score(t, p, average="weighted", zero_division=1.0))', "macro F1 weighted by support"),
    M("evaluation/measures.py", 'return float(jaccard_score(t, p, average="samples", zero_division=1.0))',
      'return float(jaccard_score(t, p, average="samples", zero_division=0.0))',
      "example accuracy: both-empty example scores 0"),
    M("evaluation/measures.py", '"micro_f1": micro_f1,', '"micro_f1": macro_f1,',
      "registry maps micro_f1 to macro F1"),
    M("evaluation/brknn.py", "n_pred = np.floor(mean_size + 0.5).astype(int)",
      "n_pred = np.round(mean_size).astype(int)", "label count rounds half to even"),
    M("evaluation/brknn.py", "conf = (counts + 1.0 / n_train) / (sizes + n_labels / n_train)[:, None]",
      "conf = counts / (sizes + n_labels / n_train)[:, None]", "confidences lose Mulan's 1/n"),
    M("evaluation/brknn.py", "kth = np.partition(d2, k - 1, axis=1)[:, k - 1 : k]",
      "kth = np.partition(d2, min(k, d2.shape[1] - 1), axis=1)[:, min(k, d2.shape[1] - 1):][:, :1]",
      "one neighbour too many"),
    M("evaluation/brknn.py", "scale = np.divide(1.0, ranges, out=np.zeros_like(ranges), where=ranges > 0)",
      "scale = np.ones_like(ranges)", "no min-max normalization"),
]

def in_round(n: int):
    """The constructor of round ``n``'s mutants: ``R(file, old, new, description)``."""
    def make(file: str, old: str, new: str, description: str) -> Mutant:
        return Mutant(file, old, new, description, round=n)
    return make


# Test files per group, fastest and most telling first (missing files are skipped).
# -- round 2 (issue 16): chosen by the lead, who wrote none of the tests, in the newest code:
# row shards on Dask, store verification, output rollback, baselines, calibration. Each is a
# slip on a dimension the issue names: uneven work per worker (1, 3, > 8 tiles per worker),
# a change that keeps size and mtime, a later output that is a special file, mixed signs.
R = in_round(2)


MUTANTS += [
    # -- engines/dask_rows.py: how tiles are grouped per worker and summed --------------------
    R("engines/dask_rows.py", "for j in range(0, len(g), self.fan_in)]",
      "for j in range(0, len(g) - 1, self.fan_in)]",
      "dask rows: a worker's last group is dropped when it holds a single tile"),
    R("engines/dask_rows.py", "self.groups = [g[j:j + self.fan_in] for g",
      "self.groups = [g[j:j + self.fan_in - 1] for g",
      "dask rows: every fan_in-th tile of a worker is dropped (> 8 tiles per worker)"),
    R("engines/dask_rows.py", "        total = part if total is None else total + part\n    return total\n\n\ndef _sum",
      "        total = part\n    return total\n\n\ndef _sum",
      "dask rows: a group of tiles keeps only its last tile's counts"),
    R("engines/dask_rows.py", "    for part in parts[1:]:\n", "    for part in parts[2:]:\n",
      "dask rows: a reduce task drops its second partial sum"),
    R("engines/dask_rows.py",
      "parts = [g[0] if len(g) == 1 else client.submit(_sum, *g, pure=False)\n                         for g in groups]",
      "parts = [g[0] for g in groups]",
      "dask rows: the sum tree keeps the first partial of each fan-in group"),
    # -- rowsharded.py --------------------------------------------------------------------------
    R("engines/rowsharded.py", "            if total is None:\n                total = part\n            else:\n"
      "                total += part\n            del part",
      "            total = part\n            del part",
      "rows: the sequential map-reduce keeps only the last shard"),
    R("engines/rowsharded.py", "        for i in range(self.n_row_shards):\n            part = own(i, u, backend)",
      "        for i in range(self.n_row_shards - 1):\n            part = own(i, u, backend)",
      "rows from a store: a greedy step skips the last row block"),
    # -- store/reader.py: verification ----------------------------------------------------------
    R("store/reader.py", "        if force or key not in _VERIFIED:", "        if key not in _VERIFIED:",
      "store verify trusts this process's checksum cache (a change keeping size and mtime passes)"),
    R("store/reader.py", "return str((self.path / rel).resolve()), st.st_size, st.st_mtime_ns",
      "return str((self.path / rel).resolve()), st.st_size, 0",
      "checksum cache ignores mtime (a same-size rewrite is never re-read)"),
    R("store/reader.py", "if st.st_size != size:", "if st.st_size < size:",
      "store check: a file that grew passes the size check"),
    R("store/reader.py", "top[cols] = np.maximum(top[cols], np.maximum.reduceat(dat, ptr[:-1][has]))",
      "top[cols] = np.maximum.reduceat(dat, ptr[:-1][has])",
      "store verify: a column's largest code comes from its last row block only"),
    # Equivalent as far as a user sees: check_csc below refuses the same tile (its indptr runs
    # past the short array), in its own words. Kept to show the first check is still exact.
    R("store/reader.py", "if not 0 <= a <= z <= min(indices.size, data.size):",
      "if not 0 <= a <= z <= max(indices.size, data.size):",
      "tile check: indptr may point past the shorter of indices and data"),
    # -- files.py: all-or-nothing outputs -------------------------------------------------------
    R("io/files.py", "                    if q.target.is_file():\n",
      "                    if q.target.is_file() and len(regular) > 2:\n",
      "output_set: with two outputs, the first replaced one has no backup to roll back to"),
    R("io/files.py",
      "                for i, q in enumerate(regular):\n                    q.commit()",
      "                for q in special:\n                    q.commit()\n"
      "                special = []\n"
      "                for i, q in enumerate(regular):\n                    q.commit()",
      "output_set: special files (FIFO, device) are written before the regular outputs"),
    # -- baselines -------------------------------------------------------------------------------
    R("baselines/chi2.py", "- np.minimum(mins, 0)", "- mins",
      "br-chi2: every column shifted by its minimum, non-negative columns too"),
    R("baselines/chi2.py", "if np.any(mins < 0):", "if np.all(mins < 0):",
      "br-chi2: shifts only when every column is negative (mixed signs reach chi2 unshifted)"),
    R("baselines/relieff.py", "rng = X.max(axis=0) - X.min(axis=0) if X.shape[0]",
      "rng = np.abs(X).max(axis=0) if X.shape[0]",
      "relieff: a column's range taken as its largest magnitude (wrong for mixed signs)"),
    R("baselines/relieff.py", "        rng = maxs - mins\n", "        rng = maxs\n",
      "relieff (sparse): the range ignores negative minima"),
    R("baselines/relieff.py", "avail[np.arange(len(q)), own] -= 1", "avail[np.arange(len(q)), own] -= 0",
      "relieff: the query counts among its own class's available hits"),
    R("baselines/information_gain.py",
      'cls = discretize(labelset_ids(Y).reshape(-1, 1), strategy="none")',
      "cls = discretize(labelset_ids(Y).reshape(-1, 1))",
      "lp-ig: label-set ids binned like a numeric column"),
    R("baselines/transform.py", "_, ids = np.unique(Yd, axis=0, return_inverse=True)",
      "_, ids = np.unique(Yd.sum(axis=1), return_inverse=True)",
      "label powerset: label sets identified by their size only"),
    # -- core/greedy.py: calibration ----------------------------------------------------------
    R("core/greedy.py", "    vals = values[live]\n", "    vals = values\n",
      "calibration: spreads over all candidates, selected ones included"),
    R("core/greedy.py", "        if lam >= 1.0 or not np.any(relevance_gains[live] > 0):",
      "        if lam >= 1.0:",
      "ratio: no fallback to diversity once no candidate gains relevance"),
    R("core/greedy.py", '+ lam * _spread_scaled(diversity_gains, live, "range", floor=1.0))',
      '+ lam * _spread_scaled(diversity_gains, live, "range", floor=0.0))',
      "balanced: the one-distance floor of the diversity spread is lost"),
    R("core/greedy.py", "    spread = vals.std()\n", "    spread = values.std()\n",
      "spread: the std over all candidates, selected ones included"),
]


# -- round 3: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# coreselect.tuning (the paired one-standard-error rule), evaluate's gds-tuned, the option
# matrix's is_gds_method, and store/fs.py's shared URL-build frame (_UrlBuild).
R3 = in_round(3)


MUTANTS += [
    # -- tuning.py ------------------------------------------------------------------------------
    R3("tuning.py", "    beats = (mean > se + 1e-12) & (mean > 1e-12)\n", "    beats = mean > 1e-12\n",
       "tuning pick: any positive mean difference beats the default (no standard error)"),
    R3("tuning.py", "    return int(np.argmax(np.where(beats, mean, -np.inf)))",
       "    return int(np.argmax(mean))",
       "tuning pick: the largest mean difference wins even if it does not beat the default"),
    R3("tuning.py", "    candidates = dict(CANDIDATES if candidates is None else candidates)",
       "    candidates = dict(CANDIDATES)",
       "tuning tune: the candidates passed are ignored (always CANDIDATES)"),
    R3("tuning.py", "    grid = k_grid(min(o.size for o in orders.values()))",
       "    grid = k_grid(max(o.size for o in orders.values()))",
       "tuning tune: the common grid runs to the longest order, not the shortest"),
    R3("tuning.py", "return Tuned(choice=chosen, params=dict(candidates[chosen]), order=orders[chosen],",
       "return Tuned(choice=chosen, params=dict(candidates[chosen]), order=orders[names[0]],",
       "tuning tune: the default's order is returned whatever the choice"),
    R3("tuning.py", '"diff": round(float(mean[i]), 6),',
       '"diff": round(float(self.areas[:, i].mean()), 6),',
       "tuning to_dict: diff reports the area, not the paired difference"),
    # -- evaluation/gds.py, evaluation/protocol.py: gds-tuned ----------------------------------
    R3("evaluation/gds.py", "        cap = auto_cap(X) if auto else int(self.k)",
       "        cap = X.shape[1] if auto else int(self.k)",
       "TunedGDS auto: the cap counts constant columns too"),
    R3("evaluation/gds.py", "        self.selected_ = (self.order_[:choose_k(X, Y, self.order_).k] if auto\n"
       "                          else self.order_[:cap])",
       "        self.selected_ = self.order_[:cap]",
       "TunedGDS auto: selected_ is the whole capped order (no choose_k)"),
    R3("evaluation/protocol.py", "    return TunedGDS(k=k, random_state=seed)",
       "    return TunedGDS(random_state=seed)",
       "gds-tuned factory ignores k (default 10)"),
    # -- spec.py ----------------------------------------------------------------------------------
    R3("selection/spec.py", 'name.startswith("gds-") and name != "gds-tuned"\n', 'name.startswith("gds-")\n',
       "is_gds_method: gds-tuned counts as taking --lam/--relevance"),
    # -- store/fs.py: _UrlBuild --------------------------------------------------------------------
    R3("store/fs.py", "            if not silent:\n                self.undo()\n", "",
       "_UrlBuild: a failure after the mark does not undo what was written under the target"),
    R3("store/fs.py", "        self.staged = True  # first: a mark whose write failed may still have landed\n"
       "        _mark(self.fs, self.staging, self.root, direct=direct)\n",
       "        _mark(self.fs, self.staging, self.root, direct=direct)\n"
       "        self.staged = True\n",
       "_UrlBuild: staged set after the mark's write (a failed mark write is not cleaned up)"),
    R3("store/fs.py", "            if not isinstance(exc, Exception):\n                return False\n", "",
       "_UrlBuild: SIGINT/SIGTERM become a one-line error instead of re-raising"),
    R3("store/fs.py", "            raise _failed(exc, self.shown, self.options) from None\n",
       "            return False\n",
       "_UrlBuild: the raw exception escapes (no one-line error via _failed)"),
    R3("store/fs.py", "            shutil.rmtree(self.scratch, ignore_errors=True)\n", "",
       "_UrlBuild: the local scratch folder is left behind"),
    R3("store/fs.py", "            if self.staged:\n                _quietly(self.fs.rm, self.staging, recursive=True)",
       "            if self.staged and exc is not None:\n                _quietly(self.fs.rm, self.staging, recursive=True)",
       "_UrlBuild: a successful build leaves its temporary prefix"),
]


# -- round 4: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the significance tests (Friedman, Iman-Davenport, Nemenyi), the automatic-k rule, the linear
# evaluator's empty-set model, evaluate's given splits (--test, --mulan-split), the store
# build's checkpoint, and the readers' recent changes (CSV header detection, the ARFF package).
R4 = in_round(4)


MUTANTS += [
    # -- evaluation/significance.py --------------------------------------------------------------
    R4("evaluation/significance.py", "return stats.rankdata(-scores if higher_is_better else scores, axis=1)",
       "return stats.rankdata(-scores if higher_is_better else scores, axis=0)",
       "ranks: each method ranked down its column over the cells, not within each cell"),
    R4("evaluation/significance.py", "return stats.rankdata(-scores if higher_is_better else scores, axis=1)",
       'return stats.rankdata(-scores if higher_is_better else scores, axis=1, method="min")',
       "ranks: tied scores share the best rank, not the mean of the ranks they span"),
    R4("evaluation/significance.py", "- k * (k + 1) ** 2 / 4.0)", "- k * (k + 1) / 4.0)",
       "Friedman chi2: (k + 1) not squared in the correction term"),
    R4("evaluation/significance.py", "stats.f.sf(f, k - 1, (k - 1) * (n - 1))", "stats.f.sf(f, k - 1, (k - 1) * n)",
       "Iman-Davenport p-value: (k - 1) N denominator degrees of freedom, not (k - 1)(N - 1)"),
    R4("evaluation/significance.py", "return float(stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2))",
       "return float(stats.studentized_range.ppf(1 - alpha, k, np.inf))",
       "Nemenyi q_alpha not divided by sqrt 2 (the critical difference 41 % too wide)"),
    R4("evaluation/significance.py", "cd=nemenyi_cd(k, n, alpha)", "cd=nemenyi_cd(n, k, alpha)",
       "friedman's critical difference with the methods and the cells swapped"),
    # -- selection/autok.py: the rule and its inner cross-validation --------------------------------
    R4("selection/autok.py", 'k = max(p["k"] for p in picks.values())', 'k = min(p["k"] for p in picks.values())',
       "auto k keeps the smaller of the example-F1 and macro-F1 picks"),
    R4("selection/autok.py", "half = max(1, varying_columns(X) // 2)", "half = max(1, X.shape[1] // 2)",
       "auto k: half the features counts constant columns too"),
    R4("selection/autok.py", "threshold = float(mean[b_low] + max(_band(scores[:, b_low], band), se,\n"
       "                                            _band(scores[:, b_high], \"se\")))",
       "threshold = float(mean[b_low])",
       "auto k: any rise beyond half the features counts (no standard-error margin)"),
    R4("selection/autok.py", 'return {"k": int(grid[ok[0]]), "threshold"', 'return {"k": int(grid[ok[-1]]), "threshold"',
       "auto k: of the sizes within the band (ties of the best mean), the largest wins"),
    R4("selection/autok.py", "out[m] = float(np.where(size == 0, 1.0, 2.0 * tp / np.maximum(size, 1)).mean())",
       "out[m] = float(np.where(size == 0, 0.0, 2.0 * tp / np.maximum(size, 1)).mean())",
       "auto k's macro F1: a label neither present nor predicted scores 0, not 1"),
    R4("selection/autok.py", "        d2 += prod\n", "        d2 = prod\n",
       "auto k's BRkNN: a prefix's distances are those of its newest columns only"),
    R4("selection/autok.py", "np.concatenate(parts[:i] + parts[i + 1:])", "np.concatenate(parts[:i] + parts[i:])",
       "auto k's inner folds: the validation rows are also training rows"),
    # -- evaluation/linear.py: the empty label set -------------------------------------------------
    R4("evaluation/linear.py", "        if f1 >= best - 1e-12:\n            best, cut = f1, float(t)",
       "        if f1 > best + 1e-12:\n            best, cut = f1, float(t)",
       "empty-set cut: ties go to the lowest cut (rows predicted empty where it does not help)"),
    R4("evaluation/linear.py", 'empty = self.empty or ("model" if self.threshold == "cv" else "none")',
       'empty = self.empty or "none"', "linear evaluator: the default (empty=None) never models the empty set"),
    R4("evaluation/linear.py", "self.empty_cut_ = best_empty_cut(Y, P, oof[:, -1])",
       "self.empty_cut_ = best_empty_cut(Y, P, oof[:, 0])",
       "empty-set cut chosen on the first label's probability, not on the no-label one"),
    R4("evaluation/linear.py", "return (self.predict_proba(X) >= self.thresholds_[None, :]).astype(np.int8)",
       "return self.predict(X)",
       "macro/micro F1 scored on predictions the empty-set model emptied"),
    # -- cli/evaluate.py: --test and --mulan-split ------------------------------------------------------
    R4("cli/evaluate.py", "return both, [(np.arange(n_train), np.arange(n_train, n_train + test.n_samples))]",
       "return both, [(np.arange(n_train + test.n_samples), np.arange(n_train, n_train + test.n_samples))]",
       "evaluate --test: the test rows are also training rows"),
    R4("cli/evaluate.py", 'return f"{stem}-train{ext}", f"{stem}-test{ext}"',
       'return f"{stem}-test{ext}", f"{stem}-train{ext}"',
       "evaluate --mulan-split (a file): the -test file trains, the -train file tests"),
    R4("cli/evaluate.py", '    for what, a, b in (("features", train.feature_names, test.feature_names),\n'
       '                       ("labels", train.label_names, test.label_names)):',
       '    for what, a, b in (("labels", train.label_names, test.label_names),):',
       "evaluate --test: a test set with other features (or in another order) is not refused"),
    # -- store/_resume.py, store/checkpoint_file.py: the build checkpoint -------------------------------
    R4("store/_resume.py", "int(st.st_mtime_ns), int(st.st_ctime_ns),", "int(st.st_mtime_ns),",
       "build checkpoint: a data file edited in place with its mtime put back is taken as unchanged"),
    R4("store/_resume.py", "                    elif _sha256(path) != digest:\n", "                    elif False:\n",
       "build checkpoint: a kept task's file damaged in place (same size) is used on resume"),
    R4("store/_resume.py", 'if any(p in ("", ".", "..") for p in parts) or rel == MANIFEST:',
       'if any(p in ("", ".") for p in parts) or rel == MANIFEST:',
       "build checkpoint: a manifest may name files outside its task's folder (../)"),
    R4("store/_resume.py", "    if is_owned(trash):\n        _remove_owned(trash)\n", "    if True:\n        _remove_owned(trash)\n",
       "build checkpoint: a PATH.parts.removed folder coreselect did not make is emptied"),
    R4("store/checkpoint_file.py", "            except FileExistsError:\n                if not is_owned(folder):\n"
       "                    raise refuse from None\n",
       "            except FileExistsError:\n                pass\n",
       "checkpoint: a PATH.parts folder coreselect did not make is taken (written into, then removed)"),
    # -- io/csvfile.py, io/_table_common.py: CSV header detection -------------------------------------
    R4("io/csvfile.py", "else not _all_numbers(first)", "else not _all_numbers(first[:1])",
       "CSV header decided by the first cell only (a header '1,a,b' read as data)"),
    R4("io/csvfile.py", "_rows, longest = _scan_header(spath, sep, header=header)",
       "_rows, longest = _scan_header(spath, sep)",
       "headerless CSV: its first row checked as a header (repeated numbers refused as repeated names)"),
    R4("io/csvfile.py", 'name or stem(spath, (".csv",)), 1 + header,', 'name or stem(spath, (".csv",)), 2,',
       "headerless CSV: errors name the line after the bad one"),
    R4("io/_table_common.py", '("binary" if len(nominal_values[c]) <= 2 else "nominal")',
       '("binary" if len(nominal_values[c]) < 2 else "nominal")',
       "tables: a text column of two values is kind nominal, not binary"),
    # -- io/arff/ --------------------------------------------------------------------------------------------
    R4("io/arff/label_columns.py", 'return labels_by_count(-c, len(attrs), arff_path, "the MEKA -C option"), {',
       'return labels_by_count(c, len(attrs), arff_path, "the MEKA -C option"), {',
       "ARFF: MEKA's -C n read with our sign (-C 3: the last three attributes, not the first)"),
    R4("io/arff/__init__.py", "        on_code[j] = on[0]\n", "",
       "ARFF: a nominal label declared {1,0} (its 'on' value first) is read inverted"),
    R4("io/arff/dense.py", 'lk.setdefault("?", len(values))', 'lk.setdefault("?", len(values) - 1)',
       "ARFF missing='bin': a nominal '?' gets the last declared value's code, not its own"),
    R4("io/arff/header.py", "if all(values) and len(set(values)) == len(values):", "if all(values):",
       "ARFF: the fast header parser accepts a nominal declaration with a repeated value"),
]

# -- round 5: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the conditional criterion calibration="cmim" (core/conditional.py, its dispatch in Problem.run)
# and the places that refuse it or report it (strategies, spec, the CLI report, gds-cmim).
R5 = in_round(5)


MUTANTS += [
    # -- core/conditional.py: the tables ----------------------------------------------------------
    R5("core/conditional.py", "    base = margin[m.row] if axis == 0 else margin[m.col]\n",
       "    base = margin[m.col] if axis == 0 else margin[m.row]\n",
       "cmim tables: the code-0 correction reads the margin of the other axis"),
    R5("core/conditional.py", "both_zero = _xlogx(N - ge[:, None] - gz[None, :] + T)",
       "both_zero = _xlogx(N - ge[:, None] - gz[None, :])",
       "cmim tables: the rows where both codes are 0 forget the rows subtracted twice"),
    R5("core/conditional.py", "for a, r in ((a, rows[vals == a]) for a in np.unique(vals[vals > 0])))",
       "for a, r in ((a, rows[vals == a]) for a in np.unique(vals[vals > 1])))",
       "cmim given s: the rows where s has code 1 are counted with code 0"),
    R5("core/conditional.py", "M, e, z, N = M - Ma, e - ea, z - za, N - Na",
       "M, e, z, N = M - Ma, e - ea, z - za, N",
       "cmim given s: the code-0 part keeps the row count of all rows"),
    R5("core/conditional.py", "self._labels_binary = bool(np.all(np.asarray(labels_n_codes) == 2))",
       "self._labels_binary = bool(np.any(np.asarray(labels_n_codes) == 2))",
       "cmim tables: the binary-label shortcut is taken when only some labels are binary"),
    # -- core/conditional.py: the greedy ----------------------------------------------------------
    R5("core/conditional.py", "worst = cond if worst is None else np.minimum(worst, cond)",
       "worst = cond if worst is None else worst + cond",
       "cmim: the sum over the selected features instead of the min"),
    R5("core/conditional.py", "worst = cond if worst is None else np.minimum(worst, cond)",
       "worst = cond if worst is None else np.maximum(worst, cond)",
       "cmim: the max over the selected features (best case) instead of the min"),
    R5("core/conditional.py", "            score = worst.sum(axis=1)\n",
       "            score = cond.sum(axis=1)\n",
       "cmim: each step conditions only on the latest pick"),
    R5("core/conditional.py", "score = tables.relevance().sum(axis=1)",
       "score = tables.relevance().max(axis=1)",
       "cmim: the first pick is the most relevant to one label, not to all"),
    R5("core/conditional.py", "        penalty[u] = -np.inf\n", "",
       "cmim: a picked column may be picked again (only its zero score keeps it out)"),
    # -- core/problem.py --------------------------------------------------------------------------
    R5("core/problem.py", "return conditional_result(self.column_ids[local], local, values, self.relevance,",
       "return conditional_result(local, local, values, self.relevance,",
       "cmim selection: positions among the kept columns, not column ids"),
    R5("core/conditional.py", "diversity=float(np.triu(pair, 1).sum()), pair_distances=pair,",
       "diversity=float(pair.sum()), pair_distances=pair,",
       "cmim selection: D counts every pair twice"),
    # -- selection/strategies.py, selection/spec.py: the refusals ---------------------------------
    # (a mutant dropping the refusal of cmim in the distributed and streaming modes was here;
    # they run it now, CMIM on each part then on the union, and the refusal is gone)
    R5("selection/strategies.py", "        if decided.calibration in CONDITIONAL and checkpoint is not None:\n",
       "        if False:\n",
       "cmim with a checkpoint is not refused before the checkpoint is opened"),
    R5("selection/spec.py", '                if not (name == "p" and value == _objective.default_p(self.calibration)):\n',
       '                if name != "p":\n',
       "Objective: p is accepted (and ignored) with calibration cmim"),
    # -- cli/select.py ----------------------------------------------------------------------------
    R5("cli/select.py", "        report.update(lam=None, p=None, relevance_kind=None)",
       "        report.update(lam=None, p=None)",
       "select --json under cmim reports the unused relevance measure"),
    R5("cli/select.py", '    if report.get("calibration") in CONDITIONAL:  # no h, weight, top-p or measure',
       '    if report.get("calibration") == CONDITIONAL:  # no h, weight, top-p or measure',
       "select's summary line under cmim speaks of h, lam and p"),
    # -- evaluation -------------------------------------------------------------------------------
    R5("evaluation/protocol.py", "                out[name] = functools.partial(_make_calibrated, lam=None, relevance=None,\n"
       "                                              p=None, calibration=cal)",
       "                out[name] = functools.partial(_make_calibrated, lam=lam, relevance=relevance,\n"
       "                                              p=None, calibration=cal)",
       "evaluate gds-cmim passes --lam and --relevance on (refused unless the defaults)"),
    R5("evaluation/gds.py", "        if calibration not in accepted_calibrations():\n",
       "        if calibration not in accepted_calibrations()[:-1]:\n",
       "CalibratedGDS refuses calibration cmim (gds-cmim cannot run)"),
]

# -- round 6: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# calibration="cmim" in mode="rows" (the merge of its counts over the row shards in
# core/conditional.py, select_conditional in engines/rowsharded.py, its dispatch in RowSharded).
R6 = in_round(6)


MUTANTS += [
    # -- core/conditional.py: the merge of the shards' counts -------------------------------------
    R6("core/conditional.py", "return ConditionalCounts(self.M + other.M, self.e + other.e, self.z + other.z,\n"
       "                                 self.n + other.n,",
       "return ConditionalCounts(self.M + other.M, self.e + other.e, self.z + other.z,\n"
       "                                 self.n,",
       "cmim rows: the merged counts keep the first shard's number of rows"),
    R6("core/conditional.py", "return ConditionalCounts(self.M + other.M, self.e + other.e, self.z + other.z,",
       "return ConditionalCounts(self.M + other.M, self.e + self.e, self.z + other.z,",
       "cmim rows: a merge counts one shard's feature codes twice and drops the other's"),
    # (a fourth, in ConditionalCounts.__sub__, survived: no code called it, so it was deleted)
    R6("core/conditional.py", "            out[a] = out[a] + counts if a in out else counts\n",
       "            out[a] = counts\n",
       "cmim rows: a code of s that two shards both have keeps the later shard's counts, not the sum"),
    R6("core/conditional.py", "            out[a] = out[a] + counts if a in out else counts\n",
       "            if a in out:\n                out[a] = out[a] + counts\n",
       "cmim rows: a code of s that only a later shard has is dropped from the merged step counts"),
    R6("core/conditional.py", "    return a is None or b is None or np.array_equal(a, b)\n",
       "    return a is None or b is None or len(a) == len(b)\n",
       "cmim rows: the counts of shards binned differently (same columns) add without a refusal"),
    # -- engines/rowsharded.py, selection/strategies.py: the run and its dispatch -----------------
    R6("engines/rowsharded.py", "    for i, u in enumerate(chosen[:-1]):\n"
       "        pair[i, i + 1:] = oracle.distances_from(int(u))[chosen[i + 1:]]",
       "    for i, u in enumerate(chosen[:-2]):\n"
       "        pair[i, i + 1:] = oracle.distances_from(int(u))[chosen[i + 1:]]",
       "cmim rows: the reported pair distances miss the pair of the last two picks"),
    R6("selection/strategies.py", "                    rows, k=objective.k, p=objective.p, calibration=objective.calibration,\n"
       "                    keep_constant=source.binning.keep_constant, backend=backend,",
       "                    rows, k=objective.k, p=objective.p, calibration=objective.calibration,\n"
       "                    backend=backend,",
       "cmim in mode rows ignores keep_constant (a constant column is never picked)"),
]

# -- round 7: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the default calibration "auto", decided from the data (data_calibration, the share of
# non-zero codes of a file or a store, the Objective's rules, the decision in Strategy.run and
# k="auto", the fused count pass of row-sharded cmim, the command's summary line).
R7 = in_round(7)


MUTANTS += [
    # -- core/objective.py: the rule ----------------------------------------------------------
    R7("core/objective.py", "if nonzero_share is None or nonzero_share < DENSE_SHARE:",
       "if nonzero_share is None or nonzero_share <= DENSE_SHARE:",
       "auto: data with exactly half its cells non-zero takes the weighing, not cmim"),
    R7("core/objective.py", "if n_samples * n_features * max(n_labels, 1) * max(k, 1) > CONDITIONAL_MAX_WORK:",
       "if n_samples * n_features * max(n_labels, 1) > CONDITIONAL_MAX_WORK:",
       "auto: the cost of cmim leaves k out (a large k on mid-sized dense data still takes cmim)"),
    # -- selection/spec.py: what the objective keeps under auto ---------------------------------
    R7("selection/spec.py", 'return [name for name in ("lam", "p", "relevance")',
       'return [name for name in ("p", "relevance")',
       "auto: a given lam does not make it the weighing (refused as not applying to cmim on dense data)"),
    R7("selection/spec.py", "if self.p is None and self.calibration in _calibrations() and (\n"
       "                self.calibration not in (_objective.AUTO, *_objective.SHARED_INFORMATION)):",
       "if self.p is None and self.calibration in _calibrations():",
       "auto: p is set before the decision (the weighing counts only the top 10 per label)"),
    # -- what it is decided from: a source's shape, the share of non-zero codes -----------------
    R7("selection/sources/base.py",
       "        return objective.decided(share, self.n_columns, int(shape[\"n_labels\"]),\n"
       "                                 int(shape[\"n_samples\"]))",
       "        return objective.decided(share, self.n_columns, int(shape[\"n_labels\"]))",
       "auto: a source passes no row count (the cost of cmim is never counted: it is taken on tall dense data)"),
    R7("selection/sources/memory.py",
       "                int((~features.is_constant).sum()))",
       "                features.n_columns)",
       "auto: constant columns count in the share's denominator (in-memory data)"),
    R7("store/reader.py", "for r in range(self.n_row_blocks) for b in range(self.n_blocks))",
       "for r in range(1) for b in range(self.n_blocks))",
       "auto: a store's non-zero codes are counted in its first row block only"),
    # -- selection/strategies.py, selection/__init__.py: where it is decided --------------------
    R7("selection/strategies.py", "if decided.calibration in CONDITIONAL and checkpoint is not None:",
       "if objective.calibration in CONDITIONAL and checkpoint is not None:",
       "auto: a checkpoint is accepted where the default takes cmim on dense data"),
    R7("selection/__init__.py", "        objective = source.decide(replace(objective, k=cap))\n"
       "        first = runner.run(objective, source, backend=backend,",
       "        first = runner.run(replace(objective, k=cap), source, backend=backend,",
       "k='auto': the default is decided again for the chosen k, not once at the cap"),
    # -- engines/rowsharded.py: the fused count pass of cmim in mode rows -----------------------
    R7("engines/rowsharded.py", "return _Both(a + b for a, b in zip(self, other))",
       "return _Both((self[0] + other[0], self[1]))",
       "cmim rows: the fused pass keeps the first shard's conditional counts, drops the others'"),
    # -- cli/select.py: the summary line ----------------------------------------------------------
    R7("cli/select.py", "else _table(report, by_default=calibration is None,",
       "else _table(report, by_default=True,",
       "select: the line saying cmim is the data's default is printed under --calibration cmim too"),
]


# -- round 8: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# "information"'s default top-p cut, p = max(3, ceil(4 k / |L|)) unless given (default_p, the
# Objective's decision and fallbacks, Source.decide, Problem.from_discrete, k="auto"'s cap,
# the protocol's ranker shortcut).
R8 = in_round(8)


MUTANTS += [
    # -- core/objective.py: the rule ----------------------------------------------------------
    R8("core/objective.py", "max(INFORMATION_MIN_P, -(-INFORMATION_ROOM * int(k) // int(n_labels)))",
       "max(INFORMATION_MIN_P, INFORMATION_ROOM * int(k) // int(n_labels))",
       "information: p rounds 4 k / labels down (the labels' lists hold less than four times the selection)"),
    R8("core/objective.py", "max(INFORMATION_MIN_P, -(-INFORMATION_ROOM * int(k) // int(n_labels)))",
       "max(INFORMATION_MIN_P, -(-INFORMATION_ROOM * int(n_labels) // int(k)))",
       "information: p is 4 labels / k, k and the number of labels swapped"),
    R8("core/objective.py", "max(INFORMATION_MIN_P, -(-INFORMATION_ROOM * int(k) // int(n_labels)))",
       "max(1, -(-INFORMATION_ROOM * int(k) // int(n_labels)))",
       "information: no floor of 3 (on data with many labels each counts only its best feature or two)"),
    R8("core/objective.py", "max(INFORMATION_MIN_P, -(-INFORMATION_ROOM * int(k) // int(n_labels)))",
       "max(INFORMATION_MIN_P, -(-int(k) // int(n_labels)))",
       "information: p loses the room factor 4 (ceil(k / labels): few labels run dry before k)"),
    R8("core/objective.py", "    if calibration not in SHARED_INFORMATION:\n        return PAPER_P",
       '    if calibration == "paper":\n        return PAPER_P',
       "information's p is the default of every weighing but the paper's (range's p is no longer 10)"),
    # -- selection/spec.py: where the Objective sets it -----------------------------------------
    R8("selection/spec.py", "out = replace(out, p=_objective.default_p(out.calibration, int(out.k), n_labels))",
       "out = replace(out, p=_objective.default_p(out.calibration, int(out.k), n_samples))",
       "information: p is decided from the number of samples, not of labels"),
    R8("selection/spec.py", "if out.p is None and out.calibration in _objective.SHARED_INFORMATION:",
       "if out.calibration in _objective.SHARED_INFORMATION:",
       "information: a given p is overwritten by the default once the data is known"),
    # -- selection/sources/base.py, selection/__init__.py: when it is decided -------------------
    R8("selection/sources/base.py", "        shape = self.describe()\n        share = ",
       "        if objective.calibration != AUTO:\n            return objective\n"
       "        shape = self.describe()\n        share = ",
       "information given by name: a source leaves p undecided (only 'auto' is decided from the data)"),
    R8("selection/__init__.py", "objective = source.decide(replace(objective, k=cap))",
       "objective = replace(source.decide(objective), k=cap)",
       "k='auto': p is decided for the default k of 10, not for the cap the order runs to"),
    # -- core/problem.py: the core's own fallback ------------------------------------------------
    R8("core/problem.py", "p=int(default_p(calibration, int(k), labels.n_columns)",
       "p=int(default_p(calibration, int(k), features.n_columns)",
       "Problem: p None under information is decided from the number of features, not of labels"),
    # -- evaluation/gds.py: the protocol's ranker shortcut ---------------------------------------
    R8("evaluation/gds.py", "if self.calibration in (AUTO, *SHARED_INFORMATION) and self.p is None:",
       "if self.calibration in SHARED_INFORMATION and self.p is None:",
       "evaluate: the default gds ('auto') is ranked once at the largest k (p of that k for every k)"),
]


# -- round 9: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the relevance kernel marks the label slots a column shares rows with (bit sets and CSR
# gather), so the fill gives the other labels the closed form without reading the table; and
# feature_scores sums an in-memory relevance in place.
R9 = in_round(9)


MUTANTS += [
    # -- core/_numba.py: the marks of the bit-set count ------------------------------------------
    R9("core/_numba.py", "                                seen[s] = 1",
       "                                seen[k] = 1",
       "relevance (bit sets): the mark goes to the lane's bit, not the slot (labels past slot 8 read as sharing no row)"),
    R9("core/_numba.py", "                            if mark:\n                                seen[s] = 1",
       "                            if mark and i == 0:\n                                seen[s] = 1",
       "relevance (bit sets): only the first code of a feature marks its slots (a label met only by code 2 reads as independent)"),
    R9("core/_numba.py", "                            if mark:\n                                seen[s] = 1",
       "                            if mark and w == 0:\n                                seen[s] = 1",
       "relevance (bit sets): only the first 64 label slots are marked (labels past them read as sharing no row)"),
    # -- core/_numba.py: the marks of the CSR gather ---------------------------------------------
    R9("core/_numba.py", "seen[slot - 1] = 1",
       "seen[cols[e]] = 1",
       "relevance (CSR gather): the label column is marked, not its slot (multi-valued labels mark the wrong label)"),
    # -- core/_numba.py: joint_block hands the marks on -------------------------------------------
    R9("core/_numba.py", "acc, 0, 1,\n                            n_slots, table, seen)",
       "acc, 0, 1,\n                            n_slots, table, seen[:0])",
       "relevance: the bit-set count gets no marks while the fill reads them (few labels: every pair taken as independent)"),
    # -- selection/__init__.py: feature_scores in place ------------------------------------------
    R9("selection/__init__.py", "sums = rel.sum(axis=1)",
       "sums = rel.sum(axis=0)",
       "feature scores: an in-memory relevance is summed over the features, not over the labels"),
]


# -- round 10: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# a centralized run's problem holds only the columns it may pick (selectable_columns and its
# callers), feature_scores' 0 for constant candidates, the relevance of mostly constant data,
# the marked distance step's kept scratch, the compiled binning's reused scratch, empty-column
# exit and insertion sort, the first rise in one compiled pass, take_rows; and the turned
# labels of flip_label_columns, where no round had planted.
R10 = in_round(10)


MUTANTS += [
    # -- selection/sources: the selectable columns of a centralized run -------------------------
    R10("selection/sources/base.py",
        "return features.take(live), live if column_ids is None else np.asarray(column_ids)[live]",
        "return features.take(live), live",
        "selectable columns: the kept columns' ids are their positions, not mapped through the "
        "source's column ids (ID columns left out and a constant column: picks name the wrong columns)"),
    R10("selection/sources/memory.py",
        "features, ids = selectable_columns(features, ids, self.binning.keep_constant)",
        "features, ids = selectable_columns(features, ids, False)",
        "in memory: keep_constant=True ignored, constant columns still left out of a centralized run"),
    # -- selection/__init__.py: feature_scores ------------------------------------------------------
    R10("selection/__init__.py",
        "    # Candidates the problem leaves out are constant: they tell nothing about any label.\n"
        "    out[source.data_columns(np.arange(source.n_columns) if source.column_ids is None\n"
        "                            else source.column_ids)] = 0.0\n",
        "",
        "feature scores: a constant candidate scores NaN (as an ID column), not 0"),
    # -- core/entropy.py: relevance of mostly constant columns; the marked distance step ----------
    R10("core/entropy.py", "        out[live, label] = values[:, label]",
        "        out[:live.size, label] = values[:, label]",
        "relevance of mostly constant columns: the varying columns' values land in the first "
        "rows, not in their own"),
    R10("core/_numba.py", "                table[cell + i] = 0\n", "",
        "distances (one thread, marked step): the kept co-occurrence table is not cleared as it "
        "is read, so a step adds the earlier steps' counts"),
    # -- core/_numba_discretize.py: reused scratch, the empty-column exit, insertion sort ---------
    R10("core/_numba_discretize.py", "        u_w[:] = 0\n", "",
        "compiled binning: the distinct values' weights are not reset between columns (a "
        "non-integer column counts the previous columns' samples)"),
    R10("core/_numba_discretize.py", "n_codes[j] = 1 if n > 0 else 0", "n_codes[j] = 0",
        "compiled binning: a sparse column with no stored cell reports 0 codes, not 1"),
    R10("core/_numba_discretize.py", "while k > 0 and ordered[k - 1] > v:",
        "while k > 1 and ordered[k - 1] > v:",
        "compiled binning, short columns: insertion sort never moves a value before the first "
        "(a column whose first stored value is not its smallest is grouped unsorted)"),
    # -- core/objective.py: the first rise in one compiled pass ------------------------------------
    R10("core/objective.py", "kept = self._lower(column, self._front, column.size, low, high, self.gains, True)",
        "kept = self._lower(column, self._front.copy(), column.size, low, high, self.gains, True)",
        "relevance gains (compiled first rise): the kernel keeps the survivors in a copy, so a "
        "label keeps stale candidates (zeros), not those still above its threshold"),
    # -- core/problem.py: take_rows ------------------------------------------------------------------
    R10("core/problem.py", "for column in range(matrix.shape[1]):",
        "for column in range(matrix.shape[1] - 1):",
        "sub-problem of a column-major relevance: the last label's column is never copied "
        "(left as uninitialized memory)"),
    # -- core/discretize.py: flip_label_columns ------------------------------------------------------
    R10("core/discretize.py", "order[cols] = Y.shape[1] + np.arange(cols.size)",
        "order[cols] = np.arange(cols.size)",
        "labels on in most samples: the turned label is replaced by the first labels' "
        "unturned columns"),
]


# -- round 11: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# in-memory CMIM's tables counted from the rows by a compiled kernel (add_part's counts of a
# part and its closed form of N I(f; l); RowTables' parts of a step, label indicators,
# x log x and applies; cmim() choosing it).
R11 = in_round(11)


MUTANTS += [
    # -- core/_numba_conditional.py: the counts of a part and the closed form -------------------
    R11("core/_numba_conditional.py", "    e[:] = 0\n", "",
        "cmim in memory (compiled): the feature codes' counts are not reset between the parts "
        "of a step (each part adds the earlier parts' rows)"),
    R11("core/_numba_conditional.py", "f_only += xl[e[k] - m] - xl[e[k]]",
        "f_only += xl[zl - m] - xl[zl]",
        "cmim in memory (compiled): the cells where the feature is on and the label off take "
        "the label's count, not the feature code's"),
    R11("core/_numba_conditional.py", "s = (joint + f_only) + l_only",
        "s = joint + f_only",
        "cmim in memory (compiled): the cells where the label is on and the feature off are "
        "left out of N I(f; l)"),
    # -- core/conditional.py: RowTables -----------------------------------------------------------
    R11("core/conditional.py", "        rest[rows] = False\n", "",
        "cmim in memory: the last part of a step (the picked column's code 0) also counts the "
        "rows where the picked column is not 0"),
    R11("core/conditional.py", "float(_xlogx(float(rows.size)))", "float(_xlogx(self.n))",
        "cmim in memory: each part's N log N term uses all rows' N, not the part's"),
    R11("core/conditional.py",
        "label_slot = np.where(np.asarray(labels.n_codes) == 2, _starts(labels.n_codes)[:-1], -1)",
        "label_slot = np.where(np.asarray(labels.n_codes) >= 1, _starts(labels.n_codes)[:-1], -1)",
        "cmim in memory: a constant label is treated as on somewhere (it shares the next "
        "label's indicator and reads its counts)"),
    R11("core/conditional.py", "bool(np.all(np.asarray(labels.n_codes) <= 2))",
        "bool(np.all(np.asarray(labels.n_codes) <= 3))",
        "cmim in memory: labels of three codes take the compiled path (which counts only "
        "binary labels)"),
    R11("core/conditional.py",
        "        return cmim_order(RowTables(features, labels), lambda s: s, n_select,\n"
        "                          selectable=selectable, callback=callback)",
        "        return cmim_order(RowTables(features, labels), lambda s: s, n_select,\n"
        "                          callback=callback)",
        "cmim in memory: the compiled path ignores which columns may be picked"),
]


# -- round 12: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the fused greedy distance step of one thread (gather_marked's marks, add_distance_step's word
# scan over the marks, its fill and its kept scratch: table, marks, done flags; the sums it adds:
# distance, shared information, copies), the threaded step that leaves the sums to its caller,
# and greedy's _add_step for an oracle with no fused step (the row shards').
R12 = in_round(12)


MUTANTS += [
    # -- core/_numba.py: add_distance_step's scan of the marks ----------------------------------
    R12("core/_numba.py", "    for w in range(seen_words.size):\n",
        "    for w in range(seen_words.size - 1):\n",
        "fused distance step: the word scan of the marks skips the last word (its columns take "
        "the closed form as if they shared no row with the pick, and keep their counts and marks)"),
    R12("core/_numba.py", "        for slot0 in range(8 * w, 8 * w + 8):\n",
        "        for slot0 in range(8 * w, 8 * w + 7):\n",
        "fused distance step: the scan of a marked word stops one byte short (a column whose only "
        "marked slot is the eighth of its word is not filled from the table)"),
    # -- core/_numba.py: add_distance_step's fill ------------------------------------------------
    R12("core/_numba.py", "                cell = slot * a\n", "                cell = slot\n",
        "fused distance step: a slot's counts are read (and cleared) with stride 1, not the "
        "pick's code count a, the gather's row-major stride"),
    R12("core/_numba.py", "                    if c > 1:", "                    if c > 2:",
        "fused distance step: the joint entropy's sum skips the cells counted exactly twice "
        "(x log x of 2 is not 0)"),
    # -- core/_numba.py: the persistent scratch between steps --------------------------------------
    R12("core/_numba.py", "                seen[slot] = 0\n", "",
        "fused distance step: the kept marks are not cleared as a column is filled, so every "
        "later step refills the earlier picks' columns from a zero table (a differently "
        "ordered sum: not the closed form's bits)"),
    R12("core/_numba.py", "            done[v] = 0\n", "",
        "fused distance step: the done flags are not cleared, so a later step keeps the "
        "uninitialised out[v] of a column an earlier pick shared a row with"),
    # -- core/_numba.py: the sums the step adds --------------------------------------------------
    R12("core/_numba.py",
        "            shared = (h_u + entropies[v]) * (1.0 - dist) / (2.0 - dist)\n",
        "            shared = entropies[v] * (1.0 - dist) / (2.0 - dist)\n",
        "fused distance step: the shared information leaves out the pick's entropy H(u) "
        "(I = (H(u) + H(v)) (1 - d) / (2 - d))"),
    R12("core/_numba.py",
        "        if mark_copies and dist <= copy_atol:\n            copies[v] = True\n",
        "        if mark_copies:\n            copies[v] = dist <= copy_atol\n",
        "fused distance step: the copies are set from this pick alone (=, not |=): a copy of an "
        "earlier pick is unmarked by the next step"),
    # -- core/entropy.py: the threaded step ---------------------------------------------------------
    R12("core/entropy.py",
        "        if sums is not None:  # one pass after the fill, on this thread\n",
        "        if False:  # one pass after the fill, on this thread\n",
        "add_distances_from on threads: the threaded step returns its distances without "
        "adding them to the sums"),
    # -- core/greedy.py: _add_step with an oracle that has no fused step --------------------------
    R12("core/greedy.py",
        "                  information_to_s, copies, COPY_ATOL, use_numba=oracle.use_numba)",
        "                  None, copies, COPY_ATOL, use_numba=oracle.use_numba)",
        "greedy step with an oracle that has no add_distances_from (row shards): the shared "
        "information sums are never added (the default calibration ranks by relevance alone)"),
]


# -- round 13: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# coreselect.warm_up() (core/conditional.py: the counts' warm-up, then CMIM's compiled tables
# on tiny data; whether the compiled kernels are in use), its lazy export, the CLI's warm-up
# thread that now calls it, and the older counts-only warm-up in core/entropy.py it calls.
R13 = in_round(13)


MUTANTS += [
    # -- core/conditional.py: warm_up ---------------------------------------------------------------
    R13("core/conditional.py",
        '    RowTables(discretize(pairs, strategy="none"), discretize_labels(pairs)).given(0)\n',
        "",
        "warm_up: CMIM's compiled tables are not loaded (only the counts' kernels: the first "
        "default fit on dense data still loads add_part)"),
    R13("core/conditional.py", ".given(0)\n    return True\n", ".given(0)\n    return False\n",
        "warm_up: says False (the numpy kernels) after loading the compiled ones"),
    R13("core/conditional.py", "    if not warm_up_counts():\n        return False\n",
        "    warm_up_counts()\n",
        "warm_up: the early return for the numpy kernels is dropped (with CORESELECT_NUMBA=0 it "
        "still builds CMIM's compiled tables, imports numba and says True)"),
    # -- __init__.py: the lazy export -------------------------------------------------------------
    R13("__init__.py", '"warm_up": "coreselect.selection",',
        '"warm_up": "coreselect.core.entropy",',
        "coreselect.warm_up is the older counts-only warm-up of core/entropy.py (CMIM's "
        "kernel is not loaded)"),
    # -- cli/select.py: the warm-up thread ---------------------------------------------------------
    R13("cli/select.py",
        "        from coreselect.selection import warm_up\n\n        warm_up(auto_k=auto_k)\n",
        "        from coreselect.core.entropy import warm_up\n\n        warm_up()\n",
        "the CLI's warm-up thread runs the older counts-only warm-up (a default select on dense "
        "data still loads CMIM's kernel after the read)"),
    # -- core/entropy.py: the counts' warm-up it calls ----------------------------------------------
    R13("core/entropy.py",
        '    if not _numba_enabled("auto"):\n        return False\n'
        "    from coreselect.core._numba import enter_top",
        "    from coreselect.core._numba import enter_top",
        "counts' warm_up: the early return for the numpy kernels is dropped (with "
        "CORESELECT_NUMBA=0 it imports numba, runs the compiled kernels and says True)"),
]


# -- round 14: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# k="auto"'s compiled prefix step (selection/_knn_kernels.py: the distance update, the k
# smallest distances, the neighbours' label counts, the top labels by count in label order)
# and its dispatch in selection/autok.py (the numpy form is the reference). Considered and
# dropped as equivalent: the clip of the label count left out (round(total / (size + L/n)) is
# never below 0 nor above L), and ``<=`` for ``<`` when the k-th smallest is replaced (an
# equal value leaves the buffer as it was).
R14 = in_round(14)


MUTANTS += [
    # -- selection/_knn_kernels.py: the k smallest distances ----------------------------------------
    R14("selection/_knn_kernels.py", "while i > 0 and best[i - 1] > v:",
        "while i > 1 and best[i - 1] > v:",
        "compiled prefix step: the insertion into the k smallest distances never moves a value "
        "before the first (the buffer is unsorted, the k-th smallest wrong)"),
    # -- selection/_knn_kernels.py: how many labels, and which -------------------------------------
    R14("selection/_knn_kernels.py", "n_pred = int(np.floor(total / denominator + 0.5))",
        "n_pred = int(np.floor(total / denominator))",
        "compiled prefix step: the label count is truncated, not rounded (no + 0.5)"),
    R14("selection/_knn_kernels.py", "n_pred = min(max(n_pred, 0), n_labels)",
        "n_pred = min(max(n_pred, 0), n_labels - 1)",
        "compiled prefix step: the label count is clipped at L - 1 (never every label)"),
    R14("selection/_knn_kernels.py", "            hist[c] = 0\n", "",
        "compiled prefix step: the histogram of the label counts is not reset between rows"),
    R14("selection/_knn_kernels.py", "if n_pred > 0 and c > cut:", "if n_pred > 0 and c >= cut:",
        "compiled prefix step: every label tied at the cut-off is predicted (more labels than "
        "the rounded count)"),
    # -- selection/autok.py: the dispatch ---------------------------------------------------------
    R14("selection/autok.py",
        'kernel = (_compiled_step() if backend != "numpy" and k >= 1',
        "kernel = (_compiled_step() if k >= 1",
        'brknn_b_prefixes ignores backend="numpy" (the compiled step runs; the numpy '
        "reference never does)"),
    R14("selection/autok.py", "and A.dtype == B.dtype == np.float64 else None)",
        "and not A.dtype == B.dtype == np.float64 else None)",
        "brknn_b_prefixes: the float64 guard inverted (float64 columns run numpy, float32 "
        "ones the compiled step)"),
    R14("selection/autok.py",
        '    if not numba_enabled("auto"):\n        return None\n'
        "    from coreselect.selection._knn_kernels",
        '    if numba_enabled("auto"):\n        return None\n'
        "    from coreselect.selection._knn_kernels",
        "_compiled_step: the condition inverted (None, the numpy form, whenever the compiled "
        "kernels are in use)"),
]


# -- round 15: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the BRkNN-b evaluator's compiled neighbour counts (selection/_knn_kernels.py: Weka's ties
# around the k-th smallest distance, the neighbours' label counts from the labels' CSR rows,
# the k smallest distances it shares with k=auto's step) and their dispatch and the new check
# of n_neighbors in evaluation/brknn.py (the numpy form is the reference). Considered and
# dropped as equivalent: ``<`` for ``<=`` against the tie limit (the limit lies above the k-th
# smallest by at least 1e-12, far more than one ulp, so no distance equals it in practice),
# the kernel's outputs sliced ``counts[s:]`` (it writes only the block's rows), and the labels'
# CSR built from ``Yd`` or ``Y`` instead of ``self.Y_`` (a CSR from a dense matrix stores its
# nonzeros: the pattern of ``Y_ = Yd != 0``).
R15 = in_round(15)


MUTANTS += [
    # -- selection/_knn_kernels.py: Weka's ties -----------------------------------------------------
    R15("selection/_knn_kernels.py",
        "limit = kth + 1e-12 * max(1.0, kth)", "limit = kth",
        "compiled neighbour counts: no tolerance at the k-th smallest distance (a tie off by "
        "rounding is left out)"),
    R15("selection/_knn_kernels.py",
        "limit = kth + 1e-12 * max(1.0, kth)", "limit = kth + 1e-12 * kth",
        "compiled neighbour counts: the tie tolerance relative only (none when the k-th "
        "smallest distance is 0)"),
    # -- selection/_knn_kernels.py: the label counts ------------------------------------------------
    R15("selection/_knn_kernels.py", "counts[y_cols[j]] += 1", "counts[y_cols[j]] = 1",
        "compiled neighbour counts: a label counted once per query row (present among the "
        "neighbours), not once per neighbour"),
    # -- selection/_knn_kernels.py: the k smallest distances (shared with k=auto) ------------------
    R15("selection/_knn_kernels.py", "elif v < best[k - 1]:", "elif v < best[0]:",
        "_kth_smallest: a new value enters the full buffer only below the smallest, not the "
        "k-th smallest (the k-th smallest too large)"),
    # -- evaluation/brknn.py: the dispatch ----------------------------------------------------------
    R15("evaluation/brknn.py", "kernel = _compiled_counts(backend) if self.include_ties and k >= 1 else None",
        "kernel = _compiled_counts(backend) if k >= 1 else None",
        "the compiled counts run with include_ties=False too (ties included where exactly k "
        "neighbours were asked for)"),
    R15("evaluation/brknn.py", "else np.zeros(\n            (Xq.shape[0], n_labels))",
        "else np.empty(\n            (Xq.shape[0], n_labels))",
        "the counts are not zeroed for the compiled kernel (np.empty: it adds to whatever the "
        "memory held)"),
    R15("evaluation/brknn.py", "counts[s : s + block], sizes[s : s + block])", "counts, sizes)",
        "the compiled kernel writes every block of query rows into the first rows of counts and "
        "sizes (the block's offset forgotten)"),
    # -- evaluation/brknn.py: the check of n_neighbors in fit ----------------------------------------
    R15("evaluation/brknn.py", "not isinstance(k, (int, np.integer))", "not isinstance(k, int)",
        "fit refuses a numpy integer n_neighbors (np.int64(5), as a numpy grid gives it)"),
]


# -- round 16: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# k="auto"'s rise beyond half the features (selection/autok.py, measure_pick: the threshold
# now also clears the standard error of the best point above half, b_high), the warm-up of
# k="auto"'s compiled prefix step (autok.warm_up), coreselect.selection.warm_up(auto_k=...)
# that calls it, the CLI's pass-through of auto_k to its warm-up thread, and the lazy export.
# choose_k runs the rule with band="best" (the first term of the max is 0 there). Considered
# and left out: the overall best's index for b_high in the new term (whenever the threshold
# decides the pick the best lies above half and is b_high; only the threshold reported when
# the best lies at or below half changes), and band for "se" in the new term (under the
# rule's band="best" the same as the b_low slip below, under band="se" equivalent).
R16 = in_round(16)


MUTANTS += [
    # -- selection/autok.py: measure_pick's threshold -----------------------------------------------
    R16("selection/autok.py", '_band(scores[:, b_high], "se")))', '_band(scores[:, b_low], "se")))',
        "measure_pick: the new term reads b_low's standard error, not b_high's (copy-paste: the "
        "threshold is the lower end's error alone, as before the change)"),
    R16("selection/autok.py", "threshold = float(mean[b_low] + max(",
        "threshold = float(mean[b_low] + min(",
        "measure_pick: the threshold adds the smallest of the band and both ends' standard "
        "errors, not the largest (0 under the rule's band: any rise beyond half counts)"),
    R16("selection/autok.py", "b_high = high[int(np.argmax(mean[high]))]", "b_high = high[-1]",
        "measure_pick: b_high is the largest grid size (the cap), not the best mean above half "
        "(the cap's standard error in the threshold)"),
    R16("selection/autok.py", 'se = _band(scores[:, b_low], "se")', 'se = _band(scores[:, b_high], "se")',
        "measure_pick: se is the standard error of b_high, not b_low (the threshold loses the "
        "lower end's error, and the band reported is the upper end's)"),
    # -- selection/autok.py: warm_up ----------------------------------------------------------------
    R16("selection/autok.py", "    if _compiled_step() is None:\n        return\n",
        "    if _compiled_step() is not None:\n        return\n",
        "autok.warm_up: the early return inverted (nothing is loaded where the compiled step "
        "runs; the numpy form runs where it does not)"),
    # -- selection/__init__.py: warm_up(auto_k) -----------------------------------------------------
    R16("selection/__init__.py", "    if not warm_up_core():\n        return False\n",
        "    warm_up_core()\n",
        "selection.warm_up: the early return for the numpy kernels is dropped (with "
        "CORESELECT_NUMBA=0 it says True)"),
    # -- cli/select.py: auto_k to the warm-up thread ------------------------------------------------
    R16("cli/select.py", '_load(data, labels, labels_as_features, header, auto_k=k == "auto")',
        "_load(data, labels, labels_as_features, header)",
        "the select command does not pass auto_k to _load (with -k auto the warm-up thread "
        "does not load k=auto's prefix step)"),
    # -- __init__.py: the lazy export ---------------------------------------------------------------
    R16("__init__.py", '"warm_up": "coreselect.selection",', '"warm_up": "coreselect.selection.autok",',
        "coreselect.warm_up is autok's warm-up (no core kernels, returns None, takes no auto_k)"),
]


# -- round 17: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# n_bins="auto" (three bins below FEW_ROWS=240 rows, five from there: core.discretize.
# resolve_n_bins) wherever it is resolved: the rule itself, the store builders (build_store /
# build_store_from_chunks, the ingest's bin_table and the bins store.json records, its early
# refusal), the sources (the memory source's recorded bins, a store's same_codes and the bins
# it reports) and the store build command's --bins. Considered and left out as equivalent:
# unselectable_reason (selection/__init__.py) resolving b.n_bins for the min_bin_count bound or
# the message (it is only called on an InMemorySource, whose binning is already resolved; it
# no longer resolves it again); dropping discretize's early
# resolve_n_bins(n_bins, 0) (the same refusal follows from resolve_n_bins(n_bins, n) a few
# lines on; only which of two errors comes first on bad data and bad bins at once changes);
# dropping the bool refusal in resolve_n_bins (True is 1, refused by the range anyway); the
# select command's own conversion (the select command's --bins N is already pinned by
# test_bins_by_rows, the store build command's is the one chosen here).
R17 = in_round(17)


MUTANTS += [
    # -- core/discretize.py: the rule -----------------------------------------------------------
    R17("core/discretize.py", "return FEW_ROWS_BINS if int(n_samples) < FEW_ROWS else DEFAULT_BINS",
        "return FEW_ROWS_BINS if int(n_samples) <= FEW_ROWS else DEFAULT_BINS",
        "resolve_n_bins: the threshold off by one (240 rows still take three bins)"),
    R17("core/discretize.py", "return FEW_ROWS_BINS if int(n_samples) < FEW_ROWS else DEFAULT_BINS",
        "return DEFAULT_BINS if int(n_samples) < FEW_ROWS else FEW_ROWS_BINS",
        "resolve_n_bins: the two bin counts swapped (five bins below 240 rows, three from there)"),
    # -- store/build.py: build_store_from_chunks ----------------------------------------------------
    R17("store/build.py", "    resolve_n_bins(n_bins, 0)  # refused before the chunks are read",
        "    n_bins = resolve_n_bins(n_bins, 0)  # refused before the chunks are read",
        "build_store_from_chunks keeps what its early check resolved on 0 rows (\"auto\" is "
        "three bins before any chunk is read, whatever the rows)"),
    # -- store/_commit.py: the bins store.json records -----------------------------------------------
    R17("store/_commit.py", '"discretization": {"n_bins": resolve_n_bins(options.n_bins, plan.n),',
        '"discretization": {"n_bins": resolve_n_bins(options.n_bins, '
        'int(plan.bounds[1] - plan.bounds[0])),',
        "the ingest records \"auto\" resolved on the first row block's rows (the line above's "
        "row_block_size), not on all rows"),
    # -- store/_binning.py: bin_table ----------------------------------------------------------------
    R17("store/_binning.py", "    n_bins = resolve_n_bins(n_bins, n)\n",
        "    n_bins = resolve_n_bins(n_bins, d)\n",
        "bin_table resolves \"auto\" on the columns counted, not the rows (n and d swapped)"),
    # -- store/ingest.py: the refusal before any file -------------------------------------------------
    R17("store/ingest.py",
        '    resolve_n_bins(options.n_bins, 0)  # "auto" or [2, MAX_BINS]: refused before any file\n',
        "",
        "_check_options no longer checks n_bins (a bad one is refused only by bin_table, after "
        "the first pass over the files)"),
    # -- selection/spec.py: same_codes ---------------------------------------------------------------
    R17("selection/spec.py", "return ((resolve_n_bins(self.n_bins, n_samples), self.strategy",
        "return ((self.n_bins, self.strategy",
        "Binning.same_codes does not resolve its own \"auto\" (n_bins=\"auto\" on a store built "
        "with auto is refused as other bins)"),
    # -- selection/sources/store.py: the bins a store source reports -----------------------------------
    R17("selection/sources/store.py", "            binning = replace(binning, n_bins=built.n_bins)\n",
        "            pass\n",
        "StoreSource keeps a given n_bins=\"auto\" (the spec and checkpoints say \"auto\", not "
        "the store's bins)"),
    # -- selection/sources/memory.py: the bins a memory source records ---------------------------------
    R17("selection/sources/memory.py",
        "self.binning = replace(binning, n_bins=resolve_n_bins(binning.n_bins, X.shape[0]))",
        "self.binning = binning",
        "InMemorySource keeps \"auto\" unresolved in its binning (the codes are the same, the "
        "spec and checkpoints say \"auto\")"),
    # -- cli/store.py: --bins ------------------------------------------------------------------------
    R17("cli/store.py", "n_bins=int_or_auto(n_bins), strategy=strategy,",
        "n_bins=n_bins, strategy=strategy,",
        "store build does not convert --bins (the string '4' goes to the build, which refuses "
        "it: only 'auto' works)"),
]


# -- round 18: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the relevance from entropies in one compiled pass (core/_numba.py relevance_in_place, numpy's
# six passes in entropy.relevance_from_entropies the reference) and its dispatch; the dense label
# matrix read label by label from its transpose (discretize._ones_by_column); a label's first
# threshold rise with no index list (lower_gains(..., every) and RelevanceGains._raise).
# Considered and left out as equivalent: the loop order of relevance_in_place (by_label inverted,
# or the c_contiguous flag ignored either way: every cell is computed from its own inputs and
# written once, only the speed changes); kind == "nmi" for kind != "mi" in the dispatch (Relevance
# is Literal["nmi", "mi"]); v = min(v, 1.0) for the upper clip (numba's min keeps its first
# argument when it is NaN and the values are equal otherwise: numpy's np.minimum bits; min(1.0, v)
# below is not); _numba_enabled("auto") for _numba_enabled(backend) in the dispatch, or
# relevance_matrix not passing backend (the compiled pass gives numpy's bits: only which code runs
# changes); in _ones_by_column, the transposed 0/1 array left in Y's memory order
# (np.asarray(Y.T), order="F": flatnonzero and count_nonzero read the logical order, whatever the
# memory order), flat % n for flat % max(n, 1) (it differs only at n = 0, where flat is empty and
# an empty array modulo 0 is empty, no error or warning), != 0 read as == 1 or > 0 (the values are
# checked 0/1 above), an int32 indptr (scipy's constructor picks the index dtype from the contents
# anyway; it differs only past 2**31 ones); in the first rise, self.n_active[label] or d for
# column.size (n_active is d until a label's first rise) and an int32 _front (indices below
# 2**31). The lower clip's v <= 0.0 as v < 0.0 was found here as a bug of the kernel (it kept
# -0.0 where the numpy path gives +0.0, for h_x = h_l = -0.0; entropies pass zero_small, so no
# caller gave -0.0): the kernel and the numpy path now both make a zero +0.0, and that slip is
# a mutant of this round. Left out as
# writing outside an array (a kill would be a crash, not an assertion): the loop bounds or (x,
# label) swapped in relevance_in_place, inv_x and inv_l swapped in the call.
R18 = in_round(18)


MUTANTS += [
    # -- core/_numba.py: relevance_in_place ------------------------------------------------------
    R18("core/_numba.py", "v = (h_x[x] - info[x, label]) + h_l[label]",
        "v = h_x[x] + h_l[label] - info[x, label]",
        "compiled relevance: H(x) + H(l) - H(x, l), the textbook order, not numpy's (H(x) - "
        "H(x, l)) + H(l) (other rounding: not numpy's bits)"),
    R18("core/_numba.py", "            if v <= 0.0:\n                v = 0.0\n            if normalized:",
        "            if v < 0.0:\n                v = 0.0\n            if normalized:",
        "compiled relevance: the lower clip keeps -0.0 (the numpy path makes a zero +0.0)"),
    R18("core/_numba.py", "v = v * inv_x[x] * inv_l[label]", "v = v * inv_x[x]",
        "compiled relevance: NMI normalized by the feature's side only (the label's "
        "1 / sqrt(H(l)) dropped)"),
    R18("core/_numba.py", "                if v > 1.0:\n                    v = 1.0\n",
        "                v = min(1.0, v)\n",
        "compiled relevance: the cap at 1 as min(1.0, v) (a NaN becomes 1, where np.minimum "
        "keeps NaN)"),
    # -- core/entropy.py: the dispatch -------------------------------------------------------------
    R18("core/entropy.py", 'np.asarray(h_l, dtype=np.float64), inv_x, inv_l, kind != "mi",',
        'np.asarray(h_l, dtype=np.float64), inv_x, inv_l, kind != "nmi",',
        "the compiled relevance's normalized flag inverted (kind=\"mi\" normalized, \"nmi\" "
        "not)"),
    # -- core/discretize.py: _ones_by_column ------------------------------------------------------
    R18("core/discretize.py", "flat % max(n, 1)", "flat % max(n_labels, 1)",
        "dense labels: the row of a one taken modulo the number of labels, not of rows"),
    R18("core/discretize.py", "np.cumsum(np.count_nonzero(ones, axis=1), out=indptr[1:])",
        "np.cumsum(np.count_nonzero(ones, axis=0), out=indptr[1:])",
        "dense labels: the ones counted per row, not per label (axis 0 of the transpose)"),
    # -- core/objective.py and core/_numba.py: the first rise and later rises ----------------------
    R18("core/objective.py",
        "kept = self._lower(column, self._front, column.size, low, high, self.gains, True)",
        "kept = self._lower(column, self._front, column.size, low, high, self.gains, False)",
        "relevance gains (compiled first rise): every=False, so the candidates are read from "
        "_front (zeros, or an earlier label's survivors), not 0 .. d - 1"),
    R18("core/objective.py", "self.active[label] = self._front[:kept].copy()",
        "self.active[label] = self._front[:kept]",
        "relevance gains (compiled first rise): a label keeps a view of the shared _front (the "
        "next label's first rise overwrites its survivors)"),
    R18("core/objective.py",
        "self.n_active[label] = self._lower(column, act, count, low, high, self.gains,\n"
        "                                               False)",
        "self.n_active[label] = self._lower(column, act, count, low, high, self.gains,\n"
        "                                               True)",
        "relevance gains (compiled later rise): every=True, so candidates 0 .. n_active - 1 are "
        "lowered, not the label's active ones"),
    R18("core/_numba.py", "active[kept] = v", "active[kept] = t",
        "lower_gains keeps the loop position, not the candidate (the same on a first rise, "
        "positions instead of candidates on a later one)"),
]


# -- round 19: chosen by a helper who wrote neither the code nor the tests, in the newest code:
# the long columns sorted by numpy before the compiled binning (core/_numba_discretize.py
# sort_plan, pad_columns, unpad_columns; core/discretize.py _presorted: rows of a power-of-two
# width padded with inf, sorted on the kernels' threads), the kernel's use of them (the
# presorted/flags arguments) and its value-based code lookup for sorted columns (a binary
# search over the runs of groups sharing a code); warm_up's new lines (the long columns'
# kernels, the distance step of a pick on many rows).
# Considered and left out as equivalent: every change to *which* columns sort_plan flags (> as
# >=, counted columns flagged too, the "not" of _counted dropped or the slice it reads shifted,
# the last column of a range never flagged, the else 0 dropped: flags start at 0): a flagged
# column is sorted by numpy into presorted, an unflagged one by the kernel itself, and a counted
# one never reads either; sorted values are the same whoever sorts them, so only the speed
# changes (the one non-equivalent case, a flagged empty column, is a ZeroDivisionError, not a
# slip anyone writes); likewise the kernel ignoring the flags the other way (never reading
# presorted: the kernel's insertion sort then takes them, slower); in _sort_into, the
# general-sort branch (m > INSERTION_MAX: ordered.sort() dropped, > as >=): sort_plan flags
# every column it would take, so it was unreachable (removed after the run); in _presorted,
# the width one power of two too wide (log2(sizes + 1), or ceil + 1: more inf padding, cut off
# again), np.zeros for np.empty, any positive step, cols[widths <= width]
# (a column sorted in two tasks, to the same values); in the lookup, b = runs for runs - 1 (mid
# stays below b, so run_top[runs] is never read and the first run whose top is >= v is in
# 0 .. runs - 1 anyway), run_code[b] for run_code[a] (the loop ends with a == b), and runs split
# by bins[g] != bins[g - 1] or code[g] != code[g - 1] instead of by the run's code (bins are
# monotone in the sorted groups and the relabel is a bijection: a code's groups are
# contiguous). Left out as writing or reading outside an array (numba checks no bounds; a kill
# would be a crash, not an assertion): the width rounded down (floor, round, log2(sizes - 1):
# pad_columns writes past a row and past the block), unpad writing at s + t + 1, pad_columns
# or unpad_columns indexing indptr by the row r instead of cols[r], the flags.size > 0 guard
# dropped (flags[j] of an empty array), run_code[runs] for run_code[runs - 1] in the run test.
# Left out as non-deterministic (they read np.empty's garbage, killed or not by chance): the
# padding loop starting at m + 1, unpad copying m - 1 values; the search's a = mid (a loop that
# never ends: a kill by timeout only) is left out for the run's time. The "kernel reads
# presorted for an unflagged column" mutant below also reads cells numpy never wrote, but no
# garbage is a short column's values sorted: it is kept. After the run, the plan got a direct
# test (test_numpy_sorts_exactly_the_long_columns_the_kernel_would_sort: a slip there leaves the
# faster path unused); the first of the plan's slips considered above, > as >=, is the round's
# last mutant.
R19 = in_round(19)


MUTANTS += [
    # -- core/_numba_discretize.py: pad_columns and unpad_columns ----------------------------------
    R19("core/_numba_discretize.py", "            padded[r, t] = np.inf\n",
        "            padded[r, t] = 0.0\n",
        "padded rows filled with 0, not inf (the padding sorts among the values: a column "
        "shorter than its width with positive values loses its largest ones to zeros)"),
    R19("core/_numba_discretize.py",
        "        for t in range(indptr[cols[r] + 1] - s):\n"
        "            out[s + t] = padded[r, t]\n",
        "        m = indptr[cols[r] + 1] - s\n"
        "        for t in range(m):\n"
        "            out[s + t] = padded[r, padded.shape[1] - m + t]\n",
        "unpad_columns reads a row's last m cells, as if the padding sorted first (a column "
        "shorter than its width gets inf for its largest values and loses its smallest)"),
    # -- core/discretize.py: _presorted ------------------------------------------------------------
    R19("core/discretize.py", "padded.sort(axis=1)", "padded.sort(axis=0)",
        "_presorted sorts the padded block along axis 0 (across a task's columns), not each "
        "row"),
    R19("core/discretize.py", "for a in range(0, group.size, step)]",
        "for a in range(0, group.size - 1, step)]",
        "_presorted's tasks stop one column early (range to group.size - 1): the last chunk of "
        "a width is dropped when it starts at the last column, as a width of one column does: "
        "that column is flagged but never sorted"),
    # -- core/_numba_discretize.py: the kernel's use of the presorted values -----------------------
    R19("core/_numba_discretize.py", "                ordered = presorted[s:e]\n",
        "                ordered = x\n",
        "the kernel takes a flagged column's own (unsorted) values, not numpy's sorted ones"),
    R19("core/_numba_discretize.py", "if flags.size > 0 and flags[j] == 1:",
        "if flags.size > 0:",
        "the kernel reads presorted for every sorted column once any is flagged (a short "
        "non-integer column reads cells numpy never wrote)"),
    # -- core/_numba_discretize.py: the runs and the binary search ---------------------------------
    R19("core/_numba_discretize.py", "                    run_top[runs - 1] = u_val[g]\n",
        "                    pass\n",
        "a group joining a run does not raise the run's top (the run ends at its first "
        "group's value: the cells of its later groups take the next run's code)"),
    R19("core/_numba_discretize.py", "if run_top[mid] < v:", "if run_top[mid] <= v:",
        "binary search: the first run whose top is above v, not at least v (a cell equal to "
        "a run's top takes the next run's code)"),
    R19("core/_numba_discretize.py", "                        b = mid\n",
        "                        b = mid - 1\n",
        "binary search: b = mid - 1 (the candidate mid dropped: a cell can land one run low)"),
    R19("core/_numba_discretize.py", "                v = x[t]\n                a = 0\n",
        "                v = ordered[t]\n                a = 0\n",
        "binary search by the t-th smallest value, not cell t's (the codes come out in sorted "
        "order, not the cells')"),
    # -- core/entropy.py: warm_up ------------------------------------------------------------------
    R19("core/entropy.py",
        "    discretize(np.linspace(0.0, 1.0, 80).reshape(40, 2))  # long columns, sorted by numpy\n",
        "",
        "warm_up no longer bins long non-integer columns (sort_plan, pad_columns and "
        "unpad_columns left to the first fit)"),
    R19("core/entropy.py",
        "    oracle.distances_from(0)  # more cells than slots: the step of a pick on many rows\n",
        "",
        "warm_up no longer takes the distance step of a pick on many rows (its count table and "
        "fill left to the first fit on text data)"),
    # -- core/_numba_discretize.py: sort_plan (pinned by a direct test after the run) --------------
    R19("core/_numba_discretize.py",
        "flags[j] = 1 if e - s > INSERTION_MAX and not _counted(vals[s:e])[0] else 0",
        "flags[j] = 1 if e - s >= INSERTION_MAX and not _counted(vals[s:e])[0] else 0",
        "sort_plan also hands numpy the columns of exactly INSERTION_MAX values (the same "
        "codes; the plan's own test fails)"),
]


TESTS = {
    "core": ["tests/test_core_properties.py", "tests/test_reference_paths.py",
             "tests/test_core_discretize.py", "tests/test_core_entropy.py",
             "tests/test_core_greedy.py", "tests/test_evaluation_pinned.py"],
    "selection": ["tests/test_reference_paths.py", "tests/test_error_paths.py",
                  "tests/test_core_properties.py", "tests/test_distributed.py",
                  "tests/test_selector.py"],
    "cli": ["tests/test_cli_e2e.py", "tests/test_cli_select.py", "tests/test_error_paths.py"],
    "baselines": ["tests/test_baselines.py", "tests/test_baselines_chi2.py"],
    "evaluation": ["tests/test_evaluation_pinned.py", "tests/test_evaluation_measures.py",
                   "tests/test_evaluation_brknn.py", "tests/test_evaluation_protocol.py"],
    "io": ["tests/test_io_arff.py", "tests/test_io_tabular.py", "tests/test_io_fast_paths.py",
           "tests/test_io_labels_meta.py", "tests/test_io_ways_in.py", "tests/test_io_safety.py",
           "tests/test_hostile_tables.py", "tests/test_fuzz_readers.py", "tests/test_io_chunks.py"],
}


# Extra test files for some mutated files (added to the group's).
EXTRA = {
    "core/greedy.py": ["tests/test_props_calibration.py", "tests/test_mutants_calibration.py",
                       "tests/test_calibration.py"],
    "core/objective.py": ["tests/test_props_calibration.py"],
    "engines/dask.py": ["tests/test_mutants_dask.py"],
    "engines/local.py": ["tests/test_engines_order.py"],
    "store/reader.py": ["tests/test_hostile_store_forgery.py"],
    "engines/dask_rows.py": ["tests/test_props_engines.py", "tests/test_dask_rows.py", "tests/test_mutants_dask.py",
                             "tests/test_strategy_rows.py"],
    "core/shards.py": ["tests/test_core_shards.py", "tests/test_rowsharded.py"],
    "engines/rowsharded.py": ["tests/test_conditional.py", "tests/test_props_engines.py", "tests/test_rowsharded.py", "tests/test_strategy_rows.py"],
    "selection/strategies.py": ["tests/test_mutants_store_rows.py", "tests/test_strategy_rows.py",
                      "tests/test_rowsharded.py", "tests/test_cli_e2e.py"],
    "selection/sources/": ["tests/test_store.py", "tests/test_cli_e2e.py"],
    "store/fs.py": ["tests/test_url_build_frame.py", "tests/test_remote_hostile.py", "tests/test_remote_urls.py", "tests/test_remote_s3.py",
                    "tests/test_store_ingest_s3.py", "tests/test_remote_tempdir.py"],
    "store/": ["tests/test_props_store.py", "tests/test_mutants_store_rows.py", "tests/test_store_integrity.py",
               "tests/test_store.py"],
    "selection/spec.py": ["tests/test_tuning.py", "tests/test_spec.py"],
    "tuning.py": ["tests/test_tuning.py"],
    "evaluation/gds.py": ["tests/test_tuning.py"],
    "evaluation/protocol.py": ["tests/test_tuning.py"],
    "io/files.py": ["tests/test_props_outputs.py", "tests/test_files.py"],
    "baselines/": ["tests/test_props_baselines.py"],
    # round 4
    "evaluation/significance.py": ["tests/test_mutants_round4.py", "tests/test_significance.py"],
    "evaluation/linear.py": ["tests/test_evaluation_linear.py", "tests/test_quality_evaluate_cli.py"],
    "selection/autok.py": ["tests/test_mutants_round4.py", "tests/test_autok.py", "tests/test_tuning.py", "tests/test_selector.py"],
    "cli/evaluate.py": ["tests/test_cli_seams.py", "tests/test_option_matrix.py",
                        "tests/test_quality_evaluate_cli.py"],
    "store/_resume.py": ["tests/test_store_resume.py", "tests/test_checkpoint_safety.py",
                         "tests/test_hostile_build.py", "tests/test_safety_exits.py"],
    "store/checkpoint_file.py": ["tests/test_checkpoint_safety.py", "tests/test_checkpoint.py",
                                 "tests/test_checkpoint_forgery.py", "tests/test_store_resume.py"],
    "io/csvfile.py": ["tests/test_mutants_round4.py", "tests/test_io_tabular.py", "tests/test_hostile_tables.py"],
    "io/_table_common.py": ["tests/test_io_tabular.py", "tests/test_hostile_tables.py"],
    "io/arff/": ["tests/test_mutants_round4.py", "tests/test_io_arff.py", "tests/test_io_labels_meta.py"],
}


# Round 5: the conditional criterion's own tests first (-x stops at their first failure).
for _file, _tests in {
    "core/conditional.py": ["tests/test_conditional.py"],
    "core/problem.py": ["tests/test_conditional.py"],
    "selection/strategies.py": ["tests/test_conditional.py"],
    "selection/spec.py": ["tests/test_conditional.py"],
    "cli/select.py": ["tests/test_conditional.py"],
    "evaluation/protocol.py": ["tests/test_conditional.py"],
    "evaluation/gds.py": ["tests/test_conditional.py"],
}.items():
    EXTRA[_file] = list(dict.fromkeys(_tests + EXTRA.get(_file, [])))

# Round 7: the default calibration's own tests first.
for _file in ("core/objective.py", "selection/spec.py", "selection/sources/base.py",
              "selection/sources/memory.py",
              "store/reader.py", "selection/strategies.py", "selection/__init__.py",
              "engines/rowsharded.py", "cli/select.py"):
    _first = ["tests/test_auto_calibration.py"] + (
        ["tests/test_conditional.py"] if _file == "engines/rowsharded.py" else [])
    EXTRA[_file] = list(dict.fromkeys(_first + EXTRA.get(_file, [])))


# Round 8: the default top-p cut's own tests first.
for _file, _tests in {
    "core/objective.py": ["tests/test_calibration.py"],
    "core/problem.py": ["tests/test_calibration.py"],
    "selection/spec.py": ["tests/test_calibration.py"],
    "selection/sources/base.py": ["tests/test_calibration.py"],
    "selection/__init__.py": ["tests/test_calibration.py", "tests/test_autok.py",
                              "tests/test_selector.py"],
    "evaluation/gds.py": ["tests/test_quality_gds.py"],
}.items():
    EXTRA[_file] = list(dict.fromkeys(_tests + EXTRA.get(_file, [])))


# Round 9: the compiled kernels against the reference histograms first; the feature scores
# of a sparse relevance beside the dense one (after the files already there).
EXTRA["core/_numba.py"] = ["tests/test_kernels_fast_paths.py", "tests/test_core_entropy.py"]
EXTRA["selection/__init__.py"] = EXTRA["selection/__init__.py"] + ["tests/test_explain_sparse.py"]

# Round 10: the compiled binning and the kernels against their references first; the small
# API's constant and left-out columns, checkpoints and sub-problems after the files already there.
for _file, _tests in {
    "core/_numba_discretize.py": ["tests/test_core_discretize.py", "tests/test_kernels_fast_paths.py"],
    "core/discretize.py": ["tests/test_core_discretize.py"],
    "core/entropy.py": ["tests/test_kernels_fast_paths.py", "tests/test_core_entropy.py"],
}.items():
    EXTRA[_file] = list(dict.fromkeys(_tests + EXTRA.get(_file, [])))
for _file, _tests in {
    "core/objective.py": ["tests/test_kernels_fast_paths.py"],
    "core/problem.py": ["tests/test_kernels_fast_paths.py", "tests/test_distributed.py"],
    "selection/sources/": ["tests/test_api_small.py", "tests/test_checkpoint.py"],
    "selection/__init__.py": ["tests/test_api_small.py"],
}.items():
    EXTRA[_file] = list(dict.fromkeys(EXTRA.get(_file, []) + _tests))

# Round 11: the compiled conditional tables against the sparse ones first, then the default
# calibration (cmim on dense data) and the reference paths.
EXTRA["core/_numba_conditional.py"] = ["tests/test_conditional.py", "tests/test_auto_calibration.py",
                                       "tests/test_reference_paths.py"]

# Round 13: the warm-up's own tests (in a fresh process: what it loads, what it returns, numba
# left unimported with the numpy kernels) first; the package's lazy exports run with them too.
for _file in ("core/conditional.py", "core/entropy.py", "cli/select.py", "__init__.py"):
    EXTRA[_file] = list(dict.fromkeys(["tests/test_imports.py"] + EXTRA.get(_file, [])))


# Round 14: automatic k's own tests (the compiled step against the numpy form, the dispatch)
# first, for the compiled step and for the evaluator that calls it.
for _file in ("selection/_knn_kernels.py", "selection/autok.py"):
    EXTRA[_file] = list(dict.fromkeys(["tests/test_autok.py", "tests/test_mutants_round4.py",
                                       "tests/test_tuning.py", "tests/test_selector.py"]
                                      + EXTRA.get(_file, [])))

# Round 15: the evaluator's own tests (the compiled counts against the numpy form, the
# dispatch, the check of n_neighbors) first, for the kernels and for the evaluator; then, for
# the evaluator, the protocol against a slow BRkNN-b and automatic k's step against it.
EXTRA["selection/_knn_kernels.py"] = list(dict.fromkeys(["tests/test_evaluation_brknn.py"]
                                                        + EXTRA["selection/_knn_kernels.py"]))
EXTRA["evaluation/brknn.py"] = ["tests/test_evaluation_brknn.py", "tests/test_evaluation_pinned.py",
                                "tests/test_evaluation_protocol.py", "tests/test_autok.py"]

# Round 16: the warm-up's own tests (in a fresh process) for selection.warm_up first, and
# after automatic k's tests for autok.warm_up.
EXTRA["selection/__init__.py"] = list(dict.fromkeys(["tests/test_imports.py"]
                                                   + EXTRA["selection/__init__.py"]))
EXTRA["selection/autok.py"] = list(dict.fromkeys(EXTRA["selection/autok.py"]
                                                + ["tests/test_imports.py"]))

# Round 17: n_bins="auto"'s own tests first for every file mutated, then the tests already
# covering them: the ingest's (bin_table against discretize, with "auto" among the bins) for the
# ingest's files, the build checkpoint's options and the huge --bins refused for the ingest's
# check, the option matrix and the CLI's seams for the store build command.
for _file, _tests in {
    "core/discretize.py": [],
    "store/build.py": [],
    "store/_commit.py": ["tests/test_store_ingest.py"],
    "store/_binning.py": ["tests/test_store_ingest.py"],
    "store/ingest.py": ["tests/test_store_ingest.py", "tests/test_hostile_seams.py",
                        "tests/test_store_resume.py"],
    "selection/spec.py": [],
    "selection/sources/store.py": [],
    "selection/sources/memory.py": [],
    "cli/store.py": ["tests/test_option_matrix.py", "tests/test_hostile_seams.py",
                     "tests/test_cli_seams.py"],
}.items():
    EXTRA[_file] = list(dict.fromkeys(["tests/test_bins_by_rows.py"] + _tests
                                      + EXTRA.get(_file, [])))


# Round 18: the compiled gains step by step against numpy's (test_core_greedy) first for the
# first rise in objective.py, and second for the compiled kernels (after their own tests).
EXTRA["core/objective.py"] = list(dict.fromkeys(["tests/test_core_greedy.py"]
                                               + EXTRA["core/objective.py"]))
EXTRA["core/_numba.py"] = list(dict.fromkeys(EXTRA["core/_numba.py"][:1]
                                            + ["tests/test_core_greedy.py"]
                                            + EXTRA["core/_numba.py"][1:]))

# Round 19: the binning's own tests (the compiled kernel against the numpy path on the columns
# numpy sorts and around the insertion-sort cut) first for _presorted in discretize.py, before
# the bins-by-rows tests; the kernel's file and warm_up's already run theirs first.
EXTRA["core/discretize.py"] = list(dict.fromkeys(["tests/test_core_discretize.py"]
                                                + EXTRA["core/discretize.py"]))


def tests_for(file: str) -> list[str]:
    # the most specific keys first ("store/_resume.py" before "store/")
    extra = [t for key, ts in sorted(EXTRA.items(), key=lambda kv: -len(kv[0]))
             if file.startswith(key) for t in ts]
    base = TESTS[group_of(file)]
    return list(dict.fromkeys(extra + base))  # the specific files first (-x stops early)


# Tests that fail on the unmutated code (real bugs, reported; see docs/mutation.md): left out,
# or no kill would mean anything.
KNOWN_FAILING: list[str] = [
    # none: the one this run found (distributed's plural FuturesCancelledError escaping
    # engines/dask.py) is fixed and pinned by tests/test_mutants_dask.py
]


def group_of(file: str) -> str:
    if file.startswith("core/"):
        return "core"
    if file.startswith("cli/"):
        return "cli"
    if file.startswith("evaluation/"):
        return "evaluation"
    if file.startswith("baselines/"):
        return "baselines"
    if file.startswith("io/") and file != "io/files.py":  # files.py: run with the selection tests
        return "io"
    return "selection"


# docs/ is copied (tests read docs/options.md: without it they fail on every mutant, a false
# kill); "results" leaves out the measured results, docs/results among them (13 MB).
IGNORE = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis",
                                "*.egg-info", "results")


def make_copy(root: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="coreselect-mutation-")) / "repo"
    shutil.copytree(root, target, ignore=IGNORE)
    return target


def run_tests(copy: Path, tests: list[str], timeout: float, workers: int
              ) -> tuple[str, float, str, str, str]:
    """('pass' | 'fail' | 'timeout', seconds, tail of the output, the first failing test's
    id (empty when none failed), pytest's counts such as '1 failed, 40 passed')."""
    files = [t for t in tests if (copy / t).is_file()]
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "--no-header", "-W", "ignore", *files]
    for known in KNOWN_FAILING:
        cmd += ["--deselect", known]
    if workers > 1:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    env = {**os.environ, "PYTHONPATH": str(copy / "src") + os.pathsep + str(copy / "tests"),
           "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    # The copy lives in a temporary folder with no ../shared/data beside it: without this, the
    # data tests skip there and the mutants only they kill survive.
    shared = REPO_ROOT.parent / "shared" / "data"
    if "COREDATA" not in env and shared.is_dir():
        env["COREDATA"] = str(shared)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, "", "", ""
    out = (proc.stdout + proc.stderr).strip().splitlines()
    return ("pass" if proc.returncode == 0 else "fail"), time.perf_counter() - start, \
        "\n".join(out[-3:]), _first_failure(out), _counts(out)


def _first_failure(lines: list[str]) -> str:
    """The test id of pytest's first ``FAILED``/``ERROR`` summary line ('' when none)."""
    for line in lines:
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 2)[1]
    return ""


def _counts(lines: list[str]) -> str:
    """pytest's closing counts ('1 failed, 40 passed'), without the time."""
    for line in reversed(lines):
        m = re.search(r"(\d+ (?:failed|passed|errors?|skipped)\b.*?)(?: in [\d.]+s.*)?$", line.strip("= "))
        if m:
            return m.group(1)
    return ""


def apply(copy: Path, mutant: Mutant) -> str | None:
    """Write the mutant into the copy; returns the original text, or None when stale."""
    path = copy / SRC / mutant.file
    if not path.is_file():
        return None
    text = path.read_text()
    if text.count(mutant.old) != 1:
        return None
    path.write_text(text.replace(mutant.old, mutant.new))
    return text


def run_one(copy: Path, mutant: Mutant, timeout: float, workers: int) -> dict:
    original = apply(copy, mutant)
    if original is None:
        return {"mutant": mutant, "status": "stale", "seconds": 0.0, "tail": "", "killer": "",
                "counts": ""}
    try:
        outcome, seconds, tail, killer, counts = run_tests(copy, tests_for(mutant.file), timeout,
                                                           workers)
    finally:
        (copy / SRC / mutant.file).write_text(original)
    status = {"pass": "survived", "fail": "killed", "timeout": "killed (timeout)"}[outcome]
    return {"mutant": mutant, "status": status, "seconds": seconds, "tail": tail,
            "killer": killer, "counts": counts}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None,
                   help="'named' (the issue's three), or substrings of the mutated files (a,b)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    p.add_argument("--jobs", type=int, default=1, help="mutants run at once (one copy each)")
    p.add_argument("--workers", type=int, default=1, help="pytest-xdist workers per run")
    p.add_argument("--match", default=None,
                   help="only mutants whose description contains one of these substrings (a,b)")
    p.add_argument("--round", type=int, default=None,
                   help="only the mutants of this round (1: issue 13's list, 2: issue 16's, "
                        "3: tuning, gds-tuned and the URL-build frame; 4: significance, automatic k, "
                        "the empty-set model, given splits, the build checkpoint, the readers; "
                        "5: calibration cmim; 6: cmim in mode rows; 7: the default calibration auto; "
                        "8: information's default top-p cut; 9: the relevance kernel's slot marks and "
                        "feature_scores in place; 10: the selectable columns of a centralized run, "
                        "the compiled binning's scratch and insertion sort, the turned labels; 11: "
                        "in-memory cmim's compiled conditional tables; 12: the fused greedy distance "
                        "step and its sums; 13: warm_up() of both default selections, its export "
                        "and the CLI's warm-up thread; 14: automatic k's compiled "
                        "prefix step and its dispatch; 15: BRkNN-b's compiled neighbour counts, "
                        "their dispatch and the check of n_neighbors; 16: k=auto's threshold with "
                        "both ends' standard errors, the warm-up of its prefix step, "
                        "warm_up(auto_k), the CLI's auto_k and the export; 17: n_bins='auto' by the "
                        "rows binned, in the rule, the store builders, the sources and the CLI; "
                        "18: the relevance from entropies in one compiled pass and its "
                        "dispatch, the dense labels read from their transpose, the first "
                        "rise of a label's threshold with lower_gains(every=True); 19: the long "
                        "columns sorted by numpy in padded rows before the compiled binning, "
                        "the kernel's lookup of codes by value, warm_up's new lines)")
    p.add_argument("--check", action="store_true",
                   help="only report which snippets are stale (exit 1 if any is); run no tests")
    p.add_argument("--quick", "--smoke", dest="quick", action="store_true",
                   help="the three named mutants only")
    p.add_argument("--out", default=None, help="also write the Markdown to this file")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip the check that the unmutated code passes (when just checked)")
    args = p.parse_args()

    mutants = MUTANTS
    if args.quick or args.only == "named":
        mutants = [m for m in MUTANTS if m.named]
    elif args.only:
        wanted = args.only.split(",")
        mutants = [m for m in MUTANTS if any(w in m.file for w in wanted)]
    if args.round is not None:
        mutants = [m for m in mutants if m.round == args.round]
    if args.match:
        mutants = [m for m in mutants if any(w in m.description for w in args.match.split(","))]
    if args.check:  # exit 1 when a mutant no longer applies: a check that can fail
        stale = 0
        for m in mutants:
            text = (REPO_ROOT / SRC / m.file).read_text() if (REPO_ROOT / SRC / m.file).is_file() else ""
            ok = text.count(m.old) == 1
            stale += not ok
            print(f"{'ok   ' if ok else 'STALE'} {m.file}: {m.description}")
        print(f"{len(mutants) - stale} of {len(mutants)} mutants apply, {stale} stale")
        sys.exit(1 if stale else 0)

    copies = [make_copy(REPO_ROOT) for _ in range(max(1, args.jobs))]
    try:
        # The unmutated code must pass every group's tests, or no kill means anything.
        groups = sorted({tuple(tests_for(m.file)) for m in mutants})
        baseline = sorted({t for g in groups for t in g})
        for group in ([] if args.no_baseline else [baseline]):
            outcome, seconds, tail, _, _ = run_tests(copies[0], list(group), args.timeout * 2,
                                               args.workers)
            print(f"baseline {group}: {outcome} in {seconds:.0f} s", file=sys.stderr, flush=True)
            if outcome != "pass":
                sys.exit(f"the unmutated tests of {group} do not pass:\n{tail}")
        free = list(copies)
        results: list[dict] = []

        def task(m: Mutant) -> dict:
            copy = free.pop()
            try:
                r = run_one(copy, m, args.timeout, args.workers)
            finally:
                free.append(copy)
            print(f"{r['status']:>16}  {r['seconds']:5.0f} s  {m.file}: {m.description}",
                  file=sys.stderr, flush=True)
            return r

        with ThreadPoolExecutor(max_workers=len(copies)) as pool:
            results = list(pool.map(task, mutants))
    finally:
        for c in copies:
            shutil.rmtree(c.parent, ignore_errors=True)

    rows, by_group = [], {}
    for key in sorted({m.file for m in mutants}, key=lambda f: (group_of(f), f)):
        rs = [r for r in results if r["mutant"].file == key]
        rows.append(_row(key, rs))
        by_group.setdefault(group_of(key), []).extend(rs)
    rows.append(["**all**"] + _row("", results)[1:])
    group_rows = [_row(g, rs) for g, rs in sorted(by_group.items())]
    headers = ["module", "mutants", "killed", "survived", "stale", "kill rate"]
    body = [md_table(headers, group_rows), "", md_table(headers, rows), ""]
    detail = [[r["status"], r["mutant"].file,
               r["mutant"].description + (" (one of the three named mutants)" if r["mutant"].named else ""),
               f"`{r['killer']}`".replace("|", "\\|") if r.get("killer") else "–", r.get("counts") or "–",
               f"{r['seconds']:.0f}"] for r in results]
    body.append(md_table(["status", "module", "mutation", "killed by (first failing test)",
                          "tests (-x: stops at the first failure)", "seconds"], detail,
                         align="lllllr"))
    survivors = [r for r in results if r["status"] == "survived"]
    body.append("")
    body.append("Survivors: " + ("none." if not survivors else "; ".join(
        f"{r['mutant'].file}: {r['mutant'].description}" for r in survivors)))
    emit("Mutation run: planted bugs the tests catch", "\n".join(body), args.out)


def _row(name: str, rs: list[dict]) -> list:
    killed = sum(r["status"].startswith("killed") for r in rs)
    survived = sum(r["status"] == "survived" for r in rs)
    stale = sum(r["status"] == "stale" for r in rs)
    live = killed + survived
    rate = f"{100 * killed / live:.0f} %" if live else "–"
    return [name, len(rs), killed, survived, stale, rate]


if __name__ == "__main__":
    main()
