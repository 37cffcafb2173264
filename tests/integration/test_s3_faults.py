"""A real S3 endpoint behind a proxy that fails, delays and truncates a fraction of requests, or
goes down or black-holes every connection: commits land whole or fail cleanly, reads never
return wrong bytes, every call ends within its deadline, and a session commits once S3 is
back."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import unique
from tests.integration._s3_faults import FaultyProxy
from zarrlake.model import checksum
from zarrlake.objects import FsspecObjectStore
from zarrlake.objects.packs import PACK_TARGET

pytestmark = [pytest.mark.s3, pytest.mark.slow]


CONNECT_TIMEOUT = 1
READ_TIMEOUT = 2
# botocore's max_attempts counts retries: 1 is two attempts, each allowed connect + read
DEADLINE = 2 * (CONNECT_TIMEOUT + READ_TIMEOUT)


def _options(s3_options: dict[str, object], endpoint: str) -> dict[str, object]:
    # botocore's own retries down to one: what is measured is ours
    return {
        **s3_options,
        "endpoint_url": endpoint,
        "config_kwargs": {
            "retries": {"max_attempts": 1},
            "connect_timeout": CONNECT_TIMEOUT,
            "read_timeout": READ_TIMEOUT,
        },
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_writes_and_reads_through_a_faulty_network(
    tmp_path: object, s3_endpoint: str, s3_options: dict[str, object], seed: int
) -> None:
    name = unique()
    url = f"sqlite:///{tmp_path}/catalog.db"
    clean = zarrlake.Repo.create(
        catalog=url, storage=f"s3://lake/{name}", name=name, storage_options=s3_options
    )
    head = clean.resolve("main")
    data = np.arange(40 * 256, dtype="i8")
    with FaultyProxy(s3_endpoint, rate=0.08, seed=seed) as proxy:
        faulty = zarrlake.Repo.open(
            catalog=url, name=name, storage_options=_options(s3_options, proxy.url)
        )
        s = faulty.writable_session()
        try:
            arr = zarr.open_group(s.store, mode="w").create_array(
                "x", shape=data.shape, chunks=(256,), dtype="i8", compressors=None
            )
            arr[:] = data
            commit = s.commit("through faults")
        except zarrlake.ZarrlakeError:
            commit = None  # failed cleanly: nothing may have changed
        # reads through the faulty network: right bytes, or our error, never wrong bytes
        if commit is not None:
            reader = zarr.open_array(faulty.readonly_session(commit).store, path="x", mode="r")
            for i in range(0, data.size, 1024):
                try:
                    got = reader[i : i + 1024]
                except zarrlake.ZarrlakeError:
                    continue
                np.testing.assert_array_equal(got, data[i : i + 1024])
        injected = sum(proxy.faults.values())
        print(f"\ns3 faults, seed {seed}: {proxy.requests} requests, {dict(proxy.faults)}")
    assert injected > 0, "no fault was injected"
    if commit is None:
        assert clean.resolve("main") == head
        return
    assert clean.resolve("main") == commit
    back = zarr.open_array(clean.readonly_session(commit).store, path="x", mode="r")[:]
    np.testing.assert_array_equal(back, data)  # the commit is whole
    assert clean.fsck(verify=True).ok


def test_a_chunk_object_is_read_whole_in_one_request(
    s3_endpoint: str, s3_options: dict[str, object]
) -> None:
    """No size request first (s3fs sends one before a whole-object read, to split large
    objects): a chunk object is one GET, in the sync and the async path."""
    data = bytes(range(256)) * 1200  # over the pack limit: an object of its own
    h = hashlib.sha256(data).digest()
    with FaultyProxy(s3_endpoint, rate=0.0) as proxy:
        store = FsspecObjectStore(f"s3://lake/{unique()}", _options(s3_options, proxy.url))
        store.write(h, data)
        proxy.reset_counts()
        assert store.read(h, crc=checksum(data)) == data
        assert asyncio.run(store.read_async(h, crc=checksum(data))) == data
        assert dict(proxy.methods) == {"GET": 2}


# -- an endpoint that never answers: every call ends by its deadline ---------------------------


def _calls(store: FsspecObjectStore, h: bytes, data: bytes) -> dict[str, Callable[[], object]]:
    other = hashlib.sha256(data[::-1]).digest()  # a write must not find its object present
    return {
        "read": lambda: store.read(h, crc=checksum(data)),
        "read_async": lambda: asyncio.run(store.read_async(h, crc=checksum(data))),
        "write": lambda: store.write(other, data[::-1]),
        "write_async": lambda: asyncio.run(store.write_async(other, data[::-1])),
    }


@pytest.mark.parametrize("call", ["read", "read_async", "write", "write_async"])
def test_a_black_holed_endpoint_fails_a_call_by_its_deadline(
    s3_endpoint: str, s3_options: dict[str, object], call: str
) -> None:
    """An endpoint that accepts connections and never answers: the call ends with our
    error, naming the endpoint, the operation and the deadline its timeouts allow, instead
    of our attempts multiplying s3fs's and botocore's for minutes."""
    data = bytes(range(256)) * 1200  # over the pack limit: an object of its own
    h = hashlib.sha256(data).digest()
    with FaultyProxy(s3_endpoint) as proxy:
        store = FsspecObjectStore(f"s3://lake/{unique()}", _options(s3_options, proxy.url))
        store.write(h, data)
        proxy.blackhole()
        started = time.monotonic()
        with pytest.raises(zarrlake.StorageError) as caught:
            _calls(store, h, data)[call]()
        took = time.monotonic() - started
        assert proxy.faults["blackhole"] > 0
    message = str(caught.value)
    assert type(caught.value) is zarrlake.StorageError
    assert f"{call.split('_')[0]} of object" in message
    assert proxy.url in message
    assert f"deadline of {DEADLINE:g} s" in message
    assert took < 3 * DEADLINE, f"{call} took {took:.1f} s"


# -- an outage: the same session commits once S3 is back ----------------------------------------

CHUNK = 2048  # int64: 16 KiB chunks, packed


def _write(arr: zarr.Array, data: np.ndarray, chunks: range) -> None:
    arr[chunks.start * CHUNK : chunks.stop * CHUNK] = data[
        chunks.start * CHUNK : chunks.stop * CHUNK
    ]


@pytest.mark.parametrize(
    ("outage", "during"),
    [
        ("down", range(8, 24)),  # fits in the open pack: the writes return, the commit fails
        ("blackhole", range(8, 168)),  # fills a pack (2 MiB): a write fails too
    ],
)
def test_a_session_commits_once_s3_is_back(
    tmp_path: object,
    s3_endpoint: str,
    s3_options: dict[str, object],
    outage: str,
    during: range,
    packs_by_size: None,
) -> None:
    """S3 goes away in the middle of a session's writes: the commit fails with our error and
    changes nothing; once S3 is back, the same session writes again what failed, commits, and
    a fresh reader sees every chunk. (Packs are written when full or at a flush, so whether a
    write needs S3 during the outage depends only on how much is written.)"""
    name = unique()
    url = f"sqlite:///{tmp_path}/catalog.db"
    clean = zarrlake.Repo.create(
        catalog=url, storage=f"s3://lake/{name}", name=name, storage_options=s3_options
    )
    head = clean.resolve("main")
    data = np.arange(during.stop * CHUNK, dtype="i8")
    with FaultyProxy(s3_endpoint) as proxy:
        repo = zarrlake.Repo.open(
            catalog=url, name=name, storage_options=_options(s3_options, proxy.url)
        )
        s = repo.writable_session()
        arr = zarr.open_group(s.store, mode="w").create_array(
            "x", shape=data.shape, chunks=(CHUNK,), dtype="i8", compressors=None
        )
        _write(arr, data, range(0, during.start))
        s.flush()  # these are in S3 and staged before the outage
        getattr(proxy, outage)()
        try:
            _write(arr, data, during)
        except zarrlake.StorageError:
            failed = True
        else:
            failed = False
        assert failed == (len(during) * CHUNK * 8 > PACK_TARGET)
        with pytest.raises(zarrlake.StorageError):
            s.commit("during the outage")
        assert clean.resolve("main") == head
        proxy.up()
        if failed:
            _write(arr, data, during)  # what failed, written again
        commit = s.commit("once S3 is back")
    assert clean.resolve("main") == commit
    reader = zarrlake.Repo.open(catalog=url, name=name, storage_options=s3_options)
    np.testing.assert_array_equal(
        zarr.open_array(reader.readonly_session().store, path="x")[:], data
    )
    assert reader.fsck(verify=True).ok
