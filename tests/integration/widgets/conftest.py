"""Browser tests of the widgets' browser code (headless Chromium through Playwright)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: needs Chromium (/usr/bin/chromium) via Playwright")


def _need_chromium() -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is required in CI and is missing")
        pytest.skip(f"{CHROMIUM} is not installed")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()
