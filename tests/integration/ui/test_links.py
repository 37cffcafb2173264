"""The data page's links to the version it shows, and the gateway the dashboard's server
mounts, in headless Chromium."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import zarr

import zarrlake
from tests.integration.ui.conftest import Server, shot, wait_until
from tests.integration.ui.pages import DataPage

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(demo_lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(demo_lake)
    yield srv
    srv.stop()


@pytest.fixture
def clip_page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(
        viewport={"width": 1400, "height": 1700}, permissions=["clipboard-read", "clipboard-write"]
    )
    yield ctx.new_page()
    ctx.close()


def field(page: Any, css: str) -> str:
    return str(page.locator(f"{css} input").first.input_value())


def test_copy_link_gives_a_version_url_that_opens_that_version(
    server: Server, clip_page: Any, demo_lake: zarrlake.Repo
) -> None:
    p = DataPage(clip_page, server.url).open(ref="v1.0", var="temperature")
    wait_until(lambda: field(clip_page, ".zl-version-url").endswith("#ref=v1.0"))
    clip_page.locator(".zl-copy-url button").first.click()
    copied = wait_until(lambda: clip_page.evaluate("navigator.clipboard.readText()"))
    assert copied == zarrlake.version_url(demo_lake, "v1.0")
    ds = zarrlake.open_dataset(copied)
    assert ds.encoding["zarrlake"].commit == demo_lake.resolve("v1.0")
    p.screenshot("data-links")


def test_the_http_link_reads_through_the_mounted_gateway(
    server: Server, clip_page: Any, demo_lake: zarrlake.Repo
) -> None:
    DataPage(clip_page, server.url).open(ref="v1.0", var="temperature")
    http = wait_until(lambda: field(clip_page, ".zl-http-url"))
    assert http == f"{server.url}zarr/default/v1.0/temperature"
    clip_page.locator(".zl-copy-http button").first.click()
    assert wait_until(lambda: clip_page.evaluate("navigator.clipboard.readText()")) == http
    served = zarr.open_array(http, mode="r")
    mine = zarr.open_array(demo_lake.readonly_session("v1.0").store, path="temperature", mode="r")
    np.testing.assert_array_equal(served[0], mine[0])
    with urllib.request.urlopen(f"{server.url}zarr/default/main/zarr.json") as r:
        assert r.headers["X-Zarrlake-Commit"] == demo_lake.resolve("main")
    listing = clip_page.goto(f"{server.url}zarr/default/v1.0/")
    assert listing is not None
    assert listing.status == 200
    assert clip_page.locator('a[href="/zarr/default/v1.0/temperature/"]').count() == 1
    shot(clip_page, "gateway-listing")
