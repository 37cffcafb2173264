# mypy: disallow-untyped-calls=False
"""Serving the dashboard: a blocking ``serve`` the CLI runs, and tests run in a thread."""

from __future__ import annotations

import asyncio
import socket
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import panel as pn

from zarrlake.ui.dashboard.app import Dashboard, RepoSource

__all__ = ["Served", "serve"]


@dataclass
class Served:
    """A running server: its address, and ``stop()`` (safe to call from any thread)."""

    url: str
    port: int
    _stop: Callable[[], None]

    def stop(self) -> None:
        self._stop()


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


GATEWAY_PATH = "/zarr"


def _gateway_routes(repo: RepoSource, prefix: str) -> tuple[list[Any], str | None]:
    """The gateway's rules under ``/zarr`` and the path it answers at, or none without the
    gateway extra."""
    try:
        from zarrlake.gateway import Lake, routes
    except ImportError:
        return [], None
    return routes(Lake.for_repo(repo), GATEWAY_PATH, outer=prefix), prefix + GATEWAY_PATH


def serve(
    repo: RepoSource,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    show: bool = False,
    allow_writes: bool = False,
    token: str | None = None,
    ready: Callable[[Served], None] | None = None,
    prefix: str = "",
    websocket_origin: str | list[str] | None = None,
    gateway: bool = True,
) -> None:
    """Serve the dashboard of ``repo`` (a Repo, or a function opening one) until stopped.

    Blocks. ``port=0`` picks a free port; ``ready`` is called with a :class:`Served` once the
    server listens (how the CLI prints the address and how tests learn it and stop it).
    Every browser session gets its own :class:`Dashboard`. Behind a proxy, ``prefix`` is the
    path the proxy serves it at and ``websocket_origin`` the pages allowed to connect
    (default: this server's own address). With ``gateway`` (and the gateway extra), every
    version is also served read-only as Zarr v3 under ``/zarr/<repo>/<ref>/``
    (:mod:`zarrlake.gateway`), and the data page's links point there.
    """
    from tornado.ioloop import IOLoop

    # Import every page's modules now, so the first browser does not wait for them.
    import zarrlake.ui.dashboard.compare
    import zarrlake.ui.dashboard.data
    import zarrlake.ui.dashboard.history
    import zarrlake.ui.dashboard.merge
    import zarrlake.ui.dashboard.overview
    import zarrlake.ui.dashboard.sessions  # noqa: F401

    if port == 0:
        port = _free_port(host)
    # A server in a thread (tests) needs an event loop of its own.
    if threading.current_thread() is not threading.main_thread():
        asyncio.set_event_loop(asyncio.new_event_loop())
    loop = IOLoop.current()

    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    extra, mounted = _gateway_routes(repo, prefix) if gateway else ([], None)

    def app() -> Any:
        board = Dashboard(repo, allow_writes=allow_writes, token=token, gateway=mounted)
        return board.template()

    if websocket_origin is None:
        own = [f"{h}:{port}" for h in {host, "127.0.0.1", "localhost"}]
        websocket_origin = own if host not in ("0.0.0.0", "::") else "*"
    server = pn.serve(
        {"/": app},
        address=host,
        port=port,
        prefix=prefix,
        websocket_origin=websocket_origin,
        show=False,
        start=False,
        loop=loop,
        title="zarrlake",
        liveness=True,
        verbose=False,
        check_unused_sessions=2000,
        unused_session_lifetime=5000,
        extra_patterns=extra,
    )
    server.start()
    shown = "localhost" if host in ("0.0.0.0", "::") else host
    url = f"http://{shown}:{port}{prefix}/"

    def stop() -> None:
        def halt() -> None:
            server.stop()
            loop.stop()

        loop.add_callback(halt)

    if ready is not None:
        ready(Served(url, port, stop))
    if show:
        webbrowser.open(url)
    try:
        loop.start()
    finally:
        loop.close(all_fds=False)
