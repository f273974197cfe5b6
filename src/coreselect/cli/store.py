"""``coreselect store``: build, inspect and verify tiled on-disk stores."""

from __future__ import annotations

import json
from pathlib import Path

import click

from coreselect.cli._common import (
    LABELS_HELP, fail, handle_errors, header_option, int_or_auto, labels_as_features_option,
    load_options, log_to_stderr, quiet_option, reporter, refuse_header_off_csv, verbose_option,
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
@header_option
@click.option("--bins", "n_bins", default="auto", show_default=True, metavar="N|auto",
              help="Bins per split column, or 'auto': 3 on fewer than 240 samples, 5 from there.")
@click.option("--strategy", type=click.Choice(["auto", "quantile", "uniform", "none"]),
              default="auto", show_default=True, help="How many-valued columns are binned.")
@click.option("--min-bin-count", default=10, show_default=True, type=click.IntRange(min=1),
              help="Smallest bin of a split column.")
@click.option("--workers", "n_workers", default=None, type=click.IntRange(min=1),
              help="Worker processes reading the files side by side (default: this process "
                   "alone); refused with --scheduler (the cluster has its own workers).")
@click.option("--scheduler", default=None,
              help="Address of a Dask scheduler whose workers read the files and write the "
                   "tiles; they must see STORE_DIR's folder (this machine, or a shared "
                   "file system), or reach its URL (they write there themselves).")
@click.option("--chunk-rows", default=None, type=click.IntRange(min=1),
              help="Rows per chunk read at a time (default: the reader's).")
@click.option("--exact-values", "cap", default=16384, show_default=True,
              type=click.IntRange(min=1),
              help="Distinct values per column counted exactly; a column with more is binned "
                   "on its values kept to 10 significant bits (0.1 %).")
@click.option("--checkpoint", default=None, type=click.Path(dir_okay=False),
              help="Keep every finished task of the build here (a local file, and its "
                   "folder CHECKPOINT.parts): the same command after an interruption takes "
                   "them and builds only the rest, giving the same store. A checkpoint of "
                   "other files, sizes, times or options is refused. Removed when the store "
                   "is complete.")
@quiet_option
@verbose_option
@handle_errors
def build_cmd(data, store_dir, block_size, row_block_size, seed, labels, labels_as_features,
              n_bins, strategy, min_bin_count, n_workers, scheduler, chunk_rows, cap,
              checkpoint, quiet, verbose, header):
    """Discretize DATA and write it as a tiled column store in STORE_DIR (a new folder, or
    a URL fsspec writes: s3://bucket/prefix, gs://, az://, memory://, file://).

    DATA is read in chunks, twice (first the value counts the binning needs, then the
    codes), never whole: memory follows the chunk and the tile, not the file. The columns
    are shuffled once with --seed, so contiguous blocks are random partitions; the store
    holds discretized codes (cut points over all rows; binning is per column, so it equals
    binning all at once), in tiles of row block x column block, each with a checksum.
    STORE_DIR appears only when complete (on object storage: store.json is written last).
    Storage options (endpoint, timeouts) come from the JSON object in
    $CORESELECT_STORAGE_OPTIONS, credentials from the storage library's usual chain. It
    holds the columns 'select DATA' chooses from (ID columns left out) and selections from
    it report the file's column numbers.

    Remote operations fail after 10 s without a connection, 30 s without an answer (2 tries),
    300 s in all; storage options change them (config_kwargs, deadline).

    With --checkpoint, a killed or failed build keeps its finished tasks (counts, codes,
    tiles); run the same command again to finish it. The workers must see the checkpoint's
    folder too.
    """
    from coreselect.datasets.inputs import check_run_outputs
    from coreselect.engines import make_engine
    from coreselect.io.chunks import is_url
    from coreselect.selection.spec import max_workers
    from coreselect.store import check_build_target
    from coreselect.store.build import _check_params
    from coreselect.store.fs import refuse_url
    from coreselect.store.ingest import BuildOptions, build_store_from_source

    if verbose:
        log_to_stderr()
    refuse_url(labels, "--labels")
    _check_params(block_size, row_block_size, seed)  # before any file is written
    if n_workers is not None and scheduler:
        fail("--workers does not apply with --scheduler (the cluster has its own workers)")
    if n_workers is not None and n_workers > max_workers():
        fail(f"--workers {n_workers}: at most {max_workers()} here")
    if checkpoint is not None:  # a kill in a finished build's cleanup left it: swept first
        from coreselect.store._resume import sweep_removed

        sweep_removed(checkpoint)
    refuse_header_off_csv(data, header)
    check_build_target(store_dir)  # before the (possibly long) read (a URL: its bucket too)
    if checkpoint is not None:
        refuse_url(checkpoint, "--checkpoint")
    if not is_url(data):
        check_run_outputs(data, labels, {"STORE_DIR": store_dir,
                                         "--checkpoint": checkpoint})  # never over an input
    source = open_source(data, labels, labels_as_features, header)
    # A bar per pass on a terminal (bytes read and MiB/s), a line every few seconds in a log.
    progress = reporter(quiet, STAGES, units={"scan": "B", "count": "B", "encode": "B"})
    options = BuildOptions(block_size=block_size, row_block_size=row_block_size, seed=seed,
                           n_bins=int_or_auto(n_bins), strategy=strategy,
                           min_bin_count=min_bin_count, cap=cap, chunk_rows=chunk_rows,
                           name=getattr(source, "name", None) or "dataset")

    def on_progress(stage: str, done: int, total: int) -> None:
        kind, _, name = stage.partition(":")
        if kind in ("resumed", "damaged"):  # a line per pass: what the checkpoint held
            if not quiet:
                click.echo(f"{STAGES.get(name, name)}: {done} of {total} tasks "
                           + ("taken from the checkpoint" if kind == "resumed" else
                              "kept damaged in the checkpoint (checksums): done again"),
                           err=True)
            return
        progress(stage, done, total)

    engine = make_engine("dask" if scheduler else "local", scheduler=scheduler,
                         n_workers=None if scheduler else n_workers)
    try:
        with engine:  # the scheduler reached (or refused) before the first byte is read
            if hasattr(source, "scan") and not getattr(source, "sparse", False):
                _scan_with_progress(source, progress)  # tables, ARFF: types, rows, ID columns
            st = build_store_from_source(source, store_dir, options=options, engine=engine,
                                         progress=on_progress, checkpoint=checkpoint)
    finally:
        progress.close()
    ids = st.meta.get("column_ids")
    left_out = ([] if ids is None else
                sorted(set(range(int(ids[-1]) + 1 if ids else 0)) - set(ids)))
    click.echo(f"{st.path}: {st.n_features} features x {st.n_samples} samples, "
               f"{st.n_labels} labels, {st.n_blocks} column blocks of {st.block_size} x "
               f"{st.n_row_blocks} row blocks of {st.row_block_size}, seed {st.seed}"
               + (f" (ID columns left out: {', '.join(map(str, left_out))})" if left_out
                  else ""))
    if not quiet:
        click.echo(f"wrote {st.path} (a column store)", err=True)


STAGES = {"scan": "first look (types, rows)", "count": "read 1/2 (counts)", "encode": "read 2/2 (codes)",
          "tiles": "tiles"}


def _scan_with_progress(source, progress) -> None:
    """The source's first pass with a bar of the bytes read (decoded bytes of compressed
    files may pass their size: the bar then stays full)."""
    import os

    total = 0
    for f in getattr(source, "files", []):
        try:
            total += os.path.getsize(f)
        except (OSError, TypeError):
            pass
    done = [0]

    def on_bytes(n: int) -> None:
        done[0] += int(n)
        progress("scan", min(done[0], max(total - 1, 0)), total)

    progress("scan", 0, total)
    source.scan(progress=on_bytes)
    progress("scan", total, total)


def open_source(data: str, labels: str | None, labels_as_features: bool,
                header: bool | None = None):
    """DATA as a chunked source (see :mod:`coreselect.store.ingest`): LIBSVM/XMC files, one
    or many (a folder, a glob, a list file, a URL), through the streaming readers; tables and
    ARFF (which the readers read whole per file anyway, and whose ID columns only a whole
    file tells) and registry names file by file, each read whole and cut into chunks."""
    from pathlib import Path

    from coreselect.io.chunks import _common_name, is_many, is_url, open_chunks
    from coreselect.io.text import stem
    from coreselect.store.ingest import WholeFileChunks

    options = load_options(labels, labels_as_features, header)
    if not (is_many(data) or is_url(data) or Path(data).is_file()):
        return WholeFileChunks([data], options)  # a registry name, 'synthesized', $COREDATA
    source = open_chunks(data, **options)
    if not source.sparse:
        return WholeFileChunks(source.files, options)
    source.name = (_common_name(source.files) if len(source.files) > 1
                   else load_name(source.files[0]))
    return source


def load_name(path: str) -> str:
    """The name the whole-file reader gives a LIBSVM/XMC file."""
    from coreselect.io.libsvm import _stem

    return _stem(Path(path))


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
