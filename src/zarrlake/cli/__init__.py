"""The ``zarrlake`` command.

Each subcommand group is a module with a ``register(subparsers)`` function; this module only
assembles them and turns our errors into a message and exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

import zarrlake
from zarrlake.errors import ZarrlakeError

__all__ = ["main"]

# Subcommand modules, in the order their commands appear in ``zarrlake --help``.
COMMAND_MODULES = ("zarrlake.cli.basic", "zarrlake.cli.dashboard")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="zarrlake", description="Versioned, transactional Zarr v3 repos."
    )
    p.add_argument("--version", action="version", version=f"zarrlake {zarrlake.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ZarrlakeError as exc:
        print(f"zarrlake: error [{exc.kind}]: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
