"""Chunk refs, manifest shards and the manifest index."""

from __future__ import annotations

import hashlib
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrlake.errors import CatalogError
from zarrlake.model.manifest import (
    INLINE_LIMIT,
    SHARD_TARGET,
    ChunkRef,
    Shard,
    content_hash,
    join_coords,
    shard_shape_for,
    split_coords,
)


def inline(data: bytes) -> ChunkRef:
    return ChunkRef(hashlib.sha256(data).digest(), len(data), data)


def obj(seed: int, length: int = 4096) -> ChunkRef:
    return ChunkRef(hashlib.sha256(seed.to_bytes(8, "little")).digest(), length)


def packed(seed: int, pack: int, offset: int, length: int = 2048) -> ChunkRef:
    pack_id = hashlib.sha256(b"pack" + pack.to_bytes(4, "little")).digest()
    return ChunkRef(obj(seed).hash, length, pack=pack_id, offset=offset)


def as_dict(shard: Shard) -> dict[int, ChunkRef]:
    return dict(shard.items())


def round_trip(shard: Shard) -> Shard:
    return Shard.decode(shard.encode())


# -- content_hash -----------------------------------------------------------------------------


def test_content_hash_is_sha256_of_any_buffer() -> None:
    data = b"hello"
    expected = hashlib.sha256(data).digest()
    assert content_hash(data) == expected
    assert content_hash(bytearray(data)) == expected
    assert content_hash(memoryview(data)) == expected
    assert len(expected) == 32


# -- Shard ------------------------------------------------------------------------------------


def test_empty_shard() -> None:
    s = Shard.empty()
    assert len(s) == 0
    assert s.get(0) is None
    assert list(s.items()) == []
    back = round_trip(s)
    assert len(back) == 0
    assert back.get(0) is None


def test_apply_empty_updates_returns_same_shard() -> None:
    s = Shard.empty().apply({1: obj(1)})
    assert s.apply({}) is s


def test_apply_does_not_mutate_original() -> None:
    s1 = Shard.empty().apply({1: obj(1), 2: inline(b"ab")})
    s2 = s1.apply({1: None, 2: inline(b"cd"), 3: obj(3)})
    assert as_dict(s1) == {1: obj(1), 2: inline(b"ab")}
    assert as_dict(s2) == {2: inline(b"cd"), 3: obj(3)}


def test_mixed_inline_and_object_refs_round_trip() -> None:
    refs = {
        0: inline(b""),
        5: obj(5),
        7: inline(b"x" * INLINE_LIMIT),
        9999: obj(9999, 10),
        3: inline(b"\x00\x01\x02"),
    }
    s = Shard.empty().apply(refs)
    back = round_trip(s)
    for shard in (s, back):
        assert [f for f, _ in shard.items()] == sorted(refs)
        assert as_dict(shard) == refs
        for f, r in refs.items():
            assert shard.get(f) == r
        assert shard.get(1) is None
        assert shard.get(10_000) is None
    assert back.get(0) == ChunkRef(inline(b"").hash, 0, b"")  # empty inline is not an object ref


def test_deletions() -> None:
    s = Shard.empty().apply({1: obj(1), 2: inline(b"two"), 3: obj(3)})
    s = s.apply({2: None, 3: None, 42: None})
    assert as_dict(s) == {1: obj(1)}
    assert as_dict(round_trip(s)) == {1: obj(1)}


def test_delete_everything_gives_empty_shard() -> None:
    s = Shard.empty().apply({1: obj(1), 2: inline(b"two")}).apply({1: None, 2: None})
    assert len(s) == 0
    assert s.blob == b""
    assert len(round_trip(s)) == 0


def test_replace_inline_by_object_and_back() -> None:
    s = Shard.empty().apply({1: inline(b"small"), 2: obj(2), 3: inline(b"keep")})
    s = s.apply({1: obj(100), 2: inline(b"now inline")})
    assert as_dict(s) == {1: obj(100), 2: inline(b"now inline"), 3: inline(b"keep")}
    assert as_dict(round_trip(s)) == as_dict(s)
    # the blob holds only live inline bytes
    assert len(s.blob) == len(b"now inline") + len(b"keep")


def test_replacing_inline_does_not_keep_garbage_in_blob() -> None:
    s = Shard.empty().apply({1: inline(b"a" * 400)})
    for i in range(10):
        s = s.apply({1: inline(bytes([i]) * 400)})
    assert len(s.blob) == 400
    assert s.get(1) == inline(bytes([9]) * 400)


def test_encoding_is_deterministic_regardless_of_update_order() -> None:
    a = Shard.empty().apply({3: obj(3), 1: inline(b"x"), 2: obj(2)})
    b = Shard.empty().apply({2: obj(2)}).apply({1: inline(b"x")}).apply({3: obj(3)})
    assert a.encode() == b.encode()


