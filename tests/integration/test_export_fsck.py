"""repo.export (a plain Zarr v3 copy) and repo.fsck (missing and corrupt chunks)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import object_files
from zarrlake.testing import LakeProbe


def _lake(repo: zarrlake.Repo) -> tuple[str, dict[str, np.ndarray]]:
    """Nested groups, arrays of several dtypes and encodings; chunks inline (small) and in
    objects (temp and sub/counts: over 512 bytes)."""
    rng = np.random.default_rng(7)
    data = {
        "temp": rng.random((40, 30)).astype("f4"),
        "sub/counts": rng.integers(0, 1000, size=(250,)).astype("i8"),
        "sub/deep/flags": rng.integers(0, 2, size=(7, 3)).astype("bool"),
        "scalar": np.array(3.5),
    }
    s = repo.writable_session()
    g = zarr.open_group(s.store, mode="w")
    g.attrs["title"] = "lake"
    g.create_group("sub").create_group("deep").attrs["level"] = 2
    g.create_array("temp", shape=(40, 30), chunks=(16, 16), dtype="f4", fill_value=np.nan)
    g.create_array("sub/counts", shape=(250,), chunks=(100,), dtype="i8", compressors=None)
    g.create_array(
        "sub/deep/flags",
        shape=(7, 3),
        chunks=(2, 2),
        dtype="bool",
        chunk_key_encoding={"name": "v2", "separator": "."},
    )
    g.create_array("scalar", shape=(), dtype="f8")
    for path, values in data.items():
        g[path][...] = values
    g["temp"].attrs["units"] = "K"
    return s.commit("lake"), data


def _assert_same(store: Any, data: dict[str, np.ndarray]) -> None:
    g = zarr.open_group(store, mode="r")
    assert g.attrs["title"] == "lake"
    assert g["temp"].attrs["units"] == "K"
    assert g["sub/deep"].attrs["level"] == 2
    for path, values in data.items():
        np.testing.assert_array_equal(g[path][...], values)


def test_export_reads_back_identical_with_plain_zarr(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    repo = make_repo()
    commit, data = _lake(repo)
    s = repo.writable_session()
    zarr.open_array(s.store, path="temp", mode="r+")[:] = 0  # main moves on; we export `commit`
    s.commit("zero")
    report = repo.export("main~1", tmp_path / "copy", progress=False)
    assert (report.commit, report.nodes) == (commit, 7)  # 3 groups, 4 arrays
    _assert_same(zarr.storage.LocalStore(tmp_path / "copy", read_only=True), data)
    # byte for byte: the same keys and bytes as the lake's view of that commit
    lake = repo.readonly_session(commit=commit).store
    copy = zarr.storage.LocalStore(tmp_path / "copy", read_only=True)
    keys = sorted(_keys(lake))
    assert keys == sorted(_keys(copy))
    assert report.chunks == sum(1 for k in keys if not k.endswith("zarr.json"))
    for key in keys:
        assert _get(copy, key) == _get(lake, key), key


def _keys(store: Any) -> list[str]:
    from zarr.core.sync import sync

    async def collect() -> list[str]:
        return [k async for k in store.list()]

    return sync(collect())


def _get(store: Any, key: str) -> bytes:
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    buf = sync(store.get(key, default_buffer_prototype()))
    assert buf is not None
    return bytes(buf.to_bytes())


def test_export_to_a_store_object_and_to_s3(
    make_repo: Callable[..., zarrlake.Repo], s3_options: dict[str, Any]
) -> None:
    repo = make_repo()
    _, data = _lake(repo)
    memory = zarr.storage.MemoryStore()
    repo.export("main", memory)
    _assert_same(memory, data)
    url = f"s3://lake/export-{repo.name}"
    repo.export("main", url, storage_options=s3_options)
    _assert_same(zarr.storage.FsspecStore.from_url(url, storage_options=s3_options), data)


def test_export_refuses_a_non_empty_target_unless_overwrite(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    repo = make_repo()
    _, data = _lake(repo)
    target = tmp_path / "copy"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(zarrlake.AlreadyExistsError, match="overwrite=True"):
        repo.export("main", target)
    assert os.listdir(target) == ["keep.txt"]
    repo.export("main", target, overwrite=True)
    assert not (target / "keep.txt").exists()
    _assert_same(zarr.storage.LocalStore(target, read_only=True), data)


def test_export_bad_input(make_repo: Callable[..., zarrlake.Repo], tmp_path: Path) -> None:
    repo = make_repo()
    _lake(repo)
    with pytest.raises(zarrlake.NotFoundError):
        repo.export("nope", tmp_path / "x")
    with pytest.raises(zarrlake.InvalidRefError):
        repo.export("main~x", tmp_path / "x")
    with pytest.raises(zarrlake.InvalidInputError):
        repo.export("main", 42)
    with pytest.raises(zarrlake.InvalidInputError, match="read-only"):
        repo.export("main", zarr.storage.LocalStore(tmp_path / "ro", read_only=True))
    assert not (tmp_path / "x").exists()


# -- fsck --------------------------------------------------------------------------------------


def test_fsck_of_a_healthy_repo_is_ok(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _lake(repo)
    report = repo.fsck(verify=True)
    assert report.ok, report
    assert report.verified
    assert report.objects_checked == len(object_files(repo)) > 0
    assert report.commits_checked == 2


@pytest.mark.usefixtures("packs_by_size")
def test_fsck_finds_a_deleted_and_a_corrupted_chunk(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    commit, _ = _lake(repo)
    (pack,) = object_files(repo)  # the lake's chunks over 512 bytes, packed
    raw = bytearray(pack.read_bytes())
    raw[len(raw) // 4] ^= 0xFF
    pack.write_bytes(bytes(raw))

    assert repo.fsck().ok  # a quick check sees every object present
    full = repo.fsck(verify=True)
    assert [(i.kind, i.hash) for i in full.issues] == [("corrupt_object", pack.name)]
    assert [i.hash for i in full.corrupt] == [pack.name]
    assert "corrupt_object" in repr(full)

    pack.unlink()
    quick = repo.fsck()
    assert [(i.kind, i.hash) for i in quick.issues] == [("missing_object", pack.name)]
    issue = quick.issues[0]
    assert issue.commit == commit
    assert issue.path in ("temp", "sub/counts")
    assert issue.chunk is not None
    assert not quick.ok
    assert [i.hash for i in quick.missing] == [pack.name]


def test_fsck_finds_a_missing_catalog_node(make_repo: Callable[..., zarrlake.Repo]) -> None:
    import sqlalchemy as sa

    repo = make_repo()
    commit, _ = _lake(repo)
    probe = LakeProbe(repo)
    meta = probe.root(commit).nodes["temp"].meta
    blobs = probe.tables.blobs
    with probe.sql() as conn:
        conn.execute(sa.delete(blobs).where(blobs.c.repo_id == probe.repo_id, blobs.c.hash == meta))
    report = repo.fsck()
    assert [(i.kind, i.hash) for i in report.issues] == [("missing_node", meta.hex())]


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("where", ["file", "file/copy"])
def test_export_onto_a_file_is_refused_and_writes_nothing(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path, where: str, overwrite: bool
) -> None:
    repo = make_repo()
    _lake(repo)
    out = tmp_path / "out"
    out.mkdir()
    (out / "file").write_text("mine")
    with pytest.raises(zarrlake.InvalidInputError, match="export to a directory"):
        repo.export("main", out / where, overwrite=overwrite)
    assert [(p.name, p.read_text()) for p in out.iterdir()] == [("file", "mine")]


def test_export_where_nothing_can_be_written_is_a_storage_error(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _lake(repo)
    # /proc refuses new entries even to root, which file permissions would not
    with pytest.raises(zarrlake.StorageError, match="choose a target you can write to"):
        repo.export("main", "/proc/zarrlake-export")
    assert not os.path.lexists("/proc/zarrlake-export")


def _two_objects(repo: zarrlake.Repo) -> tuple[Path, Path]:
    """The lake's pack of small chunks, and a chunk too large to pack (an object of its own)."""
    _lake(repo)
    packed = object_files(repo)
    s = repo.writable_session()
    big = zarr.open_group(s.store).create_array(
        "big", shape=(40_000,), chunks=(40_000,), dtype="f8", compressors=None
    )
    big[:] = np.random.default_rng(3).random(40_000)
    s.commit("big")
    (alone,) = set(object_files(repo)) - set(packed)
    return packed[0], alone


