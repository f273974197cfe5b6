"""``coreselect select``: pick k features of a dataset (or a column store) and report them."""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from pathlib import Path

import click

from coreselect.cli._common import atomic_output, fail, handle_errors, progress_bar


@click.command("select")
@click.argument("data")
@click.option("-k", "k", type=int, default=10, show_default=True, help="Number of features to select.")
@click.option("--lam", type=float, default=0.5, show_default=True, help="Weight of diversity (0..1).")
@click.option("--p", "p", type=int, default=10, show_default=True, help="Features per label counted in the relevance g.")
@click.option("--relevance", type=click.Choice(["mi", "nmi"]), default="mi", show_default=True,
              help="mi: raw I in bits (reproduces the paper's Table 2, classifies better); nmi: I/sqrt(H(x)H(l)) as in the paper's text.")
@click.option("--bins", "n_bins", type=int, default=5, show_default=True, help="Bins per split column.")
@click.option("--min-bin-count", type=int, default=10, show_default=True, help="Smallest bin of a split column.")
@click.option("--strategy", type=click.Choice(["auto", "quantile", "uniform", "none"]), default="auto",
              show_default=True, help="Discretization of columns with more than --bins distinct values.")
@click.option("--keep-constant", is_flag=True, help="Allow constant columns to be selected (the paper's runs).")
@click.option("--mode", type=click.Choice(["centralized", "distributed", "streaming"]), default="centralized",
              show_default=True, help="centralized: AltGreedy on all (CGDS); distributed/streaming: Algorithm 3 (DGDS).")
@click.option("--partitions", default="auto", show_default=True, help="Parts for distributed/streaming: 'auto' = ceil(sqrt(d/k)) or an integer.")
@click.option("--coreset-size", type=int, default=None, help="Features kept per part (default k).")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--workers", "n_workers", type=int, default=None, help="Worker processes for the engine.")
@click.option("--scheduler", default=None, help="Address of an existing Dask scheduler.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random partition.")
@click.option("--labels", "labels", default=None, help="Label specification (Mulan XML file, or names/prefix/count for CSV).")
@click.option("--backend", type=click.Choice(["auto", "numba", "numpy"]), default="auto", show_default=True,
              help="Kernel implementation (both select the same features).")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None, help="Also write the JSON result to this file.")
@click.option("--export", "export", type=click.Path(dir_okay=False), default=None,
              help="Write the dataset reduced to the selected features (.arff, .svm, .csv, .parquet).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--verbose", "-v", is_flag=True, help="Log each stage with its time on stderr.")
@handle_errors
def select_cmd(data, k, lam, p, relevance, n_bins, min_bin_count, strategy, keep_constant, mode,
               partitions, coreset_size, engine, n_workers, scheduler, seed, labels, backend,
               as_json, out, export, quiet, verbose):
    """Select K features of DATA (a file, a built-in dataset name, or a column store)."""
    if verbose:
        import logging

        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(name)s: %(message)s")
    partitions = _parse_partitions(partitions)
    show_progress = not quiet and sys.stderr.isatty()
    bar = {}

    def progress(stage: str, done: int, total: int) -> None:
        if not show_progress:
            return
        if stage not in bar:
            bar[stage] = progress_bar(total, stage)
        b = bar[stage]
        b.total = total
        b.n = done
        b.refresh()

    params = dict(k=k, lam=lam, p=p, relevance=relevance, keep_constant=keep_constant, mode=mode,
                  partitions=partitions, coreset_size=coreset_size, engine=engine,
                  n_workers=n_workers, random_state=seed, backend=backend, progress=progress)
    started = time.perf_counter()
    try:
        from coreselect.store import is_store

        if Path(data).is_dir() and is_store(data):
            report = _select_store(data, params, scheduler)
        else:
            report = _select_dataset(data, labels, params, n_bins, min_bin_count, strategy,
                                     scheduler, export)
    finally:
        for b in bar.values():
            b.close()
    report["total_seconds"] = round(time.perf_counter() - started, 4)
    if out:
        with atomic_output(out) as fh:
            json.dump(report, fh, indent=2)
            fh.write("\n")
    if as_json:
        click.echo(json.dumps(report))
    else:
        click.echo(_table(report))


def _parse_partitions(value: str) -> str | int:
    if value == "auto":
        return value
    try:
        number = int(value)
    except ValueError:
        fail(f"--partitions must be 'auto' or a positive integer, got {value!r}")
    if number < 1:
        fail(f"--partitions must be 'auto' or a positive integer, got {value!r}")
    return number


