"""A gateway served in a thread on a free loopback port, and raw HTTP helpers for the tests."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from zarrlake.gateway import Lake, Served, serve


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return None


@contextmanager
def gateway(lake: Lake, **kwargs: Any) -> Iterator[Served]:
    """Serve ``lake`` until the block ends."""
    box: list[Served] = []
    ready = threading.Event()

    def on_ready(s: Served) -> None:
        box.append(s)
        ready.set()

    thread = threading.Thread(
        target=serve, args=(lake,), kwargs={**kwargs, "ready": on_ready}, daemon=True
    )
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the gateway did not start")
    try:
        yield box[0]
    finally:
        box[0].stop()
        thread.join(10)


def request(
    served: Served,
    path: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Answer:
    """One request with ``path`` sent exactly as given (no normalisation, no re-encoding)."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        data = r.read()
        return Answer(r.status, dict(r.getheaders()), data)
    finally:
        conn.close()
