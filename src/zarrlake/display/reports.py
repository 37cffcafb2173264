"""Reprs of the maintenance reports: ``GCReport``, ``ExpireReport``, ``FsckReport``,
``ExportReport`` (any frozen dataclass renders; these four get their lists shown)."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any

from zarrlake.display._base import count, esc, fmt_bytes, fmt_time, section, table, wrap

__all__ = ["report_fields", "report_html", "report_text", "report_title"]

MAX_ITEMS = 200  # issues or expired commits listed; the rest are counted
_LISTS = ("issues", "expired")  # fields that are lists of items, shown in their own section
_DERIVED = ("ok", "deleted", "bytes_freed", "commits_expired")  # properties worth a line
_IN_HEADLINE = ("ok", "dry_run")  # said by the headline, not repeated as a line
_TITLES = {"GCReport": "garbage collection"}  # else the class name in words, e.g. "fsck"


def _fmt(value: Any, name: str = "") -> str:
    if isinstance(value, datetime):
        return fmt_time(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and "bytes" in name:
        return fmt_bytes(value)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _label(name: str) -> str:
    return name.replace("_", " ")


def report_title(report: Any) -> str:
    """What the report is about, in words: ``garbage collection``, ``fsck``, ``export``."""
    name = type(report).__name__
    if name in _TITLES:
        return _TITLES[name]
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name.removesuffix("Report")).lower()
    return words or "report"


def report_fields(report: Any) -> list[tuple[str, Any]]:
    """The scalar facts of a report, in field order, then the derived ones it has."""
    out: list[tuple[str, Any]] = []
    if dataclasses.is_dataclass(report):
        out = [
            (f.name, getattr(report, f.name))
            for f in dataclasses.fields(report)
            if f.name not in _LISTS
        ]
    out += [(name, getattr(report, name)) for name in _DERIVED if hasattr(report, name)]
    return out


def _items(report: Any) -> tuple[str, list[str]] | None:
    for name in _LISTS:
        value = getattr(report, name, None)
        if isinstance(value, tuple | list):
            return name, [str(v) for v in value]
    return None


def _headline(report: Any) -> str:
    name = report_title(report)
    if getattr(report, "dry_run", False):
        name += " (dry run: nothing changed)"
    ok = getattr(report, "ok", None)
    if ok is not None:
        name += ": ok" if ok else f": {count(len(getattr(report, 'issues', ())), 'issue')} found"
    return name


def report_text(report: Any) -> str:
    """A report as a headline, then ``label  value`` lines (sizes in KiB, MiB, ...), then its
    issues or expired commits."""
    facts = [(_label(k), _fmt(v, k)) for k, v in report_fields(report) if k not in _IN_HEADLINE]
    width = max((len(k) for k, _ in facts), default=0)
    lines = [_headline(report), *(f"  {k:<{width}}  {v}" for k, v in facts)]
    items = _items(report)
    if items and items[1]:
        name, values = items
        lines.append(f"  {name}:")
        lines += [f"    {v}" for v in values[:MAX_ITEMS]]
        if len(values) > MAX_ITEMS:
            lines.append(f"    ... and {len(values) - MAX_ITEMS} more")
    return "\n".join(lines)


def report_html(report: Any) -> str:
    """HTML repr of a maintenance report."""
    facts = report_fields(report)
    ok = getattr(report, "ok", None)
    cls = "" if ok is None else (' class="zl-ok"' if ok else ' class="zl-bad"')
    title = f"<span{cls}>{esc(_headline(report))}</span>"
    sections = [section("Summary", table(["", ""], [(_label(k), _fmt(v, k)) for k, v in facts]))]
    items = _items(report)
    if items is not None:
        name, values = items
        body = table(
            [name[:-1] if name.endswith("s") else name], [(v,) for v in values[:MAX_ITEMS]]
        )
        if len(values) > MAX_ITEMS:
            body += f'<div class="zl-muted">... and {len(values) - MAX_ITEMS} more</div>'
        sections.append(section(name.capitalize(), body if values else "", count=len(values)))
    return wrap("report", title, sections, report_text(report))
