"""Data pull requests: a proposal to merge one branch into another, stored in the catalog,
with comments, approvals, the checks the merge would run, and the merge itself (made against
the target's head, by compare-and-swap, recorded with the pull request in one transaction)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import zarrlake.history as history
from zarrlake._optional import load
from zarrlake.core import RepoCore
from zarrlake.core.checks import run_checks
from zarrlake.core.gate import load_gate
from zarrlake.core.webhooks import deliver
from zarrlake.errors import NotFoundError, PullRequestError, ZarrlakeError
from zarrlake.history.merging import merge_proposal
from zarrlake.model.preview import MergePreview
from zarrlake.model.rules import BranchRule, CheckResult, PullEvent, PullRecord
from zarrlake.types import CommitInfo, validate_name, validate_text

__all__ = ["STATES", "PullRequest", "open_pull_request"]

STATES = ("open", "merged", "closed")


def open_pull_request(
    core: RepoCore, source: str, target: str, title: str, description: str, author: str
) -> PullRequest:
    validate_name(source, "source branch")
    validate_name(target, "target branch")
    validate_text(title, "title")
    validate_text(description, "description")
    if not title.strip():
        raise PullRequestError("a pull request needs a title")
    if source == target:
        raise PullRequestError(
            f"a pull request merges one branch into another; both are {source!r}"
        )
    head = history.ref_commit(core, source, "branch")
    history.ref_commit(core, target, "branch")
    pr = PullRequest(
        core, core.catalog.pulls.open(source, target, title, description, author, head)
    )
    _tell(core, pr.record, "opened", author)
    return pr


def _tell(core: RepoCore, r: PullRecord, action: str, actor: str, body: str = "") -> None:
    """Queue a ``pull_request`` webhook delivery (never waited for)."""
    hooks = core.catalog.rules.webhooks()
    if hooks:
        deliver(
            hooks,
            "pull_request",
            {
                "repo": core.name, "action": action, "actor": actor, "body": body,
                "number": r.number, "title": r.title, "source": r.source,
                "target": r.target, "state": r.state, "merge_commit": r.merge_commit,
            },
        )  # fmt: skip


class PullRequest:
    """A pull request of a repo (``repo.open_pull_request``, ``repo.pull_requests``).

    Its fields are read when it is loaded: :meth:`refresh` reads them again.
    """

    def __init__(self, core: RepoCore, record: PullRecord) -> None:
        self._core = core
        self._record = record

    # -- what it is --------------------------------------------------------------------------

    @property
    def number(self) -> int:
        return self._record.number

    @property
    def source(self) -> str:
        return self._record.source

    @property
    def target(self) -> str:
        return self._record.target

    @property
    def title(self) -> str:
        return self._record.title

    @property
    def description(self) -> str:
        return self._record.description

    @property
    def author(self) -> str:
        return self._record.author

    @property
    def state(self) -> str:
        """``"open"``, ``"merged"`` or ``"closed"``."""
        return self._record.state

    @property
    def merge_commit(self) -> str | None:
        return self._record.merge_commit

    @property
    def created_at(self) -> datetime:
        return self._record.created_at

    @property
    def updated_at(self) -> datetime:
        return self._record.updated_at

    def refresh(self) -> PullRequest:
        """This pull request as the catalog holds it now."""
        return PullRequest(self._core, self._core.catalog.pulls.get(self.number))

    def head(self) -> str | None:
        """The source branch's head now (``None`` if the branch was deleted)."""
        found = self._core.catalog.refs.get(self.source)
        return None if found is None or found[0] != "branch" else found[1]

    def events(self) -> list[PullEvent]:
        """Comments, approvals, merge and close, oldest first."""
        return self._core.catalog.pulls.events(self.number)

    def comments(self) -> list[PullEvent]:
        return [e for e in self.events() if e.kind == "comment"]

    def approvals(self) -> list[str]:
        """Who approved the source's current head (approvals of an earlier head no longer
        count: the data changed since)."""
        head = self.head()
        return sorted({e.author for e in self.events() if e.kind == "approve" and e.commit == head})

    def commits(self, limit: int | None = 100) -> list[CommitInfo]:
        """Commits of the source not on the target, newest first (first parents)."""
        head = self._live_head()
        target = history.ref_commit(self._core, self.target, "branch")
        base = history.merge_base(self._core, head, target)
        found = None if base is None else self._core.catalog.commits.between(base, head)
        if found is None:  # not a first-parent descendant of the base: walk a page
            found = self._core.catalog.commits.ancestry(head, limit)[::-1]
        rows = found[::-1]
        return [r.info() for r in (rows if limit is None else rows[:limit])]

    def preview(self) -> MergePreview:
        """What merging would do now (the engine's dry run): outcome, conflicts, changes."""
        return history.preview_merge(
            self._core, self._live_head(), self.target, solver="fail", fast_forward=False
        )

    def checks(self) -> list[CheckResult]:
        """Run the checks the merge would run (those of the target for merges, and the
        target's required checks) against the merge it would make now; nothing is written.
        A required check that is not defined is reported as failed."""
        rule = self.requirements()
        try:
            gate = load_gate(self._core, self.target, "merge", pull=True, hooks=False)
        except PullRequestError as exc:
            names = rule.required_checks if rule is not None else ()
            return [CheckResult(n, False, str(exc)) for n in names]
        if not gate.checks:
            return []
        proposal = merge_proposal(self._core, self._live_head(), self.target)
        if proposal is None:
            why = "the merge would be refused (conflicts) or changes nothing"
            return [CheckResult(s.name, False, why) for s in gate.checks]
        return run_checks(proposal, gate.checks)

    def requirements(self) -> BranchRule | None:
        """The target's protection (required checks and approvals), or ``None``."""
        return self._core.catalog.rules.for_branch(self.target, hooks=False).rule

    # -- what can be done ---------------------------------------------------------------------

    def comment(self, body: str, *, author: str) -> None:
        validate_text(body, "comment")
        if not body.strip():
            raise PullRequestError("a comment needs some text")
        self._core.catalog.pulls.add_event(self.number, "comment", author, body)
        self._tell("commented", author, body)

    def approve(self, *, by: str) -> None:
        """Approve the source's current head. The author cannot approve their own pull
        request; a merged or closed one takes no approvals."""
        validate_text(by, "approver")
        if by == self.author:
            raise PullRequestError(
                f"{by!r} opened pull request #{self.number} and cannot approve it; "
                "ask someone else to review it"
            )
        current = self.refresh()
        if current.state != "open":
            raise PullRequestError(
                f"pull request #{self.number} is {current.state}; it takes no approvals"
            )
        self._core.catalog.pulls.add_event(self.number, "approve", by, "", self._live_head())
        self._tell("approved", by)

    def merge(self, *, author: str, message: str | None = None, timeout: float = 120.0) -> str:
        """Merge the source's head into the target; returns the merge commit.

        Refused (nothing changed) when the pull request is not open, its source branch is
        gone, it lacks the target's required approvals, a check fails (run against the
        target's head now), or the target moves while it merges (:class:`RefMovedError`:
        update and merge again)."""
        current = self.refresh()
        if current.state != "open":
            raise PullRequestError(
                f"pull request #{self.number} is {current.state}; nothing to merge"
            )
        head = self._live_head()
        rule = self.requirements()
        need = 0 if rule is None else rule.required_approvals
        have = self.approvals()
        if len(have) < need:
            stale = {
                e.author for e in self.events() if e.kind == "approve" and e.commit != head
            } - set(have)
            note = f" (approvals of earlier heads by {', '.join(sorted(stale))} no longer count)"
            raise PullRequestError(
                f"pull request #{self.number} needs {need} approval{'' if need == 1 else 's'} of the "
                f"source's head "
                f"{head[:10]}, it has {len(have)}{note if stale else ''}; ask a reviewer"
            )
        target = history.ref_commit(self._core, self.target, "branch")
        if history.merge_base(self._core, head, target) == head:
            raise PullRequestError(
                f"{self.target!r} already contains {self.source!r} at {head[:10]}: nothing to "
                f"merge; close pull request #{self.number}"
            )
        done = history.merge(
            self._core,
            head,
            self.target,
            solver="fail",
            message=message
            or f"Merge pull request #{self.number} from {self.source}: {self.title}",
            author=author,
            metadata=None,
            fast_forward=False,
            timeout=timeout,
            pull=self.number,
        )
        self._record = self._core.catalog.pulls.get(self.number)
        self._tell("merged", author)
        return done

    def close(self, *, by: str) -> None:
        """Close without merging."""
        validate_text(by, "closer")
        self._core.catalog.pulls.close(self.number, by)
        self._record = self._core.catalog.pulls.get(self.number)
        self._tell("closed", by)

    def _tell(self, action: str, actor: str, body: str = "") -> None:
        _tell(self._core, self._record, action, actor, body)

    @property
    def record(self) -> PullRecord:
        """The catalog's record of this pull request, as loaded."""
        return self._record

    def _live_head(self) -> str:
        head = self.head()
        if head is None:
            raise PullRequestError(
                f"the source branch {self.source!r} of pull request #{self.number} was "
                "deleted; recreate it or close the pull request"
            )
        return head

    # -- display -----------------------------------------------------------------------------

    def widget(self, user: str = "") -> Any:
        """A Jupyter widget: title, state, checks, approvals and conflicts, with buttons to
        approve and merge as ``user``. Needs the ``ui`` extra."""
        return load("zarrlake.ui.widgets", "PullRequestWidget", "ui")(self, user)

    def __repr__(self) -> str:
        return f"<PullRequest #{self.number} {self.state} {self.source} -> {self.target}: {self.title!r}>"

    def _repr_html_(self) -> str:
        from zarrlake.display.pulls import pull_html

        try:
            approvals, head = self.approvals(), self.head()
        except (ZarrlakeError, NotFoundError):
            approvals, head = [], None
        return pull_html(self, self.events(), approvals, head)
