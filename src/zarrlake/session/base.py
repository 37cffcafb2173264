"""What every session is: a view of one commit (plus, for writable sessions, staged changes)
that a Zarr store reads through."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from zarrlake._loading import load_module
from zarrlake._optional import load
from zarrlake.core import RepoCore
from zarrlake.errors import ChunkCorruptionError, ReadOnlyError, SourceChangedError
from zarrlake.model import (
    ChunkRef,
    NodeMeta,
    Root,
    StagedState,
    build_snapshot,
)
from zarrlake.model.batches import batch_size
from zarrlake.model.manifest import split_coords
from zarrlake.model.metadata import chunk_owner
from zarrlake.model.overlay import Overlay
from zarrlake.model.records import CommitRecord, StagedEntry
from zarrlake.model.view import view_children, view_keys, view_nodes
from zarrlake.session.keys import Target, meta_path
from zarrlake.session.virtual import VirtualRef, batch_shape, plan_virtual, ref_columns
from zarrlake.types import ChunkCoords, RepoConfig, validate_key

if TYPE_CHECKING:
    from zarrlake.model.diff import Diff
    from zarrlake.model.virtual import VirtualSource
    from zarrlake.store import LakeStore, StoreSession

__all__ = ["Session"]

_READ_ONLY = (
    "store was opened in read-only mode and does not support writing: this is a read-only "
    "session; open one with repo.writable_session(branch)"
)


class Session(ABC):
    """A unit of work on a branch (:class:`WritableSession`) or a fixed view of one commit
    (:class:`ReadonlySession`). Both read through :attr:`store`."""

    id: str | None
    branch: str | None

    def __init__(self, core: RepoCore, commit: str, base: CommitRecord | None = None) -> None:
        self._core = core
        self.base_commit = commit
        self._load_base(commit, base)

    # -- description ---------------------------------------------------------------------------

    @property
    def config(self) -> RepoConfig:
        """The configuration of the repo this session belongs to."""
        return self._core.config

    @property
    @abstractmethod
    def read_only(self) -> bool:
        """Whether writes through this session are refused."""

    @property
    def store(self) -> LakeStore:
        """A Zarr v3 store over this session. It pickles as configuration: unpickled in
        another process, it joins the same session there (see ``docs/concepts.md``)."""
        load_module("zarrlake.store")  # zarr, loaded on first use: opening a repo needs none
        from zarrlake.store import LakeStore

        return LakeStore(self, read_only=self.read_only)

    @abstractmethod
    def opener(self) -> Callable[[], StoreSession]:
        """A picklable callable that opens this session again, in any process."""

    def _repr_html_(self) -> str:
        from zarrlake.display import session_html

        return session_html(self)  # type: ignore[arg-type]  # duck-typed: see display

    def widget(self) -> Any:
        """A Jupyter widget: the countdown to expiry (ticking in the browser), the staged
        change count, and extend / abandon buttons. Needs the ``ui`` extra."""
        return load("zarrlake.ui.widgets", "SessionWidget", "ui")(self)

    @property
    def label(self) -> str:
        """What a store's ``str`` shows: ``zarrlake://<repo>/<session or commit>``."""
        return f"zarrlake://{self._core.name}/{self.id or self.base_commit}"

    # -- the base commit -----------------------------------------------------------------------

    def _load_base(self, commit: str, row: CommitRecord | None = None) -> None:
        reader = self._core.reader
        if row is None or row.id != commit:
            row, data = self._core.catalog.commits.get_with_root(commit)
            if data is not None and not reader.has_root(row.root_hash):
                reader.prime_root_bytes(row.root_hash, data)
        self._base_row: CommitRecord = row
        self._base_root: Root = reader.root(row.root_hash)

    # -- hooks of writable sessions (a read-only session has no staged changes) ---------------

    def _node_state(self, path: str) -> tuple[bytes | None, bool]:
        """(staged metadata hash, dropped) of a node."""
        return None, False

    def _staged_state(self) -> StagedState:
        """Every change staged in this session, by any process."""
        return StagedState()

    def _retry_unknown_key(self, key: str) -> bool:
        """``key`` matched no array: reload what other processes staged; retry if True."""
        return False

    def _staged_lookups(self, targets: Sequence[Target]) -> list[tuple[bool, ChunkRef | None]]:
        """(found, ref) of each chunk or raw key among the staged changes; a metadata key's
        lookup refreshes its node's staged state instead (what ``_node_state`` answers)."""
        return [(False, None)] * len(targets)

    def _before_read(self, t: Target) -> None:  # noqa: B027 - an optional hook
        """Called before each read of a key (serializable sessions record it)."""

    # -- view ----------------------------------------------------------------------------------

    def _node_meta_hash(self, path: str) -> bytes | None:
        meta, dropped = self._node_state(path)
        if meta is not None:
            return meta
        if dropped:
            return None
        node = self._base_root.nodes.get(path)
        return node.meta if node else None

    def _node_meta(self, path: str) -> NodeMeta | None:
        h = self._node_meta_hash(path)
        return None if h is None else self._core.reader.node_meta(h)

    def _find_array(self, key: str) -> tuple[str, ChunkCoords] | None:
        return chunk_owner(key, self._node_meta)

    def _target(self, key: str) -> Target:
        validate_key(key)
        mp = meta_path(key)
        if mp is not None:
            return Target("meta", mp)
        found = self._find_array(key)
        if found is None and self._retry_unknown_key(key):
            found = self._find_array(key)
        if found is None:
            return Target("raw", "", key=key, store_key=key)
        return Target("chunk", found[0], found[1], store_key=key)

    def _base_ref(self, t: Target) -> ChunkRef | None:
        if t.kind == "raw":
            return self._base_root.raw.get(t.key)
        node = self._base_root.nodes.get(t.path)
        if node is None or node.manifest is None:
            return None
        reader = self._core.reader
        index = reader.index(node.manifest)
        if len(t.coords) != len(index.shard_shape):
            return None
        pos, flat = split_coords(t.coords, index.shard_shape)
        sh = index.shard_at(pos, reader)
        return None if sh is None else reader.shard(sh).get(flat)

    def locate(self, key: str) -> bytes | ChunkRef | None:
        """What ``key`` holds in this view: metadata bytes, a chunk ref, or ``None``."""
        found = self.locate_many([key])[0]
        if isinstance(found, Exception):
            raise found
        return found

    def locate_many(self, keys: Sequence[str]) -> list[bytes | ChunkRef | Exception | None]:
        """:meth:`locate` of each of ``keys``, the staged changes asked about all of them at
        once; for a key that cannot be read, the error it alone raised."""
        out: list[bytes | ChunkRef | Exception | None] = [None] * len(keys)
        asked: list[tuple[int, Target]] = []
        for i, key in enumerate(keys):
            try:
                t = self._target(key)
                self._before_read(t)
                if t.kind in ("meta", "raw") or self._in_grid(t):
                    asked.append((i, t))
            except Exception as exc:  # that key's own error (a malformed key), for its caller
                out[i] = exc
        if not asked:
            return out
        try:
            found: list[Any] = self._staged_lookups([t for _, t in asked])
        except Exception as exc:  # the one lookup failed (the catalog): so does every key asked
            found = [exc] * len(asked)
        for (i, t), f in zip(asked, found, strict=True):
            try:
                if isinstance(f, Exception):
                    raise f
                if t.kind == "meta":
                    h = self._node_meta_hash(t.path)
                    out[i] = None if h is None else self._core.reader.meta_bytes(h)
                else:
                    out[i] = f[1] if f[0] else self._base_ref(t)
            except Exception as exc:
                out[i] = exc
        return out

    def _in_grid(self, t: Target) -> bool:
        nm = self._node_meta(t.path)
        return nm is None or nm.in_grid(t.coords)

    def read_ref(self, ref: ChunkRef, start: int | None = None, end: int | None = None) -> bytes:
        """The bytes of a chunk ref (``[start, end)`` of them if given)."""
        if ref.inline is not None:
            if self._core.config.verify_reads and not self._core.hasher.matches(
                ref.inline, ref.hash
            ):
                raise ChunkCorruptionError(
                    f"inline chunk {ref.hash.hex()} does not match its hash; the catalog row is "
                    "corrupt. Run repo.fsck(verify=True)"
                )
            return ref.inline[start:end] if start is not None or end is not None else ref.inline
        try:
            return self._core.read_chunk(ref, start, end)
        except SourceChangedError as exc:
            raise self._at_commit(exc) from exc

    def _at_commit(self, exc: SourceChangedError) -> SourceChangedError:
        """The error, naming the commit read (a virtual chunk's source changed)."""
        return SourceChangedError(
            f"reading commit {self.base_commit}: {exc}", url=exc.url, commit=self.base_commit
        )

    @property
    def async_reads(self) -> bool:
        """Whether objects are best read with :meth:`read_ref_async` (a network store whose
        requests need no thread each) rather than :meth:`read_ref` in a worker thread."""
        return self._core.objects.async_io

    async def read_ref_async(
        self, ref: ChunkRef, start: int | None = None, end: int | None = None
    ) -> bytes:
        """Async version of :meth:`read_ref`."""
        if ref.inline is not None:
            return self.read_ref(ref, start, end)
        try:
            return await self._core.read_chunk_async(ref, start, end)
        except SourceChangedError as exc:
            raise self._at_commit(exc) from exc

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        """Every key of the view under ``prefix`` (a plain string prefix, as zarr means it),
        each once and each readable (:func:`~zarrlake.model.view.view_keys`)."""
        yield from view_keys(self._base_root, self._staged_state(), self._core.reader, prefix)

    def children(self, prefix: str = "") -> dict[str, bool]:
        """The names directly under the directory ``prefix``, sorted, each with whether it is
        a directory (:func:`~zarrlake.model.view.view_children`): a group's listing names its
        members without listing their chunks."""
        return view_children(self._base_root, self._staged_state(), self._core.reader, prefix)

    def nodes(self) -> dict[str, str]:
        """Every node of the view, sorted by path (``""`` is the root group): path ->
        ``"group"`` or ``"array"``. Reads node metadata only (no chunk listing)."""
        return view_nodes(self._base_root, self._staged_state(), self._core.reader)

    @property
    def has_changes(self) -> bool:
        """Whether :meth:`commit` would change anything, decided as it decides (the snapshot
        built from the base and the staged changes records a change): rewriting the bytes a
        chunk already holds, or writing a key and deleting it again, changes nothing."""
        state = self._staged_state()
        if state.is_empty():
            return False
        return not build_snapshot(self._base_root, state, self._core.reader).changes.is_empty()

    def status(self) -> Diff:
        """The uncommitted changes against the base commit, as a :class:`Diff` (the diff that
        committing now would record, before any rebase). Empty for read-only sessions."""
        from zarrlake.model.diff import Diff, diff_roots  # loaded here: reading never needs it

        base = self.base_commit
        state = self._staged_state()
        if state.is_empty():
            return Diff(before=base, after=base)
        reader = self._core.reader
        built = build_snapshot(self._base_root, state, reader)
        return diff_roots(
            self._base_root,
            built.root,
            Overlay(reader, built.blobs, built.staged),
            labels=(base, "staged"),
        )

    # -- writing (refused here; writable sessions override) ------------------------------------

    async def write(self, key: str, data: bytes | memoryview) -> None:
        """Stage ``data`` under ``key``."""
        raise ReadOnlyError(_READ_ONLY)

    async def delete(self, key: str) -> None:
        """Stage the removal of ``key``."""
        raise ReadOnlyError(_READ_ONLY)

    async def delete_dir(self, prefix: str) -> None:
        """Stage the removal of everything under a directory prefix."""
        raise ReadOnlyError(_READ_ONLY)

    def write_sync(self, key: str, data: bytes | memoryview) -> None:
        """Synchronous version of :meth:`write`."""
        raise ReadOnlyError(_READ_ONLY)

    def put_virtual_refs(
        self,
        path: str,
        refs: Iterable[VirtualRef],
        *,
        seen: Mapping[str, VirtualSource] | None = None,
    ) -> int:
        """Stage virtual chunk references for the array at ``path``: each ``(coords, url,
        offset, length)`` says the chunk at ``coords`` is ``length`` bytes at ``offset`` of
        the file or object ``url`` (a local path, ``file://``, ``s3://``, ``http(s)://``),
        which stays where it is. Every URL must be under a prefix the repo allows
        (``repo.allow_virtual_source``), and each source's version (size, and ETag or
        modification time) is recorded now, so a read after the source changed is refused.
        Nothing is staged if any reference is refused. Returns how many were staged.

        ``seen`` maps URLs to the versions zarrlake just read in a listing of their store
        (``import_zarr``), recorded instead of looking each source up again."""
        nm = self._node_meta(path)
        columns = _NO_REFS if nm is None else ref_columns(refs, nm.ndim)
        return self.put_virtual_columns(path, *columns, seen=seen)

    def put_virtual_columns(
        self,
        path: str,
        coords: np.ndarray,
        urls: Sequence[str],
        offsets: np.ndarray,
        lengths: np.ndarray,
        *,
        seen: Mapping[str, VirtualSource] | None = None,
    ) -> int:
        """:meth:`put_virtual_refs` of references given as columns: ``coords`` (one row of
        chunk coordinates per reference), ``urls``, ``offsets`` and ``lengths``, without a
        Python object per reference (a VirtualiZarr manifest's arrays go as they are).
        Returns how many chunks were staged (a chunk named twice takes its last reference)."""
        nm = self._node_meta(path)
        shape = self.virtual_shard_shape(path) or ()
        rows = plan_virtual(
            self._core.sources, path, nm, shape, (coords, urls, offsets, lengths), seen
        )
        self._stage_batches(path, rows)
        return sum(map(batch_size, rows))

    def virtual_shard_shape(self, path: str) -> tuple[int, ...] | None:
        """The shard shape (in chunks) that references to the array at ``path`` are staged
        with, one batch per shard position (``None`` if there is no array at ``path``). A
        caller staging many references hands them over in the order of these positions
        (``import_zarr`` does): each position is then staged once, not merged again and again."""
        nm = self._node_meta(path)
        if nm is None or not nm.is_array:
            return None
        shape = self._staged_batch_shape(path)
        return shape if shape is not None else self._batch_shape(path, nm)

    def _batch_shape(self, path: str, nm: NodeMeta) -> tuple[int, ...]:
        """The shard shape references to the array at ``path`` are staged with."""
        base = None if self._node_state(path)[1] else self._base_root.nodes.get(path)
        return batch_shape(base, nm, self._core.reader)

    def _guess_batch_shape(self, t: Target) -> tuple[int, ...] | None:
        """The shard shape references to the chunk ``t`` are usually staged with."""
        nm = self._node_meta(t.path) if t.kind == "chunk" else None
        return None if nm is None else self._batch_shape(t.path, nm)

    def _staged_batch_shape(self, path: str) -> tuple[int, ...] | None:
        """The shard shape of the batches staged for ``path`` so far, if any."""
        return None

    def _stage_batches(self, path: str, rows: list[StagedEntry]) -> None:
        raise ReadOnlyError(_READ_ONLY)

    def delete_sync(self, key: str) -> None:
        """Synchronous version of :meth:`delete`."""
        raise ReadOnlyError(_READ_ONLY)


_NO_REFS: tuple[np.ndarray, list[str], np.ndarray, np.ndarray] = (
    np.empty((0, 0), np.int64),
    [],
    np.empty(0, np.int64),
    np.empty(0, np.int64),
)
