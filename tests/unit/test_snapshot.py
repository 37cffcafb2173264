"""Snapshot roots: encoding round trip and corrupt input."""

from __future__ import annotations

import pytest

from tests.unit.fakes import ref
from zarrlake.errors import CatalogError
from zarrlake.model import NodeEntry, Root
from zarrlake.model.manifest import content_hash


def sample() -> Root:
    return Root(
        {
            "": NodeEntry("group", content_hash(b"g")),
            "a/b": NodeEntry("array", content_hash(b"m"), content_hash(b"i")),
            "u": NodeEntry("unknown", content_hash(b"u")),
        },
        {"k": ref("k"), "small": ref("s", small=True), "empty": ref("", small=True)},
    )


def test_root_round_trip() -> None:
    root = sample()
    assert Root.decode(root.encode()) == root


def test_empty_root_round_trip() -> None:
    assert Root.decode(Root().encode()) == Root()


def test_root_encoding_is_canonical() -> None:
    a = sample()
    b = Root(dict(reversed(list(a.nodes.items()))), dict(reversed(list(a.raw.items()))))
    assert a.encode() == b.encode()


@pytest.mark.parametrize(
    "data",
    [
        b'{"v":2,"nodes":{},"raw":{}}',
        b'{"v":1,"raw":{}}',
        b'{"v":1,"nodes":{"a":["group","zz",null]},"raw":{}}',
        b'{"v":1,"nodes":{"a":["group"]},"raw":{}}',
        b'{"v":1,"nodes":{},"raw":{"k":["00",1]}}',
        b"not json",
    ],
    ids=["version", "no-nodes", "bad-hex", "short-node", "short-ref", "not-json"],
)
def test_root_decode_corrupt_raises_catalog_error(data: bytes) -> None:
    with pytest.raises(CatalogError):
        Root.decode(data)
