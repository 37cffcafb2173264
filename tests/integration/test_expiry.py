"""Session expiry: an expired session stages and commits nothing, from any of its processes,
but stays readable; extend() pushes the expiry (never past 7 days after creation)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._workers import CHUNK, CTX, Child, create_arrays, join_then_write


class _Joiner:
    """A child process that joins a session by id, then writes when told to."""

    def __init__(self, url: str, name: str) -> None:
        self.conn, child_conn = CTX.Pipe()
        self.child = Child(join_then_write, url, name, child_conn).start()

    def expect(self, what: str) -> None:
        assert self.conn.poll(90), f"child never said {what!r}"
        assert self.conn.recv() == what

    def send(self, what: Any) -> None:
        self.conn.send(what)


def _sleep_until_past(when: Any, margin: float = 0.3) -> None:
    time.sleep(max(0.0, when.timestamp() - time.time()) + margin)


def test_expired_session_refuses_writes_and_commit_but_reads(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 2)
    joiner = _Joiner(catalog_url, repo.name)
    joiner.expect("ready")

    s = repo.writable_session(expires_in=timedelta(seconds=2))
    assert s.expires_at is not None
    assert s.created_at is not None
    assert abs((s.expires_at - s.created_at).total_seconds() - 2) < 0.01
    arr = zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)
    arr[0:CHUNK] = 5
    joiner.send(s.id)
    joiner.expect("joined")  # the other process joined while the session was live

    _sleep_until_past(s.expires_at, margin=0.5)
    with pytest.raises(zarrlake.SessionExpiredError):
        arr[CHUNK : 2 * CHUNK] = 6
    with pytest.raises(zarrlake.SessionExpiredError):
        s.store.set_sync("data/c/1", zarr.core.buffer.cpu.Buffer.from_bytes(b"\0" * 8 * CHUNK))
    with pytest.raises(zarrlake.SessionExpiredError):
        arr.attrs.put({"late": True})
    with pytest.raises(zarrlake.SessionExpiredError):
        s.commit("too late")
    with pytest.raises(zarrlake.SessionExpiredError):
        s.extend(timedelta(hours=1))
    # The other process of the session is refused too.
    joiner.send("go")
    assert joiner.child.result() == "SessionExpiredError"

    # Reads still work: its staged chunk, and the base for the rest.
    again = zarr.open_array(s.store, path="data", mode="r", zarr_format=3)
    np.testing.assert_array_equal(again[:], np.r_[np.full(CHUNK, 5), np.full(CHUNK, -1)])
    assert "late" not in again.attrs
    # Nothing reached the branch.
    main = zarr.open_array(repo.readonly_session(branch="main").store, path="data", mode="r")
    np.testing.assert_array_equal(main[:], -1)
    assert len(repo.log("main")) == 2


def test_extend_before_expiry_pushes_it_for_every_process(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 2)
    joiner = _Joiner(catalog_url, repo.name)
    joiner.expect("ready")

    s = repo.writable_session(expires_in=timedelta(seconds=2))
    first_expiry = s.expires_at
    assert first_expiry is not None
    joiner.send(s.id)
    joiner.expect("joined")  # its copy of the session still says: expires in 2 s
    new_expiry = s.extend(timedelta(seconds=60))
    assert s.expires_at == new_expiry
    assert 55 < (new_expiry - first_expiry).total_seconds() + 2 < 65
    listed = {i.id: i for i in repo.sessions()}
    assert listed[s.id].expires_at == new_expiry

    _sleep_until_past(first_expiry, margin=0.5)
    joiner.send("go")
    assert joiner.child.result() == "ok"  # the other process sees the extension
    arr = zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)
    arr[CHUNK : 2 * CHUNK] = 12
    c = s.commit("after the first expiry")
    main = zarr.open_array(repo.readonly_session(commit=c).store, path="data", mode="r")
    np.testing.assert_array_equal(main[:], np.repeat([11, 12], CHUNK))


def test_extend_is_capped_at_seven_days_after_creation(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    s = repo.writable_session(expires_in=timedelta(hours=1))
    assert s.created_at is not None
    capped = s.extend(timedelta(days=30))
    assert capped == s.created_at + timedelta(days=7)
    assert s.extend(timedelta(hours=1)) == capped  # extend never shortens
    with pytest.raises(zarrlake.InvalidInputError):
        s.extend(timedelta(seconds=0))


@pytest.mark.parametrize(
    "expires_in",
    [timedelta(days=7, seconds=1), timedelta(days=30), timedelta(0), timedelta(seconds=-5)],
)
def test_out_of_range_expiry_is_refused(
    make_repo: Callable[..., zarrlake.Repo], expires_in: timedelta
) -> None:
    repo = make_repo()
    with pytest.raises(zarrlake.InvalidInputError):
        repo.writable_session(expires_in=expires_in)
    assert repo.sessions(include_closed=True) == []
    s = repo.writable_session(expires_in=timedelta(days=7))  # the cap itself is allowed
    assert s.expires_at is not None
    assert s.created_at is not None
    assert s.expires_at - s.created_at == timedelta(days=7)


def test_sessions_lists_open_sessions_with_expiry(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 1)
    before = {i.id for i in repo.sessions(include_closed=True)}
    repo.create_branch("dev")
    a = repo.writable_session(expires_in=timedelta(hours=1))
    b = repo.writable_session("dev", expires_in=timedelta(hours=2), isolation="serializable")
    done = repo.writable_session()
    zarr.open_array(done.store, path="data", mode="r+")[:] = 1
    commit = done.commit("done")
    gone = repo.writable_session()
    gone.abandon()

    listed = repo.sessions()
    assert [i.id for i in listed] == [a.id, b.id]
    for info, s, hours, branch, iso in (
        (listed[0], a, 1, "main", "snapshot"),
        (listed[1], b, 2, "dev", "serializable"),
    ):
        assert info.status == "open"
        assert info.branch == branch
        assert info.isolation == iso
        assert info.expires_at == s.expires_at
        assert info.created_at == s.created_at
        assert abs((info.expires_at - info.created_at) - timedelta(hours=hours)) < timedelta(
            seconds=1
        )
        assert info.expires_at.tzinfo is not None

    every = {i.id: i for i in repo.sessions(include_closed=True) if i.id not in before}
    assert every[done.id].status == "committed"
    assert every[done.id].commit_id == commit
    assert every[gone.id].status == "abandoned"
    assert set(every) == {a.id, b.id, done.id, gone.id}
