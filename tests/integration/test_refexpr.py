"""Ref expressions resolve wherever a ref is accepted; bad ones raise our errors and change
nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC

import numpy as np
import pytest
import zarr

import zarrlake
from zarrlake.testing import LakeProbe


def _commit(repo: zarrlake.Repo, value: int, branch: str = "main") -> str:
    s = repo.writable_session(branch)
    g = zarr.open_group(s.store)
    arr = g["a"] if "a" in g else g.create_array("a", shape=(4,), chunks=(4,), dtype="i4")
    arr[:] = value
    return s.commit(f"v={value}")


def _value(session: zarrlake.Session) -> int:
    return int(np.asarray(zarr.open_array(session.store, path="a", mode="r")[:])[0])


@pytest.fixture
def chain(make_repo: Callable[..., zarrlake.Repo]) -> tuple[zarrlake.Repo, list[str]]:
    """main: init, v=1, v=2, v=3, v=4 (newest last)."""
    repo = make_repo()
    ids = [repo.resolve("main")] + [_commit(repo, v) for v in range(1, 5)]
    return repo, ids


def test_tilde_is_the_nth_first_parent_ancestor(chain: tuple[zarrlake.Repo, list[str]]) -> None:
    repo, ids = chain
    assert repo.resolve("main~0") == ids[4]
    assert repo.resolve("main~") == ids[3]
    assert repo.resolve("main~3") == ids[1]
    assert repo.resolve("main~1~2") == ids[1]
    assert repo.resolve(f"{ids[4][:8]}~4") == ids[0]
    with pytest.raises(zarrlake.NotFoundError, match="less than 5"):
        repo.resolve("main~5")


def test_caret_follows_first_and_merge_parents(chain: tuple[zarrlake.Repo, list[str]]) -> None:
    repo, _ids = chain
    repo.create_branch("dev", "main~2")
    dev = _commit(repo, 9, "dev")
    s = repo.writable_session()
    zarr.open_group(s.store).create_array("b", shape=(1,), dtype="i4")[:] = 1
    s.commit("b")
    merge = repo.merge("dev", "main", solver="theirs")
    assert repo.resolve("main^") == repo.resolve("main~1") != dev
    assert repo.resolve("main^2") == dev
    assert repo.resolve("main^0") == merge
    with pytest.raises(zarrlake.NotFoundError, match="2 parent"):
        repo.resolve("main^3")


def test_position_in_the_ref_log(chain: tuple[zarrlake.Repo, list[str]]) -> None:
    repo, ids = chain
    repo.reset_branch("main", ids[2])
    # the ref log of main, newest first: reset to ids[2], v=4, v=3, v=2, v=1, create
    assert repo.resolve("main@{0}") == ids[2]
    assert repo.resolve("main@{1}") == ids[4]
    assert repo.resolve("main@{5}") == ids[0]
    assert repo.resolve("main@{1}~2") == ids[2]
    with pytest.raises(zarrlake.NotFoundError, match="only 6 position"):
        repo.resolve("main@{6}")


def test_time_selects_the_head_at_that_time(chain: tuple[zarrlake.Repo, list[str]]) -> None:
    repo, ids = chain
    log = {e.new_commit: e.at for e in repo.reflog("main")}
    at_v2 = log[ids[2]]
    naive_utc = at_v2.astimezone(UTC).replace(tzinfo=None)
    between = at_v2 + (log[ids[3]] - at_v2) / 2
    assert repo.resolve(f"main@{{{at_v2.isoformat()}}}") == ids[2]  # as repo.reflog shows it
    assert repo.resolve(f"main@{{{naive_utc.isoformat()}}}") == ids[2]  # naive means UTC
    assert repo.resolve(f"main@{{{between.isoformat()}}}") == ids[2]
    with pytest.raises(zarrlake.NotFoundError, match="did not exist"):
        repo.resolve("main@{2000-01-01T00:00}")


def test_a_deleted_branch_resolves_through_its_ref_log(
    chain: tuple[zarrlake.Repo, list[str]],
) -> None:
    repo, ids = chain
    repo.create_branch("gone", ids[1])
    repo.delete_branch("gone")
    with pytest.raises(zarrlake.NotFoundError):
        repo.resolve("gone")
    assert repo.resolve("gone@{1}") == ids[1]
    with pytest.raises(zarrlake.NotFoundError, match="deleted"):
        repo.resolve("gone@{0}")


def test_every_ref_taking_api_accepts_expressions(chain: tuple[zarrlake.Repo, list[str]]) -> None:
    repo, ids = chain
    assert _value(repo.readonly_session(ref="main~2")) == 2
    assert _value(repo.readonly_session(commit="main@{1}")) == 3
    assert repo.create_branch("old", ref="main~3") == ids[1]
    assert repo.create_tag("t2", "main~2") == ids[2]
    assert [c.id for c in repo.log("main~2")] == [ids[2], ids[1], ids[0]]
    assert repo.commit_info("main~1").id == ids[3]
    assert repo.diff("main~1", "main")["a"].chunks_changed == {(0,)}
    assert repo.reset_branch("old", "t2~0", expected="main~3") == ids[2]


@pytest.mark.parametrize(
    "bad",
    [
        "main~x",
        "main@{nonsense}",
        "main@{}",
        "main@{1",
        "main;DROP TABLE zl_refs",
        "../../etc/passwd",
        "main\x00",
        "-rf",
        "x" * 1000,
    ],
)
def test_malformed_expressions_raise_invalid_ref_and_change_nothing(
    chain: tuple[zarrlake.Repo, list[str]], bad: str
) -> None:
    repo, _ids = chain
    refs = (repo.branches(), repo.tags(), repo.reflog("main"))
    for call in (
        lambda: repo.resolve(bad),
        lambda: repo.create_branch("new", bad),
        lambda: repo.create_tag("new", bad),
        lambda: repo.reset_branch("main", bad),
        lambda: repo.readonly_session(ref=bad),
        lambda: repo.log(bad),
        lambda: repo.merge(bad, "main"),
        lambda: repo.revert(bad),
    ):
        with pytest.raises(zarrlake.InvalidRefError):
            call()
    assert (repo.branches(), repo.tags(), repo.reflog("main")) == refs


def test_unknown_refs_raise_not_found_and_change_nothing(
    chain: tuple[zarrlake.Repo, list[str]],
) -> None:
    repo, _ids = chain
    refs = (repo.branches(), repo.tags())
    for bad in ("nope", "nope~1", "nope@{0}", "ffffffff", "main@{99}"):
        with pytest.raises(zarrlake.NotFoundError):
            repo.resolve(bad)
        with pytest.raises(zarrlake.NotFoundError):
            repo.create_branch("new", bad)
    assert (repo.branches(), repo.tags()) == refs


def test_ambiguous_prefix_is_invalid_ref(chain: tuple[zarrlake.Repo, list[str]]) -> None:
    repo, ids = chain
    repo.create_branch("side")
    catalog = LakeProbe(repo).catalog
    head = catalog.commits.get(ids[4])
    parent = ids[4]
    for cid in ("abcd" + "0" * 16, "abcd" + "1" * 16):
        row = dataclasses.replace(head, id=cid, parent_id=parent, generation=head.generation + 1)
        assert catalog.writer.publish("side", parent, row, {}) is not None
        parent, head = cid, row
    with pytest.raises(zarrlake.InvalidRefError, match="ambiguous"):
        repo.resolve("abcd")
    assert repo.resolve("abcd1") == "abcd" + "1" * 16
