"""Virtual chunk references end to end: real NetCDF files referenced through VirtualiZarr,
read back with plain xarray from local disk, S3 (moto on loopback) and HTTP, on both
catalogs; a changed, missing or disallowed source is a clear error and changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import zarrlake
from tests.integration.virtual_data import make_netcdf, open_virtual
from zarrlake.model import ChunkRef, virtual_hash
from zarrlake.testing import LakeProbe

pytest.importorskip("virtualizarr")


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    d = tmp_path / "archive"
    d.mkdir()
    return d


def _commit_files(repo: zarrlake.Repo, archive: Path, days: list[int]) -> xr.Dataset:
    expected, vdss = [], []
    for day in days:
        path = archive / f"day{day}.nc"
        expected.append(make_netcdf(path, day))
        vdss.append(open_virtual(f"file://{path}"))
    vds = xr.concat(vdss, dim="time", coords="minimal", compat="override")
    vds.lake.commit("reference the archive", repo=repo, group="obs")
    return xr.concat(expected, dim="time")


def test_netcdf_files_are_referenced_and_read_back(make_repo, archive: Path) -> None:
    repo = make_repo(virtual_sources={str(archive): {}})
    expected = _commit_files(repo, archive, [0, 2])
    out = zarrlake.open_dataset(repo, "main", group="obs")
    xr.testing.assert_equal(out.temp.load(), expected.temp)
    assert out.temp.attrs["units"] == "K"
    # the chunks are references: the lake stored no chunk object for them
    assert LakeProbe(repo).object_hashes() == set()


def test_appending_one_more_file_is_an_ordinary_commit(make_repo, archive: Path) -> None:
    repo = make_repo(virtual_sources={str(archive): {}})
    expected = _commit_files(repo, archive, [0])
    more = make_netcdf(archive / "day2.nc", 2)
    open_virtual(f"file://{archive / 'day2.nc'}").lake.commit(
        "one more day", repo=repo, group="obs", append_dim="time"
    )
    out = zarrlake.open_dataset(repo, "main", group="obs")
    xr.testing.assert_equal(out.temp.load(), xr.concat([expected, more], "time").temp)
    diff = repo.diff("main~1", "main")
    assert diff.summary().chunks_added == 4 + 1  # 4 temp chunks, 1 time chunk


def test_a_changed_source_is_an_error_naming_source_and_commit(make_repo, archive: Path) -> None:
    repo = make_repo(virtual_sources={str(archive): {}})
    _commit_files(repo, archive, [0])
    commit = repo.resolve("main")
    path = archive / "day0.nc"
    make_netcdf(path, 0, seed=99)  # rewritten in place: other bytes, same size
    with pytest.raises(zarrlake.SourceChangedError) as info:
        zarrlake.open_dataset(repo, "main", group="obs").temp.load()
    assert info.value.url == f"file://{path}"
    assert info.value.commit == commit
    assert commit in str(info.value)
    assert str(path) in str(info.value)
    report = repo.fsck()
    assert [(i.kind, i.source) for i in report.issues] == [("changed_source", f"file://{path}")]


def _array(repo: zarrlake.Repo) -> zarrlake.WritableSession:
    s = repo.writable_session()
    zarr.create_array(s.store, name="a", shape=(4,), chunks=(2,), dtype="<i4", compressors=None)
    return s


def test_bad_references_are_refused_and_stage_nothing(
    make_repo, archive: Path, tmp_path: Path
) -> None:
    repo = make_repo(virtual_sources={str(archive): {}})
    (archive / "a.bin").write_bytes(bytes(range(16)))
    outside = tmp_path / "outside.bin"
    outside.write_bytes(bytes(16))
    os.symlink(outside, archive / "link.bin")
    s = _array(repo)
    base = s.status()
    cases = {
        str(archive / "missing.bin"): zarrlake.SourceUnavailableError,
        str(outside): zarrlake.VirtualSourceError,
        f"{archive}/../outside.bin": zarrlake.VirtualSourceError,
        f"file://{archive}/%2E%2E/outside.bin": zarrlake.VirtualSourceError,
        str(archive / "link.bin"): zarrlake.VirtualSourceError,
        "file:///etc/passwd": zarrlake.VirtualSourceError,
        "ftp://host/a.bin": zarrlake.VirtualSourceError,
    }
    for url, error in cases.items():
        good = ((0,), str(archive / "a.bin"), 0, 8)
        with pytest.raises(error):
            s.put_virtual_refs("a", [good, ((1,), url, 0, 8)])
    with pytest.raises(zarrlake.VirtualSourceError, match="only 16 bytes"):
        s.put_virtual_refs("a", [((0,), str(archive / "a.bin"), 12, 8)])
    with pytest.raises(zarrlake.InvalidKeyError):
        s.put_virtual_refs("a", [((7,), str(archive / "a.bin"), 0, 8)])
    assert s.status().summary() == base.summary()  # only the array's creation


def test_a_crafted_reference_is_refused_at_read(make_repo, archive: Path) -> None:
    """A reference that reached the catalog without the staging checks (a hostile client
    writing rows itself) still cannot make a reader open another file."""
    from zarrlake.model import ChunkRef, VirtualSource, virtual_hash
    from zarrlake.model.records import StagedEntry

    repo = make_repo(virtual_sources={str(archive): {}})
    s = _array(repo)
    s.flush()
    for url in ("file:///etc/passwd", f"file://{archive}/../etc/passwd"):
        src = VirtualSource(url, 8, modified="0")
        ref = ChunkRef(virtual_hash(src, 0, 8), 8, offset=0, source=src)
        LakeProbe(repo).catalog.sessions.stage(s.id, [StagedEntry("a", "chunk", (0,), "", ref)])
        reader = repo.session(s.id)
        with pytest.raises(zarrlake.VirtualSourceError):
            zarr.open_array(reader.store, path="a", mode="r")[:2]


def test_materialize_copies_chunks_so_the_archive_can_go(make_repo, archive: Path) -> None:
    repo = make_repo(virtual_sources={str(archive): {}})
    expected = _commit_files(repo, archive, [0])
    repo.materialize("main", message="keep copies")
    for f in archive.iterdir():
        f.unlink()
    out = zarrlake.open_dataset(repo, "main", group="obs")
    xr.testing.assert_equal(out.temp.load(), expected.temp)
    assert repo.diff("main~1", "main").summary().chunks_changed == 4
    # the commit before still references the retired file, and fsck says so
    issues = repo.fsck().issues
    assert {(i.kind, i.source) for i in issues} == {("missing_source", f"file://{archive}/day0.nc")}


def test_gc_never_deletes_a_source_and_export_writes_real_bytes(
    make_repo, archive: Path, tmp_path: Path
) -> None:
    repo = make_repo(virtual_sources={str(archive): {}})
    expected = _commit_files(repo, archive, [0])
    repo.gc(grace=__import__("datetime").timedelta(0))
    assert sorted(p.name for p in archive.iterdir()) == ["day0.nc"]
    repo.export("main", str(tmp_path / "plain"))
    out = xr.open_zarr(str(tmp_path / "plain"), group="obs", consolidated=False)
    xr.testing.assert_equal(out.temp.load(), expected.temp)


def test_netcdf_on_s3_is_read_by_range_and_checked_by_etag(
    tmp_path: Path, s3_endpoint: str, s3_options: dict[str, object]
) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    local = tmp_path / "day0.nc"
    expected = make_netcdf(local, 0)
    key = f"archive-{os.getpid()}-{tmp_path.name}/day0.nc"
    s3.upload_file(str(local), "lake", key)
    prefix = f"s3://lake/{key.split('/')[0]}/"
    options = {k: v for k, v in s3_options.items() if k != "skip_instance_cache"}
    repo = zarrlake.Repo.create(tmp_path / "lake", virtual_sources={prefix: options})
    # the credentials are not in the catalog; a later open gives them again
    assert repo.virtual_sources() == {
        prefix: {"endpoint_url": s3_endpoint, "client_kwargs": {"region_name": "us-east-1"}}
    }
    open_virtual(f"s3://lake/{key}", local).lake.commit("on s3", repo=repo, group="obs")
    again = zarrlake.Repo.open(
        tmp_path / "lake", source_options={prefix: {"key": "testing", "secret": "testing"}}
    )
    out = zarrlake.open_dataset(again, "main", group="obs")
    xr.testing.assert_equal(out.temp.load(), expected.temp)
    s3.put_object(Bucket="lake", Key=key, Body=local.read_bytes()[:-1] + b"\0")
    with pytest.raises(zarrlake.SourceChangedError, match=key):
        zarrlake.open_dataset(again, "main", group="obs").temp.load()


def test_http_sources_are_read_by_range(tmp_path: Path, s3_endpoint: str) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    data = np.arange(64, dtype="<i4").tobytes()
    key = f"http-{os.getpid()}-{tmp_path.name}/a.bin"
    s3.put_object(Bucket="lake", Key=key, Body=data, ACL="public-read")
    url = f"{s3_endpoint}/lake/{key}"
    repo = zarrlake.Repo.create(tmp_path / "lake", virtual_sources={f"{s3_endpoint}/lake/": {}})
    s = _array(repo)
    s.put_virtual_refs("a", [((0,), url, 16, 8), ((1,), url, 0, 8)])
    s.commit("http refs")
    a = zarr.open_array(repo.readonly_session().store, path="a", mode="r")
    np.testing.assert_array_equal(a[:], [4, 5, 0, 1])
    s3.put_object(Bucket="lake", Key=key, Body=data[::-1], ACL="public-read")
    with pytest.raises(zarrlake.SourceChangedError):
        zarr.open_array(repo.readonly_session().store, path="a", mode="r")[:]


def test_source_options_that_are_not_json_are_refused_and_nothing_is_recorded(
    make_repo, archive: Path
) -> None:
    repo = make_repo()
    before = repo.virtual_sources()
    with pytest.raises(zarrlake.errors.InvalidInputError, match="JSON values"):
        repo.allow_virtual_source(f"{archive}/", endpoint_url=...)
    assert repo.virtual_sources() == before


def test_a_new_repo_names_virtual_chunks_by_their_span(make_repo, archive: Path) -> None:
    repo = make_repo(virtual_sources={str(archive): {}})
    assert repo.virtual_identity == "span"
    (archive / "a.bin").write_bytes(bytes(range(16)))
    s = _array(repo)
    s.put_virtual_refs("a", [((1,), str(archive / "a.bin"), 4, 8)])
    committed = repo.readonly_session(s.commit("one reference")).locate("a/c/1")
    assert isinstance(committed, ChunkRef)
    assert committed.source is not None
    assert committed.hash == virtual_hash(committed.source, 4, 8, "span")
    assert committed.hash[16:] == (4).to_bytes(8, "big") + (8).to_bytes(8, "big")
