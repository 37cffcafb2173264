"""Write actions: absent without --allow-writes (see test_pages), refused without the token,
done with it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import zarrlake
from tests.integration.ui.conftest import Server, wait_until
from tests.integration.ui.pages import HistoryPage, MergePage

pytestmark = pytest.mark.browser

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server(demo_lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(demo_lake, allow_writes=True, token=TOKEN)
    yield srv
    srv.stop()


def _fill(page: Any, placeholder: str, value: str) -> None:
    box = page.get_by_placeholder(placeholder)
    box.fill(value)
    box.press("Enter")
    box.press("Tab")


def test_create_branch_is_refused_without_the_token_and_done_with_it(
    server: Server, demo_lake: zarrlake.Repo, page: Any
) -> None:
    v1 = demo_lake.resolve("v1.0")
    p = HistoryPage(page, server.url).open(commit=v1)
    wait_until(lambda: p.write_buttons() == 1)
    _fill(page, "new ref name", "from-dashboard")
    page.get_by_role("button", name="Create branch here").click()
    assert "refused" in p.error()
    assert "from-dashboard" not in demo_lake.branches()

    _fill(page, "token printed by --allow-writes", TOKEN)
    page.get_by_role("button", name="Create branch here").click()
    wait_until(lambda: demo_lake.branches().get("from-dashboard") == v1)
    p.screenshot("history-writes")


def test_a_token_typed_with_other_characters_is_refused(
    server: Server, demo_lake: zarrlake.Repo, page: Any
) -> None:
    v1 = demo_lake.resolve("v1.0")
    p = HistoryPage(page, server.url).open(commit=v1)
    wait_until(lambda: p.write_buttons() == 1)
    _fill(page, "new ref name", "from-a-wrong-token")
    _fill(page, "token printed by --allow-writes", "s3crèt-tøken")
    page.get_by_role("button", name="Create branch here").click()
    assert p.error() == "read_only: refused: the write token is missing or wrong"
    assert "from-a-wrong-token" not in demo_lake.branches()


def test_merge_with_a_solver_needs_the_token(
    server: Server, demo_lake: zarrlake.Repo, page: Any
) -> None:
    head = demo_lake.resolve("main")
    p = MergePage(page, server.url).open(source="experiment", into="main")
    page.get_by_role("button", name="theirs").click()
    page.get_by_role("button", name="Merge", exact=True).click()
    assert "refused" in p.error()
    assert demo_lake.resolve("main") == head

    _fill(page, "token printed by --allow-writes", TOKEN)
    page.get_by_role("button", name="Merge", exact=True).click()
    wait_until(lambda: demo_lake.resolve("main") != head)
    merged = demo_lake.commit_info("main")
    assert merged.parents == (head, demo_lake.resolve("experiment"))
