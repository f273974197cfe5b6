"""``coreselect store``: build, inspect and verify tiled on-disk stores."""

from __future__ import annotations

import json

import click

from coreselect.cli._common import (
    LABELS_HELP, handle_errors, labels_as_features_option, load_options, log_to_stderr,
    quiet_option, reporter, verbose_option,
)


@click.group("store")
def store_cmd() -> None:
    """Column stores: data that distributed/streaming workers read by themselves."""


@store_cmd.command("build")
@click.argument("data")
@click.argument("store_dir", type=click.Path(file_okay=False))
@click.option("--block-size", default=65536, show_default=True, type=click.IntRange(min=1),
              help="Columns per column block.")
@click.option("--row-block-size", default=None, type=click.IntRange(min=1),
              help="Rows per row block (tile height). Default: automatic, about 16.7 M "
                   "non-zeros per tile, so small data get one row block.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Seed of the column shuffle (it fixes the random partition).")
@click.option("--labels", default=None, help=LABELS_HELP)
@labels_as_features_option
@click.option("--bins", "n_bins", default=5, show_default=True, type=click.IntRange(min=2),
              help="Bins per split column.")
@click.option("--strategy", type=click.Choice(["auto", "quantile", "uniform", "none"]),
              default="auto", show_default=True, help="How many-valued columns are binned.")
@click.option("--min-bin-count", default=10, show_default=True, type=click.IntRange(min=1),
              help="Smallest bin of a split column.")
@quiet_option
@verbose_option
@handle_errors
def build_cmd(data, store_dir, block_size, row_block_size, seed, labels, labels_as_features,
              n_bins, strategy, min_bin_count, quiet, verbose):
    """Discretize DATA and write it as a tiled column store in STORE_DIR (a new folder, or
    a URL fsspec writes: s3://bucket/prefix, gs://, az://, memory://, file://).

    The columns are shuffled once with --seed, so contiguous blocks are random partitions;
    the store holds discretized codes (cut points over all rows; binning is per column, so
    it equals binning all at once), in tiles of row block x column block, each with a
    checksum. STORE_DIR appears only when complete (on object storage: store.json is
    written last). Storage options (endpoint, timeouts) come from the JSON object in
    $CORESELECT_STORAGE_OPTIONS, credentials from the storage library's usual chain. It holds the columns 'select DATA'
    chooses from (ID columns left out) and selections from it report the file's column
    numbers.

    Remote operations fail after 10 s without a connection, 30 s without an answer (2 tries),
    300 s in all; storage options change them (config_kwargs, deadline).
    """
    from coreselect.datasets.load import load
    from coreselect.store import build_store, check_build_target
    from coreselect.store.fs import refuse_url

    from coreselect.datasets.inputs import check_read_outputs, check_run_outputs

    if verbose:
        log_to_stderr()
    refuse_url(data, "DATA")  # data files are read from local paths only
    refuse_url(labels, "--labels")
    check_build_target(store_dir)  # before the (possibly long) read (a URL: its bucket too)
    check_run_outputs(data, labels, {"STORE_DIR": store_dir})  # never over (or into) an input
    from pathlib import Path

    shown = reporter(quiet, {"loading": f"loading {Path(data).name}",
                             "store": "column blocks written"})
    with shown.stage("loading"):
        ds = load(data, **load_options(labels, labels_as_features))
    check_read_outputs(ds, {"STORE_DIR": store_dir})
    progress = shown  # build_store's progress(stage, done, total)

    # The candidates of 'select DATA' (ID columns left out), numbered as in the file.
    keep = ds.candidate_columns()
    every = keep.size == ds.X.shape[1]
    X = ds.X if every else ds.X[:, keep]
    names = ds.feature_names if every else [ds.feature_names[int(i)] for i in keep]
    try:
        st = build_store(X, ds.Y, store_dir, block_size=block_size,
                         row_block_size=row_block_size, seed=seed, n_bins=n_bins,
                         strategy=strategy, min_bin_count=min_bin_count,
                         feature_names=names, label_names=ds.label_names,
                         name=ds.name, column_ids=keep, progress=progress)
    finally:
        shown.close()
    click.echo(f"{st.path}: {st.n_features} features x {st.n_samples} samples, "
               f"{st.n_labels} labels, {st.n_blocks} column blocks of {st.block_size} x "
               f"{st.n_row_blocks} row blocks of {st.row_block_size}, seed {st.seed}"
               + ("" if every else f" (ID columns left out: "
                  f"{', '.join(str(ds.feature_names[int(i)]) for i in ds.id_columns)})"))


@store_cmd.command("info")
@click.argument("store_dir", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--no-verify", is_flag=True,
              help="Only check that every file is present with its size (no checksums).")
@quiet_option
@verbose_option
@handle_errors
def info_cmd(store_dir, as_json, no_verify, quiet, verbose):
    """Describe the store in STORE_DIR after verifying every checksum and tile.

    A damaged store gives one line naming the block, and exit code 2.
    """
    from coreselect.store import open_store

    if verbose:
        log_to_stderr()
    store = open_store(store_dir)
    info = store.info()
    if no_verify:
        info["integrity"] = "files present (checksums not verified)"
    else:
        summary = store.verify()
        info["integrity"] = f"ok: {summary['files']} files, {summary['bytes']} bytes verified"
    if as_json:
        click.echo(json.dumps(info, indent=1))
    else:
        for key, value in info.items():
            click.echo(f"{key}: {value}")


@store_cmd.command("verify")
@click.argument("store_dir", type=click.Path(file_okay=False))
@quiet_option
@verbose_option
@handle_errors
def verify_cmd(store_dir, quiet, verbose):
    """Verify every checksum and the structure of every tile of the store in STORE_DIR.

    Prints "ok" and exits 0, or one line naming the damaged block and exits 2.
    """
    from coreselect.store import open_store

    if verbose:
        log_to_stderr()
    store = open_store(store_dir)
    summary = store.verify()
    click.echo(f"{store.path}: ok ({summary['files']} files, {summary['bytes']} bytes)")
