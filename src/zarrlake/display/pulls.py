"""Reprs of a pull request: what it merges, its state, description, approvals, comments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zarrlake.display._base import esc, fmt_time, section, table, wrap

__all__ = ["pull_html", "pull_text"]


def pull_text(pr: Any, events: Sequence[Any], approvals: Sequence[str], head: str | None) -> str:
    """A pull request on a few lines."""
    lines = [
        f"pull request #{pr.number} [{pr.state}] {pr.source} -> {pr.target}",
        f"title  {pr.title}",
        f"author {pr.author}, opened {fmt_time(pr.created_at)}",
        f"source head {head[:10] if head else '(branch deleted)'}",
        f"approved by {', '.join(approvals) or 'nobody yet'}",
    ]
    if pr.merge_commit:
        lines.append(f"merged as {pr.merge_commit}")
    if pr.description:
        lines += ["", *(f"    {line}" for line in pr.description.splitlines())]
    for e in events:
        if e.kind == "comment":
            lines.append(f"  {e.author} ({fmt_time(e.at)}): {e.body}")
    return "\n".join(lines)


def pull_html(pr: Any, events: Sequence[Any], approvals: Sequence[str], head: str | None) -> str:
    """HTML repr of a pull request; every user string escaped."""
    state_cls = {"open": "zl-added", "merged": "zl-mix", "closed": "zl-removed"}.get(pr.state, "")
    title = (
        f'Pull request #{esc(pr.number)} <span class="{state_cls}">[{esc(pr.state)}]</span> '
        f"{esc(pr.title)}"
    )
    facts = table(
        ["", ""],
        [
            ("merges", f"<code>{esc(pr.source)}</code> → <code>{esc(pr.target)}</code>"),
            ("author", esc(pr.author)),
            ("opened", esc(fmt_time(pr.created_at))),
            ("source head", f"<code>{esc(head[:10])}</code>" if head else "(branch deleted)"),
            ("approved by", esc(", ".join(approvals) or "nobody yet")),
            *(
                [("merged as", f"<code>{esc(pr.merge_commit[:10])}</code>")]
                if pr.merge_commit
                else []
            ),
        ],
        raw=True,
    )
    desc = f"<div>{esc(pr.description)}</div>" if pr.description else ""
    rows = [(e.kind, e.author, fmt_time(e.at), e.body) for e in events]
    history = table(["event", "by", "at", "text"], rows) if rows else ""
    return wrap(
        "pull",
        title,
        [
            section("Pull request", facts),
            section("Description", desc, open_=True),
            section("Activity", history, count=len(rows)),
        ],
        pull_text(pr, events, approvals, head),
    )
