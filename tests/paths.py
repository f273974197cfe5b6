"""The one adapter between the tests and the product's selection paths.

Every test that runs a selection path (centralized, Algorithm 3 on each engine, the column
store, the CLI) calls a function here, never the product API directly, so that when the
selection API changes only this file is retargeted. Every function takes the same parameter
names (``k, lam, p, relevance, keep_constant, n_bins, strategy, min_bin_count, partitions,
coreset_size, seed, backend``) and returns an object with the result attributes that
:func:`_assertions.assert_same_selection` compares (or, for the CLI, the JSON report).

The library's default calibration weighs the two terms per step; the reference tests check
the paths against the paper's eq. (2) unless a test passes ``calibration=`` itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

# Parameters that belong to discretization (a store fixes them when it is built).
_BINNING = ("n_bins", "strategy", "min_bin_count")


def _paper(params: dict) -> dict:
    params.setdefault("calibration", "paper")
    return params


def partition_of(n_columns: int, m: int, seed: int) -> list[np.ndarray]:
    """The seeded partition Algorithm 3 uses (the definition of which column goes where)."""
    from coreselect.selection.distributed import partition

    return partition(n_columns, m, seed)


def run_centralized(X, Y, **params: Any):
    """CGDS: AltGreedy over every column (``select(mode="centralized")``)."""
    from coreselect.selection import select

    params.pop("seed", None)
    return select(X, Y, mode="centralized", **_paper(params))


def _distributed(X, Y, *, mode: str, engine: str = "local", seed: int = 0, **params: Any):
    from coreselect.selection import select

    return select(X, Y, mode=mode, engine=engine, random_state=seed, **_paper(params))


def run_local(X, Y, **params: Any):
    """Algorithm 3, parts one after another in this process."""
    return _distributed(X, Y, mode="distributed", **params)


def run_process_pool(X, Y, n_workers: int = 2, **params: Any):
    """Algorithm 3, parts in a local process pool."""
    return _distributed(X, Y, mode="distributed", n_workers=n_workers, **params)


def run_streaming(X, Y, **params: Any):
    """Algorithm 3 in streaming mode (one part at a time)."""
    return _distributed(X, Y, mode="streaming", **params)


def run_dask(X, Y, client, **params: Any):
    """Algorithm 3 on a Dask cluster reached through ``client``."""
    return _distributed(X, Y, mode="distributed", engine="dask", client=client, **params)


def build_store(X, Y, path, *, seed: int = 0, block_size: int = 7, **binning: Any):
    """A column store of ``X, Y`` at ``path`` (small blocks, so parts cross block edges)."""
    from coreselect.store import build_store as build

    return build(X, Y, path, seed=seed, block_size=block_size, **binning)


def run_store(X, Y, path, *, seed: int = 0, mode: str = "distributed", block_size: int = 7,
              **params: Any):
    """Build a store of ``X, Y`` at ``path`` with the seed, then run Algorithm 3 (or
    ``mode="centralized"``) on it."""
    from coreselect.selection import select

    binning = {key: params.pop(key) for key in _BINNING if key in params}
    store = build_store(X, Y, path, seed=seed, block_size=block_size, **binning)
    # The seed seeds only the random partition: centralized has none (and refuses it).
    return select(store, mode=mode, random_state=None if mode == "centralized" else seed,
                  **_paper(params))


def run_store_path(path, **params: Any):
    """Algorithm 3 on an existing store folder."""
    from coreselect.selection import select

    seed = params.pop("seed", None)
    params.setdefault("mode", "distributed")
    return select(str(path), random_state=seed, **_paper(params))


def cli_args(data: str | os.PathLike, *, k: int, lam: float | None = None, p: int | None = None,
             relevance: str | None = None, keep_constant: bool = False, mode: str | None = None,
             partitions: Any = None, coreset_size: int | None = None, seed: int | None = None,
             engine: str | None = None, n_workers: int | None = None,
             calibration: str | None = "paper", extra: tuple = ()) -> list[str]:
    """The ``coreselect select`` argument list for these parameters (``calibration=None``
    leaves the CLI's default)."""
    args = ["select", str(data), "-k", str(k), "--json", "--quiet"]
    for flag, value in (("--lam", lam), ("--p", p), ("--relevance", relevance), ("--mode", mode),
                        ("--partitions", partitions), ("--coreset-size", coreset_size),
                        ("--seed", seed), ("--engine", engine), ("--workers", n_workers),
                        ("--calibration", calibration)):
        if value is not None:
            args += [flag, str(value)]
    if keep_constant:
        args.append("--keep-constant")
    return args + list(extra)


def run_cli_json(data, *, subprocess_env: dict | None = None, **params: Any) -> dict:
    """``coreselect select DATA ... --json``: the parsed JSON report. In this process (click's
    runner) unless ``subprocess_env`` is given, then in a fresh interpreter with that
    environment added. Raises AssertionError (with stderr) on a non-zero exit."""
    args = cli_args(data, **params)
    if subprocess_env is not None:
        proc = subprocess.run([sys.executable, "-m", "coreselect", *args], capture_output=True,
                              text=True, env={**os.environ, **subprocess_env}, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)
    return json.loads(run_cli(args, expect=0).stdout)


def run_cli(args: list[str], expect: int | None = None):
    """Run the CLI in this process; returns click's result (``stdout``, ``stderr``, exit)."""
    from click.testing import CliRunner

    from coreselect.cli import cli

    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        runner = CliRunner()
    result = runner.invoke(cli, [str(a) for a in args])
    if expect is not None:
        assert result.exit_code == expect, (result.exit_code, result.stderr, result.exception)
    return result


def store_build_cli(data, store_dir: Path, *, seed: int = 0, block_size: int = 64,
                    labels: str | None = None):
    """``coreselect store build DATA STORE_DIR``."""
    args = ["store", "build", str(data), str(store_dir), "--seed", str(seed),
            "--block-size", str(block_size), "--quiet"]
    if labels is not None:
        args += ["--labels", labels]
    return run_cli(args, expect=0)


def run_rows(X, Y, *, row_shards: int | str = "auto", **params: Any):
    """The centralized selection with the samples in row shards (``mode="rows"``)."""
    from coreselect.selection import select

    params.pop("seed", None)
    return select(X, Y, mode="rows", row_shards=row_shards, **_paper(params))


def run_store_rows(X, Y, path, *, row_block_size: int, seed: int = 0, **params: Any):
    """Build a store with row blocks of ``row_block_size`` rows, then ``mode="rows"`` on it."""
    from coreselect.selection import select
    from coreselect.store import build_store as build

    binning = {key: params.pop(key) for key in _BINNING if key in params}
    store = build(X, Y, path, seed=seed, block_size=7, row_block_size=row_block_size, **binning)
    return select(store, mode="rows", **_paper(params))
