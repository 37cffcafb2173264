"""A fuzz pass over the public surface: whatever goes in, the outcome is success or an error of
our own tree, and an error changes nothing."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.core.buffer import cpu

import zarrlake

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
ANYTHING = JSON | st.binary(max_size=8) | st.sets(st.integers(), max_size=2) | st.just(object())


@pytest.fixture(scope="module")
def lake() -> Iterator[zarrlake.Repo]:
    d = tempfile.mkdtemp()
    repo = zarrlake.Repo.create(f"{d}/lake")
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array(
        "a", shape=(8,), chunks=(4,), dtype="i8", compressors=None
    )
    s.commit("base")
    yield repo
    shutil.rmtree(d, ignore_errors=True)


def _keys(s: zarrlake.WritableSession) -> list[str]:
    return sorted(s.iter_keys())


@FUZZ
@given(key=st.text(max_size=24), value=st.binary(max_size=64))
def test_store_writes_of_any_key(lake: zarrlake.Repo, key: str, value: bytes) -> None:
    s = lake.writable_session()
    before = _keys(s)
    try:
        s.store.set_sync(key, cpu.Buffer.from_bytes(value))
        s.flush()
    except zarrlake.ZarrlakeError:
        assert _keys(s) == before
    else:
        assert s.locate(key) is not None
    finally:
        s.abandon()


ARRAY_DOC = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [8],
    "data_type": "int64",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": 0,
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
}


@FUZZ
@given(
    document=JSON,
    field=st.sampled_from(sorted(ARRAY_DOC)),
    value=JSON,
    raw=st.binary(max_size=32),
)
def test_metadata_documents(
    lake: zarrlake.Repo, document: Any, field: str, value: Any, raw: bytes
) -> None:
    s = lake.writable_session()
    mutated = {**ARRAY_DOC, field: value}  # a valid array document with one field replaced
    for data in (json.dumps(document).encode(), json.dumps(mutated).encode(), raw):
        before = s.locate("node/zarr.json")
        try:
            s.store.set_sync("node/zarr.json", cpu.Buffer.from_bytes(data))
        except zarrlake.InvalidMetadataError:
            assert s.locate("node/zarr.json") == before
    s.abandon()


@FUZZ
@given(
    message=ANYTHING | st.text(),
    metadata=ANYTHING,
    solver=st.text(max_size=8) | ANYTHING,
    timeout=ANYTHING,
    key=st.none() | st.text(max_size=300) | ANYTHING,
)
def test_commit_arguments(
    lake: zarrlake.Repo, message: Any, metadata: Any, solver: Any, timeout: Any, key: Any
) -> None:
    head = lake.resolve("main")
    s = lake.writable_session()
    zarr.open_array(s.store, path="a", mode="r+")[:4] = 7
    try:
        s.commit(message, metadata=metadata, solver=solver, timeout=timeout, idempotency_key=key)
    except zarrlake.ZarrlakeError:
        assert lake.resolve("main") == head
        assert s.closed is None
        s.abandon()
    else:
        assert s.closed == "committed"


@FUZZ
@given(text=st.text(max_size=30) | ANYTHING)
def test_ref_expressions(lake: zarrlake.Repo, text: Any) -> None:
    try:
        found = lake.resolve(text)
    except zarrlake.ZarrlakeError:
        return
    assert found in {c.id for c in lake.log("main")}
