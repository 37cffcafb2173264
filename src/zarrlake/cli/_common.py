"""What every subcommand shares: the arguments that name a lake, and opening it."""

from __future__ import annotations

import argparse

import zarrlake

__all__ = ["add_repo_args", "open_repo"]


def add_repo_args(sp: argparse.ArgumentParser) -> None:
    """Add ``PATH`` (embedded default) or ``--catalog URL --name NAME``."""
    sp.add_argument("path", nargs="?", default="my-lake", help="repo directory (embedded default)")
    sp.add_argument("--catalog", help="catalog URL instead of a directory")
    sp.add_argument("--name", default="default", help="repo name in the catalog")


def open_repo(args: argparse.Namespace) -> zarrlake.Repo:
    """Open the lake that ``add_repo_args`` named."""
    if args.catalog:
        return zarrlake.Repo.open(catalog=args.catalog, name=args.name)
    return zarrlake.Repo.open(args.path)
