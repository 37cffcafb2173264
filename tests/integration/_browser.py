"""Headless Debian Chromium through Playwright, for the dashboard and widget tests.

Browser downloads are impossible here, so Playwright drives ``/usr/bin/chromium``, which the
project's CI installs; outside CI a missing Chromium skips the test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# as root on a closed network: no sandbox, and no background connections to refuse
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# Playwright waits 30 s for an action or a navigation by default; the suite runs browsers,
# JVMs and process pools side by side on as few as two cores, where a page can take longer
# to answer. Every context and page of the tests waits up to this instead.
ACTION_TIMEOUT_MS = 90_000


class Browser:
    """A launched browser whose new contexts and pages wait up to ``ACTION_TIMEOUT_MS``."""

    def __init__(self, launched: Any) -> None:
        self.launched = launched

    def new_context(self, **options: Any) -> Any:
        ctx = self.launched.new_context(**options)
        ctx.set_default_timeout(ACTION_TIMEOUT_MS)
        ctx.set_default_navigation_timeout(ACTION_TIMEOUT_MS)
        return ctx

    def new_page(self, **options: Any) -> Any:
        page = self.launched.new_page(**options)
        page.set_default_timeout(ACTION_TIMEOUT_MS)
        page.set_default_navigation_timeout(ACTION_TIMEOUT_MS)
        return page


def need_chromium() -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is required in CI and is missing")
        pytest.skip(f"{CHROMIUM} is not installed")


@contextmanager
def chromium() -> Iterator[Browser]:
    """A launched headless Chromium (skips, or fails in CI, when it is missing)."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield Browser(b)
        finally:
            b.close()
