"""What every source answers (:class:`Source`) and how its columns split into parts
(:class:`ColumnParts`); the sources themselves are in :mod:`.memory` and :mod:`.store`."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from coreselect.core.discretize import DiscreteMatrix
from coreselect.core.objective import AUTO
from coreselect.core.problem import Problem
from coreselect.selection.spec import Binning, Objective

if TYPE_CHECKING:
    from coreselect.engines.rowsharded import RowShards

#: ``recorded(features, labels)``: relevances computed for them before (a checkpoint's), or None.
Recorded = Callable[[DiscreteMatrix, DiscreteMatrix], Any]


def selectable_columns(features: DiscreteMatrix, column_ids: np.ndarray | None,
                       keep_constant: bool) -> tuple[DiscreteMatrix, np.ndarray | None]:
    """The columns a centralized run may pick and their ids (``column_ids`` None: the
    columns' positions): all of them with ``keep_constant``, else those that vary. On a
    sample of a wide sparse matrix most columns are constant; their relevances (0) would be
    most of the dense relevance matrix, written for a run that cannot pick them."""
    if keep_constant:
        return features, column_ids
    live = np.flatnonzero(~features.is_constant)
    if live.size == features.n_columns:
        return features, column_ids
    return features.take(live), live if column_ids is None else np.asarray(column_ids)[live]


@dataclass
class ColumnParts:
    """A partition of a source's columns, ready for :func:`coreselect.selection.distributed.run_part`:
    ``shared`` is what every part task reads (shipped once per engine), ``columns[i]`` what
    ``shared.load`` takes for part ``i``; ``labels`` are the discretized labels (for the union)
    and ``timings`` the seconds spent preparing."""

    shared: Any
    columns: list[Any]
    labels: DiscreteMatrix
    timings: dict = field(default_factory=dict)
    #: The relevances of every column, when computed up front (in memory; a checkpoint
    #: records them); None when each part computes its own (a store).
    relevance: Any = None


class Source(abc.ABC):
    """Candidate columns and labels a strategy selects from (see the module docstring)."""

    binning: Binning
    name: str = "data"
    #: Names of the label columns (None: unnamed); a result's explanations use them.
    label_names: list[str] | None = None

    @property
    @abc.abstractmethod
    def n_columns(self) -> int:
        """Number of candidate columns."""

    @abc.abstractmethod
    def n_selectable(self) -> int:
        """Number of candidate columns that may be selected."""

    @abc.abstractmethod
    def problem(self, objective: Objective, progress: Callable[[int, int], None] | None = None,
                recorded: Recorded | None = None) -> Problem:
        """The candidate columns that may be selected (:func:`selectable_columns`) in memory,
        relevances computed (``problem.timings`` says
        how long that took; ``progress(done, total)`` as the sparse relevance's labels are
        done), or taken from ``recorded(features, labels)`` when it gives them (a resumed
        run's checkpoint)."""

    @abc.abstractmethod
    def column_parts(self, objective: Objective, m: int, random_state: Any,
                     recorded: Recorded | None = None) -> ColumnParts:
        """The seeded random partition of the candidate columns into ``m`` parts
        (``recorded``: as for :meth:`problem`, where the relevances are computed up front)."""

    def nonzero_cells(self) -> tuple[int, int, int] | None:
        """``(non-zero codes, rows, non-constant columns)`` of the binned data (a constant
        column has the single code 0, so every non-zero code is in a non-constant one); None
        when the source cannot tell."""
        return None

    def nonzero_share(self) -> float | None:
        """The share of the cells of the non-constant columns that hold a non-zero code (what
        ``calibration="auto"`` is decided from); None when the source cannot tell."""
        cells = self.nonzero_cells()
        if cells is None:
            return None
        nonzero, rows, varying = cells
        return 0.0 if rows == 0 or varying == 0 else nonzero / (float(rows) * varying)

    def decide(self, objective: Objective) -> Objective:
        """``objective`` with ``calibration="auto"`` replaced by what it stands for on this
        source's data and ``p`` set for its labels (:meth:`Objective.decided`), so every mode
        and engine decides alike."""
        # the share is counted for "auto" only (a store reads its tiles' headers for it)
        shape = self.describe()
        share = self.nonzero_share() if objective.calibration == AUTO else None
        return objective.decided(share, self.n_columns, int(shape["n_labels"]),
                                 int(shape["n_samples"]))

    def row_shards(self, n_shards: str | int, keep_as: str | None = None,
                   ) -> tuple["RowShards", np.ndarray | None]:
        """The discretized data cut into shards of rows (for the row-sharded strategy), and
        the original id of each column of the shards (None: the columns are the ids).
        ``keep_as``: a resumable run's key for scratch that a resumed run takes over."""
        raise NotImplementedError(f"{type(self).__name__} cannot be cut into row shards")

    def names(self, ids: np.ndarray) -> list[str] | None:
        """Names of the given column ids (None when the source has no names)."""
        return None

    def data_columns(self, ids: np.ndarray) -> np.ndarray:
        """The column numbers, in the data the source was made from, of the given column
        ids (what a selection reports): the ids themselves unless the source renumbers."""
        return np.asarray(ids, dtype=np.int64)

    def fingerprint(self) -> str:
        """A hash of the data selected on, for checkpoints (:mod:`coreselect.selection.checkpoint`)."""
        from coreselect.errors import CheckpointError

        raise CheckpointError(f"{type(self).__name__} has no fingerprint: its runs cannot be "
                              "checkpointed")

    @abc.abstractmethod
    def describe(self) -> dict:
        """``{"dataset", "n_samples", "n_features", "n_labels"}`` for reports."""


# -- in memory ---------------------------------------------------------------------------------
