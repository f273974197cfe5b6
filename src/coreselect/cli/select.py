"""``coreselect select``: pick k features of a dataset (or a column store) and report them.

The command parses, refuses options that would be ignored, and delegates to
:func:`coreselect.selection.select`; defaults and choices come from
:data:`coreselect.selection.spec.CONSTRAINTS`.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from pathlib import Path

import click
from click.core import ParameterSource

from coreselect.cli import _common
from coreselect.cli._common import (
    LABELS_HELP, QUIET_HELP, VERBOSE_HELP, ShownChoice, expert_option, fail, handle_errors,
    data_format, header_flag, header_option, help_all_option, int_or_auto,
    labels_as_features_option, load_options, log_to_stderr,
)
from coreselect.core.objective import CONDITIONAL
from coreselect.selection.spec import (
    CONSTRAINTS, ENGINE_MODES, HARD_MAX_WORKERS, MAX_P, SELECT_OPTIONS, WORKERS_PER_CORE,
    default, default_calibration, max_workers, unused_reason,
)


def _choice(name: str) -> click.Choice:
    return click.Choice(list(CONSTRAINTS[name].choices()))


#: Suffixes --export writes (.txt is read as LIBSVM but is no format name: refused on write).
EXPORT_SUFFIXES = (".arff", ".svm", ".libsvm", ".svmlight", ".csv", ".parquet", ".pq", ".xmc")


#: What the progress of each stage of a selection is called (bars and log lines).
STAGES = {"loading": "loading the data", "engine": "starting the engine",
          "relevance": "relevance (labels)", "select": "greedy steps", "parts": "parts",
          "union": "greedy steps on the union", "counts": "count passes over the row shards",
          "count": "read 1/2 (counts)", "encode": "read 2/2 (codes)", "tiles": "tiles"}


def shown_calibrations() -> tuple[str, ...]:
    """The calibrations ``select --help`` lists: the default, ``paper`` (reproduces the
    paper) and ``fixed`` (the paper's bounds hold); the others are kept for research
    (accepted, listed by ``--help-all``)."""
    return tuple(dict.fromkeys((default_calibration(), "information", "cmim", "paper", "fixed")))


def _calibration_help(every: bool = False) -> str:
    from coreselect.core.objective import CALIBRATION_HELP

    names = CONSTRAINTS["calibration"].choices() if every else shown_calibrations()
    rest = ("" if every else
            "; the others, kept for research, are listed by --help-all")
    return ("How relevance and diversity are weighed in each greedy step (cmim: a "
            "conditional criterion instead; auto: decided from the binned data): "
            + "; ".join(f"{name}: {CALIBRATION_HELP.get(name, '')}" for name in names)
            + f"{rest}.  [default: {default_calibration()}]")


@click.command("select")
@click.argument("data")
@click.option("-k", "--k", "k", default=None, metavar="K|auto",
              help="Number of features to select, or 'auto': chosen by internal cross-validation "
                   "of the greedy order's prefixes (up to min(selectable, 100); BRkNN-b, 5 folds; "
                   "the best k of example F1 and of macro F1, the larger, at most half the "
                   "features unless the curve still rises beyond by more than its standard error).  [default: 10, at most the "
                   "selectable features]")
@click.option("--percentile", type=float, default=None,
              help="Select this percentage (0 < P <= 100) of the selectable features, rounded "
                   "up, instead of -k.")
@click.option("--k-curve", "k_curve", type=click.Path(dir_okay=False), default=None,
              help="With -k auto: draw the cross-validated curve of k (the chosen and the best "
                   "k marked) as a PNG at this path.")
@click.option("--lam", type=float, default=default("lam"), show_default=True, help="Weight of diversity (0..1).")
@click.option("--p", "p", type=int, default=default("p"),
              help="Features per label counted in the relevance g (p at least the number of "
                   "candidates counts them all).  [default: max(3, ceil(4k / labels)) under the "
                   "calibration 'information', 10 under the others]")
@expert_option("--relevance", type=_choice("relevance"), default=default("relevance"), show_default=True,
               help="mi: raw I in bits (reproduces the paper's Table 2, classifies better); nmi: I/sqrt(H(x)H(l)) as in the paper's text.")
@click.option("--calibration", default=None, help=_calibration_help(),
              type=ShownChoice(CONSTRAINTS["calibration"].choices(), shown_calibrations()))
@click.option("--bins", "n_bins", default=default("n_bins"), show_default=True, metavar="N|auto",
              help="Bins per split column, or 'auto': 3 on fewer than 240 samples, 5 from there.")
@click.option("--min-bin-count", type=int, default=default("min_bin_count"), show_default=True, help="Smallest bin of a split column.")
@click.option("--strategy", type=_choice("strategy"), default=default("strategy"),
              show_default=True, help="Discretization of columns with more than --bins distinct values.")
@click.option("--keep-constant", is_flag=True, help="Allow constant columns to be selected (the paper's runs).")
@click.option("--mode", type=_choice("mode"), default=default("mode"),
              show_default=True, help="centralized: AltGreedy on all (CGDS); distributed/streaming: Algorithm 3 (DGDS); rows: CGDS's selection with the samples in shards (tall data).")
@click.option("--partitions", default=default("partitions"), show_default=True, help="Parts for distributed/streaming: 'auto' = ceil(sqrt(d/k)) or an integer.")
@expert_option("--coreset-size", type=int, default=None, help="Features kept per part (default k).")
@click.option("--row-shards", default=default("row_shards"), show_default=True,
              help="--mode rows on a data file: shards of the samples ('auto': one, or one per Dask worker). "
                   "A store's shards are its row blocks, spread over the workers.")
@click.option("--engine", type=_choice("engine"), default=default("engine"), show_default=True,
              help="Where the parts of --mode distributed, or the row shards of --mode rows, run.")
@click.option("--workers", "n_workers", type=int, default=None,
              help=f"Worker processes: --mode distributed's process pool (local) or a Dask LocalCluster; "
                   f"at most {max_workers()} here ({WORKERS_PER_CORE} per core, {HARD_MAX_WORKERS} in all).")
@click.option("--scheduler", default=None,
              help="Address of an existing Dask scheduler (--engine dask; it has its own workers).")
@click.option("--seed", "random_state", type=int, default=0, show_default=True,
              help="Seed of the random partition of --mode distributed/streaming on a data file "
                   "(a store's partition is fixed by its build seed).")
@click.option("--labels", "labels", default=None, help=LABELS_HELP)
@labels_as_features_option
@header_option
@expert_option("--backend", type=_choice("backend"), default=default("backend"), show_default=True,
               help="Kernel implementation (both select the same features).")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None, help="Also write the JSON result to this file.")
@click.option("--export", "export", type=click.Path(dir_okay=False), default=None,
              help=f"Write the dataset reduced to the selected features ({', '.join(EXPORT_SUFFIXES)}).")
@click.option("--explain", is_flag=True,
              help="Say why each feature was picked: the labels it is among the top-p for, its share of g, its nearest selected neighbour.")
@click.option("--coverage", "coverage_png", type=click.Path(dir_okay=False), default=None,
              help="Also draw the selected-feature x label coverage as a PNG at this path.")
@click.option("--temp-dir", "temp_dir", type=click.Path(file_okay=False), default=None,
              help="Folder for the row copies of --mode rows on a column store (local engine; "
                   "default: the system's temporary folder). Removed when the run ends; a "
                   "killed run's, by the next rows run there (or taken over by the run that "
                   "resumes its --checkpoint).")
@click.option("--checkpoint", "checkpoint", default=None, metavar="PATH_OR_URL",
              help="Record the run's state in this file (or s3://, gs://, az://, memory:// URL; "
                   "what is computed once, such as relevances and finished parts, in "
                   "PATH.parts beside it, a folder coreselect marks as its own) after every "
                   "greedy step and finished "
                   "part; the same command run again "
                   "after the run was killed resumes there, with the same result (what the "
                   "data contradict is refused). Kept when "
                   "the run ends (a rerun returns at once); one of another dataset, spec or "
                   "version is refused. At a URL, each write and read fails after 10 s "
                   "without a connection, 30 s without an answer (2 tries), 300 s in all.")
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--verbose", "-v", is_flag=True, help=VERBOSE_HELP)
@help_all_option
@handle_errors
def select_cmd(data, k, percentile, k_curve, lam, p, relevance, calibration, n_bins,
               min_bin_count, strategy, keep_constant, mode, partitions, coreset_size, row_shards, engine, n_workers,
               scheduler, random_state, labels, backend, as_json, out, export, explain, coverage_png,
               temp_dir, checkpoint, quiet, verbose, labels_as_features, header):
    """Select K features of DATA (a file, a built-in dataset name, or a column store: its
    folder, or its URL: s3://bucket/prefix, gs://, az://, memory://, file://)."""
    if verbose:
        log_to_stderr()
    ctx = click.get_current_context()
    given = {name for name in ctx.params
             if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)}
    store = None
    k = int_or_auto(k) if k is not None else None
    n_bins = int_or_auto(n_bins) if n_bins is not None else None
    if k == "auto":
        given.add("k_auto")  # the option matrix: --k-curve needs -k auto
    from coreselect.store.fs import local_path, refuse_url, scheme

    for option, value in (("--labels", labels), ("--out", out), ("--export", export),
                          ("--coverage", coverage_png), ("--temp-dir", temp_dir),
                          ("--k-curve", k_curve)):
        refuse_url(value, option)  # never a local folder named "s3:"
    from coreselect.io.chunks import names_files  # shards of a dataset, not a store

    if (scheme(data) is not None or Path(data).is_dir()) and not names_files(data):
        from coreselect.store import open_store

        store = open_store(data)  # one line when the folder holds no store
    # rows/streaming on LIBSVM/XMC files: a transient store built from their chunks (never the
    # file whole), in --temp-dir; --export needs the data themselves, so it reads the file.
    stream = (_streamed_source(data, labels, labels_as_features)
              if store is None and mode in ("rows", "streaming") and export is None else None)
    _refuse_ignored(given - {"temp_dir"} if stream is not None else given,
                    "store" if store is not None else "file", mode, engine,
                    fmt=data_format(data) if "header" in given and store is None else None,
                    spelled={"header": header_flag(header)})
    if store is None and stream is None:
        _check_fits(data, mode)  # before anything is allocated
    # Outputs are checked before any work: never over an input (the files DATA resolves to,
    # a name through $COREDATA or the cache, and the label XML found beside it) or over each
    # other, and an unknown --export format is refused now rather than after the selection.
    from coreselect.datasets.inputs import check_read_outputs, check_run_outputs
    from coreselect.io.files import checkpoint as test_hold

    outputs = {"--out": out, "--export": export, "--coverage": coverage_png,
               "--k-curve": k_curve}
    # The checkpoint is read and written: never an input, nor another output.
    written = {**outputs, "--checkpoint": None if scheme(checkpoint) not in (None, "file")
               else local_path(checkpoint)}
    check_run_outputs(data, labels, written)
    from coreselect.io.files import check_writable

    check_writable(outputs.values())  # a folder, a missing parent folder: before any work
    if export and not str(export).lower().endswith(EXPORT_SUFFIXES):
        fail(f"--export {export}: unknown format suffix (known: {', '.join(EXPORT_SUFFIXES)})")
    if export:
        from coreselect.io import format_of

        if format_of(export) == "arff":
            _refuse_case_variant_xml(export)

    shown = _common.reporter(quiet, {**STAGES, "loading": f"loading {Path(data).name}"},
                             units={"count": "B", "encode": "B"})  # a transient store's passes

    def progress(stage: str, done: int, total: int) -> None:
        test_hold("progress")
        shown(stage, done, total)

    from coreselect.selection import select

    params = dict(k=k, percentile=percentile, lam=lam, p=p, relevance=relevance, calibration=calibration,
                  keep_constant=keep_constant, mode=mode,
                  partitions=int_or_auto(partitions), coreset_size=coreset_size,
                  row_shards=int_or_auto(row_shards), engine=engine,
                  n_workers=n_workers, scheduler=scheduler, backend=backend, progress=progress)
    if temp_dir is not None:
        params["temp_dir"] = temp_dir
    if checkpoint is not None:
        params["checkpoint"] = checkpoint
    started = time.perf_counter()
    dataset = None
    xml = None
    scratch = None
    try:
        if stream is not None:
            scratch, store = _transient_store(stream, temp_dir, n_bins, strategy, min_bin_count,
                                              random_state, row_shards, progress)
            params["row_shards"] = "auto"  # the store's row blocks are the shards
            if mode != "rows":
                params.pop("temp_dir", None)  # it held the store only (no row copies)
            result = select(store, **params)
        elif store is not None:
            # A store's partition is its build seed: --seed only when given (and then checked).
            result = select(store, random_state=random_state if "random_state" in given
                            else None, **params)
        else:
            with shown.stage("loading"):
                dataset = _load(data, labels, labels_as_features, header, auto_k=k == "auto")
            # Again with what the reader actually read, and with the export's label XML.
            xml = _export_xml(dataset, export)
            check_read_outputs(dataset, {**written, "--export's label XML": xml})
            test_hold("loaded")
            result = select(dataset, n_bins=n_bins, strategy=strategy,
                            min_bin_count=min_bin_count,
                            random_state=random_state if mode in ("distributed", "streaming")
                            else None, **params)
    finally:
        shown.close()
        if scratch is not None:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)  # the transient store: nothing left
    report = {"k": int(result.spec["k"]), "lam": lam, "p": result.spec.get("p", p), "relevance_kind": relevance,
              "calibration": result.spec.get("calibration"), "mode": mode, "backend": backend,
              **result.to_dict()}
    if report["calibration"] in CONDITIONAL:  # no weight, top-p cut or measure was used
        report.update(lam=None, p=None, relevance_kind=None)
    label_names = list(store.label_names if store is not None else dataset.label_names)
    if explain:
        report["explanations"] = [_explanation(e) for e in result.explain(label_names)]
    if export:
        report["export"] = str(export)
    report["total_seconds"] = round(time.perf_counter() - started, 4)
    if out or export or coverage_png or k_curve:
        from coreselect.io.files import output_set
        from coreselect.io import export_columns, format_of

        # One command, all outputs or none: they are renamed into place only when all wrote.
        with _common.reporter(quiet) as shown, shown.stage("writing the outputs"), \
                output_set([out, export, xml, coverage_png, k_curve], last=True) as (
                    out_tmp, export_tmp, xml_tmp, png_tmp, curve_tmp):
            if curve_tmp is not None:
                from coreselect.selection.autok import plot_k_curve

                plot_k_curve(result.auto_k, curve_tmp,
                             title=f"Automatic k on {report.get('dataset', data)}: chosen "
                                   f"k = {result.auto_k.k} (cap {result.auto_k.cap})")
            if png_tmp is not None:
                from coreselect.selection.explain import plot_coverage

                # cmim has no top-p cut: every selected feature's relevance counts
                plot_coverage(result.label_relevance, report["p"] or MAX_P, png_tmp,
                              label_names=result.shown_label_names(label_names),
                              n_labels_total=result.n_labels,
                              feature_names=result.names)
            if export_tmp is not None:
                arff = {"xml": xml_tmp or False} if format_of(export) == "arff" else {}
                export_columns(dataset, result.selected, export_tmp, **arff)
            if out_tmp is not None:
                out_tmp.write_text(json.dumps(_json_report(report), indent=2) + "\n")
    click.echo(json.dumps(_json_report(report)) if as_json
               else _table(report, by_default=calibration is None,
                           bins_by_default="n_bins" not in given
                           and (store is None or stream is not None)))
    if not quiet:
        for path in (out, export, xml, coverage_png, k_curve):
            if path is not None:
                click.echo(f"wrote {path}", err=True)


