"""The dashboard's one way of showing text (``ui/dashboard/markup.py``), on generated hostile
text: whatever the text, the panes it builds show it as it was written and make no element
or attribute of it (no browser: the HTML the pane sends, parsed)."""

from __future__ import annotations

import html as stdhtml

import panel as pn
from hypothesis import HealthCheck, given, settings

import zarrlake
from tests.hostile import hostile_text, scan_html
from zarrlake.ui.dashboard.markup import alert, error_alert, html, html_pane

EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sent(pane: pn.pane.HTML) -> str:
    """The markup a pane sends to the browser (Panel escapes it for the wire)."""
    return stdhtml.unescape(pane.get_root().text)


@EXAMPLES
@given(text=hostile_text(), other=hostile_text())
def test_html_escapes_every_value(text: str, other: str) -> None:
    markup = html('<p class="x"><b>{}</b> by <code>{who}</code></p>', text, who=other)
    problems, shown = scan_html(markup)
    assert problems == []
    assert shown == f"{text} by {other}"


@settings(max_examples=60, deadline=None)
@given(text=hostile_text())
def test_html_panes_send_the_text_as_text(text: str) -> None:
    problems, shown = scan_html(sent(html_pane(html("<h3>Commit {}</h3>", text))))
    assert problems == []
    assert shown == f"Commit {text}"


@settings(max_examples=60, deadline=None)
@given(text=hostile_text())
def test_alerts_and_errors_show_their_text_as_text(text: str) -> None:
    problems, shown = scan_html(sent(alert(text, "success")))
    assert problems == []
    assert shown == text
    problems, shown = scan_html(sent(error_alert(zarrlake.NotFoundError(f"no ref {text!r}"))))
    assert problems == []
    assert shown == f"not_found: no ref {text!r}"


def test_an_error_never_shows_the_password_of_a_url_it_quotes() -> None:
    err = zarrlake.CatalogError(
        "cannot open postgresql+psycopg://u:hunter2@h/db?password=hunter3&sslmode=require"
    )
    problems, shown = scan_html(sent(error_alert(err)))
    assert problems == []
    assert "hunter" not in shown
    assert "postgresql+psycopg://u:***@h/db?password=***&sslmode=require" in shown
