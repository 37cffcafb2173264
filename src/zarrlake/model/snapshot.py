"""Snapshot roots: the nodes of a hierarchy at one commit.

A root maps node paths to :class:`NodeEntry` (type, metadata document hash, manifest index
hash) and holds the refs of keys that belong to no array (``raw`` keys). Roots are immutable
and content-addressed; two commits that did not change anything share one root.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from zarrlake.errors import CatalogError
from zarrlake.model.manifest import ChunkRef

__all__ = ["NodeEntry", "Root", "decode_ref", "encode_ref"]


@dataclass(frozen=True, slots=True)
class NodeEntry:
    """One node of a snapshot."""

    node_type: str  # "group" | "array" | "unknown"
    meta: bytes  # hash of the zarr.json document
    manifest: bytes | None = None  # hash of the ManifestIndex (arrays with chunks)


def encode_ref(ref: ChunkRef) -> list[object]:
    item: list[object] = [
        ref.hash.hex(),
        ref.length,
        None if ref.inline is None else base64.b64encode(ref.inline).decode(),
    ]
    if ref.pack is not None or ref.crc is not None:
        item += [None if ref.pack is None else ref.pack.hex(), ref.offset]
    if ref.crc is not None:
        item.append(ref.crc)
    return item


def decode_ref(item: list[object]) -> ChunkRef:
    h, n, inline, *rest = item
    pack, offset, crc = (rest + [None, 0, None][len(rest) :])[:3]  # packed and crc optional
    return ChunkRef(
        bytes.fromhex(str(h)),
        int(n),  # type: ignore[call-overload]
        None if inline is None else base64.b64decode(str(inline)),
        None if pack is None else bytes.fromhex(str(pack)),
        int(offset),  # type: ignore[call-overload]
        None if crc is None else int(crc),  # type: ignore[call-overload]
    )


@dataclass(frozen=True, slots=True)
class Root:
    """The whole hierarchy at one commit."""

    nodes: Mapping[str, NodeEntry] = field(default_factory=dict)
    raw: Mapping[str, ChunkRef] = field(default_factory=dict)

    def encode(self) -> bytes:
        nodes = {
            p: [n.node_type, n.meta.hex(), None if n.manifest is None else n.manifest.hex()]
            for p, n in sorted(self.nodes.items())
        }
        raw = {k: encode_ref(r) for k, r in sorted(self.raw.items())}
        return json.dumps({"v": 1, "nodes": nodes, "raw": raw}, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> Root:
        try:
            doc = json.loads(data)
            if doc.get("v") != 1:
                raise CatalogError(f"snapshot root of unknown version {doc.get('v')!r}")
            nodes = {
                p: NodeEntry(t, bytes.fromhex(m), None if i is None else bytes.fromhex(i))
                for p, (t, m, i) in doc["nodes"].items()
            }
            raw = {k: decode_ref(v) for k, v in doc["raw"].items()}
        except (ValueError, KeyError, TypeError) as exc:
            raise CatalogError(f"snapshot root is corrupt: {exc}") from exc
        return cls(nodes, raw)
