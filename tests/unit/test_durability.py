"""Local objects become durable while others are written, and nothing is staged before the
objects its rows name are durable."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from zarrlake.errors import StorageError
from zarrlake.model import ChunkRef
from zarrlake.model.records import StagedEntry
from zarrlake.objects import LocalObjectStore
from zarrlake.objects import flusher as flusher_module
from zarrlake.session.ops import PutRow
from zarrlake.session.stager import Stager


class Flushes:
    """Stands in for ``syncfs``: records, for each flush, how many writes had been counted
    when it started."""

    def __init__(self, store: LocalObjectStore) -> None:
        self.store = store
        self.started_at: list[int] = []
        self.fail = False
        self.writes = 0

    def __call__(self, path: str) -> None:
        self.started_at.append(self.writes)
        if self.fail:
            raise OSError(5, "Input/output error")


@pytest.fixture
def flushes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Flushes:
    store = LocalObjectStore(tmp_path / "objects")
    fake = Flushes(store)
    monkeypatch.setattr(flusher_module, "syncfs", fake)
    return fake


def _write(f: Flushes, n: int) -> None:
    f.writes += 1
    f.store.write(n.to_bytes(32, "big"), b"x" * (100 + n))


def test_sync_returns_only_after_a_flush_that_started_after_the_last_write(
    flushes: Flushes,
) -> None:
    for n in range(5):
        _write(flushes, n)
    flushes.store.sync()
    assert flushes.started_at
    assert max(flushes.started_at) == 5


def test_finding_an_object_already_present_also_waits_for_a_flush(flushes: Flushes) -> None:
    _write(flushes, 1)
    flushes.store.sync()
    before = len(flushes.started_at)
    _write(flushes, 1)  # the same object again: only touched (it may be another's, unflushed)
    flushes.store.sync()
    assert len(flushes.started_at) > before


def test_a_failed_flush_is_a_storage_error(flushes: Flushes) -> None:
    flushes.fail = True
    _write(flushes, 1)
    with pytest.raises(StorageError, match="durable"):
        flushes.store.sync()


class RecordingCatalog:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def stage(self, session_id: str, rows: list[StagedEntry], drops: list[str], **_: Any) -> None:
        self.events.append("stage " + ",".join(r.kind for r in rows))


class RecordingObjects:
    def __init__(self, events: list[str], open_pack: bytes | None = None) -> None:
        self.events = events
        self.pack = open_pack

    def open_pack(self) -> bytes | None:
        return self.pack

    def sync(self, *, seal: bool = True) -> None:
        self.events.append("durable" if seal else "durable, pack kept open")


def _stager(events: list[str]) -> Stager:
    return Stager(RecordingCatalog(events), "s", RecordingObjects(events))  # type: ignore[arg-type]


def test_rows_naming_objects_are_staged_after_their_objects_are_durable() -> None:
    events: list[str] = []
    stager = _stager(events)
    stager.submit(PutRow(StagedEntry("a", "chunk", (0,), ref=ChunkRef(b"h" * 32, 4096))))
    stager.flush()
    assert events == ["durable", "stage chunk"]


def _packed_row(i: int, pack: bytes) -> PutRow:
    return PutRow(StagedEntry("a", "chunk", (i,), ref=ChunkRef(b"h" * 32, 4096, None, pack, 0)))


def test_rows_naming_the_open_pack_wait_until_a_flush_and_others_go_ahead() -> None:
    events: list[str] = []
    objects = RecordingObjects(events, open_pack=b"open" * 8)
    stager = Stager(RecordingCatalog(events), "s", objects, write_behind=True)  # type: ignore[arg-type]
    written = stager.submit(_packed_row(0, b"done" * 8))
    held = stager.submit(_packed_row(1, b"open" * 8))
    written.result(timeout=5)
    assert events == ["durable, pack kept open", "stage chunk"]
    assert not held.done()
    stager.flush()  # a waiter: the open pack is written with its rows
    assert events[2:] == ["durable", "stage chunk"]
    assert held.done()


def test_rows_kept_in_the_catalog_wait_for_no_flush() -> None:
    events: list[str] = []
    stager = _stager(events)
    stager.submit(PutRow(StagedEntry("a", "meta", ref=ChunkRef(b"m" * 32, 10)), b"{}"))
    stager.submit(PutRow(StagedEntry("a", "chunk", (0,), ref=ChunkRef(b"h" * 32, 3, b"abc"))))
    stager.flush()
    assert "durable" not in events


def test_flushes_run_while_writers_write(flushes: Flushes) -> None:
    """The flusher starts on the first write, not at sync: by the time the writers finish,
    flushes have already run."""
    done = threading.Event()
    flushes.store.write(b"\0" * 32, b"first")
    for _ in range(200):
        if flushes.started_at:
            done.set()
            break
        threading.Event().wait(0.01)
    assert done.is_set()


class GatedCatalog(RecordingCatalog):
    """Holds the first transaction until released, recording each batch's keys."""

    def __init__(self, events: list[str]) -> None:
        super().__init__(events)
        self.entered = threading.Event()
        self.release = threading.Event()

    def stage(self, session_id: str, rows: list[StagedEntry], drops: list[str], **_: Any) -> None:
        self.entered.set()
        assert self.release.wait(timeout=10)
        self.events.append("stage " + ",".join(str(r.coords[0]) for r in rows))


