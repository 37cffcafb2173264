"""Reading the parts of a ``zarr.json`` document that the engine needs.

The engine stores metadata documents byte for byte; it parses them only to know a node's type,
how its chunk keys are spelled, the size of its chunk grid, and which fields changed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zarrlake._loading import load_module
from zarrlake.errors import InvalidMetadataError
from zarrlake.types import ChunkCoords

__all__ = [
    "ArrayLayout",
    "ChunkKeyEncoding",
    "NodeMeta",
    "attribute_changes",
    "chunk_owner",
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
class ArrayLayout:
    """How an array is cut into chunks, as its metadata says: what a chunk map needs to span
    the whole array and to name its axes (``dims`` from ``dimension_names``; ``None`` where
    a dimension has no name)."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    dims: tuple[str | None, ...]

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunk_shape, strict=True))


@dataclass(frozen=True, slots=True)
class NodeMeta:
    """What the engine knows about one node from its metadata document."""

    node_type: str  # "group", "array", or "unknown" for opaque documents (non-strict stores)
    ndim: int = 0
    grid_shape: tuple[int, ...] | None = None
    encoding: ChunkKeyEncoding = ChunkKeyEncoding()
    structure: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)
    chunk_nbytes: int | None = None  # exact encoded size of a chunk, when it is fixed

    def in_grid(self, coords: ChunkCoords) -> bool:
        """Whether chunk ``coords`` lie inside the array's chunk grid (when it is known)."""
        if self.grid_shape is None:
            return all(c <= _MAX_SIZE for c in coords)
        return all(c < g for c, g in zip(coords, self.grid_shape, strict=True))

    @property
    def is_array(self) -> bool:
        return self.node_type == "array"

    @property
    def layout(self) -> ArrayLayout | None:
        """The array's :class:`ArrayLayout` (``None`` for groups and irregular grids)."""
        if not self.is_array or self.grid_shape is None:
            return None
        shape = tuple(int(s) for s in self.structure.get("shape", ()))
        grid = self.structure.get("chunk_grid", {}).get("configuration", {})
        chunks = tuple(int(c) for c in grid.get("chunk_shape", ()))
        names = self.structure.get("dimension_names") or [None] * len(shape)
        if len(chunks) != len(shape) or len(names) != len(shape):
            return None
        dims = tuple(n if isinstance(n, str) and n else None for n in names)
        return ArrayLayout(shape, chunks, dims)


_UNKNOWN = NodeMeta(node_type="unknown")


