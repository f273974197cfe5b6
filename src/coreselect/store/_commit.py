"""Step 5 of the build from files, **commit**: the small files (column order, codes per column,
names) and ``store.json`` with every file's checksum, written last into the folder that
becomes the store."""

from __future__ import annotations

import json
from pathlib import Path

from coreselect.core.discretize import resolve_n_bins
from coreselect.store._count import Plan
from coreselect.store._format import FORMAT, FORMAT_VERSION, META_FILE, meta_checksum
from coreselect.store._plan import BuildOptions



def _finish(tmp: Path, plan: Plan, files: dict, source, options: BuildOptions,
            keep: tuple[int, ...] | None) -> None:
    """The small files and ``store.json`` (with every checksum) last."""
    from coreselect.io.dataset import IndexedNames
    from coreselect.store.build import _Writer, check_meta_before_commit

    d = plan.d
    feature_names = getattr(source, "feature_names", None)
    if feature_names is not None and keep is not None:
        feature_names = [feature_names[j] for j in keep]
    if feature_names is None or len(feature_names) != d:
        feature_names = IndexedNames(d, getattr(source, "feature_prefix", "x"))
    label_names = getattr(source, "label_names", None)
    if label_names is None or len(label_names) != plan.n_labels:
        label_names = [f"y{i}" for i in range(plan.n_labels)]
    names_pattern = feature_names.prefix if isinstance(feature_names, IndexedNames) else None
    out = _Writer(tmp)
    out.files.update(sorted(files.items()))
    out.save("labels/n_codes.npy", plan.label_n_codes)
    out.save("order.npy", plan.order)
    n_codes = plan.table.n_codes[plan.order]
    out.save("n_codes.npy", n_codes)
    if names_pattern is None:
        out.save_text("feature_names.json", json.dumps([str(s) for s in feature_names]))
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "name": str(options.name),
        "n_samples": int(plan.n),
        "n_features": int(d),
        "n_labels": int(plan.n_labels),
        "label_names": [str(s) for s in label_names],
        "feature_names_prefix": names_pattern,
        "column_ids": None if keep is None else [int(j) for j in keep],
        "block_size": int(options.block_size),
        "n_blocks": int(plan.n_blocks),
        "row_block_size": int(plan.bounds[1] - plan.bounds[0]),
        "n_row_blocks": int(plan.bounds.size - 1),
        "seed": int(options.seed),
        # what "auto" stood for on these rows: the store's codes have that many bins
        "discretization": {"n_bins": resolve_n_bins(options.n_bins, plan.n),
                           "strategy": options.strategy,
                           "min_bin_count": int(options.min_bin_count)},
        "content": "discretized codes (per-column binning over all rows at build time)",
    }
    meta = {**meta, "n_constant": int((n_codes <= 1).sum()), "files": out.files}
    meta["checksum"] = meta_checksum(meta)
    check_meta_before_commit(tmp, meta)
    (tmp / META_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
