"""``zarrlake import SOURCE``: bring an existing Zarr store (v2 or v3, a directory or an
``s3://`` URL) into a lake in one commit, its chunks referenced where they are or copied."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from zarrlake.cli._common import (
    _add_location_options,
    add_progress_option,
    default_lake,
    open_repo,
    parse_options,
)
from zarrlake.cli._output import emit_json

if TYPE_CHECKING:
    import zarrlake

__all__ = ["register"]

_ZARR_ROOTS = ("zarr.json", ".zgroup", ".zarray")


def _is_icechunk(source: str) -> bool:
    """Whether ``source`` is a local Icechunk repository (its snapshots, and no Zarr
    metadata at its root)."""
    return os.path.isdir(os.path.join(source, "snapshots")) and not any(
        os.path.exists(os.path.join(source, f)) for f in _ZARR_ROOTS
    )


def _import_icechunk(args: argparse.Namespace, repo: zarrlake.Repo) -> int:
    import zarrlake
    from zarrlake.virtual.icechunk_storage import icechunk_storage

    storage = icechunk_storage(args.source, parse_options(args.source_options) or None)
    result = zarrlake.import_icechunk(repo, storage, ref_prefix=args.ref_prefix)
    if args.json:
        emit_json(
            {"commits": result.commits, "branches": result.branches, "tags": result.tags,
             "copied": result.copied, "referenced": result.referenced}
        )  # fmt: skip
        return 0
    refs = [*result.branches, *(f"tag {t}" for t in result.tags)]
    n = len(result.commits)
    print(
        f"Imported Icechunk repository {args.source}: {n} new commit{'' if n == 1 else 's'}, "
        f"{result.copied} chunks copied, {result.referenced} referenced; "
        + (f"set {', '.join(refs)}." if refs else "no branch or tag changed.")
    )
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    import zarrlake
    from zarrlake.virtual.zarr_import import store_url

    args.path = args.lake or default_lake()
    repo = open_repo(args)
    if args.icechunk or ("://" not in args.source and _is_icechunk(args.source)):
        return _import_icechunk(args, repo)
    options = parse_options(args.source_options) or None
    if args.allow and not args.copy:
        repo.allow_virtual_source(store_url(args.source) + "/", **(options or {}))
    commit = zarrlake.import_zarr(
        repo,
        args.source,
        branch=args.branch,
        message=args.message,
        copy=args.copy,
        storage_options=options,
        progress=args.progress,
    )
    info = repo.commit_info(commit)
    chunks = int(info.metadata.get("chunks", 0))
    how = "copied into the lake" if args.copy else "referenced where they are"
    if args.json:
        emit_json(
            {"commit": commit, "branch": args.branch, "chunks": chunks, "copied": args.copy,
             "source": info.metadata.get("imported_from"),
             "zarr_format": info.metadata.get("zarr_format")}
        )  # fmt: skip
    else:
        print(
            f"Imported {args.source} (Zarr v{info.metadata.get('zarr_format')}) into branch "
            f"{args.branch!r} as commit {commit[:12]}: {chunks} chunks {how}."
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "import",
        help="bring an existing Zarr store (v2 or v3) or Icechunk repository into a lake",
        description="Import the Zarr store at SOURCE (a directory or an s3:// URL; Zarr v2 "
        "metadata is converted to v3) into --branch in one commit. By default every chunk "
        "is a reference to the store's own object, which must lie under a location the repo "
        "allows (see --allow); with --copy the chunks are copied into the lake. An Icechunk "
        "repository (a directory, found by its layout, or s3://bucket/prefix with "
        "--icechunk) is imported with its history: every snapshot a commit, its branches and "
        "tags (named with --ref-prefix in front). What cannot be imported changes nothing.",
    )
    sp.add_argument(
        "source",
        metavar="SOURCE",
        help="the Zarr store or Icechunk repository: a directory or s3:// URL",
    )
    _add_location_options(sp)
    sp.add_argument("--branch", default="main", help="the branch to commit to (default main)")
    sp.add_argument("--message", "-m", default=None, help="the commit message")
    sp.add_argument("--copy", action="store_true", help="copy the chunks into the lake")
    sp.add_argument(
        "--allow",
        action="store_true",
        help="allow the repo to read SOURCE's location first (repo.allow_virtual_source)",
    )
    sp.add_argument(
        "--source-option",
        action="append",
        metavar="KEY=VALUE",
        dest="source_options",
        help="fsspec option for SOURCE, e.g. endpoint_url=... (repeatable; never printed)",
    )
    sp.add_argument(
        "--icechunk",
        action="store_true",
        help="SOURCE is an Icechunk repository (found by itself in a local directory)",
    )
    sp.add_argument(
        "--ref-prefix",
        default="",
        help="an Icechunk repository's branches and tags are named with this in front",
    )
    add_progress_option(sp, "a progress bar")
    sp.add_argument("--json", action="store_true", help="print the result as JSON")
    sp.set_defaults(func=_cmd_import)
