# mypy: disallow-untyped-calls=False
"""History page: the commit graph (a lane per branch, merges drawn), filters, commit details,
and, with writes allowed, a branch, tag or revert at the chosen commit."""

from __future__ import annotations

import json
from typing import Any

import holoviews as hv  # type: ignore[import-untyped]
import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

import zarrlake.ui.dashboard.actions as actions
from zarrlake import CommitInfo
from zarrlake.ui.dashboard.common import fmt_time, short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.graph import Graph
from zarrlake.ui.dashboard.markup import alert, error_alert, html, html_pane

__all__ = ["HistoryView", "graph_plot"]

ALL = "(all)"


def graph_plot(g: Graph, shown: list[str]) -> hv.Overlay:
    """Commits as points (x = lane, y = row, newest on top); parent edges as segments."""
    row = {c: i for i, c in enumerate(shown)}
    pts = pd.DataFrame(
        {
            "lane": [g.lanes[c] for c in shown],
            "row": [-row[c] for c in shown],
            "id": [short(c) for c in shown],
            "message": [g.commits[c].message for c in shown],
            "author": [g.commits[c].author for c in shown],
            "time": [fmt_time(g.commits[c].created_at) for c in shown],
            "refs": [", ".join(g.refs.get(c, [])) for c in shown],
            "merge": [len(g.commits[c].parents) > 1 for c in shown],
        }
    )
    segs = [
        (g.lanes[c], -row[c], g.lanes[p], -row[p], i > 0)
        for c in shown
        for i, p in enumerate(g.commits[c].parents)
        if p in row
    ]
    edges = hv.Segments(
        pd.DataFrame(segs, columns=["x0", "y0", "x1", "y1", "merge"]),
        ["x0", "y0", "x1", "y1"],
        ["merge"],
    ).opts(color="merge", cmap={False: "#6b8fb5", True: "#e07b39"}, line_width=2)
    nodes = hv.Points(pts, ["lane", "row"], ["id", "message", "author", "time", "refs", "merge"])
    nodes = nodes.opts(
        size=12,
        color="merge",
        cmap={False: "#1f77b4", True: "#e07b39"},
        tools=["hover", "tap"],
        line_color="white",
    )
    labels = hv.Labels(pts[pts.refs != ""], ["lane", "row"], "refs").opts(
        text_align="left", xoffset=0.15, text_font_size="9pt", text_color="#2ca02c"
    )
    lanes = len(g.lane_names)
    return (edges * nodes * labels).opts(
        hv.opts.Overlay(
            height=max(260, 32 * len(shown) + 60),
            width=110 * lanes + 220,
            xaxis="top",
            xlabel="",
            yaxis=None,
            xlim=(-0.5, lanes + 1.2),
            show_grid=False,
            toolbar=None,
            xticks=[(i, n) for i, n in enumerate(g.lane_names)],
            title="",
            show_legend=False,
        )
    )


def _value(v: Any) -> str:
    """A metadata value as written: a string as itself, anything else as JSON."""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)


