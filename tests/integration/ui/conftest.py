"""Fixtures for the served dashboard in a real headless Chromium (Playwright).

One demo lake, one server, one browser and one browser context per module; each test gets a
fresh page. The dashboard keeps no cookies or storage, so pages of one context share only
the cache: Bokeh's and Panel's scripts load once per module instead of once per test.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration._browser import chromium

ARTIFACTS = Path(__file__).parent / "artifacts"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives the served dashboard in headless Chromium")


def wait_until(check: Callable[[], Any], timeout: float = 20.0, every: float = 0.2) -> Any:
    """Call ``check`` until it returns something truthy (returned) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except AssertionError as exc:
            last = exc
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout} s (last: {last!r})")


class Server:
    """The dashboard served in a thread on a free port."""

    def __init__(self, repo: Any, **kwargs: Any) -> None:
        from zarrlake.ui.dashboard import Served, serve

        self.served: Served | None = None
        ready = threading.Event()

        def on_ready(s: Served) -> None:
            self.served = s
            ready.set()

        self.thread = threading.Thread(
            target=serve, args=(repo,), kwargs={**kwargs, "ready": on_ready}, daemon=True
        )
        self.thread.start()
        if not ready.wait(60):
            raise RuntimeError("the dashboard server did not start")
        wait_until(self._alive, timeout=30)

    @property
    def url(self) -> str:
        assert self.served is not None
        return self.served.url

    def _alive(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "liveness", timeout=5) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.served is not None:
            self.served.stop()
        self.thread.join(10)


@pytest.fixture(scope="module")
def demo_lake(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from zarrlake.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo") / "lake")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1700})
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any) -> Iterator[Any]:
    pg = context.new_page()
    yield pg
    pg.close()


def shot(page: Any, name: str) -> Path:
    """Write a full-page screenshot to the artifacts folder (look at it)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
