"""The JupyterLab side of zarrlake: a jupyter-server-proxy entry for the dashboard.

jupyter-server-proxy finds :func:`setup_zarrlake` through the ``jupyter_serverproxy_servers``
entry point, shows a launcher tile with the zarrlake icon, and on first request starts
``python -m zarrlake_jupyter.serve`` on a free port, proxied at ``<base_url>/zarrlake/``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["ICON", "setup_zarrlake"]

ICON = Path(__file__).parent / "icons" / "zarrlake.svg"


def _command(port: int, base_url: str) -> list[str]:
    # absolute_url=True: the proxy passes the whole path (base url included) on, so the
    # dashboard must know that prefix to build its own links and its websocket address.
    prefix = f"{base_url.rstrip('/')}/zarrlake"
    return [sys.executable, "-m", "zarrlake_jupyter.serve", "--port", str(port), "--prefix", prefix]


def setup_zarrlake() -> dict[str, Any]:
    """The server-proxy configuration of the zarrlake dashboard."""
    return {
        "command": _command,
        "absolute_url": True,
        # building the demo lake on first use takes a few seconds on a small machine
        "timeout": 120,
        "launcher_entry": {
            "enabled": True,
            "title": "zarrlake dashboard",
            "icon_path": str(ICON),
            "path_info": "zarrlake/",
            # JupyterLab's launcher draws an icon from a URL only for its kernel categories
            # (Notebook, Console): elsewhere the tile would show no icon at all
            "category": "Notebook",
        },
        "new_browser_tab": False,
    }
