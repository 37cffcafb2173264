# mypy: disallow-untyped-calls=False
"""The gateway as a tornado application: served alone (``zarrlake serve``) or mounted in
another tornado server (the dashboard's) through :func:`routes`."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop
from tornado.netutil import bind_sockets
from tornado.web import Application, RequestHandler

from zarrlake.errors import InvalidInputError
from zarrlake.gateway.handler import GatewayHandler, Settings
from zarrlake.gateway.versions import Lake

__all__ = ["Served", "make_app", "routes", "serve"]

log = logging.getLogger("zarrlake.gateway")
MAX_BODY = 64 * 1024  # a write is refused anyway: never buffer a large upload first


def routes(
    lake: Lake,
    prefix: str = "",
    *,
    token: str | None = None,
    cors: tuple[str, ...] | list[str] = (),
    consolidated: bool = True,
    outer: str = "",
) -> list[tuple[str, type[RequestHandler], dict[str, Any]]]:
    """Tornado URL rules serving ``lake`` under ``prefix`` (``""`` or ``"/zarr"``).

    ``outer`` is a prefix that the server adds to every rule itself (Bokeh's ``prefix``):
    the rules leave it out, the gateway's links and paths include it.
    """
    prefix = _clean(prefix)
    if token is not None and (not isinstance(token, str) or len(token) < 8):
        raise InvalidInputError("a gateway token must be a string of at least 8 characters")
    settings = Settings(lake, _clean(outer) + prefix, token, tuple(cors), consolidated)
    pattern = f"{prefix}/.*" if prefix else "/.*"
    rules: list[tuple[str, type[RequestHandler], dict[str, Any]]] = [
        (pattern, GatewayHandler, {"settings": settings})
    ]
    if prefix:
        rules.append((prefix, GatewayHandler, {"settings": settings}))
    return rules


def _clean(prefix: str) -> str:
    return "/" + prefix.strip("/") if prefix.strip("/") else ""


def _log_request(handler: RequestHandler) -> None:
    status = handler.get_status()
    # a missing key is ordinary in Zarr (a chunk never written reads as the fill value)
    level = logging.INFO if status < 400 or status == 404 else logging.WARNING
    level = logging.ERROR if status >= 500 else level
    ms = 1000.0 * handler.request.request_time()
    # the path alone: a query may carry the token
    log.log(level, "%d %s %s %.1fms", status, handler.request.method, handler.request.path, ms)


def make_app(lake: Lake, **kwargs: Any) -> Application:
    """A tornado application serving ``lake`` at the root (``kwargs`` as :func:`routes`)."""
    rules = routes(lake, **kwargs)
    return Application(
        rules,
        log_function=_log_request,
        # what matches no rule (a request target that is not a path) gets our short answers
        default_handler_class=GatewayHandler,
        default_handler_args=rules[0][2],
    )


@dataclass
class Served:
    """A running gateway: its address, and ``stop()`` (safe to call from any thread)."""

    url: str
    port: int
    stop: Callable[[], None]


def serve(
    lake: Lake,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    cors: tuple[str, ...] | list[str] = (),
    consolidated: bool = True,
    threads: int = 8,
    ready: Callable[[Served], None] | None = None,
) -> None:
    """Serve ``lake`` until stopped. Blocks.

    Binds ``host`` (default loopback only); ``port=0`` picks a free port. ``ready`` is
    called with a :class:`Served` once the server listens. ``threads`` read chunks and ask
    the catalog concurrently.
    """
    app = make_app(lake, token=token, cors=cors, consolidated=consolidated)
    if threading.current_thread() is not threading.main_thread():
        asyncio.set_event_loop(asyncio.new_event_loop())
    loop = IOLoop.current()
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="zarrlake-gateway")
    asyncio.get_event_loop().set_default_executor(pool)
    sockets = bind_sockets(port, host)
    server = HTTPServer(app, max_body_size=MAX_BODY, idle_connection_timeout=60)
    server.add_sockets(sockets)
    bound = sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"

    def stop() -> None:
        def halt() -> None:
            server.stop()
            loop.stop()

        loop.add_callback(halt)

    if ready is not None:
        ready(Served(url, bound, stop))
    try:
        loop.start()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        loop.close(all_fds=False)
        for s in sockets:
            s.close()
