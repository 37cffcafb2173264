"""Every page of the served dashboard on the demo lake, read-only, in headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import zarr

import zarrlake
from tests.integration.ui.conftest import Server, wait_until
from tests.integration.ui.pages import (
    ComparePage,
    DataPage,
    HistoryPage,
    MergePage,
    OverviewPage,
    SessionsPage,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(demo_lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(demo_lake)
    yield srv
    srv.stop()


def _commit(repo: zarrlake.Repo, message: str) -> str:
    for ref in ("main", "experiment"):
        for c in repo.log(ref):
            if c.message.startswith(message):
                return c.id
    raise AssertionError(message)


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_overview_lists_branches_and_tags(server: Server, page: Any, theme: str) -> None:
    p = OverviewPage(page, server.url).open(theme=theme)
    refs = p.refs()
    assert [r.split()[0] for r in refs] == ["main", "experiment", "v1.0"]
    assert p.has_text("open sessions")
    p.screenshot(f"overview-{theme}")


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_history_deep_link_shows_the_commit(
    server: Server, demo_lake: zarrlake.Repo, page: Any, theme: str
) -> None:
    revert = _commit(demo_lake, "Revert")
    p = HistoryPage(page, server.url).open(theme=theme, commit=revert)
    details = wait_until(lambda: "Revert" in p.details() and p.details())
    s = demo_lake.diff(demo_lake.commit_info(revert).parents[0], revert).summary()
    assert revert in details
    assert (
        f"{s.chunks_changed} chunks: +0 ~{s.chunks_changed} -0" in details
    )  # it restores July precipitation
    assert p.write_buttons() == 0  # read-only dashboard: no write actions at all
    p.screenshot(f"history-{theme}")


def test_history_picking_a_row_shows_its_details(server: Server, page: Any) -> None:
    p = HistoryPage(page, server.url).open()
    rows = p.rows()
    i = next(i for i, r in enumerate(rows) if "Calibrate Q1" in r)
    p.pick_row(i)
    wait_until(lambda: "CLIM-12" in p.details())  # its metadata
    assert "page=history" in page.url
    assert "commit=" in page.url


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_compare_chunk_map_marks_exactly_the_changed_chunks(
    server: Server, demo_lake: zarrlake.Repo, page: Any, theme: str
) -> None:
    after = _commit(demo_lake, "Fix northern autumn")
    before = demo_lake.commit_info(after).parents[0]
    expected = demo_lake.diff(before, after)["temperature"].chunks_changed
    p = ComparePage(page, server.url).open(
        theme=theme, a=before, b=after, array="temperature", slice="time=10"
    )
    state = p.wait_state(array="temperature")
    assert state["fixed"] == {"time": 10}
    shown = {tuple(c) for c in state["changed"]}
    assert shown == {c for c in expected if c[0] == 10}
    assert shown
    assert state["added"] == []
    assert state["removed"] == []
    p.screenshot(f"compare-{theme}")


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_merge_preview_lists_the_conflicts(server: Server, page: Any, theme: str) -> None:
    p = MergePage(page, server.url).open(theme=theme, source="experiment", into="main")
    wait_until(lambda: p.conflicts_showing(3, "chunk written on both sides"))
    assert "3 conflicts." in p.text(".zl-merge-outcome")
    p.screenshot(f"merge-{theme}")


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_data_page_plots_an_array_at_a_tag(server: Server, page: Any, theme: str) -> None:
    p = DataPage(page, server.url).open(theme=theme, ref="v1.0", var="temperature", at="time=3")
    wait_until(lambda: "time 2025-04-01" in p.caption())  # the date, not the index
    assert "temperature" in p.caption()
    assert "v1.0" in p.caption()
    assert page.locator(".zl-data-plot canvas").count() > 0
    p.screenshot(f"data-{theme}")


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_sessions_count_down_and_turn_expired(
    server: Server, demo_lake: zarrlake.Repo, page: Any, theme: str
) -> None:
    p = SessionsPage(page, server.url).open(theme=theme)
    # long enough to be seen open while the page is slow (several browsers at once: the
    # countdown took over 4 s to appear in one run), short enough to be seen expiring
    s = demo_lake.writable_session("main", author="tess", expires_in=timedelta(seconds=12))
    zarr.open_array(s.store, path="temperature")[0, 0, 0] = 1.0
    cd = p.countdown(str(s.id))
    wait_until(lambda: cd.count() == 1, timeout=20)  # appears without a reload
    wait_until(lambda: cd.get_attribute("data-state") == "open" and "expires in" in cd.inner_text())
    p.screenshot(f"sessions-{theme}")
    wait_until(lambda: cd.get_attribute("data-state") == "expired", timeout=25)
    assert cd.inner_text() == "expired"


def test_closed_session_disappears_without_reload(
    server: Server, demo_lake: zarrlake.Repo, page: Any
) -> None:
    s = demo_lake.writable_session("main", author="gone", expires_in=timedelta(minutes=5))
    p = SessionsPage(page, server.url).open()
    cd = p.countdown(str(s.id))
    wait_until(lambda: cd.count() == 1)
    s.abandon()
    wait_until(lambda: cd.count() == 0)


def test_unknown_ref_in_the_url_is_a_clear_message(server: Server, page: Any) -> None:
    p = ComparePage(page, server.url)
    p.ready_selector = ".zl-error"
    p.open(a="no-such-ref", b="main")
    msg = p.error()
    assert "no-such-ref" in msg
    assert "Traceback" not in page.content()


def test_compare_typing_two_commits_updates_the_map(
    server: Server, demo_lake: zarrlake.Repo, page: Any
) -> None:
    after = _commit(demo_lake, "Rescale tropical")
    before = demo_lake.commit_info(after).parents[0]
    p = ComparePage(page, server.url).open()
    for label, ref in (("A (before)", before), ("B (after, or session:<id>)", after)):
        box = page.get_by_label(label)
        box.fill(ref)
        box.press("Enter")
    state = p.wait_state(array="precipitation")
    expected = demo_lake.diff(before, after)["precipitation"].chunks_changed
    fixed = state["fixed"]["time"]
    assert {tuple(c) for c in state["changed"]} == {c for c in expected if c[0] == fixed}
    assert state["changed"]  # the map opened on a slice with changes
