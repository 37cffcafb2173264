"""A fault-injecting HTTP proxy in front of the loopback S3 endpoint: it fails, delays or
truncates a chosen fraction of requests, so the object store meets a misbehaving network."""

from __future__ import annotations

import http.client
import random
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


class FaultyProxy:
    """Forwards to ``upstream``; each request is failed (503 SlowDown), delayed, or (for a
    response with a body) truncated with probability ``rate`` each, decided by ``seed``."""

    def __init__(self, upstream: str, rate: float, seed: int = 0, delay: float = 0.05) -> None:
        self.upstream = urlparse(upstream)
        self.rate = rate
        self.delay = delay
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.faults: Counter[str] = Counter()
        self.methods: Counter[str] = Counter()  # requests forwarded, by HTTP method
        self.requests = 0
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
        self.server.shutdown()
        self.server.server_close()

    def _draw(self, method: str) -> str | None:
        with self.lock:
            self.requests += 1
            self.methods[method] += 1
            r = self.rng.random()
        if r < self.rate:
            return "fail"
        if r < 2 * self.rate:
            return "delay"
        if r < 3 * self.rate:
            return "truncate"
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = proxy._draw(self.command)
                if fault == "fail":
                    with proxy.lock:
                        proxy.faults["fail"] += 1
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(_SLOW_DOWN)
                    return
                if fault == "delay":
                    with proxy.lock:
                        proxy.faults["delay"] += 1
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
                    with proxy.lock:
                        proxy.faults["truncate"] += 1
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
