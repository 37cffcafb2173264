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
from zarrlake.ui.dashboard.common import error_alert, short
from zarrlake.ui.dashboard.context import Context
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
        self.outcome = pn.pane.Markdown("", css_classes=["zl-merge-outcome"])
        self.conflicts = pn.widgets.Tabulator(
            pd.DataFrame(),
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
            css_classes=["zl-conflicts"],
        )
        self.sides = pn.pane.Markdown("", sizing_mode="stretch_width")
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
        text = {
            "up to date": f"`{self.into}` already contains `{self.source}`: nothing to merge.",
            "fast-forward": f"`{self.into}` would fast-forward to `{self.source}`.",
            "unrelated": "The two share no history: a merge is refused.",
            "merge": f"A three-way merge against their common ancestor `{short(p.base)}`: "
            + (
                f"**{len(p.conflicts)} conflict(s)**; merge with solver `ours` (keep "
                f"`{self.into}`) or `theirs` (take `{self.source}`)."
                if p.conflicts
                else "**no conflicts**, it would merge cleanly."
            ),
        }[p.outcome]
        self.outcome.object = f"### {self.source} → {self.into}\n\n{text}"
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
        lines = []
        for label, d in (
            (f"changed on {self.into}", p.ours),
            (f"changed on {self.source}", p.theirs),
        ):
            if d is not None:
                lines.append(
                    f"**{label}** since the ancestor:\n"
                    + "\n".join(f"- `{n.describe()}`" for n in d)
                )
        self.sides.object = "\n\n".join(lines)

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
                    pn.pane.Alert(
                        f"merged: {self.into} is now at {short(out)}", alert_type="success"
                    )
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
