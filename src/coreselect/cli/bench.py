"""``coreselect bench NAME [--quick] [ARGS...]``: run a benchmark script of the checkout.

The scripts live in ``benchmarks/`` at the root of a source checkout (they are not part of
the installed package). They are looked up next to the package source (an editable
install) and then in the current directory and its parents; ``$CORESELECT_BENCHMARKS``, when
set, names the folder instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from coreselect.cli._common import fail, handle_errors, quiet_option, verbose_option


def find_benchmarks() -> Path | None:
    """The ``benchmarks`` folder of the checkout, or None (e.g. in a wheel install)."""
    env = os.environ.get("CORESELECT_BENCHMARKS")
    if env:  # an explicit folder is the only candidate
        candidates = [Path(env)]
    else:
        here = Path(__file__).resolve()
        cwd = Path.cwd().resolve()
        candidates = ([p / "benchmarks" for p in here.parents]
                      + [p / "benchmarks" for p in (cwd, *cwd.parents)])
    for c in candidates:
        if (c / "_common.py").is_file():
            return c
    return None


def available(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


@click.command("bench", add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("name", required=False)
@click.option("--quick", "--smoke", "quick", is_flag=True, help="Tiny sizes (seconds).")
@click.option("--list", "list_", is_flag=True, help="List the benchmarks and exit.")
@click.option("-h", "--help", "help_", is_flag=True,
              help="This help; with NAME, the script's own options.")
@quiet_option
@verbose_option
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def bench_cmd(name, quick, list_, help_, quiet, verbose, extra):
    """Run benchmark NAME (benchmarks/NAME.py of the source checkout); it prints a Markdown
    table. Extra arguments go to the script (e.g. --out table.md: the table headed by the
    command and the date, for the docs), and every result file written is named on stderr
    (`wrote PATH`); `coreselect bench NAME --help` lists the script's own options."""
    if help_ and not name:
        click.echo(click.get_current_context().get_help())
        return
    folder = find_benchmarks()
    if folder is None:
        fail("the benchmarks folder is not available (it ships with a source checkout, not "
             "with an installed wheel); clone the repository and run from there")
    names = available(folder)
    if list_ or not name:
        if not name and not list_:
            fail(f"give a benchmark name: {', '.join(names)}")
        click.echo("\n".join(names))
        return
    if name not in names:
        fail(f"unknown benchmark {name!r}; choose one of {', '.join(names)}")
    cmd = [sys.executable, str(folder / f"{name}.py")]
    if quick:
        cmd.append("--quick")
    cmd += list(extra)
    if help_:  # after the extras: `bench NAME SUBCOMMAND --help` is the subcommand's help
        cmd.append("--help")
    env = dict(os.environ)
    if verbose:  # the script's internal errors print their traceback (coreselect's -v)
        env["CORESELECT_DEBUG"] = "1"
    if quiet:
        # Results and errors only: the script's stderr (progress, notes) is shown only when
        # it fails.
        proc = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
        code = proc.returncode
    else:
        code = subprocess.call(cmd, env=env)
    if code != 0:
        sys.exit(code)
