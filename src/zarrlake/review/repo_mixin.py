"""The :class:`~zarrlake.Repo` methods about review: checks on commits and merges, protected
branches, pull requests and the change feed. The rules, pull requests, the feed and custom
checks load when a method first needs them: a repo opened to read loads none of them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from zarrlake.errors import InvalidInputError
from zarrlake.model.events import EVENTS, HOOK_EVENTS
from zarrlake.types import default_author, validate_name, validate_text

if TYPE_CHECKING:
    from zarrlake.core import RepoCore
    from zarrlake.model.rules import BranchRule, CheckSpec
    from zarrlake.review.feed import ChangeEvent
    from zarrlake.review.pulls import PullRequest

__all__ = ["ReviewMixin"]


def _spec(check: object) -> CheckSpec:
    from zarrlake.model.rules import BUILTIN_KINDS, CheckSpec, custom

    if isinstance(check, str):
        check = custom(check)
    if not isinstance(check, CheckSpec):
        raise InvalidInputError(
            "check must be a built-in check (zarrlake.checks.no_nan(...), value_range, "
            "required_attributes, frozen_schema, max_chunks) or the name of a check "
            f"registered in the 'zarrlake.checks' entry point group, got {check!r}"
        )
    if check.kind == "custom":
        from zarrlake.core.checks import find_custom

        find_custom(str(check.params.get("entry_point")))  # unknown names refused now
    elif check.kind not in BUILTIN_KINDS:
        raise InvalidInputError(f"unknown check kind {check.kind!r}")
    return check


def _author(author: object) -> str:
    if author is None:
        return default_author()
    if not isinstance(author, str) or not author.strip():
        raise InvalidInputError(f"author must be a non-empty string, got {author!r}")
    return author


class ReviewMixin:
    """Checks, protected branches, pull requests and the change feed."""

    _core: RepoCore

    # -- checks ---------------------------------------------------------------------------

    def add_check(
        self,
        name: str,
        check: CheckSpec | str,
        *,
        on: Sequence[str] | str = EVENTS,
        branches: Sequence[str] | str = ("main",),
        timeout: float | None = None,
        replace: bool = False,
    ) -> CheckSpec:
        """Run ``check`` before every commit or merge (``on``) lands on ``branches`` (names
        or glob patterns such as ``"release/*"``). A check that fails, raises or takes longer
        than ``timeout`` seconds (default 60) refuses the commit with
        :class:`CheckFailedError`; passed checks are recorded in the commit's metadata.

        ``check`` is a built-in check from :mod:`zarrlake.checks` or the name of a check a
        package registers in the ``zarrlake.checks`` entry point group."""
        spec = _spec(check).bound(name, on, branches, timeout)
        self._core.catalog.rules.add_check(spec, replace=bool(replace))
        return spec

    def checks(self) -> list[CheckSpec]:
        """The repo's checks, by name."""
        return self._core.catalog.rules.checks()

    def remove_check(self, name: str) -> None:
        validate_name(name, "check name")
        self._core.catalog.rules.remove_check(name)

    # -- protected branches ---------------------------------------------------------------

    def protect_branch(
        self,
        branch: str,
        *,
        required_checks: Sequence[str] = (),
        required_approvals: int = 0,
        allow_direct_commits: bool = False,
    ) -> BranchRule:
        """Protect ``branch``: resets and deletes are refused, direct commits and merges too
        (unless ``allow_direct_commits``); changes arrive by pull request, merged once
        ``required_approvals`` reviewers approved its head and ``required_checks`` (names of
        checks of this repo) pass. Protecting a protected branch replaces its rule."""
        validate_name(branch, "branch name")
        names = [required_checks] if isinstance(required_checks, str) else list(required_checks)
        for name in names:
            validate_name(name, "check name")
        known = {c.name for c in self.checks()}
        missing = [m for m in names if m not in known]
        if missing:
            raise InvalidInputError(
                f"no check named {', '.join(map(repr, missing))}; add it first with "
                f"repo.add_check (checks: {', '.join(sorted(known)) or 'none'})"
            )
        approvals: object = required_approvals
        if (
            isinstance(approvals, bool)
            or not isinstance(approvals, int)
            or not 0 <= approvals <= 100
        ):
            raise InvalidInputError(
                f"required_approvals must be an int in 0..100, got {approvals!r}"
            )
        if not isinstance(allow_direct_commits, bool):
            raise InvalidInputError(
                f"allow_direct_commits must be True or False, got {allow_direct_commits!r}"
            )
        from zarrlake.model.rules import BranchRule

        rule = BranchRule(branch, tuple(dict.fromkeys(names)), approvals, allow_direct_commits)
        self._core.catalog.rules.protect(rule)
        return rule

    def unprotect_branch(self, branch: str) -> None:
        validate_name(branch, "branch name")
        self._core.catalog.rules.unprotect(branch)

    def protected_branches(self) -> list[BranchRule]:
        return self._core.catalog.rules.protections()

    # -- pull requests --------------------------------------------------------------------

    def open_pull_request(
        self,
        source: str,
        target: str = "main",
        *,
        title: str,
        description: str = "",
        author: str | None = None,
    ) -> PullRequest:
        """Propose merging branch ``source`` into ``target``; returns the pull request."""
        from zarrlake.review.pulls import open_pull_request

        return open_pull_request(self._core, source, target, title, description, _author(author))

    def pull_requests(self, state: str | None = "open") -> list[PullRequest]:
        """Pull requests in ``state`` (``"open"``, ``"merged"``, ``"closed"``; ``None``:
        all), newest first."""
        from zarrlake.review.pulls import STATES, PullRequest

        if state is not None and state not in STATES:
            raise InvalidInputError(
                f"state must be one of {', '.join(STATES)} or None, got {state!r}"
            )
        return [PullRequest(self._core, r) for r in self._core.catalog.pulls.by_state(state)]

    def pull_request(self, number: int) -> PullRequest:
        if isinstance(number, bool) or not isinstance(number, int):
            raise InvalidInputError(f"a pull request number is an int, got {number!r}")
        from zarrlake.review.pulls import PullRequest

        return PullRequest(self._core, self._core.catalog.pulls.get(number))

    # -- webhooks -------------------------------------------------------------------------

    def add_webhook(
        self,
        url: str,
        *,
        secret: str | None = None,
        events: Sequence[str] | str = HOOK_EVENTS,
    ) -> str:
        """POST a JSON document to ``url`` (``http://`` or ``https://``) for each of
        ``events`` (``"commit"``, ``"merge"``, ``"pull_request"``) of this repo, from any
        process that makes one. The body is signed with ``secret`` (HMAC-SHA256, header
        ``X-Zarrlake-Signature``); without one, a random secret is made. Returns the secret.
        Deliveries are retried with backoff and never hold a commit back. Adding a webhook
        at a URL again replaces it."""
        from urllib.parse import urlsplit

        text = validate_text(url, "webhook URL")
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidInputError(
                f"a webhook URL is http:// or https:// with a host, got {url!r}"
            )
        names = (events,) if isinstance(events, str) else tuple(events)
        unknown = [e for e in names if e not in HOOK_EVENTS]
        if unknown or not names:
            raise InvalidInputError(
                f"events must name one or more of {', '.join(HOOK_EVENTS)}; got {list(names)!r}"
            )
        if secret is None:
            import secrets

            secret = secrets.token_hex(32)
        elif not isinstance(secret, str) or len(secret) < 16:
            raise InvalidInputError("a webhook secret is a string of at least 16 characters")
        from zarrlake.model.rules import Webhook

        self._core.catalog.rules.add_webhook(Webhook(text, secret, tuple(dict.fromkeys(names))))
        return secret

    def webhooks(self) -> list[tuple[str, tuple[str, ...]]]:
        """(URL, events) of each webhook (secrets are never shown)."""
        return [(h.url, h.events) for h in self._core.catalog.rules.webhooks()]

    def remove_webhook(self, url: str) -> None:
        self._core.catalog.rules.remove_webhook(validate_text(url, "webhook URL"))

    # -- change feed ----------------------------------------------------------------------

    def changes(
        self, since: str | datetime | None = None, *, branch: str = "main"
    ) -> Iterator[ChangeEvent]:
        """Commits that landed on ``branch`` after ``since`` (a commit or ref, or a time),
        oldest first, each with the arrays it changed and their changed chunk counts."""
        from zarrlake.review.feed import changes

        return changes(self._core, since, branch)
