"""Garbage collection and history expiry: exactly the unreachable is freed, open sessions are
roots, the two phases, races with writers in other processes, and crashes at any point."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
import zarr

import zarrlake
from tests.conftest import unique
from tests.integration._gc_workers import gc_until, gc_with_fault, write_garbage_then_dedup
from tests.integration._workers import CHUNK as SMALL_CHUNK
from tests.integration._workers import (
    CTX,
    Child,
    create_arrays,
    fill_all,
    run_children,
    uniform_value,
)
from zarrlake.model.hashing import DEFAULT_CONTENT_HASH, chunk_hasher
from zarrlake.objects import PACK_CHUNK_LIMIT
from zarrlake.session.stager import Stager
from zarrlake.testing import LakeProbe

PATHS = ["a"]
N_CHUNKS = 4
# Most tests here follow chunk objects by their hashes, so their chunks are objects of their
# own (over the pack limit); the race with a writer runs with packed chunks too.
CHUNK = PACK_CHUNK_LIMIT // 8 + 1


def h(value: int) -> bytes:
    """The object hash of a chunk holding ``value`` (uncompressed int64, CHUNK of them), by a
    new repo's content hash."""
    return chunk_hasher(DEFAULT_CONTENT_HASH)(np.full(CHUNK, value, "<i8").tobytes())


def objects(repo: zarrlake.Repo) -> set[bytes]:
    return LakeProbe(repo).object_hashes()


def nodes(repo: zarrlake.Repo) -> set[bytes]:
    return LakeProbe(repo).node_hashes()


def referenced_nodes(repo: zarrlake.Repo) -> set[bytes]:
    """Every catalog node the repo's commits reference, walked here independently of gc."""
    out: set[bytes] = set()
    probe = LakeProbe(repo)
    for c in probe.catalog.commits.all():
        out.add(c.root_hash)
        if c.changes_hash is not None:
            out.add(c.changes_hash)
        root = probe.reader.root(c.root_hash)
        for node in root.nodes.values():
            out.add(node.meta)
            if node.manifest is not None:
                out.add(node.manifest)
                out |= index_tree_nodes(repo, node.manifest)
    return out


def index_tree_nodes(repo: zarrlake.Repo, manifest: bytes) -> set[bytes]:
    """The index nodes and shards under one manifest index, walked down from its top."""
    reader = LakeProbe(repo).reader
    index = reader.index(manifest)
    out: set[bytes] = set()
    frontier = [(h, index.depth - 1) for h in index.top_children()]
    while frontier:
        h, level = frontier.pop()
        out.add(h)
        if level >= 1:
            frontier.extend((c, level - 1) for c in reader.index_node(h).child_hashes())
    return out


def commit_value(repo: zarrlake.Repo, value: int, branch: str = "main") -> str:
    s = repo.writable_session(branch)
    fill_all(s.store, PATHS, value)
    return s.commit(f"k={value}")


def stage_value(repo: zarrlake.Repo, value: int) -> zarrlake.Session:
    s = repo.writable_session()
    fill_all(s.store, PATHS, value)
    s.flush()
    return s


def reads(repo: zarrlake.Repo, ref: str) -> int | None:
    value, problems = uniform_value(repo.readonly_session(ref=ref).store, PATHS)
    assert problems == []
    return value


@pytest.fixture
def lake(make_repo: Callable[..., zarrlake.Repo]) -> zarrlake.Repo:
    repo = make_repo()
    create_arrays(repo, PATHS, N_CHUNKS, chunk=CHUNK)
    return repo


def test_gc_removes_exactly_the_unreachable_objects(lake: zarrlake.Repo) -> None:
    repo = lake
    c1 = commit_value(repo, 1)
    c2 = commit_value(repo, 2)
    stage_value(repo, 3).abandon()  # garbage: an abandoned session's objects
    expired = stage_value(repo, 4)  # garbage: an expired session's objects
    probe = LakeProbe(repo)
    sessions = probe.tables.sessions
    with probe.sql() as conn:
        conn.execute(sa.update(sessions).where(sessions.c.id == expired.id).values(expires_at=0))
    before = objects(repo)
    assert before == {h(1), h(2), h(3), h(4)}
    report = repo.gc(timedelta(0))
    assert objects(repo) == {h(1), h(2)}  # every commit's data is kept
    assert (report.objects_deleted, report.object_bytes_freed) == (2, 2 * CHUNK * 8)
    assert reads(repo, c1) == 1
    assert reads(repo, c2) == 2
    assert repo.fsck(verify=True).ok
    # nothing else to free: a second run deletes nothing
    assert repo.gc(timedelta(0)).deleted == 0


