"""The change feed: commits that landed on a branch after a commit or a time, oldest first,
with the arrays each changed and how many chunks."""

from __future__ import annotations

import pytest

import zarrlake
from tests.integration.review._lake import with_temp, write


def test_changes_since_a_commit_list_later_commits_with_chunk_counts(repo: zarrlake.Repo) -> None:
    created = with_temp(repo)
    one = write(repo, (slice(0, 4), slice(0, 4)), 2.0).commit("one chunk")
    three = write(repo, (slice(0, 8), slice(4, 8)), 3.0)
    zarr_note = three.commit("two chunks")
    events = list(repo.changes(created))
    assert [(e.commit.id, e.arrays, e.chunks) for e in events] == [
        (one, {"temp": 1}, 1),
        (zarr_note, {"temp": 2}, 2),
    ]
    assert events[0].to_json()["arrays"] == {"temp": 1}
    assert list(repo.changes(zarr_note)) == []


def test_changes_since_a_time_and_from_the_start(repo: zarrlake.Repo) -> None:
    created = with_temp(repo)
    after = repo.commit_info(created).created_at
    later = write(repo, (slice(0, 4), slice(0, 4)), 2.0).commit("later")
    assert [e.commit.id for e in repo.changes(after)] == [later]
    every = list(repo.changes())
    assert [e.commit.message for e in every] == [
        "Repository initialized",
        "create temp",
        "later",
    ]
    assert every[1].nodes["temp"]["created"] is True


def test_changes_of_other_branches_and_bad_arguments(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.create_branch("dev")
    dev = write(repo, (slice(0, 4), slice(0, 4)), 2.0, branch="dev").commit("on dev")
    assert [e.commit.id for e in repo.changes("main", branch="dev")] == [dev]
    assert list(repo.changes("main")) == []
    with pytest.raises(zarrlake.NotFoundError, match="no branch 'nope'"):
        repo.changes(branch="nope")
    with pytest.raises(zarrlake.InvalidInputError, match="since must be a commit"):
        repo.changes(42)  # type: ignore[arg-type]
