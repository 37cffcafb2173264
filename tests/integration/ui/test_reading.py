"""What a reader meets: a page that loads with no request leaving the machine, a URL that
names only the page shown, readable ids and session countdowns (WCAG AA), and the commit
page's words."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

import zarrlake
from tests.integration.ui.conftest import Server, wait_until
from tests.integration.ui.pages import PAGES, HistoryPage

pytestmark = pytest.mark.browser

# the text colour and the background it is drawn on (the backgrounds of the element and its
# ancestors, through shadow roots, composited), as [r, g, b] in 0..255
COLOURS = """el => {
  const rgba = s => { const m = s.match(/[\\d.]+/g).map(Number); return m.length > 3 ? m : [...m, 1]; };
  const layers = [];
  for (let n = el; n; n = n.parentElement || (n.getRootNode() && n.getRootNode().host)) {
    const bg = rgba(getComputedStyle(n).backgroundColor);
    if (bg[3] > 0) layers.push(bg);
    if (bg[3] >= 1) break;
  }
  let out = [255, 255, 255];
  for (const [r, g, b, a] of layers.reverse()) out = [r * a + out[0] * (1 - a), g * a + out[1] * (1 - a), b * a + out[2] * (1 - a)];
  const fg = rgba(getComputedStyle(el).color);
  return {fg: fg.slice(0, 3).map((v, i) => v * fg[3] + out[i] * (1 - fg[3])), bg: out};
}"""


def _luminance(rgb: list[float]) -> float:
    def lin(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: list[float], bg: list[float]) -> float:
    hi, lo = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.fixture(scope="module")
def server(demo_lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(demo_lake)
    yield srv
    srv.stop()


@pytest.mark.parametrize("name", list(PAGES))
def test_no_request_leaves_the_machine(server: Server, page: Any, name: str) -> None:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    PAGES[name](page, server.url).open()
    page.wait_for_timeout(1500)  # late requests: fonts, images, scripts loaded by scripts
    own = urlparse(server.url).netloc
    outside = [u for u in seen if urlparse(u).scheme in ("http", "https", "ws", "wss")]
    outside = [u for u in outside if urlparse(u).netloc != own]
    assert seen
    assert outside == []


def test_the_url_names_only_the_page_shown(
    server: Server, demo_lake: zarrlake.Repo, page: Any
) -> None:
    from tests.integration.ui.pages import ComparePage

    ComparePage(page, server.url).open(a="v1.0", b="main", array="temperature")
    page.locator(".bk-tab", has_text="Merge").first.click()

    def query() -> dict[str, list[str]]:
        return parse_qs(urlparse(str(page.evaluate("location.href"))).query)

    q = wait_until(lambda: (q := query()) and "source" in q and q["page"] == ["merge"] and q)
    assert not {"a", "b", "array", "slice"} & set(q), q
    assert q["page"] == ["merge"]


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_commit_page_reads_in_words_with_readable_ids(
    server: Server, demo_lake: zarrlake.Repo, page: Any, theme: str
) -> None:
    doc = next(c for c in demo_lake.log("experiment") if c.message.startswith("Document"))
    p = HistoryPage(page, server.url).open(theme=theme, commit=doc.id)
    details = wait_until(lambda: "Compare with parent" in p.details() and p.details())
    assert doc.message in details
    assert "attribute history set to precipitation rescaled in the tropics" in details
    assert "<absent>" not in details
    assert '"' not in details  # values as text, never quoted as Python or JSON strings
    parent = page.locator("a.zl-parent").first
    assert parent.get_attribute("href") == f"?page=history&commit={doc.parents[0]}"
    compare = page.locator("a.zl-compare").first
    assert compare.get_attribute("href") == f"?page=compare&a={doc.parents[0]}&b={doc.id}"
    ids = page.locator(".zl-commit-details .zl-id")
    assert ids.count() >= 2
    for i in range(ids.count()):
        c = ids.nth(i).evaluate(COLOURS)
        assert contrast(c["fg"], c["bg"]) >= 4.5, c
    parent.click()  # a real link: the parent's page
    wait_until(lambda: f"commit={doc.parents[0]}" in page.url)
    wait_until(lambda: doc.parents[0] in p.details())


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_an_expired_countdown_is_readable_on_both_themes(
    server: Server, demo_lake: zarrlake.Repo, page: Any, theme: str
) -> None:
    from datetime import timedelta

    from tests.integration.ui.pages import SessionsPage

    s = demo_lake.writable_session("main", author="reader", expires_in=timedelta(seconds=2))
    p = SessionsPage(page, server.url).open(theme=theme)
    cd = p.countdown(str(s.id))
    wait_until(lambda: cd.count() == 1 and cd.get_attribute("data-state") == "expired")
    assert cd.inner_text() == "expired"
    c = cd.evaluate(COLOURS)
    assert contrast(c["fg"], c["bg"]) >= 4.5, c
