"""A fault-injecting proxy in front of the loopback S3 endpoint, in the manner of toxiproxy.

It forwards HTTP requests to the endpoint and, per request, fails (503 SlowDown), delays or
truncates a chosen fraction of them; and, for the whole proxy at once, it can be switched
``down`` (every connection is reset as soon as it sends anything, so clients see the endpoint
vanish) or ``blackhole`` (connections are accepted and what they send is read, but nothing is
ever answered, as from a dead host behind a live load balancer), and ``up`` again. Requests
are counted by HTTP method, so a test can tell how many a read cost (and whether it was
retried).
"""

from __future__ import annotations

import http.client
import random
import select
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

__all__ = ["FaultyProxy"]

_SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>injected fault</Message></Error>"
)
_MODES = ("up", "down", "blackhole")


class FaultyProxy:
    """Forwards to ``upstream``; each request is failed (503 SlowDown), delayed, or (for a
    response with a body) truncated with probability ``rate`` each, decided by ``seed``; the
    whole proxy can be taken :meth:`down`, into a :meth:`blackhole`, and back :meth:`up`."""

    def __init__(
        self, upstream: str, rate: float = 0.0, seed: int = 0, delay: float = 0.05
    ) -> None:
        self.upstream = urlparse(upstream)
        self.rate = rate
        self.delay = delay
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.faults: Counter[str] = Counter()  # faults injected, by kind
        self.methods: Counter[str] = Counter()  # requests received, by HTTP method
        self.requests = 0
        self.mode = "up"
        self.changed = threading.Condition(self.lock)  # notified when the mode changes
        self.closed = False
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FaultyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # -- the switch ------------------------------------------------------------------------

    def up(self) -> None:
        """Forward again (connections held by :meth:`blackhole` are closed unanswered)."""
        self._set("up")

    def down(self) -> None:
        """Reset every connection the moment it sends anything: the endpoint is gone."""
        self._set("down")

    def blackhole(self) -> None:
        """Accept and read, never answer: requests hang until the client gives up."""
        self._set("blackhole")

    def _set(self, mode: str) -> None:
        assert mode in _MODES
        with self.changed:
            self.mode = mode
            self.changed.notify_all()

    def reset_counts(self) -> None:
        with self.lock:
            self.requests = 0
            self.methods.clear()
            self.faults.clear()

    # -- per request -----------------------------------------------------------------------

    def admit(self, method: str) -> str | None:
        """Count a request and decide its fate: ``down``, ``blackhole``, one of the random
        faults (``fail``, ``delay``, ``truncate``), or ``None`` to forward it as it is."""
        with self.lock:
            self.requests += 1
            self.methods[method] += 1
            if self.mode != "up":
                self.faults[self.mode] += 1
                return self.mode
            r = self.rng.random()
            fault = (
                "fail" if r < self.rate
                else "delay" if r < 2 * self.rate
                else "truncate" if r < 3 * self.rate
                else None
            )  # fmt: skip
            if fault is not None and fault != "truncate":
                self.faults[fault] += 1
            return fault

    def count_truncation(self) -> None:
        with self.lock:
            self.faults["truncate"] += 1

    def hold(self, conn: socket.socket) -> None:
        """Black-hole ``conn``: read and drop whatever it sends, answer nothing, until the
        proxy leaves the black-hole mode or closes (then the connection is closed)."""
        conn.setblocking(False)
        while True:
            with self.changed:
                if self.closed or self.mode != "blackhole":
                    return
            readable, _, _ = select.select([conn], [], [], 0.1)
            if readable:
                try:
                    if not conn.recv(65536):
                        return  # the client gave up
                except OSError:
                    return

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reset(self) -> None:
                # SO_LINGER 0: close with a TCP reset, as a vanished endpoint does
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True

            def _forward(self) -> None:
                fault = proxy.admit(self.command)
                if fault == "down":
                    self._reset()
                    return
                if fault == "blackhole":
                    proxy.hold(self.connection)
                    self._reset()
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if fault == "fail":
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(_SLOW_DOWN)
                    return
                if fault == "delay":
                    time.sleep(proxy.delay)
                up = proxy.upstream
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"{up.hostname}:{up.port}"
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                self.send_response(resp.status, resp.reason)
                head = self.command == "HEAD"
                for k, v in resp.getheaders():
                    if k.lower() in ("transfer-encoding", "connection"):
                        continue
                    if k.lower() == "content-length" and not head:
                        continue
                    self.send_header(k, v)
                if head:
                    self.end_headers()
                    return
                self.send_header("Content-Length", str(len(data)))
                if fault == "truncate" and len(data) > 16:
                    proxy.count_truncation()
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])  # then the connection drops
                    self.close_connection = True
                    return
                self.end_headers()
                if data:
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        return Handler
