"""The dashboard shows the engine's facts, never its own: the merge dry run's conflicts and
the sessions' status."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import zarr

import zarrlake
from tests.integration.ui.conftest import Server, wait_until
from tests.integration.ui.pages import MergePage, OverviewPage, SessionsPage

pytestmark = pytest.mark.browser


def _write(repo: zarrlake.Repo, branch: str, value: int) -> None:
    s = repo.writable_session(branch)
    zarr.open_array(s.store, path="a")[0:2, 0:2] = value
    s.commit(f"write {value} on {branch}")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> zarrlake.Repo:
    """main, ``same`` (the same bytes as main in one chunk) and ``other`` (other bytes)."""
    repo = zarrlake.Repo.create(tmp_path_factory.mktemp("facts") / "lake")
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4, 4), chunks=(2, 2), dtype="i4")
    s.commit("create a")
    repo.create_branch("same")
    repo.create_branch("other")
    _write(repo, "main", 5)
    _write(repo, "same", 5)
    _write(repo, "other", 9)
    s = repo.writable_session("main", author="gone", expires_in=timedelta(seconds=1))
    zarr.open_array(s.store, path="a")[3, 3] = 1
    wait_until(lambda: [i.status for i in repo.sessions()] == ["expired"], timeout=10)
    return repo


@pytest.fixture(scope="module")
def server(lake: zarrlake.Repo, browser: Any) -> Iterator[Server]:
    srv = Server(lake)
    yield srv
    srv.stop()


def test_identical_bytes_on_both_branches_show_no_conflict(
    server: Server, lake: zarrlake.Repo, page: Any
) -> None:
    p = MergePage(page, server.url).open(source="same", into="main")
    outcome = wait_until(lambda: p.text(".zl-merge-outcome"))
    assert "no conflicts, it would merge cleanly" in outcome
    assert p.conflict_rows() == []
    assert not p.has_text("conflict written")
    head = lake.resolve("main")
    merged = lake.merge("same", "main")  # the real merge agrees
    assert lake.commit_info(merged).parents == (head, lake.resolve("same"))


def test_a_real_conflict_lists_what_the_dry_run_lists(
    server: Server, lake: zarrlake.Repo, page: Any
) -> None:
    dry = lake.merge("other", "main", dry_run=True)
    p = MergePage(page, server.url).open(source="other", into="main")
    assert len(dry.conflicts) == 1
    wait_until(lambda: p.conflicts_showing(1, "/a", "0, 0"))
    assert "1 conflict." in p.text(".zl-merge-outcome")
    with pytest.raises(zarrlake.ConflictError) as err:
        lake.merge("other", "main")
    assert [(c.path, c.chunk) for c in err.value.conflicts] == [("a", (0, 0))]


def test_an_expired_session_is_not_counted_or_listed_as_open(
    server: Server, lake: zarrlake.Repo, page: Any
) -> None:
    (gone,) = lake.sessions()
    assert gone.status == "expired"
    p = OverviewPage(page, server.url).open()
    stats = wait_until(lambda: p.text(".zl-stats"))
    assert "open sessions 0" in stats or "0 open sessions" in stats, stats
    assert "1 expired session" in p.text(".zl-overview-header")
    s = SessionsPage(page, server.url).open()
    summary = page.locator(".zl-sessions-summary p").inner_text()
    assert summary == "0 open sessions, 1 expired (refreshed every 2 s)"
    cd = s.countdown(gone.id)
    wait_until(lambda: cd.inner_text() == "expired")
