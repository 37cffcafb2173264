"""LakeStore against a dict model: reads, writes, deletes, listings, commits and time travel.

A state machine drives a real store on the embedded default (SQLite catalog + local directory)
through zarr's async store API. After every operation the store must answer exactly as a plain
dict of key -> bytes would; every commit must keep answering with the state it captured.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest
import zarr
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

import zarrlake
from zarrlake.errors import EmptyCommitError, ReadOnlyError, SessionClosedError
from zarrlake.store import LakeStore

PROTO = default_buffer_prototype()
ARRAY = "arr"
GRID = (3, 3)  # shape (6, 6), chunks (2, 2)

CHUNK_COORDS = st.tuples(st.integers(0, GRID[0] - 1), st.integers(0, GRID[1] - 1))
RAW_KEYS = st.sampled_from(
    [
        "raw/a",
        "raw/b",
        "raw/sub/c",
        "raw",
        "notes.txt",
        f"{ARRAY}/notes.txt",  # inside the array, but not a chunk key
        f"{ARRAY}/c/0",  # wrong number of coordinates for a 2-d array: raw
        f"{ARRAY}/c/01/0",  # not a canonical chunk key: raw
        f"{ARRAY}/c/0/0/0",
    ]
)
VALUES = st.one_of(
    st.binary(max_size=40),  # inline in the catalog
    st.binary(min_size=513, max_size=1500),  # a chunk object
)
PREFIXES = st.sampled_from(
    ["", "a", "arr", "arr/", "arr/c", "arr/c/", "arr/c/1", "arr/c/0/", "raw", "raw/", "r", "n", "z"]
)
DIRS = st.sampled_from(["", "arr", "arr/", "arr/c", "arr/c/0", "raw", "raw/sub", "nope"])


def chunk_key(coords: tuple[int, int]) -> str:
    return f"{ARRAY}/c/{coords[0]}/{coords[1]}"


async def _collect(it: AsyncIterator[str]) -> list[str]:
    return [k async for k in it]


def store_get(store: LakeStore, key: str, byte_range: Any = None) -> bytes | None:
    buf = sync(store.get(key, PROTO, byte_range))
    return None if buf is None else buf.to_bytes()


def store_set(store: LakeStore, key: str, value: bytes) -> None:
    sync(store.set(key, PROTO.buffer.from_bytes(value)))


def dir_children(model: dict[str, bytes], prefix: str) -> list[str]:
    prefix = prefix.rstrip("/")
    full = f"{prefix}/" if prefix else ""
    return sorted({k[len(full) :].split("/", 1)[0] for k in model if k.startswith(full)})


class LakeStoreModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="zarrlake-model-")
        self.repo = zarrlake.Repo.create(self.tmp)
        # commit id -> the model at that commit; the repo starts with one empty commit
        self.history: list[tuple[str, dict[str, bytes]]] = [(self.repo.resolve("main"), {})]
        self.model: dict[str, bytes] = {}
        self.session = self.repo.writable_session("main")
        self.store = self.session.store

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    @initialize()
    def create_array(self) -> None:
        zarr.create_array(
            self.store, name=ARRAY, shape=(6, 6), chunks=(2, 2), dtype="u1", fill_value=0
        )
        for key in ("zarr.json", f"{ARRAY}/zarr.json"):
            value = store_get(self.store, key)
            assert value is not None
            self.model[key] = value

    # -- writes ------------------------------------------------------------------------------

    @rule(key=RAW_KEYS, value=VALUES)
    def set_raw(self, key: str, value: bytes) -> None:
        store_set(self.store, key, value)
        self.model[key] = value

    @rule(coords=CHUNK_COORDS, value=VALUES)
    def set_chunk(self, coords: tuple[int, int], value: bytes) -> None:
        store_set(self.store, chunk_key(coords), value)
        self.model[chunk_key(coords)] = value

    @rule(value=st.integers(0, 3))
    def set_attributes(self, value: int) -> None:
        key = f"{ARRAY}/zarr.json"
        doc = json.loads(self.model[key])
        doc["attributes"] = {"v": value}
        data = json.dumps(doc, indent=2).encode()
        store_set(self.store, key, data)
        self.model[key] = data

    @rule(key=RAW_KEYS)
    def delete_raw(self, key: str) -> None:
        sync(self.store.delete(key))
        self.model.pop(key, None)

    @rule(coords=CHUNK_COORDS)
    def delete_chunk(self, coords: tuple[int, int]) -> None:
        sync(self.store.delete(chunk_key(coords)))
        self.model.pop(chunk_key(coords), None)

    @rule(prefix=st.sampled_from(["raw", "raw/sub", "arr/c", "arr/c/1"]))
    def delete_dir(self, prefix: str) -> None:
        sync(self.store.delete_dir(prefix))
        for key in [k for k in self.model if k.startswith(prefix + "/")]:
            del self.model[key]

    # -- reads -------------------------------------------------------------------------------

    @rule(key=st.one_of(RAW_KEYS, CHUNK_COORDS.map(chunk_key)))
    def get(self, key: str) -> None:
        assert store_get(self.store, key) == self.model.get(key)
        assert sync(self.store.exists(key)) == (key in self.model)

    @rule(
        key=st.one_of(RAW_KEYS, CHUNK_COORDS.map(chunk_key)),
        start=st.integers(0, 1600),
        length=st.integers(0, 1600),
        kind=st.sampled_from(["range", "offset", "suffix"]),
    )
    def get_range(self, key: str, start: int, length: int, kind: str) -> None:
        expected = self.model.get(key)
        if kind == "range":
            req: Any = RangeByteRequest(start, start + length)
            want = None if expected is None else expected[start : start + length]
        elif kind == "offset":
            req = OffsetByteRequest(start)
            want = None if expected is None else expected[start:]
        else:
            req = SuffixByteRequest(length)
            want = None if expected is None else expected[max(0, len(expected) - length) :]
        assert store_get(self.store, key, req) == want

    @rule(key=st.one_of(RAW_KEYS, CHUNK_COORDS.map(chunk_key)))
    def getsize(self, key: str) -> None:
        if key in self.model:
            assert sync(self.store.getsize(key)) == len(self.model[key])
        else:
            with pytest.raises(FileNotFoundError):
                sync(self.store.getsize(key))

    @rule(prefix=PREFIXES)
    def list_prefix(self, prefix: str) -> None:
        got = sync(_collect(self.store.list_prefix(prefix)))
        assert sorted(got) == sorted(k for k in self.model if k.startswith(prefix))

    @rule(prefix=DIRS)
    def list_dir(self, prefix: str) -> None:
        got = sync(_collect(self.store.list_dir(prefix)))
        assert sorted(got) == dir_children(self.model, prefix)

    @invariant()
    def list_all(self) -> None:
        got = sync(_collect(self.store.list()))
        assert sorted(got) == sorted(self.model)

    # -- commits -----------------------------------------------------------------------------

    @rule()
    def commit(self) -> None:
        last = self.history[-1][1]
        try:
            cid = self.session.commit("step")
        except EmptyCommitError:
            # refused exactly when the session changes nothing; it stays open
            assert self.model == last
            return
        assert self.model != last
        assert self.repo.resolve("main") == cid
        self.history.append((cid, dict(self.model)))
        old = self.store
        with pytest.raises(SessionClosedError):
            store_set(old, "raw/a", b"too late")
        self.session = self.repo.writable_session("main")
        self.store = self.session.store

    @rule(index=st.integers(0, 10**6))
    def read_earlier_commit(self, index: int) -> None:
        cid, expected = self.history[index % len(self.history)]
        store = self.repo.readonly_session(commit=cid).store
        keys = sync(_collect(store.list()))
        assert sorted(keys) == sorted(expected)
        assert {k: store_get(store, k) for k in keys} == expected
        for key in ("raw/a", chunk_key((0, 0))):
            assert store_get(store, key) == expected.get(key)
        with pytest.raises(ReadOnlyError):
            store_set(store, "raw/a", b"x")


LakeStoreModel.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLakeStoreModel = LakeStoreModel.TestCase
