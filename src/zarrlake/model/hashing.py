"""The content address of a repo's chunk objects: which hash function names them.

A repo records its function in the catalog when it is created (``zl_repos.content_hash``,
schema 9): BLAKE3 for a new repo unless asked otherwise, SHA-256 for a repo made before
schema 9 (the upgrade records it, so its objects keep their names and dedup). Everything
that names or verifies a chunk's bytes by their hash asks the repo's :class:`ChunkHasher`:
a write, fsck, repack, a copy into the repo. Catalog nodes (roots, manifest shards,
metadata documents, change sets) and virtual chunks' identities are not chunk objects: they
are addressed by :func:`~zarrlake.model.manifest.content_hash` (SHA-256) in every repo.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import blake3

from zarrlake.errors import InvalidInputError

__all__ = [
    "CONTENT_HASHES",
    "DEFAULT_CONTENT_HASH",
    "SHA256",
    "SHA256_HASHER",
    "ChunkHasher",
    "chunk_hasher",
]

Buffer = bytes | bytearray | memoryview


def _sha256(data: Buffer) -> bytes:
    return hashlib.sha256(data).digest()


def _blake3(data: Buffer) -> bytes:
    # one thread per chunk: zarr already writes several chunks at once, and both functions
    # let other threads run while they hash a large buffer
    if isinstance(data, memoryview) and data.format != "B":
        data = data.cast("B")  # blake3 takes byte buffers only (hashlib takes any)
    return blake3.blake3(data).digest()


_FUNCTIONS: dict[str, Callable[[Buffer], bytes]] = {"blake3": _blake3, "sha256": _sha256}

CONTENT_HASHES = tuple(_FUNCTIONS)
"""The names a repo's content hash may have."""

DEFAULT_CONTENT_HASH = "blake3"
"""The content hash of a new repo."""

SHA256 = "sha256"
"""The content hash of every repo made before schema 9."""


@dataclass(frozen=True, slots=True)
class ChunkHasher:
    """A repo's content hash: ``hasher(data)`` is the 32-byte address of a chunk's bytes."""

    name: str

    def __call__(self, data: Buffer) -> bytes:
        return _FUNCTIONS[self.name](data)

    def matches(self, data: Buffer, h: bytes) -> bool:
        """Whether ``data`` is the chunk whose address is ``h``."""
        return self(data) == h


SHA256_HASHER = ChunkHasher(SHA256)


def chunk_hasher(name: str) -> ChunkHasher:
    """The content hash called ``name``; :class:`InvalidInputError` for an unknown one."""
    if name not in _FUNCTIONS:
        raise InvalidInputError(
            f"unknown content hash {name!r}; choose one of {', '.join(CONTENT_HASHES)}"
        )
    return ChunkHasher(name)
