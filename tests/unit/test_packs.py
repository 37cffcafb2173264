"""Packs of small chunks: the pack layout, the writer that fills them, coalesced range reads,
and a local object store reading and writing packed chunks."""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
from pathlib import Path

import pytest

from zarrlake.errors import CatalogError, ChunkCorruptionError, StorageError
from zarrlake.maintenance.reach import Reach
from zarrlake.model import ChunkRef
from zarrlake.objects import LocalObjectStore
from zarrlake.objects.base import object_key
from zarrlake.objects.openfiles import OpenFiles
from zarrlake.objects.packs import OpenPack, PackWriter, parse_pack
from zarrlake.objects.ranges import RangeCoalescer, plan_ranges


def chunk(i: int, size: int = 1000) -> tuple[bytes, bytes]:
    data = bytes([i % 251]) * size + i.to_bytes(4, "little")
    return hashlib.sha256(data).digest(), data


# -- the pack layout ---------------------------------------------------------------------------


def test_a_pack_lists_its_chunks_and_dedups_equal_bytes() -> None:
    pack = OpenPack(b"p" * 32)
    offsets = [pack.add(*chunk(i)) for i in (1, 2, 1, 3)]
    assert offsets == [0, 1004, 0, 2008]
    data = pack.encode()
    entries = parse_pack(pack.id, data)
    assert [(e.offset, e.length) for e in entries] == [(0, 1004), (1004, 1004), (2008, 1004)]
    for e in entries:
        assert hashlib.sha256(data[e.offset : e.offset + e.length]).digest() == e.hash


@pytest.mark.parametrize("damage", ["magic", "count", "truncated", "empty"])
def test_a_damaged_pack_index_is_refused(damage: str) -> None:
    pack = OpenPack(b"p" * 32)
    pack.add(*chunk(1))
    data = bytearray(pack.encode())
    if damage == "magic":
        data[-1] ^= 0xFF
    elif damage == "count":
        data[-8:-4] = (10**6).to_bytes(4, "little")
    elif damage == "truncated":
        data = data[:-20]
    else:
        data = bytearray(b"ZL")
    with pytest.raises(ChunkCorruptionError, match=r"pack .* is corrupt"):
        parse_pack(pack.id, bytes(data))


# -- the writer --------------------------------------------------------------------------------


def test_the_writer_hands_over_a_full_pack_and_serves_unwritten_ones_from_memory() -> None:
    w = PackWriter(target=3000)
    first = [w.add(*chunk(i)) for i in range(3)]
    assert [f[2] is None for f in first] == [True, True, False]  # the third filled it
    full = first[2][2]
    assert full is not None
    assert {f[0] for f in first} == {full.id}
    fourth = w.add(*chunk(3))
    assert fourth[0] != full.id
    assert fourth[1] == 0
    assert w.read(full.id, 1004, 1004) == chunk(1)[1]
    assert w.pending_ids() == {full.id, fourth[0]}
    w.written(full)
    assert w.read(full.id, 1004, 1004) is None  # written: read it from the store
    sealed = w.seal()
    assert [p.id for p in sealed] == [fourth[0]]
    assert w.seal() == []


def test_a_pack_whose_write_failed_stays_readable_and_is_sealed_again() -> None:
    w = PackWriter()
    pack_id, offset, _ = w.add(*chunk(7))
    (pack,) = w.seal()
    w.written(pack, StorageError("disk full"))
    assert isinstance(w.wait({pack_id}), StorageError)
    assert w.read(pack_id, offset, 1004) == chunk(7)[1]
    assert [p.id for p in w.seal()] == [pack_id]


def _child_packs(w: PackWriter, q: multiprocessing.Queue[object]) -> None:
    q.put((w.pending_ids(), w.add(*chunk(9))[0]))


def test_a_forked_child_never_appends_to_its_parents_open_pack() -> None:
    w = PackWriter()
    parent_pack = w.add(*chunk(1))[0]
    ctx = multiprocessing.get_context("fork")
    q: multiprocessing.Queue[object] = ctx.Queue()
    p = ctx.Process(target=_child_packs, args=(w, q))
    p.start()
    pending, child_pack = q.get(timeout=30)  # type: ignore[misc]
    p.join(30)
    assert pending == set()
    assert child_pack != parent_pack
    assert w.pending_ids() == {parent_pack}


# -- coalesced ranges --------------------------------------------------------------------------


def test_plan_ranges_merges_neighbours_within_the_gap_and_the_span() -> None:
    wanted = [(200, 300), (0, 100), (100, 150), (10_000, 10_100), (10_150, 30_000)]
    plan = plan_ranges(wanted, gap=100, span=15_000)
    assert [(s, e, sorted(m)) for s, e, m in plan] == [
        (0, 300, [0, 1, 2]),
        (10_000, 10_100, [3]),  # merging the last one would fetch more than the span
        (10_150, 30_000, [4]),
    ]


