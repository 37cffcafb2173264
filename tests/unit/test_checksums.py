"""Read checksums: a chunk's CRC32C, recorded in its ref, is what a read checks; a ref from
before checksums is checked by the chunk's hash; shards and raw refs keep the checksum."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from zarrlake.errors import CatalogError, ChunkCorruptionError
from zarrlake.model import ChunkRef, Shard, checksum
from zarrlake.model.snapshot import decode_ref, encode_ref
from zarrlake.objects import LocalObjectStore
from zarrlake.objects.base import object_key


def _stored(tmp_path: Path, data: bytes) -> tuple[LocalObjectStore, bytes, Path]:
    store = LocalObjectStore(tmp_path)
    h = hashlib.sha256(data).digest()
    store.write(h, data)
    return store, h, tmp_path / object_key(h)


def _corrupt(path: Path, at: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x10
    path.chmod(0o644)
    path.write_bytes(bytes(raw))


def test_checksum_is_crc32c_of_any_buffer() -> None:
    assert checksum(b"123456789") == 0xE3069283  # the CRC-32C check value
    view = memoryview(bytearray(b"123456789"))
    assert checksum(view) == checksum(np.frombuffer(b"123456789", np.uint8)) == 0xE3069283


@pytest.mark.parametrize("size", [1, 1 << 20, (1 << 20) + 7])
def test_checksum_of_bytes_agrees_with_any_other_buffer_of_them(size: int) -> None:
    # bytes take the extension's own path (which lets other threads run from 1 MiB up)
    data = np.random.default_rng(size).bytes(size)
    assert checksum(data) == checksum(memoryview(bytearray(data))) == checksum(bytearray(data))


def test_a_read_checks_the_checksum_its_ref_carries(tmp_path: Path) -> None:
    data = bytes(range(256)) * 2048
    store, h, _ = _stored(tmp_path, data)
    assert store.read_chunk(ChunkRef(h, len(data), crc=checksum(data))) == data
    wrong = ChunkRef(h, len(data), crc=checksum(data) ^ 1)  # bytes intact, checksum not
    with pytest.raises(ChunkCorruptionError, match="does not match its checksum"):
        store.read_chunk(wrong)
    with pytest.raises(ChunkCorruptionError, match="checksum"):
        store.read_chunk(wrong, 5, 10)  # a byte range is served from the checked object


def test_an_object_the_system_returns_in_pieces_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one read(2) returns at most about 2 GiB; stand in for that limit with a small one
    data = bytes(range(256)) * 40
    store, h, _ = _stored(tmp_path, data)
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 1000)))
    assert store.read_chunk(ChunkRef(h, len(data), crc=checksum(data))) == data


def test_a_ref_without_a_checksum_is_checked_by_its_hash(tmp_path: Path) -> None:
    data = bytes(range(256)) * 2048
    store, h, path = _stored(tmp_path, data)
    old = ChunkRef(h, len(data))  # written before read checksums
    assert store.read_chunk(old) == data
    _corrupt(path, 1000)
    with pytest.raises(ChunkCorruptionError, match="does not match its hash"):
        LocalObjectStore(tmp_path).read_chunk(old)
    with pytest.raises(ChunkCorruptionError, match="checksum"):
        LocalObjectStore(tmp_path).read_chunk(ChunkRef(h, len(data), crc=checksum(data)))


def test_a_packed_chunk_is_checked_by_its_checksum(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    data = b"x" * 4000
    h = hashlib.sha256(data).digest()
    pack, offset = store.write_packed(h, data)
    store.sync()
    ref = ChunkRef(h, len(data), pack=pack, offset=offset, crc=checksum(data))
    assert store.read_chunk(ref) == data
    _corrupt(tmp_path / object_key(pack), offset + 7)
    with pytest.raises(ChunkCorruptionError, match=f"chunk {h.hex()} .* its checksum"):
        LocalObjectStore(tmp_path).read_chunk(ref)


def _shard() -> Shard:
    return Shard.empty().apply(
        {
            0: ChunkRef(b"a" * 32, 600, crc=7),
            3: ChunkRef(b"b" * 32, 10, inline=b"0123456789"),
            5: ChunkRef(b"c" * 32, 900, pack=b"p" * 32, offset=4096, crc=0xFFFFFFFF),
            9: ChunkRef(b"d" * 32, 700),  # carried over from an old shard: no checksum
        }
    )


def test_a_shard_keeps_each_chunks_checksum() -> None:
    back = Shard.decode(_shard().encode())
    assert dict(back.items()) == dict(_shard().items())
    assert back.get(0) == ChunkRef(b"a" * 32, 600, crc=7)
    assert back.get(5) == ChunkRef(b"c" * 32, 900, pack=b"p" * 32, offset=4096, crc=0xFFFFFFFF)
    assert back.get(9) == ChunkRef(b"d" * 32, 700)
    updated = back.apply({0: None, 4: ChunkRef(b"e" * 32, 800, crc=1)})
    assert updated.get(4) == ChunkRef(b"e" * 32, 800, crc=1)
    assert updated.get(5) == back.get(5)  # kept entries keep their checksum


def _as_version_1(data: bytes) -> bytes:
    """The same shard in the layout written before read checksums (no checksum column)."""
    _, n, blob_len = struct.unpack_from("<4sIQ", data, 0)
    head = struct.calcsize("<4sIQ")
    columns = data[head : head + 57 * n]
    return struct.pack("<4sIQ", b"ZLS1", n, blob_len) + columns + data[head + 65 * n :]


def test_a_shard_written_before_checksums_reads_without_them() -> None:
    old = Shard.decode(_as_version_1(_shard().encode()))
    assert old.get(0) == ChunkRef(b"a" * 32, 600)
    assert old.get(3) == ChunkRef(b"b" * 32, 10, inline=b"0123456789")
    assert old.get(5) == ChunkRef(b"c" * 32, 900, pack=b"p" * 32, offset=4096)
    mixed = Shard.decode(old.apply({1: ChunkRef(b"f" * 32, 600, crc=3)}).encode())
    assert mixed.get(1) == ChunkRef(b"f" * 32, 600, crc=3)
    assert mixed.get(0) == ChunkRef(b"a" * 32, 600)


def test_a_shard_with_an_impossible_checksum_is_refused() -> None:
    data = bytearray(_shard().encode())
    n = 4
    crcs_at = struct.calcsize("<4sIQ") + 57 * n
    data[crcs_at : crcs_at + 8] = (1 << 40).to_bytes(8, "little")
    with pytest.raises(CatalogError, match="inconsistent entries"):
        Shard.decode(bytes(data))


@pytest.mark.parametrize(
    "ref",
    [
        ChunkRef(b"a" * 32, 600),
        ChunkRef(b"a" * 32, 600, crc=12345),
        ChunkRef(b"a" * 32, 600, pack=b"p" * 32, offset=512),
        ChunkRef(b"a" * 32, 600, pack=b"p" * 32, offset=512, crc=0),
        ChunkRef(b"a" * 32, 3, inline=b"abc"),
    ],
)
def test_a_raw_ref_round_trips_with_or_without_a_checksum(ref: ChunkRef) -> None:
    assert decode_ref(encode_ref(ref)) == ref
