"""Pure parts of the dashboard: chunk maps, slices, words, writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import zarr

import zarrlake
from zarrlake import NodeDiff
from zarrlake.ui.dashboard.chunkmap import CHANGED, chunk_map
from zarrlake.ui.dashboard.common import Writes
from zarrlake.ui.dashboard.slices import format_slice, parse_slice


def test_chunk_map_of_one_slice_marks_only_that_slice() -> None:
    node = NodeDiff(
        "t",
        "modified",
        "array",
        chunks_changed=frozenset({(1, 0, 2), (1, 1, 1), (2, 0, 0)}),
        chunks_added=frozenset({(1, 2, 2)}),
    )
    m = chunk_map(node, (3, 3, 3), fixed={0: 1})
    assert m.listed["changed"] == [(1, 0, 2), (1, 1, 1)]
    assert m.listed["added"] == [(1, 2, 2)]
    assert m.cells[0, 2] == CHANGED
    assert m.cells[0, 0] == 0
    assert m.counts == {"added": 1, "changed": 3, "removed": 0, "virtual": 0}


def test_a_million_chunk_grid_is_drawn_in_blocks() -> None:
    node = NodeDiff("big", "modified", "array", chunks_changed=frozenset({(999, 999), (0, 5)}))
    m = chunk_map(node, (1000, 1000))
    assert m.aggregated
    assert max(m.cells.shape) <= 400
    br, bc = m.block
    assert m.cells[999 // br, 999 // bc] == CHANGED
    assert m.cells[0, 5 // bc] == CHANGED
    assert int((m.cells != 0).sum()) == 2


def test_slice_text_round_trips_and_rejects_garbage() -> None:
    assert parse_slice("time=3, depth=0") == {"time": 3, "depth": 0}
    assert format_slice({"time": 3}) == "time=3"
    with pytest.raises(zarrlake.InvalidInputError):
        parse_slice("time")
    with pytest.raises(zarrlake.InvalidInputError):
        parse_slice("time=x")


def test_slice_text_holds_any_dim_name() -> None:
    sel = {"a=b,c%": 3, "time": 1, "é x": 2}
    assert format_slice(sel) == "a%3Db%2Cc%25=3,time=1,é x=2"
    assert parse_slice(format_slice(sel)) == sel


def test_writes_need_allow_writes_and_the_exact_token() -> None:
    with pytest.raises(zarrlake.ReadOnlyError, match="read-only"):
        Writes().check("anything")
    w = Writes(True, "tok")
    with pytest.raises(zarrlake.ReadOnlyError, match="refused"):
        w.check("tik")
    with pytest.raises(zarrlake.ReadOnlyError, match="refused"):
        w.check(None)
    w.check("tok")
    with pytest.raises(zarrlake.InvalidInputError):
        Writes(True, None)


@pytest.mark.parametrize(
    "given", ["tøk", "tok\u0301", "\u30c8\u30fc\u30af\u30f3", "\ud800", "tok\x00"]
)
def test_a_token_that_is_not_ascii_is_refused_like_any_wrong_one(given: str) -> None:
    with pytest.raises(zarrlake.ReadOnlyError, match="refused"):
        Writes(True, "tok").check(given)
    Writes(True, "tøk-✓").check("tøk-✓")  # and a token that is not ASCII works


def test_a_non_ascii_token_changes_nothing_in_the_lake(repo: zarrlake.Repo) -> None:
    from zarrlake.ui.dashboard import actions

    head = repo.resolve("main")
    with pytest.raises(zarrlake.ReadOnlyError, match="refused"):
        actions.create_branch(repo, Writes(True, "tok"), "tøk", "from-dashboard", head)
    with pytest.raises(zarrlake.ReadOnlyError, match="refused"):
        actions.merge(repo, Writes(True, "tok"), "ünïcode", "main", "main", "ours")
    assert list(repo.branches()) == ["main"]
    assert repo.resolve("main") == head


def test_write_actions_check_the_token_before_touching_the_lake(tmp_path: Path) -> None:
    from zarrlake.ui.dashboard import actions

    repo = zarrlake.Repo.create(tmp_path / "lake")
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(2,), chunks=(1,), dtype="i4")
    bad = s.commit("create a")
    w = Writes(True, "tok")
    with pytest.raises(zarrlake.ReadOnlyError):
        actions.revert(repo, w, "nope", bad, "main")
    with pytest.raises(zarrlake.ReadOnlyError):
        actions.create_tag(repo, w, "", "t1", bad)
    assert repo.resolve("main") == bad
    assert repo.tags() == {}
    assert actions.create_tag(repo, w, "tok", "t1", bad) == bad
    new = actions.revert(repo, w, "tok", bad, "main")
    assert repo.commit_info(new).metadata["reverts"] == bad


def test_chunk_map_tooltip_names_the_chunk_not_internal_fields() -> None:
    import holoviews as hv
    import holoviews.plotting.bokeh

    from zarrlake.ui.dashboard.chunkplot import chunkmap_plot
    from zarrlake.ui.dashboard.reader import ArrayInfo

    info = ArrayInfo("t", (4, 4), (2, 2), "f4", ("lat", "lon"), {})
    node = NodeDiff("t", "modified", "array", chunks_changed=frozenset({(0, 1)}))
    plot = chunkmap_plot(chunk_map(node, info.grid), info)
    tips = hv.Store.lookup_options("bokeh", plot, "plot").kwargs["hover_tooltips"]
    assert [label for label, _ in tips] == ["chunk", "status", "rows", "columns"]
    assert not any(f in str(tips) for f in ("x0", "y0", "x1", "y1", "code"))


def test_chunk_map_marks_virtual_references_apart() -> None:
    import holoviews as hv
    import holoviews.plotting.bokeh

    from zarrlake.ui.dashboard.chunkplot import chunkmap_plot, chunkmap_state_html
    from zarrlake.ui.dashboard.reader import ArrayInfo

    info = ArrayInfo("t", (4, 6), (2, 2), "f4", ("y", "x"), {})
    node = NodeDiff(
        "t",
        "modified",
        "array",
        chunks_added=frozenset({(1, 1), (1, 2)}),
        chunks_changed=frozenset({(0, 0)}),
        chunks_virtual=frozenset({(1, 1), (1, 2)}),
    )
    m = chunk_map(node, info.grid)
    assert m.listed["virtual"] == [(1, 1), (1, 2)]
    assert m.virtual.tolist() == [[False, False, False], [False, True, True]]
    assert "2 added, 1 changed, 0 removed (2 virtual references among them)" in (
        chunkmap_state_html(m, info)
    )
    data = hv.render(chunkmap_plot(m, info)).renderers[0].data_source.data
    status = dict(zip(data["chunk"], data["status"], strict=True))
    assert status["(1, 1)"] == "added · virtual reference"
    assert status["(0, 0)"] == "changed"  # bytes in the lake: no mark
    outlined = {c for c, w in zip(data["chunk"], data["edge_width"], strict=True) if w > 1}
    assert outlined == {"(1, 1)", "(1, 2)"}


def test_virtual_references_stay_marked_when_the_grid_is_drawn_in_blocks() -> None:
    node = NodeDiff(
        "big",
        "modified",
        "array",
        chunks_added=frozenset({(999, 999), (0, 0)}),
        chunks_virtual=frozenset({(999, 999)}),
    )
    m = chunk_map(node, (1000, 1000))
    br, bc = m.block
    assert m.virtual[999 // br, 999 // bc]
    assert int(m.virtual.sum()) == 1
    assert m.counts["virtual"] == 1


def test_a_slice_whose_chunks_all_have_one_status_is_still_coloured() -> None:
    import holoviews as hv
    import holoviews.plotting.bokeh

    from zarrlake.ui.dashboard.chunkplot import COLORS, chunkmap_plot
    from zarrlake.ui.dashboard.reader import ArrayInfo

    info = ArrayInfo("t", (4, 6), (2, 6), "f4", ("y", "x"), {})
    node = NodeDiff("t", "added", "array", chunks_added=frozenset({(0, 0), (1, 0)}))
    glyph = hv.render(chunkmap_plot(chunk_map(node, info.grid), info)).renderers[0].glyph
    assert glyph.fill_color == COLORS[1]  # every cell the green of "added"
