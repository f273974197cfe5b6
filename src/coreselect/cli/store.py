"""``coreselect store``: build and inspect column-partitioned on-disk stores."""

from __future__ import annotations

import json

import click

from coreselect.cli._common import handle_errors, progress_bar


@click.group("store")
def store_cmd() -> None:
    """Column stores: data that distributed/streaming workers memory-map by themselves."""


@store_cmd.command("build")
@click.argument("data")
@click.argument("store_dir", type=click.Path(file_okay=False))
@click.option("--block-size", default=65536, show_default=True, type=click.IntRange(min=1),
              help="Columns per block file.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="Seed of the column shuffle (it fixes the random partition).")
@click.option("--labels", default=None, help="Label file for DATA (e.g. the Mulan XML).")
@click.option("--bins", "n_bins", default=5, show_default=True, type=click.IntRange(min=2),
              help="Bins per split column.")
@click.option("--strategy", type=click.Choice(["auto", "quantile", "uniform", "none"]),
              default="auto", show_default=True, help="How many-valued columns are binned.")
@click.option("--min-bin-count", default=10, show_default=True, type=click.IntRange(min=1),
              help="Smallest bin of a split column.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@handle_errors
def build_cmd(data, store_dir, block_size, seed, labels, n_bins, strategy, min_bin_count, quiet):
    """Discretize DATA and write it as a column store in STORE_DIR (a new folder).

    The columns are shuffled once with --seed, so contiguous blocks are random partitions;
    the store holds discretized codes (binning is per column, so it equals binning all at
    once). STORE_DIR appears only when complete.
    """
    from coreselect.datasets.load import load
    from coreselect.store import build_store

    ds = load(data, labels=labels) if labels else load(data)
    bar = progress_bar(total=0, desc="store", enabled=not quiet)

    def progress(stage: str, done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        st = build_store(ds.X, ds.Y, store_dir, block_size=block_size, seed=seed,
                         n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count,
                         feature_names=ds.feature_names, label_names=ds.label_names,
                         name=ds.name, progress=progress)
    finally:
        bar.close()
    click.echo(f"{st.path}: {st.n_features} features x {st.n_samples} samples, "
               f"{st.n_labels} labels, {st.n_blocks} blocks of {st.block_size}, seed {st.seed}")


@store_cmd.command("info")
@click.argument("store_dir", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def info_cmd(store_dir, as_json):
    """Describe the store in STORE_DIR and check that every block is present."""
    from coreselect.store import open_store

    info = open_store(store_dir).info()
    if as_json:
        click.echo(json.dumps(info, indent=1))
    else:
        for key, value in info.items():
            click.echo(f"{key}: {value}")
