"""Shared pieces of the HTML reprs: the stylesheet, sections, tables, value formatting.

The pattern is xarray's ``formatting_html``: a ``<pre>`` text fallback shown when the
stylesheet is not applied (untrusted notebooks, GitHub), collapsible sections made of a hidden
checkbox and its label (no JavaScript), colours from CSS variables that fall back to
JupyterLab's ``--jp-*`` theme variables so both light and dark themes read.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

__all__ = [
    "count",
    "esc",
    "fmt_bytes",
    "fmt_time",
    "fmt_value",
    "relative",
    "section",
    "short",
    "table",
    "wrap",
]

CSS = """
.zl-wrap {
  --zl-fg: var(--jp-content-font-color0, var(--pst-color-text-base, rgba(0, 0, 0, 1)));
  --zl-fg2: var(--jp-content-font-color2, var(--pst-color-text-muted, rgba(0, 0, 0, 0.54)));
  --zl-bg: var(--jp-layout-color0, var(--pst-color-on-background, white));
  --zl-bg2: var(--jp-layout-color2, #eeeeee);
  --zl-border: var(--jp-border-color2, #e0e0e0);
  --zl-add: var(--jp-success-color1, #2e7d32);
  --zl-mod: var(--jp-warn-color1, #b26a00);
  --zl-del: var(--jp-error-color1, #c62828);
  --zl-mix: var(--jp-brand-color1, #6a1b9a);
  display: block !important;
  color: var(--zl-fg);
  font-family: var(--jp-content-font-family, sans-serif);
  font-size: 13px;
  line-height: 1.45;
  max-width: 900px;
}
html[theme="dark"] .zl-wrap, html[data-theme="dark"] .zl-wrap,
body[data-theme="dark"] .zl-wrap, body.vscode-dark .zl-wrap {
  --zl-fg: rgba(255, 255, 255, 1);
  --zl-fg2: rgba(255, 255, 255, 0.6);
  --zl-bg: rgb(17, 17, 17);
  --zl-bg2: rgb(48, 48, 48);
  --zl-border: #3a3a3a;
  --zl-add: #66bb6a;
  --zl-mod: #ffb74d;
  --zl-del: #ef5350;
  --zl-mix: #ba68c8;
}
.zl-text-fallback { display: none; }
.zl-title { font-weight: 600; margin-bottom: 4px; }
.zl-wrap code { font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
.zl-muted { color: var(--zl-fg2); }
.zl-section { border-top: 1px solid var(--zl-border); padding: 2px 0; }
.zl-section-in { display: none; }
.zl-section-label { cursor: pointer; font-weight: 600; user-select: none; }
.zl-section-label::before { content: "\\25BA"; display: inline-block; width: 1.2em; font-size: 10px; }
.zl-section-in:checked + .zl-section-label::before { content: "\\25BC"; }
.zl-section-in:disabled + .zl-section-label { cursor: default; color: var(--zl-fg2); }
.zl-section-in:disabled + .zl-section-label::before { visibility: hidden; }
.zl-section-body { display: none; margin: 2px 0 6px 1.2em; }
.zl-section-in:checked ~ .zl-section-body { display: block; }
.zl-table { border-collapse: collapse; font-size: inherit; }
.zl-table th, .zl-table td { text-align: left; padding: 1px 10px 1px 0; vertical-align: top;
  border: none; background: transparent !important; color: var(--zl-fg); }
.zl-table th { color: var(--zl-fg2); font-weight: 600; }
.zl-added { color: var(--zl-add); }
.zl-modified, .zl-changed { color: var(--zl-mod); }
.zl-removed, .zl-expired, .zl-bad { color: var(--zl-del); }
.zl-ok { color: var(--zl-add); }
.zl-map rect.zl-cell-bg { fill: var(--zl-bg2); }
.zl-map rect.zl-added { fill: var(--zl-add); }
.zl-map rect.zl-changed { fill: var(--zl-mod); }
.zl-map rect.zl-removed { fill: var(--zl-del); }
.zl-map rect.zl-mixed { fill: var(--zl-mix); }
.zl-legend span { margin-right: 10px; }
"""

_ABSENT_NAME = "_Absent"  # the marker type of a missing side in a diff (model.diff.ABSENT)


def esc(value: object) -> str:
    """Escape any value for HTML text and attribute contexts."""
    return escape(str(value), quote=True)


def short(text: str, limit: int = 80) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def fmt_value(value: Any, limit: int = 60) -> str:
    """A metadata or attribute value on one line (JSON where possible)."""
    if type(value).__name__ == _ABSENT_NAME:
        return "(absent)"
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return short(text, limit)


PLURALS = {"branch": "branches", "is": "are", "was": "were"}


def count(n: int, word: str, plural: str | None = None) -> str:
    """``1 chunk``, ``2 chunks``, ``12,000 chunks``, ``0 branches`` (``plural`` when neither
    adding "s" nor :data:`PLURALS` is right)."""
    return f"{n:,} {word if n == 1 else plural or PLURALS.get(word) or word + 's'}"


def fmt_bytes(n: int) -> str:
    """A size in binary units: ``512 B``, ``1.5 KiB``, ``12.3 MiB``, ``4.0 GiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError  # the loop always returns


def fmt_time(when: datetime | None) -> str:
    """A UTC time to the second."""
    if when is None:
        return "-"
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def relative(seconds: float) -> str:
    """``4 min 12 s``, ``3 h 5 min``, ``2 d 4 h`` (the sign is the caller's)."""
    s = int(abs(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d} d {h} h"
    if h:
        return f"{h} h {m} min"
    if m:
        return f"{m} min {s} s"
    return f"{s} s"


def table(head: Sequence[str], rows: Iterable[Sequence[str]], *, raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw`` (then the caller escaped them)."""
    cell = (lambda c: c) if raw else esc
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="zl-table"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def section(title: str, body: str, *, count: int | None = None, open_: bool = True) -> str:
    """A collapsible section: a hidden checkbox, its label, and the body (already HTML)."""
    sid = f"zl-{uuid.uuid4().hex[:12]}"
    empty = count == 0 or not body
    if empty:
        body = ""
    state = " disabled" if empty else (" checked" if open_ else "")
    n = f' <span class="zl-muted">({count})</span>' if count is not None else ""
    return (
        f'<div class="zl-section"><input id="{sid}" class="zl-section-in" type="checkbox"{state}>'
        f'<label for="{sid}" class="zl-section-label">{esc(title)}{n}</label>'
        f'<div class="zl-section-body">{body}</div></div>'
    )


def wrap(kind: str, title_html: str, sections: Sequence[str], text: str) -> str:
    """The whole repr: stylesheet, text fallback, then the HTML (hidden until styled)."""
    return (
        f"<div><style>{CSS}</style>"
        f'<pre class="zl-text-fallback">{esc(text)}</pre>'
        f'<div class="zl-wrap zl-{esc(kind)}" style="display:none">'
        f'<div class="zl-title">{title_html}</div>{"".join(sections)}</div></div>'
    )
