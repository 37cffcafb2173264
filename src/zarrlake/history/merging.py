"""Merge (and its dry run) and revert: session-less commits built from three-way plans."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from typing import Any

from zarrlake.core import RepoCore, publish_commit
from zarrlake.core.gate import load_gate
from zarrlake.core.proposal import Proposal
from zarrlake.errors import (
    CommitTimeoutError,
    Conflict,
    ConflictError,
    ConflictKind,
    InvalidInputError,
    NotFoundError,
    RefMovedError,
)
from zarrlake.history.commits import branch_head, commit_root, diff, merge_base
from zarrlake.history.refs import resolve_ref
from zarrlake.model import Root, Solver, StagedState, build_snapshot, check_solver
from zarrlake.model.diff import Diff, diff_roots
from zarrlake.model.merge import MergePlan, plan_merge
from zarrlake.model.overlay import Overlay
from zarrlake.model.preview import MergeOutcome, MergePreview
from zarrlake.model.records import CommitRecord
from zarrlake.types import validate_metadata, validate_name, validate_text

__all__ = ["merge", "merge_proposal", "preview_merge", "revert"]


def _backoff(attempt: int, deadline: float, what: str, timeout: float, branch: str) -> None:
    if time.monotonic() >= deadline:
        raise CommitTimeoutError(
            f"{what} lost the race for the branch {attempt} times in {timeout:.0f} s; "
            "try again or raise the timeout",
            branch=branch,
            attempts=attempt,
            timeout=timeout,
        )
    time.sleep(random.uniform(0, min(0.25, 0.002 * 2 ** min(attempt, 8))))


def _apply(
    core: RepoCore,
    *,
    branch: str,
    head: CommitRecord,
    head_root: Root,
    plan_blobs: dict[bytes, tuple[str, bytes]],
    staged: StagedState,
    parents: tuple[str, str | None],
    generation: int,
    author: str,
    message: str,
    metadata: dict[str, Any],
    require: tuple[str, ...],
    action: str,
    allow_empty: bool,
    pull: int | None = None,
) -> str | None:
    """Build and insert one session-less commit; ``None`` if the branch moved meanwhile."""
    built = publish_commit(
        core,
        branch=branch,
        head=head,
        head_root=head_root,
        staged=staged,
        extra_blobs=plan_blobs,
        parents=parents,
        generation=generation,
        author=author,
        message=message,
        metadata=metadata,
        allow_empty=allow_empty,
        empty_message=f"this {action} changes nothing on branch {branch!r}",
        require=require,
        action=action,
        event="merge" if action == "merge" else "commit",
        pull=pull,
    )
    return None if built is None else built.id


@dataclass(frozen=True, slots=True)
class _MergeState:
    """A merge computed against the target's current head, stopped before publishing."""

    head: CommitRecord
    head_root: Root
    source: CommitRecord
    base: str | None
    outcome: MergeOutcome
    conflicts: list[Conflict]
    plan: MergePlan | None  # a three-way merge's plan (None: up to date or fast-forward)


def _merge_state(
    core: RepoCore, src: str, into: str, solver: Solver, fast_forward: bool
) -> _MergeState:
    head_row = branch_head(core, into)
    head_root = core.reader.root(head_row.root_hash)
    src_row = core.catalog.commits.get(src)
    base = merge_base(core, head_row.id, src)
    if base is None:
        history = Conflict(ConflictKind.HISTORY, "", None, src, "no common ancestor")
        return _MergeState(head_row, head_root, src_row, None, "merge", [history], None)
    if base == src:
        return _MergeState(head_row, head_root, src_row, base, "up-to-date", [], None)
    if base == head_row.id and fast_forward:
        return _MergeState(head_row, head_root, src_row, base, "fast-forward", [], None)
    _, base_root = commit_root(core, base)
    src_root = core.reader.root(src_row.root_hash)
    plan = plan_merge(
        base_root, head_root, src_root, core.reader, target_id=head_row.id, solver=solver
    )
    return _MergeState(head_row, head_root, src_row, base, "merge", plan.conflicts, plan)


def _refuse_merge(st: _MergeState, source: str, into: str, solver: str) -> None:
    if st.base is None:
        raise ConflictError(
            f"cannot merge {source!r} into {into!r}: they share no history "
            "(or the common history was expired)",
            st.conflicts,
        )
    if st.conflicts and solver == "fail":
        raise ConflictError(
            f"cannot merge {source!r} into {into!r}: both changed the same data since "
            f"their common ancestor {st.base[:10]}. Merge with solver='ours' (keep "
            f"{into!r}) or 'theirs' (take {source!r}), or change one side first",
            st.conflicts,
        )


def preview_merge(
    core: RepoCore, source: str, branch: str, *, solver: str, fast_forward: bool
) -> MergePreview:
    """What :func:`merge` would do now: the same computation, stopped before publishing."""
    strategy = check_solver(solver)
    into = validate_name(branch, "branch name")
    src = resolve_ref(core, source)
    st = _merge_state(core, src, into, strategy, fast_forward)
    head = st.head.id
    preview = MergePreview(
        source, into, src, head, st.base, st.outcome, strategy, tuple(st.conflicts)
    )
    reader = core.reader
    if st.outcome == "up-to-date":
        return replace(preview, changes=Diff(before=head, after=head))
    if st.outcome == "fast-forward":
        return replace(preview, changes=diff(core, head, src))
    if st.base is None or st.plan is None:
        return preview
    base_root = commit_root(core, st.base)[1]
    src_root = reader.root(st.source.root_hash)
    preview = replace(
        preview,
        ours=diff_roots(base_root, st.head_root, reader, labels=(st.base, head)),
        theirs=diff_roots(base_root, src_root, reader, labels=(st.base, src)),
    )
    if preview.refused:
        return preview
    overlay = Overlay(reader, st.plan.blobs)
    built = build_snapshot(st.head_root, st.plan.staged, overlay)
    after = Overlay(reader, {**st.plan.blobs, **built.blobs}, built.staged)
    changes = diff_roots(st.head_root, built.root, after, labels=(head, None))
    return replace(preview, changes=changes)