def parse_node_meta(raw: bytes, *, strict: bool = True) -> NodeMeta:
    """Parse a ``zarr.json`` document.

    With ``strict`` a document that is not Zarr v3 group or array metadata raises
    :class:`InvalidMetadataError`; without it, it is kept as an opaque ``unknown`` node.
    """
    try:
        # Zarr v3 metadata is UTF-8 JSON; json.loads would also take UTF-16 or UTF-32 bytes
        # and a byte order mark, which other Zarr readers need not accept
        doc = json.loads(_utf8(raw) if strict else raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if strict:
            if isinstance(exc, RecursionError):
                what = "nested too deeply"
            elif isinstance(exc, UnicodeDecodeError):
                what = "not UTF-8 (Zarr v3 metadata is UTF-8 JSON; write it as UTF-8)"
            else:
                what = "not valid JSON"
            raise InvalidMetadataError(f"zarr.json is {what}: {exc}") from None
        return _UNKNOWN
    if not isinstance(doc, dict):
        if strict:
            raise InvalidMetadataError("zarr.json must hold a JSON object")
        return _UNKNOWN
    try:
        meta = _parse_doc(doc)
        if strict and meta.is_array:
            _check_with_zarr(doc)
        return meta
    except InvalidMetadataError:
        if strict:
            raise
        return _UNKNOWN


def _utf8(raw: bytes) -> str:
    text = raw.decode("utf-8")
    if text.startswith("\ufeff"):
        raise ValueError("it starts with a byte order mark; write UTF-8 without one")
    if "\x00" in text:  # never in JSON text: UTF-16 or UTF-32 without a byte order mark
        raise ValueError("it holds NUL bytes (UTF-16 or UTF-32?); write it as UTF-8")
    return text


def _check_with_zarr(doc: dict[str, Any]) -> None:
    """Let zarr itself judge the data type, codecs and fill value: a document it cannot open
    must not be committed. The first call in a process may load zarr."""
    v3 = load_module("zarr.core.metadata.v3")
    try:
        v3.ArrayV3Metadata.from_dict(dict(doc))
    except Exception as exc:  # zarr raises ValueError, TypeError, KeyError and its own
        raise InvalidMetadataError(f"zarr cannot read this array metadata: {exc}") from None


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
    if not isinstance(shape, list) or not all(_is_size(s, 0) for s in shape):
        raise InvalidMetadataError(
            f"array shape must be a list of integers from 0 to 2**63-1, got {shape!r}"
        )
    ndim = len(shape)
    grid_shape: tuple[int, ...] | None = None
    grid = doc.get("chunk_grid")
    if not isinstance(grid, dict) or "name" not in grid:
        raise InvalidMetadataError("array metadata needs a chunk_grid with a name")
    chunks = None
    if grid["name"] == "regular":
        chunks = _config(grid, "chunk_grid").get("chunk_shape")
        if (
            not isinstance(chunks, list)
            or len(chunks) != ndim
            or not all(_is_size(c, 1) for c in chunks)
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
    sep = _config(cke, "chunk_key_encoding").get("separator", default_sep)
    if name not in ("default", "v2") or sep not in ("/", "."):
        raise InvalidMetadataError(f"unsupported chunk_key_encoding {cke!r}")
    return NodeMeta(
        "array",
        ndim=ndim,
        grid_shape=grid_shape,
        encoding=ChunkKeyEncoding(name, sep),
        structure=structure,
        attributes=attributes,
        chunk_nbytes=_plain_chunk_nbytes(doc, chunks),
    )


_MAX_SIZE = 2**63 - 1
# bytes per element of the fixed-size data types, for arrays stored without compression
_ITEMSIZE = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "int32": 4,
    "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8, "complex64": 8,
    "complex128": 16,
}  # fmt: skip


def _is_size(v: object, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= _MAX_SIZE


def _config(part: dict[str, Any], what: str) -> dict[str, Any]:
    conf = part.get("configuration")
    if conf is None:
        return {}
    if not isinstance(conf, dict):
        raise InvalidMetadataError(f"{what} configuration must be a JSON object, got {conf!r}")
    return conf


def _plain_chunk_nbytes(doc: dict[str, Any], chunks: list[int] | None) -> int | None:
    """The exact size of an encoded chunk when the only codec is ``bytes`` (no compression,
    no sharding): a chunk of any other size is corrupt."""
    codecs = doc.get("codecs")
    dtype = doc.get("data_type")
    itemsize = _ITEMSIZE.get(dtype) if isinstance(dtype, str) else None
    if (
        chunks is None
        or itemsize is None
        or not isinstance(codecs, list)
        or len(codecs) != 1
        or not isinstance(codecs[0], dict)
        or codecs[0].get("name") != "bytes"
    ):
        return None
    return math.prod(chunks) * itemsize


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


def chunk_owner(
    key: str, meta_of: Callable[[str], NodeMeta | None]
) -> tuple[str, ChunkCoords] | None:
    """The array whose chunk ``key`` is and the chunk's coordinates, or ``None`` for a key of
    no array: the deepest array above ``key`` whose chunk key encoding spells the rest.

    The one rule for what a key means: the store's reads and listings and the commit's claim
    of keys written before their array all follow it. ``meta_of`` gives a node's metadata
    (``None`` where there is no node).
    """
    cut = len(key)
    while True:
        cut = key.rfind("/", 0, cut)
        path, rel = (key[:cut], key[cut + 1 :]) if cut >= 0 else ("", key)
        nm = meta_of(path)
        if nm is not None and nm.is_array:
            coords = parse_chunk_key(rel, nm.encoding, nm.ndim)
            if coords is not None:
                return path, coords
        if cut < 0:
            return None


def format_chunk_key(coords: ChunkCoords, enc: ChunkKeyEncoding) -> str:
    """Inverse of :func:`parse_chunk_key`."""
    if enc.name == "default":
        return "c" if not coords else "c" + enc.separator + enc.separator.join(map(str, coords))
    return "0" if not coords else enc.separator.join(map(str, coords))


def attribute_changes(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """Attribute keys whose value differs between two attribute dicts (added, removed, changed)."""
    keys = set(before) | set(after)
    return {k for k in keys if k not in before or k not in after or before[k] != after[k]}
