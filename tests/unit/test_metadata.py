"""Parsing zarr.json documents and chunk keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
import zarr
import zarr.storage
from hypothesis import given
from hypothesis import strategies as st
from zarr.core.buffer import default_buffer_prototype
from zarr.core.chunk_key_encodings import DefaultChunkKeyEncoding, V2ChunkKeyEncoding
from zarr.core.sync import sync

from zarrlake.errors import InvalidMetadataError
from zarrlake.model.metadata import (
    ChunkKeyEncoding,
    attribute_changes,
    format_chunk_key,
    parse_chunk_key,
    parse_node_meta,
)

DEFAULT_SLASH = ChunkKeyEncoding("default", "/")
DEFAULT_DOT = ChunkKeyEncoding("default", ".")
V2_DOT = ChunkKeyEncoding("v2", ".")
V2_SLASH = ChunkKeyEncoding("v2", "/")
ENCODINGS = [DEFAULT_SLASH, DEFAULT_DOT, V2_DOT, V2_SLASH]


def _zarr_json(path: str, build: Any) -> bytes:
    """The zarr.json bytes zarr itself writes for the node ``build`` creates."""
    contents: dict[str, Any] = {}
    store = zarr.storage.MemoryStore(contents)
    root = zarr.open_group(store, mode="w")
    build(root)
    key = f"{path}/zarr.json" if path else "zarr.json"
    buf = sync(store.get(key, default_buffer_prototype()))
    assert buf is not None
    return buf.to_bytes()


def _array_doc(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        _zarr_json("a", lambda g: g.create_array("a", shape=(10, 7), chunks=(3, 4), dtype="f4"))
    )
    doc.update(overrides)
    return doc


def _raw(doc: Any) -> bytes:
    return json.dumps(doc).encode()


# -- documents written by zarr -------------------------------------------------------------------


def test_group_document() -> None:
    raw = _zarr_json("", lambda g: g.attrs.update({"title": "t", "n": 1}))
    nm = parse_node_meta(raw)
    assert nm.node_type == "group"
    assert not nm.is_array
    assert nm.attributes == {"title": "t", "n": 1}
    assert "attributes" not in nm.structure
    assert nm.structure["node_type"] == "group"
    assert nm.grid_shape is None


def test_array_document() -> None:
    raw = _zarr_json(
        "a",
        lambda g: g.create_array(
            "a", shape=(10, 7), chunks=(3, 4), dtype="f4", attributes={"units": "K"}
        ),
    )
    nm = parse_node_meta(raw)
    assert nm.is_array
    assert nm.ndim == 2
    assert nm.grid_shape == (4, 2)
    assert nm.encoding == DEFAULT_SLASH
    assert nm.attributes == {"units": "K"}
    assert nm.structure["shape"] == [10, 7]
    assert "attributes" not in nm.structure


def test_structure_ignores_attributes_but_sees_shape() -> None:
    a = parse_node_meta(_raw(_array_doc(attributes={"x": 1})))
    b = parse_node_meta(_raw(_array_doc(attributes={"x": 2})))
    c = parse_node_meta(_raw(_array_doc(shape=[11, 7])))
    assert a.structure == b.structure
    assert a.structure != c.structure


def test_zero_d_array_document() -> None:
    raw = _zarr_json("s", lambda g: g.create_array("s", shape=(), dtype="i2"))
    nm = parse_node_meta(raw)
    assert nm.is_array
    assert nm.ndim == 0
    assert nm.grid_shape == ()


@pytest.mark.parametrize(
    ("shape", "chunks", "grid"),
    [
        ((10,), (3,), (4,)),
        ((9,), (3,), (3,)),
        ((0,), (3,), (0,)),
        ((1, 1, 1), (5, 5, 5), (1, 1, 1)),
        ((100, 50, 7), (10, 25, 1), (10, 2, 7)),
    ],
)
def test_grid_shape(shape: tuple[int, ...], chunks: tuple[int, ...], grid: tuple[int, ...]) -> None:
    raw = _zarr_json("a", lambda g: g.create_array("a", shape=shape, chunks=chunks, dtype="u1"))
    assert parse_node_meta(raw).grid_shape == grid


@pytest.mark.parametrize(
    ("cke", "expected"),
    [
        ({"name": "default"}, DEFAULT_SLASH),
        ({"name": "default", "separator": "/"}, DEFAULT_SLASH),
        ({"name": "default", "separator": "."}, DEFAULT_DOT),
        ({"name": "v2"}, V2_DOT),
        ({"name": "v2", "separator": "."}, V2_DOT),
        ({"name": "v2", "separator": "/"}, V2_SLASH),
    ],
    ids=["default", "default-slash", "default-dot", "v2", "v2-dot", "v2-slash"],
)
def test_chunk_key_encoding_from_zarr(cke: dict[str, str], expected: ChunkKeyEncoding) -> None:
    raw = _zarr_json(
        "a",
        lambda g: g.create_array(
            "a", shape=(4, 4), chunks=(2, 2), dtype="i2", chunk_key_encoding=cke
        ),
    )
    assert parse_node_meta(raw).encoding == expected


@pytest.mark.parametrize(
    ("cke", "expected"),
    [
        (None, DEFAULT_SLASH),
        ({"name": "default"}, DEFAULT_SLASH),
        ({"name": "v2"}, V2_DOT),
        ({"name": "v2", "configuration": {}}, V2_DOT),
        ({"name": "v2", "configuration": {"separator": "/"}}, V2_SLASH),
        ({"name": "default", "configuration": {"separator": "."}}, DEFAULT_DOT),
    ],
    ids=["absent", "no-config", "v2-no-config", "v2-empty-config", "v2-slash", "default-dot"],
)
def test_chunk_key_encoding_defaults(cke: Any, expected: ChunkKeyEncoding) -> None:
    doc = _array_doc()
    if cke is None:
        del doc["chunk_key_encoding"]
    else:
        doc["chunk_key_encoding"] = cke
    # zarr itself requires the field, so strict mode refuses a document without it
    assert parse_node_meta(_raw(doc), strict=False).encoding == expected


def test_non_regular_grid_has_no_grid_shape() -> None:
    doc = _array_doc(chunk_grid={"name": "rectilinear", "configuration": {}})
    nm = parse_node_meta(_raw(doc), strict=False)
    assert nm.is_array
    assert nm.grid_shape is None
    assert nm.ndim == 2


# -- strict mode refuses what is not Zarr v3 metadata -----------------------------------------

BAD_DOCS: dict[str, bytes] = {
    "not json": b"{not json",
    "not utf8": b"\xff\xfe\x00",
    "empty": b"",
    "list": b"[1, 2]",
    "string": b'"zarr"',
    "null": b"null",
    "no zarr_format": _raw({"node_type": "group"}),
    "zarr_format 2": _raw({"zarr_format": 2, "node_type": "group"}),
    "zarr_format string": _raw({"zarr_format": "3", "node_type": "group"}),
    "no node_type": _raw({"zarr_format": 3}),
    "bad node_type": _raw({"zarr_format": 3, "node_type": "folder"}),
    "attributes not object": _raw({"zarr_format": 3, "node_type": "group", "attributes": [1]}),
}

BAD_ARRAYS: dict[str, dict[str, Any]] = {
    "shape missing": {"shape": None},
    "shape not list": {"shape": 10},
    "shape negative": {"shape": [-1, 7]},
    "shape float": {"shape": [10.0, 7]},
    "shape string": {"shape": ["10", 7]},
    "grid missing": {"chunk_grid": None},
    "grid not object": {"chunk_grid": "regular"},
    "grid without name": {"chunk_grid": {"configuration": {"chunk_shape": [3, 4]}}},
    "chunk_shape missing": {"chunk_grid": {"name": "regular"}},
    "chunk_shape wrong ndim": {
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}}
    },
    "chunk_shape zero": {
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0, 4]}}
    },
    "chunk_shape float": {
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3.5, 4]}}
    },
    "cke not object": {"chunk_key_encoding": "default"},
    "cke unknown name": {"chunk_key_encoding": {"name": "custom"}},
    "cke bad separator": {
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "-"}}
    },
}


@pytest.mark.parametrize("raw", BAD_DOCS.values(), ids=BAD_DOCS.keys())
def test_strict_rejects_bad_documents(raw: bytes) -> None:
    with pytest.raises(InvalidMetadataError):
        parse_node_meta(raw)


@pytest.mark.parametrize("raw", BAD_DOCS.values(), ids=BAD_DOCS.keys())
def test_non_strict_keeps_bad_documents_as_unknown(raw: bytes) -> None:
    nm = parse_node_meta(raw, strict=False)
    assert nm.node_type == "unknown"
    assert not nm.is_array


def _bad_array(overrides: dict[str, Any]) -> bytes:
    doc = _array_doc()
    for k, v in overrides.items():
        if v is None:
            doc.pop(k, None)
        else:
            doc[k] = v
    return _raw(doc)


@pytest.mark.parametrize("overrides", BAD_ARRAYS.values(), ids=BAD_ARRAYS.keys())
def test_strict_rejects_bad_arrays(overrides: dict[str, Any]) -> None:
    with pytest.raises(InvalidMetadataError):
        parse_node_meta(_bad_array(overrides))


@pytest.mark.parametrize("overrides", BAD_ARRAYS.values(), ids=BAD_ARRAYS.keys())
def test_non_strict_keeps_bad_arrays_as_unknown(overrides: dict[str, Any]) -> None:
    assert parse_node_meta(_bad_array(overrides), strict=False).node_type == "unknown"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-8-sig"])
def test_strict_refuses_documents_that_are_not_plain_utf8(encoding: str) -> None:
    raw = json.dumps(_array_doc()).encode(encoding)
    with pytest.raises(InvalidMetadataError, match="UTF-8"):
        parse_node_meta(raw)
    # without strict_metadata a document is stored as given and read as before
    assert parse_node_meta(raw, strict=False) == parse_node_meta(_raw(_array_doc()))


def test_non_strict_parses_good_documents_normally() -> None:
    raw = _raw(_array_doc())
    assert parse_node_meta(raw, strict=False) == parse_node_meta(raw)


# -- chunk keys -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "enc", "ndim", "coords"),
    [
        ("c/1/2", DEFAULT_SLASH, 2, (1, 2)),
        ("c.1.2", DEFAULT_DOT, 2, (1, 2)),
        ("1.2", V2_DOT, 2, (1, 2)),
        ("1/2", V2_SLASH, 2, (1, 2)),
        ("c/0", DEFAULT_SLASH, 1, (0,)),
        ("c/10", DEFAULT_SLASH, 1, (10,)),
        ("c/123456789012", DEFAULT_SLASH, 1, (123456789012,)),
        ("c", DEFAULT_SLASH, 0, ()),
        ("c", DEFAULT_DOT, 0, ()),
        ("0", V2_DOT, 0, ()),
        ("0", V2_SLASH, 0, ()),
    ],
)
def test_parse_chunk_key(
    rel: str, enc: ChunkKeyEncoding, ndim: int, coords: tuple[int, ...]
) -> None:
    assert parse_chunk_key(rel, enc, ndim) == coords
    assert format_chunk_key(coords, enc) == rel


@pytest.mark.parametrize(
    ("rel", "enc", "ndim"),
    [
        ("c/+1", DEFAULT_SLASH, 1),
        ("c/-1", DEFAULT_SLASH, 1),
        ("c/01", DEFAULT_SLASH, 1),
        ("c/00", DEFAULT_SLASH, 1),
        ("c/ 1", DEFAULT_SLASH, 1),
        ("c/1 ", DEFAULT_SLASH, 1),
        ("c/1_0", DEFAULT_SLASH, 1),
        ("c/", DEFAULT_SLASH, 1),
        ("c//1", DEFAULT_SLASH, 2),
        ("c/1/", DEFAULT_SLASH, 2),
        ("c/\u0661", DEFAULT_SLASH, 1),  # ARABIC-INDIC DIGIT ONE
        ("c/\u00b2", DEFAULT_SLASH, 1),  # SUPERSCRIPT TWO
        ("c/\uff11", DEFAULT_SLASH, 1),  # FULLWIDTH DIGIT ONE
        ("c/1", DEFAULT_SLASH, 2),  # too few
        ("c/1/2/3", DEFAULT_SLASH, 2),  # too many
        ("c/1", DEFAULT_SLASH, 0),
        ("c", DEFAULT_SLASH, 1),
        ("1/2", DEFAULT_SLASH, 2),  # no c prefix
        ("c.1", DEFAULT_SLASH, 1),  # wrong separator
        ("c/1", DEFAULT_DOT, 1),
        ("d/1", DEFAULT_SLASH, 1),
        ("zarr.json", DEFAULT_SLASH, 1),
        ("c", V2_DOT, 0),
        ("00", V2_DOT, 0),
        ("1", V2_DOT, 0),
        ("1.2", V2_DOT, 1),
        ("1", V2_DOT, 2),
        ("1/2", V2_DOT, 2),
        ("01.2", V2_DOT, 2),
        ("+1.2", V2_DOT, 2),
        ("", V2_DOT, 1),
        ("", DEFAULT_SLASH, 0),
    ],
)
def test_parse_chunk_key_rejects(rel: str, enc: ChunkKeyEncoding, ndim: int) -> None:
    assert parse_chunk_key(rel, enc, ndim) is None


coords_st = st.lists(st.integers(0, 10**9), max_size=5).map(tuple)


@given(coords=coords_st, enc=st.sampled_from(ENCODINGS))
def test_chunk_key_round_trip(coords: tuple[int, ...], enc: ChunkKeyEncoding) -> None:
    key = format_chunk_key(coords, enc)
    assert parse_chunk_key(key, enc, len(coords)) == coords


@given(coords=coords_st, enc=st.sampled_from(ENCODINGS))
def test_format_chunk_key_matches_zarr(coords: tuple[int, ...], enc: ChunkKeyEncoding) -> None:
    zenc: Any = (
        DefaultChunkKeyEncoding(separator=enc.separator)  # type: ignore[arg-type]
        if enc.name == "default"
        else V2ChunkKeyEncoding(separator=enc.separator)  # type: ignore[arg-type]
    )
    assert format_chunk_key(coords, enc) == zenc.encode_chunk_key(coords)


@pytest.mark.parametrize("enc", ENCODINGS, ids=lambda e: f"{e.name}{e.separator}")
def test_keys_zarr_writes_parse_to_their_coords(enc: ChunkKeyEncoding) -> None:
    contents: dict[str, Any] = {}
    store = zarr.storage.MemoryStore(contents)
    root = zarr.open_group(store, mode="w")
    cke = {"name": enc.name, "separator": enc.separator}
    arr = root.create_array("a", shape=(4, 6), chunks=(2, 2), dtype="u1", chunk_key_encoding=cke)
    arr[:] = 1
    nm = parse_node_meta(sync(store.get("a/zarr.json", default_buffer_prototype())).to_bytes())
    keys = [k for k in contents if k.startswith("a/") and k != "a/zarr.json"]
    parsed = {parse_chunk_key(k[2:], nm.encoding, nm.ndim) for k in keys}
    assert parsed == {(i, j) for i in range(2) for j in range(3)}


# -- attributes -------------------------------------------------------------------------------


def test_attribute_changes() -> None:
    before = {"a": 1, "b": 2, "c": [1]}
    after = {"a": 1, "b": 3, "d": None}
    assert attribute_changes(before, after) == {"b", "c", "d"}
    assert attribute_changes(before, dict(before)) == set()


def test_parametrized_data_types_have_no_fixed_chunk_size() -> None:
    import json

    from zarrlake.model.metadata import parse_node_meta

    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": "",
        "codecs": [{"name": "bytes"}],
    }
    assert parse_node_meta(json.dumps(doc).encode(), strict=False).chunk_nbytes is None
    doc["data_type"] = "int16"
    assert parse_node_meta(json.dumps(doc).encode(), strict=False).chunk_nbytes == 4


def test_strict_mode_refuses_what_zarr_cannot_open() -> None:
    doc = _array_doc(chunk_grid={"name": "rectilinear", "configuration": {}})
    with pytest.raises(InvalidMetadataError, match="zarr cannot read"):
        parse_node_meta(_raw(doc))
