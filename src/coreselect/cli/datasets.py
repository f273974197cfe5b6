"""``coreselect datasets``: list, fetch and inspect datasets."""

from __future__ import annotations

import json

import click

from coreselect.cli._common import handle_errors, progress_bar


@click.group("datasets")
def datasets_cmd() -> None:
    """List, download and inspect multi-label datasets."""


@datasets_cmd.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per dataset.")
@handle_errors
def list_cmd(as_json: bool) -> None:
    """Show the standard benchmarks that `fetch` and `load` know."""
    from coreselect.datasets.fetch import is_cached
    from coreselect.datasets.registry import REGISTRY

    rows = []
    for info in REGISTRY.values():
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
                "cached": is_cached(info),
                "source": info.source,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    head = f"{'name':<13} {'features':>8} {'instances':>9} {'labels':>6} {'card.':>7} {'size':<19} {'':<6} source"
    click.echo(head)
    for r in rows:
        flags = ("cached" if r["cached"] else "") or ("" if r["verified"] else "no-sha")
        card = f"{r['cardinality']:.3f}" if r["cardinality"] is not None else "?"
        click.echo(
            f"{r['name']:<13} {r['features']:>8} {r['instances']:>9} {r['labels']:>6} {card:>7} "
            f"{r['size']:<19} {flags:<6} {r['source']}"
        )


class _Bar:
    """Adapts the fetch progress callback to one tqdm bar per file."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None

    def __call__(self, event, f, n) -> None:
        if event == "start":
            self.bar = progress_bar(total=n or 0, desc=f.path.rsplit("/", 1)[-1], enabled=self.enabled)
        elif event == "update" and self.bar is not None:
            self.bar.update(n)
        elif event == "end" and self.bar is not None:
            self.bar.close()
            self.bar = None


@datasets_cmd.command("fetch")
@click.argument("name")
@click.option("--no-verify", is_flag=True, help="Cache files even without a matching SHA-256 (unsafe).")
@click.option("--force", is_flag=True, help="Download again even when cached.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@handle_errors
def fetch_cmd(name: str, no_verify: bool, force: bool, quiet: bool) -> None:
    """Download dataset NAME into the cache (verified by SHA-256) and print its path."""
    from coreselect.datasets.fetch import fetch

    paths = fetch(name, verify=not no_verify, progress=_Bar(not quiet), force=force)
    for p in paths:
        click.echo(str(p))


@datasets_cmd.command("info")
@click.argument("data")
@click.option("--labels", "labels", default=None, help="Mulan XML (ARFF) or label columns (CSV/Parquet).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--missing", type=click.Choice(["error", "bin"]), default=None,
              help="ARFF '?': an error (default) or its own category.")
@handle_errors
def info_cmd(data: str, labels: str | None, as_json: bool, missing: str | None) -> None:
    """Print statistics of DATA (a file, a registry name or 'synthesized')."""
    from coreselect.datasets.info import dataset_info, format_info
    from coreselect.datasets.load import load

    options = {"missing": missing} if missing else {}
    ds = load(data, labels=labels, **options)
    info = dataset_info(ds)
    click.echo(json.dumps(info) if as_json else format_info(info))
