"""Cases that used to lose or corrupt data silently: each is now refused or safe."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake


def _lake_with_array(path: Path, value: int = 1) -> zarrlake.Repo:
    repo = zarrlake.Repo.create(path)
    s = repo.writable_session()
    arr = zarr.open_group(s.store, mode="w").create_array(
        "a", shape=(512,), chunks=(256,), dtype="i8", compressors=None
    )
    arr[:] = value  # 2 KiB chunks: stored as objects, not inline
    s.commit("data")
    return repo


def _values(repo: zarrlake.Repo) -> np.ndarray:
    return np.asarray(zarr.open_array(repo.readonly_session().store, path="a", mode="r")[:])


@pytest.mark.parametrize("solver", ["Fail", "theirs ", None, "mine", 1])
def test_unknown_solver_is_refused_and_the_other_writer_keeps_its_chunk(
    make_repo: Callable[..., zarrlake.Repo], solver: object
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(8,), chunks=(4,), dtype="i8")
    s.commit("create")
    mine, theirs = repo.writable_session(), repo.writable_session()
    zarr.open_array(mine.store, path="a", mode="r+")[:4] = 1
    zarr.open_array(theirs.store, path="a", mode="r+")[:4] = 2
    theirs.commit("theirs")
    head = repo.resolve("main")
    with pytest.raises(zarrlake.InvalidInputError, match="solver"):
        mine.commit("mine", solver=solver)  # type: ignore[arg-type]
    with pytest.raises(zarrlake.InvalidInputError, match="solver"):
        mine.rebase(solver)  # type: ignore[arg-type]
    with pytest.raises(zarrlake.InvalidInputError, match="solver"):
        repo.merge("main", "main", solver=solver)  # type: ignore[arg-type]
    assert repo.resolve("main") == head
    assert list(zarr.open_array(repo.readonly_session().store, path="a")[:4]) == [2] * 4
    assert mine.closed is None  # still open: the user can choose a valid solver


@pytest.mark.parametrize("where", ["itself", "parent", "objects"])
def test_export_over_the_repo_itself_is_refused(tmp_path: Path, where: str) -> None:
    path = tmp_path / "lake"
    repo = _lake_with_array(path)
    target = {"itself": path, "parent": tmp_path, "objects": path / "chunks"}[where]
    with pytest.raises(zarrlake.InvalidInputError, match="own files"):
        repo.export("main", target, overwrite=True)
    assert (path / "catalog.db").exists()
    assert repo.fsck(verify=True).ok
    assert set(_values(zarrlake.Repo.open(path)).tolist()) == {1}


def test_export_next_to_the_repo_works(tmp_path: Path) -> None:
    repo = _lake_with_array(tmp_path / "lake")
    report = repo.export("main", tmp_path / "plain", overwrite=True)
    assert report.chunks == 2
    assert set(np.asarray(zarr.open_array(str(tmp_path / "plain"), path="a")[:]).tolist()) == {1}


def test_a_moved_lake_reads_its_chunks(tmp_path: Path) -> None:
    _lake_with_array(tmp_path / "lake", value=3)
    shutil.move(tmp_path / "lake", tmp_path / "moved")
    moved = zarrlake.Repo.open(tmp_path / "moved")
    assert set(_values(moved).tolist()) == {3}
    assert moved.fsck(verify=True).ok


def _copy_writes_and_collects(copy: str) -> None:
    repo = zarrlake.Repo.open(copy)
    s = repo.writable_session()
    zarr.open_array(s.store, path="a", mode="r+")[:] = 9
    s.commit("copy only")
    from datetime import timedelta

    repo.gc(timedelta(0))


def test_a_copied_lake_is_independent_of_the_original(tmp_path: Path) -> None:
    original = tmp_path / "lake"
    _lake_with_array(original, value=4)
    subprocess.run(["cp", "-r", str(original), str(tmp_path / "copy")], check=True)
    # in a fresh process, as a user would: write and collect garbage in the copy
    code = (
        "import sys; from tests.integration.test_data_safety import _copy_writes_and_collects;"
        f" _copy_writes_and_collects({str(tmp_path / 'copy')!r})"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])
    first = zarrlake.Repo.open(original)
    assert set(_values(first).tolist()) == {4}
    assert first.fsck(verify=True).ok  # the copy's gc deleted nothing of the original
    copy = zarrlake.Repo.open(tmp_path / "copy")
    assert set(_values(copy).tolist()) == {9}
    assert copy.fsck(verify=True).ok


def _sorted_copy(source: zarr.storage.MemoryStore, target: zarrlake.LakeStore) -> None:
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    async def copy() -> None:
        keys = sorted([k async for k in source.list()])
        assert keys.index("a/c/0") < keys.index("a/zarr.json")  # the order that lost data
        for k in keys:
            value = await source.get(k, default_buffer_prototype())
            assert value is not None
            await target.set(k, value)

    sync(copy())


def test_keys_copied_in_sorted_order_keep_their_chunks(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    source = zarr.storage.MemoryStore()
    arr = zarr.create_array(
        source, name="a", shape=(600,), chunks=(200,), dtype="i8", compressors=None
    )
    arr[:] = np.arange(600)
    repo = make_repo()
    s = repo.writable_session()
    _sorted_copy(source, s.store)
    # read-your-writes before the commit
    np.testing.assert_array_equal(zarr.open_array(s.store, path="a", mode="r")[:], np.arange(600))
    commit = s.commit("copied")
    back = zarr.open_array(repo.readonly_session(commit=commit).store, path="a", mode="r")
    np.testing.assert_array_equal(back[:], np.arange(600))
    nodes = {n.path: n for n in repo.diff(repo.resolve("main~1"), commit).nodes}
    assert nodes["a"].chunks_added == {(0,), (1,), (2,)}
    assert repo.fsck(verify=True).ok


def _objects_dir(path: Path) -> list[Path]:
    return sorted(p for p in (path / "chunks").rglob("*") if p.is_file())


def test_a_flipped_byte_inside_a_shard_is_an_error_not_data(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session()
    arr = zarr.open_group(s.store, mode="w").create_array(
        "a", shape=(4096,), chunks=(256,), shards=(4096,), dtype="i8", compressors=None
    )
    arr[:] = np.arange(4096)
    s.commit("one shard of 16 chunks")
    (shard,) = _objects_dir(tmp_path / "lake")
    data = bytearray(shard.read_bytes())
    data[300 * 8] ^= 0x01  # inside the second inner chunk, not the shard index
    shard.chmod(0o644)
    shard.write_bytes(bytes(data))
    fresh = zarrlake.Repo.open(tmp_path / "lake")  # nothing cached
    reader = zarr.open_array(fresh.readonly_session().store, path="a", mode="r")
    with pytest.raises(zarrlake.ChunkCorruptionError):
        reader[256:512]  # a byte-range read of the shard object
    unchecked = zarrlake.Repo.open(tmp_path / "lake", verify_reads=False)
    wrong = zarr.open_array(unchecked.readonly_session().store, path="a", mode="r")[256:512]
    assert wrong[300 - 256] != 300  # the corruption is real: only verification catches it