# --help-all describes every calibration (the main --help the ones a user picks among).
next(p for p in select_cmd.params if p.name == "calibration").help_all = _calibration_help(every=True)


def _json_report(report: dict) -> dict:
    """The report as JSON shows it: p = all (every selected feature counts in g) is written
    "all", not the machine integer that stands for it."""
    out = dict(report)
    if isinstance(out.get("p"), int):
        out["p"] = _p_json(out["p"])
    if isinstance(out.get("spec"), dict) and isinstance(out["spec"].get("p"), int):
        out["spec"] = {**out["spec"], "p": _p_json(out["spec"]["p"])}
    return out


def _p_json(p: int) -> int | str:
    return "all" if p >= MAX_P else p


def _streamed_source(data: str, labels: str | None, labels_as_features: bool):
    """The chunked source of LIBSVM/XMC ``data`` (a file or many), else None (read whole)."""
    from coreselect.io.chunks import is_many, open_chunks

    if labels is not None or labels_as_features:
        return None  # LIBSVM/XMC carry their labels; other formats are read whole
    try:
        from coreselect.io import format_of

        single = Path(data).is_file() and format_of(str(data)) in ("libsvm", "xmc")
    except Exception:  # noqa: BLE001 - an unknown suffix: the reader says so later
        single = False
    if not (single or is_many(data)):
        return None
    source = open_chunks(data)
    return source if source.sparse else None


