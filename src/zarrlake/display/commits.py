"""Reprs of a commit (``CommitInfo``) and of a repo (branches, tags, recent commits)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zarrlake.display._base import (
    count,
    esc,
    fmt_time,
    fmt_value,
    section,
    short,
    table,
    wrap,
)
from zarrlake.display.urls import safe_url

if TYPE_CHECKING:
    from zarrlake.display._protocols import CommitLike, RepoLike

__all__ = [
    "commit_html",
    "commit_text",
    "log_table_html",
    "plain_metadata",
    "repo_html",
    "repo_text",
    "review_lines",
    "storage_words",
]

MAX_REFS = 20  # branches or tags listed in a repo repr; the rest are counted
RECENT = 5  # commits listed in a repo repr


def _meta_rows(metadata: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (str(k), fmt_value(v, 100)) for k, v in sorted(metadata.items(), key=lambda kv: str(kv[0]))
    ]


def review_lines(info: CommitLike) -> list[str]:
    """What review says of a commit: the pull request it merged and the checks that judged
    it (no line for what did not happen)."""
    lines = [f"pull request #{info.pull_request}"] if info.pull_request is not None else []
    summary = info.checks_summary()
    return [*lines, f"checks: {summary}"] if summary else lines


def plain_metadata(info: CommitLike) -> dict[str, Any]:
    """The metadata not already said in words by :func:`review_lines`."""
    worded = {"checks": bool(info.checks), "pull_request": info.pull_request is not None}
    return {k: v for k, v in info.metadata.items() if not worded.get(k)}


def commit_text(info: CommitLike) -> str:
    """A commit on a few lines: id, parents, author, time, message, review, metadata."""
    lines = [f"commit {info.id}"]
    if len(info.parents) > 1:
        lines.append("merge  " + " ".join(p[:10] for p in info.parents))
    elif info.parents:
        lines.append(f"parent {info.parents[0]}")
    lines.append(f"author {info.author}")
    lines.append(f"date   {fmt_time(info.created_at)}")
    lines += ["", *(f"    {line}" for line in (info.message or "(no message)").splitlines())]
    review = review_lines(info)
    if review:
        lines += ["", *review]
    metadata = plain_metadata(info)
    if metadata:
        lines += ["", *(f"    {k}: {v}" for k, v in _meta_rows(metadata))]
    return "\n".join(lines)


def commit_html(info: CommitLike) -> str:
    """HTML repr of a commit."""
    title = (
        f"Commit <code>{esc(info.id[:10])}</code> "
        f'<span class="zl-muted">{esc(fmt_time(info.created_at))} · {esc(info.author)}</span>'
    )
    parents = (
        ", ".join(f"<code>{esc(p[:10])}</code>" for p in info.parents) or "none (first commit)"
    )
    facts = table(
        ["", ""],
        [
            ("id", f"<code>{esc(info.id)}</code>"),
            ("parents" if len(info.parents) > 1 else "parent", parents),
            ("author", esc(info.author)),
            ("time", esc(fmt_time(info.created_at))),
        ],
        raw=True,
    )
    message = f'<div style="white-space:pre-wrap">{esc(info.message or "(no message)")}</div>'
    sections = [section("Message", message)]
    review = review_lines(info)
    if review:
        sections.append(section("Review", "<br>".join(esc(line) for line in review)))
    sections.append(section("Details", facts, open_=False))
    rows = _meta_rows(plain_metadata(info))
    sections.append(section("Metadata", table(["key", "value"], rows), count=len(rows)))
    return wrap("commit", title, sections, commit_text(info))


def _oneline(info: CommitLike) -> str:
    first = (info.message or "").splitlines()[0] if info.message else ""
    merge = " (merge)" if len(info.parents) > 1 else ""
    return f"{info.id[:10]}  {fmt_time(info.created_at)}  {info.author}  {short(first, 60)}{merge}"


def _default_branch(branches: Mapping[str, str]) -> str | None:
    return "main" if "main" in branches else next(iter(sorted(branches)), None)


def _heads(repo: RepoLike, refs: Mapping[str, str]) -> list[tuple[str, str, CommitLike | None]]:
    out: list[tuple[str, str, CommitLike | None]] = []
    for name in sorted(refs)[:MAX_REFS]:
        commit = refs[name]
        out.append((name, commit, repo.commit_info(commit)))
    return out


@dataclass(frozen=True, slots=True)
class _RepoView:
    """What a repo repr shows, read once for both the HTML and its text fallback."""

    name: str
    storage: str
    branches: dict[str, str]
    tags: dict[str, str]
    branch_heads: list[tuple[str, str, CommitLike | None]]
    tag_heads: list[tuple[str, str, CommitLike | None]]
    default: str | None
    recent: list[CommitLike]


def storage_words(storage: str) -> str:
    """Where a repo keeps its chunks, for people: ``"."`` (an embedded lake's own directory,
    so that the lake can move) in words, a URL without its credentials."""
    return "in the lake's directory" if storage == "." else safe_url(storage)


def _view(repo: RepoLike) -> _RepoView:
    branches, tags = dict(repo.branches()), dict(repo.tags())
    default = _default_branch(branches)
    recent = list(repo.log(default, limit=RECENT)) if default is not None else []
    return _RepoView(
        repo.name,
        storage_words(repo.storage),
        branches,
        tags,
        _heads(repo, branches),
        _heads(repo, tags),
        default,
        recent,
    )


def _text(v: _RepoView) -> str:
    lines = [f"zarrlake repo {v.name!r}  chunks {v.storage}"]
    for what, refs, heads in (
        ("branches", v.branches, v.branch_heads),
        ("tags", v.tags, v.tag_heads),
    ):
        lines.append(f"{what} ({len(refs)}):")
        for name, commit, info in heads:
            msg = short((info.message or "").splitlines()[0], 50) if info and info.message else ""
            lines.append(f"  {name:<20} {commit[:10]}  {msg}")
        if len(refs) > MAX_REFS:
            lines.append(f"  ... and {len(refs) - MAX_REFS} more")
    if v.default is not None:
        lines.append(f"recent commits on {v.default}:")
        lines += [f"  {_oneline(c)}" for c in v.recent]
    return "\n".join(lines)


def repo_text(repo: RepoLike) -> str:
    """A repo in plain text: branches and tags with their head commits, recent commits."""
    return _text(_view(repo))


def _ref_table(refs: list[tuple[str, str, CommitLike | None]], total: int) -> str:
    rows = [
        (
            f"<code>{esc(name)}</code>",
            f"<code>{esc(commit[:10])}</code>",
            esc(fmt_time(info.created_at)) if info else "",
            esc(info.author) if info else "",
            esc(short((info.message or "").splitlines()[0], 70)) if info and info.message else "",
        )
        for name, commit, info in refs
    ]
    more = total - len(refs)
    tail = f'<div class="zl-muted">... and {more} more</div>' if more > 0 else ""
    return table(["name", "commit", "time", "author", "message"], rows, raw=True) + tail


def log_table_html(commits: list[CommitLike]) -> str:
    """A table of commits (newest first), for reprs and widgets."""
    rows = [
        (
            f"<code>{esc(c.id[:10])}</code>",
            esc(fmt_time(c.created_at)),
            esc(c.author),
            esc(short((c.message or "").splitlines()[0] if c.message else "", 70))
            + (' <span class="zl-muted">(merge)</span>' if len(c.parents) > 1 else ""),
        )
        for c in commits
    ]
    return table(["commit", "time", "author", "message"], rows, raw=True)


def repo_html(repo: RepoLike) -> str:
    """HTML repr of a repo: branches and tags with head commits, the last few commits."""
    v = _view(repo)
    title = (
        f"zarrlake repo <code>{esc(v.name)}</code> "
        f'<span class="zl-muted">{count(len(v.branches), "branch", "branches")} · '
        f"{count(len(v.tags), 'tag')} · chunks {esc(v.storage)}</span>"
    )
    sections = [
        section("Branches", _ref_table(v.branch_heads, len(v.branches)), count=len(v.branches)),
        section("Tags", _ref_table(v.tag_heads, len(v.tags)), count=len(v.tags)),
    ]
    if v.default is not None:
        sections.append(
            section(f"Recent commits on {v.default}", log_table_html(v.recent), count=len(v.recent))
        )
    return wrap("repo", title, sections, _text(v))
