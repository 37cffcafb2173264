"""``PullRequestWidget``: one pull request in a notebook: its title, state, source and
target, the checks the merge would run, its approvals and the conflicts a merge would meet,
with buttons to approve and merge it (the engine decides; a refusal shows its reason)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as w  # type: ignore[import-untyped]

from zarrlake.display._base import esc
from zarrlake.errors import ZarrlakeError
from zarrlake.types import redact_urls

if TYPE_CHECKING:
    from zarrlake.review.pulls import PullRequest

__all__ = ["PullRequestWidget"]

_SHOWN = 20  # conflicts listed


def _items(rows: list[str], empty: str) -> str:
    return "<ul>" + "".join(f"<li>{r}</li>" for r in rows) + "</ul>" if rows else empty


class PullRequestWidget(w.VBox):  # type: ignore[misc]
    """A pull request in a notebook.

    ``header`` shows the number, title, state and ``source -> target``; ``checks``,
    ``approvals`` and ``conflicts`` what stands between it and its merge. ``user`` is the
    name that ``approve_button`` approves as and ``merge_button`` merges as; ``message`` shows
    the engine's refusal or what was done. ``refresh()`` reads it all again.
    """

    def __init__(self, pr: PullRequest, user: str = "") -> None:
        self.pr = pr
        self.header = w.HTML()
        self.checks = w.HTML()
        self.approvals = w.HTML()
        self.conflicts = w.HTML()
        self.message = w.HTML()
        self.user = w.Text(value=user, placeholder="your name", description="as")
        self.approve_button = w.Button(description="approve", icon="check", button_style="info")
        self.merge_button = w.Button(description="merge", icon="code-fork", button_style="success")
        super().__init__(
            [
                self.header,
                self.checks,
                self.approvals,
                self.conflicts,
                w.HBox([self.user, self.approve_button, self.merge_button]),
                self.message,
            ]
        )
        self.approve_button.on_click(lambda _: self.approve())
        self.merge_button.on_click(lambda _: self.merge())
        self.refresh()

    def refresh(self) -> None:
        """Read the pull request again: state, checks, approvals and conflicts."""
        pr = self.pr = self.pr.refresh()
        self.header.value = (
            f"<b>#{pr.number} {esc(pr.title)}</b> &middot; {esc(pr.state)} &middot; "
            f"<code>{esc(pr.source)}</code> &rarr; <code>{esc(pr.target)}</code>"
        )
        is_open = pr.state == "open"
        self.approve_button.disabled = self.merge_button.disabled = not is_open
        if not is_open:
            self.checks.value = self.conflicts.value = ""
            self.approvals.value = ""
            return
        try:
            results = pr.checks()
            approvals = pr.approvals()
            conflicts = pr.preview().conflicts
        except ZarrlakeError as exc:
            self._error(exc)
            return
        rule = pr.requirements()
        passed = sum(r.passed for r in results)
        rows = [
            f"{esc(r.name)}: {'passed' if r.passed else 'failed'} &middot; {esc(r.message)}"
            for r in results
        ]
        self.checks.value = (
            f"checks: {passed} of {len(results)} passed" + _items(rows, "")
            if results
            else "checks: none run"
        )
        needed = rule.required_approvals if rule is not None else 0
        self.approvals.value = f"approvals: {len(approvals)} of {needed} needed" + (
            ": " + ", ".join(esc(a) for a in approvals) if approvals else ""
        )
        shown = [
            f"{esc(c.kind)} <code>{esc(c.path or '/')}</code> {esc(c.detail)}"
            for c in conflicts[:_SHOWN]
        ]
        more = len(conflicts) - _SHOWN
        self.conflicts.value = f"conflicts: {len(conflicts)}" + _items(
            shown + ([f"{more} more"] if more > 0 else []), ""
        )

    def _error(self, exc: ZarrlakeError) -> None:
        text = esc(redact_urls(str(exc)))
        self.message.value = (
            f'<span style="color:var(--jp-error-color1,#c62828);white-space:pre-wrap">{text}</span>'
        )

    def approve(self) -> None:
        """Approve the pull request as ``user``."""
        self.message.value = ""
        try:
            self.pr.approve(by=self.user.value)
        except ZarrlakeError as exc:
            self._error(exc)
            return
        self.message.value = f"approved by {esc(self.user.value)}"
        self.refresh()

    def merge(self) -> None:
        """Merge the pull request as ``user``."""
        self.message.value = ""
        try:
            commit = self.pr.merge(author=self.user.value)
        except ZarrlakeError as exc:
            self._error(exc)
            return
        self.message.value = f"merged as <code>{esc(commit[:10])}</code>"
        self.refresh()
