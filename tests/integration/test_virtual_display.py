"""The notebook repr of a diff whose new chunks are virtual references to a NetCDF file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import zarrlake
from tests.integration.virtual_data import make_netcdf, open_virtual

pytest.importorskip("virtualizarr")


def test_diff_repr_marks_and_counts_the_virtual_chunks(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    repo = zarrlake.Repo.create(tmp_path / "lake", virtual_sources={str(archive): {}})
    for i, day in enumerate((0, 2)):
        make_netcdf(archive / f"day{day}.nc", day)
        extra = {"append_dim": "time"} if i else {}
        open_virtual(f"file://{archive / f'day{day}.nc'}").lake.commit(
            f"day {day}", repo=repo, group="obs", **extra
        )
    d = repo.diff("main~1", "main")
    page = d._repr_html_()
    # 4 temp chunks are references; the time coordinate was loaded into the lake
    assert "chunks +5 ~0 -0 (4 virtual)" in page
    assert "virtual reference (4)" in page
    assert "+4 (4 virtual)" in page  # the temp row of the node table
    marks = re.findall(r'<path class="zl-virtual"[^>]*><title>([^<]*)</title>', page)
    assert len(marks) == 4
    assert all(t.endswith(": added, virtual reference") for t in marks)
    # the time chunk is in the lake: its cell has no mark
    assert page.count(": added</title>") == 1


def test_diff_repr_without_references_has_no_virtual_entry(sqlite_repo: zarrlake.Repo) -> None:
    import zarr

    s = sqlite_repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4,), chunks=(2,), dtype="i4")[:] = 1
    s.commit("a")
    page = sqlite_repo.diff("main~1", "main")._repr_html_()
    assert "virtual" not in page
