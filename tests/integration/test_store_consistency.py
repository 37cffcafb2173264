"""The store's listings agree with its reads on both catalogs: no key listed twice, none listed
that reads as nothing; and ``has_changes`` says what a commit would do. The general property
is tests/property/test_store_listing.py; these are the cases that were seen."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import LocalStore

import zarrlake
from zarrlake.store import LakeStore

PROTO = default_buffer_prototype()


def _array(separator: str = "/", shape: tuple[int, ...] = (4,)) -> bytes:
    return json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(shape),
            "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2] * len(shape)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": separator}},
            "fill_value": 0,
            "codecs": [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}],
        }
    ).encode()


def _set(store: LakeStore, key: str, value: bytes) -> None:
    sync(store.set(key, PROTO.buffer.from_bytes(value)))


async def _collect(it: AsyncIterator[str]) -> list[str]:
    return [k async for k in it]


def _view(store: Store) -> dict[str, bytes]:
    """What the store lists, each key read back; every listing must agree."""
    keys = sync(_collect(store.list()))
    assert len(keys) == len(set(keys)), keys
    assert sorted(sync(_collect(store.list_prefix("a/")))) == sorted(
        k for k in keys if k.startswith("a/")
    )
    assert sorted(sync(_collect(store.list_dir("a")))) == sorted(
        {k[2:].split("/", 1)[0] for k in keys if k.startswith("a/")}
    )
    out = {}
    for k in keys:
        buf = sync(store.get(k, PROTO))
        assert buf is not None, f"{k} is listed but reads as nothing"
        out[k] = buf.to_bytes()
    return out


def _committed(repo: zarrlake.Repo, session: zarrlake.WritableSession) -> dict[str, bytes]:
    return _view(repo.readonly_session(commit=session.commit("x")).store)


def test_a_chunk_written_before_its_array_and_again_after_is_listed_once(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "a/c/0", b"before")  # a copy writes keys in sorted order: chunks first
    _set(s.store, "a/zarr.json", _array())
    assert _view(s.store)["a/c/0"] == b"before"
    _set(s.store, "a/c/0", b"after")
    assert _view(s.store) == {"a/c/0": b"after", "a/zarr.json": _array()}
    assert _committed(repo, s) == {"a/c/0": b"after", "a/zarr.json": _array()}


def test_a_new_chunk_key_separator_lists_each_chunk_once(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "a/zarr.json", _array("/"))
    _set(s.store, "a/c/1", b"chunk")
    _set(s.store, "a/c.1", b"plain")  # not a chunk key of a "/" array: a plain key
    s.commit("slash")
    s = repo.writable_session()
    _set(s.store, "a/zarr.json", _array("."))  # the array re-created with "." keys
    # chunk 1 is now spelled a/c.1, which hides the plain key of that name
    expected = {"a/c.1": b"chunk", "a/zarr.json": _array(".")}
    assert _view(s.store) == expected
    assert _committed(repo, s) == expected


def test_a_committed_plain_key_that_an_array_claims_is_not_listed_as_nothing(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "a/c/0", b"plain")
    s.commit("a plain key")
    s = repo.writable_session()
    _set(s.store, "a/zarr.json", _array())
    assert _view(s.store) == {"a/zarr.json": _array()}  # hidden behind the array's chunk 0
    _set(s.store, "a/c/1", b"chunk")
    assert _committed(repo, s) == {"a/c/1": b"chunk", "a/zarr.json": _array()}


def test_a_chunk_outside_a_shrunk_grid_is_not_listed(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "a/zarr.json", _array(shape=(6,)))
    _set(s.store, "a/c/0", b"zero")
    _set(s.store, "a/c/1", b"one")
    s.commit("three chunks, two written")
    s = repo.writable_session()
    _set(s.store, "a/c/2", b"two")
    _set(s.store, "a/zarr.json", _array(shape=(2,)))  # chunks 1 and 2 are outside the grid now
    expected = {"a/c/0": b"zero", "a/zarr.json": _array(shape=(2,))}
    assert _view(s.store) == expected
    assert _committed(repo, s) == expected


def test_chunks_staged_before_the_array_changed_its_dimensions_are_dropped(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "a/zarr.json", _array(shape=(4,)))
    _set(s.store, "a/c/0", b"one-d")
    sync(s.store.delete("a/c/1"))
    _set(s.store, "a/zarr.json", _array(shape=(2, 4)))
    expected = {"a/zarr.json": _array(shape=(2, 4))}
    assert _view(s.store) == expected
    assert _committed(repo, s) == expected  # the commit used to fail on the 1-d keys


def test_dropping_the_root_keeps_plain_keys_readable(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "zarr.json", json.dumps({"zarr_format": 3, "node_type": "group"}).encode())
    _set(s.store, "notes.txt", b"plain")
    s.commit("root and a plain key")
    s = repo.writable_session()
    sync(s.store.delete("zarr.json"))
    assert _view(s.store) == {"notes.txt": b"plain"}
    assert _committed(repo, s) == {"notes.txt": b"plain"}


def _rewrite_same_chunk(store: LakeStore) -> None:
    _set(store, "a/c/0", b"x" * 700)


def _write_then_delete_chunk(store: LakeStore) -> None:
    _set(store, "a/c/1", b"new")
    sync(store.delete("a/c/1"))


def _rewrite_same_metadata(store: LakeStore) -> None:
    _set(store, "a/zarr.json", _array())


def _write_then_delete_plain_key(store: LakeStore) -> None:
    _set(store, "notes.txt", b"draft")
    sync(store.delete("notes.txt"))


@pytest.mark.parametrize(
    "change",
    [
        _rewrite_same_chunk,
        _write_then_delete_chunk,
        _rewrite_same_metadata,
        _write_then_delete_plain_key,
    ],
)
def test_has_changes_is_false_exactly_when_the_commit_would_change_nothing(
    make_repo: Callable[..., zarrlake.Repo], change: Callable[[LakeStore], None]
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "a/zarr.json", _array())
    _set(s.store, "a/c/0", b"x" * 700)
    s.commit("base")
    s = repo.writable_session()
    change(s.store)
    assert not s.has_changes
    with pytest.raises(zarrlake.EmptyCommitError):
        s.commit("nothing")
    _set(s.store, "a/c/0", b"y" * 700)
    assert s.has_changes
    s.commit("something")


def test_export_copies_exactly_what_a_read_only_session_shows(
    make_repo: Callable[..., zarrlake.Repo], tmp_path: Path
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    _set(s.store, "a/c/0", b"plain")
    s.commit("a plain key")
    s = repo.writable_session()
    _set(s.store, "a/zarr.json", _array())
    _set(s.store, "a/c/0", b"chunk")  # the array's chunk 0 hides the plain key
    commit = s.commit("the array")
    repo.export(commit, tmp_path / "copy")
    copy = LocalStore(tmp_path / "copy", read_only=True)
    assert _view(copy) == _view(repo.readonly_session(commit=commit).store)


def test_a_group_listing_names_its_members_without_listing_their_chunks(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    import sqlalchemy as sa

    from zarrlake.core import forget_cores
    from zarrlake.testing import LakeProbe

    repo = make_repo()
    s = repo.writable_session()
    root = zarr.open_group(s.store, mode="w")
    group = root.create_group("g")
    group.create_array("a", shape=(64,), chunks=(1,), dtype="u1")[:] = np.arange(64, dtype="u1")
    group.create_group("sub")
    s.commit("a group with an array of 64 chunks")
    probe = LakeProbe(repo)
    blobs = probe.tables.blobs
    with probe.sql() as conn:  # the array's chunk listing is gone: any read of it fails
        gone = conn.execute(
            sa.delete(blobs).where(blobs.c.repo_id == probe.repo_id, blobs.c.kind == "shard")
        )
        assert gone.rowcount == 1
    forget_cores()  # a fresh handle: no cached nodes
    store = zarrlake.Repo.open(catalog=catalog_url, name=repo.name).readonly_session().store
    assert sync(_collect(store.list_dir("g"))) == ["a", "sub", "zarr.json"]
    assert sync(_collect(store.list_dir(""))) == ["g", "zarr.json"]
    assert store.session.children("g/") == {"a": True, "sub": True, "zarr.json": False}
    with pytest.raises(zarrlake.ZarrlakeError):
        sync(_collect(store.list_dir("g/a")))
