"""The History and commit pages at real size: 10^4 commits over 7 branches and more."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import zarrlake
from tests.integration.ui.biglake import build_big_lake
from tests.integration.ui.conftest import Server, wait_until
from tests.integration.ui.pages import HistoryPage

pytestmark = pytest.mark.browser

PAGE = 30

# per table row: its vertical centre, the graph dot's, the graph cell's width, and the texts
ROWS = """els => els.map(row => {
  const r = row.getBoundingClientRect();
  const dot = row.querySelector("circle.zl-dot");
  const d = dot ? dot.getBoundingClientRect() : null;
  const cell = row.querySelector("svg.zl-graph-cell");
  return {
    row: r.top + r.height / 2,
    dot: d ? d.top + d.height / 2 : null,
    graph: cell ? cell.getBoundingClientRect().width : null,
    text: row.innerText,
  };
})"""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> zarrlake.Repo:
    return build_big_lake(tmp_path_factory.mktemp("big") / "lake")


@pytest.fixture(scope="module")
def server(big: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(big)
    yield srv
    srv.stop()


def _rows(page: Any) -> list[dict[str, Any]]:
    return list(page.locator(".zl-commits .tabulator-row").evaluate_all(ROWS))


def _aligned(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        assert r["dot"] is not None, r["text"]
        assert abs(r["dot"] - r["row"]) <= 1.5, r


def test_a_page_of_history_at_ten_thousand_commits(
    server: Server, big: zarrlake.Repo, page: Any
) -> None:
    g = big.graph(limit=PAGE)
    assert g.total > 10_000
    assert len(big.branches()) >= 7
    p = HistoryPage(page, server.url).open()
    rows = wait_until(lambda: len(_rows(page)) == PAGE and _rows(page))
    for r, want in zip(rows, g.rows, strict=True):
        assert want.commit.id[:10] in r["text"]
        assert want.commit.message in r["text"]
    _aligned(rows)
    assert max(r["graph"] for r in rows) <= 200
    assert p.text(".zl-history-page") == f"commits 1 to {PAGE} of {g.total:,}"


def test_older_fetches_the_next_page_and_lines_still_meet_the_dots(
    server: Server, big: zarrlake.Repo, page: Any
) -> None:
    p = HistoryPage(page, server.url).open()
    page.get_by_role("button", name="Older").click()
    want = big.graph(offset=PAGE, limit=PAGE)
    rows = wait_until(
        lambda: (rs := _rows(page)) and want.rows[0].commit.id[:10] in rs[0]["text"] and rs
    )
    assert len(rows) == PAGE
    _aligned(rows)
    assert "from=30" in page.url
    assert p.text(".zl-history-page").startswith(f"commits {PAGE + 1} to {2 * PAGE} of")


def test_a_filter_keeps_each_dot_on_its_row(server: Server, page: Any) -> None:
    p = HistoryPage(page, server.url).open()
    box = page.get_by_label("Message contains")
    box.fill("Regrid tile")
    box.press("Enter")
    rows = wait_until(
        lambda: (rs := _rows(page)) and all("Regrid tile" in r["text"] for r in rs) and rs
    )
    assert len(rows) == PAGE
    _aligned(rows)
    assert "matching commits 1 to 30 of" in p.text(".zl-history-page")
