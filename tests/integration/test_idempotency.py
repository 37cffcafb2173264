"""Idempotent commits: a commit carrying a key already recorded on its branch returns the
recorded commit and commits nothing again (DESIGN.md, "Commit protocol", step 5)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._workers import CHUNK, CTX, commit_with_key, create_arrays, run_children


def _write(repo: zarrlake.Repo, start: int, value: int, branch: str = "main") -> zarrlake.Session:
    s = repo.writable_session(branch)
    zarr.open_array(s.store, path="data", mode="r+", zarr_format=3)[start : start + CHUNK] = value
    return s


def _data(repo: zarrlake.Repo, ref: str = "main") -> np.ndarray:
    store = repo.readonly_session(ref).store
    return np.asarray(zarr.open_array(store, path="data", mode="r", zarr_format=3)[:])


def test_second_commit_with_same_key_returns_first_and_commits_nothing(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    first = _write(repo, 0, 7).commit("job run 1", idempotency_key="job-42")
    before = [c.id for c in repo.log("main")]

    retry = _write(repo, 0, 7)  # the retried job stages the same data again
    assert retry.commit("job run 2", idempotency_key="job-42") == first
    assert [c.id for c in repo.log("main")] == before
    with pytest.raises(zarrlake.SessionClosedError):
        retry.commit("again", idempotency_key="job-42")
    info = {s.id: s for s in repo.sessions(include_closed=True)}[retry.id]
    assert (info.status, info.commit_id) == ("committed", first)


def test_retry_whose_data_differs_still_commits_once(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    # The key, not the data, decides: a retry that computed other bytes must not overwrite.
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    first = _write(repo, 0, 1).commit("run 1", idempotency_key="k")
    _write(repo, CHUNK, 5).commit("someone else")  # the branch moved on meanwhile
    assert _write(repo, 0, 2).commit("run 2", idempotency_key="k") == first
    assert set(_data(repo)[:CHUNK].tolist()) == {1}


def test_keys_are_per_branch(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    repo.create_branch("dev")
    on_main = _write(repo, 0, 1).commit("main", idempotency_key="k")
    on_dev = _write(repo, 0, 1, branch="dev").commit("dev", idempotency_key="k")
    assert on_dev != on_main
    assert repo.resolve("dev") == on_dev


@pytest.mark.parametrize("bad", ["", "x" * 257, "a\x00b", 42, b"key"])
def test_bad_keys_are_refused_and_leave_the_session_open(
    make_repo: Callable[..., zarrlake.Repo], bad: object
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    s = _write(repo, 0, 3)
    with pytest.raises(zarrlake.InvalidInputError, match="idempotency_key"):
        s.commit("bad key", idempotency_key=bad)  # type: ignore[arg-type]
    assert s.commit("good") == repo.resolve("main")


@pytest.mark.slow
def test_racing_processes_with_one_key_make_one_commit(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    n = 4
    repo = make_repo()
    create_arrays(repo, ["data"], n)
    before = len(repo.log("main"))
    barrier = CTX.Barrier(n)
    # Each process writes another chunk, so without the key every one of them would land.
    results = run_children(
        [
            (commit_with_key, (catalog_url, repo.name, i * CHUNK, 10 + i, "batch-7", barrier))
            for i in range(n)
        ]
    )
    ids = {r["commit"] for r in results}
    assert len(ids) == 1
    assert len(repo.log("main")) == before + 1
    (winner,) = ids
    assert repo.resolve("main") == winner
    written = [i for i in range(n) if set(_data(repo)[i * CHUNK : (i + 1) * CHUNK]) == {10 + i}]
    assert len(written) == 1


def test_a_key_whose_commit_a_reset_removed_from_the_branch_commits_the_retry(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    before = repo.resolve("main")
    keyed = _write(repo, 0, 7).commit("job run 1", idempotency_key="job-42")
    repo.reset_branch("main", before)  # the keyed commit is no longer on main
    retry = _write(repo, 0, 8)
    again = retry.commit("job run 2", idempotency_key="job-42")
    assert again != keyed
    assert repo.resolve("main") == again
    assert set(_data(repo)[:CHUNK].tolist()) == {8}  # the retry's data is on the branch
    # and the key now names the retry's commit
    assert _write(repo, 0, 9).commit("job run 3", idempotency_key="job-42") == again


def test_a_key_of_a_deleted_and_recreated_branch_commits_the_retry(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    base = repo.resolve("main")
    repo.create_branch("ingest")
    _write(repo, 0, 7, branch="ingest").commit("run 1", idempotency_key="k")
    repo.delete_branch("ingest")
    repo.create_branch("ingest", base)
    again = _write(repo, 0, 8, branch="ingest").commit("run 2", idempotency_key="k")
    assert repo.resolve("ingest") == again
    assert set(_data(repo, "ingest")[:CHUNK].tolist()) == {8}


def test_a_key_whose_commit_expired_commits_the_retry(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    before = repo.resolve("main")
    keyed = _write(repo, 0, 7).commit("run 1", idempotency_key="k")
    repo.reset_branch("main", before)
    assert keyed in repo.expire(timedelta(0)).expired
    retry = _write(repo, 0, 8)
    again = retry.commit("run 2", idempotency_key="k")
    assert repo.resolve("main") == again
    assert retry.state == "committed"
    assert set(_data(repo)[:CHUNK].tolist()) == {8}


@pytest.mark.slow
def test_racing_retries_of_one_job_writing_the_same_chunk_all_get_the_one_commit(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    """Each retry wrote the same chunk with other bytes: a loser sees a chunk conflict with
    the winner, and its key, looked up again, returns the winner's commit instead."""
    n = 4
    repo = make_repo()
    create_arrays(repo, ["data"], n)
    before = len(repo.log("main"))
    barrier = CTX.Barrier(n)
    results = run_children(
        [
            (commit_with_key, (catalog_url, repo.name, 0, 10 + i, "batch-8", barrier))
            for i in range(n)
        ]
    )
    ids = {r["commit"] for r in results}
    assert len(ids) == 1
    assert len(repo.log("main")) == before + 1
    assert len(set(_data(repo)[:CHUNK].tolist())) == 1


def test_dataset_commit_with_key_commits_once(sqlite_repo: zarrlake.Repo) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"t": (("x",), np.arange(8.0))})
    first = ds.lake.commit("load day 1", repo=sqlite_repo, idempotency_key="day-1")
    again = (ds + 1).lake.commit("load day 1", repo=sqlite_repo, mode="w", idempotency_key="day-1")
    assert again == first
    back = zarrlake.open_dataset(sqlite_repo, "main")
    np.testing.assert_array_equal(back["t"].values, np.arange(8.0))
