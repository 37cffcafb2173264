# mypy: disallow-untyped-calls=False
"""Overview page: where the lake is, counts, and its branches and tags with their heads."""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

from zarrlake import Repo
from zarrlake.types import safe_url
from zarrlake.ui.dashboard.common import short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.markup import error_alert, html, html_pane
from zarrlake.ui.dashboard.words import ago, plural

__all__ = ["OverviewView", "where"]

SQLITE = "sqlite:///"
CATALOG_FILE = "/catalog.db"


def where(repo: Repo) -> tuple[str, str]:
    """(title, one line) saying where the lake lives, in the words a user gave it: a folder
    for an embedded lake, else the catalog and the storage (credentials hidden)."""
    catalog = repo.config.catalog
    named = "" if repo.name == "default" else f"repo {repo.name}, "
    if catalog.startswith(SQLITE) and catalog.endswith(CATALOG_FILE) and repo.storage == ".":
        folder = catalog[len(SQLITE) : -len(CATALOG_FILE)]
        return f"Lake {folder}", named + "catalog and chunks in this folder"
    return (
        f"Repo {repo.name}",
        f"catalog {safe_url(catalog)}, chunks in {safe_url(repo.storage)}",
    )


class OverviewView(Viewer):
    """Where the lake is, counts, and one row per branch and tag."""

    counts = param.Dict(default={}, doc="branches, tags, commits, open sessions, arrays")

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
        self.body = pn.Column(sizing_mode="stretch_width")
        self.refresh()

    def refs_frame(self) -> pd.DataFrame:
        repo = self.ctx.repo
        rows = []
        for kind, refs in (("branch", repo.branches()), ("tag", repo.tags())):
            for name, commit in refs.items():
                info = repo.commit_info(commit)
                rows.append(
                    {
                        "ref": name,
                        "kind": kind,
                        "head": short(commit),
                        "message": info.message,
                        "author": info.author,
                        "when": ago(info.created_at),
                    }
                )
        rows.sort(key=lambda r: (r["kind"] != "branch", r["ref"] != "main", r["ref"]))
        return pd.DataFrame(rows)

    def refresh(self) -> None:
        try:
            repo = self.ctx.repo
            branches, tags = repo.branches(), repo.tags()
            status = [s.status for s in repo.sessions()]
            self.counts = {
                "branches": len(branches),
                "tags": len(tags),
                "commits": repo.graph(limit=1).total,
                "open sessions": status.count("open"),
                "arrays on main": len(self.ctx.reader.arrays("main")) if "main" in branches else 0,
            }
            expired = status.count("expired")
            title, line = where(repo)
            self.header.object = html(
                "<h2>{}</h2><p>{}</p>",
                title,
                line
                + (f"; {plural(expired, 'expired session')} not yet cleaned up" if expired else ""),
            )
            self.stats.objects = [
                pn.indicators.Number(
                    name=k, value=v, format="{value:,}", font_size="28pt", title_size="11pt"
                )
                for k, v in self.counts.items()
            ]
            self.table.value = self.refs_frame()
            self.body.objects = [
                self.header,
                self.stats,
                "### Branches and tags",
                self.table,
            ]
        except Exception as exc:
            self.body.objects = [error_alert(exc)]

    def __panel__(self) -> pn.viewable.Viewable:
        return self.body
