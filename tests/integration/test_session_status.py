"""A session's status is the engine's: derived from the catalog's clock, the same in
``repo.sessions()``, ``session.info()``, ``session.state`` and the session's repr."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.testing import live_sessions


def _expired_session(repo: zarrlake.Repo) -> zarrlake.WritableSession:
    s = repo.writable_session(expires_in=timedelta(seconds=1))
    g = zarr.open_group(s.store, mode="w")
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i4")
    s.flush()
    time.sleep(1.3)
    return s


def test_an_expired_session_reads_expired_everywhere(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    live = repo.writable_session(expires_in=timedelta(hours=1))
    s = _expired_session(repo)
    listed = {i.id: i.status for i in repo.sessions()}
    assert listed == {live.id: "open", s.id: "expired"}
    assert s.info().status == "expired"
    assert s.state == "expired"
    assert " expired " in repr(s)
    assert live.state == "open"
    assert " open " in repr(live)


def test_the_repr_says_expired_after_the_write_that_was_refused(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = _expired_session(repo)
    arr = zarr.open_array(s.store, path="a", mode="r+")
    with pytest.raises(zarrlake.SessionExpiredError):
        arr[:] = np.arange(4, dtype="i4")
    assert " expired " in repr(s)
    assert "open" not in repr(s)


def test_closed_sessions_keep_their_final_status(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    done = repo.writable_session()
    zarr.open_group(done.store, mode="w")
    done.commit("c")
    gone = repo.writable_session()
    gone.abandon()
    every = {i.id: i.status for i in repo.sessions(include_closed=True)}
    assert every[done.id] == "committed"
    assert every[gone.id] == "abandoned"
    assert done.state == "committed"
    assert gone.state == "abandoned"
    assert repo.sessions() == []


def test_three_hundred_commits_leave_a_handful_of_sessions_alive(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(8,), chunks=(2,), dtype="i4")
    s.commit("create")
    before = live_sessions()
    kept = []
    for i in range(300):
        s = repo.writable_session()
        zarr.open_array(s.store, path="a", mode="r+")[0:2] = i + 1
        s.commit(f"write {i}")
        kept.append(s)  # the caller still holds every one: committed, they are released
    abandoned = repo.writable_session()
    abandoned.abandon()
    assert live_sessions() - before <= 3
    assert all(k.state == "committed" for k in kept)


def _stager_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "zarrlake-stager"}


def test_a_closed_session_leaves_no_thread_behind(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(8,), chunks=(1,), dtype="i4")
    s.commit("array")
    before = _stager_threads()
    for i in range(20):  # committed and abandoned sessions, one after the other
        s = repo.writable_session()
        zarr.open_array(s.store, path="a", mode="r+")[i % 8] = i + 1
        if i % 4 == 3:
            s.abandon()
        else:
            s.commit(f"write {i}")
    deadline = time.monotonic() + 2.0  # a thread ends once it sees its session closed
    while _stager_threads() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _stager_threads() - before
