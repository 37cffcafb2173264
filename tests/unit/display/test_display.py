"""HTML and text reprs of every public object, on a real lake, with hostile free text."""

from __future__ import annotations

import ast
import re
from datetime import timedelta
from pathlib import Path

import pytest
import zarr

import zarrlake
from zarrlake import display

HOSTILE = '<script>alert("x")</script>'
TAG = re.compile(r"<script>|<img|<b>|<i>", re.I)


def _no_raw_markup(page: str) -> None:
    assert not TAG.search(page), "user text reached the page unescaped"


@pytest.fixture
def lake(sqlite_repo: zarrlake.Repo) -> dict[str, str]:
    """Two commits on main (the second rewrites 12 chunks and an attribute), a branch, a tag."""
    repo = sqlite_repo
    s = repo.writable_session(author=HOSTILE)
    g = zarr.open_group(s.store, mode="w")
    g.create_array("temp", shape=(100, 200), chunks=(10, 10), dtype="f4")[:] = 1.0
    c1 = s.commit(f"first {HOSTILE}", metadata={"source": HOSTILE, "n": 3})
    s = repo.writable_session()
    zarr.open_array(s.store, path="temp")[0:30, 50:90] = 2.0
    zarr.open_group(s.store).attrs["title"] = "<b>bold</b>"
    c2 = s.commit("update <i>one</i> region")
    repo.create_branch("dev", c1)
    repo.create_tag("v1", c1)
    return {"c1": c1, "c2": c2}


def test_commit_html_and_text_show_the_commit_with_free_text_escaped(
    sqlite_repo: zarrlake.Repo, lake: dict[str, str]
) -> None:
    info = sqlite_repo.commit_info(lake["c1"])
    page = display.commit_html(info)
    _no_raw_markup(page)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert info.id in page
    assert info.parents[0][:10] in page
    assert 'type="checkbox"' in page
    assert "<script" not in page.lower()
    text = display.commit_text(info)
    assert text.splitlines()[0] == f"commit {info.id}"
    assert f"author {HOSTILE}" in text
    assert "n: 3" in text
    assert info._repr_html_().count("zl-commit") == 1


def test_repo_html_lists_branches_tags_with_heads_and_recent_commits(
    sqlite_repo: zarrlake.Repo, lake: dict[str, str]
) -> None:
    page = display.repo_html(sqlite_repo)
    _no_raw_markup(page)
    for name in ("main", "dev", "v1"):
        assert f"<code>{name}</code>" in page
    assert lake["c2"][:10] in page
    assert lake["c1"][:10] in page
    assert "Recent commits on main" in page
    assert "update &lt;i&gt;one&lt;/i&gt; region" in page
    text = display.repo_text(sqlite_repo)
    assert "branches (2):" in text
    assert "tags (1):" in text
    assert re.search(rf"main\s+{lake['c2'][:10]}", text)
    assert re.search(rf"v1\s+{lake['c1'][:10]}", text)


def test_diff_html_lists_nodes_and_draws_one_cell_per_changed_chunk(
    sqlite_repo: zarrlake.Repo, lake: dict[str, str]
) -> None:
    d = sqlite_repo.diff(lake["c1"], lake["c2"])
    page = display.diff_html(d)
    _no_raw_markup(page)
    assert (
        "attributes[&#x27;title&#x27;]: (absent) -&gt; &quot;&lt;b&gt;bold&lt;/b&gt;&quot;" in page
    )
    assert page.count('class="zl-changed" x=') == 12  # rows 0-2 x cols 5-8
    assert "<title>chunk (0, 5): changed</title>" in page
    assert d._repr_html_().count("zl-map") >= 1
    text = display.diff_text(d, maps=True)
    assert "  ~ /temp (array)  chunks ~12" in text
    assert "      .....~~~~..........." in text.splitlines()  # the whole 20-column grid


