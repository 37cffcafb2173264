"""``LakeStore``: the ``zarr.abc.store.Store`` adapter over a session. Translation only."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.core.buffer import Buffer, BufferPrototype

from zarrlake.errors import InvalidInputError, ReadOnlyError
from zarrlake.model import ChunkRef

if TYPE_CHECKING:
    from zarrlake.repo import Repo, RepoConfig
    from zarrlake.session import Session

__all__ = ["LakeStore"]

_READ_ONLY = "store was opened in read-only mode and does not support writing"


def _window(byte_range: ByteRequest | None, size: int) -> tuple[int | None, int | None]:
    """[start, end) of a zarr byte request against an object of ``size`` bytes."""
    if byte_range is None:
        return None, None
    if isinstance(byte_range, RangeByteRequest):
        return min(byte_range.start, size), min(max(byte_range.end, byte_range.start), size)
    if isinstance(byte_range, OffsetByteRequest):
        return min(byte_range.offset, size), size
    if isinstance(byte_range, SuffixByteRequest):
        return max(0, size - byte_range.suffix), size
    raise TypeError(f"Unexpected byte_range, got {byte_range}")


class LakeStore(Store):
    """A Zarr v3 store over a zarrlake session.

    Obtain one from ``session.store``. It pickles as configuration (catalog URL, repo name,
    session id or commit id), so it can be shipped to other processes, which join the same
    session. Two stores are equal when their configuration is.

    Parameters
    ----------
    repo
        The repo (or its :class:`RepoConfig`).
    session_id
        A writable session to read and write through.
    commit
        Or: a commit to read (read-only).
    read_only
        Refuse writes even through a writable session.
    durable
        Make every write durable in the catalog (visible to every process of the session)
        before the call that made it returns, instead of write-behind. A task that writes
        through such a store has finished its writes when it finishes, so a dask task or a
        batch job needs no ``flush()``. Survives pickling.
    """

    supports_writes: bool = True
    supports_deletes: bool = True
    supports_listing: bool = True
    supports_partial_writes = False
    _supports_sync_io = False

    def __init__(
        self,
        repo: Repo | RepoConfig,
        *,
        session_id: str | None = None,
        commit: str | None = None,
        read_only: bool = False,
        durable: bool = False,
    ) -> None:
        from zarrlake.repo import Repo, RepoConfig

        if (session_id is None) == (commit is None):
            raise InvalidInputError("LakeStore needs exactly one of session_id= or commit=")
        if commit is not None and not read_only:
            raise ReadOnlyError(
                f"{_READ_ONLY}: a store on a commit is read-only (pass read_only=True)"
            )
        super().__init__(read_only=read_only)
        self._config: RepoConfig = repo.config if isinstance(repo, Repo) else repo
        if not isinstance(self._config, RepoConfig):
            raise InvalidInputError("LakeStore(repo=...) takes a zarrlake.Repo or RepoConfig")
        self._session_id = session_id
        self._commit = commit
        self._durable = bool(durable)
        self._session_obj: Session | None = None
        self._pid = os.getpid()

    @classmethod
    def _for_session(cls, session: Session) -> LakeStore:
        if session.id is not None and not session.read_only:
            store = cls(session.repo, session_id=session.id)
        else:
            store = cls(session.repo, commit=session.base_commit, read_only=True)
        store._session_obj = session
        return store

    @property
    def session(self) -> Session:
        """The session this store reads and writes through (opened lazily in each process)."""
        if self._pid != os.getpid():  # inherited through fork: open our own
            self._session_obj, self._pid = None, os.getpid()
        if self._session_obj is None:
            from zarrlake.repo import Repo
            from zarrlake.session import Session

            repo = Repo._cached(self._config)
            if self._session_id is not None:
                self._session_obj = repo.session(self._session_id)
            else:
                self._session_obj = Session(repo, commit=self._commit or "")
        return self._session_obj

    # -- identity ------------------------------------------------------------------------------

    def _kwargs(self) -> dict[str, Any]:
        return {
            "repo": self._config,
            "session_id": self._session_id,
            "commit": self._commit,
            "read_only": self._read_only,
            "durable": self._durable,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._kwargs(),))

    def __eq__(self, value: object) -> bool:
        return isinstance(value, LakeStore) and value._kwargs() == self._kwargs()

    def __hash__(self) -> int:
        return hash(
            (self._config.key(), self._session_id, self._commit, self._read_only, self._durable)
        )

    def __repr__(self) -> str:
        what = f"session={self._session_id}" if self._session_id else f"commit={self._commit}"
        return f"LakeStore(repo={self._config.name!r}, {what}, read_only={self._read_only})"

    @property
    def durable(self) -> bool:
        """Whether each write is durable in the catalog when the call that made it returns."""
        return self._durable

    def __str__(self) -> str:
        what = self._session_id or self._commit
        return f"zarrlake://{self._config.name}/{what}"

    def with_read_only(self, read_only: bool = False) -> LakeStore:
        kwargs = self._kwargs()
        kwargs["read_only"] = read_only
        store = LakeStore(**kwargs)
        store._session_obj = self._session_obj
        return store

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(_READ_ONLY)

    @property
    def supports_consolidated_metadata(self) -> bool:
        # Every commit is already a consistent snapshot; consolidation would only add a copy.
        return False

    # -- reading -------------------------------------------------------------------------------

    def _get_sync(self, key: str, byte_range: ByteRequest | None) -> bytes | None:
        session = self.session
        found = session.locate(key)
        if found is None:
            return None
        if isinstance(found, ChunkRef):
            start, end = _window(byte_range, found.length)
            return session.read_ref(found, start, end)
        start, end = _window(byte_range, len(found))
        return found[start:end]

    async def get(
        self,
        key: str,
        prototype: BufferPrototype,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        if byte_range is not None and not isinstance(
            byte_range, RangeByteRequest | OffsetByteRequest | SuffixByteRequest
        ):
            raise TypeError(f"Unexpected byte_range, got {byte_range}")
        data = await asyncio.to_thread(self._get_sync, key, byte_range)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self.session.locate, key) is not None

    async def getsize(self, key: str) -> int:
        found = await asyncio.to_thread(self.session.locate, key)
        if found is None:
            raise FileNotFoundError(key)
        return found.length if isinstance(found, ChunkRef) else len(found)

    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """Synchronous version of :meth:`get`."""
        from zarr.core.buffer import default_buffer_prototype

        data = self._get_sync(key, byte_range)
        if data is None:
            return None
        return (prototype or default_buffer_prototype()).buffer.from_bytes(data)

    # -- writing -------------------------------------------------------------------------------

    def set_sync(self, key: str, value: Buffer) -> None:
        """Synchronous version of :meth:`set`."""
        self._check_writable()
        session = self.session
        fut = session.submit(session.prepare_write(key, value.to_bytes()))
        if self._durable:
            fut.result()

    def delete_sync(self, key: str) -> None:
        """Synchronous version of :meth:`delete`."""
        self._check_writable()
        session = self.session
        fut = session.submit(session.prepare_delete(key))
        if self._durable:
            fut.result()

    async def _staged(self, ops: list[tuple[str, Any]]) -> None:
        """Submit prepared changes and wait until the catalog has them (durable stores)."""
        session = self.session
        await asyncio.gather(*(asyncio.wrap_future(session.submit(op)) for op in ops))

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        if not isinstance(value, Buffer):
            raise TypeError(f"LakeStore.set takes a zarr Buffer, got {type(value).__name__}")
        data = memoryview(value.as_buffer_like())
        if self._durable:
            op = await asyncio.to_thread(self.session.prepare_write, key, data)
            await self._staged([op])
        else:
            await self.session.write_async(key, data)

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        self._check_writable()
        if not await self.exists(key):
            await self.set(key, value)

    async def delete(self, key: str) -> None:
        self._check_writable()
        if self._durable:
            await self._staged([await asyncio.to_thread(self.session.prepare_delete, key)])
        else:
            await self.session.delete_async(key)

    async def delete_dir(self, prefix: str) -> None:
        self._check_writable()
        if self._durable:
            await self._staged(await asyncio.to_thread(self.session.prepare_delete_dir, prefix))
        else:
            await self.session.delete_dir_async(prefix)

    # -- listing -------------------------------------------------------------------------------

    async def _keys(self, prefix: str) -> list[str]:
        return await asyncio.to_thread(lambda: list(self.session.iter_keys(prefix)))

    async def list(self) -> AsyncIterator[str]:
        for key in await self._keys(""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in await self._keys(prefix):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        prefix = prefix.rstrip("/")
        full = f"{prefix}/" if prefix else ""
        seen: set[str] = set()
        for key in await self._keys(full):
            child = key[len(full) :].split("/", 1)[0]
            if child not in seen:
                seen.add(child)
                yield child


def _rebuild(kwargs: dict[str, Any]) -> LakeStore:
    return LakeStore(**kwargs)
