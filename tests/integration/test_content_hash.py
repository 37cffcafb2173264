"""A repo's content hash, recorded when it is created: BLAKE3 by default, SHA-256 on request;
it names the repo's chunk objects (so identical chunks are stored once), and reads, fsck and
gc's repack verify by it. Both catalogs."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import blake3
import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import object_files

CHUNK = 40_000  # float64 chunks of 320,000 bytes: over the pack limit, an object of their own
HASHES = {
    "blake3": lambda b: blake3.blake3(b).digest(),
    "sha256": lambda b: hashlib.sha256(b).digest(),
}


@pytest.mark.parametrize("name", sorted(HASHES))
def test_chunk_objects_are_named_by_the_repos_hash_and_stored_once(
    make_repo: Callable[..., zarrlake.Repo], name: str
) -> None:
    repo = make_repo(content_hash=name)
    assert repo.content_hash == name
    block = np.random.default_rng(3).random(CHUNK)
    data = np.concatenate([block, block, block[::-1]])  # two equal chunks, one different
    s = repo.writable_session()
    small = zarr.open_group(s.store).create_array("small", shape=(4,), dtype="i4")
    small[:] = [1, 2, 3, 4]  # inline in the catalog, verified by the same hash on reads
    arr = zarr.open_group(s.store).create_array(
        "a", shape=data.shape, chunks=(CHUNK,), dtype="f8", compressors=None
    )
    arr[:] = data
    commit = s.commit("data")

    names = {p.name for p in object_files(repo)}
    assert names == {HASHES[name](block.tobytes()).hex(), HASHES[name](block[::-1].tobytes()).hex()}
    fresh = zarrlake.Repo.from_config(repo.config)
    assert fresh.content_hash == name
    g = zarr.open_group(fresh.readonly_session(commit=commit).store, mode="r")
    assert np.array_equal(g["a"][:], data)  # type: ignore[index]
    assert list(g["small"][:]) == [1, 2, 3, 4]  # type: ignore[index]

    s = fresh.writable_session()  # the same bytes again, in another array: no new object
    again = zarr.open_group(s.store).create_array(
        "b", shape=(CHUNK,), chunks=(CHUNK,), dtype="f8", compressors=None
    )
    again[:] = block
    s.commit("again")
    assert {p.name for p in object_files(repo)} == names
    assert fresh.fsck(verify=True).ok


def test_a_new_repo_defaults_to_blake3(make_repo: Callable[..., zarrlake.Repo]) -> None:
    assert make_repo().content_hash == "blake3"


@pytest.mark.parametrize("value", ["md5", "BLAKE3", "", "sha-256"])
def test_an_unknown_content_hash_is_refused_and_nothing_is_made(tmp_path: Path, value: str) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="unknown content hash") as exc:
        zarrlake.Repo.create(tmp_path / "lake", content_hash=value)
    assert "blake3, sha256" in str(exc.value)
    assert not (tmp_path / "lake").exists()
