"""``coreselect datasets``: list, fetch and inspect datasets."""

from __future__ import annotations

import json
from pathlib import Path

import click

from coreselect.errors import InputError

from coreselect.cli._common import (
    LABELS_HELP, handle_errors, header_option, log_to_stderr, progress_bar, quiet_option,
    refuse_header_off_csv, verbose_option,
)


_WHERE = """
\b
Where a dataset NAME's files are found, in order (paths keep the mirror layout,
e.g. mulan/emotions/emotions.arff):
  $COREDATA          a local copy of the datasets (offline; checked by SHA-256)
  the cache          $COREDATA_HOME, else $XDG_CACHE_HOME/coreselect, else ~/.cache/coreselect
  a download         from $COREDATA_MIRROR if set (https://host/path, or a folder:
                     COREDATA_MIRROR=file:///path/to/data), else from the upstream hosts
"""


@click.group("datasets", help="List, download and inspect multi-label datasets.\n" + _WHERE)
def datasets_cmd() -> None:
    pass


#: What the status column of `datasets list` says, and what each word means.
STATUS_WORDS = {
    "local": "its files are in $COREDATA (offline)",
    "cached": "its files are in the download cache",
    "download": "downloaded on first use, checked by SHA-256",
    "unchecked": "no checksum known: `datasets fetch` needs --no-verify",
    "generated": "made in memory (the paper's Synthesized data; no file)",
}


@datasets_cmd.command("list")
@click.option("--json", "as_json", is_flag=True,
              help="JSON Lines: one JSON object per dataset, one per line.")
@quiet_option
@verbose_option
@handle_errors
def list_cmd(as_json: bool, quiet: bool, verbose: bool) -> None:
    """Show the datasets that `select NAME`, `evaluate NAME`, `fetch` and `load` know (names
    match in any case).

    Status: local (every file is in $COREDATA), cached (in the download cache), download
    (fetched on first use, checked by SHA-256), unchecked (no checksum known: fetch needs
    --no-verify), generated (synthesized: made in memory)."""
    from coreselect.datasets.fetch import is_cached, is_local
    from coreselect.datasets.registry import REGISTRY

    if verbose:
        log_to_stderr()
    rows = [_synthesized_row()]
    for info in REGISTRY.values():
        local, cached = is_local(info), is_cached(info)
        status = ("local" if local else "cached" if cached
                  else "download" if info.verified else "unchecked")
        rows.append(
            {
                "name": info.name,
                "features": info.features,
                "instances": info.instances,
                "labels": info.labels,
                "cardinality": info.cardinality,
                "size": info.size,
                "format": info.format,
                "verified": info.verified,
                "local": local,
                "cached": cached,
                "status": status,
                "source": info.source,
            }
        )
    if as_json:
        for r in rows:
            click.echo(json.dumps(r))
        return
    head = (f"{'name':<13} {'features':>8} {'instances':>9} {'labels':>6} {'card.':>7} "
            f"{'size':<19} {'status':<9} source")
    click.echo(head)
    for r in rows:
        card = f"{r['cardinality']:.3f}" if r["cardinality"] is not None else "?"
        click.echo(
            f"{r['name']:<13} {r['features']:>8} {r['instances']:>9} {r['labels']:>6} {card:>7} "
            f"{r['size']:<19} {r['status']:<9} {r['source']}"
        )
    shown = dict.fromkeys(r["status"] for r in rows)
    click.echo("\nstatus: " + "; ".join(f"{w}: {STATUS_WORDS[w]}" for w in shown))


def _synthesized_row() -> dict:
    """The built-in generated dataset, as its defaults make it (no file: nothing to fetch;
    made here in a few milliseconds, so that its counts are its own)."""
    from coreselect.datasets.synthetic import make_synthesized

    ds = make_synthesized()
    return {"name": "synthesized", "features": ds.n_features, "instances": ds.n_samples,
            "labels": ds.n_labels, "cardinality": round(float(ds.Y.sum(axis=1).mean()), 4),
            "size": "in memory", "format": "generated", "verified": True, "local": True,
            "cached": False, "status": "generated",
            "source": "the paper's Synthesized data, Section 5 (coreselect.datasets.synthetic)"}


class _Bar:
    """Adapts the fetch progress callback to one tqdm bar per file."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None
        self.downloaded: set[str] = set()  # registry paths of the files fetched by this run

    def __call__(self, event, f, n) -> None:
        if event == "start":
            self.downloaded.add(f.path)
            self.bar = progress_bar(total=n or 0, desc=f.path.rsplit("/", 1)[-1], enabled=self.enabled)
        elif event == "update" and self.bar is not None:
            self.bar.update(n)
        elif event == "end" and self.bar is not None:
            self.bar.close()
            self.bar = None


@datasets_cmd.command("fetch", help="""Make dataset NAME available on this machine and print its data files.