def test_gc_removes_partial_writes_left_by_killed_writers(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    some_dir = next(p for p in (Path(repo.storage) / "chunks").iterdir() if p.is_dir())
    stale, fresh = some_dir / "ab12.999.1.tmp", some_dir / "cd34.999.2.tmp"
    stale.write_bytes(b"half a chunk")
    fresh.write_bytes(b"a write in flight")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    repo.gc(timedelta(0))
    assert not stale.exists()
    assert fresh.exists()  # may belong to a writer that is still running
    assert reads(repo, "main") == 1


def test_expire_then_gc_frees_the_dropped_history(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    c2 = commit_value(repo, 2)
    c3 = commit_value(repo, 3)
    nodes_before = nodes(repo)
    report = repo.expire(timedelta(0))
    assert c2 in report.expired
    assert c3 not in report.expired  # the head of main
    assert [c.id for c in repo.log("main")] == [c3]
    gc = repo.gc(timedelta(0))
    assert objects(repo) == {h(3)}
    assert gc.objects_deleted == 2
    assert gc.nodes_deleted > 0
    assert nodes(repo) < nodes_before
    assert nodes(repo) == referenced_nodes(repo)  # exactly what the remaining commits use
    assert reads(repo, "main") == 3
    assert repo.fsck(verify=True).ok


def test_gc_keeps_an_open_sessions_staged_objects(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    s = stage_value(repo, 5)
    repo.gc(timedelta(0))
    assert h(5) in objects(repo)
    commit = s.commit("after gc")
    assert reads(repo, commit) == 5
    assert repo.fsck(verify=True).ok


def test_gc_keeps_a_session_joined_from_another_process(
    lake: zarrlake.Repo, catalog_url: str
) -> None:
    repo = lake
    s = repo.writable_session()
    run_children([(_stage_in_session, (catalog_url, repo.name, s.id, 6))])
    repo.gc(timedelta(0))
    assert h(6) in objects(repo)
    assert reads(repo, s.commit("joined writes")) == 6


def _stage_in_session(url: str, name: str, session_id: str, value: int) -> None:
    s = zarrlake.Repo.open(catalog=url, name=name).session(session_id)
    fill_all(s.store, PATHS, value)
    s.flush()


def test_gc_is_two_phase(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    stage_value(repo, 7).abandon()
    dry = repo.gc(timedelta(hours=1), dry_run=True)
    assert (dry.dry_run, dry.objects_deleted, dry.objects_pending) == (True, 0, 1)
    first = repo.gc(timedelta(hours=1))  # marks only: nothing is old enough
    assert (first.objects_deleted, first.objects_pending) == (0, 1)
    assert h(7) in objects(repo)
    assert repo.gc(timedelta(hours=1)).objects_deleted == 0  # still within the grace
    assert h(7) in objects(repo)
    dry = repo.gc(timedelta(0), dry_run=True)
    assert (dry.objects_deleted, dry.object_bytes_freed) == (1, CHUNK * 8)
    assert h(7) in objects(repo)  # a dry run changes nothing
    assert repo.gc(timedelta(0)).objects_deleted == 1
    assert objects(repo) == {h(1)}


def test_dedup_against_a_marked_object_keeps_it(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    stage_value(repo, 8).abandon()
    repo.gc(timedelta(hours=1))  # h(8) is marked unreachable
    commit = commit_value(repo, 8)  # a new session writes the same bytes and commits
    repo.gc(timedelta(0))
    assert h(8) in objects(repo)
    assert reads(repo, commit) == 8
    assert repo.fsck(verify=True).ok


@pytest.mark.parametrize("row", ["staged", "queued"])
def test_commit_staging_an_object_gc_deleted_is_refused(
    lake: zarrlake.Repo, monkeypatch: pytest.MonkeyPatch, row: str
) -> None:
    """The race itself, step by step: a session checks that an object exists (dedup), gc
    deletes it before the session stages its row, then the session commits. ``queued``: the
    row is still queued in this process when the commit starts (the write-behind stager waits
    for company), so the commit's own transaction stages it; gc's claims are checked against
    it all the same, and the refused commit leaves it staged, as a flush would have."""
    repo = lake
    head = commit_value(repo, 1)
    stage_value(repo, 9).abandon()
    s = repo.writable_session()
    if row == "queued":
        monkeypatch.setattr(Stager, "LINGER", 600.0)
        zarr.open_array(s.store, path="a", mode="r+")[0:CHUNK] = 9  # dedup: it exists
    else:
        stage = s.stage_later("a/c/0", np.full(CHUNK, 9, "<i8").tobytes())  # dedup: it exists
    repo.gc(timedelta(0))  # the row is not staged yet: the object is garbage, and goes
    assert h(9) not in objects(repo)
    if row == "staged":
        stage()
    with pytest.raises(zarrlake.ObjectMissingError, match="garbage collection"):
        s.commit("references a deleted object")
    assert repo.resolve("main") == head
    # no commit lacks an object; the refused session's own staged row does
    report = repo.fsck()
    assert [(i.kind, i.hash, i.commit) for i in report.issues] == [
        ("missing_object", h(9).hex(), None)
    ]
    s.abandon()
    assert repo.fsck().ok
    # a session opened after the deletion writes the object afresh and commits
    s2 = repo.writable_session()
    zarr.open_array(s2.store, path="a", mode="r+")[0:CHUNK] = 9
    commit = s2.commit("fresh write")
    assert h(9) in objects(repo)
    assert repo.fsck(verify=True).ok
    assert zarr.open_array(repo.readonly_session(ref=commit).store, path="a")[0] == 9


def test_catalog_node_written_again_after_marking_survives(lake: zarrlake.Repo) -> None:
    repo = lake
    cat = LakeProbe(repo).catalog
    data = b'{"zarr_format": 3, "node_type": "group", "attributes": {"orphan": true}}'
    key = hashlib.sha256(data).digest()
    cat.nodes.put({key: ("meta", data)})
    cat.gc.mark([("blob", key, len(data))])
    cat.nodes.put({key: ("meta", data)})  # a commit writes the same node again
    assert cat.gc.delete_nodes([key], 0.0) == []
    assert key in nodes(repo)
    cat.gc.mark([("blob", key, len(data))])
    assert cat.gc.delete_nodes([key], 0.0) == [key]


def test_gc_tombstones_are_forgotten_once_no_session_predates_them(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    old = repo.writable_session()
    stage_value(repo, 10).abandon()
    repo.gc(timedelta(0))

    probe = LakeProbe(repo)
    gc_marks = probe.tables.gc_marks

    def tombstones() -> int:
        with probe.sql() as conn:
            return len(
                conn.execute(
                    sa.select(gc_marks.c.hash).where(
                        gc_marks.c.repo_id == probe.repo_id, gc_marks.c.state == "deleted"
                    )
                ).all()
            )

    assert tombstones() == 1  # `old` was open when h(10) went
    old.abandon()
    repo.gc(timedelta(0))
    assert tombstones() == 0


def test_gc_validates_its_arguments(lake: zarrlake.Repo) -> None:
    with pytest.raises(zarrlake.InvalidInputError):
        lake.gc(timedelta(hours=-1))
    with pytest.raises(zarrlake.InvalidInputError):
        lake.gc(3600)  # type: ignore[arg-type]


# -- expire ------------------------------------------------------------------------------------


def test_expire_never_affects_branches_and_tags(lake: zarrlake.Repo) -> None:
    repo = lake
    init = repo.log("main")[-1].id
    c1 = commit_value(repo, 1)
    repo.create_tag("v1")
    c2 = commit_value(repo, 2)
    repo.create_branch("dev")
    c3 = commit_value(repo, 3)
    refs = (repo.branches(), repo.tags())
    dry = repo.expire(timedelta(0), dry_run=True)
    report = repo.expire(timedelta(0))
    assert dry.expired == report.expired
    assert set(report.expired).isdisjoint({c1, c2, c3})
    assert init not in report.expired  # keep_tags: the history of v1 stays
    assert (repo.branches(), repo.tags()) == refs
    assert [c.id for c in repo.log("v1")][:1] == [c1]
    assert reads(repo, "v1") == 1
    assert reads(repo, "dev") == 2
    assert reads(repo, "main") == 3
    again = repo.expire(timedelta(0), keep_tags=False)
    assert init in again.expired
    assert c1 not in again.expired  # the tagged commit itself is never dropped


def test_expire_keeps_recent_history(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    c2 = commit_value(repo, 2)
    c3 = commit_value(repo, 3)
    report = repo.expire(repo.commit_info(c2).created_at)
    assert c2 not in report.expired
    assert [c.id for c in repo.log("main")] == [c3, c2]


def test_expire_keeps_what_an_open_session_needs(lake: zarrlake.Repo) -> None:
    repo = lake
    commit_value(repo, 1)
    s = repo.writable_session()  # based on k=1
    zarr.open_array(s.store, path="a", mode="r+")[0:CHUNK] = 50
    for k in (2, 3):  # later commits on main, elsewhere in the array
        other = repo.writable_session()
        zarr.open_array(other.store, path="a", mode="r+")[CHUNK:] = k
        other.commit(f"k={k} after chunk 0")
    repo.expire(timedelta(0))
    repo.gc(timedelta(0))
    # the session still rebases over the commits since its base, and commits
    commit = s.commit("after expire")
    data = zarr.open_array(repo.readonly_session(ref=commit).store, path="a")[:]
    assert data[:CHUNK].tolist() == [50] * CHUNK
    assert set(data[CHUNK:].tolist()) == {3}


def test_expire_rejects_bad_arguments(lake: zarrlake.Repo) -> None:
    with pytest.raises(zarrlake.InvalidInputError):
        lake.expire(timedelta(hours=-1))
    with pytest.raises(zarrlake.InvalidInputError):
        lake.expire("yesterday")  # type: ignore[arg-type]


# -- processes ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [CHUNK, SMALL_CHUNK], ids=["objects", "packs"])
def test_gc_racing_a_writer_never_leaves_a_commit_without_its_objects(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, chunk: int
) -> None:
    """Objects: the writer deduplicates against garbage gc is deleting. Packs: gc finds the
    writer's new packs before their rows are staged (grace 0), and deletes some of them."""
    repo = make_repo()
    create_arrays(repo, PATHS, N_CHUNKS, chunk=chunk)
    start, stop, runs = CTX.Event(), CTX.Event(), CTX.Value("i", 0)
    writer = Child(
        write_garbage_then_dedup, catalog_url, repo.name, PATHS, 25, start, stop, runs
    ).start()
    collector = Child(gc_until, catalog_url, repo.name, start, stop, runs).start()
    start.set()
    written = writer.result(timeout=300)
    collected = collector.result(timeout=300)
    assert collected["runs"] > 0
    assert collected["deleted"] >= 8  # the garbage object of every third round, at least
    report = repo.fsck(verify=True)
    assert report.ok, report
    for k, commit in written["commits"]:
        assert reads(repo, commit) == k
    assert [k for k, _ in written["commits"]] == list(range(1, 26))


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["marked", "claimed", "delete", "deleted"])
def test_gc_killed_midway_then_rerun_completes(
    lake: zarrlake.Repo, catalog_url: str, fault: str
) -> None:
    repo = lake
    c1 = commit_value(repo, 1)
    for value in range(100, 106):
        stage_value(repo, value).abandon()
    kept = stage_value(repo, 2)  # an open session's objects survive the crash and the rerun
    child = Child(gc_with_fault, catalog_url, repo.name, fault).start()
    child.proc.join(timeout=120)
    assert child.proc.exitcode == -signal.SIGKILL
    report = repo.gc(timedelta(0))
    assert objects(repo) == {h(1), h(2)}
    assert report.objects_pending == 0
    assert repo.fsck(verify=True).ok
    assert reads(repo, c1) == 1
    assert reads(repo, kept.commit("after the crash")) == 2
    assert repo.fsck(verify=True).ok


def test_gc_on_s3_removes_exactly_the_unreachable_objects(
    make_repo: Callable[..., zarrlake.Repo], s3_options: dict[str, object]
) -> None:
    repo = make_repo(storage=f"s3://lake/{unique('gc')}", storage_options=s3_options)
    create_arrays(repo, PATHS, N_CHUNKS, chunk=CHUNK)
    c1 = commit_value(repo, 1)
    stage_value(repo, 3).abandon()
    kept = stage_value(repo, 4)
    assert objects(repo) == {h(1), h(3), h(4)}
    assert repo.gc(timedelta(0)).objects_deleted == 1
    assert objects(repo) == {h(1), h(4)}
    assert reads(repo, c1) == 1
    assert reads(repo, kept.commit("kept")) == 4
    assert repo.fsck(verify=True).ok


def test_progress_bars_on_request_only(
    lake: zarrlake.Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_value(lake, 1)
    lake.gc(timedelta(0), progress=False)
    lake.fsck(verify=True, progress=False)
    assert capsys.readouterr().err == ""
    lake.gc(timedelta(0), progress=True)
    lake.fsck(verify=True, progress=True)
    err = capsys.readouterr().err
    assert "listing objects" in err
    assert "verifying objects" in err
