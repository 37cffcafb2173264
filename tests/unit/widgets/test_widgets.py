"""Widget state and callbacks through the widget API, on a real lake (no browser)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
import xarray as xr
import zarr

import zarrlake
from zarrlake.ui.widgets import COUNTDOWN_JS, Countdown, RepoBrowser, SessionWidget


def _ds(value: float) -> xr.Dataset:
    return xr.Dataset({"t": (("y", "x"), np.full((4, 6), value, dtype="f4"))})


@pytest.fixture
def history(sqlite_repo: zarrlake.Repo) -> list[str]:
    """main: write 1.0, then 2.0; dev from the first commit; tag v1 on it."""
    import zarrlake.xarray as zx

    c1 = zx.commit(_ds(1.0), "one", repo=sqlite_repo, mode="w")
    c2 = zx.commit(_ds(2.0), "two", repo=sqlite_repo, mode="w")
    assert c1
    assert c2
    sqlite_repo.create_branch("dev", c1)
    sqlite_repo.create_tag("v1", c1)
    return [c1, c2]


def test_countdown_syncs_expiry_and_status_and_ships_the_shared_module() -> None:
    c = Countdown(expires_at=1_800_000_000.5, status="open")
    state = c.get_state()
    assert state["expires_at"] == 1_800_000_000.5
    assert state["status"] == "open"
    assert state["_esm"] == COUNTDOWN_JS.read_text()
    c.set_state({"status": "expired"})
    assert c.status == "expired"


def test_session_widget_shows_expiry_and_staged_changes(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session(expires_in=timedelta(minutes=5))
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4,), chunks=(2,), dtype="i1")[:] = 1
    w = SessionWidget(s)
    assert s.expires_at is not None
    assert w.countdown.get_state()["expires_at"] == s.expires_at.timestamp()
    assert w.status == "open"
    assert w.staged.value == "staged: 2 nodes, 2 chunks"
    assert s.id in w.summary.value


def test_extend_button_extends_the_session(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session(expires_in=timedelta(minutes=5))
    w = SessionWidget(s)
    before = w.countdown.expires_at
    w.extend_by.set_state({"index": 0})  # as the browser picks "1 hour"
    assert w.extend_by.value == 1
    w.extend_button.click()
    assert w.countdown.expires_at > before + 50 * 60
    info = next(i for i in sqlite_repo.sessions() if i.id == s.id)
    assert info.expires_at.timestamp() == pytest.approx(w.countdown.expires_at)


def test_abandon_button_abandons_and_disables_the_buttons(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session()
    w = SessionWidget(s)
    w.abandon_button.click()
    assert w.status == "abandoned"
    assert w.countdown.get_state()["status"] == "abandoned"
    assert w.extend_button.disabled
    assert w.abandon_button.disabled
    assert s.id not in {i.id for i in sqlite_repo.sessions()}


def test_refresh_sees_a_commit_made_elsewhere(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session()
    w = SessionWidget(s)
    zarr.open_group(s.store, mode="w")
    s.commit("from another cell")
    w.refresh_button.click()
    assert w.status == "committed"
    assert w.extend_button.disabled


def test_extend_of_a_closed_session_shows_the_error(sqlite_repo: zarrlake.Repo) -> None:
    s = sqlite_repo.writable_session()
    w = SessionWidget(s)
    s.abandon()
    w.extend()
    assert "was already abandoned" in w.message.value
    assert w.status == "abandoned"


def test_session_widget_refuses_a_read_only_session(sqlite_repo: zarrlake.Repo) -> None:
    with pytest.raises(zarrlake.InvalidInputError, match="read-only"):
        SessionWidget(sqlite_repo.readonly_session())


def test_repo_browser_lists_refs_and_commits_and_shows_the_head(
    sqlite_repo: zarrlake.Repo, history: list[str]
) -> None:
    b = RepoBrowser(sqlite_repo)
    assert list(b.ref.options) == ["dev", "main", "v1"]
    assert b.ref.value == "main"
    assert [v for _, v in b.commits.options][:2] == [history[1], history[0]]
    assert b.selected_commit == history[1]
    assert history[1] in b.details.value
    assert "Diff " + history[0][:10] in b.diff.value


def test_picking_a_commit_and_a_ref_to_compare(
    sqlite_repo: zarrlake.Repo, history: list[str]
) -> None:
    b = RepoBrowser(sqlite_repo)
    b.commits.set_state({"index": 1})  # as the browser selects the second row
    assert b.selected_commit == history[0]
    assert history[0] in b.details.value
    b.compare.value = "main"
    assert f"Diff {history[1][:10]}..{history[0][:10]}" in b.diff.value
    b.ref.set_state({"index": 0})  # dev
    assert b.selected_commit == history[0]


def test_a_bad_ref_shows_an_error_not_a_traceback(
    sqlite_repo: zarrlake.Repo, history: list[str]
) -> None:
    b = RepoBrowser(sqlite_repo)
    b.compare.value = "no-such-ref"
    assert "no branch, tag or commit &#x27;no-such-ref&#x27;" in b.message.value
    assert b.diff.value == ""


def test_selected_dataset_is_the_data_at_the_selected_commit(
    sqlite_repo: zarrlake.Repo, history: list[str]
) -> None:
    b = RepoBrowser(sqlite_repo)
    assert float(b.selected_dataset()["t"].max()) == 2.0
    b.select(history[0])
    ds = b.selected_dataset()
    assert float(ds["t"].max()) == 1.0
    assert ds.encoding["zarrlake"].commit == history[0]


def test_browser_for_a_dataset_starts_on_its_branch(
    sqlite_repo: zarrlake.Repo, history: list[str]
) -> None:
    ds = zarrlake.open_dataset(sqlite_repo, branch="dev")
    b = RepoBrowser.for_dataset(ds)
    assert b.ref.value == "dev"
    assert b.selected_commit == history[0]


def test_selected_dataset_opens_the_group_that_holds_the_data(
    sqlite_repo: zarrlake.Repo,
) -> None:
    """The data lives in a group, not in the root: the browser opens that group."""
    import zarrlake.xarray as zx

    zx.commit(_ds(3.0), "surface", repo=sqlite_repo, group="surface")
    b = RepoBrowser(sqlite_repo)
    assert b.group.options == (("/surface", "surface"),)
    ds = b.selected_dataset()
    assert list(ds.data_vars) == ["t"]
    assert float(ds["t"].max()) == 3.0
    assert ds.encoding["zarrlake"].group == "surface"


def test_the_group_dropdown_picks_among_groups_with_data(sqlite_repo: zarrlake.Repo) -> None:
    import zarrlake.xarray as zx

    zx.commit(_ds(1.0), "land", repo=sqlite_repo, group="land")
    zx.commit(_ds(2.0), "ocean", repo=sqlite_repo, group="ocean")
    b = RepoBrowser(sqlite_repo, group="ocean")
    assert [v for _, v in b.group.options] == ["land", "ocean"]
    assert float(b.selected_dataset()["t"].max()) == 2.0
    b.group.value = "land"
    assert float(b.selected_dataset()["t"].max()) == 1.0
