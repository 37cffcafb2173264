"""Content-addressed chunk objects over a local directory or any fsspec filesystem.

Objects are named by the SHA-256 of their bytes (``chunks/ab/abcdef...``). Writes are
create-if-absent: an existing object is only touched (its mtime refreshed, which tells garbage
collection it is in use again); a new local object goes to a temporary file that is renamed
into place, so a crash never leaves a partial object under its final name. On S3 the put is
conditional (``If-None-Match: *``).

Calls are synchronous and thread-safe; the async layers run them in worker threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import os
import threading
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from zarrlake.errors import ChunkCorruptionError, ObjectMissingError, StorageError

__all__ = [
    "FsspecObjectStore",
    "LocalObjectStore",
    "ObjectInfo",
    "ObjectStore",
    "open_object_store",
]


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    hash: bytes
    size: int
    mtime: float


def _rel(h: bytes) -> str:
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
        cache = _verified_cache(self)
        data = cache.get(h)
        if data is None:
            data = self.check(h, self.read_range(h))
            cache.put(h, data)
        return data[start:end]

    @abstractmethod
    def exists(self, h: bytes) -> bool: ...

    @abstractmethod
    def delete(self, h: bytes) -> None: ...

    @abstractmethod
    def iter_objects(self) -> Iterator[ObjectInfo]:
        """Every object (for garbage collection and fsck)."""

    def modified_at(self, h: bytes) -> float | None:
        """When an object was last written (epoch seconds), where the backend records a write
        of an existing object (local disk); else ``None``."""
        return None

    def sync(self) -> None:  # noqa: B027 - optional hook
        """Make every object written so far durable (no-op where writes are durable)."""

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


def _verified_cache(store: ObjectStore) -> _BytesLRU:
    with _caches_lock:
        cache = _caches.get(store)
        if cache is None:
            cache = _caches[store] = _BytesLRU(_RANGE_CACHE_BYTES)
        return cache


_libc: Any = None


def _syncfs(path: str) -> None:
    """Flush the filesystem holding ``path`` (one syscall instead of one fsync per object)."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        _libc = ctypes.CDLL(name, use_errno=True) if name else False
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc and hasattr(_libc, "syncfs") and _libc.syncfs(fd) == 0:
            return
        os.sync()
    finally:
        os.close(fd)


