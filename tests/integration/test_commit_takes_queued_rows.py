"""A commit stages the rows its process still holds queued in its own transaction (one
transaction fewer than flushing them first). What it commits is the same, rows that another
process of the session staged included; a refused commit leaves the rows staged, as a flush
would have, and the session commits them later."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._workers import CHUNK, Child, create_arrays, join_session_and_write
from zarrlake.session.stager import Stager
from zarrlake.testing import LakeProbe


@pytest.fixture(autouse=True)
def _rows_stay_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """The write-behind stager waits this long for company: until the commit takes them."""
    monkeypatch.setattr(Stager, "LINGER", 600.0)


def _staged_chunks(repo: zarrlake.Repo, session_id: str) -> list[tuple[str, tuple[int, ...]]]:
    rows = LakeProbe(repo).catalog.sessions.load_staged(session_id, kinds=["chunk"])
    return sorted((r.path, r.coords) for r in rows)


def _values(repo: zarrlake.Repo, commit: str) -> list[int]:
    """The value of each chunk of ``data`` (each holds one value throughout)."""
    arr = zarr.open_array(repo.readonly_session(commit).store, path="data", mode="r")
    chunks = np.asarray(arr[:]).reshape(-1, CHUNK)
    assert (chunks == chunks[:, :1]).all()
    return [int(v) for v in chunks[:, 0]]


def test_queued_rows_are_committed_with_another_processs_staged_rows(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    s = repo.writable_session()
    zarr.open_array(s.store, path="data", mode="r+")[0:CHUNK] = 5
    Child(join_session_and_write, catalog_url, repo.name, "by_id", s.id, CHUNK).start().result()
    assert _staged_chunks(repo, s.id) == [("data", (1,))]  # this process's row is queued
    commit = s.commit("both processes")
    assert _values(repo, commit) == [5, 7, -1, -1]
    assert _staged_chunks(repo, s.id) == []


def test_a_refused_commit_leaves_its_queued_rows_staged(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    s = repo.writable_session()
    zarr.open_array(s.store, path="data", mode="r+")[0:CHUNK] = 5
    other = repo.writable_session()
    zarr.open_array(other.store, path="data", mode="r+")[0:CHUNK] = 6
    theirs = other.commit("theirs")
    assert _staged_chunks(repo, s.id) == []
    with pytest.raises(zarrlake.ConflictError):
        s.commit("mine")
    assert _staged_chunks(repo, s.id) == [("data", (0,))]
    assert repo.resolve("main") == theirs
    s.rebase("ours")
    assert _values(repo, s.commit("mine, rebased")) == [5, -1, -1, -1]


def test_an_empty_commit_refused_leaves_the_session_as_it_was(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    """Rows that change nothing (the same bytes again) are staged, the commit refused as
    empty, and the session stays open with them."""
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    s = repo.writable_session()
    zarr.open_array(s.store, path="data", mode="r+")[0:CHUNK] = -1
    with pytest.raises(zarrlake.EmptyCommitError):
        s.commit("nothing")
    assert _staged_chunks(repo, s.id) == [("data", (0,))]
    assert s.closed is None
