"""Step 4 of the build from files, **tiles**: a task per row block stacks its pieces into its
tiles (column block x row block) and its label tile, each written with its checksum (into the
folder being built, or straight to a URL store)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from coreselect.errors import InputError
from coreselect.store._format import label_dir, tile_dir
from coreselect.store._plan import Shared
from coreselect.store._spill import _drop_pieces, _pieces, _plan



def _tile_writer(shared: Shared):
    """Where pass 3 writes tiles: the local folder, or straight to the URL store."""
    from coreselect.store.build import _Writer

    if shared.target is None:
        return _Writer(Path(shared.root))
    from coreselect.store.fs import UrlWriter

    return UrlWriter(shared.target)


def tile_task(shared: Shared, r: int) -> dict[str, list[int]]:
    """Row block ``r``'s tiles and label tile from its pieces; the files' sizes and crc32."""
    plan = _plan(shared)
    height = int(plan.bounds[r + 1] - plan.bounds[r])
    out = _tile_writer(shared)
    pieces = _pieces(shared, r)

    def stacked(what: str, width: int) -> sp.csc_matrix:
        parts = pieces(what)
        block = (sp.vstack(parts, format="csc") if parts
                 else sp.csc_matrix((0, width), dtype=np.int8))
        if block.shape != (height, width):
            raise InputError(f"row block {r} holds {block.shape[0]} rows, expected {height}: "
                             "the data changed during the build")
        block.sort_indices()
        return block

    for blk in range(plan.n_blocks):
        width = min(plan.d, (blk + 1) * plan.block_size) - blk * plan.block_size
        t = stacked(f"b{blk:06d}", width)
        out.save_csc(tile_dir(blk, r), t.indptr, t.indices, t.data)
        del t
    t = stacked("labels", plan.n_labels)
    out.save_csc(label_dir(r), t.indptr, t.indices, t.data)
    _drop_pieces(shared, r)
    return out.files
