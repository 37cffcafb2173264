"""``zarrlake serve``: every version of a lake, read-only over HTTP (the Zarr v3 gateway)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING

from zarrlake.cli._common import add_repo_args, lake_url, parse_options, remember_secret

if TYPE_CHECKING:
    from zarrlake.gateway import Served

__all__ = ["register"]


def _cmd_serve(args: argparse.Namespace) -> int:
    """Serve the lake's repos at http://HOST:PORT/<repo>/<ref>/<zarr key> until Ctrl-C."""
    try:
        from zarrlake.gateway import Lake, serve
    except ImportError as exc:  # the gateway extra is missing
        print(f"zarrlake: the gateway needs the gateway extra ({exc})", file=sys.stderr)
        return 1
    from zarrlake.urls import CATALOG_FILE, VersionURL

    options = parse_options(args.storage_options)
    if args.token:
        remember_secret(args.token)
    url = lake_url(args)
    if args.catalog:
        url = VersionURL(args.catalog, args.name)
    elif url is None:
        location = os.path.abspath(args.path)
        catalog = "sqlite:///" + os.path.join(location, CATALOG_FILE)
        url = VersionURL(catalog, args.name, location=location)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log = logging.getLogger("zarrlake.gateway")
    log.addHandler(handler)
    log.setLevel(logging.INFO if args.access_log else logging.WARNING)
    lake = Lake.for_url(url, options)
    home = url.open(storage_options=options)  # fails now, clearly, without such a lake
    branch = "main" if "main" in home.branches() else next(iter(home.branches()), "main")

    def ready(s: Served) -> None:
        print(f"zarr gateway at {s.url}  (read-only; Ctrl-C to stop)", flush=True)
        print(f"  every version: {s.url}{url.repo}/<branch, tag or commit>/<zarr key>", flush=True)
        print(f"  zarr.open_group({s.url + url.repo + '/' + branch!r}, mode='r')", flush=True)
        if args.token:
            print("  a token is required: Authorization: Bearer TOKEN", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        serve(
            lake,
            host=args.host,
            port=args.port,
            token=args.token,
            cors=args.cors or (),
            consolidated=not args.no_consolidated,
            threads=args.threads,
            ready=ready,
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "serve",
        help="serve every branch, tag and commit read-only over HTTP (a Zarr v3 gateway)",
        description="Serve the lake's repos at http://HOST:PORT/<repo>/<ref>/<zarr key>, so "
        "that any Zarr v3 reader (zarr-python, xarray, zarr.js, viewers) reads one version. "
        "Writes are refused. See docs/reach.md.",
    )
    add_repo_args(sp)
    sp.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    sp.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine)"
    )
    sp.add_argument(
        "--token",
        help="require this token (Authorization: Bearer TOKEN, or ?token=TOKEN); never printed",
    )
    sp.add_argument(
        "--cors",
        action="append",
        metavar="ORIGIN",
        help="let browser pages of ORIGIN read (repeatable; * for any), for web viewers",
    )
    sp.add_argument(
        "--no-consolidated",
        action="store_true",
        help="serve group documents as stored, without consolidated metadata",
    )
    sp.add_argument(
        "--threads",
        type=int,
        default=8,
        metavar="N",
        help="worker threads that read chunks and ask the catalog (default 8)",
    )
    sp.add_argument(
        "--access-log",
        action="store_true",
        help="log every request to stderr (default: refusals and failures only)",
    )
    sp.set_defaults(func=_cmd_serve)
