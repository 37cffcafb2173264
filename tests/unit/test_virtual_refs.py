"""Virtual chunk references as values: which URLs a reference may name, and how shards
hold references (the ZLS3 form) next to every older kind of entry."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

import zarrlake
from zarrlake.errors import CatalogError, VirtualSourceError
from zarrlake.model import ChunkRef, Shard, VirtualSource, content_hash, virtual_hash
from zarrlake.model.virtual import (
    SHA256_IDENTITY,
    SPAN_IDENTITY,
    VIRTUAL_IDENTITIES,
    allowed_prefix,
    normalize_prefix,
    normalize_url,
    virtual_identities,
)

SRC = VirtualSource("s3://bucket/archive/a.nc", 4096, etag='"abc"')
OTHER = VirtualSource("file:///data/b.nc", 100, modified="1700000000000000000")


def _virtual(src: VirtualSource, offset: int, length: int) -> ChunkRef:
    # named as before schema 11, so that the layout pinned below keeps its hash
    name = virtual_hash(src, offset, length, SHA256_IDENTITY)
    return ChunkRef(name, length, offset=offset, source=src)


@pytest.mark.parametrize(
    "url",
    [
        "/data/../etc/passwd",
        "file:///data/%2e%2e/etc/passwd",
        "file:///data/%252e%252e/etc/passwd",
        "file:///data/./a.nc",
        "file:///data//a.nc",
        "relative/a.nc",
        "ftp://host/a.nc",
        "gs://bucket/a.nc",
        "file://otherhost/etc/passwd",
        "s3://bucket/a.nc?versionId=1",
        "https://user@host/a.nc",
        "https://host/a.nc#frag",
        "s3:///a.nc",
        "file:///data/a\x00.nc",
        "file:///data\\..\\a.nc",
        "",
    ],
)
def test_hostile_urls_are_refused(url: str) -> None:
    with pytest.raises(VirtualSourceError) as info:
        normalize_url(url)
    assert info.value.url == url or not url


def test_urls_normalize_to_one_form() -> None:
    assert normalize_url("/data/a.nc") == "file:///data/a.nc"
    assert normalize_url("file://localhost/data/a.nc") == "file:///data/a.nc"
    assert normalize_url("S3://Bucket/x/a%20b.nc") == "s3://bucket/x/a b.nc"
    assert normalize_prefix("s3://bucket/data") == "s3://bucket/data/"


def test_a_prefix_ends_at_a_directory_boundary() -> None:
    prefixes = (normalize_prefix("s3://bucket/data"), normalize_prefix("s3://bucket/data/deep"))
    assert allowed_prefix("s3://bucket/data-secret/a.nc", prefixes) is None
    assert allowed_prefix("s3://bucket/data/a.nc", prefixes) == "s3://bucket/data/"
    assert allowed_prefix("s3://bucket/data/deep/a.nc", prefixes) == "s3://bucket/data/deep/"
    assert allowed_prefix("s3://bucket/data/", prefixes) is None


def test_same_source_offset_length_and_version_is_the_same_chunk() -> None:
    assert virtual_hash(SRC, 10, 20) == virtual_hash(VirtualSource(SRC.url, 4096, '"abc"'), 10, 20)
    changed = VirtualSource(SRC.url, 4096, etag='"def"')
    assert len({virtual_hash(SRC, 10, 20), virtual_hash(changed, 10, 20),
                virtual_hash(SRC, 11, 20), virtual_hash(SRC, 10, 21)}) == 4  # fmt: skip


def test_both_identities_name_a_batch_as_one_reference_at_a_time() -> None:
    other = VirtualSource("s3://bucket/data/b.nc", 1 << 40, modified="17")
    sources = [SRC, other]
    ids, offsets, lengths = np.array([1, 0, 1]), np.array([0, 10, 1 << 35]), np.array([5, 20, 9])
    for identity in VIRTUAL_IDENTITIES:
        got = virtual_identities(identity, sources, ids, offsets, lengths)
        assert [bytes(r) for r in got] == [
            virtual_hash(sources[i], o, n, identity)
            for i, o, n in zip(ids.tolist(), offsets.tolist(), lengths.tolist(), strict=True)
        ]


def test_the_sha256_identity_keeps_the_names_of_references_committed_before_schema_11() -> None:
    record = SRC.encode().encode()
    before = hashlib.sha256(b"zarrlake-virtual\0" + record + struct.pack("<QQ", 10, 20))
    assert virtual_hash(SRC, 10, 20, SHA256_IDENTITY) == before.digest()


def test_the_span_identity_is_the_source_then_the_offset_and_length() -> None:
    source = hashlib.sha256(b"zarrlake-virtual-span\0" + SRC.encode().encode()).digest()
    name = virtual_hash(SRC, 1 << 35, 20, SPAN_IDENTITY)
    assert name == source[:16] + (1 << 35).to_bytes(8, "big") + (20).to_bytes(8, "big")
    assert virtual_hash(SRC, 1 << 35, 20) == name  # the identity of new repos


def test_an_unknown_identity_is_refused() -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="unknown virtual identity 'md5'"):
        virtual_hash(SRC, 0, 1, "md5")


def test_shard_holds_virtual_refs_next_to_every_other_kind() -> None:
    stored = ChunkRef(content_hash(b"x" * 600), 600, crc=7)
    inline = ChunkRef(content_hash(b"tiny"), 4, b"tiny")
    packed = ChunkRef(content_hash(b"p" * 600), 600, pack=b"\1" * 32, offset=64, crc=9)
    refs = {
        0: stored,
        1: inline,
        2: packed,
        3: _virtual(SRC, 0, 100),
        4: _virtual(SRC, 100, 100),
        5: _virtual(OTHER, 0, 50),
    }
    shard = Shard.empty().apply(refs)
    data = shard.encode()
    assert data[:4] == b"ZLS3"
    back = Shard.decode(data)
    assert dict(back.items()) == refs
    assert len(back.sources) == 2  # each source is written once, however many refs name it
    assert sorted(back.virtual_entries(), key=repr) == sorted(
        [(SRC, 0, 100), (SRC, 100, 100), (OTHER, 0, 50)], key=repr
    )
    assert [back.object_id_at(i) for i in range(6)] == [
        stored.hash,
        None,
        b"\1" * 32,
        None,
        None,
        None,
    ]


def test_a_shard_whose_virtual_refs_are_gone_is_written_as_before() -> None:
    stored = ChunkRef(content_hash(b"x" * 600), 600, crc=7)
    mixed = Shard.empty().apply({0: stored, 1: _virtual(SRC, 0, 10)})
    plain = Shard.empty().apply({0: stored})
    assert mixed.apply({1: None}).encode() == plain.encode()
    assert plain.encode()[:4] == b"ZLS2"


def test_replacing_one_virtual_ref_keeps_the_others_sources() -> None:
    shard = Shard.empty().apply({0: _virtual(SRC, 0, 10), 1: _virtual(OTHER, 0, 10)})
    shard = Shard.decode(shard.apply({0: _virtual(OTHER, 10, 10)}).encode())
    assert shard.get(1) == _virtual(OTHER, 0, 10)
    assert shard.get(0) == _virtual(OTHER, 10, 10)
    assert shard.sources == (OTHER,)


@pytest.mark.parametrize("cut", ["table", "index"])
def test_a_corrupt_sources_table_is_a_catalog_error(cut: str) -> None:
    data = Shard.empty().apply({0: _virtual(SRC, 0, 10)}).encode()
    if cut == "table":
        bad = data[:-3]
    else:  # a source number past the table
        at = data.index(b"[")
        bad = data[: at - 8] + (2).to_bytes(8, "little") + b"[]"
    with pytest.raises(CatalogError, match="corrupt"):
        Shard.decode(bad)


def _with_table(data: bytes, table: bytes) -> bytes:
    at = data.index(b'["')  # the sources table, after its 8-byte length
    return data[: at - 8] + len(table).to_bytes(8, "little") + table


@pytest.mark.parametrize(
    ("table", "why"),
    [
        (b'["' + b"x" * 20 + b"]", "sources table"),  # not JSON
        (b'[1, "a"]', "not text"),
        (json.dumps([SRC.encode()]).encode(), "has no source"),  # entry 1 names a second
    ],
)
def test_a_sources_table_is_checked_when_its_sources_are_first_needed(
    table: bytes, why: str
) -> None:
    """A shard's sources table is parsed only when a virtual entry is read; a table that is
    not one, or names fewer sources than the entries do, is then a catalog error."""
    good = Shard.empty().apply({0: _virtual(SRC, 0, 10), 1: _virtual(OTHER, 0, 10)})
    shard = Shard.decode(_with_table(good.encode(), table))
    with pytest.raises(CatalogError, match=why):
        shard.get(1)


def test_a_decoded_shard_reads_its_sources_table_as_stored() -> None:
    data = Shard.empty().apply({0: _virtual(SRC, 0, 10), 5: _virtual(OTHER, 3, 10)}).encode()
    shard = Shard.decode(data)
    assert shard.encode() is data
    assert shard.get(5) == _virtual(OTHER, 3, 10)
    assert shard.sources == (SRC, OTHER)


def test_a_rewritten_shard_keeps_the_byte_layout_its_hash_was_made_from() -> None:
    # Inline, object, packed and virtual entries, then deletions, a replacement and an
    # addition: the bytes (so the shard's hash, shared by every commit that did not change
    # it) must stay those this layout always gave.
    def inline(d: bytes) -> ChunkRef:
        return ChunkRef(content_hash(d), len(d), d)

    pack = hashlib.sha256(b"pack").digest()
    first = {i: inline(bytes([i]) * (i % 7)) for i in range(0, 40, 3)}
    first.update({i: ChunkRef(content_hash(bytes([i]) * 600), 600, crc=i) for i in range(1, 40, 3)})
    first.update(
        {
            i: ChunkRef(content_hash(bytes([i]) * 700), 700, pack=pack, offset=i * 700, crc=i)
            for i in range(2, 40, 6)
        }
    )
    first.update({i: _virtual(SRC if i % 4 else OTHER, i * 10, 10) for i in range(5, 40, 6)})
    shard = Shard.empty().apply(first)
    shard = shard.apply({0: None, 5: _virtual(OTHER, 1, 1), 7: None, 41: inline(b"new"), 3: None})
    assert hashlib.sha256(shard.encode()).hexdigest() == (
        "645f9a38ba1266a44e6a527cd031393a17f14155fa55f9464dadb2f1e86290eb"
    )
