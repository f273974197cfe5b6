"""``python -m coreselect`` and the ``coreselect`` command: the CLI, Ctrl-C included from the start."""

import sys


def run() -> None:
    """Run the CLI. A Ctrl-C while it loads, before its own handlers are in place, ends the
    run as one later does: one line on stderr and exit code 130 (nothing was written yet)."""
    try:
        from coreselect.cli import main

        main()
    except KeyboardInterrupt:
        sys.stderr.write("coreselect: interrupted\n")
        sys.stderr.flush()
        sys.exit(130)


if __name__ == "__main__":
    run()
