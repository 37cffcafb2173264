"""Importing an Icechunk repository with its history: every snapshot a commit (message,
time, parent, metadata), its branches and tags, virtual chunks as references and native ones
copied; run again, only what is new; refused repositories and a crash change nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.testing import LakeProbe

icechunk = pytest.importorskip("icechunk")


def _icechunk(path: Path, source: Path) -> dict[str, str]:
    """An Icechunk repository: main with two snapshots (the first tagged v1), dev off the
    first; array ``temp`` native (chunks of 256 float32: stored as objects), ``v`` virtual
    references to ``source``."""
    source.write_bytes(np.arange(100, dtype="<i4").tobytes())
    url = f"file://{source.parent}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(url, icechunk.local_filesystem_store(str(source.parent)))
    )
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)), config=config)
    s = repo.writable_session("main")
    g = zarr.group(s.store)
    g.create_array("temp", shape=(32, 32), chunks=(16, 16), dtype="f4", fill_value=0,
                   compressors=None)[:] = np.arange(1024, dtype="f4").reshape(32, 32)  # fmt: skip
    g.create_array("v", shape=(20,), chunks=(10,), dtype="<i4", compressors=None, fill_value=0)
    s.store.set_virtual_ref("v/c/0", f"{url}{source.name}", offset=0, length=40)
    s.store.set_virtual_ref("v/c/1", f"{url}{source.name}", offset=40, length=40)
    first = s.commit("first", metadata={"run": 1, "who": "ops"})
    repo.create_tag("v1", first)
    s = repo.writable_session("main")
    zarr.open_array(s.store, path="temp")[0:16, 0:16] = -1
    second = s.commit("second")
    repo.create_branch("dev", first)
    s = repo.writable_session("dev")
    zarr.open_group(s.store).attrs["note"] = "dev"
    dev = s.commit("dev work")
    return {"first": first, "second": second, "dev": dev}


def _lake(tmp_path: Path) -> zarrlake.Repo:
    return zarrlake.Repo.create(tmp_path / "lake", virtual_sources={str(tmp_path / "src"): {}})


@pytest.fixture
def ice(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "src").mkdir()
    return _icechunk(tmp_path / "ice", tmp_path / "src" / "raw.bin")


def test_every_snapshot_becomes_a_commit_with_its_refs(make_repo, tmp_path: Path, ice) -> None:
    repo = make_repo(virtual_sources={str(tmp_path / "src"): {}})
    ic_repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(tmp_path / "ice")))
    result = zarrlake.import_icechunk(repo, tmp_path / "ice")
    assert sorted(result.commits) == sorted(ice.values())
    assert (result.copied, result.referenced) == (4 + 1, 2)  # 4 chunks, then the one rewritten
    assert sorted(repo.branches()) == ["dev", "main"]
    assert repo.tags() == {"v1": result.commits[ice["first"]]}
    main = repo.log("main")
    assert [c.message for c in main] == ["second", "first", "Repository initialized"]
    first = repo.commit_info(result.commits[ice["first"]])
    assert first.metadata == {"run": 1, "who": "ops", "icechunk_snapshot": ice["first"]}
    assert first.created_at == ic_repo.lookup_snapshot(ice["first"]).written_at
    assert repo.log("dev")[0].parents == (first.id,)
    # each ref reads what Icechunk's does
    for ref in ("main", "dev", "v1"):
        ours = zarr.open_group(repo.readonly_session(ref).store, mode="r")
        theirs = zarr.open_group(ic_repo.readonly_session(ref if ref != "v1" else None,
                                 tag="v1" if ref == "v1" else None).store, mode="r")  # fmt: skip
        np.testing.assert_array_equal(ours["temp"][:], theirs["temp"][:])  # type: ignore[index]
        np.testing.assert_array_equal(ours["v"][:], np.arange(20))  # type: ignore[index]
        assert dict(ours.attrs) == dict(theirs.attrs)
    # v stays a reference to the source file; temp's chunks are copies in the lake
    assert repo.fsck().sources_checked == 1
    assert len(LakeProbe(repo).object_hashes()) == 5


def test_running_again_imports_only_what_is_new(make_repo, tmp_path: Path, ice) -> None:
    repo = make_repo(virtual_sources={str(tmp_path / "src"): {}})
    before = zarrlake.import_icechunk(repo, tmp_path / "ice")
    again = zarrlake.import_icechunk(repo, tmp_path / "ice")
    assert (again.commits, again.branches, again.tags) == ({}, {}, {})
    ic_repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(tmp_path / "ice")))
    s = ic_repo.writable_session("main")
    zarr.open_array(s.store, path="temp")[16:32, 16:32] = 7
    third = s.commit("third")
    new = zarrlake.import_icechunk(repo, tmp_path / "ice")
    assert list(new.commits) == [third]
    assert new.branches == {"main": new.commits[third]}
    assert (new.copied, new.referenced) == (1, 0)
    assert repo.log("main")[1].id == before.commits[ice["second"]]
    assert float(zarr.open_array(repo.readonly_session().store, path="temp", mode="r")[20, 20]) == 7


def test_the_same_bytes_are_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "ice"
    ic_repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    s = ic_repo.writable_session("main")
    g = zarr.group(s.store)
    for name in ("a", "b"):
        g.create_array(name, shape=(512,), chunks=(256,), dtype="f8", compressors=None)[:] = 1.5
    s.commit("two arrays of the same bytes")
    repo = zarrlake.Repo.create(tmp_path / "lake")
    assert zarrlake.import_icechunk(repo, path).copied == 4
    assert len(LakeProbe(repo).object_hashes()) == 1


def test_a_lake_branch_that_went_elsewhere_is_refused(make_repo, tmp_path: Path, ice) -> None:
    repo = make_repo(virtual_sources={str(tmp_path / "src"): {}})
    s = repo.writable_session("main")
    zarr.open_group(s.store, mode="w").attrs["mine"] = True
    s.commit("the lake's own work")
    before = (repo.branches(), repo.tags(), repo.log())
    with pytest.raises(zarrlake.InvalidInputError, match="ref_prefix='icechunk/'"):
        zarrlake.import_icechunk(repo, tmp_path / "ice")
    assert (repo.branches(), repo.tags(), repo.log()) == before
    result = zarrlake.import_icechunk(repo, tmp_path / "ice", ref_prefix="icechunk/")
    assert sorted(result.branches) == ["icechunk/dev", "icechunk/main"]
    assert list(result.tags) == ["icechunk/v1"]
    assert repo.log() == before[2]


def test_references_outside_the_allowed_locations_change_nothing(tmp_path: Path, ice) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    before = (repo.branches(), repo.log())
    with pytest.raises(zarrlake.VirtualSourceError, match="allow_virtual_source"):
        zarrlake.import_icechunk(repo, tmp_path / "ice")
    assert (repo.branches(), repo.tags(), repo.log()) == (*before[:1], {}, before[1])


def test_an_unknown_format_version_is_refused(tmp_path: Path, ice) -> None:
    info = tmp_path / "ice" / "repo"
    data = bytearray(info.read_bytes())
    assert data[:12] == "ICE🧊CHUNK".encode()
    data[36] = 9  # the format version, after the magic and the writer's name
    info.write_bytes(bytes(data))
    repo = _lake(tmp_path)
    before = (repo.branches(), repo.log())
    with pytest.raises(zarrlake.InvalidInputError, match="format version 9"):
        zarrlake.import_icechunk(repo, tmp_path / "ice")
    assert (repo.branches(), repo.log()) == before


def test_no_repository_there_is_not_found(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    with pytest.raises(zarrlake.NotFoundError, match="no Icechunk repository"):
        zarrlake.import_icechunk(repo, tmp_path / "nothing")


@pytest.mark.slow
def test_a_crash_in_the_middle_leaves_the_lake_as_it_was(tmp_path: Path, ice) -> None:
    repo = _lake(tmp_path)
    before = (repo.branches(), repo.tags(), repo.log())
    code = (
        "import sys, zarrlake; "
        "zarrlake.import_icechunk(zarrlake.Repo.open(sys.argv[1]), sys.argv[2])"
    )
    env = {**os.environ, "ZARRLAKE_CRASH_AT": "commit.in_tx"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "lake"), str(tmp_path / "ice")],
        env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    again = zarrlake.Repo.open(tmp_path / "lake")
    assert (again.branches(), again.tags(), again.log()) == before
    assert again.fsck().ok
    assert len(zarrlake.import_icechunk(again, tmp_path / "ice").commits) == 3


def test_a_repository_on_s3_is_imported(tmp_path: Path, s3_endpoint: str) -> None:
    storage = icechunk.s3_storage(
        bucket="lake", prefix=f"ice-{os.getpid()}-{tmp_path.name}", endpoint_url=s3_endpoint,
        allow_http=True, region="us-east-1", access_key_id="testing", secret_access_key="testing",
    )  # fmt: skip
    ic_repo = icechunk.Repository.create(storage)
    s = ic_repo.writable_session("main")
    data = np.arange(600, dtype="f8")
    zarr.create_array(s.store, name="x", shape=(600,), chunks=(200,), dtype="f8")[:] = data
    snapshot = s.commit("on s3")
    repo = zarrlake.Repo.create(tmp_path / "lake")
    result = zarrlake.import_icechunk(repo, storage)
    assert list(result.commits) == [snapshot]
    assert result.copied == 3
    np.testing.assert_array_equal(
        zarr.open_array(repo.readonly_session().store, path="x", mode="r")[:], data
    )


def test_deleted_arrays_and_chunks_are_deleted_in_the_commit(tmp_path: Path) -> None:
    path = tmp_path / "ice"
    ic_repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    s = ic_repo.writable_session("main")
    g = zarr.group(s.store)
    g.create_array("gone", shape=(4,), chunks=(2,), dtype="i4")[:] = 1
    kept = g.create_array("kept", shape=(600,), chunks=(200,), dtype="f8", fill_value=0)
    kept[:] = 5.0
    s.commit("two arrays")
    s = ic_repo.writable_session("main")
    g = zarr.open_group(s.store)
    del g["gone"]
    zarr.open_array(s.store, path="kept")[200:400] = 0.0  # equal to the fill value: deleted
    s.commit("drop one array and one chunk")
    repo = zarrlake.Repo.create(tmp_path / "lake")
    zarrlake.import_icechunk(repo, path)
    node = repo.diff("main~1", "main")
    assert node["gone"].status == "removed"
    assert node["kept"].chunks_removed == {(1,)}
    ours = zarr.open_group(repo.readonly_session().store, mode="r")
    assert sorted(ours.array_keys()) == ["kept"]
    assert list(ours["kept"][199:201]) == [5.0, 0.0]  # type: ignore[index]