@pytest.mark.usefixtures("packs_by_size")
@pytest.mark.parametrize("replacement", ["directory", "link loop"])
def test_fsck_reports_what_stands_where_an_object_should_be_and_goes_on(
    make_repo: Callable[..., zarrlake.Repo], replacement: str
) -> None:
    repo = make_repo()
    pack, alone = _two_objects(repo)
    pack.unlink()
    if replacement == "directory":
        pack.mkdir()
    else:
        pack.symlink_to(pack.name)  # a link to itself: reading it fails with ELOOP
    raw = bytearray(alone.read_bytes())
    raw[100] ^= 0xFF
    alone.write_bytes(bytes(raw))

    quick = repo.fsck()
    assert [(i.kind, i.hash) for i in quick.issues] == [("missing_object", pack.name)]
    full = repo.fsck(verify=True)
    assert sorted((i.kind, i.hash) for i in full.issues) == [
        ("corrupt_object", alone.name),
        ("missing_object", pack.name),
    ]
    assert full.missing[0].path in ("temp", "sub/counts")
    assert os.path.lexists(pack)  # reported, not touched


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_fsck_reports_an_object_it_cannot_read(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _, alone = _two_objects(repo)
    alone.chmod(0)
    try:
        assert repo.fsck().ok  # present: only reading finds it out
        full = repo.fsck(verify=True)
    finally:
        alone.chmod(0o644)
    assert [(i.kind, i.hash, i.path) for i in full.issues] == [
        ("unreadable_object", alone.name, "big")
    ]
    assert full.unreadable == full.issues