flat_st = st.integers(0, 40)
ref_st = st.one_of(
    st.binary(max_size=INLINE_LIMIT).map(inline),
    st.tuples(st.integers(0, 2**32), st.integers(INLINE_LIMIT + 1, 2**40)).map(lambda t: obj(*t)),
    st.tuples(st.integers(0, 2**32), st.integers(0, 3), st.integers(0, 2**40)).map(
        lambda t: packed(*t)
    ),
)
updates_st = st.dictionaries(flat_st, st.one_of(st.none(), ref_st), max_size=12)


@settings(max_examples=200)
@given(steps=st.lists(updates_st, max_size=8))
def test_shard_matches_dict_model(steps: list[dict[int, ChunkRef | None]]) -> None:
    shard = Shard.empty()
    model: dict[int, ChunkRef] = {}
    for updates in steps:
        shard = shard.apply(updates)
        for f, r in updates.items():
            if r is None:
                model.pop(f, None)
            else:
                model[f] = r
        decoded = round_trip(shard)
        for s in (shard, decoded):
            assert len(s) == len(model)
            assert list(s.items()) == sorted(model.items())
            for f in range(41):
                assert s.get(f) == model.get(f)
        # every blob byte belongs to a live inline ref or a live pack location (40 bytes)
        assert len(shard.blob) == sum(
            len(r.inline) if r.inline is not None else 40 if r.pack is not None else 0
            for r in model.values()
        )
        assert sorted(shard.packed_entries()) == sorted(
            (r.pack, r.offset, r.length, r.hash) for r in model.values() if r.pack is not None
        )
        assert [shard.object_id_at(i) for i in range(len(shard))] == [
            r.pack if r.pack is not None else None if r.inline is not None else r.hash
            for _, r in sorted(model.items())
        ]
        # decode(encode(x)) is a fixed point
        assert decoded.encode() == shard.encode()


# -- Shard.decode refuses bad bytes -----------------------------------------------------------


def _sample() -> bytes:
    return Shard.empty().apply({1: obj(1), 2: inline(b"inline bytes")}).encode()


@pytest.mark.parametrize("cut", [0, 1, 4, 15, 16, 20, -1, -13])
def test_decode_truncated_raises_catalog_error(cut: int) -> None:
    data = _sample()
    with pytest.raises(CatalogError):
        Shard.decode(data[:cut])


def test_decode_with_trailing_garbage_raises_catalog_error() -> None:
    with pytest.raises(CatalogError):
        Shard.decode(_sample() + b"\x00")


def test_decode_bad_magic_raises_catalog_error() -> None:
    data = bytearray(_sample())
    data[0:4] = b"XXXX"
    with pytest.raises(CatalogError):
        Shard.decode(bytes(data))


def test_decode_wrong_count_raises_catalog_error() -> None:
    data = bytearray(_sample())
    struct.pack_into("<I", data, 4, 3)
    with pytest.raises(CatalogError):
        Shard.decode(bytes(data))


def test_decode_huge_count_raises_catalog_error() -> None:
    data = bytearray(_sample())
    struct.pack_into("<I", data, 4, 2**32 - 1)
    with pytest.raises(CatalogError):
        Shard.decode(bytes(data))


def test_decode_garbage_raises_catalog_error() -> None:
    with pytest.raises(CatalogError):
        Shard.decode(b"not a shard at all, just some words")


def test_decode_rejects_inline_offset_outside_blob() -> None:
    s = Shard.empty().apply({2: inline(b"inline bytes")})
    data = bytearray(s.encode())
    n = 1
    # header(16) + flat(8n) + hashes(32n) + lengths(8n) + kinds(n) -> offsets
    off_pos = 16 + 8 * n + 32 * n + 8 * n + n
    struct.pack_into("<Q", data, off_pos, 5)
    with pytest.raises(CatalogError):
        Shard.decode(bytes(data))


def test_packed_refs_keep_their_pack_and_offset() -> None:
    s = round_trip(Shard.empty().apply({0: packed(1, 0, 0), 5: packed(2, 0, 2048), 6: obj(3)}))
    assert s.get(5) == packed(2, 0, 2048)
    assert s.object_id_at(0) == s.object_id_at(1) == packed(1, 0, 0).pack
    assert s.object_id_at(2) == obj(3).hash
    assert round_trip(s.apply({0: inline(b"now inline")})).get(5) == packed(2, 0, 2048)


def test_decode_rejects_a_pack_location_outside_blob() -> None:
    s = Shard.empty().apply({2: packed(1, 0, 0)})
    data = bytearray(s.encode())
    off_pos = 16 + 8 + 32 + 8 + 1
    struct.pack_into("<Q", data, off_pos, 1)  # 40 bytes from offset 1 run past the blob
    with pytest.raises(CatalogError):
        Shard.decode(bytes(data))


