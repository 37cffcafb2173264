"""Reprs of a ``Conflict`` and of a ``ConflictError`` (with every conflict it lists)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from zarrlake.display._base import esc, section, table, wrap

if TYPE_CHECKING:
    from zarrlake.display._protocols import ConflictErrorLike, ConflictLike

__all__ = ["conflict_error_html", "conflict_error_text", "conflict_html", "conflict_text"]

MAX_CONFLICTS = 200  # conflicts listed; the rest are counted


def _where(c: ConflictLike) -> str:
    return f"/{c.path}" + (f" chunk {tuple(c.chunk)}" if c.chunk is not None else "")


def conflict_text(c: ConflictLike) -> str:
    """One conflict on one line."""
    other = f" (commit {c.commit[:10]})" if c.commit else ""
    return f"{c.kind} conflict at {_where(c)}{other}" + (f": {c.detail}" if c.detail else "")


def _rows(conflicts: Sequence[ConflictLike]) -> list[tuple[str, ...]]:
    return [
        (
            esc(c.kind),
            f"<code>{esc('/' + c.path)}</code>",
            esc(tuple(c.chunk)) if c.chunk is not None else "",
            f"<code>{esc(c.commit[:10])}</code>" if c.commit else "",
            esc(c.detail),
        )
        for c in conflicts
    ]


_HEAD = ["kind", "path", "chunk", "other commit", "detail"]


def conflict_html(c: ConflictLike) -> str:
    """HTML repr of one conflict."""
    title = f'<span class="zl-bad">{esc(c.kind)} conflict</span> at <code>{esc(_where(c))}</code>'
    return wrap(
        "conflict",
        title,
        [section("Details", table(_HEAD, _rows([c]), raw=True))],
        conflict_text(c),
    )


def _message(err: ConflictErrorLike) -> str:
    # ConflictError appends its conflict list to the message; the table shows that list.
    text = str(err.args[0]) if err.args else type(err).__name__
    return text.split("\n  - ", 1)[0]


def conflict_error_text(err: ConflictErrorLike) -> str:
    """The error's message and every conflict, one per line (capped)."""
    conflicts = list(err.conflicts)
    lines = [f"{type(err).__name__} [{err.kind}]: {_message(err)}"]
    lines += [f"  - {conflict_text(c)}" for c in conflicts[:MAX_CONFLICTS]]
    if len(conflicts) > MAX_CONFLICTS:
        lines.append(f"  ... and {len(conflicts) - MAX_CONFLICTS} more")
    return "\n".join(lines)


def conflict_error_html(err: ConflictErrorLike) -> str:
    """HTML repr of a conflict error: what to do (its message) and a table of conflicts."""
    conflicts = list(err.conflicts)
    title = (
        f'<span class="zl-bad">{esc(type(err).__name__)}</span> '
        f'<span class="zl-muted">[{esc(err.kind)}] · {len(conflicts)} conflict{"" if len(conflicts) == 1 else "s"}</span>'
    )
    body = table(_HEAD, _rows(conflicts[:MAX_CONFLICTS]), raw=True)
    if len(conflicts) > MAX_CONFLICTS:
        body += f'<div class="zl-muted">... and {len(conflicts) - MAX_CONFLICTS} more</div>'
    message = f'<div style="white-space:pre-wrap">{esc(_message(err))}</div>'
    sections = [
        section("Message", message),
        section("Conflicts", body if conflicts else "", count=len(conflicts)),
    ]
    return wrap("conflict-error", title, sections, conflict_error_text(err))
