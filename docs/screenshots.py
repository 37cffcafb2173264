"""Regenerate the dashboard screenshots of the documentation (run by hand: ``./dev screenshots``).

Builds the demo lake in a temporary directory, serves its dashboard on loopback and
photographs every page at 1440x900 in headless Chromium (Debian's ``/usr/bin/chromium``,
driven by Playwright), in the light theme and, for History, Merge and Sessions, the dark one.
The pictures go to ``docs/assets/screens/`` and ``docs/dashboard.md`` shows them. Every
picture is checked for the words its page must show before it is written, so a page that
failed to load never becomes a screenshot.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

CHROMIUM = "/usr/bin/chromium"
OUT = Path(__file__).resolve().parent / "assets" / "screens"
SIZE = {"width": 1440, "height": 900}
# as root on a closed network: no sandbox, and no background connections
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

# page -> (URL parameters, words the page must show)
PAGES: dict[str, tuple[dict[str, str], str]] = {
    "overview": ({}, "Branches and tags"),
    "history": ({}, "commits 1 to"),
    "compare": ({"a": "v1.0", "b": "main"}, "changed"),
    "merge": ({"source": "experiment", "into": "main"}, "merge"),
    "data": ({"ref": "main"}, "temperature"),
    "sessions": ({}, "session"),
}
DARK = ("history", "merge", "sessions")


def _serve(repo: Any) -> tuple[str, Any]:
    from zarrlake.ui.dashboard import Served, serve

    found: list[Served] = []
    ready = threading.Event()

    def on_ready(s: Served) -> None:
        found.append(s)
        ready.set()

    threading.Thread(target=serve, args=(repo,), kwargs={"ready": on_ready}, daemon=True).start()
    if not ready.wait(120):
        sys.exit("screenshots: the dashboard did not start")
    return found[0].url, found[0]


# Panel renders into shadow roots, which innerText leaves out: walk them.
DEEP_TEXT = """() => {
  const walk = n => {
    let t = "";
    if (n.shadowRoot) t += walk(n.shadowRoot);
    for (const c of n.childNodes) {
      if (c.nodeType === Node.TEXT_NODE) t += c.textContent;
      else if (c.nodeType === Node.ELEMENT_NODE && c.tagName !== "STYLE" && c.tagName !== "SCRIPT") t += walk(c) + " ";
    }
    return t;
  };
  return walk(document.body);
}"""


def _text(page: Any) -> str:
    return " ".join(str(page.evaluate(DEEP_TEXT)).split())


def _shoot(browser: Any, url: str, name: str, query: dict[str, str], must: str, theme: str) -> Path:
    page = browser.new_page(viewport=SIZE)
    q = {"page": name, **query, **({"theme": "dark"} if theme == "dark" else {})}
    page.goto(f"{url}?{urlencode(q)}")
    deadline = time.monotonic() + 120
    while must.lower() not in _text(page).lower():
        if time.monotonic() > deadline:
            page.screenshot(path=str(OUT / f"failed-{name}.png"))
            sys.exit(f"screenshots: the {name} page never showed {must!r}: {_text(page)[:300]!r}")
        page.wait_for_timeout(250)
    page.wait_for_timeout(1000)  # canvases finish drawing
    path = OUT / f"{name}-{theme}.png"
    page.screenshot(path=str(path))
    page.close()
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated pages (default: all)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from zarrlake.demo import build_demo

    only = [p for p in args.only.split(",") if p] or list(PAGES)
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        repo = build_demo(Path(tmp) / "demo-lake")
        url, served = _serve(repo)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                for name in only:
                    query, must = PAGES[name]
                    for theme in ("light", "dark") if name in DARK else ("light",):
                        print(_shoot(browser, url, name, query, must, theme), flush=True)
                browser.close()
        finally:
            served.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
