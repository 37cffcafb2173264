"""Repo and store behaviour a user relies on, on SQLite and PostgreSQL catalogs."""

from __future__ import annotations

import os
import pickle
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import object_files, unique
from zarrlake.catalog.schema import SCHEMA_VERSION
from zarrlake.model.manifest import SHARD_TARGET
from zarrlake.objects import PACK_CHUNK_LIMIT
from zarrlake.objects.packs import parse_pack
from zarrlake.testing import LakeProbe


def _write(repo: zarrlake.Repo, values: np.ndarray, path: str = "a", chunks: int = 4) -> str:
    s = repo.writable_session()
    g = zarr.open_group(s.store)
    if path in g:
        arr = g[path]
    else:
        arr = g.create_array(path, shape=values.shape, chunks=(chunks,), dtype=values.dtype)
    arr[:] = values
    return s.commit(f"write {path}")


def _read(repo: zarrlake.Repo, path: str = "a", **ref: str) -> np.ndarray:
    return np.asarray(zarr.open_array(repo.readonly_session(**ref).store, path=path, mode="r")[:])


@pytest.mark.usefixtures("packs_by_size")
def test_embedded_default_creates_sqlite_catalog_and_chunk_dir(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    _write(repo, np.random.default_rng(0).random(400), chunks=100)
    assert (tmp_path / "lake" / "catalog.db").is_file()
    objects = list((tmp_path / "lake" / "chunks").rglob("*"))
    assert sum(1 for p in objects if p.is_file()) == 1  # 4 incompressible 800-byte chunks, packed


def test_open_finds_repo_and_data_in_a_new_process_image(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    commit = _write(repo, np.arange(10.0))
    again = pickle.loads(pickle.dumps(zarrlake.Repo.open(tmp_path / "lake")))
    assert again.resolve("main") == commit
    np.testing.assert_array_equal(_read(again, commit=commit), np.arange(10.0))


def test_open_missing_repo_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(zarrlake.NotFoundError, match=r"Repo\.create"):
        zarrlake.Repo.open(tmp_path / "nothing-here")
    assert not (tmp_path / "nothing-here").exists()


def test_create_twice_is_refused(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    with pytest.raises(zarrlake.AlreadyExistsError):
        zarrlake.Repo.create(catalog=repo.config.catalog, storage=repo.storage, name=repo.name)


def test_one_catalog_holds_many_independent_repos(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    first, second = make_repo(), make_repo()
    _write(first, np.full(8, 1.0))
    _write(second, np.full(8, 2.0))
    assert {first.name, second.name} <= set(LakeProbe(first).repos())
    np.testing.assert_array_equal(_read(first), np.full(8, 1.0))
    np.testing.assert_array_equal(_read(second), np.full(8, 2.0))
    assert len(first.log()) == len(second.log()) == 2


def test_newer_catalog_schema_is_refused(tmp_path: Path) -> None:
    zarrlake.Repo.create(tmp_path / "lake")
    db = sqlite3.connect(tmp_path / "lake" / "catalog.db")
    db.execute(
        "UPDATE zl_info SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
    )
    db.commit()
    db.close()
    from zarrlake.catalog import Catalog

    with pytest.raises(zarrlake.SchemaVersionError, match="newer than this zarrlake"):
        Catalog(f"sqlite:///{tmp_path / 'lake' / 'catalog.db'}")


def test_bad_catalog_url_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(zarrlake.CatalogError, match="catalog URL"):
        zarrlake.Repo.create(catalog="nosuchdb://x", storage=str(tmp_path))


def test_commit_records_metadata_author_and_catalog_time(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    before = LakeProbe(repo).catalog.clock()
    s = repo.writable_session(author="ana")
    zarr.open_group(s.store).create_array("a", shape=(2,), dtype="i4")[:] = 1
    commit = s.commit("first write", metadata={"source": "station-a"})
    info = repo.log("main")[0]
    assert (info.id, info.author, info.message, info.metadata) == (
        commit,
        "ana",
        "first write",
        {"source": "station-a"},
    )
    assert info.created_at.timestamp() >= before
    assert info.parents == (repo.log("main")[1].id,)


def test_empty_commit_refused_unless_asked(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    s = repo.writable_session()
    with pytest.raises(zarrlake.EmptyCommitError):
        s.commit("nothing")
    commit = s.commit("nothing, on purpose", allow_empty=True)
    assert repo.resolve("main") == commit


def test_committed_session_refuses_writes_but_reads_its_commit(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    arr = zarr.open_group(s.store).create_array("a", shape=(4,), chunks=(2,), dtype="i4")
    arr[:] = 7
    s.commit("w")
    with pytest.raises(zarrlake.SessionClosedError):
        s.commit("again")
    with pytest.raises(zarrlake.SessionClosedError):
        arr[:] = 8
    np.testing.assert_array_equal(zarr.open_array(s.store, path="a", mode="r")[:], [7] * 4)


def test_invalid_metadata_is_refused_and_nothing_is_staged(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    store = s.store
    from zarr.core.buffer import cpu
    from zarr.core.sync import sync

    with pytest.raises(zarrlake.InvalidMetadataError, match="zarr_format"):
        sync(store.set("g/zarr.json", cpu.Buffer.from_bytes(b'{"node_type": "group"}')))
    with pytest.raises(zarrlake.InvalidMetadataError, match="JSON"):
        sync(store.set("g/zarr.json", cpu.Buffer.from_bytes(b"\xff\xfe")))
    assert not s.has_changes


def test_hostile_keys_are_refused(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    store = repo.writable_session().store
    from zarr.core.buffer import cpu, default_buffer_prototype
    from zarr.core.sync import sync

    for key in ("../etc/passwd", "/abs", "a//b", "a/./b", "a\\b", "a\x00b"):
        with pytest.raises(zarrlake.InvalidKeyError):
            sync(store.set(key, cpu.Buffer.from_bytes(b"x")))
        with pytest.raises(zarrlake.InvalidKeyError):
            sync(store.get(key, default_buffer_prototype()))


def test_fill_value_chunk_delete_is_a_tombstone(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = _write(repo, np.arange(1, 9, dtype="i4"))
    s = repo.writable_session()
    arr = zarr.open_array(s.store, path="a")
    arr[0:4] = 0  # equals the fill value: zarr deletes the chunk key
    keys = set(zarr.core.sync.sync(_collect(s.store.list_prefix("a/c/"))))
    assert keys == {"a/c/1"}
    second = s.commit("zero the first chunk")
    np.testing.assert_array_equal(_read(repo, commit=second), [0, 0, 0, 0, 5, 6, 7, 8])
    np.testing.assert_array_equal(_read(repo, commit=first), np.arange(1, 9))


async def _collect(it: object) -> list[str]:
    return [k async for k in it]  # type: ignore[attr-defined]


def test_overwriting_an_array_drops_its_old_chunks(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _write(repo, np.arange(16, dtype="i4"))
    s = repo.writable_session()
    g = zarr.open_group(s.store)
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i4", overwrite=True)[:] = 9
    commit = s.commit("replace a")
    np.testing.assert_array_equal(_read(repo, commit=commit), [9, 9, 9, 9])
    keys = zarr.core.sync.sync(
        _collect(repo.readonly_session(commit=commit).store.list_prefix("a/"))
    )
    assert sorted(keys) == ["a/c/0", "a/c/1", "a/zarr.json"]


@pytest.mark.usefixtures("packs_by_size")
def test_tiny_chunks_are_inline_small_ones_packed_and_large_ones_objects(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    g = zarr.open_group(s.store)
    big = PACK_CHUNK_LIMIT // 8 + 1
    g.create_array("tiny", shape=(8,), chunks=(8,), dtype="i8", compressors=None)[:] = 1
    g.create_array("small", shape=(256,), chunks=(128,), dtype="i8", compressors=None)[:] = 1
    g.create_array("large", shape=(big,), chunks=(big,), dtype="i8", compressors=None)[:] = 1
    s.commit("three arrays")
    files = sorted((p for p in Path(repo.storage).rglob("*") if p.is_file()), key=_size)
    assert [_size(p) for p in files[1:]] == [big * 8]  # the large chunk: an object of its own
    pack = files[0].read_bytes()
    (entry,) = parse_pack(bytes.fromhex(files[0].name), pack)  # two equal chunks, stored once
    assert entry.length == 128 * 8


@pytest.mark.usefixtures("packs_by_size")
def test_corrupt_chunk_raises_and_missing_chunk_is_reported(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    commit = _write(repo, np.random.default_rng(0).random(256), chunks=128)
    files = object_files(repo)
    assert len(files) == 1  # two chunks of 1 KiB in one pack
    data = bytearray(files[0].read_bytes())
    data[10] ^= 0xFF
    files[0].write_bytes(bytes(data))
    with pytest.raises(zarrlake.ChunkCorruptionError, match="fsck"):
        _read(repo, commit=commit)
    os.unlink(files[0])
    with pytest.raises(zarrlake.ObjectMissingError):
        _read(repo, commit=commit)


def test_store_pickles_as_configuration_and_joins_the_session(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    zarr.open_group(s.store).create_array("a", shape=(4,), chunks=(2,), dtype="i4")[:] = 3
    s.flush()
    clone = pickle.loads(pickle.dumps(s.store))
    assert clone == s.store
    assert len(pickle.dumps(s.store)) < 1000  # configuration, not state
    np.testing.assert_array_equal(zarr.open_array(clone, path="a", mode="r")[:], [3] * 4)


def test_abandoned_session_discards_its_changes(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    head = repo.resolve("main")
    s = repo.writable_session()
    zarr.open_group(s.store).create_array("a", shape=(4,), dtype="i4")[:] = 3
    s.abandon()
    with pytest.raises(zarrlake.SessionClosedError):
        s.commit("too late")
    assert repo.resolve("main") == head
    assert s.id not in {i.id for i in repo.sessions()}


def test_readonly_session_refuses_writes(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _write(repo, np.arange(4, dtype="i4"))
    arr = zarr.open_array(repo.readonly_session().store, path="a")
    with pytest.raises(ValueError, match="read-only"):
        arr[:] = 1
    with pytest.raises(zarrlake.ReadOnlyError):
        repo.readonly_session().commit("no")


def test_commit_cost_does_not_copy_unchanged_shards(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    arr = zarr.open_group(s.store).create_array(
        "a", shape=(3 * SHARD_TARGET,), chunks=(1,), dtype="i1"
    )
    arr[:] = 1
    first = s.commit("3 shards of refs")
    probe = LakeProbe(repo)
    reader = probe.reader
    index = reader.index(probe.root(first).nodes["a"].manifest)  # type: ignore[arg-type]
    shards = index.shard_map(reader)
    assert len(shards) == 3
    s = repo.writable_session()
    zarr.open_array(s.store, path="a")[5] = 2
    second = s.commit("one chunk")
    index2 = reader.index(probe.root(second).nodes["a"].manifest)  # type: ignore[arg-type]
    shards2 = index2.shard_map(reader)
    changed = {pos for pos in shards if shards[pos] != shards2[pos]}
    assert changed == {(0,)}
    cs = reader.changes(probe.commit(second).changes_hash)  # type: ignore[arg-type]
    assert cs.nodes["a"].chunks == frozenset({(5,)})


def test_unique_names_helper_is_unique() -> None:
    assert unique() != unique()


def test_as_of_a_commit_time_from_the_log_selects_that_commit(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    made = [_write(repo, np.full(4, float(i))) for i in range(20)]
    times = {info.id: info.created_at for info in repo.log("main")}
    for commit in made:
        assert repo.commit_at("main", times[commit]) == commit
        np.testing.assert_array_equal(
            _read(repo, branch="main", as_of=times[commit]), _read(repo, commit=commit)
        )


def test_as_of_before_the_branch_existed_is_not_found(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    first = repo.log("main")[-1].created_at
    with pytest.raises(zarrlake.NotFoundError, match="did not exist"):
        repo.readonly_session(branch="main", as_of=first - timedelta(seconds=1))


def _size(p: Path) -> int:
    return p.stat().st_size


def test_a_session_lists_its_nodes_with_their_kind(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session()
    root = zarr.open_group(s.store, mode="w")
    root.create_group("ocean").create_array("sst", shape=(4,), chunks=(2,), dtype="f4")
    expected = {"": "group", "ocean": "group", "ocean/sst": "array"}
    assert s.nodes() == expected  # staged nodes count
    c = s.commit("ocean")
    assert repo.readonly_session(commit=c).nodes() == expected
    assert repo.readonly_session(commit=repo.log()[-1].id).nodes() == {}


def test_committing_to_a_branch_deleted_meanwhile_says_so(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    repo.create_branch("dev")
    s = repo.writable_session("dev")
    zarr.open_group(s.store).create_array("a", shape=(4,), dtype="i4")[:] = 3
    repo.delete_branch("dev")
    with pytest.raises(zarrlake.SessionClosedError, match="no longer exists"):
        s.commit("lost branch")
    assert "dev" not in repo.branches()


def test_a_session_on_a_missing_branch_is_refused_and_leaves_no_session(
    repo: zarrlake.Repo,
) -> None:
    before = repo.sessions(include_closed=True)
    with pytest.raises(zarrlake.NotFoundError, match="no branch 'nope'"):
        repo.writable_session("nope")
    assert repo.sessions(include_closed=True) == before
