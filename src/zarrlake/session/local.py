"""The staged rows a writable session holds in this process: its own writes, visible to it
at once (read-your-writes), before and after the catalog has them."""

from __future__ import annotations

import functools
import threading
from concurrent.futures import Future

from zarrlake.model.batches import entry_coords
from zarrlake.model.records import StagedEntry
from zarrlake.types import ChunkCoords

__all__ = ["LocalRows"]

Slot = tuple[str, str, ChunkCoords, str]


class LocalRows:
    """This process's staged rows, by slot (:attr:`StagedEntry.slot`), under the session's
    lock. A row staged on its own stays until the session closes or a node drop removes it;
    bulk rows (virtual references) stay only until they are durable: from then on the
    catalog answers for them, so a session that stages millions of references holds one
    batch of them."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._rows: dict[Slot, StagedEntry] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def get(self, slot: Slot) -> StagedEntry | None:
        return self._rows.get(slot)

    def put(self, row: StagedEntry) -> None:
        self._rows[row.slot] = row

    def put_bulk(self, rows: tuple[StagedEntry, ...], durable: Future[None]) -> None:
        """Hold ``rows`` until ``durable`` resolves (kept if it fails: they are retried)."""
        for row in rows:
            self._rows[row.slot] = row
        durable.add_done_callback(functools.partial(self._forget, rows=rows))

    def _forget(self, fut: Future[None], *, rows: tuple[StagedEntry, ...]) -> None:
        if fut.exception() is not None:
            return
        with self._lock:
            for row in rows:
                if self._rows.get(row.slot) is row:  # not written again meanwhile
                    del self._rows[row.slot]

    def drop_node(self, path: str) -> None:
        """Forget the metadata and chunks of the node at ``path``, and raw keys under it."""
        prefix = f"{path}/" if path else ""
        for k in [
            k
            for k in self._rows
            if (k[0] == path and k[1] in ("meta", "chunk"))
            or (k[1] == "raw" and k[3].startswith(prefix))
        ]:
            del self._rows[k]

    def drop_covered(self, path: str, batches: list[StagedEntry]) -> None:
        """Forget the chunks of ``path`` that ``batches`` (staged after them) cover."""
        with self._lock:
            mine = [k for k in self._rows if k[0] == path and k[1] == "chunk"]
            if not mine:
                return
            covered: set[ChunkCoords] = set()
            for e in batches:
                covered.update(entry_coords(e))
            for k in mine:
                if k[2] in covered:
                    del self._rows[k]

    def clear(self) -> None:
        self._rows.clear()
