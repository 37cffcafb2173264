"""The dashboard's Viewers on the demo lake, without a browser."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import zarr

import zarrlake
from tests.unit.ui.conftest import commit_by_message
from zarrlake.ui.dashboard import Dashboard
from zarrlake.ui.dashboard.compare import CompareView
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.data import DataView
from zarrlake.ui.dashboard.history import HistoryView
from zarrlake.ui.dashboard.merge import MergeView
from zarrlake.ui.dashboard.overview import OverviewView
from zarrlake.ui.dashboard.sessions import SessionsView


def test_overview_counts(demo_lake: zarrlake.Repo) -> None:
    v = OverviewView(Context(demo_lake))
    assert v.counts["branches"] == 2
    assert v.counts["tags"] == 1
    assert v.counts["commits"] == 11
    assert v.counts["open sessions"] == 1  # ben's; dora's expired and is not counted
    assert list(v.table.value["ref"]) == ["main", "experiment", "v1.0"]


def test_history_filters_by_author_and_hides_merges(demo_lake: zarrlake.Repo) -> None:
    v = HistoryView(Context(demo_lake))
    every = {c.id: c for c in (r.commit for r in demo_lake.graph(limit=None))}
    assert v.shown() == list(every)  # one page holds the demo's 11 commits
    v.author = "ben"
    assert v.shown()
    assert all(every[c].author == "ben" for c in v.shown())
    v.author = ""
    v.hide_merges = True
    assert all(len(every[c].parents) < 2 for c in v.shown())
    assert len(v.shown()) == len(every) - 1
    v.text = "december"
    assert len(v.shown()) == 2
    assert list(v.table.value["message"]) == [every[c].message for c in v.shown()]


def test_history_branch_filter_keeps_what_the_branch_reaches(demo_lake: zarrlake.Repo) -> None:
    v = HistoryView(Context(demo_lake), branch="experiment")
    assert commit_by_message(demo_lake, "Fix northern autumn") not in v.shown()
    assert commit_by_message(demo_lake, "Warm southern December") in v.shown()


def test_compare_marks_exactly_the_changed_chunks(demo_lake: zarrlake.Repo) -> None:
    after = commit_by_message(demo_lake, "Fix northern autumn")
    before = demo_lake.commit_info(after).parents[0]
    v = CompareView(Context(demo_lake), a=before, b=after, array="temperature", slice="time=9")
    assert v.map is not None
    assert v.map.listed["changed"] == [(9, 2, 0), (9, 2, 1), (9, 2, 2)]
    assert v.map.fixed == {0: 9}


def test_compare_opens_on_the_first_changed_slice(demo_lake: zarrlake.Repo) -> None:
    after = commit_by_message(demo_lake, "Cool southern December")
    v = CompareView(Context(demo_lake), a=f"{after}~1", b=after)
    assert v.array == "temperature"
    assert v.slice == "time=11"
    assert v.map is not None
    assert v.map.slice_counts["changed"] == 3


def test_compare_against_a_sessions_staged_work(demo_lake: zarrlake.Repo) -> None:
    s = demo_lake.writable_session("main", expires_in=timedelta(minutes=5))
    zarr.open_array(s.store, path="precipitation")[2, 0, 0] = 99.0
    v = CompareView(Context(demo_lake), b=f"session:{s.id}", array="precipitation")
    assert v.diff is not None
    assert v.diff["precipitation"].chunks_changed == {(2, 0, 0)}
    assert v.slice == "time=2"
    assert v.info is not None
    assert set(v.info.coords) == {"time", "lat", "lon"}  # a session's map is in coordinates
    assert v.side_titles()[1] == f"session {s.id[:12]} (staged)"
    s.abandon()


def test_compare_with_a_session_shows_its_base_commit_in_a(demo_lake: zarrlake.Repo) -> None:
    s = demo_lake.writable_session("main", expires_in=timedelta(minutes=5))
    zarr.open_array(s.store, path="precipitation")[2, 0, 0] = 99.0
    base = demo_lake.resolve("main")
    v = CompareView(Context(demo_lake), a="main~1", b=f"session:{s.id}")
    assert v.w_a.value == base  # the A box, not main~1
    assert v.a == base
    assert v.diff is not None
    assert v.diff.before == base
    s.abandon()


def test_compare_rebuilds_the_slice_controls_when_the_axes_change(
    demo_lake: zarrlake.Repo,
) -> None:
    v = CompareView(Context(demo_lake), a="v1.0", b="main", array="temperature")
    assert [s.label for s in v.sliders.objects] == ["time"]
    v.rows = "time"
    assert [s.label for s in v.sliders.objects] == ["lat"]  # lat is no longer shown
    assert v.map is not None
    assert v.map.fixed == {1: 0}
    v.rows = "lon"  # the columns' dim: the two swap
    assert (v.rows, v.cols) == ("lon", "time")
    assert [s.label for s in v.sliders.objects] == ["lat"]


def test_compare_plots_are_titled_by_ref_and_id(demo_lake: zarrlake.Repo) -> None:
    v = CompareView(Context(demo_lake), a="v1.0", b="main", array="temperature")
    a, b = demo_lake.resolve("v1.0")[:10], demo_lake.resolve("main")[:10]
    assert v.side_titles() == (f"v1.0 ({a})", f"main ({b})")
    assert v.info is not None
    assert v.info.units == "K"


def test_compare_a_node_row_drives_the_map(demo_lake: zarrlake.Repo) -> None:
    v = CompareView(Context(demo_lake), a="v1.0", b="main", array="temperature")
    rows = list(v.nodes.value["path"])
    v.nodes.selection = [rows.index("/precipitation")]
    assert v.array == "precipitation"
    assert v.map is not None
    assert v.map.slice_counts["changed"] > 0


def test_compare_with_an_unknown_ref_is_a_message(demo_lake: zarrlake.Repo) -> None:
    v = CompareView(Context(demo_lake), a="nope", b="main")
    assert v.diff is None
    assert "nope" in v.message.objects[0].object


def test_merge_view_shows_the_engines_conflicts(demo_lake: zarrlake.Repo) -> None:
    v = MergeView(Context(demo_lake), source="experiment", into="main")
    dry = demo_lake.merge("experiment", "main", dry_run=True)
    shown = {(r["path"], r["chunk"]) for _, r in v.conflicts.value.iterrows()}
    assert shown == {("/" + c.path, ", ".join(map(str, c.chunk or ()))) for c in dry.conflicts}
    assert len(shown) == 3
    assert "3 conflicts." in v.outcome.object
    assert v.button.disabled  # solver fail would be refused
    v.solver = "theirs"
    assert not v.button.disabled


def test_merge_view_of_a_merged_ref_says_nothing_to_merge(demo_lake: zarrlake.Repo) -> None:
    v = MergeView(Context(demo_lake), source="v1.0", into="main")
    assert "main already contains v1.0: nothing to merge." in v.outcome.object
    assert v.conflict_box.objects == []  # a sentence, not an empty table
    assert v.button.disabled


def test_data_view_reads_the_slice_at_a_tag(demo_lake: zarrlake.Repo) -> None:
    v = DataView(Context(demo_lake), ref="v1.0", array="temperature", slice="time=3")
    da = v.data_slice()
    assert da.dims == ("lat", "lon")
    ds = zarrlake.open_dataset(demo_lake, "v1.0")
    np.testing.assert_array_equal(da.values, ds.temperature.isel(time=3).values)
    assert float(da.lat[0]) == float(ds.lat[0])
    assert v.caption.object.endswith(", time 2025-04-01</p>")  # the slider's date, not 3
    assert v.sliders.objects[0].value == 3


def test_sessions_flag_expired_and_follow_new_and_closed(demo_lake: zarrlake.Repo) -> None:
    v = SessionsView(Context(demo_lake))
    infos = {i.author: i.id for i in demo_lake.sessions()}
    assert "EXPIRED" in v.flag(infos["dora"])  # built with a 1 s expiry
    assert "EXPIRED" not in v.flag(infos["ben"])  # 5 minutes
    s = demo_lake.writable_session("main", expires_in=timedelta(minutes=5))
    v.refresh()
    assert s.id in v.session_ids
    s.abandon()
    v.refresh()
    assert s.id not in v.session_ids


def test_dashboard_on_a_missing_lake_shows_a_message(tmp_path: Path) -> None:
    d = Dashboard(lambda: zarrlake.Repo.open(tmp_path / "nothing"))
    d.load()
    assert isinstance(d.error, zarrlake.NotFoundError)
    assert d.body.objects[0].object.startswith("<div>not_found: ")


def test_dashboard_builds_each_page_on_demand(demo_lake: zarrlake.Repo) -> None:
    d = Dashboard(demo_lake, page="merge")
    d.load()
    assert set(d.views) == {"merge"}
    d.page = "data"
    assert set(d.views) == {"merge", "data"}
