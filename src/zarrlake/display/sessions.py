"""Reprs of a ``Session`` (branch, base, staged changes, time to expiry) and a ``SessionInfo``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from zarrlake.display._base import count, esc, fmt_time, relative, section, table, wrap

if TYPE_CHECKING:
    from zarrlake.display._protocols import SessionInfoLike, SessionLike

__all__ = [
    "expiry_text",
    "session_html",
    "session_info_html",
    "session_info_text",
    "session_state",
    "session_text",
    "staged_counts",
    "staged_words",
]


def expiry_text(expires_at: datetime | None, now: datetime | None = None) -> str:
    """``expires in 4 min 12 s`` or ``expired 3 s ago``."""
    if expires_at is None:
        return "does not expire"
    left = (expires_at - (now or datetime.now(UTC))).total_seconds()
    return f"expires in {relative(left)}" if left > 0 else f"expired {relative(left)} ago"


def session_state(session: SessionLike, now: datetime | None = None) -> str:
    """``read-only``, ``open``, ``expired`` or ``closed`` (committed or abandoned), from the
    public attributes (a ``state`` attribute, where the object has one, wins)."""
    state = getattr(session, "state", None)
    if isinstance(state, str):
        return state
    if session.id is None:
        return "read-only"
    if session.read_only:
        return "closed"
    if session.expires_at is not None and session.expires_at <= (now or datetime.now(UTC)):
        return "expired"
    return "open"


def staged_counts(session: SessionLike) -> dict[str, int] | None:
    """Nodes and chunks staged in a session, from ``session.status()``; ``None`` when the
    session cannot tell (closed, or its catalog is unreachable)."""
    if session.id is None or session.read_only:
        return {"nodes": 0, "chunks": 0, "keys": 0}
    # A repr must not raise: a catalog error here is shown as "unknown", not a traceback.
    try:
        d: Any = session.status()
        nodes = list(d.nodes)
        return {
            "nodes": len(nodes),
            "chunks": sum(
                len(n.chunks_added) + len(n.chunks_changed) + len(n.chunks_removed) for n in nodes
            ),
            "keys": len(d.keys_added) + len(d.keys_changed) + len(d.keys_removed),
        }
    except Exception:
        return None


def _staged_str(counts: dict[str, int] | None) -> str:
    if counts is None:
        return "unknown"
    return staged_words(counts)


def staged_words(counts: dict[str, int]) -> str:
    """``1 node, 4 chunks`` (and ``, 2 other keys`` when there are any)."""
    extra = f", {count(counts['keys'], 'other key')}" if counts["keys"] else ""
    return f"{count(counts['nodes'], 'node')}, {count(counts['chunks'], 'chunk')}{extra}"


@dataclass(frozen=True, slots=True)
class _SessionView:
    state: str
    staged: str
    expiry: str


def _view(session: SessionLike) -> _SessionView:
    return _SessionView(
        session_state(session), _staged_str(staged_counts(session)), expiry_text(session.expires_at)
    )


def _text(session: SessionLike, v: _SessionView) -> str:
    if session.id is None:
        return f"read-only session at commit {session.base_commit}"
    return "\n".join(
        [
            f"session {session.id} ({v.state})",
            f"  branch    {session.branch}",
            f"  base      {session.base_commit}",
            f"  author    {session.author}",
            f"  isolation {session.isolation}",
            f"  staged    {v.staged}",
            f"  created   {fmt_time(session.created_at)}",
            f"  expires   {fmt_time(session.expires_at)} ({v.expiry})",
        ]
    )


def session_text(session: SessionLike) -> str:
    """A session in plain text."""
    return _text(session, _view(session))


def session_html(session: SessionLike) -> str:
    """HTML repr of a session: branch, base, staged change count, time to expiry."""
    v = _view(session)
    if session.id is None:
        title = f"Read-only session at commit <code>{esc(session.base_commit[:10])}</code>"
        return wrap("session", title, [], _text(session, v))
    cls = {"open": "zl-ok", "expired": "zl-expired"}.get(v.state, "zl-muted")
    title = (
        f"Session <code>{esc(session.id)}</code> on <code>{esc(session.branch)}</code> "
        f'<span class="{cls}">{esc(v.state)}</span> · '
        f'<span class="zl-muted">{esc(v.staged)} staged · {esc(v.expiry)}</span>'
    )
    facts = table(
        ["", ""],
        [
            ("branch", esc(session.branch)),
            ("base commit", f"<code>{esc(session.base_commit)}</code>"),
            ("author", esc(session.author)),
            ("isolation", esc(session.isolation)),
            ("staged", esc(v.staged)),
            ("created", esc(fmt_time(session.created_at))),
            ("expires", f"{esc(fmt_time(session.expires_at))} ({esc(v.expiry)})"),
        ],
        raw=True,
    )
    return wrap("session", title, [section("Details", facts)], _text(session, v))


def session_info_text(info: SessionInfoLike) -> str:
    """One row of ``repo.sessions()`` in plain text."""
    when = expiry_text(info.expires_at) if info.status == "open" else info.status
    tail = f" -> {info.commit_id[:10]}" if info.commit_id else ""
    return (
        f"session {info.id} on {info.branch} ({info.status}{tail}) by {info.author}, "
        f"base {info.base_commit[:10]}, {info.isolation}, {when}"
    )


def session_info_html(info: SessionInfoLike) -> str:
    """HTML repr of a ``SessionInfo``."""
    when = expiry_text(info.expires_at) if info.status == "open" else info.status
    title = (
        f"Session <code>{esc(info.id)}</code> on <code>{esc(info.branch)}</code> "
        f'<span class="zl-muted">{esc(info.status)} · {esc(when)}</span>'
    )
    facts = table(
        ["", ""],
        [
            ("branch", esc(info.branch)),
            ("status", esc(info.status)),
            ("base commit", f"<code>{esc(info.base_commit)}</code>"),
            ("author", esc(info.author)),
            ("isolation", esc(info.isolation)),
            ("created", esc(fmt_time(info.created_at))),
            ("expires", f"{esc(fmt_time(info.expires_at))} ({esc(when)})"),
            ("commit", f"<code>{esc(info.commit_id)}</code>" if info.commit_id else "-"),
        ],
        raw=True,
    )
    return wrap("session-info", title, [section("Details", facts)], session_info_text(info))
