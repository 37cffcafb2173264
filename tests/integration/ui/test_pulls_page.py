"""The Pull requests page in Chromium: a request with a hostile title shown as text, its
failed check and its changes; approving it through the page with the write token."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration.ui.conftest import Server, wait_until
from tests.integration.ui.pages import DashboardPage
from zarrlake import checks

pytestmark = pytest.mark.browser

TOKEN = "pr-token"
EVIL = "<img src=x onerror=alert(1)>Recalibrate"
SHOTS = Path("/tmp/shots/checks")


class PullsPage(DashboardPage):
    page_name = "pulls"
    ready_selector = ".zl-pr-header h3"

    def header(self) -> str:
        return self.text(".zl-pr-header")

    def check_rows(self) -> list[str]:
        rows = self.page.locator(".zl-pr-checks .tabulator-row").all_inner_texts()
        return [" ".join(str(t).split()) for t in rows]

    def keep(self, name: str) -> None:
        path = self.screenshot(name)
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, SHOTS / path.name)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> zarrlake.Repo:
    repo = zarrlake.Repo.create(tmp_path_factory.mktemp("pulls") / "lake")
    s = repo.writable_session(author="ana")
    zarr.open_group(s.store, mode="w").create_array(
        "temp", shape=(16, 16), chunks=(4, 4), dtype="f4"
    )[:] = 1.0
    s.commit("create temp")
    repo.create_branch("dev")
    s = repo.writable_session("dev", author="ana")
    a = zarr.open_array(s.store, path="temp")
    a[0:8, 0:4] = 2.0
    a[12:16, 12:16] = np.nan
    s.commit("recalibrate, with a gap")
    repo.add_check("no-nan", checks.no_nan("temp"))
    repo.add_check("range", checks.value_range("temp", min=0, max=10))
    repo.protect_branch("main", required_approvals=1)
    pr = repo.open_pull_request(
        "dev", "main", title=EVIL, description="Sensor drift <b>fixed</b>.", author="ana"
    )
    pr.comment("<script>alert(2)</script> looks fine except the gap", author="bo")
    return repo


@pytest.fixture(scope="module")
def server(lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(lake, allow_writes=True, token=TOKEN)
    yield srv
    srv.stop()


def test_the_request_is_shown_as_text_with_its_checks(
    server: Server, lake: zarrlake.Repo, page: Any
) -> None:
    alerts: list[str] = []
    page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
    p = PullsPage(page, server.url).open(pr=1)
    assert "#1 <img src=x onerror=alert(1)>Recalibrate" in p.header()
    wait_until(lambda: len(p.check_rows()) == 2)
    assert p.check_rows() == [
        "no-nan FAILED NaN in 1 changed chunk temp: (3, 3)",
        "range passed values within [0, 10]",
    ]
    assert p.has_text("looks fine except the gap")
    assert alerts == []
    p.keep("pulls-page")


def test_the_request_s_changes_are_compared_chunk_by_chunk(
    server: Server, lake: zarrlake.Repo, page: Any
) -> None:
    pr = lake.pull_request(1)
    preview = pr.preview()
    p = PullsPage(page, server.url).open(pr=1)
    wait_until(lambda: p.has_text("Changes of the request, chunk by chunk"))
    summary = wait_until(lambda: p.text(".zl-pr-review .zl-diff-summary"))
    assert summary.startswith(f"{preview.base[:10]} → {preview.source_commit[:10]}")
    assert "3 chunks: +0 ~3 -0" in summary  # the two recalibrated chunks and the gap
    # the values of both sides and their difference are drawn for the chosen array
    wait_until(lambda: page.locator(".zl-pr-review .zl-values canvas").count() >= 1)
    p.keep("pulls-review")


def test_approve_through_the_page(server: Server, lake: zarrlake.Repo, page: Any) -> None:
    p = PullsPage(page, server.url).open(pr=1)
    page.get_by_placeholder("token printed by --allow-writes").fill(TOKEN)
    name = page.get_by_placeholder("your name")
    name.fill("bo")
    name.press("Enter")
    page.get_by_role("button", name="Approve").click()
    wait_until(lambda: lake.pull_request(1).approvals() == ["bo"])
    wait_until(lambda: "approvals 1 of 1 (bo)" in p.header())
    p.keep("pulls-approved")
