"""The Pull requests page's Viewer on a real lake, without a browser: what it shows, and
its write actions behind the token."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

import zarrlake
import zarrlake.display
from zarrlake import checks
from zarrlake.ui.dashboard import Dashboard
from zarrlake.ui.dashboard.common import Writes
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.pulls import PullsView

EVIL = "<script>alert('pr')</script>"


@pytest.fixture
def lake(tmp_path: Path) -> zarrlake.Repo:
    """``temp`` on main (protected, one approval, a no-NaN check); ``dev`` writes NaN into
    chunk (0, 0) and pull request #1 proposes it, with a hostile title and comment."""
    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session(author="ana")
    zarr.open_group(s.store, mode="w").create_array(
        "temp", shape=(8, 8), chunks=(4, 4), dtype="f4"
    )[:] = 1.0
    s.commit("create temp")
    repo.create_branch("dev")
    s = repo.writable_session("dev", author="ana")
    zarr.open_array(s.store, path="temp")[0:4, 0:4] = np.nan
    s.commit("nan on dev")
    repo.add_check("no-nan", checks.no_nan("temp"))
    repo.protect_branch("main", required_approvals=1)
    pr = repo.open_pull_request("dev", "main", title=EVIL, description=EVIL, author="ana")
    pr.comment(EVIL, author="bo")
    return repo


def test_the_page_shows_the_request_its_checks_and_its_changes(lake: zarrlake.Repo) -> None:
    v = PullsView(Context(lake))
    assert list(v.w_pick.options.values()) == [1]
    assert v.check_rows() == [("no-nan", "FAILED")]
    assert "&lt;script&gt;" in v.header.object
    assert "<script>" not in v.header.object
    assert "<script>" not in v.activity.object
    assert "<script>" not in v.description.object
    assert "temp" in v.changes.object
    summary = lake.pull_request(1).preview().summary()
    assert v.conflicts.object == f"<p>{zarrlake.display.esc(summary)}</p>"


def test_writes_need_the_token_and_follow_the_rules(lake: zarrlake.Repo) -> None:
    v = PullsView(Context(lake, Writes(True, "tok")))
    v.act("wrong", lambda p: p.approve(by="bo"), "approved")
    assert "refused: the write token is missing or wrong" in v.result.objects[0].object
    v.act("tok", lambda p: p.approve(by="ana"), "approved")
    assert "cannot approve it" in v.result.objects[0].object
    v.act("tok", lambda p: p.approve(by="bo"), "approved")
    assert lake.pull_request(1).approvals() == ["bo"]
    v.act("tok", lambda p: p.merge(author="bo"), "merged")
    assert "no-nan: NaN in 1 changed chunk" in v.result.objects[0].object
    assert lake.pull_request(1).state == "open"


def test_the_dashboard_has_a_pull_requests_page(lake: zarrlake.Repo) -> None:
    d = Dashboard(lake)
    d.load()
    d.page = "pulls"
    assert isinstance(d.views["pulls"], PullsView)
