"""Sessions: the unit of work, and what a store sees through one.

A writable session reads its base commit plus its staged changes (its own and those of the
other processes cooperating on it), stages writes in the catalog, and commits them atomically
with compare-and-swap on its branch, rebasing automatically when commits landed meanwhile and
nothing conflicts. A read-only session reads one commit, forever.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from zarrlake.catalog import CommitRow, SessionRow, StagedRow
from zarrlake.errors import (
    CommitTimeoutError,
    Conflict,
    ConflictError,
    EmptyCommitError,
    InvalidInputError,
    ReadOnlyError,
    SessionClosedError,
    SessionExpiredError,
)
from zarrlake.model import (
    ChangeSet,
    ChunkRef,
    NodeMeta,
    ReadSet,
    Root,
    Solver,
    StagedNode,
    StagedState,
    build_snapshot,
    changes_from_staged,
    content_hash,
    detect_conflicts,
    iter_manifest,
    parse_node_meta,
    rebase_staged,
)
from zarrlake.model.manifest import INLINE_LIMIT, split_coords
from zarrlake.model.metadata import format_chunk_key, parse_chunk_key
from zarrlake.types import ChunkCoords, from_epoch, new_commit_id, validate_key

if TYPE_CHECKING:
    from zarrlake.model.diff import Diff
    from zarrlake.repo import Repo
    from zarrlake.store import LakeStore

__all__ = ["Session"]

MAX_EXPIRY = timedelta(days=7)
DEFAULT_EXPIRY = timedelta(hours=24)


def _meta_path(key: str) -> str | None:
    if key == "zarr.json":
        return ""
    if key.endswith("/zarr.json"):
        return key[: -len("/zarr.json")]
    return None


def _under(path: str, prefix: str) -> bool:
    """Whether node ``path`` is ``prefix`` or below it (``prefix`` without trailing slash)."""
    return prefix == "" or path == prefix or path.startswith(prefix + "/")


def _could_be_chunk_key(key: str) -> bool:
    """Whether some array's chunk key encoding could spell ``key`` (``c``, ``c/1``, ``c.1``,
    ``1``, ``1.2``): anything else (``.zattrs``, ``foo/bar.txt``) is never a chunk."""
    last = key.rsplit("/", 1)[-1]
    if last == "c" or last.startswith("c."):
        return True
    return all(p.isdigit() for p in last.split("."))


def _coords_key(coords: ChunkCoords) -> str:
    return ",".join(map(str, coords))


def _key_coords(key: str) -> ChunkCoords:
    return tuple(int(x) for x in key.split(",")) if key else ()


def _row_ref(row: StagedRow) -> ChunkRef | None:
    if row.hash is None:
        return None
    return ChunkRef(row.hash, row.length, row.inline)


@dataclass(frozen=True, slots=True)
class _Target:
    """What a store key means in a session's view."""

    kind: str  # "meta" | "chunk" | "raw"
    path: str  # node path ("" for raw keys)
    key: str  # "" for meta, "i,j" for chunks, the store key for raw


