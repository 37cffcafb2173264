"""``zarrlake demo`` and ``zarrlake ui``: the demo lake and the dashboard."""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
from pathlib import Path
from typing import Any

from zarrlake.cli._common import add_repo_args, open_repo
from zarrlake.demo import DEFAULT_PATH

__all__ = ["register"]


def _serve(opener: Any, args: argparse.Namespace, *, allow_writes: bool = False) -> int:
    try:
        from zarrlake.ui.dashboard import Served, serve
    except ImportError as exc:  # the ui extra is missing
        print(f"zarrlake: the dashboard needs the ui extra ({exc})", file=sys.stderr)
        return 1
    token = secrets.token_urlsafe(16) if allow_writes else None

    def ready(s: Served) -> None:
        print(f"dashboard at {s.url}  (Ctrl-C to stop)", flush=True)
        if token:
            print(f"writes allowed; write token: {token}", flush=True)
        else:
            print(
                "read-only (start with --allow-writes to create branches, tags, merges)", flush=True
            )

    with contextlib.suppress(KeyboardInterrupt):
        serve(
            opener,
            host=args.host,
            port=args.port,
            show=args.show,
            allow_writes=allow_writes,
            token=token,
            ready=ready,
        )
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    """Build the demo lake (or reuse the one at PATH) and serve the dashboard on it."""
    from zarrlake.demo import build_demo_report, opener

    path = Path(args.path)
    exists = path.exists() and any(path.iterdir())
    if exists and not args.force:
        if not (path / "catalog.db").exists():
            print(f"{path} exists and is not a zarrlake lake; pick another PATH", file=sys.stderr)
            return 2
        print(f"{path} already holds a lake (--force rebuilds the demo)", flush=True)
    else:
        print(
            ("rebuilding" if exists else "building") + f" the demo lake at {path} ...", flush=True
        )
        report = build_demo_report(
            path, force=args.force, progress=lambda line: print(line, flush=True)
        )
        for what, session in report.sessions.items():
            print(f"  {what:<28} {session}", flush=True)
        print(f"demo lake at {report.path}", flush=True)
    if args.no_serve:
        return 0
    open_page = opener(path)  # every page: a new demo session if the last one expired
    open_page()
    print(f"serving {path}", flush=True)
    return _serve(open_page, args, allow_writes=args.allow_writes)


def _cmd_ui(args: argparse.Namespace) -> int:
    """Serve the dashboard of a lake. The lake is opened here first, so a missing one is an
    error on the command line, not a server that shows only an error page; then once per
    page."""
    open_repo(args)
    return _serve(lambda: open_repo(args), args, allow_writes=args.allow_writes)


def _server_args(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--port", type=int, default=5006, help="port (0: any free port)")
    sp.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    sp.add_argument("--show", action="store_true", help="open a browser")


def _allow_writes(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--allow-writes",
        action="store_true",
        help="enable branch/tag/revert/merge buttons; prints the token they require",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo",
        help="build a demo climate lake and serve the dashboard on it",
        description="Build a demo lake with a history (branches, a merge, a revert, a tag, "
        "an open and an expired session) in PATH, or reuse the one there, and serve the "
        "dashboard on it. Each page opened starts a new demo session if the last one expired.",
    )
    demo.add_argument(
        "path",
        nargs="?",
        default=DEFAULT_PATH,
        metavar="PATH",
        help=f"where the demo lake goes (default ./{DEFAULT_PATH})",
    )
    demo.add_argument("--force", action="store_true", help="rebuild the demo lake at PATH")
    demo.add_argument("--no-serve", action="store_true", help="only build the lake")
    _server_args(demo)
    _allow_writes(demo)
    demo.set_defaults(func=_cmd_demo)

    ui = sub.add_parser("ui", help="serve the dashboard of a lake")
    add_repo_args(ui)
    _server_args(ui)
    _allow_writes(ui)
    ui.set_defaults(func=_cmd_ui)