def _transient_store(source, temp_dir, n_bins, strategy, min_bin_count, seed, row_shards,
                     progress):
    """Build a column store of ``source`` in a scratch folder of ``temp_dir`` (marked with
    this process's pid: a killed run's is removed by the next one), for rows/streaming.
    Returns (scratch folder, opened store)."""
    import tempfile

    from coreselect.io.files import scratch_dir
    from coreselect.store.ingest import BuildOptions, build_store_from_source

    root = Path(temp_dir) if temp_dir is not None else Path(tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    scratch = scratch_dir(root, "coreselect-select-store")
    try:
        rbs = None
        if isinstance(row_shards, int) or str(row_shards).isdigit():
            rbs = max(1, -(-source.n_rows // max(1, int(row_shards))))
        defaults = {"n_bins": default("n_bins"), "strategy": default("strategy"),
                    "min_bin_count": default("min_bin_count")}
        options = BuildOptions(
            n_bins=n_bins if n_bins is not None else defaults["n_bins"],
            strategy=strategy if strategy is not None else defaults["strategy"],
            min_bin_count=min_bin_count if min_bin_count is not None
            else defaults["min_bin_count"],
            seed=int(seed or 0), row_block_size=rbs,
            name=getattr(source, "name", None) or "dataset")
        store = build_store_from_source(source, scratch / "store", options=options,
                                        progress=progress)
    except BaseException:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return scratch, store


#: Bytes of memory per byte of data text that loading and discretizing take at the least
#: (a CSR non-zero is 12 bytes for ~8 bytes of 'index:value ' text, its code 6 more).
MEMORY_PER_TEXT_BYTE = 2.0
#: Text bytes per compressed byte assumed for .gz/.bz2/.xz/.zst files.
COMPRESSION_RATIO = 4.0


def _available_memory() -> int:
    """Bytes this process may still allocate: the free memory, or the address-space limit
    (RLIMIT_AS) left, whichever is smaller."""
    import resource

    import psutil

    free = int(psutil.virtual_memory().available)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        free = min(free, max(0, soft - psutil.Process().memory_info().vms))
    return free


def _check_fits(data: str, mode: str) -> None:
    """One line (exit 2) when DATA, read whole, clearly cannot fit in memory: the estimate is
    a lower bound from the files' sizes, so only hopeless runs are stopped."""
    from coreselect.io.chunks import is_many, resolve_files
    from coreselect.io.text import COMPRESSED_SUFFIXES

    try:
        files = resolve_files(data) if is_many(data) or Path(data).is_file() else []
        sizes = [(os.path.getsize(f), f.lower().endswith(COMPRESSED_SUFFIXES)) for f in files]
    except Exception:  # noqa: BLE001 - the reader reports unreadable data in its own words
        return
    text = sum(size * (COMPRESSION_RATIO if packed else 1) for size, packed in sizes)
    need = text * MEMORY_PER_TEXT_BYTE
    free = _available_memory()
    if need > free:
        fail(f"{data}: about {text / 2**30:.1f} GiB of data need at least {need / 2**30:.1f} GiB "
             f"of memory read whole (--mode {mode}), {free / 2**30:.1f} GiB are free; "
             "--mode rows reads the file in chunks (or build a store: coreselect store build)")


def _export_xml(dataset, export: str | None) -> Path | None:
    """An ARFF export's label XML: a further output, named after the user's path (never after
    a temporary file); None when there is none to write (it already names these labels).
    Another dataset's label file is never replaced (refused here, before the selection)."""
    if not export:
        return None
    from coreselect.io import format_of

    if format_of(export) != "arff":
        return None
    from coreselect.io.arff import label_xml_path

    xml = label_xml_path(Path(export), dataset.label_names, None)
    return None if xml is None or xml.exists() else xml


def _refuse_case_variant_xml(export: str) -> None:
    """The export's label XML would sit beside a file whose name differs only in case."""
    from coreselect.errors import InputError
    from coreselect.io.arff import _stem, case_variants

    beside = Path(export).parent / f"{_stem(Path(export))}.xml"
    variants = case_variants(beside)
    if variants:
        raise InputError(f"--export {export}: its label XML {beside.name} would sit beside {variants[0]}, "
                         "whose name differs only in letter case (one file on case-insensitive "
                         "filesystems; the reader matches exact names): export to another name")


def _explanation(e) -> dict:
    return {"feature": e.feature, "labels": list(e.labels),
            "label_relevance": [round(float(v), 6) for v in e.label_relevance],
            "g_share": round(float(e.g_share), 6), "nearest": e.nearest,
            "nearest_distance": None if e.nearest_distance is None
            else round(float(e.nearest_distance), 6)}


def _refuse_ignored(given: set[str], source: str, mode: str, engine: str,
                    fmt: str | None = None, spelled: dict | None = None) -> None:
    """One line and exit 2 for an option given explicitly that this run would ignore (the
    option matrix: :data:`coreselect.selection.spec.UNUSED`; ``fmt``: the data's format,
    ``spelled``: the flag as given where it has two spellings)."""
    for name in SELECT_OPTIONS:
        if name not in given:
            continue
        why = unused_reason(name, mode, source, engine, given, fmt=fmt)
        if why is not None:
            run = f"--mode {mode}" + (f" --engine {engine}" if mode in ENGINE_MODES else "")
            on = ("a column store" if source == "store" else
                  "a built-in dataset" if fmt == "dataset" else
                  f"a data file ({fmt})" if fmt is not None else "a data file")
            flag = (spelled or {}).get(name, SELECT_OPTIONS[name])
            fail(f"{flag} does not apply to {run} on {on}: {why}")


def _load(data: str, labels: str | None, labels_as_features: bool = False,
          header: bool | None = None, auto_k: bool = False):
    import gc

    from coreselect.datasets.load import load

    # numba's start-up and the kernels' cache load overlap with reading the file. Neither
    # leaves cyclic garbage to speak of, and the collector's passes over the hundred thousand
    # objects numba creates took 50 ms of the GIL (RCV1): it waits until both are done. In the
    # coreselect process those objects then stay out of its scans for good (gc.freeze: one
    # more young pass over them cost 24 ms); a caller's process keeps its collector as it was.
    collecting = gc.isenabled()
    gc.disable()
    try:
        warm = threading.Thread(target=_warm_up, args=(auto_k,), daemon=True)
        warm.start()
        dataset = load(data, **load_options(labels, labels_as_features, header))
        warm.join()
    finally:
        if collecting:
            if _common.own_process():
                gc.freeze()
            gc.enable()
    return dataset


def _warm_up(auto_k: bool = False) -> None:
    try:
        from coreselect.selection import warm_up

        warm_up(auto_k=auto_k)
    except Exception:  # noqa: BLE001 - warming is an optimisation; the real call reports errors
        pass


def _p_text(p: int) -> str:
    """``all`` for a p that counts every selected feature."""
    return "all" if p >= MAX_P else str(p)


def _k_text(report: dict) -> str:
    """``10``, or ``auto -> 23 (best 31, cap 100)`` for an automatic k."""
    auto = report.get("k_auto")
    if not auto:
        return str(report["k"])
    return f"auto -> {auto['k']} (best mean at {auto['best_k']}, cap {auto['cap']})"


def _table(report: dict, by_default: bool = False, bins_by_default: bool = False) -> str:
    """The selection as the command prints it (``by_default``: the calibration was not given,
    and the summary says which one the data's default stood for; ``bins_by_default``: the
    command binned the data with ``--bins auto``, and the summary says when that took fewer
    bins than on larger data)."""
    rows = [f"{'rank':>4}  {'index':>7}  {'relevance':>9}  {'mean dist':>9}  name"]
    names = report.get("names") or [""] * len(report["selected"])
    rel = report.get("feature_relevance") or [math.nan] * len(report["selected"])
    for rank, (idx, name, r, md) in enumerate(
        zip(report["selected"], names, rel, report["mean_distance"]), start=1
    ):
        rows.append(f"{rank:>4}  {idx:>7}  {r:>9.4f}  {md:>9.4f}  {name}")
    rows.append("")
    if report.get("calibration") in CONDITIONAL:  # no h, weight, top-p or measure
        rows.append(
            f"{report['calibration']} criterion, summed over the picks = "
            f"{report['objective']:.4f} bits   relevance g = {report['relevance']:.4f}   "
            f"diversity D = {report['diversity']:.4f}   ({report['mode']}, "
            f"k={_k_text(report)}; {report['seconds']:.3f} s selection)")
        if by_default:
            rows.append(f"calibration {report['calibration']}: the default on data whose binned "
                        "columns are mostly non-zero (dense numeric); --calibration information "
                        "weighs relevance against redundancy instead")
    else:
        rows.append(
            f"objective h = {report['objective']:.4f}   relevance g = {report['relevance']:.4f}   "
            f"diversity D = {report['diversity']:.4f}   ({report['mode']}, k={_k_text(report)}, "
            f"lam={report['lam']}, p={_p_text(report['p'])}, {report['relevance_kind']}; "
            f"{report['seconds']:.3f} s selection)"
        )
    from coreselect.core.discretize import DEFAULT_BINS, FEW_ROWS, FEW_ROWS_BINS

    # by default the bins are "auto", which takes FEW_ROWS_BINS exactly below FEW_ROWS samples
    if bins_by_default and (report.get("spec") or {}).get("n_bins") == FEW_ROWS_BINS:
        rows.append(f"bins: {FEW_ROWS_BINS} per split column, as --bins auto takes on fewer "
                    f"than {FEW_ROWS} samples ({DEFAULT_BINS} from there); --bins "
                    f"{DEFAULT_BINS} keeps five")
    if report.get("parts"):
        t = report["timings"]
        rows.append(
            f"{report['partitions']} parts on {report['engine']}: engine start "
            f"{t.get('engine_start', 0):.3f} s, parts {t.get('parts', 0):.3f} s; AltGreedy on "
            f"the union of {report['union_size']} in {t.get('union', 0):.3f} s")
    info = report.get("engine_info") or {}
    if "checkpoint" in info:
        parts = (f"{info['resumed_parts']} part(s) and " if "resumed_parts" in info else "")
        rows.append(f"checkpoint {info['checkpoint']}: resumed with {parts}"
                    f"{info['resumed_from_step']} of {report['k']} step(s) recorded")
    if report.get("explanations"):
        among = "relevant to" if (report["p"] or MAX_P) >= MAX_P else "among the top-p for"
        rows += ["", f"why each was picked (labels it is {among}; share of g; nearest pick):"]
        shown = report.get("labels_explained")
        if shown:  # too many labels to keep: the top ones by their term of g
            rows.append(f"(labels: the {shown['top']} of {shown['of']} with the largest terms of "
                        "g; shares of g over those)")
        for rank, e in enumerate(report["explanations"], start=1):
            labels = ", ".join(f"{name} {mi:.3f}" for name, mi in
                               zip(e["labels"], e["label_relevance"])) or "(diversity only)"
            near = (f"{e['nearest']} at d={e['nearest_distance']:.3f}"
                    if e["nearest"] is not None else "-")
            rows.append(f"{rank:>4}  {e['feature']}: {labels}; {100 * e['g_share']:.1f}% of g; "
                        f"nearest {near}")
    return "\n".join(rows)