class _Stager:
    """Write-behind staging: rows queue up and a flusher thread records them in the catalog in
    large transactions.

    A write is visible to its own process at once (the session's local view) and to the other
    processes of the session when its batch is committed, milliseconds later; ``flush()``
    waits until every queued write is durable, and ``commit()`` flushes first. A failed batch
    (for example, the session expired) fails every later write, flush and commit.
    """

    MAX_BATCH = 5000
    MAX_PENDING = 50_000
    LINGER = 0.004  # seconds a small batch waits for company: one transaction costs ~1 ms

    def __init__(self, session: Session) -> None:
        self.session = session
        self.cond = threading.Condition()
        self.pending: list[tuple[str, Any, Future[None]]] = []
        self.inflight = 0
        self.waiters = 0
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def wait_room(self) -> None:
        """Back-pressure: wait while the catalog is far behind the writers. Callers must not
        hold a lock that the flusher thread's completion callbacks take."""
        with self.cond:
            while len(self.pending) >= self.MAX_PENDING and self.error is None:
                self.cond.wait(timeout=1.0)

    def submit(self, kind: str, item: Any) -> Future[None]:
        fut: Future[None] = Future()
        with self.cond:
            if self.error is not None:
                raise self.error
            self.pending.append((kind, item, fut))
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._run, name="zarrlake-stager", daemon=True
                )
                self.thread.start()
            self.cond.notify_all()
        return fut

    def flush(self) -> None:
        """Wait until everything submitted so far is durable in the catalog."""
        with self.cond:
            self.waiters += 1
            self.cond.notify_all()
            try:
                while self.pending or self.inflight:
                    self.cond.wait(timeout=1.0)
            finally:
                self.waiters -= 1
            if self.error is not None:
                raise self.error

    def _take(self) -> list[tuple[str, Any, Future[None]]]:
        with self.cond:
            if not self.pending:
                self.cond.wait(timeout=1.0)
            deadline = time.monotonic() + self.LINGER
            while 0 < len(self.pending) < self.MAX_BATCH and not self.waiters:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(timeout=left)
            # Drops must not share a batch with earlier rows: the catalog applies a batch's
            # drops first. Cut the batch at the first drop that follows a row.
            batch: list[tuple[str, Any, Future[None]]] = []
            for item in self.pending[: self.MAX_BATCH]:
                if item[0] == "drop" and any(b[0] != "drop" for b in batch):
                    break
                batch.append(item)
            del self.pending[: len(batch)]
            self.inflight = len(batch)
            self.cond.notify_all()
            return batch

    def _run(self) -> None:
        idle = 0
        while True:
            batch = self._take()
            if not batch:
                idle += 1
                if idle >= 5:
                    with self.cond:
                        # decided under the lock that submit() takes, so a write queued now
                        # either is seen here or starts a new thread
                        if not self.pending:
                            self.thread = None
                            return
                    idle = 0
                continue
            idle = 0
            try:
                self.session._flush_batch(batch)
            except BaseException as exc:
                with self.cond:
                    self.error = self.error or exc
                for _, _, fut in batch:
                    fut.set_exception(exc)
            else:
                for _, _, fut in batch:
                    fut.set_result(None)
            with self.cond:
                self.inflight = 0
                self.cond.notify_all()


