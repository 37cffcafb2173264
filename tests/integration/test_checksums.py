"""Reads check a chunk's CRC32C; ``fsck(verify=True)`` checks its content hash (BLAKE3 or
SHA-256, the repo's). Both catalogs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from tests.conftest import object_files
from zarrlake.model import checksum

BIG = 40_000  # float64 chunks of 320,000 bytes: over the pack limit, an object of their own


def _write(repo: zarrlake.Repo, data: np.ndarray) -> str:
    s = repo.writable_session()
    arr = zarr.open_group(s.store).create_array(
        "a", shape=data.shape, chunks=(BIG,), dtype="f8", compressors=None
    )
    arr[:] = data
    return s.commit("data")


def _keep_checksum(data: bytes, at: int) -> bytes:
    """``data`` with the bit ``at`` flipped and others chosen so that its CRC32C stays the
    same (CRC is linear over GF(2): solve for a change whose checksum delta is zero)."""
    n = len(data)
    zero = checksum(bytes(n))

    def delta(bits: set[int]) -> int:
        d = bytearray(n)
        for b in bits:
            d[b // 8] ^= 1 << (b % 8)
        return checksum(bytes(d)) ^ zero

    basis: list[tuple[int, set[int]]] = []  # distinct leading bits, in decreasing order
    for bit in range(at + 64, at + 160):
        v, combo = delta({bit}), {bit}
        for bv, bc in basis:
            if v ^ bv < v:
                v, combo = v ^ bv, combo ^ bc
        if v:
            basis.append((v, combo))
            basis.sort(key=lambda x: -x[0])
    v, combo = delta({at}), {at}
    for bv, bc in basis:
        if v ^ bv < v:
            v, combo = v ^ bv, combo ^ bc
    assert v == 0, "no checksum-preserving change found"
    out = bytearray(data)
    for b in combo:
        out[b // 8] ^= 1 << (b % 8)
    return bytes(out)


def test_a_corrupt_chunk_fails_its_checksum_on_read(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    data = np.random.default_rng(1).random(2 * BIG)
    commit = _write(repo, data)
    first, _ = object_files(repo)
    raw = bytearray(first.read_bytes())
    raw[123] ^= 0x04
    first.chmod(0o644)
    first.write_bytes(bytes(raw))
    fresh = zarrlake.Repo.from_config(repo.config)
    arr = zarr.open_array(fresh.readonly_session(commit=commit).store, path="a", mode="r")
    with pytest.raises(zarrlake.ChunkCorruptionError, match="does not match its checksum"):
        arr[:]
    report = fresh.fsck(verify=True)
    assert [(i.kind, i.hash) for i in report.issues] == [("corrupt_object", first.name)]


@pytest.mark.parametrize("content_hash", ["blake3", "sha256"])
def test_fsck_finds_a_corruption_that_keeps_the_checksum(
    make_repo: Callable[..., zarrlake.Repo], content_hash: str
) -> None:
    repo = make_repo(content_hash=content_hash)
    data = np.random.default_rng(2).random(BIG)
    commit = _write(repo, data)
    (obj,) = object_files(repo)
    stored = obj.read_bytes()
    forged = _keep_checksum(stored, 8 * 1000)
    assert forged != stored
    assert checksum(forged) == checksum(stored)
    obj.chmod(0o644)
    obj.write_bytes(forged)
    fresh = zarrlake.Repo.from_config(repo.config)
    back = zarr.open_array(fresh.readonly_session(commit=commit).store, path="a", mode="r")[:]
    assert not np.array_equal(back, data)  # the documented limit: a read checks the CRC only
    report = fresh.fsck(verify=True)
    assert [(i.kind, i.hash) for i in report.issues] == [("corrupt_object", obj.name)]
