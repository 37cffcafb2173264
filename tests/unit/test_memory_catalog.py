"""Session and history logic on the in-memory fake of the catalog interface
(``zarrlake.testing.memory``): commits, rebases, conflicts, merges, reverts, idempotency keys
and the graph, with no database under them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.testing import memory_repo


@pytest.fixture
def repo(tmp_path: Path) -> zarrlake.Repo:
    r = memory_repo(tmp_path / "chunks")
    s = r.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(8,), chunks=(2,), dtype="i4")[:] = 0
    s.commit("base")
    return r


def _write(repo: zarrlake.Repo, branch: str, lo: int, value: int) -> zarrlake.WritableSession:
    s = repo.writable_session(branch)
    zarr.open_array(s.store, path="a", mode="r+")[lo : lo + 2] = value
    return s


def _values(repo: zarrlake.Repo, ref: str = "main") -> list[int]:
    return zarr.open_array(repo.readonly_session(ref).store, path="a", mode="r")[:].tolist()


def test_a_session_rebases_over_a_commit_on_other_chunks(repo: zarrlake.Repo) -> None:
    late = _write(repo, "main", 0, 1)
    _write(repo, "main", 2, 2).commit("other chunk")
    late.commit("rebased")
    assert _values(repo) == [1, 1, 2, 2, 0, 0, 0, 0]
    assert [c.message for c in repo.log()][:2] == ["rebased", "other chunk"]


def test_a_real_chunk_conflict_is_raised_and_the_session_stays_open(repo: zarrlake.Repo) -> None:
    late = _write(repo, "main", 0, 1)
    winner = _write(repo, "main", 0, 2).commit("first")
    with pytest.raises(zarrlake.ConflictError) as caught:
        late.commit("second")
    assert [(c.kind, c.path, c.chunk, c.commit) for c in caught.value.conflicts] == [
        ("chunk", "a", (0,), winner)
    ]
    assert late.state == "open"
    late.rebase("ours")
    late.commit("ours wins")
    assert _values(repo)[:2] == [1, 1]


def test_merge_preview_and_merge_agree_and_revert_undoes(repo: zarrlake.Repo) -> None:
    repo.create_branch("dev")
    _write(repo, "dev", 4, 5).commit("dev")
    _write(repo, "main", 0, 1).commit("main")
    preview = repo.merge("dev", dry_run=True)
    assert (preview.outcome, preview.conflicts) == ("merge", ())
    assert preview.changes is not None
    assert preview.changes["a"].chunks_added == {(2,)}  # zeros were never stored
    merged = repo.merge("dev")
    assert repo.diff("main~1", merged)["a"].chunks_added == {(2,)}
    assert _values(repo) == [1, 1, 0, 0, 5, 5, 0, 0]
    repo.revert(repo.resolve("main~1"))
    assert _values(repo) == [0, 0, 0, 0, 5, 5, 0, 0]


def test_idempotency_key_counts_only_while_its_commit_is_on_the_branch(
    repo: zarrlake.Repo,
) -> None:
    base = repo.resolve("main")
    first = _write(repo, "main", 0, 1).commit("run 1", idempotency_key="k")
    assert _write(repo, "main", 0, 1).commit("retry", idempotency_key="k") == first
    repo.reset_branch("main", base)
    again = _write(repo, "main", 0, 2).commit("retry after reset", idempotency_key="k")
    assert again != first
    assert _values(repo)[:2] == [2, 2]


def test_graph_and_sessions_come_from_the_same_engine(repo: zarrlake.Repo) -> None:
    repo.create_branch("dev")
    _write(repo, "dev", 0, 1).commit("dev")
    open_one = repo.writable_session()
    g = repo.graph()
    assert [r.commit.message for r in g] == ["dev", "base", "Repository initialized"]
    assert g.rows[0].refs == ("dev",)
    assert {i.id: i.status for i in repo.sessions()} == {open_one.id: "open"}
    assert np.asarray(_values(repo, "dev")).sum() == 2