def test_concurrent_reads_of_one_object_become_few_requests() -> None:
    blob = os.urandom(1 << 20)
    calls: list[tuple[int, int]] = []

    async def fetch(obj: bytes, start: int, end: int) -> bytes:
        calls.append((start, end))
        await asyncio.sleep(0)
        return blob[start:end]

    async def main() -> list[bytes]:
        c = RangeCoalescer(fetch)
        ranges = [(i * 4096, i * 4096 + 4000) for i in range(256)]
        return await asyncio.gather(*(c.read(b"o", s, e) for s, e in ranges))

    got = asyncio.run(main())
    assert got == [blob[i * 4096 : i * 4096 + 4000] for i in range(256)]
    assert calls == [(0, 255 * 4096 + 4000)]


def test_a_failed_coalesced_request_fails_every_read_it_served() -> None:
    async def fetch(obj: bytes, start: int, end: int) -> bytes:
        raise StorageError("throttled")

    async def main() -> list[BaseException | bytes]:
        c = RangeCoalescer(fetch)
        return await asyncio.gather(
            *(c.read(b"o", i, i + 1) for i in range(3)), return_exceptions=True
        )

    assert all(isinstance(r, StorageError) for r in asyncio.run(main()))


# -- packed chunks in a local object store -----------------------------------------------------


def _ref(h: bytes, data: bytes, loc: tuple[bytes, int]) -> ChunkRef:
    return ChunkRef(h, len(data), pack=loc[0], offset=loc[1])


def test_a_local_store_writes_one_object_per_pack(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    written = [(h, d, store.write_packed(h, d)) for h, d in map(chunk, range(50))]
    assert list(store.iter_objects()) == []  # still in memory, and readable
    assert store.read_chunk(_ref(*written[7])) == written[7][1]
    store.sync()
    (info,) = store.iter_objects()
    assert info.hash == written[0][2][0]
    for h, d, loc in written:
        assert store.read_chunk(_ref(h, d, loc), 10, 20) == d[10:20]
    assert asyncio.run(store.read_chunk_async(_ref(*written[3]))) == written[3][1]


def test_a_flipped_byte_in_a_pack_is_a_corruption_error_on_read(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    h, d = chunk(1)
    loc = store.write_packed(h, d)
    store.sync()
    path = tmp_path / object_key(loc[0])
    raw = bytearray(path.read_bytes())
    raw[loc[1] + 5] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(ChunkCorruptionError, match=f"chunk {h.hex()} .* pack"):
        store.read_chunk(_ref(h, d, loc), 0, 2)  # a byte range is verified too


def test_sync_retries_a_pack_that_could_not_be_written(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    h, d = chunk(2)
    loc = store.write_packed(h, d)
    blocker = tmp_path / "chunks" / loc[0].hex()[:2]
    blocker.write_bytes(b"a file where the pack's directory must go")
    with pytest.raises(StorageError, match="cannot write a pack"):
        store.sync()
    assert store.read_chunk(_ref(h, d, loc)) == d  # nothing lost
    blocker.unlink()
    store.sync()
    assert [i.hash for i in store.iter_objects()] == [loc[0]]
    assert store.read_chunk(_ref(h, d, loc)) == d


# -- descriptors kept open for range reads -----------------------------------------------------


def test_an_evicted_descriptor_in_use_is_closed_only_after_its_reader_is_done(
    tmp_path: Path,
) -> None:
    files = OpenFiles(limit=1)
    for name in "ab":
        (tmp_path / name).write_bytes(name.encode() * 10)
    with files.open(b"a", str(tmp_path / "a")) as fd_a:
        with files.open(b"b", str(tmp_path / "b")) as fd_b:  # evicts "a", still in use
            assert os.pread(fd_a, 3, 0) == b"aaa"
            assert os.pread(fd_b, 3, 0) == b"bbb"
        assert os.pread(fd_a, 2, 5) == b"aa"
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.pread(fd_a, 1, 0)
    with files.open(b"b", str(tmp_path / "b")) as again:
        assert again == fd_b  # kept open, reused


# -- the live set follows gc's moves -----------------------------------------------------------


def test_live_packed_chunks_are_found_where_gc_moved_them_through_a_chain() -> None:
    p, q, r = (bytes([i]) * 32 for i in (1, 2, 3))
    reach = Reach(moves={(p, 0): (q, 100), (q, 100): (r, 7)})
    live: set[bytes] = set()
    reach.add_packed([(p, 0, 50, b"h" * 32), (p, 50, 10, b"i" * 32)], live)
    assert live == {r, p}  # the moved chunk lives in r; the other one never moved
    assert reach.packed == {r: {7: (50, b"h" * 32)}, p: {50: (10, b"i" * 32)}}
    assert reach.named_packs == {p, q, r}  # every hop keeps its moves


def test_moves_that_loop_are_a_catalog_error() -> None:
    p, q = b"\x01" * 32, b"\x02" * 32
    reach = Reach(moves={(p, 0): (q, 0), (q, 0): (p, 0)})
    with pytest.raises(CatalogError, match="do not end"):
        reach.add_packed([(p, 0, 1, b"h" * 32)], set())
