"""A truncated object is the same error on every backend: a read that finds fewer bytes than
the chunk's ref says are stored is a ``ChunkCorruptionError`` naming the object, on local disk
as on S3, and S3 is not asked again (more attempts bring back no more bytes)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import unique
from tests.integration._s3_faults import FaultyProxy
from zarrlake.model import iter_manifest
from zarrlake.testing import LakeProbe

CHUNK = 2048  # int64: 16 KiB chunks, packed 16 to a pack
BIG = 40_000  # int64: 320 KB chunks, objects of their own


class Local:
    """Objects in a directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def storage(self, name: str) -> tuple[str, dict[str, object]]:
        return str(self.root / name), {}

    def objects(self, name: str) -> dict[str, bytes]:
        files = (self.root / name / "chunks").rglob("*")
        return {p.name: p.read_bytes() for p in files if p.is_file()}

    def cut(self, name: str, key: str, size: int) -> None:
        path = self.root / name / "chunks" / key[:2] / key
        path.write_bytes(path.read_bytes()[:size])

    @contextmanager
    def reading(
        self, storage_options: dict[str, object]
    ) -> Iterator[tuple[dict[str, object], FaultyProxy | None]]:
        yield storage_options, None


class S3:
    """Objects in the loopback S3 endpoint; read through a proxy that counts requests."""

    def __init__(self, endpoint: str, options: dict[str, object]) -> None:
        import boto3

        self.endpoint = endpoint
        self.options = options
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")

    def storage(self, name: str) -> tuple[str, dict[str, object]]:
        return f"s3://lake/{name}", self.options

    def objects(self, name: str) -> dict[str, bytes]:
        listed = self.client.list_objects_v2(Bucket="lake", Prefix=f"{name}/chunks/")
        return {
            o["Key"].rsplit("/", 1)[-1]: self.client.get_object(Bucket="lake", Key=o["Key"])[
                "Body"
            ].read()
            for o in listed.get("Contents", [])
        }

    def cut(self, name: str, key: str, size: int) -> None:
        path = f"{name}/chunks/{key[:2]}/{key}"
        data = self.client.get_object(Bucket="lake", Key=path)["Body"].read()
        self.client.put_object(Bucket="lake", Key=path, Body=data[:size])

    @contextmanager
    def reading(
        self, storage_options: dict[str, object]
    ) -> Iterator[tuple[dict[str, object], FaultyProxy | None]]:
        with FaultyProxy(self.endpoint) as proxy:
            yield {**storage_options, "endpoint_url": proxy.url}, proxy


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Local | S3:
    if request.param == "local":
        return Local(tmp_path)
    return S3(request.getfixturevalue("s3_endpoint"), request.getfixturevalue("s3_options"))


# (chunk size, chunks, the chunk read, where the object is cut in chunks, reads verified)
DAMAGE = {
    "an object of its own": (BIG, 1, 0, 0.5, True),
    "an object of its own, reads unverified": (BIG, 1, 0, 0.5, False),
    "a pack, the chunk straddling the cut": (CHUNK, 16, 8, 8.5, True),
    "a pack, the chunk past the cut": (CHUNK, 16, 12, 8.5, True),
}


def _where(repo: zarrlake.Repo, coords: tuple[int, ...]) -> tuple[str, int]:
    """The object holding chunk ``coords`` of ``x`` at ``main`` (a pack, or the chunk's own),
    and the chunk's offset in it: the stager may write the open pack between two writes (it
    makes chunks durable before staging them), so the chunks need not share one pack."""
    probe = LakeProbe(repo)
    entry = probe.root("main").nodes["x"]
    assert entry.manifest is not None
    ref = dict(iter_manifest(probe.reader.index(entry.manifest), probe.reader))[coords]
    return (ref.pack or ref.hash).hex(), ref.offset if ref.pack is not None else 0


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_truncated_object_is_chunk_corruption_everywhere(
    backend: Local | S3, tmp_path: Path, damage: str
) -> None:
    size, n, read, cut, verify = DAMAGE[damage]
    name = unique()
    storage, options = backend.storage(name)
    url = f"sqlite:///{tmp_path}/catalog.db"
    repo = zarrlake.Repo.create(catalog=url, storage=storage, name=name, storage_options=options)
    s = repo.writable_session()
    data = np.arange(n * size, dtype="i8")
    arr = zarr.open_group(s.store, mode="w").create_array(
        "x", shape=data.shape, chunks=(size,), dtype="i8", compressors=None
    )
    for i in range(n):  # one at a time: packed in order (a pack may be written between two)
        arr[i * size : (i + 1) * size] = data[i * size : (i + 1) * size]
    s.commit("to be damaged")
    key, at = _where(repo, (read,))  # the pack (or object) holding the chunk read, and where
    assert key in backend.objects(name)
    backend.cut(name, key, max(0, at + int((cut - read) * size * 8)))  # as if one pack
    with backend.reading(options) as (reading, proxy):
        fresh = zarrlake.Repo.open(
            catalog=url, name=name, storage_options=reading, verify_reads=verify
        )
        reader = zarr.open_array(fresh.readonly_session().store, path="x", mode="r")
        if proxy is not None:
            proxy.reset_counts()
        with pytest.raises(zarrlake.ChunkCorruptionError) as caught:
            reader[read * size : (read + 1) * size]
        if proxy is not None:
            assert dict(proxy.methods) == {"GET": 1}  # not retried
    assert key in str(caught.value)
    assert "repo.fsck" in str(caught.value)
