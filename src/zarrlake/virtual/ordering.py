"""An import's chunk listing put in shard-position order, in memory that does not depend on
the store's size.

A store lists its chunks in no useful order: a local directory in the order of its entries,
S3 in the lexical order of its keys (``c/10/0`` before ``c/2/0``). Staged in that order, each
batch of the listing touches nearly every shard position of an array, and each touched
position is merged with what was staged there before, so an import of n chunks rewrites
about n^2 / (2 x batch) references (a 10^6-chunk store: minutes instead of seconds). The
listing is spilled to a temporary SQLite file instead and read back sorted by array and
shard position: each position then arrives whole, or in a few consecutive batches."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from types import TracebackType

from zarrlake.types import ChunkCoords
from zarrlake.virtual.listing import StoreFile

__all__ = ["PositionOrder"]

_ROWS = 10_000  # rows written to the spill file at a time


class PositionOrder:
    """Collects ``(array path, chunk coordinates, file)`` with :meth:`add`, then yields them
    from :meth:`sorted` by array path and shard position (``shapes[path]``, the shard shape
    the array's references are staged with; an array not in ``shapes`` sorts by its chunk
    coordinates). Use it as a context manager: the spill file is removed on exit."""

    def __init__(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        self._shapes = dict(shapes)
        self._paths: dict[str, int] = {}
        self._count = 0
        self._pending: list[tuple[int, bytes, str, str, int, str | None, str | None]] = []
        self._dir = tempfile.TemporaryDirectory(prefix="zarrlake-import-")
        self._db = sqlite3.connect(os.path.join(self._dir.name, "listing.db"))
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE chunks (path INTEGER, pos BLOB, coords TEXT, key TEXT,"
            " size INTEGER, modified TEXT, etag TEXT)"
        )

    def __enter__(self) -> PositionOrder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._db.close()
        self._dir.cleanup()

    def __len__(self) -> int:
        """How many chunks were added."""
        return self._count

    def add(self, path: str, coords: ChunkCoords, f: StoreFile) -> None:
        self._count += 1
        path_id = self._paths.setdefault(path, len(self._paths))
        shape = self._shapes.get(path)
        if shape is not None and len(shape) == len(coords):
            pos = [c // s for c, s in zip(coords, shape, strict=True)]
        else:
            pos = list(coords)
        # big-endian, so that SQLite's byte order of the blobs is the order of the tuples
        key = b"".join(p.to_bytes(8, "big") for p in pos)
        text = ",".join(map(str, coords))
        self._pending.append((path_id, key, text, f.key, f.size, f.modified, f.etag))
        if len(self._pending) >= _ROWS:
            self._flush()

    def _flush(self) -> None:
        self._db.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)", self._pending)
        self._pending.clear()

    def sorted(self) -> Iterator[tuple[str, ChunkCoords, StoreFile]]:
        """Everything added, by array (in order of first appearance) and shard position."""
        self._flush()
        names = list(self._paths)
        rows = self._db.execute(
            "SELECT path, coords, key, size, modified, etag FROM chunks ORDER BY path, pos"
        )
        for path_id, text, key, size, modified, etag in rows:
            coords = tuple(int(x) for x in text.split(",")) if text else ()
            yield names[path_id], coords, StoreFile(key, size, modified, etag)
