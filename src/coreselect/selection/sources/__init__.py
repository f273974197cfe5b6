"""Where a strategy's candidate columns come from.

* :class:`InMemorySource`: a feature matrix and labels, discretized here with a
  :class:`~coreselect.selection.spec.Binning`;
* :class:`StoreSource`: a column store (:mod:`coreselect.store`), discretized when it was
  built, read by each part task on its own.

A :class:`Source` answers what the strategies of :mod:`coreselect.selection.strategies` ask, and
nothing else:

* ``n_columns`` and :meth:`~Source.n_selectable`: how many candidate columns, and how many of
  them may be picked (constant columns are not, unless ``binning.keep_constant``);
* :meth:`~Source.problem`: every candidate column in memory as a core
  :class:`~coreselect.core.problem.Problem` (the centralized strategies);
* :meth:`~Source.column_parts`: the seeded partition of the columns into ``m`` parts, as the
  shared data every part task loads from plus one key per part (Algorithm 3);
* :meth:`~Source.names` and :meth:`~Source.describe`: for reports.

Selections are always in the source's original column ids (:meth:`~Source.data_columns`:
a store's columns numbered as in the file it was built from).
"""

from __future__ import annotations

from coreselect.selection.sources.base import ColumnParts, Recorded, Source
from coreselect.selection.sources.memory import (
    InMemorySource,
    as_label_matrix,
    check_features,
    check_sparse_structure,
    label_sets_to_matrix,
)
from coreselect.selection.sources.store import StoreRowShards, StoreSource

__all__ = ["Source", "InMemorySource", "StoreSource", "ColumnParts", "check_features",
           "as_label_matrix", "check_sparse_structure", "label_sets_to_matrix", "Recorded",
           "StoreRowShards"]