class HistoryView(Viewer):
    """The commit graph with filters; a chosen commit's details and actions."""

    branch = param.String(default=ALL)
    author = param.String(default=ALL)
    text = param.String(default="")
    hide_merges = param.Boolean(default=False)
    commit = param.String(default="", doc="the chosen commit (id or ref)")

    url_params = {"commit": "commit", "branch": "branch", "hide_merges": "hide_merges"}

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        g = ctx.graph()
        authors = sorted({c.author for c in g.commits.values()})
        self.w_branch = pn.widgets.Select(label="Branch", options=[ALL, *ctx.refs()], width=160)
        self.w_author = pn.widgets.Select(label="Author", options=[ALL, *authors], width=140)
        self.w_text = pn.widgets.TextInput(label="Message contains", width=200)
        self.w_merges = pn.widgets.Checkbox(label="Hide merges")
        for w, p in (
            (self.w_branch, "branch"),
            (self.w_author, "author"),
            (self.w_text, "text"),
            (self.w_merges, "hide_merges"),
        ):
            w.link(self, value=p, bidirectional=True)
            w.value = getattr(self, p)
        self.plot = pn.pane.HoloViews(sizing_mode="fixed", css_classes=["zl-graph"])
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(),
            disabled=True,
            selectable=1,
            show_index=False,
            height=360,
            sizing_mode="stretch_width",
            css_classes=["zl-commits"],
        )
        self.table.param.watch(self._on_select, "selection")
        self.details = pn.Column(sizing_mode="stretch_width", css_classes=["zl-commit-details"])
        self.result = pn.Column()
        self._tap = hv.streams.Selection1D()
        self._tap.add_subscriber(self._on_tap)
        self._shown: list[str] = []
        self._refresh()

    # -- what is shown -------------------------------------------------------------------------

    def shown(self) -> list[str]:
        """Commit ids the filters keep, newest first."""
        g = self.ctx.graph()
        keep = g.order
        if self.branch != ALL:
            reach = g.ancestors(self.ctx.repo.resolve(self.branch))
            keep = [c for c in keep if c in reach]
        if self.author != ALL:
            keep = [c for c in keep if g.commits[c].author == self.author]
        if self.text:
            t = self.text.lower()
            keep = [c for c in keep if t in g.commits[c].message.lower()]
        if self.hide_merges:
            keep = [c for c in keep if len(g.commits[c].parents) < 2]
        return keep

    @param.depends("branch", "author", "text", "hide_merges", watch=True)
    def _refresh(self) -> None:
        try:
            g = self.ctx.graph()
            self._shown = self.shown()
            overlay = graph_plot(g, self._shown)
            self._tap.source = overlay.get(1)
            self.plot.object = overlay
            self.table.value = pd.DataFrame(
                [
                    {
                        "id": short(c),
                        "lane": g.lane_names[g.lanes[c]],
                        "author": g.commits[c].author,
                        "time": fmt_time(g.commits[c].created_at),
                        "message": g.commits[c].message,
                        "refs": ", ".join(g.refs.get(c, [])),
                    }
                    for c in self._shown
                ]
            )
            self._show_details()
        except Exception as exc:
            self.details.objects = [error_alert(exc)]

    def _on_select(self, event: param.parameterized.Event) -> None:
        if event.new:
            self.commit = self._shown[event.new[0]]

    def _on_tap(self, index: list[int]) -> None:
        if index:
            self.commit = self._shown[index[0]]

    # -- the chosen commit ---------------------------------------------------------------------

    @param.depends("commit", watch=True)
    def _show_details(self) -> None:
        if not self.commit:
            self.details.objects = [pn.pane.Markdown("*Pick a commit in the graph or the table.*")]
            return
        try:
            info = self.ctx.repo.commit_info(self.commit)
        except Exception as exc:
            self.details.objects = [error_alert(exc)]
            return
        self.details.objects = [self._describe(info), *self._actions(info)]

    def _describe(self, info: CommitInfo) -> pn.viewable.Viewable:
        parents = ", ".join(html("<code>{}</code>", short(p)) for p in info.parents) or "(none)"
        meta = "".join(
            html('<li><code>{}</code>: <span class="zl-text">{}</span></li>', k, _value(v))
            for k, v in info.metadata.items()
        )
        md = (
            html("<h3>Commit <code>{}</code></h3>", info.id)
            + html('<p class="zl-text zl-message"><b>{}</b></p>', info.message)
            + html("<p>author <b>{}</b>, {}<br>parents ", info.author, fmt_time(info.created_at))
            + parents
            + (
                "</p><p>metadata:</p><ul>" + meta + "</ul>"
                if meta
                else "</p><p>metadata: (none)</p>"
            )
        )
        parts: list[Any] = [html_pane(md, sizing_mode="stretch_width")]
        if info.parent:
            d = self.ctx.repo.diff(info.parent, info.id)
            s = d.summary()
            parts.append(
                html_pane(
                    html(
                        "<p><b>Changes</b> against first parent: {} added, {} removed, {} "
                        "modified; chunks +{} ~{} -{}</p>",
                        s.nodes_added,
                        s.nodes_removed,
                        s.nodes_modified,
                        s.chunks_added,
                        s.chunks_changed,
                        s.chunks_removed,
                    ),
                    css_classes=["zl-change-summary"],
                )
            )
            items = "".join(html("<li><code>{}</code></li>", n.describe()) for n in d)
            parts.append(html_pane(f"<ul>{items or '<li>nothing</li>'}</ul>"))
        return pn.Column(*parts, sizing_mode="stretch_width")

    def _actions(self, info: CommitInfo) -> list[Any]:
        if not self.ctx.writes.allowed:
            return []
        token = self.ctx.writes.token_input()
        name = pn.widgets.TextInput(
            label="New branch or tag name", placeholder="new ref name", width=220
        )
        branches = sorted(self.ctx.repo.branches(), key=lambda n: (n != "main", n))
        on = pn.widgets.Select(label="Revert on branch", options=branches)
        b_branch = pn.widgets.Button(name="Create branch here", button_type="primary")
        b_tag = pn.widgets.Button(name="Create tag here", button_type="primary")
        b_revert = pn.widgets.Button(name="Revert this commit", button_type="warning")

        def run(what: str) -> None:
            try:
                if what == "branch":
                    out = actions.create_branch(
                        self.ctx.repo,
                        self.ctx.writes,
                        str(token.value or ""),
                        str(name.value or ""),
                        info.id,
                    )
                    msg = f"created branch {name.value} at {short(out)}"
                elif what == "tag":
                    out = actions.create_tag(
                        self.ctx.repo,
                        self.ctx.writes,
                        str(token.value or ""),
                        str(name.value or ""),
                        info.id,
                    )
                    msg = f"created tag {name.value} at {short(out)}"
                else:
                    out = actions.revert(
                        self.ctx.repo,
                        self.ctx.writes,
                        str(token.value or ""),
                        info.id,
                        str(on.value or ""),
                    )
                    msg = f"reverted {short(info.id)} on {on.value}: new commit {short(out)}"
                self.ctx.graph(refresh=True)
                self.w_branch.options = [ALL, *self.ctx.refs()]
                self._refresh()  # the graph and table show the new ref or commit
                self.result.objects = [alert(msg, "success")]
            except Exception as exc:
                self.result.objects = [error_alert(exc)]

        b_branch.on_click(lambda _: run("branch"))
        b_tag.on_click(lambda _: run("tag"))
        b_revert.on_click(lambda _: run("revert"))
        return [
            pn.pane.Markdown("#### Act on this commit"),
            pn.Row(token, name, b_branch, b_tag, css_classes=["zl-write-actions"]),
            pn.Row(on, b_revert),
            self.result,
        ]

    def __panel__(self) -> pn.viewable.Viewable:
        filters = pn.Row(self.w_branch, self.w_author, self.w_text, self.w_merges)
        return pn.Column(
            "## History",
            filters,
            pn.Row(self.plot, pn.Column(self.table, self.details, sizing_mode="stretch_width")),
            sizing_mode="stretch_width",
        )
