from __future__ import annotations

import asyncio
import hashlib

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import unique
from zarrlake.errors import ChunkCorruptionError, ObjectMissingError, StorageError
from zarrlake.objects import FsspecObjectStore


def test_repo_on_s3_roundtrip(catalog_url: str, s3_options: dict[str, object]) -> None:
    name = unique()
    repo = zarrlake.Repo.create(
        catalog=catalog_url, storage=f"s3://lake/{name}", name=name, storage_options=s3_options
    )
    s = repo.writable_session()
    arr = zarr.open_group(s.store, mode="w").create_array(
        "x", shape=(64,), chunks=(16,), dtype="i8"
    )
    arr[:] = np.arange(64)
    c = s.commit("on s3")
    again = zarrlake.Repo.open(catalog=catalog_url, name=name, storage_options=s3_options)
    got = zarr.open_group(again.readonly_session(commit=c).store, mode="r")["x"][:]
    np.testing.assert_array_equal(got, np.arange(64))


def _s3_objects(s3_options: dict[str, object]) -> FsspecObjectStore:
    return FsspecObjectStore(f"s3://lake/{unique()}", s3_options)


def test_an_s3_write_is_one_conditional_put_with_no_existence_check(
    s3_options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _s3_objects(s3_options)

    def refuse(*_: object, **__: object) -> bool:
        raise AssertionError("the write asked whether the object exists")

    monkeypatch.setattr(store.fs, "exists", refuse)
    monkeypatch.setattr(store.fs, "_exists", refuse)
    data = b"x" * 2000
    h = hashlib.sha256(data).digest()
    assert store.write(h, data) is True
    assert store.write(h, data) is False  # already there: the service refused the second PUT
    assert asyncio.run(store.write_async(h, data)) is False


def test_async_reads_are_verified_like_sync_ones(s3_options: dict[str, object]) -> None:
    store = _s3_objects(s3_options)
    data = b"y" * 3000
    h = hashlib.sha256(data).digest()
    assert asyncio.run(store.write_async(h, data)) is True
    assert asyncio.run(store.read_async(h)) == data
    assert asyncio.run(store.read_async(h, 10, 20)) == data[10:20]
    bad = hashlib.sha256(b"other").digest()
    store.fs.pipe_file(f"{store.prefix}/chunks/{bad.hex()[:2]}/{bad.hex()}", b"not other")
    with pytest.raises(ChunkCorruptionError):
        asyncio.run(store.read_async(bad))
    with pytest.raises(ChunkCorruptionError):
        asyncio.run(store.read_async(bad, 0, 3))  # a range is checked against the whole object
    with pytest.raises(ObjectMissingError):
        asyncio.run(store.read_async(hashlib.sha256(b"never written").digest()))


def test_a_batch_delete_removes_every_object_and_ignores_absent_ones(
    s3_options: dict[str, object],
) -> None:
    store = _s3_objects(s3_options)
    hashes = []
    for i in range(5):
        data = bytes([i]) * 1000
        hashes.append(hashlib.sha256(data).digest())
        store.write(hashes[-1], data)
    store.delete_many([*hashes[:4], hashlib.sha256(b"absent").digest()])
    assert {o.hash for o in store.iter_objects()} == {hashes[4]}


def test_a_service_that_stays_down_is_a_storage_error_after_retries(
    s3_options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _s3_objects(s3_options)
    calls: list[int] = []

    async def unavailable(*_: object, **__: object) -> None:
        calls.append(1)
        raise OSError("503 Slow Down")

    monkeypatch.setattr(store.fs, "_pipe_file", unavailable)
    with pytest.raises(StorageError, match="cannot write object"):
        asyncio.run(store.write_async(b"\1" * 32, b"z" * 1000))
    assert len(calls) == 5


def test_s3_stores_in_one_process_share_one_botocore_session(
    s3_options: dict[str, object],
) -> None:
    url = f"s3://lake/{unique()}"
    first, second = FsspecObjectStore(url, s3_options), FsspecObjectStore(url, s3_options)
    assert first.fs is not second.fs  # skip_instance_cache: two filesystems...
    assert first.fs.session is not None
    assert first.fs.session is second.fs.session  # ...and one botocore session
    data = b"shared" * 100
    h = hashlib.sha256(data).digest()
    first.write(h, data)
    assert second.read(h) == data
    # a profile shapes the session itself: such a store makes its own
    own = FsspecObjectStore(url, {**s3_options, "profile": "elsewhere"})
    assert own.fs.session is not first.fs.session
