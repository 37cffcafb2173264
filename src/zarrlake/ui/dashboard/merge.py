# mypy: disallow-untyped-calls=False
"""Merge preview page: what merging one ref into a branch would do, the conflicts it would
raise, and (with writes allowed) the merge itself with a solver."""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

import zarrlake.ui.dashboard.actions as actions
from zarrlake.ui.dashboard.common import short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.markup import alert, error_alert, html, html_pane
from zarrlake.ui.dashboard.preview import MergePreview, preview_merge

__all__ = ["MergeView"]


class MergeView(Viewer):
    """Source ref into target branch: outcome, both sides' changes, conflicts."""

    source = param.String(default="")
    into = param.String(default="main")

    url_params = {"source": "source", "into": "into"}

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        branches = sorted(ctx.repo.branches(), key=lambda n: (n != "main", n))
        if not self.source:
            with param.parameterized.discard_events(self):
                self.source = next((b for b in branches if b != self.into), self.into)
        self.w_source = pn.widgets.Select(label="Merge", options=ctx.refs(), width=200)
        self.w_into = pn.widgets.Select(label="into branch", options=branches, width=200)
        for w, p in ((self.w_source, "source"), (self.w_into, "into")):
            if getattr(self, p) not in w.options:
                w.options = [*w.options, getattr(self, p)]
            w.value = getattr(self, p)
            w.link(self, value=p, bidirectional=True)
        self.preview: MergePreview | None = None
        self.outcome = html_pane("", css_classes=["zl-merge-outcome"])
        self.conflicts = pn.widgets.Tabulator(
            pd.DataFrame(),
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
            css_classes=["zl-conflicts"],
        )
        self.sides = html_pane("", sizing_mode="stretch_width")
        self.message = pn.Column()
        self.result = pn.Column()
        self._compute()

    @param.depends("source", "into", watch=True)
    def _compute(self) -> None:
        try:
            self.preview = p = preview_merge(
                self.ctx.repo, self.ctx.graph(refresh=True), self.source, self.into
            )
        except Exception as exc:
            self.preview = None
            self.message.objects = [error_alert(exc)]
            self.outcome.object, self.sides.object = "", ""
            self.conflicts.value = pd.DataFrame()
            return
        self.message.objects = []
        source, into = self.source, self.into
        text = {
            "up to date": html(
                "<code>{}</code> already contains <code>{}</code>: nothing to merge.", into, source
            ),
            "fast-forward": html(
                "<code>{}</code> would fast-forward to <code>{}</code>.", into, source
            ),
            "unrelated": "The two share no history: a merge is refused.",
            "merge": html(
                "A three-way merge against their common ancestor <code>{}</code>: ", short(p.base)
            )
            + (
                html(
                    "<b>{} conflict(s)</b>; merge with solver <code>ours</code> (keep "
                    "<code>{}</code>) or <code>theirs</code> (take <code>{}</code>).",
                    len(p.conflicts),
                    into,
                    source,
                )
                if p.conflicts
                else "<b>no conflicts</b>, it would merge cleanly."
            ),
        }[p.outcome]
        self.outcome.object = html("<h3>{} → {}</h3>", source, into) + f"<p>{text}</p>"
        self.conflicts.value = pd.DataFrame(
            [
                {
                    "kind": c.kind,
                    "path": "/" + c.path,
                    "chunk": str(c.coords or ""),
                    "detail": c.detail,
                }
                for c in p.conflicts
            ],
            columns=["kind", "path", "chunk", "detail"],
        )
        parts = []
        for side, d in ((into, p.ours), (source, p.theirs)):
            if d is not None:
                items = "".join(html("<li><code>{}</code></li>", n.describe()) for n in d)
                parts.append(
                    html("<p><b>changed on {}</b> since the ancestor:</p>", side)
                    + f"<ul>{items}</ul>"
                )
        self.sides.object = "".join(parts)

    def _actions(self) -> list[Any]:
        if not self.ctx.writes.allowed:
            return []
        token = self.ctx.writes.token_input()
        solver = pn.widgets.RadioButtonGroup(options=["fail", "ours", "theirs"], value="fail")
        button = pn.widgets.Button(name="Merge", button_type="primary")

        def run(_: Any) -> None:
            try:
                out = actions.merge(
                    self.ctx.repo,
                    self.ctx.writes,
                    str(token.value or ""),
                    self.source or "",
                    self.into or "",
                    str(solver.value),
                )
                self.result.objects = [
                    alert(f"merged: {self.into} is now at {short(out)}", "success")
                ]
                self._compute()
            except Exception as exc:
                self.result.objects = [error_alert(exc)]

        button.on_click(run)
        return [
            "#### Merge now",
            pn.Row(token, pn.Column("solver", solver), button, css_classes=["zl-write-actions"]),
            self.result,
        ]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            "## Merge preview",
            pn.Row(self.w_source, self.w_into),
            self.message,
            self.outcome,
            self.conflicts,
            self.sides,
            *self._actions(),
            sizing_mode="stretch_width",
        )