Files already in $COREDATA or in the cache are used as they are (no network); the others
are downloaded into the cache, checked by SHA-256, with a deadline and a size cap.
""" + _WHERE)
@click.argument("name")
@click.option("--no-verify", is_flag=True, help="Cache files even without a matching SHA-256 (unsafe).")
@click.option("--force", is_flag=True, help="Download again into the cache even when a copy exists.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds to wait for a connection or for each piece of data.")
@click.option("--deadline", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds one file may take in all [default: 60 + 20 per MB].")
@quiet_option
@verbose_option
@handle_errors
def fetch_cmd(name: str, no_verify: bool, force: bool, timeout: float, deadline: float | None, quiet: bool,
              verbose: bool) -> None:
    from coreselect.datasets.fetch import fetch

    if verbose:
        log_to_stderr()
    if name.strip().lower() == "synthesized":  # listed, but made in memory: no file
        if not quiet:
            click.echo("coreselect: synthesized is generated in memory when used (select, "
                       "evaluate, load): there is nothing to fetch", err=True)
        return
    if force:
        _check_force_targets(name)
    bar = _Bar(not quiet)
    paths = fetch(name, verify=not no_verify, progress=bar, force=force, timeout=timeout,
                  deadline=deadline)
    if not quiet:
        note = _where_from(name, paths, bar.downloaded)
        if note:
            click.echo(f"coreselect: {note}", err=True)
    for p in paths:
        click.echo(str(p))


def _where_from(name: str, paths: list, downloaded: set[str]) -> str:
    """Which of the files came from a copy already on this machine (no download): one line."""
    from coreselect.datasets.fetch import cache_dir, coredata_dir
    from coreselect.datasets.registry import get

    info = get(name)
    local, cache = coredata_dir(), cache_dir()
    here = [(f, p) for f, p in zip(info.data, paths) if f not in downloaded]
    if not here:
        return ""

    def under(p, folder) -> bool:
        return folder is not None and Path(p).resolve().is_relative_to(Path(folder).resolve())

    in_local = [f for f, p in here if under(p, local)]
    in_cache = [f for f, p in here if f not in in_local and under(p, cache)]
    parts = []
    if in_local:
        parts.append(f"{len(in_local)} file(s) from the local copy in $COREDATA ({local})")
    if in_cache:
        parts.append(f"{len(in_cache)} file(s) from the cache ({cache})")
    rest = "nothing downloaded" if len(here) == len(paths) else (
        f"{len(paths) - len(here)} downloaded")
    return f"{info.name}: used {' and '.join(parts)}; {rest}" if parts else ""


def _check_force_targets(name: str) -> None:
    """--force downloads every file into the cache: refuse when a cache file is the
    $COREDATA copy it would replace (COREDATA_HOME=$COREDATA, or a link into it)."""
    from coreselect.datasets.fetch import cache_dir, coredata_dir
    from coreselect.datasets.registry import find
    from coreselect.io.files import check_outputs

    info, local = find(name), coredata_dir()
    if info is None or local is None:
        return  # the fetch reports an unknown name
    cache = cache_dir()
    for f in info.files:
        check_outputs({f"$COREDATA's {f.path}": local / f.path}, {f"the cache's {f.path}": cache / f.path})


@datasets_cmd.command("info")
@click.argument("data")
@click.option("--labels", "labels", default=None, help=LABELS_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--missing", type=click.Choice(["error", "bin"]), default=None,
              help="ARFF '?': an error (default) or its own category.")
@header_option
@quiet_option
@verbose_option
@handle_errors
def info_cmd(data: str, labels: str | None, as_json: bool, missing: str | None, quiet: bool,
             verbose: bool, header: bool | None) -> None:
    """Print statistics of DATA (a file, a path under $COREDATA, a registry name or 'synthesized')."""
    from coreselect.datasets.info import dataset_info, format_info
    from coreselect.datasets.load import load

    if verbose:
        log_to_stderr()
    refuse_header_off_csv(data, header)
    options = {"missing": missing} if missing else {}
    if header is not None:
        options["header"] = header
    ds = load(data, labels=labels, **options)
    fmt = str(getattr(ds.metadata, "format", None) or "")
    if missing is not None and fmt and not fmt.startswith("arff"):
        # Only ARFF's '?' has a choice: elsewhere the option would be accepted and ignored.
        raise InputError(f"--missing applies to ARFF files only (their '?' values); {data} is "
                         f"a {fmt} file, whose missing values are always an error: leave "
                         "--missing out")
    info = dataset_info(ds)
    click.echo(json.dumps(info) if as_json else format_info(info))
