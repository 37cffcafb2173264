"""Concurrent commits from real processes: the commit protocol's compare-and-swap, automatic
rebase of non-conflicting work, and the conflicts it must refuse (DESIGN.md, "Commit protocol")."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration._workers import (
    CHUNK,
    CTX,
    Child,
    commit_disjoint,
    commit_ops,
    create_arrays,
    run_children,
    stage_and_commit,
)


def _read(repo: zarrlake.Repo, path: str = "data", **ref: str) -> np.ndarray:
    s = repo.readonly_session(**ref) if ref else repo.readonly_session(branch="main")
    return zarr.open_array(s.store, path=path, mode="r", zarr_format=3)[:]


def _race(url: str, name: str, *op_lists: list[tuple[object, ...]]) -> list[dict[str, object]]:
    """Stage each op list in its own process; all commit together after a barrier."""
    barrier = CTX.Barrier(len(op_lists))
    return run_children([(stage_and_commit, (url, name, ops, barrier)) for ops in op_lists])


@pytest.mark.slow
def test_many_processes_commit_disjoint_chunks(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    n_procs, n_commits, chunk = 8, 10, 16
    repo = make_repo()
    create_arrays(repo, ["data"], n_procs, chunk=chunk)

    results = run_children(
        [(commit_disjoint, (catalog_url, repo.name, p, n_commits, chunk)) for p in range(n_procs)],
        timeout=120,
    )

    log = repo.log("main")
    ours = [c for c in log if re.fullmatch(r"proc \d+ commit \d+", c.message)]
    assert len(ours) == n_procs * n_commits
    assert {c.id for c in ours} == {cid for ids in results for cid in ids}
    # Each process's own commits are in its order on the branch (the log is newest first).
    for p in range(n_procs):
        js = [c.metadata["j"] for c in reversed(ours) if c.metadata["proc"] == p]
        assert js == list(range(n_commits))
    # Every commit is in one first-parent chain: no commit was lost by a bad rebase.
    assert [c.parent for c in log[:-1]] == [c.id for c in log[1:]]

    expected = np.repeat([p * 1000 + n_commits - 1 for p in range(n_procs)], chunk)
    np.testing.assert_array_equal(_read(repo), expected)


def test_same_chunk_one_wins_loser_conflicts_and_resolves(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    a, b = _race(
        catalog_url,
        repo.name,
        [("write", "data", 0, CHUNK, 1)],
        [("write", "data", 0, CHUNK, 2)],
    )
    assert [a["won"], b["won"]].count(True) == 1, (a, b)
    winner, loser = (a, b) if a["won"] else (b, a)
    win_value, lose_value = (1, 2) if a["won"] else (2, 1)

    assert loser["error_type"] == "ConflictError"
    assert ("chunk", "data", (0,), winner["commit"]) in loser["conflicts"]
    assert all(c[0] == "chunk" and c[2] == (0,) for c in loser["conflicts"])
    # The loser's session stays open and readable: it still reads its own staged value.
    assert loser["still_reads"] == [lose_value] * CHUNK
    np.testing.assert_array_equal(_read(repo)[:CHUNK], win_value)

    # Resolve from this process, joining the loser's session by id: ours wins.
    s = repo.session(str(loser["session"]))
    staged = zarr.open_array(s.store, path="data", mode="r", zarr_format=3)[:CHUNK]
    np.testing.assert_array_equal(staged, lose_value)
    assert s.rebase("ours") == winner["commit"]
    resolved = s.commit("resolve: ours")
    assert repo.log("main")[0].id == resolved
    assert repo.log("main")[0].parent == winner["commit"]
    np.testing.assert_array_equal(_read(repo)[:CHUNK], lose_value)
    np.testing.assert_array_equal(_read(repo)[CHUNK:], -1)


def test_resize_racing_chunk_write_is_a_metadata_conflict(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 4)
    resize, write = _race(
        catalog_url,
        repo.name,
        [("resize", "data", 8 * CHUNK)],
        [("write", "data", 0, CHUNK, 5)],
    )
    assert [resize["won"], write["won"]].count(True) == 1, (resize, write)
    winner, loser = (resize, write) if resize["won"] else (write, resize)
    kinds = {c[0] for c in loser["conflicts"]}
    assert "metadata" in kinds, loser
    assert ("metadata", "data", None, winner["commit"]) in loser["conflicts"]
    # Nothing of the loser landed.
    arr = zarr.open_array(repo.readonly_session(branch="main").store, path="data", mode="r")
    if resize["won"]:
        assert arr.shape == (8 * CHUNK,)
        np.testing.assert_array_equal(arr[:], -1)
    else:
        assert arr.shape == (4 * CHUNK,)
        np.testing.assert_array_equal(arr[:CHUNK], 5)


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_read_foo_write_bar(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str, isolation: str
) -> None:
    """The write-skew: A reads foo and writes bar from it while B changes foo. Serializable
    refuses A's commit ("read" conflict); snapshot isolation allows it."""
    repo = make_repo()
    create_arrays(repo, ["foo", "bar"], 2)
    seed = repo.writable_session()
    zarr.open_array(seed.store, path="foo", mode="r+")[:] = 10
    seed.commit("foo = 10")

    s = repo.writable_session(isolation=isolation)  # type: ignore[arg-type]
    foo = zarr.open_array(s.store, path="foo", mode="r", zarr_format=3)[:]
    zarr.open_array(s.store, path="bar", mode="r+", zarr_format=3)[:] = foo * 2

    other = Child(commit_ops, catalog_url, repo.name, [("write", "foo", 0, 2 * CHUNK, 99)]).start()
    b_commit = other.result()

    if isolation == "serializable":
        with pytest.raises(zarrlake.ConflictError) as info:
            s.commit("bar from foo")
        kinds = {c.kind for c in info.value.conflicts}
        assert kinds == {"read"}, info.value.conflicts
        assert {(c.path, c.commit) for c in info.value.conflicts} == {("foo", b_commit)}
        # a solver would commit bar computed from the stale foo: the advice is to redo
        assert "abandon the session and redo" in str(info.value)
        assert "rebase(" not in str(info.value)
        assert repo.log("main")[0].id == b_commit
        np.testing.assert_array_equal(_read(repo, "bar"), -1)
    else:
        c = s.commit("bar from foo")
        assert repo.log("main")[0].id == c
        assert repo.log("main")[0].parent == b_commit
        np.testing.assert_array_equal(_read(repo, "bar"), 20)  # from the stale foo
        np.testing.assert_array_equal(_read(repo, "foo"), 99)


def test_disjoint_attribute_edits_merge(
    make_repo: Callable[..., zarrlake.Repo], catalog_url: str
) -> None:
    repo = make_repo()
    create_arrays(repo, ["data"], 2)
    seed = repo.writable_session()
    zarr.open_array(seed.store, path="data", mode="r+").attrs["units"] = "m"
    seed.commit("units")

    a, b = _race(
        catalog_url,
        repo.name,
        [("attr", "data", "alpha", 1)],
        [("attr", "data", "beta", [2, 3])],
    )
    assert a["won"], a
    assert b["won"], b
    arr = zarr.open_array(repo.readonly_session(branch="main").store, path="data", mode="r")
    assert arr.attrs.asdict() == {"units": "m", "alpha": 1, "beta": [2, 3]}
    assert arr.shape == (2 * CHUNK,)
    assert {repo.log("main")[0].id, repo.log("main")[1].id} == {a["commit"], b["commit"]}
