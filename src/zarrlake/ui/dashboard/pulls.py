# mypy: disallow-untyped-calls=False
"""Pull requests page: the requests of the repo, and one of them in full: description,
commits, the checks its merge would run, the conflicts and changes of the engine's dry run
(with chunk maps), its activity; with writes allowed, comment, approve, merge and close.

Writes go through :meth:`Writes.check` (the token) before the pull request's own method,
which applies the repo's rules (who may approve, what must pass)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd  # type: ignore[import-untyped, unused-ignore]
import panel as pn
import param
from panel.viewable import Viewer

from zarrlake.display import diff_html
from zarrlake.review import PullRequest
from zarrlake.ui.dashboard.common import fmt_time, short
from zarrlake.ui.dashboard.compare import CompareView
from zarrlake.ui.dashboard.context import Context
from zarrlake.ui.dashboard.markup import alert, error_alert, html, html_pane
from zarrlake.ui.dashboard.words import plural

__all__ = ["PullsView"]

STATES = ["open", "merged", "closed", "all"]


class PullsView(Viewer):
    """The pull requests of one state, and the one picked."""

    state = param.Selector(default="open", objects=STATES)  # type: ignore[var-annotated]
    number = param.Integer(default=0, bounds=(0, None))

    url_params = {"state": "pr_state", "number": "pr"}

    def __init__(self, ctx: Context, **params: Any) -> None:
        super().__init__(**params)
        self.ctx = ctx
        self.pulls: list[PullRequest] = []
        self.current: PullRequest | None = None
        self.w_state = pn.widgets.RadioButtonGroup(options=STATES, value=self.state)
        self.w_state.link(self, value="state", bidirectional=True)
        self.w_pick = pn.widgets.Select(label="Pull request", options={}, width=420)
        self.w_pick.param.watch(self._on_pick, "value")
        self.message = pn.Column()
        self.header = html_pane("", css_classes=["zl-pr-header"], sizing_mode="stretch_width")
        self.description = html_pane("", css_classes=["zl-pr-description"])
        self.commits = html_pane("", css_classes=["zl-pr-commits"])
        self.checks = pn.widgets.Tabulator(
            pd.DataFrame(), disabled=True, show_index=False, sizing_mode="stretch_width",
            css_classes=["zl-pr-checks"],
        )  # fmt: skip
        self.checks_note = html_pane("", css_classes=["zl-pr-checks-note"])
        self.conflicts = html_pane("", css_classes=["zl-pr-conflicts"])
        self.changes = html_pane("", css_classes=["zl-pr-changes"], sizing_mode="stretch_width")
        # The request's own changes (merge base -> source head) on the Compare page's view:
        # nodes, fields, the chunk map and the values of A, B and their difference.
        self.review = pn.Column(css_classes=["zl-pr-review"], sizing_mode="stretch_width")
        self.activity = html_pane("", css_classes=["zl-pr-activity"], sizing_mode="stretch_width")
        self.result = pn.Column()
        self._list()

    # -- reading -----------------------------------------------------------------------------

    @param.depends("state", watch=True)
    def _list(self) -> None:
        try:
            self.pulls = self.ctx.repo.pull_requests(None if self.state == "all" else self.state)
        except Exception as exc:
            self.message.objects = [error_alert(exc)]
            return
        self.message.objects = []
        options = {f"#{p.number} {p.title} [{p.state}]": p.number for p in self.pulls}
        self.w_pick.options = options
        numbers = [p.number for p in self.pulls]
        pick = self.number if self.number in numbers else (numbers[0] if numbers else 0)
        self.w_pick.value = pick if numbers else None
        self._show(pick)

    def _on_pick(self, event: param.parameterized.Event) -> None:
        if event.new is not None and event.new != self.number:
            self.number = int(event.new)

    @param.depends("number", watch=True)
    def _on_number(self) -> None:
        self._show(self.number)

    def _show(self, number: int) -> None:
        self.current = None
        for pane in (self.header, self.description, self.commits, self.conflicts, self.changes,
                     self.activity):  # fmt: skip
            pane.object = ""
        self.checks.value = pd.DataFrame()
        self.checks_note.object = ""
        if not number:
            self.header.object = html("<p>No {} pull requests.</p>", self.state)
            return
        try:
            pr = self.current = self.ctx.repo.pull_request(number)
            self._fill(pr)
        except Exception as exc:
            self.message.objects = [error_alert(exc)]

    def _fill(self, pr: PullRequest) -> None:
        head = pr.head()
        approvals = pr.approvals() if head else []
        rule = pr.requirements()
        need = 0 if rule is None else rule.required_approvals
        self.header.object = html(
            "<h3>#{} {}</h3><p><code>{}</code> → <code>{}</code> · <b>{}</b> · opened by {} "
            "{} · source head <code>{}</code> · approvals {} of {} ({})</p>",
            pr.number, pr.title, pr.source, pr.target, pr.state, pr.author,
            fmt_time(pr.created_at), short(head) or "(branch deleted)", len(approvals), need,
            ", ".join(approvals) or "none",
        )  # fmt: skip
        self.description.object = html('<div class="zl-text">{}</div>', pr.description)
        self.activity.object = "".join(
            html(
                '<p><b>{}</b> {} <span style="opacity:.7">{}</span><br>'
                '<span class="zl-text">{}</span></p>',
                e.author,
                e.kind,
                fmt_time(e.at),
                e.body,
            )
            for e in pr.events()
        )
        if pr.state != "open" or head is None:
            return
        results = pr.checks()
        self.checks.visible = bool(results)
        self.checks_note.object = (
            html(
                "<p>{} of {} passed.</p>",
                sum(r.passed for r in results),
                plural(len(results), "check"),
            )
            if results
            else html("<p>No check applies to merges into {}.</p>", pr.target)
        )
        self.commits.object = "<ul>" + "".join(
            html("<li><code>{}</code> {} — {}</li>", short(c.id), c.message, c.author)
            for c in pr.commits()
        ) + "</ul>"  # fmt: skip
        self.checks.value = pd.DataFrame(
            [
                {
                    "check": r.name,
                    "result": "passed" if r.passed else "FAILED",
                    "message": r.message,
                    "chunks": "; ".join(
                        f"{p}: {', '.join(map(str, c[:5]))}"
                        + (f" and {len(c) - 5} more" if len(c) > 5 else "")
                        for p, c in r.chunks.items()
                    ),
                }
                for r in results
            ],
            columns=["check", "result", "message", "chunks"],
        )
        preview = pr.preview()
        self.conflicts.object = (
            "<ul>" + "".join(html("<li>{}</li>", str(c)) for c in preview.conflicts) + "</ul>"
            if preview.conflicts
            else html("<p>{}</p>", preview.summary())
        )
        if preview.changes is not None:
            self.changes.object = diff_html(preview.changes)
        self.review.objects = [
            CompareView(self.ctx, a=preview.base or preview.head, b=preview.source_commit)
        ]

    def check_rows(self) -> list[tuple[str, str]]:
        """(check, result) of the pull request shown."""
        df = self.checks.value
        return [] if df.empty else list(zip(df["check"], df["result"], strict=True))

    # -- writing -----------------------------------------------------------------------------

    def act(self, token: str, what: Callable[[PullRequest], object], done: str) -> None:
        """Run ``what`` on the pull request shown, if the token is right; say how it went."""
        try:
            self.ctx.writes.check(token)
            if self.current is None:
                raise ValueError("no pull request is shown")
            what(self.current)
            self.result.objects = [alert(done, "success")]
        except Exception as exc:
            self.result.objects = [error_alert(exc)]
        self._list()

    def _actions(self) -> list[Any]:
        if not self.ctx.writes.allowed:
            return []
        token = self.ctx.writes.token_input()
        who = pn.widgets.TextInput(label="Your name", placeholder="your name", width=200)
        text = pn.widgets.TextAreaInput(label="Comment", placeholder="comment", height=70)

        def name() -> str:
            return str(who.value or "").strip()

        buttons = {
            "Comment": lambda _: self.act(
                str(token.value or ""), lambda p: p.comment(str(text.value or ""), author=name()),
                "commented",
            ),
            "Approve": lambda _: self.act(
                str(token.value or ""), lambda p: p.approve(by=name()), "approved"
            ),
            "Merge": lambda _: self.act(
                str(token.value or ""), lambda p: p.merge(author=name()), "merged"
            ),
            "Close": lambda _: self.act(
                str(token.value or ""), lambda p: p.close(by=name()), "closed"
            ),
        }  # fmt: skip
        row = []
        for label, fn in buttons.items():
            b = pn.widgets.Button(
                name=label, button_type="primary" if label == "Merge" else "default"
            )
            b.on_click(fn)
            row.append(b)
        return [
            "#### Review",
            pn.Row(token, who, css_classes=["zl-write-actions"]),
            text,
            pn.Row(*row),
            self.result,
        ]

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            "## Pull requests",
            pn.Row(self.w_state, self.w_pick),
            self.message,
            self.header,
            "#### Description",
            self.description,
            "#### Commits",
            self.commits,
            "#### Checks",
            self.checks_note,
            self.checks,
            "#### Merge preview",
            self.conflicts,
            self.changes,
            "#### Changes of the request, chunk by chunk (A: merge base, B: source head)",
            self.review,
            "#### Activity",
            self.activity,
            *self._actions(),
            sizing_mode="stretch_width",
        )
