"""repo.merge and repo.revert on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.testing import LakeProbe

N, C = 40, 4  # array of 40 int64 in 10 chunks of 4


def _base(repo: zarrlake.Repo) -> str:
    s = repo.writable_session()
    g = zarr.open_group(s.store, mode="w")
    g.create_array("a", shape=(N,), chunks=(C,), dtype="i8", fill_value=-1)[:] = 0
    return s.commit("base")


def _write(repo: zarrlake.Repo, branch: str, start: int, stop: int, value: int) -> str:
    s = repo.writable_session(branch)
    zarr.open_array(s.store, path="a", mode="r+")[start:stop] = value
    return s.commit(f"{branch}: [{start}:{stop}] = {value}")


def _read(repo: zarrlake.Repo, ref: str = "main") -> np.ndarray:
    return np.asarray(zarr.open_array(repo.readonly_session(ref=ref).store, path="a", mode="r")[:])


def _expected(*writes: tuple[int, int, int]) -> np.ndarray:
    out = np.zeros(N, "i8")
    for start, stop, value in writes:
        out[start:stop] = value
    return out


def test_disjoint_changes_merge_clean_with_two_parents(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    repo.create_branch("dev")
    on_dev = _write(repo, "dev", 0, 8, 1)
    on_main = _write(repo, "main", 20, 24, 2)
    merge = repo.merge("dev", "main", message="bring dev", author="ana")
    info = repo.commit_info(merge)
    assert info.parents == (on_main, on_dev)
    assert (info.message, info.author) == ("bring dev", "ana")
    np.testing.assert_array_equal(_read(repo), _expected((0, 8, 1), (20, 24, 2)))
    assert repo.resolve("dev") == on_dev  # the source does not move
    entry = repo.reflog("main")[0]
    assert (entry.action, entry.old_commit, entry.new_commit) == ("merge", on_main, merge)
    # the merge commit records what it changed on main: the two chunks from dev
    assert repo.diff(on_main, merge)["a"].chunks_changed == {(0,), (1,)}


def test_same_chunk_changes_conflict_and_change_nothing(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    repo.create_branch("dev")
    _write(repo, "dev", 0, 2, 1)
    head = _write(repo, "main", 2, 4, 2)  # same chunk 0, other elements: still a conflict
    with pytest.raises(zarrlake.ConflictError) as err:
        repo.merge("dev", "main")
    assert [(c.kind, c.path, c.chunk, c.commit) for c in err.value.conflicts] == [
        ("chunk", "a", (0,), head)
    ]
    assert "solver='ours'" in str(err.value)
    assert repo.resolve("main") == head


@pytest.mark.parametrize(("strategy", "chunk0"), [("ours", [0, 0, 2, 2]), ("theirs", [1, 1, 0, 0])])
def test_strategies_resolve_conflicts(
    make_repo: Callable[..., zarrlake.Repo], strategy: str, chunk0: list[int]
) -> None:
    repo = make_repo()
    _base(repo)
    repo.create_branch("dev")
    _write(repo, "dev", 0, 2, 1)
    _write(repo, "dev", 36, 40, 7)  # no conflict: merged whatever the strategy
    _write(repo, "main", 2, 4, 2)
    _write(repo, "main", 20, 24, 3)
    merge = repo.merge("dev", "main", solver=strategy)  # type: ignore[arg-type]
    data = _read(repo, merge)
    assert data[0:4].tolist() == chunk0
    assert data[36:40].tolist() == [7] * 4
    assert data[20:24].tolist() == [3] * 4


def test_fast_forward_moves_the_branch_without_a_commit(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    repo.create_branch("dev")
    tip = _write(repo, "dev", 0, 4, 5)
    catalog = LakeProbe(repo).catalog
    n_commits = len(catalog.commits.all())
    assert repo.merge("dev", "main") == tip
    assert repo.resolve("main") == tip
    assert len(catalog.commits.all()) == n_commits
    entry = repo.reflog("main")[0]
    assert (entry.action, entry.new_commit) == ("merge", tip)


def test_no_fast_forward_records_a_merge_commit(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    base = _base(repo)
    repo.create_branch("dev")
    tip = _write(repo, "dev", 0, 4, 5)
    merge = repo.merge("dev", "main", fast_forward=False)
    assert repo.commit_info(merge).parents == (base, tip)
    np.testing.assert_array_equal(_read(repo), _expected((0, 4, 5)))


def test_merging_what_is_already_merged_does_nothing(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    repo.create_branch("dev")
    _write(repo, "dev", 0, 4, 5)
    _write(repo, "main", 8, 12, 6)
    merge = repo.merge("dev", "main")
    assert repo.merge("dev", "main") == merge
    assert repo.merge("main~1", "main") == merge
    assert repo.resolve("main") == merge


def test_merging_again_uses_the_latest_common_ancestor(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    repo.create_branch("dev")
    _write(repo, "dev", 0, 4, 5)
    _write(repo, "main", 20, 24, 6)
    merged = repo.merge("dev", "main")
    # Against the fork point both sides now changed chunk 0 (main through the merge); against
    # the latest common ancestor (dev's previous tip) only dev did: no conflict.
    _write(repo, "dev", 0, 4, 8)
    _write(repo, "main", 24, 28, 9)
    repo.merge("dev", "main")
    np.testing.assert_array_equal(_read(repo), _expected((0, 4, 8), (20, 24, 6), (24, 28, 9)))
    assert repo.log("main")[2].id == merged


def test_merge_into_a_tag_or_unknown_branch_is_refused(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    base = _base(repo)
    repo.create_tag("v1")
    with pytest.raises(zarrlake.NotFoundError):
        repo.merge("main", "v1")
    with pytest.raises(zarrlake.NotFoundError):
        repo.merge("main", "nowhere")
    with pytest.raises(zarrlake.InvalidNameError):
        repo.merge("main", "../x")
    with pytest.raises(zarrlake.InvalidInputError, match="solver"):
        repo.merge("main", "main", solver="mine")  # type: ignore[arg-type]
    assert repo.resolve("main") == base


def test_merge_with_new_arrays_and_deletes(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _base(repo)
    s = repo.writable_session()
    zarr.open_group(s.store).create_array("old", shape=(4,), dtype="i4")[:] = 1
    s.commit("old")
    repo.create_branch("dev")
    s = repo.writable_session("dev")
    g = zarr.open_group(s.store)
    g.create_array("new", shape=(8,), chunks=(4,), dtype="i4", fill_value=0)[:] = 3
    del g["old"]
    s.commit("new, drop old")
    _write(repo, "main", 0, 4, 1)
    merge = repo.merge("dev", "main")
    g = zarr.open_group(repo.readonly_session(ref=merge).store, mode="r")
    assert sorted(g.keys()) == ["a", "new"]
    assert g["new"][:].tolist() == [3] * 8


# -- revert ------------------------------------------------------------------------------------


def test_revert_restores_the_data_with_a_new_commit(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    _write(repo, "main", 0, 8, 1)
    bad = _write(repo, "main", 8, 16, 2)
    later = _write(repo, "main", 24, 28, 3)
    revert = repo.revert(bad, author="ana")
    info = repo.commit_info(revert)
    assert info.parents == (later,)
    assert info.metadata == {"reverts": bad}
    assert info.author == "ana"
    assert info.message.startswith(f"Revert {bad[:10]}")
    np.testing.assert_array_equal(_read(repo), _expected((0, 8, 1), (24, 28, 3)))
    assert repo.reflog("main")[0].action == "revert"
    # history is kept: the reverted data is still readable at its commit
    np.testing.assert_array_equal(_read(repo, bad), _expected((0, 8, 1), (8, 16, 2)))


def test_revert_of_a_new_array_and_of_a_delete(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _base(repo)
    s = repo.writable_session()
    zarr.open_group(s.store).create_array("b", shape=(8,), chunks=(4,), dtype="i4")[:] = 4
    added = s.commit("add b")
    s = repo.writable_session()
    del zarr.open_group(s.store)["b"]
    dropped = s.commit("drop b")
    repo.revert(dropped)
    g = zarr.open_group(repo.readonly_session().store, mode="r")
    assert g["b"][:].tolist() == [4] * 8
    repo.revert(added)
    assert "b" not in zarr.open_group(repo.readonly_session().store, mode="r")


def test_revert_of_a_merge_undoes_what_it_brought(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    repo.create_branch("dev")
    _write(repo, "dev", 0, 8, 1)
    _write(repo, "main", 20, 24, 2)
    merge = repo.merge("dev", "main")
    repo.revert(merge)  # against its first parent: what the merge brought from dev goes
    np.testing.assert_array_equal(_read(repo), _expected((20, 24, 2)))


def test_revert_refused_when_later_commits_touched_the_same_chunks(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _base(repo)
    bad = _write(repo, "main", 0, 4, 1)
    head = _write(repo, "main", 2, 4, 2)
    with pytest.raises(zarrlake.ConflictError) as err:
        repo.revert(bad)
    assert [(c.kind, c.path, c.chunk) for c in err.value.conflicts] == [("chunk", "a", (0,))]
    assert repo.resolve("main") == head


def test_revert_twice_is_an_empty_commit(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _base(repo)
    bad = _write(repo, "main", 0, 4, 1)
    revert = repo.revert(bad)
    with pytest.raises(zarrlake.EmptyCommitError):
        repo.revert(bad)
    assert repo.resolve("main") == revert


def test_revert_of_the_first_commit_is_refused(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = repo.resolve("main")
    with pytest.raises(zarrlake.InvalidInputError, match="first"):
        repo.revert(first)