def merge_proposal(core: RepoCore, source: str, branch: str) -> Proposal | None:
    """The merge commit a merge of commit ``source`` into ``branch`` would make now (never a
    fast-forward), as checks see it; ``None`` if it would be refused (conflicts, no common
    history) or is already merged."""
    st = _merge_state(core, source, branch, "fail", False)
    if st.plan is None or st.conflicts:
        return None
    overlay = Overlay(core.reader, st.plan.blobs)
    built = build_snapshot(st.head_root, st.plan.staged, overlay)
    return Proposal(
        core,
        branch=branch,
        event="merge",
        before=st.head_root,
        after=built.root,
        reader=Overlay(core.reader, {**st.plan.blobs, **built.blobs}, built.staged),
        changes=built.changes,
    )


def merge(
    core: RepoCore,
    source: str,
    branch: str,
    *,
    solver: str,
    message: str | None,
    author: str,
    metadata: dict[str, Any] | None,
    fast_forward: bool,
    timeout: float,
    pull: int | None = None,
) -> str:
    """Merge ref ``source`` into ``branch``; returns the branch's new head.

    The branch's gate (:mod:`zarrlake.core.gate`) refuses a direct merge into a protected
    branch; when checks apply to the merge, it is never a fast-forward, so that the merge
    commit records their results. ``pull``: the pull request this merges; then the merge is
    made once, against the branch's head as it is now, and :class:`RefMovedError` is raised
    if another commit lands first (the pull request must be updated and merged again).
    """
    strategy = check_solver(solver)
    if message is not None:
        validate_text(message, "merge message")
    metadata = validate_metadata(metadata)
    into = validate_name(branch, "branch name")
    src = resolve_ref(core, source)
    gate = load_gate(core, into, "merge", pull=pull is not None, hooks=False)
    if gate.checks or pull is not None:
        fast_forward = False
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        st = _merge_state(core, src, into, strategy, fast_forward)
        head = st.head.id
        _refuse_merge(st, source, into, strategy)
        if st.outcome == "up-to-date":
            return head  # already merged: nothing to do
        if st.outcome == "fast-forward":
            note = message or f"fast-forward {into} to {source}"
            if core.catalog.refs.move(into, head, src, author, "merge", note):
                return src
        else:
            assert st.plan is not None
            assert st.base is not None
            done = _apply(
                core,
                branch=into,
                head=st.head,
                head_root=st.head_root,
                plan_blobs=st.plan.blobs,
                staged=st.plan.staged,
                parents=(head, src),
                generation=max(st.head.generation, st.source.generation) + 1,
                author=author,
                message=message or f"Merge {source} into {into}",
                metadata=dict(metadata or {}),
                require=(head, src, st.base),
                action="merge",
                allow_empty=True,
                pull=pull,
            )
            if done is not None:
                return done
            if pull is not None:
                now = core.catalog.refs.get(into)
                raise RefMovedError(
                    f"pull request #{pull} was not merged: {into!r} moved from {head[:10]} "
                    "while it was merging (another pull request or commit landed). Update the "
                    f"pull request: its checks must pass against the new head of {into!r}; "
                    "merge it again",
                    ref=into,
                    expected=head,
                    actual=None if now is None else now[1],
                )
        attempt += 1
        _backoff(attempt, deadline, f"merge of {source!r} into {into!r}", timeout, into)


def revert(
    core: RepoCore,
    commit: str,
    branch: str,
    *,
    message: str | None,
    author: str,
    metadata: dict[str, Any] | None,
    timeout: float,
) -> str:
    """Commit on ``branch`` the inverse of one commit's changes; returns the new commit."""
    if message is not None:
        validate_text(message, "revert message")
    metadata = validate_metadata(metadata)
    validate_name(branch, "branch name")
    target = resolve_ref(core, commit)
    target_row, target_root = commit_root(core, target)
    if target_row.parent_id is None:
        raise InvalidInputError(f"commit {target[:10]} is the first of the repo; nothing to revert")
    parent = target_row.parent_id
    try:
        _, parent_root = commit_root(core, parent)
    except NotFoundError:
        raise NotFoundError(
            f"cannot revert {target[:10]}: its parent {parent[:10]} was expired"
        ) from None
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        head_row = branch_head(core, branch)
        head, head_root = head_row.id, core.reader.root(head_row.root_hash)
        # The inverse of target's changes is "parent, seen from target": a three-way merge of
        # the parent into the head with the reverted commit as the common ancestor.
        plan = plan_merge(
            target_root, head_root, parent_root, core.reader, target_id=head, solver="fail"
        )
        if plan.conflicts:
            raise ConflictError(
                f"cannot revert {target[:10]} on {branch!r}: later commits changed the same "
                "data; revert those first or edit the data in a session",
                plan.conflicts,
            )
        done = _apply(
            core,
            branch=branch,
            head=head_row,
            head_root=head_root,
            plan_blobs=plan.blobs,
            staged=plan.staged,
            parents=(head, None),
            generation=head_row.generation + 1,
            author=author,
            message=message or f"Revert {target[:10]}: {target_row.message}",
            metadata={"reverts": target, **(metadata or {})},
            require=(head, target, parent),
            action="revert",
            allow_empty=False,
        )
        if done is not None:
            return done
        attempt += 1
        _backoff(attempt, deadline, f"revert of {target[:10]}", timeout, branch)
