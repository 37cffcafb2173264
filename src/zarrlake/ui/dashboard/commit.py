"""One commit, as a place: what it says, who made it and when, its parents as links, one click
to compare it with its parent, and a card per changed array or group with its chunk counts
and its metadata and attribute changes in words."""

from __future__ import annotations

from urllib.parse import urlencode

from zarrlake import CommitInfo, Diff, NodeDiff, Repo
from zarrlake.display import plain_metadata
from zarrlake.ui.dashboard.common import fmt_time, short
from zarrlake.ui.dashboard.markup import html
from zarrlake.ui.dashboard.words import ago, field_sentence, node_title, plural, value_text

__all__ = ["commit_html", "link", "review_html"]

MAX_CARDS = 50


def link(**query: str) -> str:
    """A link to a dashboard page with only that page's parameters (escaped for an attribute
    by :func:`html`)."""
    return "?" + urlencode(query)


def commit_html(repo: Repo, info: CommitInfo) -> str:
    """The commit's header, parents, metadata and change cards (markup of ours, every value
    escaped)."""
    head = html(
        '<div class="zl-commit-head"><h3 class="zl-text zl-message">{}</h3>'
        '<p class="zl-byline"><b>{}</b> committed {} <span class="zl-muted">({})</span></p>'
        '<p>commit <code class="zl-id">{}</code></p>',
        info.message,
        info.author,
        ago(info.created_at),
        fmt_time(info.created_at),
        info.id,
    )
    if info.parents:
        parents = " ".join(
            html(
                '<a class="zl-parent" href="{}"><code class="zl-id">{}</code></a>',
                link(page="history", commit=p),
                short(p),
            )
            for p in info.parents
        )
        which = "parents" if len(info.parents) > 1 else "parent"
        head += (
            html("<p>{} ", which)
            + parents
            + html(
                ' · <a class="zl-compare" href="{}">Compare with parent</a></p>',
                link(page="compare", a=info.parents[0], b=info.id),
            )
        )
    else:
        head += "<p>the first commit of this lake: no parent</p>"
    head += review_html(info)
    shown = plain_metadata(info)
    if shown:
        items = "".join(
            html("<li><b>{}</b>: <span class='zl-text'>{}</span></li>", k, value_text(v))
            for k, v in shown.items()
        )
        head += f"<p>metadata</p><ul class='zl-meta'>{items}</ul>"
    head += "</div>"
    if not info.parents:
        return head
    d = repo.diff(info.parents[0], info.id)
    return head + changes_html(d)


def review_html(info: CommitInfo) -> str:
    """The pull request the commit merged (a link to it) and the checks that judged it."""
    out = ""
    if info.pull_request is not None:
        out += html(
            '<p class="zl-pull">merged <a href="{}">pull request #{}</a></p>',
            link(page="pulls", pr=str(info.pull_request)),
            info.pull_request,
        )
    summary = info.checks_summary()
    if summary:
        out += html('<p class="zl-checks">checks: <span class="zl-text">{}</span></p>', summary)
    return out


def changes_html(d: Diff) -> str:
    """A summary line and one card per changed node."""
    s = d.summary()
    nodes = s.nodes_added + s.nodes_removed + s.nodes_modified
    chunks = s.chunks_added + s.chunks_changed + s.chunks_removed
    if not nodes and not (d.keys_added or d.keys_changed or d.keys_removed):
        return html("<h4>Changes</h4><p>{}</p>", "No change against its first parent.")
    counts = (
        html(
            "; {}: <span class='zl-add'>+{}</span> <span class='zl-chg'>~{}</span> "
            "<span class='zl-del'>-{}</span>",
            plural(chunks, "chunk"),
            s.chunks_added,
            s.chunks_changed,
            s.chunks_removed,
        )
        if chunks
        else ""
    )
    line = (
        html(
            "<h4>Changes against its first parent</h4><p class='zl-change-summary'>{}",
            plural(nodes, "node") + " changed",
        )
        + counts
        + "</p>"
    )
    cards = "".join(_card(n) for n in list(d)[:MAX_CARDS])
    more = len(d) - MAX_CARDS
    if more > 0:
        cards += html("<p>{} more not shown.</p>", plural(more, "node"))
    return line + f"<div class='zl-cards'>{cards}</div>"


def _card(n: NodeDiff) -> str:
    sentences = [field_sentence(f) for f in n.metadata]
    sentences += [field_sentence(f, "attribute") for f in n.attributes]
    body = "".join(html("<li>{}</li>", t) for t in sentences)
    counts = ""
    if n.node_type == "array":
        counts = html(
            "<p class='zl-counts'><span class='zl-add'>+{}</span> "
            "<span class='zl-chg'>~{}</span> <span class='zl-del'>-{}</span> chunks</p>",
            len(n.chunks_added),
            len(n.chunks_changed),
            len(n.chunks_removed),
        )
    return (
        html(
            "<div class='zl-card' data-path='{}'><p class='zl-card-title'><b>{}</b> "
            "<span class='zl-badge zl-{}'>{}</span></p>",
            n.path,
            node_title(n),
            n.status,
            n.status,
        )
        + counts
        + (f"<ul>{body}</ul>" if body else "")
        + "</div>"
    )
