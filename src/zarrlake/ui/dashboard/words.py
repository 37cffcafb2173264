"""What the dashboard says, in words: counts with their nouns, values as a reader writes them,
changes of a diff as sentences, times as "3 min ago". Plain text; pages escape it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from zarrlake import FieldChange, NodeDiff
from zarrlake.display import count as counted
from zarrlake.model.diff import ABSENT

__all__ = [
    "ago",
    "chunk_counts",
    "field_sentence",
    "join_words",
    "node_sentence",
    "node_title",
    "plural",
    "value_text",
]

_SHAPED = {"shape", "chunks"}
MAX_VALUE = 120


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 node``, ``2 nodes``, ``0 branches``: the count of every output (display's)."""
    return counted(n, word, many)


def value_text(value: Any, field: str = "", limit: int = MAX_VALUE) -> str:
    """A metadata or attribute value as a reader writes it: text as itself, shapes as
    ``12 x 36 x 72``, anything else as JSON; long values cut with an ellipsis."""
    if value is ABSENT or value is None:
        return "none"
    if isinstance(value, str):
        text = value
    elif field in _SHAPED and isinstance(value, (list, tuple)) and value:
        text = " x ".join(str(v) for v in value)
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float)):
        text = f"{value:g}" if isinstance(value, float) else str(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_sentence(change: FieldChange, kind: str = "metadata") -> str:
    """``attribute units changed from K to degC``; ``shape changed from 12 x 36 to 13 x 36``."""
    what = f"attribute {change.field}" if kind == "attribute" else change.field.replace("_", " ")
    before = value_text(change.before, change.field)
    after = value_text(change.after, change.field)
    if change.before is ABSENT:
        return f"{what} set to {after}"
    if change.after is ABSENT:
        return f"{what} removed (was {before})"
    return f"{what} changed from {before} to {after}"


def chunk_counts(n: NodeDiff) -> str:
    """``3 chunks changed, 1 added`` (empty when no chunk changed)."""
    parts: list[str] = []
    for count, verb in (
        (len(n.chunks_added), "added"),
        (len(n.chunks_changed), "changed"),
        (len(n.chunks_removed), "removed"),
    ):
        if count:
            parts.append(f"{plural(count, 'chunk')} {verb}" if not parts else f"{count:,} {verb}")
    return ", ".join(parts)


def node_title(n: NodeDiff) -> str:
    """``array /temperature``, ``the root group``."""
    if n.path == "":
        return "the root group"
    kind = n.node_type if n.node_type in ("array", "group") else "node"
    return f"{kind} /{n.path}"


def node_sentence(n: NodeDiff) -> str:
    """One node's change as a sentence: ``array /temperature modified: 3 chunks changed;
    attribute units changed from K to degC``."""
    parts: list[str] = []
    counts = chunk_counts(n)
    if counts:
        parts.append(counts)
    parts += [field_sentence(f) for f in n.metadata]
    parts += [field_sentence(f, "attribute") for f in n.attributes]
    head = f"{node_title(n)} {n.status}"
    head = head[0].upper() + head[1:]
    return head + (": " + "; ".join(parts) if parts else "")


def ago(t: datetime, now: datetime | None = None) -> str:
    """``just now``, ``5 min ago``, ``3 h ago``, ``2 days ago``, then the date."""
    now = now or datetime.now(UTC)
    s = max(0, int((now - t).total_seconds()))
    if s < 45:
        return "just now"
    if s < 3600:
        return f"{max(1, round(s / 60))} min ago"
    if s < 86400:
        return f"{s // 3600} h ago"
    if s < 14 * 86400:
        return plural(s // 86400, "day") + " ago"
    return t.strftime("%Y-%m-%d")


def join_words(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
