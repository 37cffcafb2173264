"""Browser tests of the widgets' browser code (headless Chromium through Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration._browser import chromium


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: needs Chromium (/usr/bin/chromium) via Playwright")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b
