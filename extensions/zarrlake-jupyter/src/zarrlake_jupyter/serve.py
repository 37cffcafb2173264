"""``python -m zarrlake_jupyter.serve``: the dashboard behind a Jupyter server's proxy.

Unlike ``zarrlake ui`` (which serves at the root of its own address), this serves under a
path prefix and accepts websocket connections from whatever origin the Jupyter page has: the
browser only ever talks to the Jupyter server, which forwards to this process on loopback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["default_lake", "main"]


def default_lake() -> Path:
    """``$ZARRLAKE_LAKE``, else ``~/demo-lake``."""
    return Path(os.environ.get("ZARRLAKE_LAKE") or Path.home() / "demo-lake").expanduser()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zarrlake_jupyter.serve", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", default="", help="path the proxy serves us at, e.g. /zarrlake")
    parser.add_argument(
        "--lake", type=Path, default=None, help="lake directory (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    lake = (args.lake or default_lake()).expanduser()

    from zarrlake.demo import opener
    from zarrlake.ui.dashboard import Served, serve

    if not (lake / "catalog.db").exists():
        if lake.exists() and any(lake.iterdir()):
            print(f"{lake} exists and holds no zarrlake lake", file=sys.stderr)
            return 2
        from zarrlake.demo import build_demo

        print(f"building the demo lake at {lake} ...", flush=True)
        build_demo(lake)

    def ready(served: Served) -> None:
        print(f"zarrlake dashboard of {lake} on {served.url}", flush=True)

    # The repo is opened per browser session, so a lake removed later is a message on the
    # page, not a crash, and the demo lake gets a new open session when the last expired (a
    # live countdown on every page). Any origin may connect: the browser only talks to the
    # Jupyter server, which forwards to this process on loopback.
    serve(
        opener(lake),
        port=args.port,
        prefix=args.prefix,
        websocket_origin="*",
        ready=ready,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
