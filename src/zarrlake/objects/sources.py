"""The sources of virtual chunks: where a repo's references may point, and reading them.

A :class:`SourceReader` belongs to an open repo. It knows the allowed prefixes (from the
catalog, with their non-secret options) and the secret options given when the repo was opened
(``source_options=``, never stored), and it is the one gate every reference passes, at commit
(:meth:`SourceReader.stat_many`) and at every read (:meth:`SourceReader.read`): the URL is
normalized and refused unless it lies under an allowed prefix (:mod:`zarrlake.model.virtual`),
then read by that prefix's backend (:mod:`zarrlake.objects.source_backends`), which checks the
source's version. Concurrent async reads of nearby ranges of one remote source are merged into
few requests (:mod:`zarrlake.objects.ranges`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from zarrlake.errors import InvalidInputError, VirtualSourceError
from zarrlake.model.manifest import ChunkRef
from zarrlake.model.virtual import (
    VirtualSource,
    allowed_prefix,
    check_identity,
    normalize_prefix,
    normalize_url,
)
from zarrlake.objects.ranges import RangeCoalescer
from zarrlake.objects.source_backends import SourceBackend, open_backend, past_end

__all__ = ["SourceReader", "split_secrets"]

_SECRET_WORDS = ("secret", "token", "password", "passwd", "credential", "auth", "session")
_SECRET_NAMES = frozenset({"key", "headers", "aws_access_key_id", "access_key", "cookies"})


def _is_secret(name: str, value: Any) -> bool:
    low = name.lower()
    if low in _SECRET_NAMES or any(w in low for w in _SECRET_WORDS):
        return True
    if isinstance(value, Mapping):
        return any(_is_secret(str(k), v) for k, v in value.items())
    return False


def split_secrets(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(options that may be recorded in the catalog, secret ones that may not): credentials,
    tokens, passwords, headers, and any nested mapping holding one of those."""
    public: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for k, v in options.items():
        (secret if _is_secret(str(k), v) else public)[str(k)] = v
    return public, secret


