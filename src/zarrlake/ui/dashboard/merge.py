# mypy: disallow-untyped-calls=False
"""Merge page: what merging one ref into a branch would do, exactly as the engine's dry run
(``repo.merge(..., dry_run=True)``) computes it, and (with writes allowed) the merge itself."""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

import zarrlake.ui.dashboard.actions as actions
from zarrlake import ConflictKind, Diff, MergePreview
from zarrlake.ui.dashboard.common import short
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.markup import alert, error_alert, html, html_pane
from zarrlake.ui.dashboard.words import node_sentence, plural

__all__ = ["MergeView"]

SOLVERS = ["fail", "ours", "theirs"]


class MergeView(Viewer):
    """Source ref into target branch: the dry run's outcome, conflicts and changes."""

    source = param.String(default="")
    into = param.String(default="main")
    solver = param.Selector(default="fail", objects=SOLVERS)  # type: ignore[var-annotated]

    url_params = {"source": "source", "into": "into"}

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        branches = ctx.branches()
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
        self.outcome = html_pane("", css_classes=["zl-merge-outcome"], sizing_mode="stretch_width")
        self.conflicts = pn.widgets.Tabulator(
            pd.DataFrame(),
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
            css_classes=["zl-conflicts"],
        )
        self.conflict_box = pn.Column(sizing_mode="stretch_width")
        self.changes = html_pane("", css_classes=["zl-merge-changes"], sizing_mode="stretch_width")
        self.message = pn.Column()
        self.result = pn.Column()
        self.w_solver = pn.widgets.RadioButtonGroup(options=SOLVERS, value=self.solver)
        self.w_solver.link(self, value="solver", bidirectional=True)
        self.button = pn.widgets.Button(
            name="Merge", button_type="primary", css_classes=["zl-merge-button"]
        )
        self.why_disabled = html_pane("", css_classes=["zl-merge-hint"])
        self._compute()

    @param.depends("source", "into", watch=True)
    def _compute(self) -> None:
        try:
            self.preview = p = self.ctx.repo.merge(self.source, self.into, dry_run=True)
        except Exception as exc:
            self.preview = None
            self.message.objects = [error_alert(exc)]
            self.outcome.object, self.changes.object = "", ""
            self.conflict_box.objects = []
            self._guard()
            return
        self.message.objects = []
        self.outcome.object = html("<h3>{} → {}</h3><p>{}</p>", self.source, self.into, _say(p))
        if p.conflicts:
            self.conflicts.value = pd.DataFrame(
                [
                    {
                        "conflict": str(c.kind),
                        "path": "/" + c.path,
                        "chunk": ", ".join(map(str, c.chunk)) if c.chunk is not None else "",
                        "why": c.detail,
                        "other commit": short(c.commit),
                    }
                    for c in p.conflicts
                ]
            )
            self.conflict_box.objects = [
                html_pane(html("<h4>{}</h4>", plural(len(p.conflicts), "conflict"))),
                self.conflicts,
            ]
        else:
            self.conflict_box.objects = []
        self.changes.object = self._changes_html(p)
        self._guard()

    def _changes_html(self, p: MergePreview) -> str:
        parts: list[tuple[str, Diff | None]]
        if p.outcome == "up-to-date":
            return ""
        if p.changes is not None:
            parts = [(f"What {p.into} would gain", p.changes)]
        else:
            parts = [
                (f"Changed on {p.into} since the common ancestor", p.ours),
                (f"Changed on {p.source} since the common ancestor", p.theirs),
            ]
        out = []
        for title, d in parts:
            if d is None:
                continue
            items = "".join(html("<li>{}</li>", node_sentence(n)) for n in d)
            out.append(html("<h4>{}</h4>", title) + (f"<ul>{items}</ul>" if items else ""))
            if not items:
                out.append(html("<p>{}</p>", "No change to any array or group."))
        return "".join(out)

    @param.depends("solver", watch=True)
    def _guard(self) -> None:
        """The Merge button is off when nothing would merge or ``fail`` would be refused."""
        p = self.preview
        why = ""
        if p is None:
            why = "Nothing to merge until the preview above works."
        elif p.outcome == "up-to-date":
            why = "Nothing to merge."
        elif any(c.kind == ConflictKind.HISTORY for c in p.conflicts):
            why = "The branch was reset under this history: no solver merges it."
        elif p.conflicts and self.solver == "fail":
            why = (
                f"Solver fail stops at the {plural(len(p.conflicts), 'conflict')}: choose "
                f"ours (keep {p.into}'s version) or theirs (take {p.source}'s)."
            )
        self.button.disabled = bool(why)
        self.why_disabled.object = html("<p>{}</p>", why) if why else ""

    def _actions(self) -> list[Any]:
        if not self.ctx.writes.allowed:
            return []
        token = self.ctx.writes.token_input()

        def run(_: Any) -> None:
            try:
                out = actions.merge(
                    self.ctx.repo,
                    self.ctx.writes,
                    str(token.value or ""),
                    self.source or "",
                    self.into or "",
                    str(self.solver),
                )
                self.result.objects = [
                    alert(f"Merged: {self.into} is now at {short(out)}.", "success")
                ]
                self._compute()
            except Exception as exc:
                self.result.objects = [error_alert(exc)]

        self.button.on_click(run)
        return [
            "#### Merge now",
            pn.Row(
                token,
                pn.Column("solver", self.w_solver),
                self.button,
                css_classes=["zl-write-actions"],
            ),
            self.why_disabled,
            self.result,
        ]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            "## Merge preview",
            pn.Row(self.w_source, self.w_into),
            self.message,
            self.outcome,
            self.conflict_box,
            self.changes,
            *self._actions(),
            sizing_mode="stretch_width",
        )


def _say(p: MergePreview) -> str:
    """The dry run's outcome as one sentence."""
    if p.outcome == "up-to-date":
        return f"{p.into} already contains {p.source}: nothing to merge."
    if p.outcome == "fast-forward":
        return (
            f"{p.into} would fast-forward from {short(p.head)} to {short(p.source_commit)}: "
            "no merge commit, no conflicts."
        )
    base = f"A three-way merge against their common ancestor {short(p.base)}"
    if not p.conflicts:
        return base + ": no conflicts, it would merge cleanly."
    return (
        base + f": {plural(len(p.conflicts), 'conflict')}. Solver fail would refuse the merge; "
        f"ours keeps {p.into}'s version, theirs takes {p.source}'s."
    )