class LocalObjectStore(ObjectStore):
    """Objects as files under a local directory."""

    def __init__(self, root: str | Path, *, verify: bool = True) -> None:
        self.root = Path(root).absolute()
        self.url = str(self.root)
        self.verify = verify
        self._dirs: set[str] = set()
        self._dirty = False
        self._lock = threading.Lock()
        try:
            (self.root / "chunks").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot use {self.root} for chunk objects: {exc}") from exc

    def _path(self, h: bytes) -> str:
        return os.path.join(self.url, _rel(h))

    def write(self, h: bytes, data: bytes | memoryview) -> bool:
        path = self._path(h)
        try:
            os.utime(path)
            return False
        except FileNotFoundError:
            pass
        d = os.path.dirname(path)
        if d not in self._dirs:
            os.makedirs(d, exist_ok=True)
            self._dirs.add(d)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            # The name appears only once the bytes are complete. Two writers of one content
            # address write identical bytes, so replacing a concurrent copy is harmless.
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise StorageError(f"cannot write object {h.hex()} under {self.url}: {exc}") from exc
        self._dirty = True
        return True

    def read_range(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        try:
            with open(self._path(h), "rb") as f:
                if start is None and end is None:
                    return f.read()
                if start:
                    f.seek(start)
                return f.read(-1 if end is None else max(0, end - (start or 0)))
        except FileNotFoundError as exc:
            raise ObjectMissingError(
                f"object {h.hex()} is missing from {self.url}; it was deleted outside zarrlake "
                "or by an unsafe garbage collection. Run repo.fsck()"
            ) from exc
        except OSError as exc:
            raise StorageError(f"cannot read object {h.hex()} from {self.url}: {exc}") from exc

    def exists(self, h: bytes) -> bool:
        return os.path.exists(self._path(h))

    def modified_at(self, h: bytes) -> float | None:
        try:
            return os.stat(self._path(h)).st_mtime
        except FileNotFoundError:
            return None

    def delete(self, h: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(h))

    def iter_objects(self) -> Iterator[ObjectInfo]:
        base = self.root / "chunks"
        for d in sorted(base.iterdir()) if base.exists() else []:
            if not d.is_dir():
                continue
            for entry in os.scandir(d):
                if entry.name.endswith(".tmp") or len(entry.name) != 64:
                    continue
                st = entry.stat()
                yield ObjectInfo(bytes.fromhex(entry.name), st.st_size, st.st_mtime)

    def remove_stale_temporaries(self, older_than: float) -> int:
        removed = 0
        base = self.root / "chunks"
        for d in sorted(base.iterdir()) if base.exists() else []:
            if not d.is_dir():
                continue
            for entry in os.scandir(d):
                if not entry.name.endswith(".tmp"):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    if entry.stat().st_mtime < older_than:
                        os.unlink(entry.path)
                        removed += 1
        return removed

    def sync(self) -> None:
        # Objects staged by other processes of the session live on the same filesystem, so
        # flushing the filesystem covers them too; skip when nothing could be dirty.
        _syncfs(self.url)
        self._dirty = False


class FsspecObjectStore(ObjectStore):
    """Objects on any fsspec filesystem (``s3://``, ``memory://``, ``gs://`` ...)."""

    def __init__(
        self, url: str, storage_options: dict[str, Any] | None = None, *, verify: bool = True
    ) -> None:
        import fsspec

        self.url = url.rstrip("/")
        self.verify = verify
        self.storage_options = dict(storage_options or {})
        try:
            self.fs, self.prefix = fsspec.core.url_to_fs(self.url, **self.storage_options)
        except (ImportError, ValueError) as exc:
            raise StorageError(
                f"cannot open object storage {url!r}: {exc} (for s3:// install 'zarrlake[s3]')"
            ) from exc
        self.prefix = self.prefix.rstrip("/")
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        # S3 supports create-if-absent (If-None-Match: *); elsewhere exists-then-put suffices
        # because two writers of one content address write the same bytes.
        self._conditional = any(p in ("s3", "s3a") for p in protocols)

    def _key(self, h: bytes) -> str:
        return f"{self.prefix}/{_rel(h)}"

    def write(self, h: bytes, data: bytes | memoryview) -> bool:
        key = self._key(h)
        try:
            if self.fs.exists(key):
                return False
            if self._conditional:
                self.fs.pipe_file(key, bytes(data), mode="create")
            else:
                self.fs.pipe_file(key, bytes(data))
        except FileExistsError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot write object {h.hex()} to {self.url}: {exc}") from exc
        return True

    def read_range(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        try:
            data = self.fs.cat_file(self._key(h), start=start, end=end)
        except FileNotFoundError as exc:
            raise ObjectMissingError(
                f"object {h.hex()} is missing from {self.url}; run repo.fsck()"
            ) from exc
        except OSError as exc:
            raise StorageError(f"cannot read object {h.hex()} from {self.url}: {exc}") from exc
        return bytes(data)

    def exists(self, h: bytes) -> bool:
        try:
            return bool(self.fs.exists(self._key(h)))
        except OSError as exc:
            raise StorageError(f"cannot reach {self.url}: {exc}") from exc

    def delete(self, h: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._key(h))

    def iter_objects(self) -> Iterator[ObjectInfo]:
        base = f"{self.prefix}/chunks"
        try:
            found = self.fs.find(base, detail=True)
        except FileNotFoundError:
            return
        for path, info in found.items():
            name = path.rsplit("/", 1)[-1]
            if len(name) != 64:
                continue
            mtime = info.get("LastModified") or info.get("mtime") or info.get("created") or 0
            ts = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime)
            yield ObjectInfo(bytes.fromhex(name), int(info.get("size", 0)), ts)


def open_object_store(
    url: str, storage_options: dict[str, Any] | None = None, *, verify: bool = True
) -> ObjectStore:
    """An object store for a URL or local path."""
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else url
        return LocalObjectStore(path, verify=verify)
    return FsspecObjectStore(url, storage_options, verify=verify)
