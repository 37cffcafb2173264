"""Importing an existing Zarr v3 store in one commit, by reference or by copy; stores that
cannot be imported, and a crash in the middle, leave the lake as it was."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.model import manifest
from zarrlake.testing import LakeProbe
from zarrlake.virtual import zarr_import
from zarrlake.virtual.listing import StoreFile, StoreLister


def _store(path: Path) -> np.ndarray:
    data = np.arange(24 * 30, dtype="f8").reshape(24, 30)
    g = zarr.open_group(str(path), mode="w", zarr_format=3)
    g.attrs["title"] = "existing"
    a = g.create_array("grid/temp", shape=data.shape, chunks=(8, 10), dtype="f8")
    a[:] = data
    g.create_array("count", shape=(5,), chunks=(2,), dtype="i4")[:] = np.arange(5)
    return data


def _read(repo: zarrlake.Repo) -> tuple[np.ndarray, np.ndarray, object]:
    g = zarr.open_group(repo.readonly_session().store, mode="r")
    return g["grid/temp"][:], g["count"][:], g.attrs["title"]  # type: ignore[index]


@pytest.mark.parametrize("copy", [False, True])
def test_a_store_is_imported_in_one_commit(make_repo, tmp_path: Path, copy: bool) -> None:
    data = _store(tmp_path / "store.zarr")
    repo = make_repo(virtual_sources={str(tmp_path / "store.zarr"): {}})
    commit = zarrlake.import_zarr(repo, str(tmp_path / "store.zarr"), copy=copy)
    assert repo.resolve("main") == commit
    temp, count, title = _read(repo)
    np.testing.assert_array_equal(temp, data)
    np.testing.assert_array_equal(count, np.arange(5))
    assert title == "existing"
    # by reference every chunk names a file of the store; copied, none does
    assert repo.fsck().sources_checked == (0 if copy else 12)
    # new writes go into the lake as usual
    s = repo.writable_session()
    zarr.open_array(s.store, path="grid/temp")[0:8, 0:10] = -1
    s.commit("edit")
    assert _read(repo)[0][0, 0] == -1
    assert (tmp_path / "store.zarr" / "grid" / "temp" / "c" / "0" / "0").exists()


def test_an_import_by_reference_needs_an_allowed_location(make_repo, tmp_path: Path) -> None:
    _store(tmp_path / "store.zarr")
    repo = make_repo()
    before = repo.log()
    with pytest.raises(zarrlake.VirtualSourceError, match="allow_virtual_source"):
        zarrlake.import_zarr(repo, str(tmp_path / "store.zarr"))
    assert repo.log() == before


def test_stores_that_cannot_be_imported_change_nothing(make_repo, tmp_path: Path) -> None:
    v2 = tmp_path / "v2.zarr"
    zarr.open_array(str(v2), mode="w", shape=(4,), chunks=(2,), dtype="i4", zarr_format=2)[:] = 1
    doc = json.loads((v2 / ".zarray").read_text())
    (v2 / ".zarray").write_text(json.dumps({**doc, "dtype": "|O", "filters": [{"id": "pickle"}]}))
    odd = tmp_path / "odd.zarr"
    _store(odd)
    doc = json.loads((odd / "count" / "zarr.json").read_text())
    doc["codecs"].append({"name": "made-up-codec"})
    (odd / "count" / "zarr.json").write_text(json.dumps(doc))
    repo = make_repo(virtual_sources={str(tmp_path): {}})
    before = (repo.log(), repo.sessions())
    with pytest.raises(zarrlake.InvalidMetadataError, match="object dtype"):
        zarrlake.import_zarr(repo, str(v2))
    with pytest.raises(zarrlake.InvalidMetadataError, match="made-up-codec"):
        zarrlake.import_zarr(repo, str(odd))
    assert (repo.log(), repo.sessions()) == before


def test_an_import_holds_one_batch_of_references_in_memory(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store.zarr"
    arr = zarr.create_array(str(store), shape=(60,), chunks=(1,), dtype="i4", fill_value=-1)
    arr[:] = np.arange(60)
    monkeypatch.setattr(zarr_import, "BATCH", 4)
    repo = make_repo(virtual_sources={str(store): {}})
    held: list[int] = []
    open_session = repo.writable_session

    def writable_session(*args: object, **kwargs: object) -> zarrlake.WritableSession:
        session = open_session(*args, **kwargs)  # type: ignore[arg-type]
        put = session.put_virtual_refs

        def put_virtual_refs(*a: object, **k: object) -> int:
            n = put(*a, **k)  # type: ignore[arg-type]
            held.append(session.rows_in_memory)
            return n

        monkeypatch.setattr(session, "put_virtual_refs", put_virtual_refs)
        return session

    monkeypatch.setattr(repo, "writable_session", writable_session)
    zarrlake.import_zarr(repo, str(store), progress=False)
    assert len(held) == 15  # 60 chunks staged 4 at a time
    assert max(held) <= 4 + 1  # one batch, and the array's zarr.json
    np.testing.assert_array_equal(zarr.open_array(repo.readonly_session().store)[:], np.arange(60))


@pytest.mark.slow
@pytest.mark.parametrize("point", ["stage.in_tx", "commit.in_tx"])
def test_a_crash_in_the_middle_of_an_import_leaves_the_lake_as_it_was(
    tmp_path: Path, point: str
) -> None:
    data = _store(tmp_path / "store.zarr")
    repo = zarrlake.Repo.create(
        tmp_path / "lake", virtual_sources={str(tmp_path / "store.zarr"): {}}
    )
    before = (repo.branches(), repo.log())
    code = (
        "import sys, zarrlake; "
        "repo = zarrlake.Repo.open(sys.argv[1]); "
        "zarrlake.import_zarr(repo, sys.argv[2])"
    )
    env = {**os.environ, "ZARRLAKE_CRASH_AT": point}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "lake"), str(tmp_path / "store.zarr")],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    again = zarrlake.Repo.open(tmp_path / "lake")
    assert (again.branches(), again.log()) == before
    assert again.fsck().ok
    zarrlake.import_zarr(again, str(tmp_path / "store.zarr"))  # and it can be done again
    np.testing.assert_array_equal(_read(again)[0], data)


def test_a_store_on_s3_is_imported_by_reference(
    tmp_path: Path, s3_endpoint: str, s3_options: dict[str, object]
) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)  # type: ignore[arg-type]
    local = tmp_path / "store.zarr"
    data = _store(local)
    prefix = f"lake/import-{os.getpid()}-{tmp_path.name}"
    fs.put(str(local), prefix, recursive=True)
    options = {k: v for k, v in s3_options.items() if k != "skip_instance_cache"}
    repo = zarrlake.Repo.create(tmp_path / "lake", virtual_sources={f"s3://{prefix}/": options})
    zarrlake.import_zarr(repo, f"s3://{prefix}", storage_options=options)
    np.testing.assert_array_equal(_read(repo)[0], data)
    assert LakeProbe(repo).object_hashes() == set()


def test_an_import_stages_references_in_shard_position_order(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However the store lists its chunks, they reach the session grouped by shard position,
    in position order: a position is staged whole or in consecutive batches, never merged
    again with a batch staged long before (which made large imports quadratic)."""
    monkeypatch.setattr(manifest, "SHARD_TARGET", 16)  # 8 x 8 chunks: 4 positions of 2 x 8
    store = tmp_path / "store.zarr"
    data = np.arange(64, dtype="i4").reshape(8, 8)
    zarr.create_array(str(store), shape=(8, 8), chunks=(1, 1), dtype="i4", fill_value=-1)[:] = data
    listed = StoreLister.files

    def shuffled(self: StoreLister) -> Iterator[StoreFile]:
        files = list(listed(self))
        random.Random(7).shuffle(files)
        return iter(files)

    monkeypatch.setattr(StoreLister, "files", shuffled)
    monkeypatch.setattr(zarr_import, "BATCH", 8)
    repo = make_repo(virtual_sources={str(store): {}})
    handed: list[list[int]] = []
    open_session = repo.writable_session

    def writable_session(*args: object, **kwargs: object) -> zarrlake.WritableSession:
        session = open_session(*args, **kwargs)  # type: ignore[arg-type]
        put = session.put_virtual_refs

        def put_virtual_refs(path: str, refs: list[tuple[Any, ...]], **k: Any) -> int:
            handed.append([ref[0][0] // 2 for ref in refs])  # the shard row of each
            return put(path, refs, **k)

        monkeypatch.setattr(session, "put_virtual_refs", put_virtual_refs)
        return session

    monkeypatch.setattr(repo, "writable_session", writable_session)
    zarrlake.import_zarr(repo, str(store), progress=False)
    order = [pos for call in handed for pos in call]
    assert len(order) == 64
    assert order == sorted(order)
    assert [sorted(set(call)) for call in handed] == [[0], [0], [1], [1], [2], [2], [3], [3]]
    np.testing.assert_array_equal(zarr.open_array(repo.readonly_session().store)[:], data)


def test_a_listing_leaves_out_what_lies_below_a_leaf_folder(tmp_path: Path) -> None:
    """The metadata pass of an import walks a local store without entering an array's
    chunk folders: ``leaf`` says which folders those are."""
    _store(tmp_path / "store.zarr")
    lister = StoreLister(zarr_import.store_url(str(tmp_path / "store.zarr")))
    asked: list[tuple[str, set[str]]] = []

    def leaf(folder: str, docs: set[str]) -> bool:
        asked.append((folder, docs))
        return folder == "grid/temp"

    keys = set(lister.file_keys(leaf))
    assert "grid/temp/zarr.json" in keys
    assert not any(k.startswith("grid/temp/c/") for k in keys)
    assert "count/c/0" in keys  # other folders are walked
    assert ("grid/temp", {"zarr.json"}) in asked
    assert not any(folder.startswith("grid/temp/") for folder, _ in asked)
    assert len({f.key for f in lister.files()} - keys) == 9  # its 3 x 3 chunks
