"""Zarr v2 metadata (``.zgroup``, ``.zarray``, ``.zattrs``) converted to the Zarr v3
``zarr.json`` a lake holds, with the chunks left as they are: the converted array keeps v2's
chunk key encoding (``0.1`` or ``0/1``), its order (``F`` becomes a ``transpose`` codec), its
byte order (the ``bytes`` codec) and its compressor, so every existing chunk object is a valid
chunk of the v3 array, referenced or copied byte for byte. xarray's ``_ARRAY_DIMENSIONS``
attribute becomes the v3 ``dimension_names``; v2's ``null`` fill value (none: zarr reads a
missing chunk as zeros) becomes the dtype's zero.

Refused with :class:`InvalidMetadataError`: object dtypes (``|O``: their bytes are whatever
object codec wrote them) and compressors or filters with no Zarr v3 counterpart."""

from __future__ import annotations

import json
from typing import Any

from zarrlake.errors import InvalidMetadataError

__all__ = ["V2_DOCS", "convert_v2_array", "convert_v2_group"]

V2_DOCS = (".zarray", ".zgroup", ".zattrs", ".zmetadata")
"""The metadata files of a Zarr v2 store (never chunks)."""


def _dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=2, allow_nan=True).encode()


def convert_v2_group(attrs: dict[str, Any]) -> bytes:
    """The ``zarr.json`` of a v2 group with attributes ``attrs``."""
    return _dumps({"zarr_format": 3, "node_type": "group", "attributes": attrs})


def _object_dtype(dtype: Any) -> bool:
    if isinstance(dtype, str):
        return dtype.lstrip("<>|=").startswith("O")
    if isinstance(dtype, list):  # a structured dtype: [[name, dtype(, shape)], ...]
        return any(isinstance(f, list) and len(f) > 1 and _object_dtype(f[1]) for f in dtype)
    return False


def convert_v2_array(path: str, zarray: dict[str, Any], attrs: dict[str, Any]) -> bytes:
    """The ``zarr.json`` of the v2 array at ``path`` (its ``.zarray`` and ``.zattrs``)."""
    where = path or "/"
    if _object_dtype(zarray.get("dtype")):
        raise InvalidMetadataError(
            f"array {where!r} of the Zarr v2 store has an object dtype ({zarray.get('dtype')!r}"
            f"); its chunks hold Python objects encoded by {_filter_ids(zarray) or 'a codec'}, "
            "which has no Zarr v3 form. Rewrite the array with a fixed dtype (or as Zarr v3 "
            "strings) first; nothing was imported"
        )
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.metadata.v2 import ArrayV2Metadata
    from zarr.metadata.migrate_v3 import _convert_array_metadata

    dims = attrs.get("_ARRAY_DIMENSIONS")
    kept = {k: v for k, v in attrs.items() if k != "_ARRAY_DIMENSIONS"}
    try:
        v2 = ArrayV2Metadata.from_dict({**zarray, "attributes": kept})
        if v2.fill_value is None:  # v2's "no fill value": zarr reads missing chunks as zeros
            zero = v2.dtype.to_json_scalar(v2.dtype.default_scalar(), zarr_format=2)
            v2 = ArrayV2Metadata.from_dict({**zarray, "fill_value": zero, "attributes": kept})
        v3 = _convert_array_metadata(v2)
        raw = v3.to_buffer_dict(default_buffer_prototype())["zarr.json"].to_bytes()
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidMetadataError(
            f"array {where!r} of the Zarr v2 store cannot be converted to Zarr v3 "
            f"(compressor {_codec_id(zarray.get('compressor'))}, filters "
            f"{_filter_ids(zarray) or 'none'}): {exc}. Nothing was imported"
        ) from exc
    doc = json.loads(raw)
    if isinstance(dims, list) and len(dims) == len(doc["shape"]):
        doc["dimension_names"] = [str(d) for d in dims]
    return _dumps(doc)


def _codec_id(codec: Any) -> str:
    return repr(codec.get("id")) if isinstance(codec, dict) else "none"


def _filter_ids(zarray: dict[str, Any]) -> str:
    filters = zarray.get("filters") or []
    return ", ".join(_codec_id(f) for f in filters)
