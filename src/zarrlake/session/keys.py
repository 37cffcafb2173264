"""What a store key means in a session's view: a node's metadata, a chunk, or a raw key."""

from __future__ import annotations

from dataclasses import dataclass

from zarrlake.catalog import StagedRow
from zarrlake.model import ChunkRef
from zarrlake.types import ChunkCoords

__all__ = [
    "Target",
    "coords_key",
    "could_be_chunk_key",
    "key_coords",
    "meta_path",
    "row_ref",
    "under",
]


@dataclass(frozen=True, slots=True)
class Target:
    """What a store key means in a session's view."""

    kind: str  # "meta" | "chunk" | "raw"
    path: str  # node path ("" for raw keys)
    key: str  # "" for meta, "i,j" for chunks, the store key for raw
    store_key: str = ""  # the key as zarr spelled it


def meta_path(key: str) -> str | None:
    """The node path whose ``zarr.json`` ``key`` is, else ``None``."""
    if key == "zarr.json":
        return ""
    if key.endswith("/zarr.json"):
        return key[: -len("/zarr.json")]
    return None


def under(path: str, prefix: str) -> bool:
    """Whether node ``path`` is ``prefix`` or below it (``prefix`` without trailing slash)."""
    return prefix == "" or path == prefix or path.startswith(prefix + "/")


def could_be_chunk_key(key: str) -> bool:
    """Whether some array's chunk key encoding could spell ``key`` (``c``, ``c/1``, ``c.1``,
    ``1``, ``1.2``): anything else (``.zattrs``, ``foo/bar.txt``) is never a chunk."""
    last = key.rsplit("/", 1)[-1]
    if last == "c" or last.startswith("c."):
        return True
    return all(p.isdigit() for p in last.split("."))


def coords_key(coords: ChunkCoords) -> str:
    return ",".join(map(str, coords))


def key_coords(key: str) -> ChunkCoords:
    return tuple(int(x) for x in key.split(",")) if key else ()


def row_ref(row: StagedRow) -> ChunkRef | None:
    if row.hash is None:
        return None
    return ChunkRef(row.hash, row.length, row.inline, row.pack, row.offset, row.crc)
