"""The ``coreselect`` command line.

Subcommands live in their own modules and are imported only when used, so that
``coreselect --help`` stays fast. Commands parse arguments and delegate; they hold no logic.
Every usage error is one line on stderr with exit code 2.
"""

from __future__ import annotations

import importlib
import os
import sys

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
def cli() -> None:
    """Multi-label feature selection: relevance (submodular) plus diversity, on huge data."""
    from coreselect.cli._common import quiet_dask

    quiet_dask()


def main(args: list[str] | None = None) -> None:
    """Entry point: run the CLI; usage errors become one line on stderr and exit code 2."""
    from coreselect.cli._common import finished, install_process_signals

    # The `coreselect` process itself (args None: the entry point, `python -m coreselect`):
    # Ctrl-C / SIGTERM handlers for its whole life, so that an interrupted run exits 130 / 143
    # leaving nothing new, and a finished one ends with its code. Calls with a list of
    # arguments (tests, scripts) keep their own handlers.
    process = args is None
    if process:
        install_process_signals()
    # Likewise the Dask logging variables a command sets for its own clients and workers
    # (quiet_dask, -v): a call from a script leaves the caller's environment as it found it,
    # or every process the caller starts later would inherit them.
    dask_logging = None if process else {k: v for k, v in os.environ.items()
                                         if k.startswith("DASK_LOGGING")}
    try:
        try:
            code = cli.main(args=args, prog_name="coreselect", standalone_mode=False)
        except click.exceptions.Abort as exc:
            if isinstance(exc.__context__, KeyboardInterrupt):  # a signal outside a command's body
                from coreselect.cli._common import report_exception

                report_exception(exc.__context__)
            click.echo("coreselect: aborted", err=True)
            sys.exit(1)
        except click.ClickException as exc:
            msg = " ".join(exc.format_message().split())
            click.echo(f"coreselect: error: {msg}", err=True)
            sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except SystemExit as exc:
        # Every way out, a command's own exit and the refusals above alike: the process ends
        # with this code (a signal from now on included), not killed by a signal at teardown.
        if process:
            finished(exc.code if isinstance(exc.code, int) else 1)
        raise
    finally:
        if dask_logging is not None:
            for key in [k for k in os.environ if k.startswith("DASK_LOGGING")]:
                if key not in dask_logging:
                    del os.environ[key]
            os.environ.update(dask_logging)
    code = code if isinstance(code, int) else 0
    if process:
        finished(code)  # the run is done: a signal now ends it with this code
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