# -- split_coords / join_coords ---------------------------------------------------------------


def test_split_coords_examples() -> None:
    assert split_coords((0, 0), (10, 10)) == ((0, 0), 0)
    assert split_coords((12, 3), (10, 10)) == ((1, 0), 23)
    assert split_coords((9, 9), (10, 10)) == ((0, 0), 99)
    assert split_coords((), ()) == ((), 0)


def test_split_coords_rejects_wrong_ndim() -> None:
    with pytest.raises(ValueError):
        split_coords((1, 2), (10,))


@st.composite
def coords_and_shape(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ndim = draw(st.integers(0, 5))
    shape = tuple(draw(st.lists(st.integers(1, 50), min_size=ndim, max_size=ndim)))
    coords = tuple(draw(st.lists(st.integers(0, 10**6), min_size=ndim, max_size=ndim)))
    return coords, shape


@settings(max_examples=300)
@given(cs=coords_and_shape())
def test_split_join_inverse(cs: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    coords, shape = cs
    pos, flat = split_coords(coords, shape)
    assert 0 <= flat < math.prod(shape)
    assert all(c // s == p for c, s, p in zip(coords, shape, pos, strict=True))
    assert join_coords(pos, flat, shape) == coords


@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
    pos=st.lists(st.integers(0, 5), min_size=3, max_size=3).map(tuple),
)
def test_flat_indices_of_a_shard_are_a_bijection(
    shape: tuple[int, ...], pos: tuple[int, ...]
) -> None:
    pos = pos[: len(shape)]
    n = math.prod(shape)
    coords = [join_coords(pos, f, shape) for f in range(n)]
    assert len(set(coords)) == n
    assert [split_coords(c, shape) for c in coords] == [(pos, f) for f in range(n)]


# -- shard_shape_for --------------------------------------------------------------------------


def test_shard_shape_0d() -> None:
    assert shard_shape_for((), 0) == ()
    assert shard_shape_for(None, 0) == ()


def test_shard_shape_1d_takes_whole_budget() -> None:
    assert shard_shape_for((3,), 1) == (SHARD_TARGET,)
    assert shard_shape_for(None, 1) == (SHARD_TARGET,)


def test_shard_shape_trailing_fits_grid_and_leading_gets_the_rest() -> None:
    assert shard_shape_for((100, 50), 2) == (SHARD_TARGET // 50, 50)
    # the leading extent is ignored: appends along it keep the layout
    assert shard_shape_for((3, 50), 2) == shard_shape_for((10**6, 50), 2)
    assert shard_shape_for((5, 4, 5), 3) == (SHARD_TARGET // 20, 4, 5)


def test_shard_shape_large_trailing_dim_is_capped() -> None:
    assert shard_shape_for((2, 10**6), 2) == (1, SHARD_TARGET)


def test_shard_shape_unknown_grid_is_balanced() -> None:
    shape = shard_shape_for(None, 3)
    assert SHARD_TARGET // 2 <= math.prod(shape) <= SHARD_TARGET
    assert max(shape) / min(shape) < 2
    # a grid of the wrong rank, or with empty dimensions, counts as unknown
    assert shard_shape_for((7,), 3) == shape
    assert shard_shape_for((0, 0, 0), 3) == shape


@settings(max_examples=300)
@given(
    grid=st.one_of(st.none(), st.lists(st.integers(0, 30_000), min_size=1, max_size=6).map(tuple)),
    ndim=st.integers(1, 6),
)
def test_shard_shape_properties(grid: tuple[int, ...] | None, ndim: int) -> None:
    shape = shard_shape_for(grid, ndim)
    assert len(shape) == ndim
    assert all(s >= 1 for s in shape)
    total = math.prod(shape)
    assert SHARD_TARGET // 2 <= total <= SHARD_TARGET
    trailing = math.prod(shape[1:])
    assert shape[0] == max(1, SHARD_TARGET // trailing)
    if grid is not None and len(grid) == ndim:
        for i in range(1, ndim):
            if grid[i] > 0:
                assert shape[i] <= grid[i]
        if all(g > 0 for g in grid[1:]) and math.prod(grid[1:]) <= SHARD_TARGET:
            assert shape[1:] == grid[1:]


def test_shard_columns_are_numpy_views() -> None:
    # loading a shard is a few frombuffer calls: the columns must have the documented dtypes
    s = round_trip(Shard.empty().apply({1: obj(1), 2: inline(b"ab")}))
    assert s.flat.dtype == np.dtype("<i8")
    assert s.hashes.shape == (2, 32)
    assert s.lengths.dtype == np.dtype("<u8")
