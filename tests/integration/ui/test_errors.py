"""Bad input on the served dashboard: a clear message on the page, never a stack trace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import zarrlake
from tests.integration.ui.conftest import Server
from tests.integration.ui.pages import OverviewPage

pytestmark = pytest.mark.browser


@pytest.fixture
def serve_opener(browser: Any) -> Iterator[Callable[[Callable[[], zarrlake.Repo]], Server]]:
    servers: list[Server] = []

    def start(opener: Callable[[], zarrlake.Repo]) -> Server:
        servers.append(Server(opener))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def _error_page(page: Any, url: str) -> str:
    p = OverviewPage(page, url)
    p.ready_selector = ".zl-error"
    p.open()
    msg = p.error()
    assert "Traceback" not in page.content()
    return msg


def test_a_lake_path_that_does_not_exist(serve_opener: Any, page: Any, tmp_path: Path) -> None:
    missing = tmp_path / "no-lake-here"
    srv = serve_opener(lambda: zarrlake.Repo.open(missing))
    msg = _error_page(page, srv.url)
    assert msg.startswith("not_found")
    assert "no-lake-here" in msg
    assert not missing.exists()  # nothing created


def test_a_catalog_that_cannot_be_reached(serve_opener: Any, page: Any) -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:9/nothing"
    srv = serve_opener(lambda: zarrlake.Repo.open(catalog=url, name="x"))
    msg = _error_page(page, srv.url)
    assert "catalog" in msg.lower() or "connect" in msg.lower()
    page.wait_for_timeout(300)
    OverviewPage(page, srv.url).screenshot("error-unreachable-catalog")
