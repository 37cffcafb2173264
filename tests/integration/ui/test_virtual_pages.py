"""The compare page on a lake whose chunks are virtual references to NetCDF files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import zarrlake
from tests.integration.ui.conftest import Server
from tests.integration.ui.pages import ComparePage
from tests.integration.virtual_data import make_netcdf, open_virtual

pytest.importorskip("virtualizarr")
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def virtual_lake(tmp_path_factory: pytest.TempPathFactory) -> zarrlake.Repo:
    """Day 0 referenced, then day 2 appended by reference: 4 temp chunks and 1 time chunk."""
    root = tmp_path_factory.mktemp("virtual")
    archive = root / "archive"
    archive.mkdir()
    repo = zarrlake.Repo.create(root / "lake", virtual_sources={str(archive): {}})
    for i, day in enumerate((0, 2)):
        path: Path = archive / f"day{day}.nc"
        make_netcdf(path, day)
        vds = open_virtual(f"file://{path}")
        extra = {"append_dim": "time"} if i else {}
        vds.lake.commit(f"reference day {day}", repo=repo, group="obs", **extra)
    return repo


@pytest.fixture(scope="module")
def server(virtual_lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(virtual_lake)
    yield srv
    srv.stop()


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_compare_marks_the_virtual_chunks(
    server: Server, virtual_lake: zarrlake.Repo, page: Any, theme: str
) -> None:
    node = virtual_lake.diff("main~1", "main")["obs/temp"]
    assert node.chunks_virtual == node.chunks_added  # the appended day is all references
    p = ComparePage(page, server.url).open(
        theme=theme, a="main~1", b="main", array="obs/temp", slice="time=2"
    )
    state = p.wait_state(array="obs/temp")
    shown = {tuple(c) for c in state["virtual"]}
    assert shown == {c for c in node.chunks_virtual if c[0] == 2}
    assert len(shown) == 2
    assert "(2 virtual references among them)" in state["text"]
    assert "virtual reference" in p.text(".zl-chunkmap-legend")
    # the 4 temp chunks are references; the time coordinate was loaded into the lake
    assert "5 chunks: +5 ~0 -0 (4 virtual references)" in p.text(".zl-diff-summary")
    p.screenshot(f"compare-virtual-{theme}")
