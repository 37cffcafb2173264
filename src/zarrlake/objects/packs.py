"""Packs: many small chunks in one object.

A write of thousands of small chunks would otherwise cost thousands of files or PUTs. Chunks of
at most :data:`PACK_CHUNK_LIMIT` bytes are appended to the current pack of the process instead,
and a chunk ref names them by (pack, offset, length) while keeping the chunk's own content
hash, which verifies every read. A pack is written as one object once it holds
:data:`PACK_TARGET` bytes, or when the writes it holds must become durable (before their staged
rows are recorded), whichever comes first.

A pack is named by 32 random bytes when it is opened, so a chunk's location is known the moment
it is appended and its staged row is complete; until the pack is written, reads of it are
served from memory. Its object is laid out as::

    chunk bytes ... | index: n x (hash, offset u64, length u64) | n u32 | b"ZLP1"

so that ``fsck`` verifies a pack without the manifests: every indexed chunk must match its
content hash (the repo's, :mod:`zarrlake.model.hashing`).
"""

from __future__ import annotations

import secrets
import struct
import threading
from dataclasses import dataclass, field

import zarrlake.process as process
from zarrlake.errors import ChunkCorruptionError

__all__ = [
    "PACK_CHUNK_LIMIT",
    "PACK_TARGET",
    "OpenPack",
    "PackEntry",
    "PackWriter",
    "parse_pack",
]

PACK_CHUNK_LIMIT = 256 * 1024
"""Chunks of at most this many bytes (and more than the inline limit) are packed."""

PACK_TARGET = 2 * 1024 * 1024
"""A pack is written once it holds this many bytes."""

_MAGIC = b"ZLP1"
_ENTRY = struct.Struct("<32sQQ")
_TAIL = struct.Struct("<I4s")


@dataclass(frozen=True, slots=True)
class PackEntry:
    hash: bytes
    offset: int
    length: int


@dataclass(eq=False)
class OpenPack:
    """A pack being filled or written: readable from memory until its object exists."""

    id: bytes
    parts: list[bytes] = field(default_factory=list)
    size: int = 0
    entries: dict[bytes, PackEntry] = field(default_factory=dict)
    error: BaseException | None = None

    def add(self, h: bytes, data: bytes) -> int:
        found = self.entries.get(h)
        if found is not None:  # the same bytes twice in one pack are stored once
            return found.offset
        offset = self.size
        self.parts.append(data)
        self.size += len(data)
        self.entries[h] = PackEntry(h, offset, len(data))
        return offset

    def encode(self) -> bytes:
        index = b"".join(_ENTRY.pack(e.hash, e.offset, e.length) for e in self.entries.values())
        return b"".join([*self.parts, index, _TAIL.pack(len(self.entries), _MAGIC)])

    def read(self, offset: int, length: int) -> bytes:
        # chunks are appended whole, so a range of one chunk lies inside one part
        pos = 0
        for part in self.parts:
            if pos <= offset < pos + len(part):
                return part[offset - pos : offset - pos + length]
            pos += len(part)
        raise ChunkCorruptionError(f"pack {self.id.hex()} holds nothing at offset {offset}")


def parse_pack(pack_id: bytes, data: bytes) -> list[PackEntry]:
    """The index of a pack object, checked for consistency (not the chunks' hashes)."""
    bad = ChunkCorruptionError(
        f"pack {pack_id.hex()} is corrupt: its index is damaged. Run repo.fsck(verify=True)"
    )
    if len(data) < _TAIL.size:
        raise bad
    n, magic = _TAIL.unpack_from(data, len(data) - _TAIL.size)
    body = len(data) - _TAIL.size - n * _ENTRY.size
    if magic != _MAGIC or body < 0:
        raise bad
    entries = [PackEntry(*_ENTRY.unpack_from(data, body + i * _ENTRY.size)) for i in range(n)]
    if any(e.offset + e.length > body for e in entries):
        raise bad
    return entries


class PackWriter:
    """The packs one process is filling for one object store.

    ``add`` appends a chunk to the open pack and returns its location; when that fills the
    pack, the pack is handed back to the caller to write (so the write runs in the caller's
    thread or on its event loop). ``seal`` hands over the open pack too. ``written`` records the
    outcome; a pack whose write failed stays readable and is handed over again by the next
    ``seal``, so ``sync`` retries it rather than losing the chunks in it.
    """

    def __init__(self, target: int = PACK_TARGET) -> None:
        self.target = target
        self.cond = threading.Condition()
        self._forget()

    def _forget(self) -> None:
        self.epoch = process.epoch()
        self.current: OpenPack | None = None
        self.writing: dict[bytes, OpenPack] = {}  # handed over, not yet written
        self.failed: dict[bytes, OpenPack] = {}

    def _own(self) -> None:
        """Under ``cond``: a child process made by fork() starts with no packs of its own (the
        parent writes the ones it was filling; appending to one of them here would give two
        different objects one name)."""
        if self.epoch != process.epoch():
            self._forget()

    def add(self, h: bytes, data: bytes) -> tuple[bytes, int, OpenPack | None]:
        """Append a chunk: (pack id, offset, the pack to write now or ``None``)."""
        with self.cond:
            self._own()
            pack = self.current
            if pack is None:
                pack = self.current = OpenPack(secrets.token_bytes(32))
            offset = pack.add(h, data)
            if pack.size < self.target:
                return pack.id, offset, None
            self.current = None
            self.writing[pack.id] = pack
            return pack.id, offset, pack

    def seal(self, *, keep_open: bool = False) -> list[OpenPack]:
        """Hand over the open pack (unless ``keep_open``) and every pack whose write failed,
        to be written now."""
        with self.cond:
            self._own()
            out = list(self.failed.values())
            self.failed.clear()
            if self.current is not None and not keep_open:
                out.append(self.current)
                self.current = None
            for pack in out:
                self.writing[pack.id] = pack
            return out

    def written(self, pack: OpenPack, error: BaseException | None = None) -> None:
        with self.cond:
            self.writing.pop(pack.id, None)
            if error is not None:
                pack.error = error
                self.failed[pack.id] = pack
            self.cond.notify_all()

    def wait(self, ids: set[bytes]) -> BaseException | None:
        """Wait until none of ``ids`` is still being written (by another thread); the first
        error of a failed write among them, if any."""
        with self.cond:
            while ids & self.writing.keys():
                self.cond.wait(timeout=1.0)
            for i in ids:
                if i in self.failed:
                    return self.failed[i].error
            return None

    def open_id(self) -> bytes | None:
        with self.cond:
            self._own()
            return None if self.current is None else self.current.id

    def pending_ids(self) -> set[bytes]:
        with self.cond:
            self._own()
            ids = set(self.writing) | set(self.failed)
            if self.current is not None:
                ids.add(self.current.id)
            return ids

    def read(self, pack_id: bytes, offset: int, length: int) -> bytes | None:
        """A chunk of a pack not yet written, from memory; ``None`` if the pack is written."""
        with self.cond:
            pack = self.current if self.current is not None and self.current.id == pack_id else None
            pack = pack or self.writing.get(pack_id) or self.failed.get(pack_id)
            if pack is None:
                return None
            return pack.read(offset, length)
