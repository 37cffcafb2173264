"""What every object store is: content-addressed chunk objects, named by the repo's content hash
of their bytes (``chunks/ab/abcdef...``, :mod:`zarrlake.model.hashing`), written
create-if-absent, read verified (by the chunk's CRC32C when its ref carries one, else by its
hash); and packs of small chunks
(:mod:`zarrlake.objects.packs`), objects of the same namespace named by random ids."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass

import zarrlake.process as process
from zarrlake.errors import ChunkCorruptionError, StorageError
from zarrlake.faults import crash_point
from zarrlake.model import ChunkRef, checksum
from zarrlake.model.hashing import ChunkHasher
from zarrlake.objects.packs import OpenPack, PackWriter
from zarrlake.objects.ranges import RangeCoalescer

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

    url: str  # the store's address as messages show it (never a credential)
    verify: bool
    hasher: ChunkHasher  # the repo's content hash, which names the objects

    def __init__(self, hasher: ChunkHasher) -> None:
        self.hasher = hasher
        self._packs = PackWriter()
        self._ranges = RangeCoalescer(self.read_range_async)

    @abstractmethod
    def write(self, h: bytes, data: bytes | memoryview) -> bool:
        """Store ``data`` under hash ``h`` unless present; ``True`` if bytes were written."""

    @abstractmethod
    def read_range(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of an object as stored, unverified."""

    def read(
        self, h: bytes, start: int | None = None, end: int | None = None, crc: int | None = None
    ) -> bytes:
        """Bytes ``[start, end)`` of an object (all of it by default), verified when
        ``verify`` is on, against ``crc`` if given, else against its hash: a byte range is
        served from the whole object, read and checked once and kept in a small cache (a
        shard of zarr's sharding codec is read by ranges, and a flipped byte inside it must
        not come back as data)."""
        if start is None and end is None:
            return self.check(h, self.read_range(h), crc)
        if not self.verify:
            return self._exact(h, self.read_range(h, start, end), start, end)
        cache = verified_cache(self)
        data = cache.get(h)
        if data is None:
            data = self.check(h, self.read_range(h), crc)
            cache.put(h, data)
        return data[start:end]

    async def read_range_async(self, h: bytes, start: int, end: int) -> bytes:
        """Async version of :meth:`read_range`."""
        return await asyncio.to_thread(self.read_range, h, start, end)

    # -- packed chunks -------------------------------------------------------------------------

    def write_packed(self, h: bytes, data: bytes | memoryview) -> tuple[bytes, int]:
        """Append a small chunk to this process's open pack: its (pack id, offset). The pack
        is written when full here, else by :meth:`sync`; until then it is read from memory."""
        pack_id, offset, full = self._packs.add(h, bytes(data))
        if full is not None and (error := self._write_pack(full)) is not None:
            raise error
        return pack_id, offset

    async def write_packed_async(self, h: bytes, data: bytes | memoryview) -> tuple[bytes, int]:
        """Async version of :meth:`write_packed`."""
        pack_id, offset, full = self._packs.add(h, bytes(data))
        if full is not None:
            try:
                await self.write_async(full.id, full.encode())
            except BaseException as exc:  # cancelled too: the pack must not stay "writing"
                self._packs.written(full, self._pack_error(full, exc))
                raise
            self._packs.written(full)
            crash_point("pack.written")
        return pack_id, offset

    def _write_pack(self, pack: OpenPack) -> StorageError | None:
        try:
            self.write(pack.id, pack.encode())
        except BaseException as exc:
            error = self._pack_error(pack, exc)
            self._packs.written(pack, error)
            if not isinstance(exc, Exception):
                raise
            return error
        self._packs.written(pack)
        crash_point("pack.written")
        return None

    def _pack_error(self, pack: OpenPack, exc: BaseException) -> StorageError:
        if isinstance(exc, StorageError):
            return exc
        error = StorageError(f"cannot write pack {pack.id.hex()} to {self.url}: {exc!r}")
        error.__cause__ = exc
        return error

    def read_chunk(self, ref: ChunkRef, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of a chunk stored as an object or in a pack (not inline),
        verified against the chunk's checksum (or, without one, its hash)."""
        if ref.pack is None:
            return self._complete(ref, self.read(ref.hash, start, end, ref.crc), start, end)
        data = self._packs.read(ref.pack, ref.offset, ref.length)
        if data is None:
            end_at = ref.offset + ref.length
            data = self.read_range(ref.pack, ref.offset, end_at)
            if not self._intact(ref, data) and self._reopen(ref.pack):
                data = self.read_range(ref.pack, ref.offset, end_at)
        return self._packed(ref, data)[start:end]

    async def read_chunk_async(
        self, ref: ChunkRef, start: int | None = None, end: int | None = None
    ) -> bytes:
        """Async version of :meth:`read_chunk`: reads of one pack made together are merged
        into few requests (:mod:`zarrlake.objects.ranges`)."""
        if ref.pack is None:
            return self._complete(
                ref, await self.read_async(ref.hash, start, end, ref.crc), start, end
            )
        data = self._packs.read(ref.pack, ref.offset, ref.length)
        if data is None:
            end_at = ref.offset + ref.length
            data = await self._ranges.read(ref.pack, ref.offset, end_at)
            if not self._intact(ref, data) and self._reopen(ref.pack):
                data = await self._ranges.read(ref.pack, ref.offset, end_at)
        return self._packed(ref, data)[start:end]

    def _reopen(self, h: bytes) -> bool:
        """Drop whatever this store keeps open of object ``h`` (it may have been replaced);
        whether there was anything, so that a read is worth trying again."""
        return False

    def _intact(self, ref: ChunkRef, data: bytes) -> bool:
        return len(data) == ref.length and (
            not self.verify or self._matches(data, ref.hash, ref.crc)
        )

    def _packed(self, ref: ChunkRef, data: bytes) -> bytes:
        assert ref.pack is not None
        if len(data) < ref.length:
            raise self._short(
                f"chunk {ref.hash.hex()} at offset {ref.offset} of pack {ref.pack.hex()}",
                len(data),
                ref.length,
            )
        if not self._intact(ref, data):
            raise ChunkCorruptionError(
                f"chunk {ref.hash.hex()} at offset {ref.offset} of pack {ref.pack.hex()} in "
                f"{self.url} does not match its {'hash' if ref.crc is None else 'checksum'} "
                f"(read {len(data)} of {ref.length} bytes); "
                "the stored bytes are corrupt. Run repo.fsck(verify=True) to find every such "
                "object"
            )
        return data

    def _complete(self, ref: ChunkRef, data: bytes, start: int | None, end: int | None) -> bytes:
        """``data``, read of the chunk object ``ref`` names, unless it is shorter than the
        chunk (a check that catches what an unverified read would let through)."""
        if start is None and end is None and len(data) < ref.length:
            raise self._short(f"chunk object {ref.hash.hex()}", len(data), ref.length)
        return data

    def _exact(self, h: bytes, data: bytes, start: int | None, end: int | None) -> bytes:
        """``data``, read of bytes ``[start, end)`` of object ``h``, unless it is short."""
        if start is not None and end is not None and len(data) < end - start:
            raise self._short(f"bytes {start} to {end} of object {h.hex()}", len(data), end - start)
        return data

    def _short(self, what: str, got: int, want: int) -> ChunkCorruptionError:
        """A read that found fewer bytes than the chunk's ref (or the range asked for) says
        are stored: the object is truncated. The same damage is the same error on every
        backend, and it is never retried: reading again brings back no more bytes."""
        return ChunkCorruptionError(
            f"{what} in {self.url} is cut short: read {got} of {want} bytes; the stored object "
            "is truncated. Run repo.fsck(verify=True) to find every such object"
        )

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

    async def read_async(
        self, h: bytes, start: int | None = None, end: int | None = None, crc: int | None = None
    ) -> bytes:
        """Async version of :meth:`read`."""
        return await asyncio.to_thread(self.read, h, start, end, crc)

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

    def open_pack(self) -> bytes | None:
        """The pack this process is filling (not written yet), if any."""
        return self._packs.open_id()

    def sync(self, *, seal: bool = True) -> None:
        """Block until every object this process wrote, or found already present, is durable,
        packs included: the open pack is written now (unless ``seal`` is false: then only the
        packs already full), and a pack whose write failed is tried again
        (:class:`StorageError` if it fails again)."""
        pending = self._packs.pending_ids()
        for pack in self._packs.seal(keep_open=not seal):
            self._write_pack(pack)
        error = self._packs.wait(pending - ({self.open_pack()} if not seal else set()))
        if error is not None:
            raise StorageError(f"cannot write a pack of chunks to {self.url}: {error}") from error
        self._flush()

    def _flush(self) -> None:  # noqa: B027 - optional hook
        """Make the objects written so far durable (no-op where a write is durable when it
        returns, as a PUT on S3 is)."""

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

    def initialize(self) -> None:  # noqa: B027 - optional hook
        """Prepare the storage of a new repo (after :meth:`probe`): what every write would
        otherwise have to check or make first. Nothing to do where a write makes its own
        path (object stores have no directories)."""

    def remove_stale_temporaries(self, older_than: float) -> int:
        """Remove partial writes left by killed writers, last touched before ``older_than``
        (epoch seconds); returns how many. Stores that write in one request have none."""
        return 0

    def check(self, h: bytes, data: bytes, crc: int | None = None) -> bytes:
        """``data``, unless ``verify`` is on and it matches neither ``crc`` (when given) nor,
        without one, the hash ``h``."""
        if self.verify and not self._matches(data, h, crc):
            what = "checksum" if crc is not None else "hash"
            raise ChunkCorruptionError(
                f"object {h.hex()} in {self.url} does not match its {what} (read {len(data)} "
                "bytes); the stored bytes are corrupt. Run repo.fsck(verify=True) to find every "
                "such object"
            )
        return data

    def _matches(self, data: bytes, h: bytes, crc: int | None) -> bool:
        """Whether chunk bytes are intact: their CRC32C is ``crc`` (a chunk written with one;
        ``fsck(verify=True)`` checks the full hash), else their content hash is ``h``."""
        if crc is not None:
            return checksum(data) == crc
        return self.hasher.matches(data, h)


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
_caches: MutableMapping[ObjectStore, _BytesLRU] = process.registry(
    "verified ranges", weakref.WeakKeyDictionary
)
_caches_lock = threading.Lock()


def verified_cache(store: ObjectStore) -> _BytesLRU:
    with _caches_lock:
        cache = _caches.get(store)
        if cache is None:
            cache = _caches[store] = _BytesLRU(_RANGE_CACHE_BYTES)
        return cache
