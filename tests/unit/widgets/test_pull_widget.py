"""``PullRequestWidget``: what it shows of a pull request, and its buttons through the widget
API, on a real lake (no browser)."""

from __future__ import annotations

import numpy as np
import zarr

import zarrlake
from zarrlake import checks
from zarrlake.review import PullRequest
from zarrlake.ui.widgets import PullRequestWidget

TITLE = "<img src=x onerror=alert(1)> NaN fix"


def _pull(repo: zarrlake.Repo) -> PullRequest:
    """main holds ``temp`` (ones), protected by ``no-nan`` and one approval; ``dev`` writes
    NaN into chunk (0, 0); pull request #1 by ana proposes dev."""
    s = repo.writable_session()
    zarr.open_group(s.store, mode="a").create_array(
        "temp", shape=(8, 8), chunks=(4, 4), dtype="f4"
    )[:] = 1.0
    s.commit("create temp")
    repo.create_branch("dev")
    s = repo.writable_session("dev")
    zarr.open_array(s.store, path="temp")[0:4, 0:4] = np.nan
    s.commit("nan on dev")
    repo.add_check("no-nan", checks.no_nan("temp"), on="merge")
    repo.protect_branch("main", required_checks=["no-nan"], required_approvals=1)
    return repo.open_pull_request("dev", title=TITLE, author="ana")


def test_widget_shows_the_pull_request_escaped(sqlite_repo: zarrlake.Repo) -> None:
    widget = _pull(sqlite_repo).widget()
    assert isinstance(widget, PullRequestWidget)
    assert widget.header.value == (
        "<b>#1 &lt;img src=x onerror=alert(1)&gt; NaN fix</b> &middot; open &middot; "
        "<code>dev</code> &rarr; <code>main</code>"
    )
    assert widget.checks.value == (
        "checks: 0 of 1 passed<ul><li>no-nan: failed &middot; NaN in 1 changed chunk</li></ul>"
    )
    assert widget.approvals.value == "approvals: 0 of 1 needed"
    assert widget.conflicts.value == "conflicts: 0"
    assert "<img" not in widget.header.value


def test_buttons_approve_merge_and_show_refusals(sqlite_repo: zarrlake.Repo) -> None:
    pr = _pull(sqlite_repo)
    widget = pr.widget(user="ana")
    widget.approve_button.click()
    assert "&#x27;ana&#x27; opened pull request #1 and cannot approve it" in widget.message.value
    widget.user.value = "bo"
    widget.approve_button.click()
    assert widget.message.value == "approved by bo"
    assert widget.approvals.value == "approvals: 1 of 1 needed: bo"
    widget.merge_button.click()
    assert "no-nan: NaN in 1 changed chunk (temp chunks (0, 0))" in (widget.message.value)
    assert sqlite_repo.pull_request(1).state == "open"
    s = sqlite_repo.writable_session("dev")
    zarr.open_array(s.store, path="temp")[0:4, 0:4] = 2.0
    s.commit("fix on dev")
    widget.approve_button.click()  # the new head needs a new approval
    widget.merge_button.click()
    merged = sqlite_repo.branches()["main"]
    assert widget.message.value == f"merged as <code>{merged[:10]}</code>"
    assert widget.header.value.endswith("merged &middot; <code>dev</code> &rarr; <code>main</code>")
    assert widget.merge_button.disabled
    assert sqlite_repo.commit_info("main").pull_request == 1