def test_chunk_map_is_capped_for_large_grids(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array(
        "big", shape=(400, 1000), chunks=(1, 1), dtype="u1", fill_value=0
    )
    base = s.commit("create")
    s = sqlite_repo.writable_session()
    zarr.open_array(s.store, path="big")[399, 999] = 1
    zarr.open_array(s.store, path="big")[0, 0] = 1
    d = sqlite_repo.diff(base, s.commit("two corners"))
    svg = display.chunk_map_svg(d["big"])
    width = int(re.search(r'<svg[^>]* width="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    height = int(re.search(r'<svg[^>]* height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert width <= 48 * 9
    assert height <= 16 * 9
    assert svg.count('class="zl-added"') == 2
    assert "one cell = 25x21 chunks" in svg


def test_session_html_shows_branch_base_staged_changes_and_expiry(
    sqlite_repo: zarrlake.Repo, lake: dict[str, str]
) -> None:
    s = sqlite_repo.writable_session("dev", expires_in=timedelta(minutes=10))
    zarr.open_array(s.store, path="temp")[0:20, 0:20] = 5.0
    page = display.session_html(s)
    assert f"<code>{s.id}</code> on <code>dev</code>" in page
    assert lake["c1"] in page  # the base commit
    assert "1 node, 4 chunks staged" in page
    assert re.search(r"expires in (9 min \d+ s|10 min 0 s)", page)
    text = display.session_text(s)
    assert "staged    1 node, 4 chunks" in text
    assert "(open)" in text
    s.abandon()
    assert "(abandoned)" in display.session_text(s)
    ro = sqlite_repo.readonly_session(tag="v1")
    assert display.session_text(ro) == f"read-only session at commit {lake['c1']}"


def test_session_info_html_shows_status_and_commit(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session(author=HOSTILE)
    zarr.open_group(s.store, mode="w")
    commit = s.commit("make root")
    info = next(i for i in sqlite_repo.sessions(include_closed=True) if i.id == s.id)
    page = info._repr_html_()
    _no_raw_markup(page)
    assert "committed" in page
    assert commit in page
    assert f"({info.status} -> {commit[:10]})" in display.session_info_text(info)


def test_conflict_error_html_lists_every_conflict(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("<b>x</b>", shape=(4,), chunks=(2,), dtype="i4")
    s.commit("create")
    a, b = sqlite_repo.writable_session(), sqlite_repo.writable_session()
    zarr.open_array(a.store, path="<b>x</b>")[:] = 1
    zarr.open_array(b.store, path="<b>x</b>")[:] = 2
    other = a.commit("a")
    with pytest.raises(zarrlake.ConflictError) as caught:
        b.commit("b")
    page = caught.value._repr_html_()
    _no_raw_markup(page)
    assert "2 conflicts" in page
    assert page.count("<td>(0,)</td>") == 1
    assert page.count("<td>(1,)</td>") == 1
    assert f"<code>{other[:10]}</code>" in page
    text = display.conflict_error_text(caught.value)
    assert text.startswith("ConflictError [conflict]: cannot commit")
    assert f"  - chunk conflict at /<b>x</b> chunk (0,) (commit {other[:10]})" in text
    one = caught.value.conflicts[0]._repr_html_()
    _no_raw_markup(one)
    assert "chunk conflict</span> at <code>/&lt;b&gt;x&lt;/b&gt; chunk" in one


def test_report_html_and_text_for_gc_expire_fsck_export(
    sqlite_repo: zarrlake.Repo, lake: dict[str, str], tmp_path: Path
) -> None:
    gc = sqlite_repo.gc(dry_run=True)
    assert "garbage collection (dry run: nothing changed)" in display.report_html(gc)
    assert re.search(r"^  objects deleted\s+0$", display.report_text(gc), re.M)
    assert re.search(r"^  bytes freed\s+0 B$", display.report_text(gc), re.M)
    assert "GCReport" not in display.report_text(gc)
    ex = sqlite_repo.expire(timedelta(days=1), dry_run=True)
    assert "<td>commits expired</td><td>0</td>" in display.report_html(ex)
    fsck = sqlite_repo.fsck()
    assert 'class="zl-ok">fsck: ok' in display.report_html(fsck)
    out = sqlite_repo.export("main", str(tmp_path / "copy"))
    text = display.report_text(out)
    assert f"  commit  {lake['c2']}" in text.splitlines()
    assert text.startswith("export\n")
    assert re.search(r"^  chunks\s+200$", text, re.M)  # the 10 x 20 chunk grid
    assert re.search(r"^  bytes\s+\d+\.\d (KiB|MiB)$", text, re.M)


def test_display_imports_nothing_of_zarrlake_at_runtime() -> None:
    """Nothing of zarrlake but ``_loading`` (which imports nothing itself), through which the
    package's names load on first use."""
    root = Path(display.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        guarded = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in guarded:
                continue
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("zarrlake")
            ):
                allowed = node.module.startswith("zarrlake.display") or node.module == (
                    "zarrlake._loading"
                )
                assert allowed, f"{path.name}: {node.module}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("zarrlake"), f"{path.name}: {alias.name}"


def test_chunk_grids_make_the_map_span_the_whole_array(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array(
        "a", shape=(60, 40), chunks=(10, 10), dtype="u1", fill_value=0
    )
    base = s.commit("create")
    s = sqlite_repo.writable_session()
    zarr.open_array(s.store, path="a")[0:10, 0:10] = 1
    d = sqlite_repo.diff(base, s.commit("one chunk"))
    # the diff knows the array's layout: the map spans the whole 6 x 4 chunk grid
    assert 'width="80" height="120"' in display.chunk_map_svg(d["a"])  # 20 px cells
    grids = display.chunk_grids(sqlite_repo, d)
    assert grids == {"a": (6, 4)}
    page = display.diff_html(d, grids=grids)
    assert 'width="80" height="120"' in page
    assert page.count('class="zl-added" x=') == 1
    text = display.diff_text(d, maps=True, grids=grids)
    assert "      +..." in text.splitlines()
    assert text.splitlines().count("      ....") == 5


def test_the_diff_map_follows_the_axes_that_changed_in_coordinates(
    sqlite_repo: zarrlake.Repo,
) -> None:
    """Two changed months of a monthly grid held in one lat/lon chunk: the map is drawn along
    time (12 cells, 2 changed), labelled with dates, not folded into one square."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    import zarrlake.xarray as zx

    ds = xr.Dataset(
        {"t": (("time", "lat", "lon"), np.zeros((12, 4, 8), dtype="f4"))},
        coords={"time": pd.date_range("2025-01-01", periods=12, freq="MS")},
    )
    enc = {"t": {"chunks": (1, 4, 8)}}
    first = zx.commit(ds, "a year", repo=sqlite_repo, group="g", encoding=enc)
    ds["t"][2:4] = 1.0
    second = zx.commit(
        ds.isel(time=slice(2, 4))[["t"]],
        "two months",
        region={"time": slice(2, 4)},
        repo=sqlite_repo,
        group="g",
    )
    d = sqlite_repo.diff(str(first), str(second))
    # the notebook repr (no repo at hand): the diff's own layout names the axes
    text = display.chunk_map_text(d["g/t"])
    assert text == ["..~~........", "(columns: time; lat, lon folded in)"]
    # with the repo's coordinates, each cell is a month
    axes = display.chunk_axes(sqlite_repo, d)
    svg = display.chunk_map_svg(d["g/t"], axes["g/t"])
    assert svg.count('class="zl-changed"') == 2
    assert "<title>time 2025-03-01: changed</title>" in svg
    assert "<title>time 2025-04-01: changed</title>" in svg
    assert 'width="240" height="20"' in svg  # a strip of 12 cells of 20 px
    assert "columns: time 2025-01-01 … 2025-12-01; lat, lon folded in" in display.diff_html(
        d, grids=axes
    )


def test_the_map_draws_the_two_axes_that_vary_most() -> None:
    from zarrlake.display.chunkmap import choose_axes

    def marks(*coords: tuple[int, ...]) -> list[tuple[tuple[int, ...], str]]:
        return [(c, "changed") for c in coords]

    # lat and lon vary, time does not: a lat x lon map
    assert choose_axes(marks((5, 0, 1), (5, 1, 2), (5, 2, 0)), (12, 3, 3)) == (1, 2)
    # only time varies: time, beside the longest other axis
    assert choose_axes(marks((2, 0, 0), (3, 0, 0)), (12, 1, 4)) == (0, 2)
    # ... or alone, when every other axis is one chunk long
    assert choose_axes(marks((2, 0, 0), (3, 0, 0)), (12, 1, 1)) == (None, 0)
    # a long axis goes across rather than down
    assert choose_axes(marks((0, 0), (99, 1)), (100, 2)) == (1, 0)
    assert choose_axes(marks((3,)), (10,)) == (None, 0)


def test_an_embedded_lake_says_where_its_chunks_are_in_words(sqlite_repo: zarrlake.Repo) -> None:
    assert sqlite_repo.storage == "."
    assert repr(sqlite_repo).endswith(" chunks in the lake's directory>")
    assert display.repo_text(sqlite_repo).splitlines()[0] == (
        "zarrlake repo 'default'  chunks in the lake's directory"
    )
    assert "1 branch · 0 tags · chunks in the lake&#x27;s directory" in display.repo_html(
        sqlite_repo
    )
