"""The read-only Zarr v3 gateway: real zarr-python and xarray readers over HTTP on loopback,
caching headers, ranges, listings and consolidated metadata, on both catalogs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import zarrlake
from tests.integration._gateway import gateway, request
from zarrlake.gateway import Lake, Served

BIG = (512, 512)  # 1 MiB of float32: an object of its own; the 16 x 16 chunks are packed


def build(repo: zarrlake.Repo) -> tuple[str, str]:
    """v1 (tagged) then main: group ocean with a packed and a large-chunk array."""
    s = repo.writable_session()
    root = zarr.open_group(s.store, mode="w")
    root.attrs["title"] = "test lake"
    ocean = root.create_group("ocean", attributes={"version": 1})
    small = ocean.create_array(
        "sst", shape=(64, 64), chunks=(16, 16), dtype="f4", dimension_names=("y", "x")
    )
    small[:] = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    big = ocean.create_array(
        "big",
        shape=(1024, 512),
        chunks=BIG,
        dtype="f4",
        compressors=None,
        dimension_names=("r", "c"),
    )
    big[:] = np.random.default_rng(0).random((1024, 512), dtype=np.float32)
    v1 = s.commit("v1")
    repo.create_tag("v1", v1)
    s = repo.writable_session()
    ocean = zarr.open_group(s.store, path="ocean", mode="r+")
    ocean.attrs["version"] = 2
    ocean["sst"][0:16, 0:16] = -1.0
    v2 = s.commit("v2")
    return v1, v2


@pytest.fixture
def lake_repo(make_repo: Callable[..., zarrlake.Repo]) -> zarrlake.Repo:
    repo = make_repo()
    build(repo)
    return repo


@pytest.fixture
def served(lake_repo: zarrlake.Repo) -> Iterator[Served]:
    with gateway(Lake.for_repo(lake_repo)) as s:
        yield s


def base(served: Served, repo: zarrlake.Repo, ref: str) -> str:
    return f"{served.url}{repo.name}/{ref}"


# -- real readers --------------------------------------------------------------------------------


@pytest.mark.parametrize("consolidated", [None, False])
def test_zarr_reads_exactly_each_version(
    served: Served, lake_repo: zarrlake.Repo, consolidated: bool | None
) -> None:
    for ref in ("v1", "main", lake_repo.resolve("v1")):
        mine = zarr.open_group(lake_repo.readonly_session(ref).store, mode="r")
        theirs = zarr.open_group(
            base(served, lake_repo, ref), mode="r", use_consolidated=consolidated
        )
        assert sorted(k for k, _ in theirs.members(max_depth=None)) == sorted(
            k for k, _ in mine.members(max_depth=None)
        )
        assert theirs["ocean"].attrs["version"] == mine["ocean"].attrs["version"]
        for name in ("ocean/sst", "ocean/big"):
            np.testing.assert_array_equal(theirs[name][:], mine[name][:])


def test_xarray_open_zarr_over_http(served: Served, lake_repo: zarrlake.Repo) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # consolidated metadata found: no fallback warning
        ds = xr.open_zarr(base(served, lake_repo, "v1"), group="ocean")
    mine = zarrlake.open_dataset(lake_repo, "v1", group="ocean")
    xr.testing.assert_equal(ds.sst.compute(), mine.sst.compute())
    assert ds.attrs["version"] == 1


def test_a_group_document_offers_consolidated_metadata(
    served: Served, lake_repo: zarrlake.Repo
) -> None:
    got = request(served, f"/{lake_repo.name}/v1/zarr.json")
    doc = json.loads(got.body)
    members = doc["consolidated_metadata"]["metadata"]
    assert set(members) == {"ocean", "ocean/sst", "ocean/big"}
    assert members["ocean"]["attributes"] == {"version": 1}
    assert members["ocean/sst"]["shape"] == [64, 64]
    assert doc["attributes"] == {"title": "test lake"}
    # an array's document is served as stored
    stored = lake_repo.readonly_session("v1").store.get_sync("ocean/sst/zarr.json")
    assert stored is not None
    assert request(served, f"/{lake_repo.name}/v1/ocean/sst/zarr.json").body == stored.to_bytes()


def test_consolidation_can_be_turned_off(lake_repo: zarrlake.Repo) -> None:
    with gateway(Lake.for_repo(lake_repo), consolidated=False) as s:
        doc = json.loads(request(s, f"/{lake_repo.name}/v1/zarr.json").body)
    assert "consolidated_metadata" not in doc


# -- caching -------------------------------------------------------------------------------------


def test_commit_urls_are_immutable(served: Served, lake_repo: zarrlake.Repo) -> None:
    v1 = lake_repo.resolve("v1")
    got = request(served, f"/{lake_repo.name}/{v1}/ocean/sst/c/0/0")
    assert got.status == 200
    assert got.header("Cache-Control") == "public, max-age=31536000, immutable"
    etag = got.header("ETag")
    assert etag is not None
    assert etag.startswith('"')
    assert not etag.startswith("W/")
    assert got.header("X-Zarrlake-Commit") == v1
    again = request(
        served, f"/{lake_repo.name}/{v1}/ocean/sst/c/0/0", headers={"If-None-Match": etag}
    )
    assert (again.status, again.body) == (304, b"")


def test_branch_urls_name_the_commit_served(served: Served, lake_repo: zarrlake.Repo) -> None:
    got = request(served, f"/{lake_repo.name}/main/ocean/sst/c/0/0")
    assert got.header("Cache-Control") == "no-cache"
    assert got.header("X-Zarrlake-Commit") == lake_repo.resolve("main")
    assert (
        got.body == lake_repo.readonly_session("main").store.get_sync("ocean/sst/c/0/0").to_bytes()
    )  # type: ignore[union-attr]
    tag = request(served, f"/{lake_repo.name}/v1/ocean/sst/c/0/0")
    assert tag.header("Cache-Control") == "no-cache"  # a tag can be deleted and made again
    assert tag.header("X-Zarrlake-Commit") == lake_repo.resolve("v1")
    assert tag.header("ETag") != got.header("ETag")


# -- ranges and HEAD -------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["ocean/sst/c/1/1", "ocean/big/c/1/0"], ids=["packed", "object"])
def test_ranges(served: Served, lake_repo: zarrlake.Repo, key: str) -> None:
    whole = lake_repo.readonly_session("v1").store.get_sync(key)
    assert whole is not None
    data = whole.to_bytes()
    path = f"/{lake_repo.name}/v1/{key}"
    size = len(data)
    got = request(served, path, headers={"Range": "bytes=10-99"})
    assert (got.status, got.body) == (206, data[10:100])
    assert got.header("Content-Range") == f"bytes 10-99/{size}"
    suffix = request(served, path, headers={"Range": "bytes=-16"})
    assert (suffix.status, suffix.body) == (206, data[-16:])
    tail = request(served, path, headers={"Range": f"bytes={size - 5}-"})
    assert tail.body == data[-5:]
    beyond = request(served, path, headers={"Range": f"bytes={size}-"})
    assert beyond.status == 416
    assert beyond.header("Content-Range") == f"bytes */{size}"
    several = request(served, path, headers={"Range": "bytes=0-1,5-6"})  # not served as parts
    assert (several.status, several.body) == (200, data)
    head = request(served, path, method="HEAD")
    assert (head.status, head.body, head.header("Content-Length")) == (200, b"", str(size))


def test_head_of_a_group_document_says_its_served_length(
    served: Served, lake_repo: zarrlake.Repo
) -> None:
    path = f"/{lake_repo.name}/v1/zarr.json"
    assert request(served, path, method="HEAD").header("Content-Length") == str(
        len(request(served, path).body)
    )


# -- listings ------------------------------------------------------------------------------------


def test_listings(served: Served, lake_repo: zarrlake.Repo) -> None:
    name = lake_repo.name
    for path in (f"/{name}/v1/ocean", f"/{name}/v1/ocean/"):
        got = request(served, path)
        assert got.status == 200
        assert got.header("Content-Type") == "text/html; charset=utf-8"
        page = got.body.decode()
        assert f'href="/{name}/v1/ocean/sst/"' in page
        assert f'href="/{name}/v1/ocean/zarr.json"' in page
    refs = request(served, f"/{name}/").body.decode()
    assert f'href="/{name}/main/"' in refs
    assert f'href="/{name}/v1/"' in refs
    chunks = request(served, f"/{name}/v1/ocean/sst/c/0").body.decode()
    assert chunks.count("<li>") == 1 + 4  # the parent and four chunk keys


def test_the_gateway_does_not_import_the_dashboard() -> None:
    code = (
        "import sys, zarrlake.gateway; "
        "print(sorted(m for m in sys.modules if m.startswith(('zarrlake.ui', 'panel'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_serves_every_repo_of_a_lake(tmp_path: Path) -> None:
    first = zarrlake.Repo.create(tmp_path / "lake")
    other = zarrlake.Repo.create(tmp_path / "lake", name="other")
    build(other)
    url = zarrlake.parse_url(f"zarrlake+file://{tmp_path / 'lake'}")
    with gateway(Lake.for_url(url)) as s:
        assert request(s, "/other/v1/ocean/zarr.json").status == 200
        assert request(s, f"/{first.name}/main/ocean/zarr.json").status == 404
        g = zarr.open_group(f"{s.url}other/v1", mode="r")
        assert g["ocean"].attrs["version"] == 1


def test_an_expired_commit_stops_being_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import zarrlake.gateway.versions as versions

    monkeypatch.setattr(versions, "PIN_TTL", 0.5)  # how long a resolved commit id is trusted
    repo = zarrlake.Repo.create(tmp_path / "lake")
    v1, _ = build(repo)
    repo.delete_tag("v1")
    with gateway(Lake.for_repo(repo)) as s:
        path = f"/default/{v1}/ocean/zarr.json"
        assert request(s, path).status == 200
        assert request(s, path).status == 200  # served again from the commit it resolved
        report = repo.expire(timedelta(0))
        assert v1 in report.expired
        time.sleep(0.6)
        gone = request(s, path)
        assert gone.status == 404
        assert gone.body.decode().startswith(f"no ref '{v1}'")


def test_virtual_chunks_at_a_commit_url_come_from_their_source_every_time(
    tmp_path: Path,
) -> None:
    """A commit URL answers from the local objects at once; a virtual chunk's source is read
    afresh each time, so a source changed after the first answer is refused, not served."""
    source = tmp_path / "archive.bin"
    data = np.arange(16, dtype="<i4").tobytes()
    source.write_bytes(data)
    repo = zarrlake.Repo.create(tmp_path / "lake", virtual_sources={str(tmp_path): {}})
    s = repo.writable_session()
    zarr.create_array(s.store, name="a", shape=(4,), chunks=(2,), dtype="<i4", compressors=None)
    s.put_virtual_refs("a", [((0,), f"file://{source}", 8, 8)])
    zarr.open_array(s.store, path="a")[2:] = [7, 9]
    commit = s.commit("one virtual chunk, one stored")
    with gateway(Lake.for_repo(repo)) as served:
        for _ in range(2):  # the second answer comes after the commit id was pinned
            got = request(served, f"/{repo.name}/{commit}/a/c/0")
            assert (got.status, got.body) == (200, data[8:16])
            stored = request(served, f"/{repo.name}/{commit}/a/c/1")
            assert np.frombuffer(stored.body, "<i4").tolist() == [7, 9]
        source.write_bytes(data[::-1])
        changed = request(served, f"/{repo.name}/{commit}/a/c/0")
        assert changed.status == 500
        assert (
            changed.body == b"chunk data could not be read (source_changed); see the server log\n"
        )
        assert request(served, f"/{repo.name}/{commit}/a/c/1").status == 200
