# mypy: disallow-untyped-calls=False
"""The only way text reaches a page: markup we wrote, with every value escaped into it.

Commit messages, authors, metadata, ref names, paths, attributes, session authors and
whatever a URL parameter holds are text, written by anyone with access to the catalog or a
link. Pages never hand them to Markdown (which would read them as markup: raw HTML, links,
emphasis) nor to an HTML pane unescaped; they build HTML with :func:`html`, and show errors
and results with :func:`alert`. Tabulator cells, ``Select`` options, slider titles and Bokeh
tooltips already show text as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import panel as pn

from zarrlake import ZarrlakeError
from zarrlake.display import esc
from zarrlake.types import redact_urls

__all__ = ["alert", "error_alert", "error_text", "esc", "html", "html_pane"]


def html(template: str, *values: object, **named: object) -> str:
    """``template`` (markup of ours, ``str.format`` fields) with every value escaped.

    ``html("<b>{}</b> by {author}", message, author=who)``. A value that is markup already
    (the result of another :func:`html`) goes in by concatenation, never as a value.
    """
    return template.format(*(esc(v) for v in values), **{k: esc(v) for k, v in named.items()})


def html_pane(markup: str, css_classes: Sequence[str] = (), **params: Any) -> pn.pane.HTML:
    """A pane for markup built with :func:`html` (text wraps; newlines in values are kept)."""
    return pn.pane.HTML(markup, css_classes=["zl-html", *css_classes], stylesheets=[CSS], **params)


CSS = """
.zl-text { white-space: pre-wrap; overflow-wrap: anywhere; }
code, .zl-id { color: inherit; background: rgba(127, 127, 127, 0.14); padding: 0 0.25em;
  border-radius: 3px; font-family: ui-monospace, Menlo, Consolas, monospace; }
a { color: inherit; text-decoration: underline; text-underline-offset: 2px; }
.zl-muted { opacity: 0.85; }
.zl-message { margin: 0.2em 0; }
.zl-cards { display: flex; flex-wrap: wrap; gap: 8px; }
.zl-card { border: 1px solid rgba(127, 127, 127, 0.45); border-radius: 6px;
  padding: 4px 10px; min-width: 200px; flex: 1 1 220px; }
.zl-card p, .zl-card ul { margin: 4px 0; }
.zl-badge { font-size: 0.85em; border: 1px solid currentColor; border-radius: 8px;
  padding: 0 6px; }
.zl-add, .zl-chg, .zl-del { font-weight: bold; font-family: ui-monospace, Menlo, monospace; }
:host(.zl-alert) { padding: 0.75rem 1.25rem; border: 1px solid transparent;
  border-radius: 0.25rem; white-space: pre-wrap; overflow-wrap: anywhere; }
:host(.zl-alert-danger) { color: var(--danger-text-color, #58151c);
  background-color: var(--danger-bg-subtle, #f8d7da);
  border-color: var(--danger-border-subtle, #f1aeb5); }
:host(.zl-alert-success) { color: var(--success-text-color, #0a3622);
  background-color: var(--success-bg-subtle, #d1e7dd);
  border-color: var(--success-border-subtle, #a3cfbb); }
"""


def alert(
    text: str, kind: Literal["danger", "success"] = "danger", css_classes: Sequence[str] = ()
) -> pn.pane.HTML:
    """A message box showing ``text`` as text."""
    return html_pane(
        html("<div>{}</div>", text),
        css_classes=["zl-alert", f"zl-alert-{kind}", *css_classes],
        sizing_mode="stretch_width",
    )


def error_text(exc: BaseException) -> str:
    """One clear line for a page: our errors by kind, anything else by type, never a trace,
    and never a credential of a URL the message quotes."""
    if isinstance(exc, ZarrlakeError):
        return redact_urls(f"{exc.kind}: {exc}")
    return redact_urls(f"unexpected {type(exc).__name__}: {exc}")


def error_alert(exc: BaseException) -> pn.pane.HTML:
    """How every page shows an error: the message as text, whatever it quotes (a ref from
    the URL, a path from the catalog)."""
    return alert(error_text(exc), "danger", ["zl-error"])
