"""The store's listings agree with its reads, whatever was written in whatever order.

zarr's consumers (xarray, consolidation, copy tools) trust ``list``, ``list_prefix``,
``list_dir`` and ``get`` to agree: every listed key must be readable, and no key may be listed
twice. A state machine writes and deletes metadata documents (groups, arrays of one or two
dimensions with every chunk key encoding, grids that grow and shrink, nodes under arrays) and
keys that may or may not be chunk keys, before or after the metadata that claims them, then
checks the listings of the writable session and, after each commit, of a read-only session of
the commit, which must also show what the session showed before it committed (and the commit
must refuse exactly when ``has_changes`` said there was nothing to commit).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import AsyncIterator

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import zarrlake
from zarrlake.errors import EmptyCommitError, InvalidInputError
from zarrlake.store import LakeStore

PROTO = default_buffer_prototype()

# "a/c" and "a/0" are nodes whose names are also chunk-key words of the array "a" above them
PATHS = st.sampled_from(["", "a", "a/c", "a/0", "b"])
ENCODINGS = st.sampled_from(
    [
        {"name": "default", "configuration": {"separator": "/"}},
        {"name": "default", "configuration": {"separator": "."}},
        {"name": "v2", "configuration": {"separator": "."}},
        {"name": "v2", "configuration": {"separator": "/"}},
    ]
)
SHAPES = st.sampled_from([[4], [2], [4, 4], [2, 4]])  # chunks of 2: grids (2,), (1,), ...
LEAVES = st.sampled_from(
    ["c/0", "c/1", "c.0", "c.1", "c/0/1", "c.1.0", "c/1/1", "0", "1", "0.1", "1/0", "c", "x"]
)
VALUES = st.one_of(st.binary(min_size=1, max_size=24), st.binary(min_size=600, max_size=700))


def _doc(kind: str, shape: list[int], encoding: dict[str, object], attr: int) -> bytes:
    if kind == "group":
        doc: dict[str, object] = {"zarr_format": 3, "node_type": "group"}
    else:
        doc = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2] * len(shape)}},
            "chunk_key_encoding": encoding,
            "fill_value": 0,
            "codecs": [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}],
        }
    doc["attributes"] = {"v": attr}
    return json.dumps(doc).encode()


async def _collect(it: AsyncIterator[str]) -> list[str]:
    return [k async for k in it]


def _key(path: str, leaf: str) -> str:
    return f"{path}/{leaf}" if path else leaf


def check_listings(store: LakeStore) -> dict[str, bytes]:
    """Assert that the store's listings agree with its reads; return what it holds."""
    keys = sync(_collect(store.list()))
    assert len(keys) == len(set(keys)), (
        f"listed twice: {sorted(k for k in keys if keys.count(k) > 1)}"
    )
    held: dict[str, bytes] = {}
    for k in keys:
        buf = sync(store.get(k, PROTO))
        assert buf is not None, f"{k!r} is listed but holds nothing"
        assert sync(store.exists(k)), k
        held[k] = buf.to_bytes()
    for prefix in ("", "a", "a/", "a/c", "a/c/", "a/0", "b/", "c", "x"):
        got = sync(_collect(store.list_prefix(prefix)))
        assert sorted(got) == sorted(k for k in keys if k.startswith(prefix)), prefix
    for d in ("", "a", "a/c", "a/0", "b"):
        got = sync(_collect(store.list_dir(d)))
        full = f"{d}/" if d else ""
        want = {k[len(full) :].split("/", 1)[0] for k in keys if k.startswith(full)}
        assert len(got) == len(set(got)), d
        assert set(got) == want, d
    return held


class StoreListingMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="zarrlake-listing-")
        self.repo = zarrlake.Repo.create(self.tmp)
        self.session = self.repo.writable_session()

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _set(self, key: str, value: bytes) -> None:
        # refused writes (a chunk outside its grid, of a wrong size) stage nothing
        with contextlib.suppress(InvalidInputError):
            sync(self.session.store.set(key, PROTO.buffer.from_bytes(value)))

    @rule(
        path=PATHS,
        kind=st.sampled_from(["group", "array", "array"]),
        shape=SHAPES,
        encoding=ENCODINGS,
        attr=st.integers(0, 1),
    )
    def write_metadata(
        self, path: str, kind: str, shape: list[int], encoding: dict[str, object], attr: int
    ) -> None:
        self._set(_key(path, "zarr.json"), _doc(kind, shape, encoding, attr))

    @rule(path=PATHS, leaf=LEAVES, value=VALUES)
    def write_key(self, path: str, leaf: str, value: bytes) -> None:
        self._set(_key(path, leaf), value)

    @rule(path=PATHS, leaf=st.one_of(LEAVES, st.just("zarr.json")))
    def delete_key(self, path: str, leaf: str) -> None:
        sync(self.session.store.delete(_key(path, leaf)))

    @rule(path=PATHS)
    def delete_dir(self, path: str) -> None:
        sync(self.session.store.delete_dir(path))

    @rule()
    def commit(self) -> None:
        before = check_listings(self.session.store)
        changes = self.session.has_changes
        try:
            cid = self.session.commit("step")
        except EmptyCommitError:
            assert not changes  # has_changes says what the commit decides
            return
        assert changes
        after = check_listings(self.repo.readonly_session(commit=cid).store)
        assert after == before
        self.session = self.repo.writable_session()

    @invariant()
    def listings_agree_with_reads(self) -> None:
        check_listings(self.session.store)


StoreListingMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStoreListing = StoreListingMachine.TestCase
