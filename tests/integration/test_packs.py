"""Small chunks are packed: a write of many small chunks costs a few objects, reads come back
exact (inside the session before the pack is written, after the commit, from another process
and through S3), gc keeps a pack while any chunk in it is live and drops it once none is, and
fsck finds a damaged pack."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._gc_workers import gc_with_fault
from tests.integration._workers import Child
from zarrlake.objects import PACK_CHUNK_LIMIT
from zarrlake.objects.base import object_key
from zarrlake.objects.packs import PACK_TARGET
from zarrlake.testing import LakeProbe


def _objects(storage: Path) -> list[Path]:
    return [p for p in (storage / "chunks").rglob("*") if p.is_file()]


def _small(repo: zarrlake.Repo, values: np.ndarray, chunks: int = 4096) -> str:
    """An array of float32 chunks of ``chunks * 4`` bytes (16 KiB by default), uncompressed."""
    s = repo.writable_session()
    a = zarr.create_array(
        s.store, name="x", shape=values.shape, chunks=(chunks,), dtype="f4", compressors=None
    )
    a[:] = values
    return s.commit("small chunks")


def _read(repo: zarrlake.Repo, ref: str = "main") -> np.ndarray:
    return np.asarray(zarr.open_array(repo.readonly_session(ref).store, path="x", mode="r")[:])


pytestmark = pytest.mark.usefixtures("packs_by_size")  # the counts of packs are exact


def test_a_thousand_small_chunks_become_a_few_objects_and_read_back(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, catalog_url: str
) -> None:
    storage = tmp_path / "objects"
    repo = make_repo(storage=str(storage))
    values = np.arange(1024 * 4096, dtype="f4")  # 1,024 chunks of 16 KiB: 16 MiB
    _small(repo, values)
    assert len(_objects(storage)) == values.nbytes // PACK_TARGET  # 8 of 2 MiB, not 1,024
    np.testing.assert_array_equal(_read(repo), values)
    again = zarrlake.Repo.open(catalog=catalog_url, name=repo.name)
    np.testing.assert_array_equal(_read(again), values)
    assert again.fsck(verify=True).ok


def test_a_session_reads_its_own_packed_writes_before_the_pack_is_written(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    storage = tmp_path / "objects"
    repo = make_repo(storage=str(storage))
    s = repo.writable_session()
    a = zarr.create_array(
        s.store, name="x", shape=(400,), chunks=(100,), dtype="f8", compressors=None
    )
    a[:] = np.arange(400.0)
    a[50:150] += 1000  # read-modify-write of two partial chunks of 800 bytes
    assert _objects(storage) == []  # the pack is still in memory
    expected = np.arange(400.0)
    expected[50:150] += 1000
    np.testing.assert_array_equal(a[:], expected)
    s.commit("edits")
    assert len(_objects(storage)) == 1
    np.testing.assert_array_equal(_read(repo), expected)


def test_chunks_over_the_limit_are_objects_of_their_own(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    storage = tmp_path / "objects"
    repo = make_repo(storage=str(storage))
    per_chunk = PACK_CHUNK_LIMIT // 4 + 1  # float32: one element over the limit
    values = np.arange(3 * per_chunk, dtype="f4")
    _small(repo, values, chunks=per_chunk)
    assert len(_objects(storage)) == 3
    np.testing.assert_array_equal(_read(repo), values)


def _rewrite(repo: zarrlake.Repo, sl: slice, value: float) -> str:
    s = repo.writable_session()
    zarr.open_array(s.store, path="x", mode="r+")[sl] = value
    return s.commit(f"x[{sl.start}:{sl.stop}] = {value}")


def test_gc_keeps_a_pack_while_most_of_it_is_live_and_drops_it_after(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    storage = tmp_path / "objects"
    repo = make_repo(storage=str(storage))
    _small(repo, np.arange(8 * 4096, dtype="f4"))  # 8 chunks of 16 KiB in one pack
    (pack,) = _objects(storage)
    _rewrite(repo, slice(0, 3 * 4096), -1)
    repo.expire(older_than=timedelta(0))
    report = repo.gc(grace=timedelta(0))
    assert pack.exists()  # 5 of its 8 chunks are live: kept whole, not repacked
    assert report.packs_repacked == 0
    _rewrite(repo, slice(3 * 4096, None), -2)
    repo.expire(older_than=timedelta(0))
    report = repo.gc(grace=timedelta(0))
    assert not pack.exists()
    assert report.objects_deleted == 1
    assert set(np.unique(_read(repo)).tolist()) == {-1.0, -2.0}
    assert repo.fsck(verify=True).ok


@pytest.mark.parametrize("content_hash", ["blake3", "sha256"])
def test_gc_repacks_a_mostly_dead_pack_and_old_readers_follow_the_moves(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, content_hash: str
) -> None:
    storage = tmp_path / "objects"
    # repack copies only the chunks that match the repo's hash: with the wrong one, none would
    repo = make_repo(storage=str(storage), content_hash=content_hash)
    values = np.arange(8 * 4096, dtype="f4")
    _small(repo, values)
    (pack,) = _objects(storage)
    _rewrite(repo, slice(0, 7 * 4096), -1)  # one chunk of eight stays live in the first pack
    reader = repo.readonly_session()  # resolved its refs before the repack
    writer = repo.writable_session()
    repo.expire(older_than=timedelta(0))
    report = repo.gc(grace=timedelta(0))
    assert report.packs_repacked == 1
    assert not pack.exists()
    assert max(p.stat().st_size for p in _objects(storage)) <= 7 * 4096 * 4 + 1024
    expected = np.full(8 * 4096, -1, dtype="f4")
    expected[7 * 4096 :] = values[7 * 4096 :]
    np.testing.assert_array_equal(_read(repo), expected)
    np.testing.assert_array_equal(zarr.open_array(reader.store, path="x", mode="r")[:], expected)
    # a session begun before the repack rewrites the same bytes: its row names the old pack
    zarr.open_array(writer.store, path="x", mode="r+")[7 * 4096 :] = values[7 * 4096 :]
    zarr.open_array(writer.store, path="x", mode="r+")[:4096] = 5
    writer.commit("rewrite the moved chunk with its own bytes")  # not refused: it was moved
    expected[:4096] = 5
    np.testing.assert_array_equal(_read(repo), expected)
    assert repo.fsck(verify=True).ok
    # once no ref names the old pack, its moves are forgotten
    _rewrite(repo, slice(7 * 4096, None), -3)
    repo.expire(older_than=timedelta(0))
    repo.gc(grace=timedelta(0))
    assert LakeProbe(repo).catalog.gc.moves() == {}
    assert repo.fsck(verify=True).ok


@pytest.mark.slow
def test_gc_killed_after_repacking_then_rerun_completes(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, catalog_url: str
) -> None:
    storage = tmp_path / "objects"
    repo = make_repo(storage=str(storage))
    _small(repo, np.arange(8 * 4096, dtype="f4"))
    _rewrite(repo, slice(0, 7 * 4096), -1)
    repo.expire(older_than=timedelta(0))
    expected = _read(repo)
    child = Child(gc_with_fault, catalog_url, repo.name, "repacked").start()
    child.proc.join(timeout=120)
    assert child.proc.exitcode == -signal.SIGKILL
    assert len(_objects(storage)) == 3  # the killed run's new pack: garbage, no move recorded
    report = repo.gc(grace=timedelta(0))
    assert report.packs_repacked == 1
    np.testing.assert_array_equal(_read(repo), expected)
    assert repo.fsck(verify=True).ok
    assert len(_objects(storage)) == 2  # the second pack and the rerun's new one


@pytest.mark.parametrize("damage", ["chunk", "index"])
def test_fsck_finds_a_damaged_pack_and_names_a_chunk_in_it(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, damage: str
) -> None:
    storage = tmp_path / "objects"
    repo = make_repo(storage=str(storage))
    commit = _small(repo, np.arange(4 * 4096, dtype="f4"))
    (pack,) = _objects(storage)
    raw = bytearray(pack.read_bytes())
    raw[100 if damage == "chunk" else -3] ^= 0xFF
    pack.write_bytes(bytes(raw))
    report = repo.fsck(verify=True)
    (issue,) = report.issues
    assert issue.kind == "corrupt_object"
    assert issue.hash == pack.name
    assert issue.commit == commit
    assert issue.path == "x"
    if damage == "chunk":
        with pytest.raises(zarrlake.ChunkCorruptionError):
            _read(repo)


def test_s3_packs_small_chunks_and_reads_them_back(
    catalog_url: str, s3_options: dict[str, object]
) -> None:
    import s3fs

    prefix = f"lake/{uuid.uuid4().hex}"
    repo = zarrlake.Repo.create(
        catalog=catalog_url,
        storage=f"s3://{prefix}",
        name=f"packs-{uuid.uuid4().hex[:8]}",
        storage_options=s3_options,
    )
    values = np.arange(512 * 4096, dtype="f4")  # 512 chunks of 16 KiB
    _small(repo, values)
    fs = s3fs.S3FileSystem(**s3_options)
    assert len(fs.find(f"{prefix}/chunks")) == values.nbytes // PACK_TARGET
    np.testing.assert_array_equal(_read(repo), values)
    assert repo.fsck(verify=True).ok


def test_packs_need_no_new_object_key_layout() -> None:
    # a pack is an object of the chunk namespace, so listing, gc and export find it as one
    assert object_key(b"\x01" * 32).startswith("chunks/01/")
