"""A protected branch refuses direct commits, merges, reverts, resets and deletes, with an
error that names the way through: a pull request."""

from __future__ import annotations

import numpy as np
import pytest

import zarrlake
from tests.integration.review._lake import with_temp, write
from zarrlake import checks

S = (slice(0, 4), slice(0, 4))


def test_direct_commit_to_a_protected_branch_is_refused(repo: zarrlake.Repo) -> None:
    head = with_temp(repo)
    repo.protect_branch("main")
    s = write(repo, S, 3.0)
    with pytest.raises(zarrlake.ProtectedBranchError, match="open a pull request") as err:
        s.commit("direct")
    assert err.value.branch == "main"
    assert "direct commit is refused" in str(err.value)
    assert repo.branches()["main"] == head


def test_direct_merge_and_revert_are_refused(repo: zarrlake.Repo) -> None:
    head = with_temp(repo)
    repo.create_branch("dev")
    write(repo, S, 3.0, branch="dev").commit("dev work")
    repo.protect_branch("main")
    with pytest.raises(zarrlake.ProtectedBranchError, match="direct merge is refused"):
        repo.merge("dev", "main")
    with pytest.raises(zarrlake.ProtectedBranchError):
        repo.revert(head, branch="main")
    assert repo.branches()["main"] == head


def test_reset_and_delete_are_refused_even_with_direct_commits(repo: zarrlake.Repo) -> None:
    first = repo.branches()["main"]
    head = with_temp(repo)
    repo.protect_branch("main", allow_direct_commits=True)
    write(repo, S, 3.0).commit("direct commits are allowed")
    with pytest.raises(zarrlake.ProtectedBranchError, match="a reset is refused"):
        repo.reset_branch("main", first)
    with pytest.raises(zarrlake.ProtectedBranchError, match="deleting it is refused"):
        repo.delete_branch("main")
    assert repo.log("main")[1].id == head


def test_unprotecting_allows_direct_commits_again(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.protect_branch("main")
    assert [r.branch for r in repo.protected_branches()] == ["main"]
    repo.unprotect_branch("main")
    assert repo.protected_branches() == []
    write(repo, S, 3.0).commit("direct again")
    with pytest.raises(zarrlake.NotFoundError, match="not protected"):
        repo.unprotect_branch("main")


def test_protection_refuses_unknown_required_checks_and_bad_counts(repo: zarrlake.Repo) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="no check named 'no-nan'"):
        repo.protect_branch("main", required_checks=["no-nan"])
    with pytest.raises(zarrlake.InvalidInputError, match="required_approvals must be an int"):
        repo.protect_branch("main", required_approvals=-1)
    with pytest.raises(zarrlake.InvalidInputError, match="allow_direct_commits must be"):
        repo.protect_branch("main", allow_direct_commits="yes")  # type: ignore[arg-type]
    assert repo.protected_branches() == []


def test_protecting_again_replaces_the_rule(repo: zarrlake.Repo) -> None:
    repo.add_check("no-nan", checks.no_nan())
    repo.protect_branch("main", required_approvals=2)
    repo.protect_branch("main", required_checks=["no-nan"], required_approvals=1)
    (rule,) = repo.protected_branches()
    assert (rule.required_checks, rule.required_approvals, rule.allow_direct_commits) == (
        ("no-nan",),
        1,
        False,
    )


def test_other_branches_stay_open_for_commits(repo: zarrlake.Repo) -> None:
    with_temp(repo)
    repo.create_branch("dev")
    repo.protect_branch("main")
    write(repo, S, np.float32(3.0), branch="dev").commit("dev is free")
    assert repo.log("dev")[0].message == "dev is free"
