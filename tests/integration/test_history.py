"""repo.diff, session.status, reset_branch and the ref log, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.model.diff import ABSENT, FieldChange
from zarrlake.testing import LakeProbe


def _setup(repo: zarrlake.Repo) -> str:
    """``/t`` (40 int64 in chunks of 4, fill 0, values 1..40), group ``/g`` with an attribute."""
    s = repo.writable_session()
    g = zarr.open_group(s.store, mode="w")
    t = g.create_array("t", shape=(40,), chunks=(4,), dtype="i8", fill_value=0)
    t[:] = np.arange(1, 41)
    g.create_group("g").attrs["title"] = "first"
    return s.commit("setup")


def _edit(s: zarrlake.Session) -> None:
    t = zarr.open_array(s.store, path="t", mode="r+")
    t[0:4] = 0  # the fill value: zarr deletes chunk 0
    t[4:6] = -1  # chunk 1 changes
    t[8:12] = np.arange(9, 13)  # chunk 2 rewritten with the same values: no change
    t.attrs["units"] = "K"
    g = zarr.open_group(s.store, mode="r+")
    g.create_array("new", shape=(3, 3), chunks=(2, 2), dtype="f4", fill_value=0)[:] = 1
    del g["g"]


EXPECTED_T = {
    "chunks_added": frozenset(),
    "chunks_changed": frozenset({(1,)}),
    "chunks_removed": frozenset({(0,)}),
}


def _chunks(node: zarrlake.NodeDiff) -> dict[str, frozenset[tuple[int, ...]]]:
    return {
        "chunks_added": node.chunks_added,
        "chunks_changed": node.chunks_changed,
        "chunks_removed": node.chunks_removed,
    }


def test_diff_between_commits_is_exact(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = _setup(repo)
    s = repo.writable_session()
    _edit(s)
    second = s.commit("edit")
    d = repo.diff(first, second)
    assert (d.before, d.after) == (first, second)
    assert [(n.path, n.status, n.node_type) for n in d] == [
        ("g", "removed", "group"),
        ("new", "added", "array"),
        ("t", "modified", "array"),
    ]
    assert _chunks(d["t"]) == EXPECTED_T
    assert d["t"].attributes == (FieldChange("units", ABSENT, "K"),)
    assert d["t"].metadata == ()
    assert d["new"].chunks_added == {(0, 0), (0, 1), (1, 0), (1, 1)}
    s = d.summary()
    assert (s.nodes_added, s.nodes_removed, s.nodes_modified) == (1, 1, 1)
    assert (s.chunks_added, s.chunks_changed, s.chunks_removed) == (4, 1, 1)


def test_diff_backwards_is_the_mirror_image(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = _setup(repo)
    s = repo.writable_session()
    _edit(s)
    second = s.commit("edit")
    back = repo.diff(second, first)
    assert [(n.path, n.status) for n in back] == [
        ("g", "added"),
        ("new", "removed"),
        ("t", "modified"),
    ]
    assert _chunks(back["t"]) == {
        "chunks_added": frozenset({(0,)}),
        "chunks_changed": frozenset({(1,)}),
        "chunks_removed": frozenset(),
    }
    assert back["t"].attributes == (FieldChange("units", "K", ABSENT),)


def test_a_diff_along_first_parents_reads_no_manifest(
    make_repo: Callable[..., zarrlake.Repo], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo()
    first = _setup(repo)
    s = repo.writable_session()
    _edit(s)
    second = s.commit("edit")
    s = repo.writable_session()
    zarr.open_array(s.store, path="t", mode="r+")[20:24] = 7
    third = s.commit("one more")
    s = repo.writable_session()
    zarr.open_array(s.store, path="t", mode="r+")[20:24] = 8  # chunk 5 again
    fourth = s.commit("chunk 5 again")
    reader = LakeProbe(repo).reader

    def no_manifest(*args: object) -> None:
        raise AssertionError("a manifest was read")

    for name in ("index", "shard", "prefetch_shards"):
        monkeypatch.setattr(reader, name, no_manifest)
    assert _chunks(repo.diff(first, second)["t"]) == EXPECTED_T
    assert repo.diff(second, first)["t"].chunks_added == {(0,)}
    assert repo.diff(first, third)["t"].chunks_changed == {(1,), (5,)}  # two commits apart
    assert repo.diff(third, first)["t"].chunks_added == {(0,)}
    with pytest.raises(AssertionError, match="a manifest was read"):
        repo.diff(second, fourth)  # whether chunk 5 ended as it began takes its content
    monkeypatch.undo()
    assert repo.diff(second, fourth)["t"].chunks_changed == {(5,)}


def test_resize_diff_shows_shape_and_dropped_chunks(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    first = _setup(repo)
    s = repo.writable_session()
    zarr.open_array(s.store, path="t", mode="r+").resize((10,))
    second = s.commit("shrink")
    node = repo.diff(first, second)["t"]
    assert node.metadata == (FieldChange("shape", [40], [10]),)
    assert node.chunks_removed == {(i,) for i in range(3, 10)}
    assert not node.chunks_added
    assert not node.chunks_changed
    s = repo.writable_session()
    zarr.open_array(s.store, path="t", mode="r+").resize((48,))
    third = s.commit("grow")
    grown = repo.diff(second, third)["t"]
    assert grown.metadata == (FieldChange("shape", [10], [48]),)
    assert grown.n_chunks == 0  # growing writes no chunk: new ones read as the fill value


def test_diff_of_a_commit_with_itself_is_empty(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = _setup(repo)
    assert repo.diff(first, "main").is_empty()


def test_status_shows_uncommitted_changes_exactly(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = _setup(repo)
    s = repo.writable_session()
    assert s.status().is_empty()
    _edit(s)
    status = s.status()
    assert status.before == first
    assert [(n.path, n.status) for n in status] == [
        ("g", "removed"),
        ("new", "added"),
        ("t", "modified"),
    ]
    assert _chunks(status["t"]) == EXPECTED_T
    commit = s.commit("edit")
    # status equals the diff the commit recorded
    committed = repo.diff(first, commit)
    assert [(n.path, n.status, _chunks(n)) for n in status] == [
        (n.path, n.status, _chunks(n)) for n in committed
    ]
    assert s.status().is_empty()  # committed: nothing uncommitted is left


def test_status_of_a_resize_and_fill_value_writes(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _setup(repo)
    s = repo.writable_session()
    t = zarr.open_array(s.store, path="t", mode="r+")
    t.resize((18,))  # drops chunks 5..9 (chunk 4 is now partial and kept)
    t[0:8] = 0  # chunks 0 and 1 hold only the fill value: deleted
    node = s.status()["t"]
    assert node.metadata == (FieldChange("shape", [40], [18]),)
    assert node.chunks_removed == {(0,), (1,), (5,), (6,), (7,), (8,), (9,)}
    assert not node.chunks_added
    assert not node.chunks_changed


def test_status_sees_writes_of_other_processes_of_the_session(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    _setup(repo)
    s = repo.writable_session()
    joined = zarrlake.Repo.open(catalog=repo.config.catalog, name=repo.name).session(s.id or "")
    assert joined is s  # same process: the same Session object
    zarr.open_array(s.store, path="t", mode="r+")[36:40] = 5
    s.flush()
    assert s.status()["t"].chunks_changed == {(9,)}


def test_readonly_session_status_is_empty(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = _setup(repo)
    status = repo.readonly_session().status()
    assert status.is_empty()
    assert status.before == first


def test_diff_with_unknown_refs_is_not_found(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    _setup(repo)
    with pytest.raises(zarrlake.NotFoundError):
        repo.diff("main", "nope")
    with pytest.raises(zarrlake.InvalidRefError):
        repo.diff("main~x", "main")


# -- reset_branch and the ref log --------------------------------------------------------------


def test_reset_branch_moves_by_cas_and_is_logged(make_repo: Callable[..., zarrlake.Repo]) -> None:
    repo = make_repo()
    first = _setup(repo)
    s = repo.writable_session(author="ana")
    zarr.open_array(s.store, path="t", mode="r+")[0:4] = 9
    second = s.commit("second")
    before = LakeProbe(repo).catalog.clock()
    assert (
        repo.reset_branch("main", "main~1", expected=second, author="bo", message="undo") == first
    )
    assert repo.resolve("main") == first
    entry = repo.reflog("main")[0]
    assert (entry.action, entry.old_commit, entry.new_commit, entry.author, entry.message) == (
        "reset",
        second,
        first,
        "bo",
        "undo",
    )
    assert entry.at.timestamp() >= before
    moves = [(e.action, e.old_commit, e.new_commit) for e in repo.reflog("main")]
    assert moves[1] == ("commit", first, second)
    assert moves[-1][0] == "create"


def test_reset_branch_with_a_stale_expectation_changes_nothing(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    first = _setup(repo)
    s = repo.writable_session()
    zarr.open_array(s.store, path="t", mode="r+")[0:4] = 9
    second = s.commit("second")
    log_before = repo.reflog("main")
    with pytest.raises(zarrlake.RefMovedError):
        repo.reset_branch("main", first, expected=first)
    assert repo.resolve("main") == second
    assert repo.reflog("main") == log_before


def test_reset_branch_refuses_tags_and_unknown_targets(
    make_repo: Callable[..., zarrlake.Repo],
) -> None:
    repo = make_repo()
    first = _setup(repo)
    repo.create_tag("v1", first)
    with pytest.raises(zarrlake.NotFoundError):
        repo.reset_branch("v1", "main")
    with pytest.raises(zarrlake.NotFoundError):
        repo.reset_branch("main", "nowhere")
    with pytest.raises(zarrlake.InvalidRefError):
        repo.reset_branch("main", "main@{nonsense}")
    assert repo.resolve("main") == first