def test_a_joined_sessions_writes_wait_for_no_company_and_share_transactions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each writer of a joined session waits for its row: a lone row is staged without
    waiting for others, and rows queued meanwhile go together in the next transaction."""
    monkeypatch.setattr(Stager, "LINGER", 60.0)  # a write-behind stager would wait this long
    events: list[str] = []
    catalog = GatedCatalog(events)
    stager = Stager(catalog, "s", RecordingObjects(events))  # type: ignore[arg-type]
    row = PutRow(StagedEntry("a", "chunk", (0,), ref=ChunkRef(b"h" * 32, 3, b"abc")))
    first = stager.submit(row)
    assert catalog.entered.wait(timeout=10)  # taken at once, alone
    later = [
        stager.submit(PutRow(StagedEntry("a", "chunk", (k,), ref=ChunkRef(b"h" * 32, 3, b"abc"))))
        for k in (1, 2)
    ]
    catalog.release.set()
    first.result(timeout=10)
    for fut in later:
        fut.result(timeout=10)
    assert events == ["stage 0", "stage 1,2"]


def test_a_failed_flush_does_not_stick_once_the_disk_is_back(flushes: Flushes) -> None:
    """A commit that failed because the disk could not be flushed can be retried: the next
    wait has the filesystem flushed again instead of raising the old error."""
    flushes.fail = True
    _write(flushes, 1)
    with pytest.raises(StorageError, match="durable"):
        flushes.store.sync()
    flushes.fail = False
    flushes.store.sync()
    assert flushes.started_at[-1] == 1


class FailingObjects(RecordingObjects):
    """An object store that cannot make objects durable while ``down`` (an S3 outage)."""

    def __init__(self, events: list[str]) -> None:
        super().__init__(events)
        self.down = False

    def sync(self, *, seal: bool = True) -> None:
        if self.down:
            self.events.append("outage")
            raise StorageError("injected outage")
        super().sync(seal=seal)


class KeyedCatalog(RecordingCatalog):
    def stage(self, session_id: str, rows: list[StagedEntry], drops: list[str], **_: Any) -> None:
        self.events.append("stage " + ",".join(str(r.coords[0]) for r in rows))


def test_a_write_behind_batch_that_failed_is_staged_by_the_next_flush() -> None:
    """The rows of a batch that failed during an outage are neither lost nor reordered, and
    its error does not stick: once storage is back, a flush stages them, then what came
    after them."""
    events: list[str] = []
    objects = FailingObjects(events)
    stager = Stager(KeyedCatalog(events), "s", objects, write_behind=True)  # type: ignore[arg-type]
    objects.down = True
    first = stager.submit(_packed_row(0, b"p" * 32))
    with pytest.raises(StorageError, match="outage"):
        stager.flush()
    later = stager.submit(_packed_row(1, b"p" * 32))
    with pytest.raises(StorageError, match="outage"):
        stager.flush()  # still down: tried again, failed again
    objects.down = False
    stager.flush()
    assert first.done()
    assert later.done()
    assert events[-2:] == ["durable", "stage 0,1"]


def test_a_joined_sessions_writer_sees_its_batch_fail_and_the_next_write_goes_through() -> None:
    """Without write-behind each writer waits for its own row: the failure is its writer's
    to handle (it writes again), and it does not fail later writes or flushes."""
    events: list[str] = []
    objects = FailingObjects(events)
    stager = Stager(RecordingCatalog(events), "s", objects)  # type: ignore[arg-type]
    objects.down = True
    with pytest.raises(StorageError, match="outage"):
        stager.submit(_packed_row(0, b"p" * 32)).result(timeout=10)
    objects.down = False
    stager.submit(_packed_row(0, b"p" * 32)).result(timeout=10)
    stager.flush()
    assert events[-2:] == ["durable", "stage chunk"]