def _select_dataset(data, labels, params, n_bins, min_bin_count, strategy, scheduler, export):
    import numpy as np

    from coreselect.datasets.load import load
    from coreselect.selection import select_features

    # numba's start-up and the kernels' cache load overlap with reading the file.
    warm = threading.Thread(target=_warm_up, daemon=True)
    warm.start()
    dataset = load(data, labels=labels)
    warm.join()
    X, names = dataset.X, list(dataset.feature_names)
    keep = dataset.candidate_columns()  # ID-like columns are never candidates
    if keep.size < X.shape[1]:
        X = X[:, keep]
    client = None
    if scheduler is not None:
        from coreselect.engines.dask import connect

        client = connect(scheduler)
    # The core directly, not the scikit-learn estimator: importing scikit-learn costs seconds.
    try:
        selection = select_features(X, dataset.Y, n_bins=n_bins, min_bin_count=min_bin_count,
                                    strategy=strategy, client=client, **params)
    finally:
        if client is not None:
            client.close()
    selected = keep[selection.selected]
    report = _report(selection.result, selected, [names[i] for i in selected], params,
                     selection.seconds, selection.feature_relevance, selection.pair_distances)
    report.update(dataset=dataset.name, n_samples=dataset.n_samples,
                  n_features=dataset.n_features, n_labels=dataset.n_labels,
                  timings={k: round(v, 4) for k, v in selection.timings.items()})
    if export:
        from coreselect.io import export_columns

        export_columns(dataset, selected, export)
        report["export"] = str(export)
    return report


def _warm_up() -> None:
    try:
        from coreselect.core.entropy import warm_up

        warm_up()
    except Exception:  # noqa: BLE001 - warming is an optimisation; the real call reports errors
        pass


def _select_store(data, params, scheduler):
    from coreselect.distributed import select_store
    from coreselect.store import open_store

    store = open_store(data)
    started = time.perf_counter()
    result = select_store(store, scheduler=scheduler, **params)
    seconds = time.perf_counter() - started
    names = [store.feature_names[i] for i in result.selected]
    report = _report(result, result.selected, names, params, seconds, None, result.pair_distances)
    report.update(dataset=str(data), n_samples=store.n_samples, n_features=store.n_features,
                  n_labels=store.n_labels)
    return report


def _report(result, selected, names, params, seconds, feature_relevance, pair_distances) -> dict:
    import numpy as np

    pair = np.asarray(pair_distances)
    k = len(selected)
    mean_dist = (pair.sum(axis=1) / (k - 1)) if k > 1 else np.zeros(k)
    report = {
        "selected": [int(i) for i in selected],
        "names": [str(n) for n in names],
        "objective": float(result.objective),
        "relevance": float(result.relevance),
        "diversity": float(result.diversity),
        "k": params["k"],
        "lam": params["lam"],
        "p": params["p"],
        "relevance_kind": params["relevance"],
        "mode": params["mode"],
        "seconds": round(float(seconds), 4),
        "mean_distance": [round(float(x), 6) for x in mean_dist],
    }
    if feature_relevance is not None:
        report["feature_relevance"] = [round(float(x), 6) for x in feature_relevance]
    for key in ("partitions", "coreset_size", "engine", "parts", "union"):
        value = getattr(result, key, None)
        if value is not None:
            report[key] = _jsonable(value)
    return report


def _jsonable(value):
    import dataclasses

    import numpy as np

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _table(report: dict) -> str:
    rows = [f"{'rank':>4}  {'index':>7}  {'relevance':>9}  {'mean dist':>9}  name"]
    rel = report.get("feature_relevance") or [math.nan] * len(report["selected"])
    for rank, (idx, name, r, md) in enumerate(
        zip(report["selected"], report["names"], rel, report["mean_distance"]), start=1
    ):
        rows.append(f"{rank:>4}  {idx:>7}  {r:>9.4f}  {md:>9.4f}  {name}")
    rows.append("")
    rows.append(
        f"objective h = {report['objective']:.4f}   relevance g = {report['relevance']:.4f}   "
        f"diversity D = {report['diversity']:.4f}   ({report['mode']}, k={report['k']}, "
        f"lam={report['lam']}, p={report['p']}, {report['relevance_kind']}; "
        f"{report['seconds']:.3f} s selection)"
    )
    return "\n".join(rows)
