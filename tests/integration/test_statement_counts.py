"""How many statements the catalog sends for a one-chunk commit and for opening a commit and
reading one chunk (docs/architecture.md, "The commit transaction's statements"). Each costs a
round trip on PostgreSQL, so the counts are held to upper bounds, on both catalogs."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import zarrlake
from zarrlake.catalog import catalog_for
from zarrlake.core import forget_cores
from zarrlake.session.stager import Stager

# Statements sent through the driver. SQLite's BEGIN is a statement of its own (counted);
# PostgreSQL's BEGIN and COMMIT are sent by the driver (not counted, one round trip each).
# Before this bound: 25 on SQLite, 21 on PostgreSQL, then 17 and 10 until the commit stopped
# reading the branch head before its transaction (the compare-and-swap checks it). One of
# them is the branch's gate (its checks and protection, read in one statement before the
# commit is built). PostgreSQL sent 9 until a session opened in one statement; then 8, and
# SQLite 16, until the commit's transaction staged the row the stager still held queued
# (the stager's transaction, 3 statements on SQLite and 2 on PostgreSQL, is not sent).
ONE_CHUNK_COMMIT = {"sqlite": 13, "postgresql": 6}
# Opening a writable session: the branch head read and the session inserted. PostgreSQL does
# both in one statement outside an explicit transaction (no BEGIN or COMMIT either); it sent
# two in a transaction before. SQLite: BEGIN IMMEDIATE and the two statements, in process.
OPEN_SESSION = {"sqlite": 3, "postgresql": 1}
# A fresh handle opening the head commit by id and reading one chunk: the ref lookup, the
# commit with its root, the metadata documents with the manifest indexes, the shard.
# Before this bound: 10 on SQLite, 5 on PostgreSQL.
OPEN_AND_READ = {"sqlite": 4, "postgresql": 4}
# Opening an array inside a writable session: zarr asks for its zarr.json (whose node another
# process of the session may have changed) and the v2 documents at once, answered by one
# statement. Before this bound: 2 (the node's metadata was refreshed by a statement of its own).
OPEN_ARRAY_IN_SESSION = {"sqlite": 1, "postgresql": 1}
# The commit transaction alone (insert_commit), between BEGIN and COMMIT.
COMMIT_TX = {"sqlite": 7, "postgresql": 3}
# A fresh handle's diff of two commits by id: both refs looked up, both commits with their
# roots, the top documents, the differing shards. Before this bound: 9 on both catalogs.
DIFF = {"sqlite": 4, "postgresql": 4}


@contextmanager
def statements(repo: zarrlake.Repo) -> Iterator[list[str]]:
    sent: list[str] = []

    def seen(statement: str, _params: Any) -> None:
        sent.append(" ".join(statement.split()))

    with catalog_for(repo.config.catalog).watch(seen):
        yield sent


def _array_repo(make_repo: Callable[..., zarrlake.Repo]) -> zarrlake.Repo:
    repo = make_repo()
    s = repo.writable_session()
    arr = zarr.create_array(
        s.store, name="a", shape=(64,), chunks=(1,), dtype="i1", compressors=None, fill_value=0
    )
    arr[:] = 1
    s.commit("64 chunks")
    return repo


def _one_chunk_commit(repo: zarrlake.Repo, index: int, value: int) -> str:
    s = repo.writable_session()
    buf = default_buffer_prototype().buffer.from_bytes(bytes([value]))
    sync(s.store.set(f"a/c/{index}", buf))
    return s.commit(f"chunk {index}")


def _dialect(repo: zarrlake.Repo) -> str:
    return catalog_for(repo.config.catalog).dialect


def test_one_chunk_commit_sends_few_statements(
    make_repo: Callable[..., zarrlake.Repo], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the row stays queued until the commit, however slow the machine (it waits 4 ms for
    # company before the stager stages it)
    monkeypatch.setattr(Stager, "LINGER", 600.0)
    repo = _array_repo(make_repo)
    _one_chunk_commit(repo, 0, 2)  # warm: the session machinery's first use
    with statements(repo) as sent:
        _one_chunk_commit(repo, 1, 3)
    assert len(sent) <= ONE_CHUNK_COMMIT[_dialect(repo)], "\n".join(sent)


def test_opening_a_session_sends_few_statements(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = _array_repo(make_repo)
    repo.writable_session()  # warm
    with statements(repo) as sent:
        s = repo.writable_session()
    assert len(sent) <= OPEN_SESSION[_dialect(repo)], "\n".join(sent)
    assert s.base_commit == repo.branches()["main"]
    opened = [i for i in repo.sessions() if i.id == s.id]
    assert [(i.status, i.branch, i.base_commit) for i in opened] == [
        ("open", "main", s.base_commit)
    ]


def test_opening_an_array_in_a_writable_session_sends_few_statements(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = _array_repo(make_repo)
    s = repo.writable_session()
    with statements(repo) as sent:
        arr = zarr.open_array(s.store, path="a", mode="r+")
    assert arr.shape == (64,)
    assert len(sent) <= OPEN_ARRAY_IN_SESSION[_dialect(repo)], "\n".join(sent)


def test_commit_transaction_sends_few_statements(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = _array_repo(make_repo)
    s = repo.writable_session()
    sync(s.store.set("a/c/5", default_buffer_prototype().buffer.from_bytes(bytes([9]))))
    s.flush()
    with statements(repo) as sent:
        s.commit("chunk 5")
    # the transaction starts at the first statement that reads the catalog's identity
    first = next(i for i, q in enumerate(sent) if "zl_info" in q)
    assert len(sent) - first <= COMMIT_TX[_dialect(repo)], "\n".join(sent[first:])


def test_a_diff_sends_few_statements(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = _array_repo(make_repo)
    before = repo.resolve("main")
    after = _one_chunk_commit(repo, 3, 9)
    forget_cores()  # a fresh handle: no cached nodes
    fresh = zarrlake.Repo.from_config(repo.config)
    with statements(repo) as sent:
        found = fresh.diff(before, after)
    assert found.summary().chunks_changed == 1
    assert len(sent) <= DIFF[_dialect(repo)], "\n".join(sent)


def test_opening_a_commit_and_reading_a_chunk_sends_few_statements(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = _array_repo(make_repo)
    head = _one_chunk_commit(repo, 7, 5)
    forget_cores()  # a fresh handle: no cached nodes
    fresh = zarrlake.Repo.from_config(repo.config)
    with statements(repo) as sent:
        store = fresh.readonly_session(commit=head).store
        value = zarr.open_array(store, path="a", mode="r")[7]
    assert value == 5
    assert len(sent) <= OPEN_AND_READ[_dialect(repo)], "\n".join(sent)


def test_a_shipped_store_of_a_session_joined_here_opens_without_a_statement(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    """Each dask task unpickles its own store: once its process has joined the session, the
    store finds it without asking the catalog (its writes' transactions check the session)."""
    repo = _array_repo(make_repo)
    s = repo.writable_session()
    shipped = pickle.dumps(s.store)
    with statements(repo) as sent:
        store = pickle.loads(shipped)
        assert store.session is s
    assert sent == []
    buf = default_buffer_prototype().buffer.from_bytes(bytes([7]))
    sync(store.set("a/c/3", buf))
    s.abandon()
    with pytest.raises(zarrlake.SessionClosedError):
        sync(pickle.loads(shipped).set("a/c/4", buf))  # a closed session is not served


# Reading every chunk of the 64-chunk array inside a writable session, zarr allowed to ask for
# all of them at once: the store looks them up among the staged changes in one statement (the
# array's opening asks for its metadata in one more; two until a metadata key was looked up
# with the others, when the bound was set). Before this bound: one statement a chunk.
READ_IN_SESSION = {"sqlite": 4, "postgresql": 4}


def test_reading_many_chunks_in_a_writable_session_sends_few_statements(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = _array_repo(make_repo)
    s = repo.writable_session()
    sync(s.store.set("a/c/9", default_buffer_prototype().buffer.from_bytes(bytes([4]))))
    s.flush()
    with statements(repo) as sent, zarr.config.set({"async.concurrency": 64}):
        values = zarr.open_array(s.store, path="a", mode="r")[:]
    assert values.tolist() == [4 if i == 9 else 1 for i in range(64)]
    assert len(sent) <= READ_IN_SESSION[_dialect(repo)], "\n".join(sent)
