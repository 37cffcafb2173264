# mypy: disallow-untyped-calls=False
"""Overview page: the repo, its branches and tags with their head commits, and counts."""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

from zarrlake.types import safe_url
from zarrlake.ui.dashboard.common import fmt_time, short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.markup import error_alert, html, html_pane

__all__ = ["OverviewView"]


class OverviewView(Viewer):
    """Repo facts, counts, and one row per branch and tag."""

    counts = param.Dict(default={}, doc="branches, tags, commits, sessions, arrays")

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(),
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
            css_classes=["zl-refs"],
        )
        self.header = html_pane("", css_classes=["zl-overview-header"])
        self.stats = pn.Row(css_classes=["zl-stats"])
        self.message = pn.Column()
        self.refresh()

    def refs_frame(self) -> pd.DataFrame:
        g = self.ctx.graph()
        rows = []
        for kind, refs in (("branch", self.ctx.repo.branches()), ("tag", self.ctx.repo.tags())):
            for name, commit in refs.items():
                info = g.commits.get(commit) or self.ctx.repo.commit_info(commit)
                rows.append(
                    {
                        "ref": name,
                        "kind": kind,
                        "head": short(commit),
                        "author": info.author,
                        "time": fmt_time(info.created_at),
                        "message": info.message,
                        "commits": len(g.ancestors(commit)),
                    }
                )
        rows.sort(key=lambda r: (r["kind"] != "branch", r["ref"] != "main", r["ref"]))
        return pd.DataFrame(rows)

    def refresh(self) -> None:
        try:
            repo = self.ctx.repo
            g = self.ctx.graph(refresh=True)
            sessions = repo.sessions()
            self.counts = {
                "branches": len(repo.branches()),
                "tags": len(repo.tags()),
                "commits": len(g.commits),
                "open sessions": len(sessions),
                "arrays on main": len(self.ctx.reader.arrays("main"))
                if "main" in repo.branches()
                else 0,
            }
            self.header.object = html(
                "<h2>Repo <code>{}</code></h2><p>Storage <code>{}</code></p>",
                repo.name,
                safe_url(repo.storage),
            )
            self.stats.objects = [
                pn.indicators.Number(name=k, value=v, font_size="28pt", title_size="11pt")
                for k, v in self.counts.items()
            ]
            self.table.value = self.refs_frame()
            self.message.objects = []
        except Exception as exc:
            self.message.objects = [error_alert(exc)]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            self.message,
            self.header,
            self.stats,
            "### Branches and tags",
            self.table,
            sizing_mode="stretch_width",
        )
