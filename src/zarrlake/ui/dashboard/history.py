# mypy: disallow-untyped-calls=False
"""History page: a narrow graph column aligned row by row with the commits (id, message, refs,
author, time), a page at a time from the engine's graph, filters, and beside it the chosen
commit; with writes allowed, a branch, tag or revert at that commit."""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

import zarrlake.ui.dashboard.actions as actions
from zarrlake import CommitInfo, GraphRow
from zarrlake.ui.dashboard.commit import commit_html
from zarrlake.ui.dashboard.common import short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.graphcell import ROW_HEIGHT, column_width, row_svg
from zarrlake.ui.dashboard.markup import alert, error_alert, html, html_pane
from zarrlake.ui.dashboard.rows import PAGE_SIZE, Filter, Page, find_row, load_page
from zarrlake.ui.dashboard.words import ago

__all__ = ["ALL", "HistoryView"]

ALL = "(all)"
COLUMNS = ["graph", "id", "message", "refs", "author", "when"]
WIDTHS = {"id": 96, "message": 300, "refs": 130, "author": 80, "when": 96}

TABLE_CSS = f"""
.tabulator-row {{ border-bottom: none !important; min-height: {ROW_HEIGHT}px; }}
.tabulator-row .tabulator-cell {{ height: {ROW_HEIGHT}px; padding: 0 6px; border-right: none;
  line-height: {ROW_HEIGHT}px; }}
.tabulator-row .tabulator-cell[tabulator-field="graph"] {{ padding: 0 !important; }}
.tabulator-row .tabulator-cell[tabulator-field="id"] {{
  font-family: ui-monospace, Menlo, Consolas, monospace; }}
"""


def _refs_text(refs: tuple[str, ...]) -> str:
    return ", ".join(f"tag {r[4:]}" if r.startswith("tag:") else r for r in refs)


