"""The History page's commit panel in Chromium: a pull request's merge commit links the
request and says which checks judged it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zarr

import zarrlake
from tests.integration.ui.conftest import Server, wait_until
from tests.integration.ui.pages import HistoryPage
from zarrlake import checks

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots/checks2")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> zarrlake.Repo:
    """Pull request #1 (dev writes 2.0) merged into main under ``no-nan`` and ``range``."""
    repo = zarrlake.Repo.create(tmp_path_factory.mktemp("review") / "lake")
    s = repo.writable_session(author="ana")
    zarr.open_group(s.store, mode="w").create_array(
        "temp", shape=(8, 8), chunks=(4, 4), dtype="f4"
    )[:] = 1.0
    s.commit("create temp")
    repo.create_branch("dev")
    s = repo.writable_session("dev", author="ana")
    zarr.open_array(s.store, path="temp")[0:4, 0:4] = 2.0
    s.commit("twos")
    repo.add_check("no-nan", checks.no_nan("temp"), on="merge")
    repo.add_check("range", checks.value_range("temp", min=0, max=10), on="merge")
    repo.protect_branch("main")
    repo.open_pull_request("dev", title="Twos", author="ana").merge(author="bo")
    return repo


@pytest.fixture(scope="module")
def server(lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(lake)
    yield srv
    srv.stop()


def test_merge_commit_panel_links_its_pull_request_and_checks(
    server: Server, lake: zarrlake.Repo, page: Any
) -> None:
    merge = lake.branches()["main"]
    p = HistoryPage(page, server.url).open(commit=merge)
    details = wait_until(lambda: "pull request #1" in p.details() and p.details())
    assert "merged pull request #1" in details
    assert "checks: 2 passed" in details
    assert "metadata" not in details  # the review keys are shown in words, not as JSON
    assert page.locator(".zl-pull a").get_attribute("href") == "?page=pulls&pr=1"
    path = p.screenshot("history-review")
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, SHOTS / Path(path).name)
