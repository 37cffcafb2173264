"""Page objects: one class per dashboard page, hiding selectors and waits from the tests."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from tests.integration.ui.conftest import shot, wait_until

LOAD_TIMEOUT = 60_000

# Panel renders into shadow roots; innerText of a host leaves them out, so walk them.
DEEP_TEXT = """el => {
  const walk = n => {
    let t = "";
    if (n.shadowRoot) t += walk(n.shadowRoot);
    for (const c of n.childNodes) {
      if (c.nodeType === Node.TEXT_NODE) t += c.textContent;
      else if (c.nodeType === Node.ELEMENT_NODE && c.tagName !== "STYLE" && c.tagName !== "SCRIPT") t += walk(c) + " ";
    }
    return t;
  };
  return walk(el).replace(/\\s+/g, " ");
}"""


class DashboardPage:
    page_name = "overview"
    ready_selector = ".bk-Tabs"

    def __init__(self, page: Any, base_url: str) -> None:
        self.page = page
        self.base_url = base_url

    def open(self, theme: str = "default", **query: Any) -> DashboardPage:
        q = {"page": self.page_name, **{k: str(v) for k, v in query.items()}}
        if theme != "default":
            q["theme"] = theme
        self.page.goto(f"{self.base_url}?{urlencode(q)}")
        self.page.wait_for_selector(self.ready_selector, timeout=LOAD_TIMEOUT)
        return self

    def text(self, selector: str) -> str:
        """All text under the first match, shadow roots included."""
        loc = self.page.locator(selector).first
        return " ".join(str(loc.evaluate(DEEP_TEXT)).split())

    def has_text(self, text: str) -> bool:
        return bool(self.page.get_by_text(text, exact=False).count())

    def error(self) -> str:
        self.page.wait_for_selector(".zl-error", timeout=LOAD_TIMEOUT)
        return self.text(".zl-error")

    def screenshot(self, name: str) -> Any:
        self.page.wait_for_timeout(700)  # let bokeh finish drawing canvases
        return shot(self.page, name)


class OverviewPage(DashboardPage):
    page_name = "overview"
    ready_selector = ".zl-refs .tabulator-row"

    def refs(self) -> list[str]:
        return [str(t) for t in self.page.locator(".zl-refs .tabulator-row").all_inner_texts()]


class HistoryPage(DashboardPage):
    page_name = "history"
    ready_selector = ".zl-commits .tabulator-row"

    def rows(self) -> list[str]:
        return [str(t) for t in self.page.locator(".zl-commits .tabulator-row").all_inner_texts()]

    def pick_row(self, i: int) -> None:
        self.page.locator(".zl-commits .tabulator-row").nth(i).click()

    def details(self) -> str:
        return self.text(".zl-commit-details")

    def write_buttons(self) -> int:
        return int(self.page.get_by_role("button", name="Create branch here").count())


class ComparePage(DashboardPage):
    page_name = "compare"
    ready_selector = ".zl-chunkmap-state"

    def state(self) -> dict[str, Any]:
        el = self.page.locator(".zl-chunkmap-state").first
        out: dict[str, Any] = {"text": el.inner_text()}
        keys = ("array", "grid", "fixed", "added", "changed", "removed", "virtual", "aggregated")
        for k in keys:
            v = el.get_attribute(f"data-{k}")
            out[k] = json.loads(v) if v and k not in ("array",) else v
        return out

    def wait_state(self, **expected: Any) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            s = self.state()
            return s if all(s.get(k) == v for k, v in expected.items()) else None

        return dict(wait_until(check, timeout=30))


class MergePage(DashboardPage):
    page_name = "merge"
    ready_selector = ".zl-merge-outcome h3"

    def conflict_rows(self) -> list[str]:
        return [str(t) for t in self.page.locator(".zl-conflicts .tabulator-row").all_inner_texts()]

    def conflicts_showing(self, count: int, *words: str) -> list[str]:
        """The conflict table's rows, asserting there are ``count`` and that each shows every
        one of ``words`` (for :func:`wait_until`: the table fills its rows in after they
        appear)."""
        rows = self.conflict_rows()
        assert len(rows) == count, rows
        assert all(w in r for r in rows for w in words), rows
        return rows


class DataPage(DashboardPage):
    page_name = "data"
    ready_selector = ".zl-data-caption p"

    def caption(self) -> str:
        return self.text(".zl-data-caption")


class SessionsPage(DashboardPage):
    page_name = "sessions"
    ready_selector = ".zl-sessions-summary p"

    def countdown(self, session_id: str) -> Any:
        row = self.page.locator(".zl-session", has_text=session_id)
        return row.locator(".zl-countdown")


PAGES: dict[str, type[DashboardPage]] = {
    "overview": OverviewPage,
    "history": HistoryPage,
    "compare": ComparePage,
    "merge": MergePage,
    "data": DataPage,
    "sessions": SessionsPage,
}
