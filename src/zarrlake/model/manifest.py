"""Chunk refs, manifest shards and the per-array manifest index.

An array's manifest maps chunk coordinates to :class:`ChunkRef`. It is split into shards by
chunk-grid region: a fixed block of ``shard_shape`` chunk coordinates per shard. A shard is an
immutable, content-addressed value stored in a compact binary layout (sorted flat indices and
parallel columns) so that loading one is a few ``numpy.frombuffer`` calls and a lookup is a
binary search. The :class:`ManifestIndex` maps shard positions to shard hashes.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import google_crc32c
import numpy as np

from zarrlake.errors import CatalogError, VirtualSourceError
from zarrlake.model.virtual import VirtualSource
from zarrlake.types import ChunkCoords

__all__ = [
    "INLINE_LIMIT",
    "SHARD_TARGET",
    "ChunkRef",
    "ManifestIndex",
    "Shard",
    "checksum",
    "content_hash",
    "same_content",
    "shard_shape_for",
    "split_coords",
]

INLINE_LIMIT = 512
"""Chunks of at most this many bytes are stored inline in the catalog."""

SHARD_TARGET = 1_024
"""Roughly how many chunk refs one manifest shard covers.

A commit rewrites every shard it touches (about 60 bytes per ref), so a one-chunk commit writes
about 60 KB here instead of 600 KB with 10,000-ref shards: measured on SQLite, a one-chunk
update of a 100,000-chunk array went from 23 ms to 15 ms, and the catalog grows ten times
slower. The manifest index grows with the number of populated shards instead (about 75 bytes
each), which stays small next to that up to arrays of about a million chunks."""

_SHARD_MAGIC = b"ZLS2"  # "ZLS1" shards (before read checksums) have no checksum column
_SHARD_V1 = b"ZLS1"
# "ZLS3": a ZLS2 shard with virtual entries; its sources table (a JSON list of
# VirtualSource records, each written once however many entries name it) follows the blob
_SHARD_V3 = b"ZLS3"
_HEADER = struct.Struct("<4sIQ")
_SOURCES_LEN = struct.Struct("<Q")
_NO_CRC = -1  # the checksum column's value for a chunk written before read checksums
_PACKED = struct.Struct("<32sQ")  # a packed entry's (pack id, offset in the pack), in the blob
_VIRTUAL = struct.Struct("<QI")  # a virtual entry's (offset in its source, source number)

OBJECT, INLINE, PACKED, VIRTUAL = 0, 1, 2, 3
"""The kinds of shard entries: an object of its own, inline bytes, a range of a pack, a range
of a source file or object outside the lake (a virtual reference)."""


def content_hash(data: bytes | bytearray | memoryview) -> bytes:
    """SHA-256 digest: the content address of catalog nodes (roots, manifest shards, metadata
    documents, change sets) in every repo. Chunk objects are named by the repo's own content
    hash instead (:mod:`zarrlake.model.hashing`)."""
    return hashlib.sha256(data).digest()


def checksum(data: bytes | bytearray | memoryview) -> int:
    """CRC32C of a chunk: what every read checks (the content hash is for ``fsck``)."""
    if isinstance(data, bytes):
        # the C extension lets other threads run during a large checksum of bytes only
        return int(google_crc32c.value(data))
    # a numpy view passes any other buffer without a copy (the extension refuses memoryviews)
    return int(google_crc32c.value(np.frombuffer(data, np.uint8)))


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """Where a chunk's bytes are: an object named by ``hash``, ``inline`` bytes, or ``length``
    bytes at ``offset`` in the pack object ``pack``. ``hash`` is always the chunk's own content
    hash, which verifies it wherever it is stored; ``crc`` is its :func:`checksum`, checked
    on every read instead when the chunk has one (chunks written before read checksums have
    ``None`` and are checked by their hash).

    A virtual chunk (``source`` set) is ``length`` bytes at ``offset`` of a file or object
    outside the lake; its ``hash`` is :func:`~zarrlake.model.virtual.virtual_hash` of the
    source, offset and length (its identity, not its content's), and the source's recorded
    version is what a read checks."""

    hash: bytes
    length: int
    inline: bytes | None = None
    pack: bytes | None = None
    offset: int = 0
    crc: int | None = None
    source: VirtualSource | None = None

    @property
    def virtual(self) -> bool:
        return self.source is not None


def same_content(a: ChunkRef | None, b: ChunkRef | None) -> bool:
    """Whether two refs (``None``: no chunk) hold the same bytes, wherever each is stored and
    whether or not it carries a checksum."""
    return a is b or (a is not None and b is not None and a.hash == b.hash)


def _crc(item: tuple[int, ChunkRef]) -> int:
    crc = item[1].crc
    return _NO_CRC if crc is None or item[1].inline is not None else crc


def _kind(ref: ChunkRef) -> int:
    if ref.inline is not None:
        return INLINE
    if ref.source is not None:
        return VIRTUAL
    return PACKED if ref.pack is not None else OBJECT


# the size of a located entry's part of the blob, by kind (inline bytes: their length)
_LOCATION_SIZE = np.array([0, 0, _PACKED.size, _VIRTUAL.size], np.uint64)


def shard_shape_for(grid_shape: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """Choose a shard shape (in chunks) covering about :data:`SHARD_TARGET` chunks.

    Trailing dimensions are filled first, up to the grid's extent; the leading dimension gets
    the remaining budget whatever the grid, so arrays that grow along it (appends) keep their
    shard layout. The shape is fixed when an array is created and kept across resizes.
    """
    if ndim == 0:
        return ()
    grid = grid_shape if grid_shape is not None and len(grid_shape) == ndim else (0,) * ndim
    budget = SHARD_TARGET
    shape = [1] * ndim
    for i in range(ndim - 1, 0, -1):
        extent = grid[i] if grid[i] > 0 else round(budget ** (1 / (i + 1)))
        shape[i] = max(1, min(extent, budget))
        budget = max(1, budget // shape[i])
    shape[0] = max(1, budget)
    return tuple(shape)


def split_coords(coords: ChunkCoords, shard_shape: tuple[int, ...]) -> tuple[ChunkCoords, int]:
    """(shard position, flat index inside the shard) of a chunk."""
    pos = tuple(c // s for c, s in zip(coords, shard_shape, strict=True))
    flat = 0
    for c, s in zip(coords, shard_shape, strict=True):
        flat = flat * s + (c % s)
    return pos, flat


def join_coords(pos: ChunkCoords, flat: int, shard_shape: tuple[int, ...]) -> ChunkCoords:
    """Inverse of :func:`split_coords`."""
    local = []
    for s in reversed(shard_shape):
        local.append(flat % s)
        flat //= s
    local.reverse()
    return tuple(p * s + c for p, s, c in zip(pos, shard_shape, local, strict=True))


class Shard:
    """An immutable block of chunk refs, keyed by flat index within the shard."""

    __slots__ = (
        "_encoded",
        "_needs",
        "_sources",
        "_table",
        "_texts",
        "blob",
        "crcs",
        "flat",
        "hashes",
        "kinds",
        "lengths",
        "offsets",
    )

    def __init__(
        self,
        flat: np.ndarray,
        hashes: np.ndarray,
        lengths: np.ndarray,
        kinds: np.ndarray,
        offsets: np.ndarray,
        blob: bytes,
        crcs: np.ndarray | None = None,
        sources: tuple[VirtualSource, ...] = (),
        texts: tuple[str, ...] | None = None,
        encoded: bytes | None = None,
        table: memoryview | None = None,
        needs: int = 0,
    ) -> None:
        self.flat = flat  # int64[n], sorted
        self.hashes = hashes  # uint8[n, 32]
        self.lengths = lengths  # uint64[n]
        self.kinds = kinds  # uint8[n]: OBJECT, INLINE, PACKED or VIRTUAL
        # uint64[n]: offset in blob of inline bytes, a pack location or a source location
        self.offsets = offsets
        self.blob = blob
        # what the virtual entries' source numbers index: the sources, or their records as
        # text, each made from the other when first asked for; a decoded shard holds its
        # sources table as stored (``table``, JSON), parsed when first asked for and then
        # checked to have the ``needs`` sources its entries name
        has = bool(sources or texts or table is not None)
        self._sources: tuple[VirtualSource, ...] | None = sources if sources or not has else None
        self._texts = texts if texts else None
        self._table = table
        self._needs = needs
        self._encoded = encoded  # what encode() gives, when decoded from it: kept, not redone
        # int64[n]: each chunk's checksum, or -1 where it has none
        self.crcs = np.full(len(flat), _NO_CRC, np.int64) if crcs is None else crcs

    @classmethod
    def empty(cls) -> Shard:
        return cls(
            np.empty(0, np.int64),
            np.empty((0, 32), np.uint8),
            np.empty(0, np.uint64),
            np.empty(0, np.uint8),
            np.empty(0, np.uint64),
            b"",
            np.empty(0, np.int64),
        )

    def __len__(self) -> int:
        return int(self.flat.shape[0])

    @property
    def sources(self) -> tuple[VirtualSource, ...]:
        """The sources the virtual entries name, by their source number."""
        if self._sources is None:
            try:
                self._sources = tuple(VirtualSource.decode(t) for t in self.source_texts)
            except VirtualSourceError as exc:
                raise CatalogError(f"manifest shard is corrupt: its sources table ({exc})") from exc
        return self._sources

    @property
    def source_texts(self) -> tuple[str, ...]:
        """The records of :attr:`sources` as stored (merging shards compares these)."""
        if self._texts is None:
            # (the table is kept: another thread may be asking at the same moment)
            if self._table is not None:
                self._texts = _parse_sources(self._table, self._needs)
            else:
                self._texts = tuple(s.encode() for s in self._sources or ())
        return self._texts

    @property
    def has_sources(self) -> bool:
        return bool(self._texts or self._sources or self._table is not None)

    def ref_at(self, i: int) -> ChunkRef:
        h = self.hashes[i].tobytes()
        n = int(self.lengths[i])
        kind = self.kinds[i]
        if kind == INLINE:
            off = int(self.offsets[i])
            return ChunkRef(h, n, self.blob[off : off + n])
        c = int(self.crcs[i])
        crc = None if c == _NO_CRC else c
        if kind == PACKED:
            pack, at = _PACKED.unpack_from(self.blob, int(self.offsets[i]))
            return ChunkRef(h, n, pack=pack, offset=at, crc=crc)
        if kind == VIRTUAL:
            at, src = _VIRTUAL.unpack_from(self.blob, int(self.offsets[i]))
            return ChunkRef(h, n, offset=at, source=self.sources[src])
        return ChunkRef(h, n, crc=crc)

    def virtual_entries(self) -> list[tuple[VirtualSource, int, int]]:
        """(source, offset, length) of every virtual chunk."""
        out = []
        for i in np.nonzero(self.kinds == VIRTUAL)[0].tolist():
            at, src = _VIRTUAL.unpack_from(self.blob, int(self.offsets[i]))
            out.append((self.sources[src], at, int(self.lengths[i])))
        return out

    def packed_entries(self) -> list[tuple[bytes, int, int, bytes]]:
        """(pack, offset, length, chunk hash) of every packed chunk."""
        out = []
        for i in np.nonzero(self.kinds == PACKED)[0].tolist():
            pack, at = _PACKED.unpack_from(self.blob, int(self.offsets[i]))
            out.append((pack, at, int(self.lengths[i]), self.hashes[i].tobytes()))
        return out

    def object_id_at(self, i: int) -> bytes | None:
        """The object row ``i`` lives in (``None`` for inline bytes)."""
        kind = self.kinds[i]
        if kind == OBJECT:
            return bytes(self.hashes[i].tobytes())
        if kind == PACKED:
            off = int(self.offsets[i])
            return self.blob[off : off + 32]
        return None

    def get(self, flat: int) -> ChunkRef | None:
        i = int(self.flat.searchsorted(flat))
        if i < len(self) and int(self.flat[i]) == flat:
            return self.ref_at(i)
        return None

    def items(self) -> Iterator[tuple[int, ChunkRef]]:
        for i in range(len(self)):
            yield int(self.flat[i]), self.ref_at(i)

    def apply(self, updates: Mapping[int, ChunkRef | None]) -> Shard:
        """A new shard with ``updates`` applied (``None`` removes an entry)."""
        if not updates:
            return self
        keys = np.fromiter(updates.keys(), dtype=np.int64, count=len(updates))
        keep = ~np.isin(self.flat, keys) if len(self) else np.empty(0, bool)
        new = [(f, r) for f, r in updates.items() if r is not None]
        n_new = len(new)
        flat = np.concatenate([self.flat[keep], np.fromiter((f for f, _ in new), np.int64, n_new)])
        hashes = np.concatenate(
            [
                self.hashes[keep],
                np.frombuffer(b"".join(r.hash for _, r in new), np.uint8).reshape(n_new, 32),
            ]
        )
        lengths = np.concatenate(
            [self.lengths[keep], np.fromiter((r.length for _, r in new), np.uint64, n_new)]
        )
        kinds = np.concatenate(
            [
                self.kinds[keep],
                np.fromiter((_kind(r) for _, r in new), np.uint8, n_new),
            ]
        )
        crcs = np.concatenate([self.crcs[keep], np.fromiter(map(_crc, new), np.int64, n_new)])
        # Rebuild the blob (and the sources table) from the surviving entries so they never
        # hold garbage: their parts, in order, then the new entries' parts.
        kept_blob, kept_at = _gather_parts(
            self.blob, self.kinds[keep], self.offsets[keep], self.lengths[keep]
        )
        pos = len(kept_blob)
        offsets = np.zeros(len(flat), np.uint64)
        offsets[: len(kept_at)] = kept_at
        table: dict[VirtualSource, int] = {}
        for i in np.nonzero(self.kinds[keep] == VIRTUAL)[0].tolist():
            # renumber the sources, in order of first use, so the table holds no garbage
            at, src = _VIRTUAL.unpack_from(kept_blob, int(kept_at[i]))
            _VIRTUAL.pack_into(
                kept_blob, int(kept_at[i]), at, table.setdefault(self.sources[src], len(table))
            )
        parts: list[bytes] = [bytes(kept_blob)]
        base = len(kept_at)
        for j, (_, r) in enumerate(new):
            if r.inline is not None:
                part = r.inline
            elif r.source is not None:
                part = _VIRTUAL.pack(r.offset, table.setdefault(r.source, len(table)))
            elif r.pack is not None:
                part = _PACKED.pack(r.pack, r.offset)
            else:
                continue
            parts.append(part)
            offsets[base + j] = pos
            pos += len(part)
        order = np.argsort(flat, kind="stable")
        return Shard(
            flat[order],
            hashes[order],
            lengths[order],
            kinds[order],
            offsets[order],
            b"".join(parts),
            crcs[order],
            tuple(table),
        )

    def encode(self) -> bytes:
        if self._encoded is not None:
            return self._encoded
        n = len(self)
        # shards without virtual entries keep the ZLS2 form (and so their hashes)
        tail = b""
        magic = _SHARD_MAGIC
        if self.has_sources:
            magic = _SHARD_V3
            table = json.dumps(list(self.source_texts), separators=(",", ":"))
            tail = _SOURCES_LEN.pack(len(table)) + table.encode()
        return b"".join(
            [
                _HEADER.pack(magic, n, len(self.blob)),
                np.ascontiguousarray(self.flat, "<i8").tobytes(),
                np.ascontiguousarray(self.hashes).tobytes(),
                np.ascontiguousarray(self.lengths, "<u8").tobytes(),
                np.ascontiguousarray(self.kinds).tobytes(),
                np.ascontiguousarray(self.offsets, "<u8").tobytes(),
                np.ascontiguousarray(self.crcs, "<i8").tobytes(),
                self.blob,
                tail,
            ]
        )

    @staticmethod
    def count(data: bytes) -> int:
        """How many entries the encoded shard ``data`` holds, read from its header alone."""
        try:
            return int(_HEADER.unpack_from(data, 0)[1])
        except struct.error as exc:
            raise CatalogError("manifest shard is truncated") from exc

    @classmethod
    def decode(cls, data: bytes) -> Shard:
        try:
            magic, n, blob_len = _HEADER.unpack_from(data, 0)
        except struct.error as exc:
            raise CatalogError("manifest shard is truncated") from exc
        width = {_SHARD_MAGIC: 65, _SHARD_V3: 65, _SHARD_V1: 57}.get(magic)
        end = _HEADER.size + n * (width or 0) + blob_len
        table: memoryview | None = None
        if width is not None and magic == _SHARD_V3:
            table = _sources_table(data, end)
            end = len(data)
        if width is None or len(data) != end:
            raise CatalogError("manifest shard is corrupt or of an unknown format")
        o = _HEADER.size
        flat = np.frombuffer(data, "<i8", n, o)
        o += 8 * n
        hashes = np.frombuffer(data, np.uint8, 32 * n, o).reshape(n, 32)
        o += 32 * n
        lengths = np.frombuffer(data, "<u8", n, o)
        o += 8 * n
        kinds = np.frombuffer(data, np.uint8, n, o)
        o += n
        offsets = np.frombuffer(data, "<u8", n, o)
        o += 8 * n
        crcs = None
        if magic != _SHARD_V1:
            crcs = np.frombuffer(data, "<i8", n, o)
            o += 8 * n
        kmax = int(kinds.max()) if n else OBJECT
        if (
            n
            and (
                kmax > (VIRTUAL if table is not None else PACKED)
                # strictly increasing from a first index >= 0: every index is >= 0
                or int(flat[0]) < 0
                or (n > 1 and not (flat[1:] > flat[:-1]).all())
                or (
                    crcs is not None and (int(crcs.min()) < _NO_CRC or int(crcs.max()) > 0xFFFFFFFF)
                )
            )
        ):
            raise CatalogError("manifest shard is corrupt: inconsistent entries")
        blob = bytes(data[o : o + blob_len])
        needs = 0
        if kmax > OBJECT:  # only shards with located entries need their locations checked
            needs = _check_locations(kinds, offsets, lengths, blob)
        # the same bytes encode() would write (but for the older form): kept, not copied
        encoded = data if magic != _SHARD_V1 and isinstance(data, bytes) else None
        return cls(
            flat,
            hashes,
            lengths,
            kinds,
            offsets,
            blob,
            crcs,
            encoded=encoded,
            table=table,
            needs=needs,
        )


def _check_locations(
    kinds: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    blob: bytes,
) -> int:
    """Refuse a shard whose inline, packed or virtual entries point outside its blob
    (``kinds`` already checked to be known ones); how many sources its virtual entries need
    in its table (the highest source number they name, plus one)."""
    inline = kinds == INLINE
    ends = offsets + np.where(inline, lengths, _LOCATION_SIZE[kinds])
    if ((ends > len(blob)) & (kinds != OBJECT)).any():
        raise CatalogError("manifest shard is corrupt: inconsistent entries")
    at = offsets[kinds == VIRTUAL].astype(np.int64)
    if not len(at):
        return 0
    # every virtual entry's source number (its last 4 bytes), at once
    index = at[:, None] + np.arange(_VIRTUAL.size - 4, _VIRTUAL.size, dtype=np.int64)
    return int(np.frombuffer(blob, np.uint8)[index].reshape(-1).view("<u4").max()) + 1


def _gather_parts(
    blob: bytes, kinds: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
) -> tuple[bytearray, np.ndarray]:
    """The blob parts of entries (inline bytes, pack or source locations), concatenated in
    entry order, and each entry's offset in that (0 for an object of its own, which has no
    part). One gather, however many entries: a commit rewrites every shard it touches."""
    sizes = np.where(kinds == INLINE, lengths, _LOCATION_SIZE[kinds]).astype(np.int64)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    at = np.where(kinds == OBJECT, 0, starts).astype(np.uint64)
    total = int(ends[-1]) if len(ends) else 0
    if not total:
        return bytearray(), at
    source = offsets.astype(np.int64) - starts
    index = np.repeat(source, sizes) + np.arange(total, dtype=np.int64)
    return bytearray(np.frombuffer(blob, np.uint8)[index].tobytes()), at


def _sources_table(data: bytes, at: int) -> memoryview:
    """The sources table of a ZLS3 shard, which starts at ``at``, as stored (JSON): parsed
    when its sources are first needed (:func:`_parse_sources`)."""
    try:
        (size,) = _SOURCES_LEN.unpack_from(data, at)
    except struct.error as exc:
        raise CatalogError(f"manifest shard is corrupt: its sources table ({exc})") from exc
    text = memoryview(data)[at + _SOURCES_LEN.size : at + _SOURCES_LEN.size + size]
    # the shortest table names one source: [""]
    if len(text) != size or at + _SOURCES_LEN.size + size != len(data) or size < 4:
        raise CatalogError("manifest shard is corrupt: its sources table (length)")
    return text


def _parse_sources(text: memoryview, needs: int) -> tuple[str, ...]:
    """The records of a sources table (:func:`_sources_table`), of which the shard's
    virtual entries name the first ``needs``."""
    try:
        items = json.loads(bytes(text))
        if not isinstance(items, list) or not items:
            raise ValueError("sources table is empty")
        if not all(isinstance(x, str) for x in items):
            raise ValueError("a source record is not text")
    except (ValueError, TypeError) as exc:
        raise CatalogError(f"manifest shard is corrupt: its sources table ({exc})") from exc
    if len(items) < needs:
        raise CatalogError("manifest shard is corrupt: a virtual entry has no source")
    return tuple(items)


@dataclass(frozen=True, slots=True)
class ManifestIndex:
    """The shards of one array's manifest: shard position -> shard hash."""

    shard_shape: tuple[int, ...]
    shards: Mapping[ChunkCoords, bytes]

    def encode(self) -> bytes:
        items = sorted((list(k), v.hex()) for k, v in self.shards.items())
        return json.dumps(
            {"shard_shape": list(self.shard_shape), "shards": items}, separators=(",", ":")
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> ManifestIndex:
        try:
            doc = json.loads(data)
            return cls(
                tuple(int(x) for x in doc["shard_shape"]),
                {tuple(int(x) for x in k): bytes.fromhex(v) for k, v in doc["shards"]},
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CatalogError(f"manifest index is corrupt: {exc}") from exc