class SourceReader:
    """Checks and reads the sources of one repo's virtual chunks, and names them: ``identity``
    is the repo's virtual identity (:data:`~zarrlake.model.virtual.VIRTUAL_IDENTITIES`)."""

    def __init__(
        self,
        allowed: Callable[[], dict[str, dict[str, Any]]],
        secrets: Mapping[str, Mapping[str, Any]],
        identity: str,
    ) -> None:
        self.identity = check_identity(identity)
        self._load = allowed
        self._secrets = {normalize_prefix(p): dict(o) for p, o in secrets.items()}
        self._allowed: dict[str, dict[str, Any]] | None = None
        self._backends: dict[str, SourceBackend] = {}
        self._lock = threading.Lock()
        self._ranges: RangeCoalescer[VirtualSource] = RangeCoalescer(self._fetch)

    # -- where references may point --------------------------------------------------------

    def prefixes(self, *, refresh: bool = False) -> dict[str, dict[str, Any]]:
        """Allowed prefix -> its recorded (non-secret) options."""
        with self._lock:
            if self._allowed is None or refresh:
                self._allowed = self._load()
            return dict(self._allowed)

    def add_secrets(self, prefix: str, options: Mapping[str, Any]) -> None:
        """Secret options of a prefix, for this process only."""
        with self._lock:
            self._secrets[prefix] = {**self._secrets.get(prefix, {}), **options}
            self._backends.pop(prefix, None)
            self._allowed = None

    def locate(self, url: str) -> tuple[str, str]:
        """(normalized URL, the allowed prefix it is under), or :class:`VirtualSourceError`.
        A URL under no prefix known here is checked once more against the catalog (another
        process may have allowed it since)."""
        norm = normalize_url(url)
        for refresh in (False, True):
            prefix = allowed_prefix(norm, tuple(self.prefixes(refresh=refresh)))
            if prefix is not None:
                return norm, prefix
        raise VirtualSourceError(
            f"virtual reference {url!r} is refused: it is under none of the repo's allowed "
            f"prefixes ({', '.join(self.prefixes()) or 'none'}). Allow its location first "
            "with repo.allow_virtual_source(prefix)",
            url=url,
        )

    def backend(self, prefix: str) -> SourceBackend:
        with self._lock:
            found = self._backends.get(prefix)
            if found is None:
                options = {**(self._allowed or {}).get(prefix, {}), **self._secrets.get(prefix, {})}
                found = self._backends[prefix] = open_backend(prefix, options)
            return found

    # -- at commit: the current version of each source ---------------------------------------

    def stat_many(
        self, urls: Iterable[str], seen: Mapping[str, VirtualSource] | None = None
    ) -> dict[str, VirtualSource]:
        """URL as given -> its source at its current version (what a reference records),
        each source looked up once, remote ones concurrently. ``seen`` holds versions
        zarrlake itself just read for some URLs (an import's listing of a store: S3 lists
        each object's ETag and size), taken instead of a lookup when their URL is the
        normalized, allowed one."""
        located = {u: self.locate(u) for u in set(urls)}
        out: dict[str, VirtualSource] = {}
        remote: dict[str, tuple[SourceBackend, str]] = {}
        for url, (norm, prefix) in located.items():
            known = seen.get(url) if seen is not None else None
            if known is not None and known.url == norm:
                out[url] = known
                continue
            backend = self.backend(prefix)
            if backend.is_async:
                remote[url] = (backend, norm)
            else:
                out[url] = backend.stat(norm)
        if remote:
            out.update(_run(self._stat_remote(remote)))
        return out

    async def _stat_remote(
        self, items: dict[str, tuple[SourceBackend, str]]
    ) -> dict[str, VirtualSource]:
        found = await asyncio.gather(*(b.stat_async(n) for b, n in items.values()))
        return dict(zip(items, found, strict=True))

    @staticmethod
    def check_span(source: VirtualSource, offset: int, length: int) -> None:
        """Refuse a reference to bytes past the end of its source."""
        if offset < 0 or length < 0:
            raise InvalidInputError(
                f"virtual reference to {source.url} has a negative offset or length "
                f"({offset}, {length})"
            )
        if offset + length > source.size:
            raise past_end(source.url, offset, length, source.size)

    # -- reading -----------------------------------------------------------------------------

    def _checked(self, ref: ChunkRef) -> tuple[SourceBackend, VirtualSource]:
        assert ref.source is not None
        norm, prefix = self.locate(ref.source.url)
        if norm != ref.source.url:  # a stored URL is always normalized
            raise VirtualSourceError(
                f"virtual reference {ref.source.url!r} is refused: not in normal form",
                url=ref.source.url,
            )
        return self.backend(prefix), ref.source

    @staticmethod
    def _span(ref: ChunkRef, start: int | None, end: int | None) -> tuple[int, int]:
        lo = 0 if start is None else max(0, min(start, ref.length))
        hi = ref.length if end is None else max(lo, min(end, ref.length))
        return ref.offset + lo, ref.offset + hi

    def read(self, ref: ChunkRef, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of a virtual chunk, read from its source."""
        backend, source = self._checked(ref)
        lo, hi = self._span(ref, start, end)
        return backend.read(source, lo, hi) if hi > lo else b""

    async def read_async(
        self, ref: ChunkRef, start: int | None = None, end: int | None = None
    ) -> bytes:
        """Async version of :meth:`read`; reads of one remote source made together are merged
        into few requests."""
        backend, source = await asyncio.to_thread(self._checked, ref)
        lo, hi = self._span(ref, start, end)
        if hi <= lo:
            return b""
        if not backend.is_async:
            return await asyncio.to_thread(backend.read, source, lo, hi)
        return await self._ranges.read(source, lo, hi)

    async def _fetch(self, source: VirtualSource, start: int, end: int) -> bytes:
        _, prefix = self.locate(source.url)
        return await self.backend(prefix).read_async(source, start, end)


def _run[T](coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code (a thread with no running loop,
    or one whose loop is busy: then in a thread of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(coro))
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return result[0]
