"""The History page's commit panel says which pull request a commit merged and which checks
judged it, every value escaped."""

from __future__ import annotations

from zarrlake.types import CommitInfo, from_epoch
from zarrlake.ui.dashboard.commit import review_html


def test_commit_panel_shows_the_pull_request_and_checks_escaped() -> None:
    checks = {
        "no-nan": {"passed": True, "message": "no NaN"},
        "<b>x</b>": {"passed": False, "message": "<script>alert(1)</script>"},
    }
    info = CommitInfo(
        "c1", ("a", "b"), "me", "m", {"checks": checks, "pull_request": 7}, from_epoch(0)
    )
    out = review_html(info)
    assert '<a href="?page=pulls&amp;pr=7">pull request #7</a>' in out
    assert (
        'checks: <span class="zl-text">&lt;b&gt;x&lt;/b&gt; failed: '
        "&lt;script&gt;alert(1)&lt;/script&gt;; 1 passed</span>"
    ) in out
    assert "<script>" not in out


def test_a_commit_no_check_judged_has_no_review_lines() -> None:
    assert review_html(CommitInfo("c1", (), "me", "m", {}, from_epoch(0))) == ""
