"""Reading the parts of a ``zarr.json`` document that the engine needs.

The engine stores metadata documents byte for byte; it parses them only to know a node's type,
how its chunk keys are spelled, the size of its chunk grid, and which fields changed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from zarrlake.errors import InvalidMetadataError
from zarrlake.types import ChunkCoords

__all__ = [
    "ChunkKeyEncoding",
    "NodeMeta",
    "attribute_changes",
    "format_chunk_key",
    "parse_chunk_key",
    "parse_node_meta",
]

METADATA_KEY = "zarr.json"


@dataclass(frozen=True, slots=True)
class ChunkKeyEncoding:
    """How an array spells its chunk keys: ``default`` (``c/1/2``) or ``v2`` (``1.2``)."""

    name: str = "default"
    separator: str = "/"


@dataclass(frozen=True, slots=True)
class NodeMeta:
    """What the engine knows about one node from its metadata document."""

    node_type: str  # "group", "array", or "unknown" for opaque documents (non-strict stores)
    ndim: int = 0
    grid_shape: tuple[int, ...] | None = None
    encoding: ChunkKeyEncoding = ChunkKeyEncoding()
    structure: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def is_array(self) -> bool:
        return self.node_type == "array"


_UNKNOWN = NodeMeta(node_type="unknown")


def parse_node_meta(raw: bytes, *, strict: bool = True) -> NodeMeta:
    """Parse a ``zarr.json`` document.

    With ``strict`` a document that is not Zarr v3 group or array metadata raises
    :class:`InvalidMetadataError`; without it, it is kept as an opaque ``unknown`` node.
    """
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        if strict:
            raise InvalidMetadataError(f"zarr.json is not valid JSON: {exc}") from exc
        return _UNKNOWN
    if not isinstance(doc, dict):
        if strict:
            raise InvalidMetadataError("zarr.json must hold a JSON object")
        return _UNKNOWN
    try:
        return _parse_doc(doc)
    except InvalidMetadataError:
        if strict:
            raise
        return _UNKNOWN


def _parse_doc(doc: dict[str, Any]) -> NodeMeta:
    if doc.get("zarr_format") != 3:
        raise InvalidMetadataError(
            f"zarr.json must declare zarr_format 3, got {doc.get('zarr_format')!r}"
        )
    node_type = doc.get("node_type")
    attributes = doc.get("attributes", {})
    if not isinstance(attributes, dict):
        raise InvalidMetadataError("zarr.json 'attributes' must be a JSON object")
    structure = {k: v for k, v in doc.items() if k != "attributes"}
    if node_type == "group":
        return NodeMeta("group", structure=structure, attributes=attributes)
    if node_type != "array":
        raise InvalidMetadataError(
            f"zarr.json node_type must be 'group' or 'array', got {node_type!r}"
        )
    shape = doc.get("shape")
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise InvalidMetadataError(
            f"array shape must be a list of non-negative integers, got {shape!r}"
        )
    ndim = len(shape)
    grid_shape: tuple[int, ...] | None = None
    grid = doc.get("chunk_grid")
    if not isinstance(grid, dict) or "name" not in grid:
        raise InvalidMetadataError("array metadata needs a chunk_grid with a name")
    if grid["name"] == "regular":
        chunks = (grid.get("configuration") or {}).get("chunk_shape")
        if (
            not isinstance(chunks, list)
            or len(chunks) != ndim
            or not all(isinstance(c, int) and c > 0 for c in chunks)
        ):
            raise InvalidMetadataError(
                f"regular chunk_grid needs chunk_shape of {ndim} positive integers, got {chunks!r}"
            )
        grid_shape = tuple(math.ceil(s / c) for s, c in zip(shape, chunks, strict=True))
    cke = doc.get("chunk_key_encoding", {"name": "default"})
    if not isinstance(cke, dict):
        raise InvalidMetadataError("chunk_key_encoding must be a JSON object")
    name = cke.get("name", "default")
    default_sep = "/" if name == "default" else "."
    sep = (cke.get("configuration") or {}).get("separator", default_sep)
    if name not in ("default", "v2") or sep not in ("/", "."):
        raise InvalidMetadataError(f"unsupported chunk_key_encoding {cke!r}")
    return NodeMeta(
        "array",
        ndim=ndim,
        grid_shape=grid_shape,
        encoding=ChunkKeyEncoding(name, sep),
        structure=structure,
        attributes=attributes,
    )


def parse_chunk_key(rel: str, enc: ChunkKeyEncoding, ndim: int) -> ChunkCoords | None:
    """Chunk coordinates for a key relative to its array, or ``None`` if it is not one."""
    if enc.name == "default":
        if ndim == 0:
            return () if rel == "c" else None
        if not rel.startswith("c" + enc.separator):
            return None
        parts = rel[2:].split(enc.separator)
    else:
        if ndim == 0:
            return () if rel == "0" else None
        parts = rel.split(enc.separator)
    if len(parts) != ndim:
        return None
    coords: list[int] = []
    for p in parts:
        # int() would accept "+1", " 1", "1_0"; chunk keys are plain decimal digits
        if not p.isdigit() or not p.isascii() or (len(p) > 1 and p[0] == "0"):
            return None
        coords.append(int(p))
    return tuple(coords)


def format_chunk_key(coords: ChunkCoords, enc: ChunkKeyEncoding) -> str:
    """Inverse of :func:`parse_chunk_key`."""
    if enc.name == "default":
        return "c" if not coords else "c" + enc.separator + enc.separator.join(map(str, coords))
    return "0" if not coords else enc.separator.join(map(str, coords))


def attribute_changes(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """Attribute keys whose value differs between two attribute dicts (added, removed, changed)."""
    keys = set(before) | set(after)
    return {k for k in keys if k not in before or k not in after or before[k] != after[k]}
