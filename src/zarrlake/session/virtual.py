"""Staging virtual chunk references: each source checked (allowed prefix, exists, readable)
and its version recorded once, each reference checked against its array's grid and its
source's size, before anything is staged."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence

from zarrlake.errors import InvalidInputError, InvalidKeyError
from zarrlake.model import ChunkRef, NodeMeta
from zarrlake.model.records import StagedEntry
from zarrlake.model.virtual import VirtualSource, virtual_hasher
from zarrlake.objects.sources import SourceReader
from zarrlake.types import ChunkCoords

__all__ = ["VirtualRef", "plan_virtual"]

VirtualRef = tuple[Sequence[int], str, int, int]
"""(chunk coordinates, source URL, offset, length) of one virtual chunk."""


def plan_virtual(
    sources: SourceReader,
    path: str,
    nm: NodeMeta | None,
    refs: Iterable[VirtualRef],
    seen: Mapping[str, VirtualSource] | None = None,
) -> list[StagedEntry]:
    """The staged rows of ``refs`` to chunks of the array at ``path`` (``nm``: its metadata
    in the session's view); nothing is staged if any reference is refused. ``seen``: see
    :meth:`SourceReader.stat_many`."""
    if nm is None or not nm.is_array:
        raise InvalidInputError(
            f"there is no array at {path or '/'!r} to hold virtual references; create it "
            "(its zarr.json) first"
        )
    items = []
    ndim, grid = nm.ndim, nm.grid_shape
    for item in refs:
        try:
            coords, url, offset, length = item
            key: ChunkCoords = tuple(map(int, coords))
            items.append((key, url, int(offset), int(length)))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"a virtual reference is (coords, url, offset, length); got {item!r}"
            ) from exc
        if (
            len(key) != ndim
            or not (all(map(operator.lt, key, grid)) if grid is not None else nm.in_grid(key))
            or (key and min(key) < 0)
        ):
            raise InvalidKeyError(
                f"virtual reference to chunk {key} is outside the chunk grid {nm.grid_shape} "
                f"of array {path or '/'!r}"
            )
    # each distinct URL is located (allowed prefix), looked up and hashed once
    found = sources.stat_many({url for _, url, _, _ in items}, seen)
    hashers = {url: virtual_hasher(src) for url, src in found.items()}
    rows = []
    for key, url, offset, length in items:
        src = found[url]
        if offset < 0 or length < 0 or offset + length > src.size:
            sources.check_span(src, offset, length)  # raises, saying why
        if nm.chunk_nbytes is not None and length != nm.chunk_nbytes:
            raise InvalidInputError(
                f"virtual reference to chunk {key} of {path or '/'!r} is {length} bytes; the "
                f"array stores uncompressed chunks of exactly {nm.chunk_nbytes} bytes"
            )
        ref = ChunkRef(hashers[url](offset, length), length, offset=offset, source=src)
        rows.append(StagedEntry(path, "chunk", key, "", ref))
    return rows
