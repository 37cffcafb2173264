"""Write-behind staging: operations queue up and a flusher thread records them in the catalog
in large transactions, each once the objects its rows name are durable."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from typing import Protocol

from zarrlake.catalog.interface import Read, SessionStore
from zarrlake.faults import crash_point
from zarrlake.model.records import StagedEntry
from zarrlake.session.ops import DropNode, Op, PutRow, PutRows, RecordRead

__all__ = ["Stager"]


class Durability(Protocol):
    """What the stager needs of the object store."""

    def open_pack(self) -> bytes | None: ...

    def sync(self, *, seal: bool = True) -> None: ...


class Stager:
    """Records a session's operations in the catalog, batched, in a background thread.

    ``submit`` returns a future that resolves once the operation is durable in the catalog
    (visible to every process of the session); ``flush()`` waits for everything submitted so
    far, and raises the error of a batch that failed meanwhile.

    A failed batch (the object store or the catalog unreachable, the session expired) is not
    lost, and its error does not stick. With ``write_behind`` nobody waits for its futures,
    so its operations stay queued, in order, ahead of everything submitted after them; the
    stager then waits (it does not hammer a service that is down) until the next ``submit``
    or ``flush()`` tries them again, and that ``flush()`` raises if they fail again. Once the
    service is back, a flush (so a commit) succeeds. Without ``write_behind`` each writer
    waits for its own future, so the batch's futures fail and its writers write again.

    ``objects.sync()`` blocks until every object this process has written is durable: a batch
    whose rows name objects calls it before recording them, so a staged row never names an
    object that a power loss could take back, whichever process of the session staged it. The
    object store flushes while the writers write, so this usually waits for little.

    With ``write_behind`` (the process that created the session: its writers do not wait for
    their rows), a small batch waits :attr:`LINGER` for company, and rows naming the pack still
    being filled are held back (in order) until it is full, a ``flush()`` waits for them, or
    they have waited :attr:`PACK_LINGER`: staging them at once would write the pack with a
    few chunks in it. Without it (a joined session: each writer waits for its rows to be
    durable) nothing waits: a batch is what queued while the previous one was being written
    (group commit), so concurrent writers share transactions without paying a delay each.
    """

    MAX_BATCH = 5000
    MAX_PENDING = 50_000
    LINGER = 0.004  # seconds a small batch waits for company: one transaction costs ~1 ms
    PACK_LINGER = 1.0  # seconds rows wait for their pack to fill before it is written anyway
    HELD_POLL = 0.02  # seconds between looks at whether a held row's pack is written

    def __init__(
        self,
        sessions: SessionStore,
        session_id: str,
        objects: Durability,
        *,
        write_behind: bool = False,
    ) -> None:
        self.sessions = sessions
        self.session_id = session_id
        self.objects = objects
        self.write_behind = write_behind
        self.held_since: float | None = None
        self.cond = threading.Condition()
        self.pending: list[tuple[Op, Future[None]]] = []
        self.inflight = 0
        self.waiters = 0
        self.error: BaseException | None = None  # of the last failed batch
        self.closing = False
        self.failures = 0  # batches failed so far
        self.parked = False  # a write-behind batch failed: wait for a submit or flush to retry
        self.thread: threading.Thread | None = None

    def wait_room(self) -> None:
        """Back-pressure: wait while the catalog is far behind the writers; while the queue is
        full of operations that failed, raise their error. Callers must not hold a lock that
        completion callbacks take."""
        with self.cond:
            while len(self.pending) >= self.MAX_PENDING:
                if self.parked and self.error is not None:
                    raise self.error
                self.cond.wait(timeout=1.0)

    def submit(self, op: Op) -> Future[None]:
        fut: Future[None] = Future()
        with self.cond:
            self.pending.append((op, fut))
            # Wake the writer thread only when it has something new to do: the first operation
            # of an empty queue, a full batch, a parked queue, or no thread. Otherwise it is
            # writing a batch or lingering for company, and looks at the queue when it is done:
            # waking it for every chunk cost a thread switch per write.
            n = len(self.pending)
            if n == 1 or n >= self.MAX_BATCH or self.parked or self.thread is None:
                self._wake()
        return fut

    def flush(self) -> None:
        """Wait until everything submitted so far is durable in the catalog; raise the error
        of a batch that fails meanwhile (operations that failed before are tried again)."""
        with self.cond:
            failures = self.failures
            self.waiters += 1
            self._wake()
            try:
                while (self.pending or self.inflight) and self.failures == failures:
                    self.cond.wait(timeout=1.0)
            finally:
                self.waiters -= 1
            if self.failures != failures and self.error is not None:
                raise self.error

    def take_rows(self) -> list[tuple[StagedEntry, Future[None]]] | None:
        """Hand the queued operations over to a caller that stages them in a transaction of
        its own (a commit: one transaction fewer), once the batch being written is done.

        Only plain rows are handed over (chunks and raw keys: no document, drop or read to
        record); otherwise, or after a failed batch, nothing is taken and ``None`` returned,
        and the caller flushes the usual way. The caller resolves the futures once its
        transaction committed, or gives the rows back (:meth:`give_back`)."""
        with self.cond:
            while self.inflight:
                self.cond.wait(timeout=1.0)
            if self.parked or not all(_plain(op) for op, _ in self.pending):
                return None
            taken = [(op.row, fut) for op, fut in self.pending if isinstance(op, PutRow)]
            self.pending = []
            self.held_since = None
            self.cond.notify_all()
            return taken

    def give_back(self, taken: list[tuple[StagedEntry, Future[None]]]) -> None:
        """Queue rows taken by :meth:`take_rows` again, ahead of everything queued since."""
        with self.cond:
            self.pending[:0] = [(PutRow(row), fut) for row, fut in taken]
            self._wake()

    @contextmanager
    def handed_over(self) -> Iterator[tuple[StagedEntry, ...] | None]:
        """:meth:`take_rows` for the ``with`` block (``None``: nothing taken). If the block
        raises, the rows are given back and staged before the error propagates, so a failed
        commit leaves everything staged as a flush would have; if it completes, their
        futures resolve (the block's transaction staged them, or made them moot)."""
        taken = self.take_rows()
        try:
            yield None if taken is None else tuple(row for row, _ in taken)
        except BaseException:
            if taken:
                self.give_back(taken)
                with suppress(Exception):  # the block's error is the one to report
                    self.flush()
            raise
        for _, fut in taken or ():
            fut.set_result(None)

    def close(self) -> None:
        """The session is closed here: the thread ends once the queue is empty, instead of
        idling for seconds (a process committing many sessions would hold a thread each)."""
        with self.cond:
            self.closing = True
            self.cond.notify_all()

    def _wake(self) -> None:
        """Under ``cond``: have the queue written (again, after a failure)."""
        self.parked = False
        if self.thread is None and self.pending:
            self.thread = threading.Thread(target=self._run, name="zarrlake-stager", daemon=True)
            self.thread.start()
        self.cond.notify_all()

    def _take(self) -> tuple[list[tuple[Op, Future[None]]], bool]:
        """The next batch, and whether staging it must write the open pack too."""
        with self.cond:
            if self.parked:
                return [], True
            if not self.pending and not self.closing:
                self.cond.wait(timeout=1.0)
            deadline = time.monotonic() + self.LINGER
            while self.write_behind and 0 < len(self.pending) < self.MAX_BATCH and not self.waiters:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(timeout=left)
            # Drops must not share a batch with earlier rows: the catalog applies a batch's
            # drops first. Cut the batch at the first drop that follows another operation.
            batch: list[tuple[Op, Future[None]]] = []
            open_pack = self._open_pack()
            held = False
            for item in self.pending[: self.MAX_BATCH]:
                if isinstance(item[0], DropNode) and any(
                    not isinstance(op, DropNode) for op, _ in batch
                ):
                    break
                if open_pack is not None and _in_pack(item[0], open_pack):
                    held = True  # held back, with everything after it
                    break
                batch.append(item)
            if not held:
                self.held_since = None
            elif not batch:
                self.cond.wait(timeout=self.HELD_POLL)
            del self.pending[: len(batch)]
            self.inflight = len(batch)
            self.cond.notify_all()
            # rows of an open pack are either all held back or the pack is written with them
            return batch, open_pack is None

    def _open_pack(self) -> bytes | None:
        """Under ``cond``: the pack whose rows are held back now, if any."""
        if not self.write_behind or self.waiters:
            return None
        if self.held_since is not None and time.monotonic() - self.held_since >= self.PACK_LINGER:
            return None
        pack = self.objects.open_pack()
        if pack is not None and self.held_since is None:
            self.held_since = time.monotonic()
        return pack

    def _write(self, ops: list[Op], seal: bool) -> None:
        rows: list[StagedEntry] = []
        drops: list[str] = []
        blobs: dict[bytes, tuple[str, bytes]] = {}
        reads: list[Read] = []
        objects = False
        for op in ops:
            if isinstance(op, DropNode):
                drops.append(op.path)
            elif isinstance(op, RecordRead):
                reads.append(op.read)
            elif isinstance(op, PutRows):
                rows.extend(op.rows)  # virtual references: they name no object
            else:
                rows.append(op.row)
                ref = op.row.ref
                objects = objects or (
                    ref is not None
                    and ref.inline is None
                    and ref.source is None
                    and op.row.kind != "meta"
                )
                if op.doc is not None and ref is not None:
                    blobs[ref.hash] = ("meta", op.doc)
        if objects:
            self.objects.sync(seal=seal)
        crash_point("stage.before")
        self.sessions.stage(self.session_id, rows, drops, blobs=blobs, reads_=reads)

    def _run(self) -> None:
        idle = 0
        while True:
            batch, seal = self._take()
            if not batch:
                idle += 1
                if idle >= 5 or self.parked or self.closing:
                    with self.cond:
                        # decided under the lock that submit() takes, so an operation queued
                        # now either is seen here or starts a new thread
                        if not self.pending or self.parked:
                            self.thread = None
                            return
                    idle = 0
                continue
            idle = 0
            try:
                self._write([op for op, _ in batch], seal)
            except BaseException as exc:
                with self.cond:
                    self.error = exc
                    self.failures += 1
                    if self.write_behind:
                        # nobody waits for these futures: keep the operations for another try
                        self.pending[:0] = batch
                        self.parked = True
                if not self.write_behind:
                    for _, fut in batch:
                        fut.set_exception(exc)
            else:
                for _, fut in batch:
                    fut.set_result(None)
            with self.cond:
                self.inflight = 0
                self.cond.notify_all()


def _plain(op: Op) -> bool:
    return isinstance(op, PutRow) and op.doc is None and op.row.kind in ("chunk", "raw")


def _in_pack(op: Op, pack: bytes) -> bool:
    if isinstance(op, PutRows):
        return any(r.ref is not None and r.ref.pack == pack for r in op.rows)
    return isinstance(op, PutRow) and op.row.ref is not None and op.row.ref.pack == pack
