"""Stress: many processes committing random overlapping and disjoint writes to one branch, and
a serializable counter. Small in the regular run; ``pytest --stress`` runs them at full size."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._workers import (
    CHUNK,
    create_arrays,
    random_commits,
    run_children,
    serializable_increments,
)

pytestmark = pytest.mark.slow


def test_random_commits_replay_to_the_final_data(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, stress: bool
) -> None:
    n_procs, n_commits, n_chunks = (8, 60, 24) if stress else (4, 8, 6)
    repo = make_repo()
    create_arrays(repo, ["data"], n_chunks)
    results = run_children(
        [
            (random_commits, (catalog_url, repo.name, p, n_commits, n_chunks, 1000 + p))
            for p in range(n_procs)
        ],
        timeout=600,
    )
    refused: Counter[str] = Counter()
    for r in results:
        refused.update(r["refused"])
    assert set(refused) <= {"ConflictError"}, refused  # every refusal was a conflict
    writes = {cid: w for r in results for cid, w in r["done"].items()}
    log = list(reversed(repo.log("main")))  # oldest first
    assert {c.id for c in log[2:]} == set(writes)  # every successful commit, nothing else
    replay = np.full(n_chunks, -1)
    for c in log[2:]:
        for chunk, value in writes[c.id].items():
            replay[int(chunk)] = value
        if stress or c is log[-1]:
            got = zarr.open_array(repo.readonly_session(c.id).store, path="data", mode="r")[:]
            np.testing.assert_array_equal(got.reshape(n_chunks, CHUNK)[:, 0], replay)
    succeeded = len(writes)
    assert succeeded + sum(refused.values()) == n_procs * n_commits
    print(f"\nstress: {n_procs} procs x {n_commits} commits: {succeeded} landed, {dict(refused)}")


def test_serializable_counter_ends_at_the_number_of_commits(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, stress: bool
) -> None:
    n_procs, n = (6, 25) if stress else (3, 5)
    repo = make_repo()
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array(
        "counter", shape=(1,), chunks=(1,), dtype="i8", fill_value=0
    )
    s.commit("counter")
    made = run_children(
        [(serializable_increments, (catalog_url, repo.name, n)) for _ in range(n_procs)],
        timeout=600,
    )
    assert sum(made) == n_procs * n
    final = zarr.open_array(repo.readonly_session().store, path="counter", mode="r")[0]
    assert int(final) == n_procs * n
    assert len(repo.log()) == n_procs * n + 2
