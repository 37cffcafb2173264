"""Data pull requests: opened, commented, approved by someone else than the author, merged
into a protected branch by compare-and-swap (checks re-run against the target's head, the
merge commit links the pull request), closed; stale and bad requests refused clearly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarrlake
from tests.integration._workers import Child
from tests.integration.review._lake import install_checks, merge_pull, with_temp, write
from zarrlake import checks

S = (slice(0, 4), slice(0, 4))  # chunk (0, 0)
T = (slice(4, 8), slice(4, 8))  # chunk (1, 1)


@pytest.fixture
def team(repo: zarrlake.Repo) -> zarrlake.Repo:
    """``main`` protected (one approval), ``dev`` with one commit writing chunk (0, 0)."""
    with_temp(repo)
    repo.create_branch("dev")
    write(repo, S, 3.0, branch="dev").commit("dev work")
    repo.protect_branch("main", required_approvals=1)
    return repo


def test_open_list_and_show_a_pull_request(team: zarrlake.Repo) -> None:
    pr = team.open_pull_request("dev", "main", title="Calibrate", description="why", author="ana")
    assert (pr.number, pr.state, pr.source, pr.target, pr.author) == (
        1,
        "open",
        "dev",
        "main",
        "ana",
    )
    assert [p.number for p in team.pull_requests()] == [1]
    assert team.pull_request(1).title == "Calibrate"
    assert [c.message for c in pr.commits()] == ["dev work"]
    assert pr.preview().outcome == "merge"
    assert team.pull_requests(state="merged") == []


def test_approved_pull_request_merges_into_a_protected_branch(team: zarrlake.Repo) -> None:
    pr = team.open_pull_request("dev", "main", title="Calibrate", author="ana")
    pr.comment("looks right", author="bo")
    with pytest.raises(zarrlake.PullRequestError, match="needs 1 approval"):
        pr.merge(author="ana")
    pr.approve(by="bo")
    assert pr.approvals() == ["bo"]
    merged = pr.merge(author="ana")
    assert pr.state == "merged"
    assert pr.merge_commit == merged
    info = team.commit_info("main")
    assert (info.id, info.pull_request, len(info.parents)) == (merged, 1, 2)
    assert info.message == "Merge pull request #1 from dev: Calibrate"
    assert [(e.kind, e.author) for e in pr.events()] == [
        ("comment", "bo"),
        ("approve", "bo"),
        ("merge", "ana"),
    ]
    assert team.pull_requests() == []
    assert [p.number for p in team.pull_requests("merged")] == [1]


def test_the_author_cannot_approve_their_own(team: zarrlake.Repo) -> None:
    pr = team.open_pull_request("dev", "main", title="Mine", author="ana")
    with pytest.raises(zarrlake.PullRequestError, match="'ana' opened pull request #1"):
        pr.approve(by="ana")
    assert pr.approvals() == []


def test_a_merged_pull_request_takes_no_approval_and_no_second_merge(team: zarrlake.Repo) -> None:
    pr = team.open_pull_request("dev", "main", title="Once", author="ana")
    pr.approve(by="bo")
    pr.merge(author="ana")
    head = team.branches()["main"]
    with pytest.raises(zarrlake.PullRequestError, match="is merged; it takes no approvals"):
        pr.approve(by="cy")
    with pytest.raises(zarrlake.PullRequestError, match="is merged; nothing to merge"):
        pr.merge(author="ana")
    assert team.branches()["main"] == head


def test_close_and_closing_again(team: zarrlake.Repo) -> None:
    pr = team.open_pull_request("dev", "main", title="Nope", author="ana")
    pr.close(by="bo")
    assert pr.state == "closed"
    with pytest.raises(zarrlake.PullRequestError, match="already closed"):
        pr.close(by="bo")
    with pytest.raises(zarrlake.PullRequestError, match="is closed; nothing to merge"):
        pr.merge(author="ana")


def test_an_approval_of_an_earlier_source_head_no_longer_counts(team: zarrlake.Repo) -> None:
    pr = team.open_pull_request("dev", "main", title="Moving", author="ana")
    pr.approve(by="bo")
    write(team, T, 4.0, branch="dev").commit("more dev work")
    assert pr.approvals() == []
    with pytest.raises(zarrlake.PullRequestError, match="earlier heads by bo no longer count"):
        pr.merge(author="ana")
    pr.approve(by="bo")
    pr.merge(author="ana")
    assert team.commit_info("main").pull_request == 1


def test_a_deleted_source_branch_is_named(team: zarrlake.Repo) -> None:
    pr = team.open_pull_request("dev", "main", title="Gone", author="ana")
    team.delete_branch("dev")
    with pytest.raises(zarrlake.PullRequestError, match=r"source branch 'dev' .* was deleted"):
        pr.approve(by="bo")
    with pytest.raises(zarrlake.PullRequestError, match="recreate it or close"):
        pr.merge(author="ana")


def test_required_checks_run_against_the_target_head(team: zarrlake.Repo) -> None:
    team.add_check("no-nan", checks.no_nan("temp"), on="commit")
    team.protect_branch("main", required_checks=["no-nan"], required_approvals=1)
    write(team, T, np.nan, branch="dev").commit("nan on dev")
    pr = team.open_pull_request("dev", "main", title="Has NaN", author="ana")
    pr.approve(by="bo")
    [result] = pr.checks()
    assert (result.name, result.passed, result.chunks) == ("no-nan", False, {"temp": ((1, 1),)})
    head = team.branches()["main"]
    with pytest.raises(zarrlake.CheckFailedError, match="no-nan: NaN in 1 changed chunk"):
        pr.merge(author="ana")
    assert team.branches()["main"] == head
    assert pr.refresh().state == "open"


@pytest.mark.parametrize(
    ("source", "target", "title", "error", "message"),
    [
        ("dev", "dev", "t", zarrlake.PullRequestError, "both are 'dev'"),
        ("nope", "main", "t", zarrlake.NotFoundError, "no branch 'nope'"),
        ("dev", "main", "  ", zarrlake.PullRequestError, "needs a title"),
        ("dev", "main", "a\x00b", zarrlake.InvalidInputError, "NUL"),
    ],
)
def test_bad_pull_requests_are_refused(
    team: zarrlake.Repo, source: str, target: str, title: str, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        team.open_pull_request(source, target, title=title, author="ana")
    assert team.pull_requests(state=None) == []


def test_unknown_state_is_refused(team: zarrlake.Repo) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="state must be one of open, merged"):
        team.pull_requests(state="draft")


def test_hostile_title_and_comment_are_escaped_in_the_notebook_repr(team: zarrlake.Repo) -> None:
    evil = "<script>alert(1)</script>"
    pr = team.open_pull_request("dev", "main", title=evil, description=evil, author="<b>x</b>")
    pr.comment(f"<img src=x onerror=alert(2)>{evil}", author="bo")
    html = pr._repr_html_()
    assert "<script>" not in html
    assert "<img" not in html
    assert "<b>x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_two_pull_requests_merged_at_once_one_wins_the_other_must_update(
    team: zarrlake.Repo, tmp_path: Path
) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    gen = install_checks(tmp_path / "site")
    next(gen)
    try:
        team.create_branch("dev2", "main")
        write(team, T, 5.0, branch="dev2").commit("dev2 work")
        team.add_check("meet", checks.custom("rendezvous", dir=str(meet), n=2), on="merge")
        numbers = []
        for src in ("dev", "dev2"):
            pr = team.open_pull_request(src, "main", title=src, author="ana")
            pr.approve(by="bo")
            numbers.append(pr.number)
        kids = [Child(merge_pull, team.config.catalog, team.name, n).start() for n in numbers]
        outcomes = sorted(k.result() for k in kids)
        assert outcomes[0] == "RefMovedError"
        assert outcomes[1].startswith("merged ")
        states = sorted(p.state for p in team.pull_requests(state=None))
        assert states == ["merged", "open"]
        team.add_check("meet", checks.custom("rendezvous", dir=str(meet), n=0), replace=True)
        loser = team.pull_requests()[0]
        loser.merge(author="ana")  # merged again: against the new head, checks re-run
        assert team.pull_requests() == []
    finally:
        next(gen, None)


def test_a_source_already_in_the_target_has_nothing_to_merge(team: zarrlake.Repo) -> None:
    team.create_branch("same", "main")
    pr = team.open_pull_request("same", "main", title="Nothing new", author="ana")
    pr.approve(by="bo")
    with pytest.raises(zarrlake.PullRequestError, match="already contains 'same'"):
        pr.merge(author="ana")
    assert pr.refresh().state == "open"