class HistoryView(Viewer):
    """The commit graph with filters, a page at a time; the chosen commit beside it."""

    branch = param.String(default=ALL)
    author = param.String(default="")
    text = param.String(default="")
    hide_merges = param.Boolean(default=False)
    offset = param.Integer(default=0, bounds=(0, None), doc="first row of the page shown")
    commit = param.String(default="", doc="the chosen commit (id or ref)")

    url_params = {"commit": "commit", "branch": "branch", "offset": "from"}

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        refs = [ALL, *ctx.refs()]
        self.w_branch = pn.widgets.Select(
            label="Branch", options=refs if self.branch in refs else [*refs, self.branch], width=160
        )
        self.w_author = pn.widgets.TextInput(label="Author contains", width=140)
        self.w_text = pn.widgets.TextInput(label="Message contains", width=200)
        self.w_merges = pn.widgets.Checkbox(label="Hide merges", margin=(28, 10, 0, 10))
        for w, p in (
            (self.w_branch, "branch"),
            (self.w_author, "author"),
            (self.w_text, "text"),
            (self.w_merges, "hide_merges"),
        ):
            w.value = getattr(self, p)
            w.link(self, value=p, bidirectional=True)
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(columns=COLUMNS),
            disabled=True,
            selectable=1,
            show_index=False,
            formatters={"graph": {"type": "html"}},
            header_align="left",
            widths={"graph": column_width(1), **WIDTHS},
            stylesheets=[TABLE_CSS],
            titles={"graph": ""},
            configuration={"rowHeight": ROW_HEIGHT, "columnDefaults": {"headerSort": False}},
            css_classes=["zl-commits"],
        )
        self.table.param.watch(self._on_select, "selection")
        self.b_newer = pn.widgets.Button(name="Newer", width=90, css_classes=["zl-newer"])
        self.b_older = pn.widgets.Button(name="Older", width=90, css_classes=["zl-older"])
        self.b_newer.on_click(lambda _: self._go(-PAGE_SIZE))
        self.b_older.on_click(lambda _: self._go(PAGE_SIZE))
        self.where = html_pane("", css_classes=["zl-history-page"])
        self.details = pn.Column(sizing_mode="stretch_width", css_classes=["zl-commit-details"])
        self.result = pn.Column()
        self.message = pn.Column()
        self.page_rows: list[GraphRow] = []
        self.shown_page: Page | None = None
        self._cache: dict[Filter, Page] = {}
        if self.commit:
            self._locate()
        self._refresh()
        self._show_details()

    # -- what is shown -------------------------------------------------------------------------

    def filter(self) -> Filter:
        return Filter(
            "" if self.branch == ALL else self.branch,
            self.author.strip(),
            self.text.strip(),
            self.hide_merges,
        )

    def shown(self) -> list[str]:
        """Commit ids on the page shown, top to bottom."""
        return [r.commit.id for r in self.page_rows]

    def _locate(self) -> None:
        """Open on the page that holds the chosen commit."""
        try:
            i = find_row(
                self.ctx.repo, self.filter(), self.ctx.repo.resolve(self.commit), self._cache
            )
        except Exception:
            return  # the details say what is wrong with the commit
        if i is not None:
            with param.parameterized.discard_events(self):
                self.offset = i - i % PAGE_SIZE

    @param.depends("branch", "author", "text", "hide_merges", watch=True)
    def _on_filter(self) -> None:
        if self.offset:
            self.offset = 0  # redraws
        else:
            self._refresh()

    def _go(self, step: int) -> None:
        total = self.shown_page.total if self.shown_page else 0
        self.offset = max(0, min(self.offset + step, max(total - 1, 0) // PAGE_SIZE * PAGE_SIZE))

    @param.depends("offset", watch=True)
    def _refresh(self) -> None:
        try:
            page = load_page(self.ctx.repo, self.filter(), self.offset, self._cache)
        except Exception as exc:
            self.page_rows, self.shown_page = [], None
            self.message.objects = [error_alert(exc)]
            return
        self.message.objects = []
        self.shown_page = page
        self.page_rows = list(page.rows)
        chosen = self._chosen_id()
        above = list(page.incoming)
        records = []
        for r in self.page_rows:
            below = r.edges if page.adjacent else ()
            records.append(
                {
                    "graph": row_svg(
                        r.lane,
                        above if page.adjacent else (),
                        below,
                        page.lanes,
                        merge=len(r.commit.parents) > 1,
                        chosen=r.commit.id == chosen,
                    ),
                    "id": short(r.commit.id),
                    "message": r.commit.message.splitlines()[0] if r.commit.message else "",
                    "refs": _refs_text(r.refs),
                    "author": r.commit.author,
                    "when": ago(r.commit.created_at),
                }
            )
            above = list(below)
        self.table.widths = {"graph": column_width(page.lanes), **WIDTHS}
        self.table.value = pd.DataFrame(records, columns=COLUMNS)
        ids = self.shown()
        self.table.selection = [ids.index(chosen)] if chosen in ids else []
        first, last = page.start + 1, page.start + len(self.page_rows)
        kept = "commits" if not self.filter().narrows else "matching commits"
        self.where.object = html(
            "<p>{}</p>",
            f"{kept} {first:,} to {last:,} of {page.total:,}" if page.rows else f"no {kept}",
        )
        self.b_newer.disabled = page.start == 0
        self.b_older.disabled = last >= page.total

    def _chosen_id(self) -> str:
        if not self.commit:
            return ""
        try:
            return self.ctx.repo.resolve(self.commit)
        except Exception:
            return ""

    def _on_select(self, event: param.parameterized.Event) -> None:
        if event.new and event.new[0] < len(self.page_rows):
            cid = self.page_rows[event.new[0]].commit.id
            if cid != self._chosen_id():
                self.commit = cid

    # -- the chosen commit ---------------------------------------------------------------------

    @param.depends("commit", watch=True)
    def _show_details(self) -> None:
        if not self.commit:
            self.details.objects = [
                html_pane(html("<p><i>{}</i></p>", "Pick a commit in the table."))
            ]
            return
        try:
            info = self.ctx.repo.commit_info(self.commit)
            card = html_pane(commit_html(self.ctx.repo, info), sizing_mode="stretch_width")
        except Exception as exc:
            self.details.objects = [error_alert(exc)]
            return
        self.details.objects = [card, *self._actions(info)]
        if self.shown_page is not None:
            self._refresh()  # the chosen row's dot grows

    def _actions(self, info: CommitInfo) -> list[Any]:
        if not self.ctx.writes.allowed:
            return []
        token = self.ctx.writes.token_input()
        name = pn.widgets.TextInput(
            label="New branch or tag name", placeholder="new ref name", width=220
        )
        on = pn.widgets.Select(label="Revert on branch", options=self.ctx.branches())
        b_branch = pn.widgets.Button(name="Create branch here", button_type="primary")
        b_tag = pn.widgets.Button(name="Create tag here", button_type="primary")
        b_revert = pn.widgets.Button(name="Revert this commit", button_type="warning")

        def run(what: str) -> None:
            repo, writes, tok = self.ctx.repo, self.ctx.writes, str(token.value or "")
            try:
                if what == "branch":
                    out = actions.create_branch(repo, writes, tok, str(name.value or ""), info.id)
                    msg = f"Created branch {name.value} at {short(out)}."
                elif what == "tag":
                    out = actions.create_tag(repo, writes, tok, str(name.value or ""), info.id)
                    msg = f"Created tag {name.value} at {short(out)}."
                else:
                    out = actions.revert(repo, writes, tok, info.id, str(on.value or ""))
                    msg = f"Reverted {short(info.id)} on {on.value}: new commit {short(out)}."
                self.w_branch.options = [ALL, *self.ctx.refs()]
                self._cache.clear()
                self._refresh()  # the table shows the new ref or commit
                self.result.objects = [alert(msg, "success")]
            except Exception as exc:
                self.result.objects = [error_alert(exc)]

        b_branch.on_click(lambda _: run("branch"))
        b_tag.on_click(lambda _: run("tag"))
        b_revert.on_click(lambda _: run("revert"))
        return [
            html_pane("<h4>Act on this commit</h4>"),
            pn.Row(token, name, css_classes=["zl-write-actions"]),
            pn.Row(b_branch, b_tag),
            pn.Row(on, b_revert),
            self.result,
        ]

    def __panel__(self) -> pn.viewable.Viewable:
        filters = pn.Row(self.w_branch, self.w_author, self.w_text, self.w_merges)
        pager = pn.Row(self.b_newer, self.b_older, self.where, align="center")
        left = pn.Column(pager, self.message, self.table, css_classes=["zl-history-table"])
        return pn.Column(
            "## History",
            filters,
            pn.Row(left, self.details, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
