"""Coalesced range reads: concurrent reads of nearby ranges of one object become one request.

zarr reads the chunks of a selection concurrently, one ``get`` each. When those chunks sit in
one pack, the reads that arrive within :data:`WINDOW` seconds of the first are merged: ranges
less than :data:`GAP` bytes apart are fetched as one range (up to :data:`SPAN` bytes), and each
caller gets its own slice. On S3 that turns a thousand GETs of 16 KiB into a few of megabytes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Hashable

__all__ = ["GAP", "SPAN", "WINDOW", "RangeCoalescer", "plan_ranges"]

WINDOW = 0.002  # seconds a first read waits for neighbours
GAP = 256 * 1024  # bytes of an unwanted gap worth fetching rather than a second request
SPAN = 2 * 1024 * 1024  # the most one merged request fetches

_Wanted = tuple[int, int, "asyncio.Future[bytes]"]


def plan_ranges(
    wanted: list[tuple[int, int]], gap: int = GAP, span: int = SPAN
) -> list[tuple[int, int, list[int]]]:
    """Group ranges ``[start, end)`` into requests: (start, end, indices of the ranges it
    serves). Ranges closer than ``gap`` share a request unless it would exceed ``span``."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    groups: list[tuple[int, int, list[int]]] = []
    for i in order:
        start, end = wanted[i]
        if groups:
            g_start, g_end, members = groups[-1]
            if start - g_end <= gap and max(end, g_end) - g_start <= span:
                groups[-1] = (g_start, max(end, g_end), [*members, i])
                continue
        groups.append((start, end, [i]))
    return groups


class RangeCoalescer[K: Hashable]:
    """Merges concurrent range reads of one object (named by a key of type ``K``: an object's
    hash, a virtual chunk's source) made on one event loop."""

    def __init__(
        self, fetch: Callable[[K, int, int], Awaitable[bytes]], window: float = WINDOW
    ) -> None:
        self.fetch = fetch
        self.window = window
        self.lock = threading.Lock()  # callers may be on several loops, in several threads
        self.pending: dict[tuple[int, K], list[_Wanted]] = {}

    async def read(self, obj: K, start: int, end: int) -> bytes:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bytes] = loop.create_future()
        key = (id(loop), obj)
        with self.lock:
            batch = self.pending.get(key)
            if batch is None:
                batch = self.pending[key] = []
                loop.call_later(self.window, lambda: loop.create_task(self._run(key, obj)))
            batch.append((start, end, fut))
        return await fut

    async def _run(self, key: tuple[int, K], obj: K) -> None:
        with self.lock:
            batch = self.pending.pop(key, [])
        groups = plan_ranges([(s, e) for s, e, _ in batch])
        await asyncio.gather(*(self._serve(obj, g, batch) for g in groups))

    async def _serve(self, obj: K, group: tuple[int, int, list[int]], batch: list[_Wanted]) -> None:
        start, end, members = group
        try:
            data = await self.fetch(obj, start, end)
        except BaseException as exc:
            for i in members:
                if not batch[i][2].done():
                    batch[i][2].set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for i in members:
            s, e, fut = batch[i]
            if not fut.done():
                fut.set_result(data[s - start : e - start])
