"""What a store key means in a session's view: a node's metadata, a chunk, or a raw key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zarrlake.types import ChunkCoords

__all__ = ["Target", "could_be_chunk_key", "meta_path", "under"]


@dataclass(frozen=True, slots=True)
class Target:
    """What a store key means in a session's view."""

    kind: Literal["meta", "chunk", "raw"]
    path: str  # node path ("" for raw keys)
    coords: ChunkCoords = ()  # a chunk's coordinates
    key: str = ""  # a raw key
    store_key: str = ""  # the key as zarr spelled it

    @property
    def slot(self) -> tuple[str, str, ChunkCoords, str]:
        """The staged entry this key is (see :attr:`StagedEntry.slot`)."""
        return (self.path, self.kind, self.coords, self.key)


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
