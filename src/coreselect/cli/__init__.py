"""The ``coreselect`` command line.

Subcommands live in their own modules and are imported only when used, so that
``coreselect --help`` stays fast. Commands parse arguments and delegate; they hold no logic.
"""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute"
_COMMANDS = {
    "select": "coreselect.cli.select:select_cmd",
    "datasets": "coreselect.cli.datasets:datasets_cmd",
    "store": "coreselect.cli.store:store_cmd",
    "evaluate": "coreselect.cli.evaluate:evaluate_cmd",
    "bench": "coreselect.cli.bench:bench_cmd",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = _COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="coreselect")
def main() -> None:
    """Multi-label feature selection: relevance (submodular) plus diversity, on huge data."""


if __name__ == "__main__":  # pragma: no cover
    main()
