"""Chunk objects on any fsspec filesystem (``s3://``, ``memory://``, ``gs://`` ...).

On S3 a write is one conditional PUT (``If-None-Match: *``): create-if-absent in one request,
with no existence check first. On an async filesystem (s3fs) the session's async reads and
writes run as coroutines on fsspec's own event loop (the loop that made the filesystem's
session), at most :attr:`FsspecObjectStore.CONCURRENCY` requests in flight per store, as
zarr's own ``FsspecStore`` does, so the number of worker threads no longer bounds them.

Transient failures of the service (a refused connection, a 5xx, throttling, a dropped or
timed-out response) are retried with jittered exponential backoff; what is left after the
last attempt is a :class:`StorageError` carrying the cause. On S3 every call, sync or async,
runs on fsspec's loop within a deadline derived from the client's timeouts
(:mod:`zarrlake.objects.retries`). A ranged read past the end of an object (S3 answers 416)
reads nothing, as a local read past the end of a file does: the caller finds it short.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, MutableMapping
from typing import Any

import zarrlake.process as process
from zarrlake.errors import ObjectMissingError, StorageError, ZarrlakeError
from zarrlake.model.hashing import SHA256_HASHER, ChunkHasher
from zarrlake.objects.base import ObjectInfo, ObjectStore, object_key, verified_cache
from zarrlake.objects.retries import Deadline, retrying, retrying_async, s3_deadline
from zarrlake.types import redact_urls, safe_url

__all__ = ["FsspecObjectStore", "fsspec_options"]


_S3 = ("s3", "s3a")  # the protocols (and URL schemes) of s3fs

# s3fs options that configure its client and cache, not the botocore session it makes
_CLIENT_OPTIONS = frozenset(
    {
        "anon", "endpoint_url", "key", "secret", "token", "use_ssl", "client_kwargs",
        "config_kwargs", "s3_additional_kwargs", "requester_pays", "version_aware",
        "cache_regions", "default_block_size", "default_fill_cache", "default_cache_type",
        "skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_concurrency",
        "fixed_upload_size",
    }
)  # fmt: skip
# the process's botocore session for s3fs, once made (a forked child makes its own)
_botocore: MutableMapping[str, Any] = process.registry("botocore session")
_botocore_lock = threading.Lock()


def fsspec_options(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for fsspec; for S3, with one botocore session per process.

    s3fs makes a botocore session for each filesystem it does not find in its cache, and a
    new session loads botocore's service models again: 80-130 ms, against a few ms for a
    client made from a session that has them. Options that shape the session itself (a
    profile, a session of the caller's, anything s3fs hands the session) keep their own."""
    if url.split("://", 1)[0] not in _S3 or not set(options) <= _CLIENT_OPTIONS:
        return options
    with _botocore_lock:
        if "session" not in _botocore:
            from aiobotocore.session import AioSession

            _botocore["session"] = AioSession()
    return {**options, "session": _botocore["session"]}


def _past_the_end(exc: BaseException) -> bool:
    """Whether S3 refused a range because it starts past the end of the object (416
    ``InvalidRange``; s3fs raises an ``OSError`` whose cause is botocore's error)."""
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return bool(code == "InvalidRange" or status == 416)
        seen = seen.__cause__ or seen.__context__
    return False


def _span(start: int | None, end: int | None) -> int | None:
    if end is None:
        return None
    return max(0, end - (start or 0))