class Session:
    """A unit of work on a branch (writable) or a fixed view of one commit (read-only).

    Create with :meth:`Repo.writable_session`, :meth:`Repo.readonly_session`, or join an
    existing writable session from another process with :meth:`Repo.session`.
    """

    def __init__(
        self,
        repo: Repo,
        *,
        commit: str,
        row: SessionRow | None = None,
        branch: str | None = None,
        base: CommitRow | None = None,
        fresh: bool = False,
    ) -> None:
        self.repo = repo
        self._row = row
        self.id: str | None = row.id if row else None
        self.branch: str | None = row.branch if row else branch
        self.base_commit: str = row.base_commit if row else commit
        self.isolation: str = row.isolation if row else "snapshot"
        self._committed: str | None = None
        self._closed: str | None = None  # "committed" | "abandoned" once this process closed it
        self._lock = threading.RLock()
        self._local: dict[tuple[str, str, str], StagedRow] = {}
        # node-level staged state: this process's own (authoritative for it, includes writes not
        # yet flushed) and the cooperating processes' (as last loaded from the catalog)
        self._metas_local: dict[str, tuple[bytes | None, bool]] = {}
        self._metas: dict[str, tuple[bytes | None, bool]] = {}
        # when this process's node writes became durable, on a counter that refreshes compare
        # against (a refresh must not replace a write that landed after its query)
        self._epoch = 0
        self._done_at: dict[str, int] = {}
        self._reads: set[tuple[str, str]] = set()
        self._stager = _Stager(self) if row else None
        self._load_base(self.base_commit, base)
        if row is not None and not fresh:  # a session this process just created has nothing staged
            self._refresh_metas()

    # -- description ---------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return self._row is None or self._closed is not None

    @property
    def expires_at(self) -> datetime | None:
        return None if self._row is None else from_epoch(self._row.expires_at)

    @property
    def created_at(self) -> datetime | None:
        return None if self._row is None else from_epoch(self._row.created_at)

    @property
    def author(self) -> str | None:
        return None if self._row is None else self._row.author

    @property
    def store(self) -> LakeStore:
        """A Zarr v3 store over this session (read-only for read-only sessions)."""
        from zarrlake.store import LakeStore

        return LakeStore._for_session(self)

    def __repr__(self) -> str:
        if self._row is None:
            return f"<Session read-only commit={self.base_commit[:10]}>"
        state = (
            f"committed as {self._committed[:10]}" if self._committed else (self._closed or "open")
        )
        return (
            f"<Session {self.id} branch={self.branch!r} base={self.base_commit[:10]} {state} "
            f"expires={self._row.expires_at and from_epoch(self._row.expires_at).isoformat(timespec='seconds')}>"
        )

    # -- view ----------------------------------------------------------------------------------

    def _load_base(self, commit: str, row: CommitRow | None = None) -> None:
        reader = self.repo._reader
        if row is None or row.id != commit:
            row, data = self.repo._catalog.get_commit_and_blob(self.repo._id, commit)
            if data is not None and not reader.has_root(row.root_hash):
                reader.prime_root_bytes(row.root_hash, data)
        self._base_root: Root = self.repo._reader.root(row.root_hash)
        self._base_generation = row.generation

    def _refresh_metas(self) -> None:
        """Load the node-level staged changes of every cooperating process."""
        if self.id is None:
            return
        start = self._epoch
        rows = self.repo._catalog.load_staged(self.id, kinds=("meta", "drop"))
        metas: dict[str, tuple[bytes | None, bool]] = {}
        for r in rows:
            meta, dropped = metas.get(r.path, (None, False))
            if r.kind == "drop":
                dropped = True
            else:
                meta = r.hash
            metas[r.path] = (meta, dropped)
        with self._lock:
            for path, done in self._done_at.items():
                if done >= start:  # our write landed after the query read: ours is newer
                    if path in self._metas:
                        metas[path] = self._metas[path]
                    else:
                        metas.pop(path, None)
            self._metas = metas

    def _refresh_node(self, path: str) -> None:
        """Reload one node's staged metadata: another process of the session may have changed
        it (read-uncommitted inside a session). This process's unflushed writes still win."""
        start = self._epoch
        found = self.repo._catalog.get_staged(self.id or "", path, ("meta",), "")
        meta = found["meta"].hash if "meta" in found else None
        state = (meta, "drop" in found)
        with self._lock:
            if self._done_at.get(path, -1) >= start:
                return  # our own write landed after the query read: what we hold is newer
            if state == (None, False):
                self._metas.pop(path, None)
            else:
                self._metas[path] = state

    def _node_state(self, path: str) -> tuple[bytes | None, bool]:
        found = self._metas_local.get(path)
        return found if found is not None else self._metas.get(path, (None, False))

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
        return None if h is None else self.repo._reader.node_meta(h)

    def _find_array(self, key: str) -> tuple[str, ChunkCoords] | None:
        cut = len(key)
        while True:
            cut = key.rfind("/", 0, cut)
            path, rel = (key[:cut], key[cut + 1 :]) if cut >= 0 else ("", key)
            nm = self._node_meta(path)
            if nm is not None and nm.is_array:
                coords = parse_chunk_key(rel, nm.encoding, nm.ndim)
                if coords is not None:
                    return path, coords
            if cut < 0:
                return None

    def _target(self, key: str) -> _Target:
        validate_key(key)
        mp = _meta_path(key)
        if mp is not None:
            return _Target("meta", mp, "")
        found = self._find_array(key)
        if (
            found is None
            and self._row is not None
            and self._closed is None
            and _could_be_chunk_key(key)
        ):
            self._refresh_metas()  # another process may have created the array meanwhile
            found = self._find_array(key)
        if found is None:
            return _Target("raw", "", key)
        return _Target("chunk", found[0], _coords_key(found[1]))

    def _base_ref(self, t: _Target) -> ChunkRef | None:
        if t.kind == "raw":
            return self._base_root.raw.get(t.key)
        node = self._base_root.nodes.get(t.path)
        if node is None or node.manifest is None:
            return None
        reader = self.repo._reader
        index = reader.index(node.manifest)
        coords = _key_coords(t.key)
        if len(coords) != len(index.shard_shape):
            return None
        pos, flat = split_coords(coords, index.shard_shape)
        sh = index.shards.get(pos)
        return None if sh is None else reader.shard(sh).get(flat)

    def locate(self, key: str) -> bytes | ChunkRef | None:
        """What ``key`` holds in this view: metadata bytes, a chunk ref, or ``None``."""
        t = self._target(key)
        if self.isolation == "serializable" and not self.read_only:
            # key "" is a node's metadata, "i,j" a chunk, "raw:<key>" a non-Zarr key
            self._reads.add(("", "raw:" + t.key) if t.kind == "raw" else (t.path, t.key))
        if t.kind == "meta":
            if self._row is not None and self._closed is None:
                self._refresh_node(t.path)
            h = self._node_meta_hash(t.path)
            return None if h is None else self.repo._reader.meta_bytes(h)
        if self._row is not None and self._closed is None:
            kind = t.kind
            local = self._local.get((t.path, kind, t.key))
            if local is not None:
                return _row_ref(local)
            found = self.repo._catalog.get_staged(self.id or "", t.path, (kind,), t.key)
            if kind in found:
                return _row_ref(found[kind])
            if "drop" in found or self._node_state(t.path)[1]:
                return None
        return self._base_ref(t)

    def read_ref(self, ref: ChunkRef, start: int | None = None, end: int | None = None) -> bytes:
        """The bytes of a chunk ref (``[start, end)`` of them if given)."""
        if ref.inline is not None:
            return ref.inline[start:end] if start is not None or end is not None else ref.inline
        return self.repo._objects.read(ref.hash, start, end)

    # -- listing -------------------------------------------------------------------------------

    def _staged_state(self) -> StagedState:
        """Every change staged in this session, by any process."""
        state = StagedState()
        if self.id is None or self._closed is not None:
            return state
        if self._stager is not None:
            self._stager.flush()
        for r in self.repo._catalog.load_staged(self.id):
            if r.kind == "raw":
                state.raw[r.key] = _row_ref(r)
                continue
            sn = state.node(r.path)
            if r.kind == "drop":
                sn.dropped = True
            elif r.kind == "meta":
                sn.meta = r.hash
            else:
                sn.chunks[_key_coords(r.key)] = _row_ref(r)
        return state

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        """Every key of the view under ``prefix`` (a plain string prefix, as zarr means it)."""
        state = self._staged_state()
        reader = self.repo._reader
        paths = set(self._base_root.nodes) | set(state.nodes)
        for path in sorted(paths):
            sn = state.nodes.get(path, StagedNode())
            base = None if sn.dropped else self._base_root.nodes.get(path)
            meta = sn.meta if sn.meta is not None else (base.meta if base else None)
            if meta is None:
                continue
            node_prefix = f"{path}/" if path else ""
            if not (node_prefix.startswith(prefix) or prefix.startswith(node_prefix)):
                continue
            mkey = node_prefix + "zarr.json"
            if mkey.startswith(prefix):
                yield mkey
            nm = reader.node_meta(meta)
            if not nm.is_array:
                continue
            coords: set[ChunkCoords] = set()
            if (
                base is not None
                and base.manifest is not None
                and reader.node_meta(base.meta).ndim == nm.ndim
            ):
                coords = {c for c, _ in iter_manifest(reader.index(base.manifest), reader)}
            for c, ref in sn.chunks.items():
                if ref is None:
                    coords.discard(c)
                else:
                    coords.add(c)
            for c in sorted(coords):
                key = node_prefix + format_chunk_key(c, nm.encoding)
                if key.startswith(prefix):
                    yield key
        raw = dict(self._base_root.raw)
        for k, ref in state.raw.items():
            if ref is None:
                raw.pop(k, None)
            else:
                raw[k] = ref
        yield from sorted(k for k in raw if k.startswith(prefix))

    # -- writing -------------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._row is None:
            raise ReadOnlyError(
                "store was opened in read-only mode and does not support writing: this is a "
                "read-only session; open one with repo.writable_session(branch)"
            )
        if self._closed is not None:
            what = f"committed as {self._committed}" if self._committed else self._closed
            raise SessionClosedError(f"session {self.id} was {what}; open a new writable session")
        if time.time() >= self._row.expires_at:
            # Our copy of the row may be stale (another process extended the session), and
            # only the catalog's clock decides.
            self._row = self.repo._catalog.get_session(self._row.id)
        if self._row.status != "open":
            raise SessionClosedError(f"session {self.id} is {self._row.status}; open a new session")
        if (
            time.time() >= self._row.expires_at
            and self.repo._catalog.clock() >= self._row.expires_at
        ):
            raise SessionExpiredError(
                f"session {self.id} expired at {from_epoch(self._row.expires_at).isoformat()}; "
                "its writes can no longer be staged or committed. Open a new session "
                "(and extend long-running ones with session.extend())"
            )

    def prepare_write(self, key: str, data: bytes | memoryview) -> tuple[str, Any]:
        """Hash ``data`` and store its object; return what to stage (runs in a worker thread)."""
        self._check_writable()
        t = self._target(key)
        if t.kind == "meta":
            doc = bytes(data)
            parse_node_meta(doc, strict=self.repo._strict)
            h = content_hash(doc)
            return "row", (StagedRow(t.path, "meta", "", h, len(doc), None), doc)
        h = hashlib.sha256(data).digest()
        if len(data) <= INLINE_LIMIT:
            row = StagedRow(t.path, t.kind, t.key, h, len(data), bytes(data))
        else:
            self.repo._objects.write(h, data)
            row = StagedRow(t.path, t.kind, t.key, h, len(data), None)
        return "row", (row, None)

    def prepare_delete(self, key: str) -> tuple[str, Any]:
        self._check_writable()
        t = self._target(key)
        if t.kind == "meta":
            return "drop", t.path
        return "row", (StagedRow(t.path, t.kind, t.key, None, 0, None), None)

    def prepare_delete_dir(self, prefix: str) -> list[tuple[str, Any]]:
        """Stage removal of everything under a directory prefix (nodes are dropped whole)."""
        self._check_writable()
        prefix = prefix.rstrip("/")
        ops: list[tuple[str, Any]] = []
        state = self._staged_state()
        paths = set(self._base_root.nodes) | {p for p, sn in state.nodes.items() if sn.meta}
        for path in sorted(paths):
            if _under(path, prefix) and self._node_meta_hash(path) is not None:
                ops.append(("drop", path))
        dropped = {p for _, p in ops}
        for key in self.iter_keys(f"{prefix}/" if prefix else ""):
            t = self._target(key)
            if t.kind == "meta" or (t.kind == "chunk" and t.path in dropped):
                continue
            ops.append(("row", (StagedRow(t.path, t.kind, t.key, None, 0, None), None)))
        return ops

    def submit(self, op: tuple[str, Any]) -> Future[None]:
        """Queue a prepared change; it is visible in this process at once, and the future
        resolves once it is durable in the catalog (visible to every process)."""
        if self._stager is None:
            raise ReadOnlyError("store was opened in read-only mode and does not support writing")
        kind, item = op
        self._stager.wait_room()
        with self._lock:
            fut = self._stager.submit(kind, item)
            if kind == "drop":
                for k in [k for k in self._local if k[0] == item and k[1] in ("meta", "chunk")]:
                    del self._local[k]
                self._set_local_meta(fut, item, (None, True))
            elif kind == "row":
                row, doc = item
                self._local[(row.path, row.kind, row.key)] = row
                if row.kind == "meta":
                    self.repo._reader.prime(row.hash, "meta", doc)
                    self._set_local_meta(fut, row.path, (row.hash, self._node_state(row.path)[1]))
        return fut

    def _set_local_meta(
        self, fut: Future[None], path: str, state: tuple[bytes | None, bool]
    ) -> None:
        """Record a node change of this process: authoritative here until it is durable; from
        then on the catalog is (another process of the session may overwrite it)."""
        self._metas_local[path] = state

        def done(f: Future[None]) -> None:
            if f.exception() is not None:
                return
            with self._lock:
                if self._metas_local.get(path) == state:
                    del self._metas_local[path]
                    self._metas[path] = state
                    # a refresh whose query ran before this write landed must not undo it
                    self._done_at[path] = self._epoch
                    self._epoch += 1

        fut.add_done_callback(done)

    def _flush_batch(self, batch: list[tuple[str, Any, Future[None]]]) -> None:
        rows: list[StagedRow] = []
        drops: list[str] = []
        blobs: dict[bytes, tuple[str, bytes]] = {}
        reads: list[tuple[str, str]] = []
        for kind, item, _ in batch:
            if kind == "drop":
                drops.append(item)
            elif kind == "read":
                reads.append(item)
            else:
                row, doc = item
                rows.append(row)
                if doc is not None:
                    blobs[row.hash] = ("meta", doc)
        self.repo._catalog.stage(self.id or "", rows, drops, blobs=blobs, reads=reads)

    async def write_async(self, key: str, data: bytes | memoryview) -> None:
        self.submit(await asyncio.to_thread(self.prepare_write, key, data))

    async def delete_async(self, key: str) -> None:
        self.submit(await asyncio.to_thread(self.prepare_delete, key))

    async def delete_dir_async(self, prefix: str) -> None:
        for op in await asyncio.to_thread(self.prepare_delete_dir, prefix):
            self.submit(op)

    def flush(self) -> None:
        """Wait until every write (and, for serializable sessions, every read) this process
        made through the session is durable in the catalog and visible to other processes.

        Raises the error of any write that could not be staged (e.g. the session expired).
        """
        if self._stager is None or self._closed is not None:
            return
        with self._lock:
            reads, self._reads = self._reads, set()
        for r in sorted(reads):
            self._stager.submit("read", r)
        self._stager.flush()

    # -- lifecycle -----------------------------------------------------------------------------

    def _require_open(self) -> SessionRow:
        if self._row is None:
            raise ReadOnlyError("a read-only session cannot be committed, extended or abandoned")
        if self._closed is not None:
            what = f"committed as {self._committed}" if self._committed else self._closed
            raise SessionClosedError(f"session {self.id} was already {what}; open a new session")
        return self._row

    def extend(self, by: timedelta = DEFAULT_EXPIRY) -> datetime:
        """Push the expiry to ``now + by`` (never past 7 days after creation); returns it."""
        self._require_open()
        if by.total_seconds() <= 0:
            raise InvalidInputError("extend(by=...) takes a positive timedelta")
        self._row = self.repo._catalog.update_session(
            self.id or "", extend_by=by.total_seconds(), max_life=MAX_EXPIRY.total_seconds()
        )
        return from_epoch(self._row.expires_at)

    def abandon(self) -> None:
        """Discard the session's staged changes and close it."""
        self._require_open()
        self._row = self.repo._catalog.update_session(self.id or "", status="abandoned")
        self._closed = "abandoned"
        self._local.clear()
        self._metas, self._metas_local = {}, {}

    @property
    def has_changes(self) -> bool:
        return not self._staged_state().is_empty()

    def status(self) -> Diff:
        """The uncommitted changes against the base commit, as a :class:`Diff` (the diff that
        committing now would record, before any rebase). Empty for read-only sessions."""
        from zarrlake.history import session_status

        return session_status(self)

    def _their_changes(self, base: str, head: str) -> list[tuple[str, ChangeSet]] | None:
        between = self.repo._catalog.commits_between(self.repo._id, base, head)
        if between is None:
            return None
        reader = self.repo._reader
        return [
            (c.id, reader.changes(c.changes_hash) if c.changes_hash else ChangeSet())
            for c in between
        ]

    def _read_set(self) -> tuple[ReadSet | None, frozenset[str] | None]:
        if self.isolation != "serializable":
            return None, None
        self.flush()
        items = self.repo._catalog.load_reads(self.id or "")
        raw = frozenset(k[4:] for _, k in items if k.startswith("raw:"))
        nodes = frozenset(
            (p, _key_coords(k) if k else None) for p, k in items if not k.startswith("raw:")
        )
        return nodes, raw

    def _conflicts(self, state: StagedState, head: str) -> list[Conflict]:
        theirs = self._their_changes(self.base_commit, head)
        if theirs is None:
            return [
                Conflict(
                    "history",
                    "",
                    None,
                    head,
                    f"branch {self.branch!r} was reset and no longer contains base commit {self.base_commit}",
                )
            ]
        ours = changes_from_staged(self._base_root, state, self.repo._reader)
        return detect_conflicts(ours, theirs, *self._read_set())

    def _head(self) -> str:
        return self._head_row().id

    def _head_row(self) -> CommitRow:
        row = self.repo._catalog.branch_head(self.repo._id, self.branch or "")
        if row is None:
            raise SessionClosedError(
                f"branch {self.branch!r} of session {self.id} no longer exists"
            )
        return row

    def commit(
        self,
        message: str,
        *,
        metadata: dict[str, Any] | None = None,
        allow_empty: bool = False,
        solver: Solver = "fail",
        timeout: float = 120.0,
        idempotency_key: str | None = None,
    ) -> str:
        """Commit the staged changes to the session's branch; return the new commit id.

        ``idempotency_key`` makes the commit happen at most once per branch: if a commit with
        that key is already on the branch, the session is closed and that commit's id is
        returned without committing again (decided inside the commit transaction, so two
        racing commits with one key make one commit). Use it for retried jobs.

        When other commits landed on the branch since the session's base, the changes are
        rebased onto them automatically unless they conflict; conflicts raise
        :class:`ConflictError` (or are resolved by ``solver="ours"|"theirs"``), and the session
        stays open. Retries with jittered backoff until ``timeout`` seconds have passed.
        """
        row = self._require_open()
        if not isinstance(message, str):
            raise InvalidInputError("commit message must be a string")
        key = _check_idempotency_key(idempotency_key)
        self._check_writable()
        self.flush()
        catalog, reader = self.repo._catalog, self.repo._reader
        if key is not None and (done := self._already_committed(key)) is not None:
            return done
        state = self._staged_state()
        if state.is_empty() and not allow_empty:
            raise EmptyCommitError(
                f"session {self.id} has no changes to commit (allow_empty=True records one anyway)"
            )
        if _has_objects(state):  # inline chunks and metadata live in the catalog
            self.repo._objects.sync()
        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            if key is not None and attempt and (done := self._already_committed(key)) is not None:
                return done  # a racing commit with the same key won
            head_row = self._head_row()
            head = head_row.id
            staged: StagedState = state
            extra: dict[bytes, tuple[str, bytes]] = {}
            head_root = reader.root(head_row.root_hash)
            if head != self.base_commit:
                conflicts = self._conflicts(state, head)
                if conflicts and (solver == "fail" or any(c.kind == "history" for c in conflicts)):
                    raise ConflictError(
                        f"cannot commit session {self.id} to {self.branch!r}: it conflicts with "
                        f"commits made since its base {self.base_commit[:10]}. Resolve with "
                        "session.rebase('ours'|'theirs'), or abandon the session",
                        conflicts,
                    )
                staged, extra = rebase_staged(
                    state, self._base_root, head_root, conflicts, solver, reader
                )
                # merged metadata documents are stored with the commit; the snapshot builder
                # must read them before that
                for h, (kind, data) in extra.items():
                    reader.prime(h, kind, data)
            result = build_snapshot(head_root, staged, reader)
            if result.changes.is_empty() and not allow_empty:
                raise EmptyCommitError(
                    f"session {self.id} changes nothing against {self.branch!r} (allow_empty=True records it anyway)"
                )
            changes = result.changes.encode()
            ch = content_hash(changes)
            blobs = {**extra, **result.blobs, ch: ("changes", changes)}
            commit_row = CommitRow(
                new_commit_id(),
                head,
                None,
                result.root_hash,
                ch,
                row.author,
                message,
                dict(metadata or {}),
                0.0,
                head_row.generation + 1,
            )
            done = catalog.commit(
                self.repo._id,
                self.id or "",
                self.branch or "",
                head,
                commit_row,
                blobs,
                idempotency_key=key,
            )
            if done is not None:
                if done != commit_row.id:  # the key was recorded meanwhile
                    self._mark_closed(done)
                    return done
                for h, (kind, data) in blobs.items():
                    if kind != "root":
                        reader.prime(h, kind, data)
                reader.prime_root(result.root_hash, result.root)
                self._mark_closed(commit_row.id, result.root)
                return commit_row.id
            attempt += 1
            if time.monotonic() >= deadline:
                raise CommitTimeoutError(
                    f"commit of session {self.id} lost the race for {self.branch!r} {attempt} times "
                    f"in {timeout:.0f} s; try again or raise the timeout"
                )
            time.sleep(random.uniform(0, min(0.25, 0.002 * 2 ** min(attempt, 8))))

    def _already_committed(self, key: str) -> str | None:
        """If a commit with idempotency ``key`` is on the branch, close the session as
        committed by it and return its id."""
        found = self.repo._catalog.recorded_key(self.repo._id, self.branch or "", key)
        if found is None:
            return None
        self._row = self.repo._catalog.update_session(
            self.id or "", status="committed", commit_id=found
        )
        self._mark_closed(found)
        return found

    def _mark_closed(self, commit: str, root: Root | None = None) -> None:
        self._committed = commit
        self._closed = "committed"
        self.base_commit = commit
        if root is not None:
            self._base_root = root
        else:
            self._load_base(commit)
        self._local.clear()
        self._metas, self._metas_local = {}, {}

    def rebase(self, solver: Solver = "fail") -> str:
        """Move the session's base to its branch's head, keeping its staged changes.

        With ``solver="fail"`` conflicts raise :class:`ConflictError`; ``"ours"`` keeps this
        session's conflicting changes, ``"theirs"`` drops them. Returns the new base commit.
        """
        self._require_open()
        self._check_writable()
        head = self._head()
        if head == self.base_commit:
            return head
        state = self._staged_state()
        conflicts = self._conflicts(state, head)
        if conflicts and (solver == "fail" or any(c.kind == "history" for c in conflicts)):
            raise ConflictError(f"cannot rebase session {self.id} onto {head[:10]}", conflicts)
        reader = self.repo._reader
        head_root = reader.root(self.repo._catalog.get_commit(self.repo._id, head).root_hash)
        new_state, extra = rebase_staged(
            state, self._base_root, head_root, conflicts, solver, reader
        )
        if extra:
            self.repo._catalog.put_blobs(self.repo._id, extra)
        self.repo._catalog.replace_staged(self.id or "", list(_state_rows(new_state)), head)
        with self._lock:
            self.base_commit = head
            self._load_base(head)
            self._local.clear()
            self._metas_local = {}
            self._reads.clear()
        self._refresh_metas()
        return head


