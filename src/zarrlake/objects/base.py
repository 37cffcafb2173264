"""What every object store is: content-addressed chunk objects, named by the SHA-256 of their
bytes (``chunks/ab/abcdef...``), written create-if-absent, read verified."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from zarrlake.errors import ChunkCorruptionError, StorageError

__all__ = ["ObjectInfo", "ObjectStore", "object_key", "verified_cache"]


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    hash: bytes
    size: int
    mtime: float


def object_key(h: bytes) -> str:
    x = h.hex()
    return f"chunks/{x[:2]}/{x}"


class ObjectStore(ABC):
    """Where chunk bytes live."""

    url: str
    verify: bool

    @abstractmethod
    def write(self, h: bytes, data: bytes | memoryview) -> bool:
        """Store ``data`` under hash ``h`` unless present; ``True`` if bytes were written."""

    @abstractmethod
    def read_range(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of an object as stored, unverified."""

    def read(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of an object (all of it by default), verified against its
        hash when ``verify`` is on: a byte range is served from the whole object, read and
        checked once and kept in a small cache (a shard of zarr's sharding codec is read by
        ranges, and a flipped byte inside it must not come back as data)."""
        if start is None and end is None:
            return self.check(h, self.read_range(h))
        if not self.verify:
            return self.read_range(h, start, end)
        cache = verified_cache(self)
        data = cache.get(h)
        if data is None:
            data = self.check(h, self.read_range(h))
            cache.put(h, data)
        return data[start:end]

    @abstractmethod
    def exists(self, h: bytes) -> bool: ...

    @abstractmethod
    def delete(self, h: bytes) -> None: ...

    def delete_many(self, hashes: list[bytes]) -> None:
        """Delete objects (absent ones are fine); stores with a batch delete use it."""
        for h in hashes:
            self.delete(h)

    async def write_async(self, h: bytes, data: bytes | memoryview) -> bool:
        """Async version of :meth:`write`."""
        return await asyncio.to_thread(self.write, h, data)

    async def read_async(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        """Async version of :meth:`read`."""
        return await asyncio.to_thread(self.read, h, start, end)

    @property
    def async_io(self) -> bool:
        """Whether :meth:`write_async` and :meth:`read_async` do their I/O without holding a
        thread (a network store): callers then use them rather than a worker thread."""
        return False

    @abstractmethod
    def iter_objects(self) -> Iterator[ObjectInfo]:
        """Every object (for garbage collection and fsck)."""

    def modified_at(self, h: bytes) -> float | None:
        """When an object was last written (epoch seconds), where the backend records a write
        of an existing object (local disk); else ``None``."""
        return None

    def sync(self) -> None:  # noqa: B027 - optional hook
        """Block until every object this process wrote, or found already present, is durable
        (no-op where a write is durable when it returns, as a PUT on S3 is)."""

    def probe(self) -> None:
        """Write and delete a small marker: :class:`StorageError` unless the store is
        reachable and writable (checked before a repo is recorded in a catalog)."""
        marker = hashlib.sha256(os.urandom(16)).digest()
        try:
            self.write(marker, b"zarrlake probe")
            self.delete(marker)
        except StorageError:
            raise
        except Exception as exc:  # botocore, aiohttp and OS errors: all mean "unusable"
            raise StorageError(f"object storage {self.url} is not usable: {exc}") from exc

    def remove_stale_temporaries(self, older_than: float) -> int:
        """Remove partial writes left by killed writers, last touched before ``older_than``
        (epoch seconds); returns how many. Stores that write in one request have none."""
        return 0

    def check(self, h: bytes, data: bytes) -> bytes:
        if self.verify and hashlib.sha256(data).digest() != h:
            raise ChunkCorruptionError(
                f"object {h.hex()} in {self.url} does not match its hash (read {len(data)} bytes); "
                "the stored bytes are corrupt. Run repo.fsck(verify=True) to find every such object"
            )
        return data


class _BytesLRU:
    """Whole objects already verified, by hash, bounded by their total size."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.items: OrderedDict[bytes, bytes] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, h: bytes) -> bytes | None:
        with self.lock:
            data = self.items.get(h)
            if data is not None:
                self.items.move_to_end(h)
            return data

    def put(self, h: bytes, data: bytes) -> None:
        if len(data) > self.limit // 4:
            return  # one huge object would evict everything else
        with self.lock:
            if h in self.items:
                return
            self.items[h] = data
            self.size += len(data)
            while self.size > self.limit:
                _, old = self.items.popitem(last=False)
                self.size -= len(old)


_RANGE_CACHE_BYTES = 256 * 1024 * 1024
_caches: weakref.WeakKeyDictionary[ObjectStore, _BytesLRU] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def verified_cache(store: ObjectStore) -> _BytesLRU:
    with _caches_lock:
        cache = _caches.get(store)
        if cache is None:
            cache = _caches[store] = _BytesLRU(_RANGE_CACHE_BYTES)
        return cache
