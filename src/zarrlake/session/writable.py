"""The writable session: stages writes in the catalog, and commits them atomically."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from zarrlake.catalog.interface import Read
from zarrlake.core import RepoCore
from zarrlake.errors import (
    EmptyCommitError,
    InvalidInputError,
    SessionClosedError,
    SessionExpiredError,
)
from zarrlake.faults import crash_point
from zarrlake.model import ReadSet, Root, StagedState, check_solver
from zarrlake.model.lifecycle import DEFAULT_EXPIRY, MAX_EXPIRY, SessionStatus
from zarrlake.model.records import CommitRecord, SessionRecord, StagedEntry
from zarrlake.session.base import Session
from zarrlake.session.committer import (
    Staged,
    check_idempotency_key,
    commit_staged,
    has_objects,
    load_read_set,
    rebase_onto,
    recorded_commit,
)
from zarrlake.session.keys import Target, could_be_chunk_key, under
from zarrlake.session.local import LocalRows
from zarrlake.session.lookup import Found, staged_lookups
from zarrlake.session.opener import SessionOpener
from zarrlake.session.ops import (
    DropNode,
    Op,
    PutRow,
    PutRows,
    RecordRead,
    entry,
    node_states,
    packable,
    placed,
    plan_write,
    staged_state,
)
from zarrlake.session.record import SessionMirror
from zarrlake.session.stager import Stager
from zarrlake.session.virtual import staged_batch, staged_shape
from zarrlake.types import SessionInfo, from_epoch, validate_metadata, validate_text

if TYPE_CHECKING:
    from zarrlake.model import Solver
    from zarrlake.store import StoreSession

__all__ = ["DEFAULT_EXPIRY", "MAX_EXPIRY", "WritableSession"]


class WritableSession(Session):
    """A unit of work on a branch: reads its base commit plus its staged changes (its own and
    those of the other processes cooperating on it), stages writes in the catalog, and commits
    them atomically.

    Create with :meth:`Repo.writable_session`, or join from another process with
    :meth:`Repo.session`. Writes made in the process that created the session are staged
    write-behind (``commit()`` waits for them); writes made through a joined session are
    durable in the catalog when the call that made them returns, so a task that wrote through
    it has finished its writes when it finishes.
    """

    def __init__(
        self,
        core: RepoCore,
        row: SessionRecord,
        *,
        base: CommitRecord | None = None,
        created_here: bool,
    ) -> None:
        self.id: str = row.id
        self.branch: str = row.branch
        self.isolation: str = row.isolation
        self._record = SessionMirror(row, created_now=created_here)
        self._on_close: list[Callable[[WritableSession], None]] = []
        self._committed: str | None = None
        self._closed: str | None = None  # "committed" | "abandoned" once this process closed it
        self.durable = not created_here
        self._lock = threading.RLock()
        self._local = LocalRows(self._lock)
        # node-level staged state: this process's own (authoritative for it, includes writes not
        # yet durable) and the cooperating processes' (as last loaded from the catalog)
        self._metas_local: dict[str, tuple[bytes | None, bool]] = {}
        self._metas: dict[str, tuple[bytes | None, bool]] = {}
        # when this process's node writes became durable, on a counter that refreshes compare
        # against (a refresh must not replace a write that landed after its query)
        self._epoch = 0
        self._done_at: dict[str, int] = {}
        self._reads: set[Read] = set()
        # write-behind only where the session was created: a joined one's writers wait for rows
        self._stager = Stager(
            core.catalog.sessions, row.id, core.objects, write_behind=created_here
        )
        super().__init__(core, row.base_commit, base)
        if not created_here:  # a session this process just created has nothing staged yet
            self._refresh_metas()

    # -- description ---------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return False

    @property
    def closed(self) -> str | None:
        """``None`` while open; ``"committed"`` or ``"abandoned"`` once this process closed it."""
        return self._closed

    def on_close(self, callback: Callable[[WritableSession], None]) -> None:
        """Call ``callback(session)`` once this process commits or abandons the session."""
        self._on_close.append(callback)

    def _closed_now(self) -> None:
        self._stager.close()
        for callback in self._on_close:
            callback(self)
        self._on_close.clear()

    @property
    def committed_as(self) -> str | None:
        """The commit this session became, once committed."""
        return self._committed

    @property
    def state(self) -> SessionStatus:
        """``open``, ``expired``, ``committed`` or ``abandoned``, as this process knows it,
        without a query: expiry by the catalog's clock as last measured against this
        machine's (:meth:`info` asks the catalog)."""
        return self._record.status(self._closed)

    def info(self) -> SessionInfo:
        """This session as the catalog records it now (status, expiry, commit)."""
        row, now = self._core.catalog.sessions.get_with_clock(self.id)
        self._record.saw(row, now)
        return row.info(now)

    @property
    def expires_at(self) -> datetime:
        return from_epoch(self._record.row.expires_at)

    @property
    def created_at(self) -> datetime:
        return from_epoch(self._record.row.created_at)

    @property
    def author(self) -> str:
        return self._record.row.author

    def opener(self) -> Callable[[], StoreSession]:
        return SessionOpener(self.config, session_id=self.id)

    def __repr__(self) -> str:
        state = f"committed as {self._committed[:10]}" if self._committed else self.state
        return (
            f"<WritableSession {self.id} branch={self.branch!r} base={self.base_commit[:10]} "
            f"{state} expires={self.expires_at.isoformat(timespec='seconds')}>"
        )

    # -- the staged view -----------------------------------------------------------------------

    def _open(self) -> bool:
        return self._closed is None

    def _refresh_metas(self) -> None:
        """Load the node-level staged changes of every cooperating process."""
        start = self._epoch
        metas = node_states(
            self._core.catalog.sessions.load_staged(self.id, kinds=("meta", "drop"))
        )
        with self._lock:
            for path, done in self._done_at.items():
                if done >= start:  # our write landed after the query read: ours is newer
                    if path in self._metas:
                        metas[path] = self._metas[path]
                    else:
                        metas.pop(path, None)
            self._metas = metas

    def _refreshed_node(self, path: str, found: Mapping[str, StagedEntry], start: int) -> None:
        """One node's staged metadata as the catalog answered (asked at ``self._epoch ==
        start``): another process of the session may have changed it (read-uncommitted
        inside a session). This process's writes that landed since, or unflushed, still win."""
        ref = found["meta"].ref if "meta" in found else None
        meta = None if ref is None else ref.hash
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

    def _retry_unknown_key(self, key: str) -> bool:
        if not (self._open() and could_be_chunk_key(key)):
            return False
        self._refresh_metas()  # another process may have created the array meanwhile
        return True

    def _staged_lookups(self, targets: Sequence[Target]) -> list[Found]:
        if not self._open():
            return [(False, None)] * len(targets)
        sessions, dropped = self._core.catalog.sessions, lambda p: self._node_state(p)[1]
        start = self._epoch
        return staged_lookups(
            sessions,
            self.id,
            targets,
            self._local,
            dropped,
            self._guess_batch_shape,
            lambda path, found: self._refreshed_node(path, found, start),
        )

    def _staged_batch_shape(self, path: str) -> tuple[int, ...] | None:
        return staged_shape(self._core.catalog.sessions, self.id, path)

    def _before_read(self, t: Target) -> None:
        if self.isolation == "serializable":
            read: Read = (
                t.key if t.kind == "raw" else (t.path, t.coords if t.kind == "chunk" else None)
            )
            self._reads.add(read)

    def _staged_state(self, unsent: tuple[StagedEntry, ...] = ()) -> StagedState:
        """The session's staged changes: the catalog's rows, then ``unsent`` over them."""
        state = StagedState()
        if not self._open():
            return state
        self._stager.flush()
        sessions = self._core.catalog.sessions
        return staged_state(
            sessions.iter_staged(self.id),
            unsent,
            functools.partial(staged_batch, sessions, self.id),
        )

    # -- writing -------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise unless this session can stage writes now (open, not expired)."""
        if self._closed is not None:
            what = f"committed as {self._committed}" if self._committed else self._closed
            raise SessionClosedError(f"session {self.id} was {what}; open a new writable session")
        if self._record.may_have_expired():
            # Our copy of the row may be stale (another process extended the session), and
            # only the catalog's clock decides.
            row, now = self._core.catalog.sessions.get_with_clock(self.id)
            self._record.saw(row, now)
            if row.status == "open" and now >= row.expires_at:
                raise SessionExpiredError(
                    f"session {self.id} expired at "
                    f"{from_epoch(row.expires_at).isoformat()}; its writes can no longer "
                    "be staged or committed. Open a new session (and extend long-running ones "
                    "with session.extend())"
                )
        if (status := self._record.row.status) != "open":
            raise SessionClosedError(f"session {self.id} is {status}; open a new session")

    def _plan_write(self, key: str, data: bytes | memoryview) -> tuple[Op, bytes | None]:
        """Check and hash ``data`` (see :func:`plan_write`; runs in a worker thread)."""
        self.check_writable()
        t = self._target(key)
        nm = self._node_meta(t.path) if t.kind == "chunk" else None
        return plan_write(t, data, nm, self._core.hasher, strict=self._core.strict_metadata)

    def _prepare_write(self, key: str, data: bytes | memoryview) -> Op:
        """Hash ``data`` and store its object; return what to stage (runs in a worker thread)."""
        op, h = self._plan_write(key, data)
        if h is None:
            return op
        if packable(op, len(data)):
            if (same := self._stored_as(op)) is not None:
                return same
            return placed(op, *self._core.objects.write_packed(h, data))
        self._core.objects.write(h, data)
        crash_point("object.written")
        return op

    async def _prepare_write_async(self, key: str, data: bytes | memoryview) -> Op:
        """:meth:`_prepare_write`, the object written by the store's own async I/O (a
        network store keeps many requests in flight without a thread each)."""
        op, h = await asyncio.to_thread(self._plan_write, key, data)
        if h is None:
            return op
        if packable(op, len(data)):
            if (same := await asyncio.to_thread(self._stored_as, op)) is not None:
                return same
            return placed(op, *await self._core.objects.write_packed_async(h, data))
        await self._core.objects.write_async(h, data)
        crash_point("object.written")
        return op

    def _stored_as(self, op: Op) -> Op | None:
        """The write, placed where the chunk already is, if the key holds these very bytes in
        a pack (rewriting unchanged data stores nothing; objects of their own are deduplicated
        by their name instead)."""
        assert isinstance(op, PutRow)
        row = op.row
        assert row.kind in ("chunk", "raw")
        t = Target(row.kind, row.path, row.coords, row.key)
        local = self._local.get(row.slot)
        ref = local.ref if local is not None else self._base_ref(t)
        if ref is None or row.ref is None or ref.hash != row.ref.hash or ref.pack is None:
            return None
        return placed(op, ref.pack, ref.offset)

    def _prepare_delete(self, key: str) -> Op:
        self.check_writable()
        t = self._target(key)
        if t.kind == "meta":
            return DropNode(t.path)
        return PutRow(entry(t, None))

    def _prepare_delete_dir(self, prefix: str) -> list[Op]:
        """Stage removal of everything under a directory prefix (nodes are dropped whole)."""
        self.check_writable()
        prefix = prefix.rstrip("/")
        ops: list[Op] = []
        state = self._staged_state()
        paths = set(self._base_root.nodes) | {p for p, sn in state.nodes.items() if sn.meta}
        for path in sorted(paths):
            if under(path, prefix) and self._node_meta_hash(path) is not None:
                ops.append(DropNode(path))
        dropped = {op.path for op in ops if isinstance(op, DropNode)}
        for key in self.iter_keys(f"{prefix}/" if prefix else ""):
            t = self._target(key)
            if t.kind == "meta" or (t.kind == "chunk" and t.path in dropped):
                continue
            ops.append(PutRow(entry(t, None)))
        return ops

    def _submit(self, op: Op) -> Future[None]:
        """Queue an operation: visible in this process at once; the future resolves once it
        is durable in the catalog (visible to every process of the session)."""
        self._stager.wait_room()
        with self._lock:
            fut = self._stager.submit(op)
            if isinstance(op, DropNode):
                self._local.drop_node(op.path)
                self._set_local_meta(fut, op.path, (None, True))
            elif isinstance(op, PutRows):
                self._local.put_bulk(op.rows, fut)
            elif isinstance(op, PutRow):
                row = op.row
                self._local.put(row)
                if row.kind == "meta" and op.doc is not None and row.ref is not None:
                    h = row.ref.hash
                    self._core.reader.prime(h, "meta", op.doc)
                    self._set_local_meta(fut, row.path, (h, self._node_state(row.path)[1]))
        return fut

    @property
    def rows_in_memory(self) -> int:
        """How many staged rows this process holds in memory (see :class:`LocalRows`)."""
        return len(self._local)

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

    async def _stage(self, ops: list[Op]) -> None:
        futures = [self._submit(op) for op in ops]
        if self.durable:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))

    async def write(self, key: str, data: bytes | memoryview) -> None:
        if self._core.objects.async_io:
            await self._stage([await self._prepare_write_async(key, data)])
        else:  # the worker thread that stores the chunk queues its row: zarr's loop only waits
            fut = await asyncio.to_thread(lambda: self._submit(self._prepare_write(key, data)))
            if self.durable:
                await asyncio.wrap_future(fut)

    async def delete(self, key: str) -> None:
        await self._stage([await asyncio.to_thread(self._prepare_delete, key)])

    async def delete_dir(self, prefix: str) -> None:
        await self._stage(await asyncio.to_thread(self._prepare_delete_dir, prefix))

    def stage_later(self, key: str, data: bytes | memoryview) -> Callable[[], None]:
        """Store ``data``'s object now, stage its row when the returned function is called
        (tests of what may happen between: gc racing a write that deduplicated)."""
        op = self._prepare_write(key, data)
        return lambda: self._submit(op).result()

    BATCH_ROWS = 64  # batches of references (a shard's worth each) per staging operation

    def _stage_batches(self, path: str, rows: list[StagedEntry]) -> None:
        """Stage batches of references durably (the catalog answers reads of them), in
        operations of :attr:`BATCH_ROWS`; chunks of ``path`` staged before that they cover
        are forgotten here as in the catalog."""
        self.check_writable()
        for start in range(0, len(rows), self.BATCH_ROWS):
            self._submit(PutRows(tuple(rows[start : start + self.BATCH_ROWS])))
            self.flush()  # also what waits behind a pack held open for more chunks
        self._local.drop_covered(path, rows)

    def write_sync(self, key: str, data: bytes | memoryview) -> None:
        fut = self._submit(self._prepare_write(key, data))
        if self.durable:
            fut.result()

    def delete_sync(self, key: str) -> None:
        fut = self._submit(self._prepare_delete(key))
        if self.durable:
            fut.result()

    def flush(self) -> None:
        """Wait until every write (and, for serializable sessions, every read) this process
        made through the session is durable in the catalog and visible to other processes.

        Raises the error of any write that could not be staged (e.g. the session expired).
        """
        if self._closed is not None:
            return
        with self._lock:
            reads, self._reads = self._reads, set()
        for read in sorted(reads, key=repr):
            self._stager.submit(RecordRead(read))
        self._stager.flush()

    # -- lifecycle -----------------------------------------------------------------------------

    def _require_open(self) -> SessionRecord:
        if self._closed is not None:
            what = f"committed as {self._committed}" if self._committed else self._closed
            raise SessionClosedError(f"session {self.id} was already {what}; open a new session")
        return self._record.row

    def extend(self, by: timedelta = DEFAULT_EXPIRY) -> datetime:
        """Push the expiry to ``now + by`` (never past 7 days after creation); returns it."""
        self._require_open()
        if not isinstance(by, timedelta) or by.total_seconds() <= 0:
            raise InvalidInputError("extend(by=...) takes a positive timedelta")
        self._record.row = self._core.catalog.sessions.update(
            self.id, extend_by=by.total_seconds(), max_life=MAX_EXPIRY.total_seconds()
        )
        return from_epoch(self._record.row.expires_at)

    def abandon(self) -> None:
        """Discard the session's staged changes and close it."""
        self._require_open()
        self._record.row = self._core.catalog.sessions.update(self.id, status="abandoned")
        self._closed = "abandoned"
        self._local.clear()
        self._metas, self._metas_local = {}, {}
        self._closed_now()

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

        When other commits landed on the branch since the session's base, the changes are
        rebased onto them automatically unless they conflict; conflicts raise
        :class:`ConflictError` (or are resolved by ``solver="ours"|"theirs"``), and the session
        stays open. Retries with jittered backoff until ``timeout`` seconds have passed.

        ``idempotency_key`` makes the commit happen at most once per branch: if a commit with
        that key is already on the branch, the session is closed and that commit's id is
        returned without committing again (decided inside the commit transaction, so two
        racing commits with one key make one commit). Use it for retried jobs.
        """
        self._require_open()
        validate_text(message, "commit message")
        metadata = validate_metadata(metadata)
        solver = check_solver(solver)
        key = check_idempotency_key(idempotency_key)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
            raise InvalidInputError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
        self.check_writable()
        # Rows still queued here are staged by the commit's own transaction, not by one of
        # the stager's first (one transaction fewer); a failed commit leaves them staged.
        with self._stager.handed_over() as unsent:
            if unsent is None:
                self.flush()
            staged = self._staged(unsent or ())
            if key is not None and (found := recorded_commit(self._core, staged, key)):
                self._mark_committed(found)
                return found
            if staged.state.is_empty() and not allow_empty:
                raise EmptyCommitError(
                    f"session {self.id} has no changes to commit (allow_empty=True records one "
                    "anyway)"
                )
            if has_objects(staged.state):  # inline chunks and metadata live in the catalog
                self._core.objects.sync()
            crash_point("commit.synced")
            built = commit_staged(
                self._core,
                staged,
                message,
                metadata=metadata,
                allow_empty=allow_empty,
                solver=solver,
                timeout=float(timeout),
                idempotency_key=key,
            )
        crash_point("commit.done")
        self._mark_committed(built.id, built.root)
        return built.id

    def rebase(self, solver: Solver = "fail") -> str:
        """Move the session's base to its branch's head, keeping its staged changes.

        With ``solver="fail"`` conflicts raise :class:`ConflictError`; ``"ours"`` keeps this
        session's conflicting changes, ``"theirs"`` drops them. Returns the new base commit.
        """
        self._require_open()
        solver = check_solver(solver)
        self.check_writable()
        head = rebase_onto(self._core, self._staged(), solver)
        if head != self.base_commit:
            with self._lock:
                self.base_commit = head
                self._load_base(head)
                self._local.clear()
                self._metas_local = {}
                self._reads.clear()
            self._refresh_metas()
        return head

    # -- internals -----------------------------------------------------------------------------

    def _read_set(self) -> tuple[ReadSet | None, frozenset[str] | None]:
        if self.isolation != "serializable":
            return None, None
        self.flush()
        return load_read_set(self._core, self.id)

    def _staged(self, unsent: tuple[StagedEntry, ...] = ()) -> Staged:
        return Staged(
            self.id,
            self.branch,
            self._record.row.author,
            self.base_commit,
            self._base_root,
            self._staged_state(unsent),
            self._read_set,
            self._base_row,
            unsent,
        )

    def _mark_committed(self, commit: str, root: Root | None = None) -> None:
        self._committed = commit
        self._closed = "committed"
        self.base_commit = commit
        if root is not None:
            self._base_root = root
        else:
            self._load_base(commit)
        self._local.clear()
        self._metas, self._metas_local = {}, {}
        self._closed_now()
