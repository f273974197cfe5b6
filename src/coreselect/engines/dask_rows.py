"""Row shards kept on Dask workers: the map-reduce of a row-sharded selection.

Each tile (all columns over a block of rows) is made once on a worker by a task (the
provider's small ``loader``: for a store, a path and a block number; for in-memory shards, the
shard itself, sent once) and stays there, held by a future. A greedy step then sends one tiny
task per tile (a function reference, the tile's key and the column ``u``) and one sum task per
``fan_in`` partial results; only the summed count table (8 bytes per code slot) comes back.
Because tiles are task results, not scattered data, the scheduler can rebuild a tile whose
worker died from its lineage, and the run finishes with the identical selection.
"""

from __future__ import annotations

import logging
import pickle
import uuid
from typing import Any, Callable

from coreselect.engines.dask import (
    as_completed_watched, cluster_errors, cluster_failure, result_watched,
)
from coreselect.engines.rowsharded import COUNT_PASSES, RowShards, ShardFunction
from coreselect.io.files import checkpoint_once

log = logging.getLogger(__name__)


def _load(loader):
    return loader()


def _apply(fn: ShardFunction, tiles: list, args: tuple) -> Any:
    """``fn`` on several tiles (those of one worker), summed where they are."""
    checkpoint_once("dask-task")  # a test kills the worker holding here (worker loss mid-run)
    total = None
    for features, labels in tiles:
        part = fn(features, labels, *args)
        total = part if total is None else total + part
    return total


def _sum(*parts: Any) -> Any:
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


class DaskRows:
    """A :class:`~coreselect.engines.rowsharded.RowMapReduce` over tiles persisted on Dask workers.

    Parameters
    ----------
    client : distributed.Client
    shards : RowShards
        Provider of the tiles; only ``loader(i)`` is used (it travels to a worker once).
    fan_in : int
        Partial results summed per reduce task (a tree of sums on the workers).

    ``bytes_sent`` counts what the map-reduce steps submit from the client (pickled function
    references, keys and arguments), ``setup_bytes`` what the tile loaders took, once.
    """

    def __init__(self, client: Any, shards: RowShards, *, fan_in: int = 8,
                 progress: Callable[[int, int], None] | None = None):
        self.client = client
        self.progress = progress  # (done, total) of the count tables' pass, as it runs
        self.n_row_shards = shards.n_row_shards
        self.fan_in = max(int(fan_in), 2)
        self.bytes_sent = 0
        self.n_calls = 0
        run = uuid.uuid4().hex[:8]
        self.setup_bytes = 0
        self.tiles = []
        placed: dict[Any, list] = {}
        try:
            workers = list(client.scheduler_info().get("workers", {})) or [None]
            self._place(client, shards, run, workers, placed)
        except cluster_errors() as exc:  # the scheduler went away (a closed client, ...)
            raise cluster_failure(exc) from None
        # One map task per group of tiles placed on one worker: per-step task overhead grows
        # with the number of workers, not of tiles (a group of at most ``fan_in`` tiles).
        self.groups = [g[j:j + self.fan_in] for g in placed.values()
                       for j in range(0, len(g), self.fan_in)]

    def _place(self, client: Any, shards: RowShards, run: str, workers: list,
               placed: dict[Any, list]) -> None:
        for i in range(self.n_row_shards):
            loader = shards.loader(i)
            self.setup_bytes += len(pickle.dumps(loader))
            # Consecutive tiles on the same worker, so that the first level of the sum tree
            # runs without transfers; any worker may rebuild a tile if its worker dies.
            where = workers[i * len(workers) // self.n_row_shards]
            self.tiles.append(client.submit(
                _load, loader, key=f"rowtile-{run}-{i}", pure=False,
                workers=None if where is None else [where],
                # no worker known yet (a cluster still starting): anywhere, no preference
                allow_other_workers=where is not None))
            placed.setdefault(where, []).append(self.tiles[-1])

    def map_reduce(self, fn: ShardFunction, *args: Any) -> Any:
        """``sum(fn(features_i, labels_i, *args))`` over tiles, computed on the workers: one
        task per group of tiles placed together (summed in place), then a tree of sums."""
        client = self.client
        self.n_calls += 1
        # What the client ships per task: the function by reference, the tiles' keys, args.
        payload = len(pickle.dumps((fn, args)))
        parts = []
        try:
            for group in self.groups:
                parts.append(client.submit(_apply, fn, group, args, pure=False))
                self.bytes_sent += payload + sum(len(t.key) for t in group)
            # The count pass takes seconds: its groups are reported as they finish.
            watched = list(parts) if fn in COUNT_PASSES and self.progress is not None else []
            while len(parts) > 1:
                groups = [parts[i:i + self.fan_in] for i in range(0, len(parts), self.fan_in)]
                parts = [g[0] if len(g) == 1 else client.submit(_sum, *g, pure=False)
                         for g in groups]
                self.bytes_sent += sum(len(g) * len(parts[0].key) for g in groups)
        except cluster_errors() as exc:  # a closed client (the scheduler went away) refuses work
            raise cluster_failure(exc) from None
        if watched:
            for done, _ in enumerate(as_completed_watched(client, watched), start=1):
                self.progress(done, len(watched))
            del watched
        return result_watched(client, parts[0])

    def close(self) -> None:
        """Release the tiles on the workers. Released, not cancelled: cancelling a tile also
        cancels its dependents, and a step's sum task that the client has just let go of (its
        release still in flight) then trips an assertion in the scheduler (distributed
        2026.7, ``stimulus_cancel``), which drops this client's connection and cancels the
        next run's futures (seen under load as 'lost the connection')."""
        for tile in self.tiles:
            tile.release()
        self.tiles, self.groups = [], []

    def __enter__(self) -> "DaskRows":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
