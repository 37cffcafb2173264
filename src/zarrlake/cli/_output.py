"""Output of the commands: tables on a terminal, tab-separated lines elsewhere, and the
``--json`` documents (their shapes are documented in ``docs/cli.md``; keep them stable)."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zarrlake import CommitInfo, Diff, SessionInfo
    from zarrlake.errors import Conflict

__all__ = [
    "commit_json",
    "conflict_json",
    "diff_json",
    "emit_json",
    "print_table",
    "report_json",
    "session_json",
    "stdout_is_tty",
    "time_json",
]


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None
) -> None:
    """A rich table on a terminal; tab-separated lines without a header elsewhere (for
    ``cut``/``awk``; scripts that want structure use ``--json``)."""
    if not stdout_is_tty():
        for r in rows:
            print("\t".join(r))
        return
    if not rows:
        print("(none)")
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, box=None, header_style="bold", pad_edge=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(Text(c) for c in r))  # Text: user strings are never read as markup
    Console(highlight=False).print(t)


def emit_json(doc: Mapping[str, Any]) -> None:
    """Print one JSON document on stdout."""
    print(json.dumps(doc, indent=2, sort_keys=False, default=str))


def time_json(when: datetime | None) -> str | None:
    """ISO 8601 with the UTC offset, microseconds."""
    return None if when is None else when.isoformat()


def commit_json(c: CommitInfo) -> dict[str, Any]:
    return {
        "id": c.id,
        "parents": list(c.parents),
        "author": c.author,
        "message": c.message,
        "metadata": c.metadata,
        "created_at": time_json(c.created_at),
        "checks": c.checks,
        "pull_request": c.pull_request,
    }


def _field(fc: Any) -> dict[str, Any]:
    # A side where the field does not exist is left out (null is a real value, e.g. fill_value).
    out: dict[str, Any] = {"field": fc.field}
    if type(fc.before).__name__ != "_Absent":
        out["before"] = fc.before
    if type(fc.after).__name__ != "_Absent":
        out["after"] = fc.after
    return out


def diff_json(d: Diff, *, chunks: bool = False) -> dict[str, Any]:
    nodes = []
    for n in d.nodes:
        node: dict[str, Any] = {
            "path": n.path,
            "status": n.status,
            "node_type": n.node_type,
            "metadata": [_field(c) for c in n.metadata],
            "attributes": [_field(c) for c in n.attributes],
            "chunks_added": len(n.chunks_added),
            "chunks_changed": len(n.chunks_changed),
            "chunks_removed": len(n.chunks_removed),
        }
        if chunks:
            node["chunks"] = {
                "added": [list(c) for c in sorted(n.chunks_added)],
                "changed": [list(c) for c in sorted(n.chunks_changed)],
                "removed": [list(c) for c in sorted(n.chunks_removed)],
            }
        nodes.append(node)
    return {
        "before": d.before,
        "after": d.after,
        "summary": d.summary().as_dict(),
        "nodes": nodes,
        "keys": {
            "added": sorted(d.keys_added),
            "changed": sorted(d.keys_changed),
            "removed": sorted(d.keys_removed),
        },
    }


def session_json(s: SessionInfo) -> dict[str, Any]:
    return {
        "id": s.id,
        "branch": s.branch,
        "base_commit": s.base_commit,
        "author": s.author,
        "isolation": s.isolation,
        "status": s.status,
        "created_at": time_json(s.created_at),
        "expires_at": time_json(s.expires_at),
        "commit_id": s.commit_id,
    }


def conflict_json(c: Conflict) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "path": c.path,
        "chunk": list(c.chunk) if c.chunk is not None else None,
        "commit": c.commit,
        "detail": c.detail,
    }


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return time_json(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def report_json(kind: str, report: Any) -> dict[str, Any]:
    """A maintenance report: ``{"report": kind, <its fields>, <derived counts>}``."""
    from zarrlake.display import report_fields

    doc: dict[str, Any] = {"report": kind, **_plain(report)}
    doc.update({k: _plain(v) for k, v in report_fields(report) if k not in doc})
    return doc
