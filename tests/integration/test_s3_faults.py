"""A real S3 endpoint behind a proxy that fails, delays and truncates a fraction of requests:
commits land whole or fail cleanly, and reads never return wrong bytes."""

from __future__ import annotations

import asyncio
import hashlib

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import unique
from tests.integration._s3_faults import FaultyProxy
from zarrlake.model import checksum
from zarrlake.objects import FsspecObjectStore

pytestmark = [pytest.mark.s3, pytest.mark.slow]


def _options(s3_options: dict[str, object], endpoint: str) -> dict[str, object]:
    # s3fs's and botocore's own retries off: what is measured is ours
    return {
        **s3_options,
        "endpoint_url": endpoint,
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2},
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
        proxy.methods.clear()
        assert store.read(h, crc=checksum(data)) == data
        assert asyncio.run(store.read_async(h, crc=checksum(data))) == data
        assert dict(proxy.methods) == {"GET": 2}
