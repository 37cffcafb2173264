"""The gate every commit passes before its branch moves: branch protection, then the checks
that apply to the branch and event, run on the would-be commit. A refused commit changes
nothing; a passed one records the checks' results in its metadata (``"checks"``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zarrlake.core.checks import run_checks
from zarrlake.core.proposal import Proposal
from zarrlake.core.repo_core import RepoCore
from zarrlake.errors import CheckFailedError, CheckFailure, ProtectedBranchError, PullRequestError
from zarrlake.model.rules import BranchRule, CheckResult, CheckSpec, Webhook

__all__ = ["CHECKS_KEY", "PULL_KEY", "Gate", "judge", "load_gate", "refuse_protected"]

CHECKS_KEY = "checks"  # commit metadata: check name -> result
PULL_KEY = "pull_request"  # commit metadata of a pull request's merge: its number


def _refusal(branch: str, what: str) -> ProtectedBranchError:
    return ProtectedBranchError(
        f"branch {branch!r} is protected: {what} is refused and nothing was changed. "
        f"Commit on another branch and open a pull request into {branch!r} "
        f"(repo.open_pull_request(source, {branch!r}, title=...) or zarrlake pr open)",
        branch=branch,
    )


@dataclass(frozen=True, slots=True)
class Gate:
    """What guards one branch for one event: the checks to run and its protection."""

    branch: str
    event: str
    checks: tuple[CheckSpec, ...]
    rule: BranchRule | None
    hooks: tuple[Webhook, ...] = ()


def load_gate(
    core: RepoCore, branch: str, event: str, *, pull: bool = False, hooks: bool = True
) -> Gate:
    """The gate of ``branch`` for ``event`` (one catalog read). A direct commit or merge on
    a protected branch is refused here; a pull request's merge (``pull``) also runs the
    branch's required checks, which must exist."""
    rules = core.catalog.rules.for_branch(branch, hooks=hooks)
    specs, rule = rules.checks, rules.rule
    if rule is not None and not rule.allow_direct_commits and not pull:
        raise _refusal(branch, "a direct commit" if event == "commit" else "a direct merge")
    run = [s for s in specs if s.applies(branch, event)]
    if pull and rule is not None:
        by_name = {s.name: s for s in specs}
        missing = [n for n in rule.required_checks if n not in by_name]
        if missing:
            raise PullRequestError(
                f"branch {branch!r} requires check(s) {', '.join(missing)}, which are not "
                "defined; add them (repo.add_check) or change the protection"
            )
        run += [by_name[n] for n in rule.required_checks if by_name[n] not in run]
    return Gate(branch, event, tuple(run), rule, rules.hooks)


def refuse_protected(core: RepoCore, branch: str, what: str) -> None:
    """Refuse a reset or delete of a protected branch."""
    if core.catalog.rules.for_branch(branch, hooks=False).rule is not None:
        raise _refusal(branch, what)


def judge(gate: Gate, proposal: Proposal) -> tuple[list[CheckResult], dict[str, Any]]:
    """Run the gate's checks on ``proposal``: their results and the metadata that records
    them; :class:`CheckFailedError` listing every failure if one did not pass."""
    if not gate.checks:
        return [], {}
    results = run_checks(proposal, gate.checks)
    failed = [r for r in results if not r.passed]
    if failed:
        what = "commit" if gate.event == "commit" else "merge"
        raise CheckFailedError(
            f"{len(failed)} of {len(results)} check{'' if len(results) == 1 else 's'} of branch "
            f"{gate.branch!r} refused the "
            f"{what}; nothing was changed",
            [CheckFailure(r.name, r.message, r.arrays, r.chunks or None) for r in failed],
        )
    return results, {CHECKS_KEY: {r.name: r.to_json() for r in results}}
