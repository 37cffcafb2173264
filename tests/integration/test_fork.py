"""A forked child starts with zarrlake's process-wide state empty (``zarrlake.process``): it
opens its own catalogs, cores and sessions, and reads and commits through them, while the
parent's keep working."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import Any

import numpy as np
import zarr

import zarrlake
from zarrlake.testing import live_sessions


def _child(config: zarrlake.RepoConfig, session_id: str, out: Any) -> None:
    repo = zarrlake.Repo.from_config(config)
    before = live_sessions()  # nothing inherited from the parent
    s = repo.session(session_id)  # joins the parent's open session through its own catalog
    zarr.open_array(s.store, path="a", mode="r+")[2:4] = 5
    assert isinstance(s, zarrlake.WritableSession)
    s.flush()
    out.send((before, zarr.open_array(repo.readonly_session("main").store, path="a")[0].item()))


def test_a_forked_child_opens_its_own_state_and_writes_into_the_parents_session(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(8,), chunks=(2,), dtype="i4")[:] = 1
    s.commit("ones")
    shared = repo.writable_session()
    assert live_sessions() >= 1
    ctx = mp.get_context("fork")
    parent_end, child_end = ctx.Pipe()
    p = ctx.Process(target=_child, args=(repo.config, shared.id, child_end))
    p.start()
    inherited, value = parent_end.recv()
    p.join(timeout=60)
    assert p.exitcode == 0
    assert inherited == 0
    assert value == 1
    zarr.open_array(shared.store, path="a", mode="r+")[0:2] = 9  # the parent's handles work
    shared.commit("both")
    got = zarr.open_array(repo.readonly_session("main").store, path="a")[:]
    np.testing.assert_array_equal(got, [9, 9, 5, 5, 1, 1, 1, 1])
