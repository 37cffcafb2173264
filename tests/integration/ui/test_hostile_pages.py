"""Hostile text in every field a user can write, on every page, in headless Chromium.

Hypothesis writes generated hostile strings (tags with handlers, ``<script>``, ``"><svg
onload=...>``, ``javascript:`` links, Markdown and HTML mixtures) into the commit message,
author, metadata keys and values, ref names (as far as names allow), group, array and
dimension names, attributes and a session's author; each page is then loaded from one server
whose lake is the example's. Every page must show the text as it was written, and no element,
attribute or script may come of it. Links with a crafted ref in a URL parameter get the same
check on the error they show.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import zarrlake
from tests.hostile import FIXED, Built, Hostile, build, hostile_text, hostiles, squash
from tests.integration.ui.conftest import Server, shot, wait_until
from tests.integration.ui.pages import DEEP_TEXT, LOAD_TIMEOUT
from zarrlake.ui.dashboard.words import value_text

pytestmark = pytest.mark.browser

BROWSER_EXAMPLES = settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # a failing example is reported as it is
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Elements and attributes made of hostile text: every payload's tag carries ``zlh`` and every
# handler sets ``window.__xss``; shadow roots (Panel renders into them) are walked too.
SCAN = """() => {
  const hits = [];
  const urls = ["href", "src", "action", "formaction", "xlink:href", "data"];
  const walk = root => {
    for (const el of root.querySelectorAll("*")) {
      if (el.tagName === "ZLH") hits.push("<zlh> element");
      for (const a of el.attributes) {
        const n = a.name.toLowerCase(), v = a.value.trim().toLowerCase();
        if (n.includes("zlh")) hits.push(`<${el.tagName} ${n}>`);
        if (n.startsWith("on") && v.includes("__xss")) hits.push(`<${el.tagName} ${n}>`);
        if (urls.includes(n) && (v.startsWith("javascript:") || v.includes("zlh")))
          hits.push(`<${el.tagName} ${n}=${a.value}>`);
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return {hits, xss: window.__xss === undefined ? null : window.__xss};
}"""

READY = {
    "overview": ".zl-refs .tabulator-row",
    "history": ".zl-commit-details h3",
    "compare": ".zl-chunkmap-state",
    "merge": ".zl-merge-outcome h3",
    "data": ".zl-data-caption p",
    "sessions": ".zl-session",
}


@pytest.fixture(scope="module")
def lakes(browser: Any) -> Iterator[tuple[Server, dict[str, zarrlake.Repo]]]:
    """One server for the module; each example points it at the lake it built."""
    current: dict[str, zarrlake.Repo] = {}
    srv = Server(lambda: current["repo"])
    yield srv, current
    srv.stop()


def _params(page: str, b: Built) -> dict[str, str]:
    return {
        "overview": {},
        "history": {"commit": b.base},
        "compare": {"a": b.base, "b": b.head, "array": b.path},
        "merge": {"source": b.h.branch, "into": "main"},
        "data": {"ref": b.h.branch, "var": b.path},
        "sessions": {},
    }[page]


def _expected(page: str, b: Built) -> list[str]:
    """The hostile values the page shows, as the page writes them (the Fields table and a
    commit's metadata write values as text, long ones cut)."""
    h: Hostile = b.h
    return {
        "overview": [h.branch, h.tag, h.author, h.message],
        "history": [h.author, h.message, h.meta_key, value_text(h.meta_value), b.path, h.branch],
        "compare": [f"/{b.path}", h.attr_key, b.path, h.dim, value_text(h.attr_value)],
        "merge": [h.branch, f"/{b.path}", str([h.attr_key])],
        "data": [f"{b.path} at {h.branch}", h.dim],
        "sessions": [h.session_author, b.session],
    }[page]


def _open(page: Any, base_url: str, name: str, query: dict[str, str], ready: str) -> None:
    page.goto(f"{base_url}?{urlencode({'page': name, **query})}")
    page.wait_for_selector(ready, timeout=LOAD_TIMEOUT)


def _text(page: Any) -> str:
    return squash(str(page.locator("body").evaluate(DEEP_TEXT)))


def _shows(page: Any, want: list[str]) -> bool:
    text = _text(page)
    missing = [w for w in want if w not in text]
    assert missing == [], missing  # what wait_until reports if it never shows
    return True


def _assert_inert(page: Any) -> None:
    found = page.evaluate(SCAN)
    assert found == {"hits": [], "xss": None}


@pytest.mark.parametrize("name", list(READY))
def test_every_page_shows_hostile_fields_as_text(
    name: str,
    lakes: tuple[Server, dict[str, zarrlake.Repo]],
    make_repo: Callable[..., zarrlake.Repo],
    catalog_url: str,
    context: Any,
) -> None:
    srv, current = lakes
    kind = "sqlite" if catalog_url.startswith("sqlite") else "postgres"

    @BROWSER_EXAMPLES
    @given(h=hostiles())
    def check(h: Hostile) -> None:
        repo = make_repo()
        b = build(repo, h)
        current["repo"] = repo
        page = context.new_page()  # a fresh page: its own window and script state
        try:
            _open(page, srv.url, name, _params(name, b), READY[name])
            if name == "compare":  # the attribute values are on the Fields tab
                page.locator(".bk-tab", has_text="Fields").first.click()
            want = [squash(v).strip() for v in _expected(name, b)]
            try:
                wait_until(lambda: _shows(page, want), timeout=20)
            finally:
                shot(page, f"hostile-{name}-{kind}")
            _assert_inert(page)
        finally:
            page.close()

    check()


def _in_error(text: str, ref: str) -> bool:
    return any(squash(form).strip() in text for form in (ref, repr(ref)[1:-1]))


# A ref that cannot resolve: it holds a character no ref expression may hold.
CRAFTED = hostile_text().filter(lambda s: bool(re.search(r"[<>\"' ]", s)))


@pytest.mark.parametrize(
    ("name", "param"),
    [
        ("history", "commit"),
        ("compare", "a"),
        ("compare", "b"),
        ("merge", "source"),
        ("data", "ref"),
    ],
)
def test_a_crafted_ref_in_a_link_is_shown_as_text(
    name: str,
    param: str,
    lakes: tuple[Server, dict[str, zarrlake.Repo]],
    sqlite_repo: zarrlake.Repo,
    context: Any,
) -> None:
    # The page refuses the ref before any catalog matters (both catalogs: tests/unit/ui).
    srv, current = lakes
    build(sqlite_repo, FIXED)
    current["repo"] = sqlite_repo

    @BROWSER_EXAMPLES
    @given(ref=CRAFTED)
    def check(ref: str) -> None:
        page = context.new_page()
        try:
            theme = {"theme": "dark"} if name == "data" else {}  # the error box in both themes
            _open(page, srv.url, name, {param: ref, **theme}, ".zl-error")
            text = squash(str(page.locator(".zl-error").first.evaluate(DEEP_TEXT)))
            assert _in_error(text, ref), text
            _assert_inert(page)
            shot(page, f"hostile-link-{name}-{param}")
        finally:
            page.close()

    check()


def test_a_hostile_payload_would_be_caught(
    lakes: tuple[Server, dict[str, zarrlake.Repo]], browser: Any
) -> None:
    """The scan finds what it looks for: the same payloads, put into a page as markup."""
    srv, _ = lakes
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        page.goto(srv.url + "liveness")
        page.evaluate(
            "html => { const d = document.createElement('div'); d.attachShadow({mode: 'open'})"
            ".innerHTML = html; document.body.appendChild(d); }",
            '<img zlh src=x onerror="window.__xss=1"><a href="javascript:x">x</a>',
        )
        wait_until(lambda: page.evaluate(SCAN)["xss"] == 1)
        assert len(page.evaluate(SCAN)["hits"]) == 3
    finally:
        ctx.close()