class FsspecObjectStore(ObjectStore):
    """Objects on any fsspec filesystem."""

    CONCURRENCY = 64  # requests in flight per store through the async path

    def __init__(
        self,
        url: str,
        storage_options: dict[str, Any] | None = None,
        *,
        verify: bool = True,
        hasher: ChunkHasher = SHA256_HASHER,
    ) -> None:
        import fsspec

        super().__init__(hasher)
        raw = url.rstrip("/")
        self.url = safe_url(raw)  # what messages show: a credential in the URL masked
        self.verify = verify
        self.storage_options = dict(storage_options or {})
        try:
            self.fs, self.prefix = fsspec.core.url_to_fs(
                raw, **fsspec_options(raw, self.storage_options)
            )
        except (ImportError, ValueError) as exc:
            raise StorageError(
                f"cannot open object storage {self.url!r}: {redact_urls(str(exc))} "
                "(for s3:// install 'zarrlake[s3]')"
            ) from exc
        self.prefix = self.prefix.rstrip("/")
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        # S3 (s3fs, an async filesystem) supports create-if-absent (If-None-Match: *) and
        # batch deletes, and its calls run as coroutines within a deadline; elsewhere
        # exists-then-put suffices because two writers of one content address write the same
        # bytes.
        s3 = any(p in _S3 for p in protocols)
        self._async = bool(getattr(self.fs, "async_impl", False)) and s3
        self._limit: asyncio.Semaphore | None = None  # made on fsspec's loop, used only there
        self._deadline: Deadline | None = None  # read from the client once it exists
        # s3fs asks for an object's size (a HEAD request) before reading it whole, to split
        # reads of large objects; a chunk object is read in one GET
        cat = getattr(self.fs, "_cat_file", None)
        takes = cat is not None and "max_concurrency" in inspect.signature(cat).parameters
        self._whole: dict[str, Any] = {"max_concurrency": 1} if takes else {}

    @property
    def async_io(self) -> bool:
        return self._async

    def _key(self, h: bytes) -> str:
        return f"{self.prefix}/{object_key(h)}"

    # -- writing -----------------------------------------------------------------------------

    def write(self, h: bytes, data: bytes | memoryview) -> bool:
        key = self._key(h)
        payload = bytes(data)

        def put() -> bool:
            if self.fs.exists(key):
                return False
            self.fs.pipe_file(key, payload)
            return True

        try:
            if self._async:
                return self._call_sync(
                    f"write of object {h.hex()}", lambda: self._put(key, payload)
                )
            return retrying(put)
        except FileExistsError:
            return False
        except Exception as exc:
            raise self._write_error(h, exc) from exc

    async def write_async(self, h: bytes, data: bytes | memoryview) -> bool:
        if not self._async:
            return await super().write_async(h, data)
        key = self._key(h)
        payload = bytes(data)
        try:
            return await self._call_async(
                f"write of object {h.hex()}", lambda: self._put(key, payload)
            )
        except FileExistsError:
            return False
        except Exception as exc:
            raise self._write_error(h, exc) from exc

    async def _put(self, key: str, payload: bytes) -> bool:
        """Create-if-absent in one request; an object already there is ``FileExistsError``."""
        await self.fs._pipe_file(key, payload, mode="create")
        return True

    def _write_error(self, h: bytes, exc: Exception) -> Exception:
        if isinstance(exc, ZarrlakeError):
            return exc
        return StorageError(f"cannot write object {h.hex()} to {self.url}: {exc}")

    # -- reading -----------------------------------------------------------------------------

    def read_range(self, h: bytes, start: int | None = None, end: int | None = None) -> bytes:
        key = self._key(h)
        try:
            if self._async:
                data = self._call_sync(
                    f"read of object {h.hex()}", lambda: self._get(key, start, end)
                )
            else:
                data = retrying(
                    lambda: self.fs.cat_file(key, start=start, end=end, **self._kw(start))
                )
        except Exception as exc:
            raise self._read_error(h, exc) from exc
        return self._checked_length(h, bytes(data), start, end)

    async def read_async(
        self, h: bytes, start: int | None = None, end: int | None = None, crc: int | None = None
    ) -> bytes:
        if not self._async:
            return await super().read_async(h, start, end, crc)
        if start is None and end is None:
            return self.check(h, await self._fetch(h, None, None), crc)
        if not self.verify:
            return self._exact(h, await self._fetch(h, start, end), start, end)
        cache = verified_cache(self)  # a range is served from the whole object, verified
        data = cache.get(h)
        if data is None:
            data = self.check(h, await self._fetch(h, None, None), crc)
            cache.put(h, data)
        return data[start:end]

    async def read_range_async(self, h: bytes, start: int, end: int) -> bytes:
        if not self._async:
            return await super().read_range_async(h, start, end)
        return await self._fetch(h, start, end)

    def _kw(self, start: int | None) -> dict[str, Any]:
        return self._whole if start is None else {}

    async def _fetch(self, h: bytes, start: int | None, end: int | None) -> bytes:
        key = self._key(h)
        try:
            data = await self._call_async(
                f"read of object {h.hex()}", lambda: self._get(key, start, end)
            )
        except Exception as exc:
            raise self._read_error(h, exc) from exc
        return self._checked_length(h, data, start, end)

    async def _get(self, key: str, start: int | None, end: int | None) -> bytes:
        """One GET (of a range, when ``start`` is given). A range that starts past the end of
        the object (416) is empty, as a read past the end of a file is: the bytes are not
        there, and asking again will not bring them (the caller finds the read short)."""
        try:
            return bytes(await self.fs._cat_file(key, start=start, end=end, **self._kw(start)))
        except OSError as exc:
            if start is not None and _past_the_end(exc):
                return b""
            raise

    def _read_error(self, h: bytes, exc: Exception) -> Exception:
        if isinstance(exc, ZarrlakeError):
            return exc
        if isinstance(exc, FileNotFoundError):
            return ObjectMissingError(
                f"object {h.hex()} is missing from {self.url}; run repo.fsck()"
            )
        return StorageError(f"cannot read object {h.hex()} from {self.url}: {exc}")

    def _checked_length(self, h: bytes, data: bytes, start: int | None, end: int | None) -> bytes:
        want = None if start is None and end is None else _span(start, end)
        if want is not None and len(data) > want:
            raise StorageError(f"object {h.hex()}: read more bytes than asked for")
        return data

    # -- the async machinery -----------------------------------------------------------------

    async def _call[T](self, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        """``fn()`` retried on fsspec's loop, within the deadline of this store's client."""
        if self._deadline is None:
            self._deadline = s3_deadline(await self.fs.set_session())
        return await retrying_async(fn, self._deadline, f"{what} in {self.url}")

    def _call_sync[T](self, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        """:meth:`_call` from a thread that is not fsspec's loop (the sync API)."""
        from fsspec.asyn import sync

        return sync(self.fs.loop, self._call, what, fn)  # type: ignore[no-any-return]

    async def _call_async[T](self, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        """:meth:`_call` from any loop, with at most :attr:`CONCURRENCY` in flight (the
        deadline starts once a call has its turn)."""
        return await self._on_fs_loop(self._bounded(lambda: self._call(what, fn)))

    async def _bounded[T](self, fn: Callable[[], Awaitable[T]]) -> T:
        """``fn()`` with at most :attr:`CONCURRENCY` such calls in flight (runs on fsspec's
        loop, so the semaphore is only ever touched from that loop's thread)."""
        if self._limit is None:
            self._limit = asyncio.Semaphore(self.CONCURRENCY)
        async with self._limit:
            return await fn()

    async def _on_fs_loop[T](self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop that owns the filesystem's HTTP session, awaiting it from
        whichever loop the caller is on (zarr's, or fsspec's own)."""
        loop = self.fs.loop
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    # -- listing and deleting ----------------------------------------------------------------

    def exists(self, h: bytes) -> bool:
        key = self._key(h)
        try:
            if self._async:
                return bool(
                    self._call_sync(f"lookup of object {h.hex()}", lambda: self.fs._exists(key))
                )
            return bool(retrying(lambda: self.fs.exists(key)))
        except Exception as exc:
            if isinstance(exc, ZarrlakeError):
                raise
            raise StorageError(f"cannot reach {self.url}: {exc}") from exc

    def delete(self, h: bytes) -> None:
        self.delete_many([h])

    def delete_many(self, hashes: list[bytes]) -> None:
        """On S3 one request per 1,000 objects (``DeleteObjects``); absent ones are fine."""
        keys = [self._key(h) for h in hashes]
        if not keys:
            return
        try:
            if self._async:
                self._call_sync(f"delete of {len(keys)} object(s)", lambda: self.fs._rm(keys))
                return
            for key in keys:
                with contextlib.suppress(FileNotFoundError):
                    retrying(lambda key=key: self.fs.rm_file(key))  # type: ignore[misc]
        except FileNotFoundError:
            pass  # every one of them was already gone
        except Exception as exc:
            if isinstance(exc, ZarrlakeError):
                raise
            raise StorageError(
                f"cannot delete {len(keys)} object(s) from {self.url}: {exc}"
            ) from exc

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
