"""Lookups a store receives at one moment are answered together (one worker thread, in turn;
:class:`zarrlake.store._Batch`), and so are the small reads among them: each caller
still gets its own key's answer or its own key's error, however many arrive at once, and a
caller that gives up leaves the others answered."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import zarrlake
from tests.integration._workers import run_children, stage_for_lookups

PROTO = default_buffer_prototype()


def _session(make_repo: Callable[..., zarrlake.Repo]) -> zarrlake.WritableSession:
    repo = make_repo()
    s = repo.writable_session()
    a = zarr.create_array(
        s.store,
        name="a",
        shape=(400,),
        chunks=(1,),
        dtype="u1",
        fill_value=0,
        compressors=None,
    )
    a[:100] = np.arange(1, 101, dtype="u1")  # chunks 100..399 are left unwritten
    s.commit("half")
    s = repo.writable_session()
    zarr.open_array(s.store, path="a", mode="r+")[5] = 250  # staged, not committed
    return s


def test_lookups_made_at_once_get_each_their_own_answer(make_repo) -> None:
    s = _session(make_repo)
    store = s.store
    keys = [f"a/c/{i}" for i in range(200)] + ["a/zarr.json", "a/.zarray", "../x", "b/zarr.json"]

    async def all_at_once() -> list[object]:
        got = await asyncio.gather(*(store.get(k, PROTO) for k in keys), return_exceptions=True)
        sizes = await asyncio.gather(store.exists("a/c/5"), store.exists("a/c/150"))
        return [*got, *sizes]

    got = sync(all_at_once())
    chunks, (meta, v2, bad, missing, written, unwritten) = got[:200], got[200:]
    assert [c.to_bytes()[0] for c in chunks[:100]] == [  # type: ignore[union-attr]
        250 if i == 5 else i + 1 for i in range(100)
    ]
    assert chunks[100:] == [None] * 100
    assert b'"node_type":"array"' in meta.to_bytes().replace(b" ", b"")  # type: ignore[union-attr]
    assert (v2, missing) == (None, None)
    assert isinstance(bad, zarrlake.InvalidKeyError)  # its own error, for its caller alone
    assert (written, unwritten) == (True, False)


def test_a_caller_that_gives_up_leaves_the_others_answered(make_repo) -> None:
    s = _session(make_repo)
    store = s.store

    async def one_cancelled() -> list[object]:
        tasks = [asyncio.ensure_future(store.get(f"a/c/{i}", PROTO)) for i in range(10)]
        await asyncio.sleep(0)  # every lookup has joined the batch
        tasks[3].cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    got = sync(one_cancelled())
    assert isinstance(got[3], asyncio.CancelledError)
    assert [g.to_bytes()[0] for i, g in enumerate(got) if i != 3] == [  # type: ignore[union-attr]
        1, 2, 3, 5, 250, 7, 8, 9, 10
    ]  # fmt: skip


@pytest.mark.parametrize("n", [1, 64, 65, 300])
def test_any_number_of_lookups_at_once_is_answered(make_repo, n: int) -> None:
    s = _session(make_repo)
    got = zarr.open_array(s.store, path="a", mode="r")[:n]
    want = np.zeros(n, "u1")
    want[: min(n, 100)] = np.arange(1, min(n, 100) + 1)
    if n > 5:
        want[5] = 250
    np.testing.assert_array_equal(got, want)


def test_many_keys_at_once_find_what_another_process_staged(make_repo, tmp_path: Path) -> None:
    """One statement answers many lookups: each key still finds the row of its own kind
    that another process of the session staged (a chunk, a raw key, references, a drop)."""
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "src.bin").write_bytes(bytes(range(100, 116)))
    repo = make_repo(virtual_sources={str(archive): {}})
    s = repo.writable_session()
    for path in ("a", "old"):
        zarr.create_array(
            s.store, name=path, shape=(8,), chunks=(1,), dtype="u1", compressors=None
        )[:] = 1
    zarr.create_array(s.store, name="v", shape=(16,), chunks=(4,), dtype="u1", compressors=None)
    s.commit("arrays")
    s = repo.writable_session()
    url, name = repo.config.catalog, repo.name
    run_children([(stage_for_lookups, (url, name, s.id, str(archive / "src.bin")))])
    keys = [f"a/c/{i}" for i in range(8)] + [f"v/c/{i}" for i in range(4)]
    keys += ["notes/readme", "old/zarr.json", "old/c/0"]

    async def all_at_once() -> list[object]:
        return await asyncio.gather(*(s.store.get(k, PROTO) for k in keys))

    got = [None if b is None else b.to_bytes() for b in sync(all_at_once())]  # type: ignore[attr-defined]
    assert got[:8] == [bytes([11 if i == 2 else 1]) for i in range(8)]
    assert got[8:12] == [bytes(range(100 + 4 * i, 104 + 4 * i)) for i in range(4)]
    assert got[12:] == [b"staged by another process", None, None]  # old was dropped


def test_a_read_only_stores_reads_made_at_once_are_answered_together(make_repo) -> None:
    """A read-only session's store looks up and reads the small chunks zarr asks for at one
    moment in one worker thread (one ``locate_many`` for up to 64 of them); each caller gets
    its own chunk, range or error; a read of more than 64 KiB is made on its own."""
    repo = make_repo()
    s = repo.writable_session()
    small = zarr.create_array(
        s.store, name="a", shape=(200,), chunks=(1,), dtype="u1", fill_value=0, compressors=None
    )
    small[:100] = np.arange(1, 101, dtype="u1")
    big = zarr.create_array(
        s.store, name="big", shape=(2, 70_000), chunks=(1, 70_000), dtype="u1", compressors=None
    )
    big[:] = np.arange(140_000, dtype="u8").reshape(2, 70_000) % 251
    commit = s.commit("small and big chunks")
    ro = repo.readonly_session(commit)
    calls: list[int] = []
    locate_many = ro.locate_many

    def counted(keys):  # type: ignore[no-untyped-def]
        calls.append(len(keys))
        return locate_many(keys)

    ro.locate_many = counted  # type: ignore[method-assign]
    store = ro.store
    keys = [f"a/c/{i}" for i in range(120)] + ["big/c/1/0", "a/zarr.json", "../x"]

    async def all_at_once() -> list[object]:
        got = await asyncio.gather(*(store.get(k, PROTO) for k in keys), return_exceptions=True)
        part = await store.get("big/c/0/0", PROTO, byte_range=RangeByteRequest(251, 254))
        return [*got, part]

    got = sync(all_at_once())
    chunks, (bigc, meta, bad, part) = got[:120], got[120:]
    assert [c.to_bytes()[0] for c in chunks[:100]] == list(range(1, 101))  # type: ignore[union-attr]
    assert chunks[100:] == [None] * 20  # never written: the fill value
    want = (np.arange(70_000, 140_000, dtype="u8") % 251).astype("u1").tobytes()
    assert bigc.to_bytes() == want  # type: ignore[union-attr]
    assert b'"node_type":"array"' in meta.to_bytes().replace(b" ", b"")  # type: ignore[union-attr]
    assert isinstance(bad, zarrlake.InvalidKeyError)
    assert part.to_bytes() == bytes([0, 1, 2])  # type: ignore[union-attr]
    assert sorted(calls) == [1, 59, 64]  # 123 keys at once in two batches, then the range
