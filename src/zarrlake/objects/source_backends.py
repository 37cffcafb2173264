"""Reading the sources of virtual chunks: local files, S3 objects (s3fs, the same botocore
setup as the lake's storage) and HTTP(S) resources, each read by byte range, and each read
checked against the version the reference recorded, so a changed source gives an error,
never other bytes:

- a local file: its size and ``st_mtime_ns``, taken from the open file before reading;
- S3: the ETag, sent as ``If-Match`` with the ranged GET (S3 answers 412 if it changed);
- HTTP(S): ``If-Match`` with the ETag (or ``If-Unmodified-Since`` with Last-Modified), and
  the response's own ETag and total size checked too, for servers that ignore the condition.
  Redirects are not followed: a reference reads only the place it names.
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import unquote, urlsplit

from zarrlake.errors import (
    SourceChangedError,
    SourceUnavailableError,
    VirtualSourceError,
    ZarrlakeError,
)
from zarrlake.model.virtual import VirtualSource
from zarrlake.objects.remote import fsspec_options
from zarrlake.objects.retries import Deadline, retrying_async, s3_deadline

__all__ = ["HttpSource", "LocalSource", "S3Source", "SourceBackend", "changed", "open_backend"]


def changed(source: VirtualSource, now: str) -> SourceChangedError:
    """The error of a read that found ``source`` at another version (``now`` says which)."""
    return SourceChangedError(
        f"virtual source {source.url} changed since the reference was committed (then: "
        f"{source.version()}; now: {now}); its bytes are refused. Restore the source, or "
        "commit new references to it (and repo.materialize() to keep copies in the lake)",
        url=source.url,
    )


def unavailable(url: str, exc: BaseException | str) -> SourceUnavailableError:
    why = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return SourceUnavailableError(
        f"virtual source {url} cannot be read ({why}); check that it exists and that the "
        "repo's options for its prefix (repo.virtual_sources()) can reach it",
        url=url,
    )


def past_end(url: str, offset: int, length: int, size: int) -> VirtualSourceError:
    return VirtualSourceError(
        f"virtual reference to bytes {offset} to {offset + length} of {url} is refused: the "
        f"source has only {size} bytes. Check the reference's offset and length",
        url=url,
    )


class SourceBackend(ABC):
    """One allowed prefix's way of reading its sources."""

    is_async: bool = False

    @abstractmethod
    def stat(self, url: str) -> VirtualSource:
        """The source's current version (``url`` normalized and allowed)."""

    @abstractmethod
    def read(self, source: VirtualSource, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of ``source``, if it is still the recorded version."""

    async def stat_async(self, url: str) -> VirtualSource:
        return await asyncio.to_thread(self.stat, url)

    async def read_async(self, source: VirtualSource, start: int, end: int) -> bytes:
        return await asyncio.to_thread(self.read, source, start, end)


class LocalSource(SourceBackend):
    """Local files under a directory: a path that resolves (through symlinks) outside the
    allowed directory is refused."""

    def __init__(self, prefix: str) -> None:
        self.root = os.path.realpath(unquote(urlsplit(prefix).path))

    def _path(self, url: str) -> str:
        path = unquote(urlsplit(url).path)
        real = os.path.realpath(path)
        if not real.startswith(self.root.rstrip("/") + "/"):
            raise VirtualSourceError(
                f"virtual reference {url!r} is refused: it resolves to {real}, outside the "
                f"allowed directory {self.root}",
                url=url,
            )
        return real

    def stat(self, url: str) -> VirtualSource:
        path = self._path(url)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise unavailable(url, exc) from exc
        if not os.path.isfile(path):
            raise unavailable(url, "it is not a regular file")
        return VirtualSource(url, st.st_size, modified=str(st.st_mtime_ns))

    def read(self, source: VirtualSource, start: int, end: int) -> bytes:
        path = self._path(source.url)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise unavailable(source.url, exc) from exc
        try:
            st = os.fstat(fd)
            if st.st_size != source.size or str(st.st_mtime_ns) != source.modified:
                raise changed(source, f"modified {st.st_mtime_ns}, {st.st_size} bytes")
            data = os.pread(fd, end - start, start)
        except OSError as exc:
            raise unavailable(source.url, exc) from exc
        finally:
            os.close(fd)
        if len(data) != end - start:
            raise changed(source, f"{start + len(data)} bytes where {end} were expected")
        return data


class _Remote(SourceBackend):
    """An fsspec async filesystem, its calls run on fsspec's loop, retried within a deadline,
    at most :attr:`CONCURRENCY` in flight."""

    is_async = True
    CONCURRENCY = 64

    def __init__(self, protocol: str, options: dict[str, Any]) -> None:
        import fsspec

        self.fs = fsspec.filesystem(
            protocol, **fsspec_options(f"{protocol}://", {**options, "asynchronous": False})
        )
        self._limit: asyncio.Semaphore | None = None
        self._deadline: Deadline | None = None

    async def _deadline_now(self) -> Deadline | None:
        return None

    async def _bounded[T](self, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        if self._limit is None:
            self._limit = asyncio.Semaphore(self.CONCURRENCY)
        if self._deadline is None:
            self._deadline = await self._deadline_now()
        async with self._limit:
            return await retrying_async(fn, self._deadline, what)

    async def _on_loop[T](self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self.fs.loop
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def _sync[T](self, coro: Coroutine[Any, Any, T]) -> T:
        from fsspec.asyn import sync

        return sync(self.fs.loop, lambda: coro)  # type: ignore[no-any-return]

    @abstractmethod
    async def _stat(self, url: str) -> VirtualSource: ...

    @abstractmethod
    async def _read(self, source: VirtualSource, start: int, end: int) -> bytes: ...

    async def _guarded[T](self, url: str, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            return await self._bounded(f"{what} of virtual source {url}", fn)
        except ZarrlakeError:
            raise
        except Exception as exc:
            raise unavailable(url, exc) from exc

    def stat(self, url: str) -> VirtualSource:
        return self._sync(self.stat_async(url))

    def read(self, source: VirtualSource, start: int, end: int) -> bytes:
        return self._sync(self.read_async(source, start, end))

    async def stat_async(self, url: str) -> VirtualSource:
        return await self._on_loop(self._guarded(url, "lookup", lambda: self._stat(url)))

    async def read_async(self, source: VirtualSource, start: int, end: int) -> bytes:
        data = await self._on_loop(
            self._guarded(source.url, "read", lambda: self._read(source, start, end))
        )
        if len(data) != end - start:
            raise changed(source, f"read {len(data)} of {end - start} bytes at offset {start}")
        return data


def _status(exc: BaseException) -> int | None:
    """The HTTP status of a botocore error somewhere in ``exc``'s chain."""
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return None if status is None else int(status)
        seen = seen.__cause__ or seen.__context__
    return None


class S3Source(_Remote):
    """S3 objects: a ranged GET with ``If-Match`` on the recorded ETag."""

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__("s3", options)

    async def _deadline_now(self) -> Deadline | None:
        return s3_deadline(await self.fs.set_session())

    @staticmethod
    def _split(url: str) -> tuple[str, str]:
        parts = urlsplit(url)
        return parts.netloc, unquote(parts.path).lstrip("/")

    async def _stat(self, url: str) -> VirtualSource:
        bucket, key = self._split(url)
        client = await self.fs.set_session()
        try:
            head = await client.head_object(Bucket=bucket, Key=key)
        except Exception as exc:
            if _status(exc) in (403, 404):
                raise unavailable(url, f"no such object (HTTP {_status(exc)})") from exc
            raise
        return VirtualSource(url, int(head["ContentLength"]), etag=str(head["ETag"]))

    async def _read(self, source: VirtualSource, start: int, end: int) -> bytes:
        bucket, key = self._split(source.url)
        client = await self.fs.set_session()
        try:
            resp = await client.get_object(
                Bucket=bucket,
                Key=key,
                Range=f"bytes={start}-{end - 1}",
                IfMatch=source.etag or "*",
            )
        except Exception as exc:
            status = _status(exc)
            if status in (403, 404):
                raise unavailable(source.url, f"no such object (HTTP {status})") from exc
            if status == 412:
                raise changed(source, "another ETag") from exc
            if status == 416:
                raise changed(source, f"fewer than {end} bytes") from exc
            raise
        async with resp["Body"] as body:
            return bytes(await body.read())


class HttpSource(_Remote):
    """HTTP(S) resources: ranged GETs, conditional on the recorded ETag or date."""

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__("https", options)

    async def _stat(self, url: str) -> VirtualSource:
        session = await self.fs.set_session()
        async with session.head(url, allow_redirects=False) as r:
            if r.status == 404:
                raise unavailable(url, "404 Not Found")
            if r.status != 200:
                raise unavailable(url, f"HEAD answered {r.status}")
            size = r.headers.get("Content-Length")
            etag, modified = r.headers.get("ETag"), r.headers.get("Last-Modified")
        if size is None or (etag is None and modified is None):
            raise unavailable(url, "the server gives no size, or neither ETag nor Last-Modified")
        return VirtualSource(url, int(size), etag=etag, modified=None if etag else modified)

    async def _read(self, source: VirtualSource, start: int, end: int) -> bytes:
        session = await self.fs.set_session()
        headers = {"Range": f"bytes={start}-{end - 1}"}
        if source.etag is not None:
            headers["If-Match"] = source.etag
        elif source.modified is not None:
            headers["If-Unmodified-Since"] = source.modified
        async with session.get(source.url, headers=headers, allow_redirects=False) as r:
            if r.status == 412:
                raise changed(source, "the server says it changed")
            if r.status == 404:
                raise unavailable(source.url, "404 Not Found")
            if r.status != 206:
                raise unavailable(source.url, f"a ranged GET answered {r.status}")
            etag = r.headers.get("ETag")
            total = r.headers.get("Content-Range", "").rpartition("/")[2]
            if (source.etag is not None and etag is not None and etag != source.etag) or (
                total.isdigit() and int(total) != source.size
            ):
                raise changed(source, f"ETag {etag}, {total} bytes")
            return bytes(await r.read())


def open_backend(prefix: str, options: dict[str, Any]) -> SourceBackend:
    """The backend reading the sources under an allowed (normalized) ``prefix``."""
    scheme = prefix.split("://", 1)[0]
    if scheme == "file":
        if options:
            raise VirtualSourceError(
                f"local virtual sources take no options; got {sorted(options)} for {prefix}",
                url=prefix,
            )
        return LocalSource(prefix)
    if scheme == "s3":
        return S3Source(options)
    return HttpSource(options)
