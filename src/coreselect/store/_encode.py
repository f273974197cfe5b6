"""Step 3 of the build from files, **encode**: every chunk's codes (by the :class:`Plan`), cut
at column blocks and row blocks, written as pieces into the spill."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from coreselect.errors import InputError
from coreselect.store._binning import encode_chunk, encode_labels, encode_rows
from coreselect.store._count import Plan
from coreselect.store._plan import Shared, _piece_file, _piece_size
from coreselect.store._read import _chunks, _columns_view
from coreselect.store._spill import _piece_path, _plan, _save_piece



def encode_task(shared: Shared, files: Sequence[int]) -> int:
    plan = _plan(shared)
    nbytes = 0
    dtype = np.int16 if plan.table.n_codes.max(initial=0) < 2**15 else np.int32
    t = plan.table
    # The compiled coder takes whole reader chunks (its scratch is 12 bytes a cell, not the
    # general path's ~80): small-range integer values with a direct lookup (count data).
    fast = (plan.sparse and t._lookup is not None and t._uniq is None
            and not t.sketched.any() and not t.zero_code.any())
    for i in files:
        row = plan.first_row[i]
        end = row + _rows_of(plan, i)
        for X, Y, file in _chunks(shared, i):
            m = X.shape[0]
            if row + m > end:
                raise InputError(f"{file}: the file changed between the build's passes "
                                 "(more rows than counted)")
            labels = encode_labels(Y, plan.flip)
            r0 = int(np.searchsorted(plan.bounds, row, side="right") - 1)
            r1 = int(np.searchsorted(plan.bounds, row + m - 1, side="right") - 1) if m else r0
            codes = rows_c = None
            rows_l = labels.tocsr() if r1 > r0 else None
            for r in range(r0, r1 + 1):
                a = max(int(plan.bounds[r]), row) - row
                b = min(int(plan.bounds[r + 1]), row + m) - row
                if b <= a:
                    continue
                c_part = (encode_rows(t, X, plan.d, plan.position, a, b)
                          if fast and sp.isspmatrix_csr(X) else None)
                if c_part is None:
                    if codes is None:
                        codes = encode_chunk(t, X, plan.d, plan.position)
                        rows_c = codes.tocsr() if r1 > r0 else None
                    c_part = codes if rows_c is None else rows_c[a:b].tocsc()
                c_part.data = c_part.data.astype(dtype)
                l_part = labels if rows_l is None else rows_l[a:b].tocsc()
                first = row + a
                _save_piece(_piece_path(shared.root, r, "labels", first), l_part)
                for blk in range(plan.n_blocks):
                    lo, hi = blk * plan.block_size, min(plan.d, (blk + 1) * plan.block_size)
                    _save_piece(_piece_path(shared.root, r, f"b{blk:06d}", first),
                                _columns_view(c_part, lo, hi))
            row += m
        if row != end:
            raise InputError(f"{_piece_file(shared.source, i)}: the file changed between the "
                             "build's passes (fewer rows than counted)")
        nbytes += _piece_size(shared.source, i)
    return nbytes


def _rows_of(plan: Plan, i: int) -> int:
    later = [r for j, r in plan.first_row.items() if j > i]
    return (min(later) if later else plan.n) - plan.first_row[i]