_MAX_KEY = 256


def _check_idempotency_key(key: object) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > _MAX_KEY:
        raise InvalidInputError(
            f"idempotency_key must be a non-empty string of at most {_MAX_KEY} characters"
        )
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in key):
        raise InvalidInputError("idempotency_key must not contain control characters or surrogates")
    return key


def _has_objects(state: StagedState) -> bool:
    """Whether any staged ref names an object in the object store (not inline bytes)."""
    refs = [r for sn in state.nodes.values() for r in sn.chunks.values()]
    refs.extend(state.raw.values())
    return any(r is not None and r.inline is None for r in refs)


def _state_rows(state: StagedState) -> Iterable[StagedRow]:
    for path, sn in state.nodes.items():
        if sn.dropped:
            yield StagedRow(path, "drop", "", None, 0, None)
        if sn.meta is not None:
            yield StagedRow(path, "meta", "", sn.meta, 0, None)
        for coords, ref in sn.chunks.items():
            if ref is None:
                yield StagedRow(path, "chunk", _coords_key(coords), None, 0, None)
            else:
                yield StagedRow(
                    path, "chunk", _coords_key(coords), ref.hash, ref.length, ref.inline
                )
    for key, ref in state.raw.items():
        if ref is None:
            yield StagedRow("", "raw", key, None, 0, None)
        else:
            yield StagedRow("", "raw", key, ref.hash, ref.length, ref.inline)
