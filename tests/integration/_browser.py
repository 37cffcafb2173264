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


def need_chromium() -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is required in CI and is missing")
        pytest.skip(f"{CHROMIUM} is not installed")


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless Chromium (skips, or fails in CI, when it is missing)."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()
