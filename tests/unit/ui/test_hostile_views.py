"""Hostile text in every field of a lake (SQLite and PostgreSQL catalogs), and in the URL
parameters of the pages: every pane of every page, every widget and every HTML repr shows it
as text (no browser: the HTML each pane sends, parsed; the browser tests load the pages)."""

from __future__ import annotations

import html as stdhtml
from collections.abc import Callable
from typing import Any

import panel as pn
import pytest

import zarrlake
from tests.hostile import FIXED, PAYLOADS, Built, build, scan_html
from zarrlake import display
from zarrlake.ui.dashboard import Dashboard
from zarrlake.ui.dashboard.compare import CompareView
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.data import DataView
from zarrlake.ui.dashboard.history import HistoryView
from zarrlake.ui.dashboard.merge import MergeView
from zarrlake.ui.dashboard.overview import OverviewView
from zarrlake.ui.dashboard.sessions import SessionsView
from zarrlake.ui.widgets import RepoBrowser, SessionWidget

REF = PAYLOADS[0]  # a crafted ref in a link


@pytest.fixture
def lake(make_repo: Callable[..., zarrlake.Repo]) -> tuple[zarrlake.Repo, Built]:
    repo = make_repo()
    return repo, build(repo, FIXED)


def shown(view: Any) -> str:
    """The text every HTML and Markdown pane of ``view`` shows, after checking that none of
    them makes an element or attribute of it."""
    texts = []
    layout = pn.panel(view)
    for pane in [*layout.select(pn.pane.HTML), *layout.select(pn.pane.Markdown)]:
        problems, text = scan_html(stdhtml.unescape(pane.get_root().text))
        assert problems == [], (type(view).__name__, problems)
        texts.append(text)
    return "\n".join(texts)


def test_history_shows_a_commit_s_fields_as_text(lake: tuple[zarrlake.Repo, Built]) -> None:
    repo, b = lake
    text = shown(HistoryView(Context(repo), commit=b.base))
    for value in (FIXED.message, FIXED.author, FIXED.meta_key, FIXED.meta_value, b.path):
        assert value in text


def test_sessions_show_the_author_as_text(lake: tuple[zarrlake.Repo, Built]) -> None:
    repo, b = lake
    text = shown(SessionsView(Context(repo)))
    assert FIXED.session_author in text
    assert b.session in text


def test_merge_shows_refs_and_paths_as_text(lake: tuple[zarrlake.Repo, Built]) -> None:
    repo, b = lake
    v = MergeView(Context(repo), source=FIXED.branch, into="main")
    assert v.preview is not None
    assert {c.kind for c in v.preview.conflicts} >= {"chunk", "attributes"}
    text = shown(v)
    assert f"{FIXED.branch} → main" in text
    assert f"/{b.path}" in text


def test_compare_data_and_overview_show_paths_and_refs_as_text(
    lake: tuple[zarrlake.Repo, Built],
) -> None:
    repo, b = lake
    ctx = Context(repo)
    assert b.path in shown(CompareView(ctx, a=b.base, b=b.head, array=b.path))
    assert f"{b.path} at {FIXED.branch}" in shown(DataView(ctx, ref=FIXED.branch, array=b.path))
    assert repo.storage in shown(OverviewView(ctx))


@pytest.mark.parametrize(
    ("view", "param"),
    [
        (HistoryView, "commit"),
        (CompareView, "a"),
        (CompareView, "b"),
        (MergeView, "source"),
        (DataView, "ref"),
    ],
)
def test_a_crafted_ref_in_the_url_is_shown_as_text(
    lake: tuple[zarrlake.Repo, Built], view: Any, param: str
) -> None:
    repo, _ = lake
    v = view(Context(repo), **{param: REF})
    text = shown(v)
    assert REF in text  # the error quotes it, as text
    assert "invalid_ref" in text or "not_found" in text


def test_an_error_opening_the_lake_is_shown_as_text(tmp_path: Any) -> None:
    d = Dashboard(lambda: zarrlake.Repo.open(tmp_path / REF))
    d.load()
    assert isinstance(d.error, zarrlake.NotFoundError)
    assert REF in shown(d)


def test_widgets_and_reprs_show_every_field_as_text(lake: tuple[zarrlake.Repo, Built]) -> None:
    repo, b = lake
    browser = RepoBrowser(repo, FIXED.branch)
    browser.select(b.base)
    session = repo.session(b.session)
    assert isinstance(session, zarrlake.WritableSession)
    widget = SessionWidget(session)
    with pytest.raises(zarrlake.ConflictError) as conflict:
        repo.merge(FIXED.branch, branch="main")
    info = repo.commit_info(b.base)
    pages = [
        browser.details.value,
        browser.diff.value,
        widget.summary.value,
        display.commit_html(info),
        display.repo_html(repo),
        display.diff_html(repo.diff(b.base, b.head)),
        display.session_html(session),
        display.session_info_html(next(i for i in repo.sessions() if i.id == b.session)),
        display.conflict_error_html(conflict.value),
    ]
    for page in pages:
        problems, _ = scan_html(page)
        assert problems == []
    _, text = scan_html(browser.details.value)
    assert FIXED.message in text
    assert FIXED.author in text
