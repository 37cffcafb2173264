"""A writer SIGKILLed at every named crash point (``zarrlake.faults.POINTS``) leaves the repo
valid on both catalogs: every branch opens, every reachable object exists and matches its hash,
the data is exactly the state before or after the interrupted commit, and a new commit works."""

from __future__ import annotations

import signal
from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._workers import CHUNK, Child, create_arrays, write_and_crash
from zarrlake.faults import POINTS
from zarrlake.objects import PACK_CHUNK_LIMIT

pytestmark = pytest.mark.slow

WRITER_POINTS = [p for p in POINTS if not p.startswith("gc.")]  # gc's: tests/integration/test_gc.py
# where the commit has landed when the process dies
LANDED = {"commit.done"}


def _values(repo: zarrlake.Repo, ref: str, path: str) -> set[int]:
    arr = zarr.open_array(repo.readonly_session(ref).store, path=path, mode="r", zarr_format=3)
    return set(np.asarray(arr[:]).tolist())


@pytest.mark.parametrize("point", WRITER_POINTS)
def test_a_writer_killed_at_each_crash_point_leaves_the_repo_valid(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, point: str
) -> None:
    repo = make_repo()
    create_arrays(repo, ["a", "b"], 4)  # 1 KiB chunks: packed
    s = repo.writable_session()
    big = PACK_CHUNK_LIMIT // 8 + 1  # int64: one chunk too large for a pack
    g = zarr.open_group(s.store, mode="r+", zarr_format=3)
    g.create_array("big", shape=(big,), chunks=(big,), dtype="i8", compressors=None)
    zarr.open_array(s.store, path="a", mode="r+", zarr_format=3)[:] = 1
    g["big"][:] = 1
    before = s.commit("ones")

    child = Child(write_and_crash, catalog_url, repo.name, point).start()
    child.proc.join(timeout=120)
    assert child.proc.exitcode == -signal.SIGKILL, f"{point} was never reached"

    again = zarrlake.Repo.open(catalog=catalog_url, name=repo.name, storage_options={})
    for branch in again.branches():
        log = again.log(branch)
        assert [c.parent for c in log[:-1]] == [c.id for c in log[1:]]
        assert _values(again, branch, "a") in ({1}, {2})
        assert _values(again, branch, "big") == _values(again, branch, "a")
    expected = {2} if point in LANDED else {1}
    assert _values(again, "main", "a") == expected
    if point in LANDED:
        assert again.log("main")[0].message == "twos"
    else:
        assert before in [c.id for c in again.log("main")]
    assert again.fsck(verify=True).ok

    s = again.writable_session()
    zarr.open_array(s.store, path="a", mode="r+", zarr_format=3)[:CHUNK] = 3
    after = s.commit("after the crash")
    assert again.resolve("main") == after
    assert _values(again, "main", "a") == {3, *expected}
