"""History operations on a repo core: ref expressions, diff, merge and revert.

``Repo`` exposes these as methods; the pure parts (diffing snapshots, planning a three-way
merge, the merge base walk, the ref expression grammar) live in :mod:`zarrlake.model`.
"""

from __future__ import annotations

import random
import time
from typing import Any

from zarrlake.catalog import CommitRow
from zarrlake.core import RepoCore, publish_commit
from zarrlake.errors import (
    CommitTimeoutError,
    Conflict,
    ConflictError,
    ConflictKind,
    InvalidInputError,
    InvalidRefError,
    NotFoundError,
)
from zarrlake.model import Root, StagedState, check_solver
from zarrlake.model.diff import Diff, diff_roots
from zarrlake.model.graph import merge_base as _walk_merge_base
from zarrlake.model.merge import plan_merge
from zarrlake.model.refexpr import RefExpr, parse_ref_expr
from zarrlake.types import validate_metadata, validate_name, validate_text

__all__ = ["diff", "merge", "merge_base", "resolve_ref", "revert"]

_COMMIT_PREFIX_MIN = 4


# -- ref expressions ---------------------------------------------------------------------------


def _lookup_base(core: RepoCore, name: str) -> str:
    """A branch, tag, commit id or unique commit id prefix."""
    hexlike = _COMMIT_PREFIX_MIN <= len(name) <= 40 and all(c in "0123456789abcdef" for c in name)
    found = core.catalog.lookup(core.repo_id, name, prefix=hexlike)
    ref = [c for what, c in found if what == "ref"]
    if ref:
        return ref[0]  # refs first, as git does
    if hexlike:
        matches = [c for what, c in found if what == "commit"]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise InvalidRefError(f"commit prefix {name!r} is ambiguous; give more characters")
    raise NotFoundError(
        f"no branch, tag or commit {name!r} in repo {core.name!r}; "
        f"branches: {sorted(core.catalog.list_refs(core.repo_id, 'branch'))}, "
        f"tags: {sorted(core.catalog.list_refs(core.repo_id, 'tag'))}"
    )


def _from_reflog(core: RepoCore, expr: RefExpr, text: str) -> str:
    cat = core.catalog
    if expr.position is not None:
        row = cat.reflog_position(core.repo_id, expr.base, expr.position)
        if row is None:
            total = len(cat.reflog(core.repo_id, expr.base))
            if total == 0:
                raise NotFoundError(f"{text!r}: {expr.base!r} has no ref log (is it a ref?)")
            raise NotFoundError(
                f"{text!r}: the ref log of {expr.base!r} holds only {total} position(s) "
                f"(@{{0}} to @{{{total - 1}}})"
            )
        if row.new_commit is None:
            raise NotFoundError(f"{text!r}: {expr.base!r} was deleted at that position")
        return row.new_commit
    assert expr.at is not None
    found = cat.ref_at(core.repo_id, expr.base, expr.at.timestamp())  # slack: see ref_at
    if found is None:
        raise NotFoundError(
            f"{text!r}: {expr.base!r} did not exist (or was deleted) at {expr.at.isoformat()}"
        )
    return found


def _parent(core: RepoCore, commit: str, n: int, text: str) -> str:
    if n == 0:
        return commit
    row = core.catalog.get_commit(core.repo_id, commit)
    parents = [p for p in (row.parent_id, row.merge_parent_id) if p]
    if n > len(parents):
        raise NotFoundError(f"{text!r}: commit {commit[:10]} has {len(parents)} parent(s)")
    return parents[n - 1]


def resolve_ref(core: RepoCore, text: object) -> str:
    """The commit id a ref expression names (see :mod:`zarrlake.model.refexpr`).

    Raises :class:`InvalidRefError` when the expression is malformed or a prefix ambiguous,
    :class:`NotFoundError` when it names nothing.
    """
    expr = parse_ref_expr(text)
    assert isinstance(text, str)
    if not expr.steps and not expr.uses_reflog:
        return _lookup_base(core, expr.base)  # the common case: one query
    commit = _from_reflog(core, expr, text) if expr.uses_reflog else _lookup_base(core, expr.base)
    for step in expr.steps:
        if step.kind == "^":
            commit = _parent(core, commit, step.n, text)
            continue
        found = core.catalog.nth_ancestor(core.repo_id, commit, step.n)
        if found is None:
            raise NotFoundError(
                f"{text!r}: the first-parent history of {commit[:10]} is less than {step.n} "
                "commits deep (or was expired)"
            )
        commit = found
    return commit


# -- merge base --------------------------------------------------------------------------------


def merge_base(core: RepoCore, a: str, b: str) -> str | None:
    """The best common ancestor of two commits (``None`` if they share no history)."""
    if a == b:
        return a
    cat = core.catalog
    ga = cat.get_commit(core.repo_id, a).generation
    gb = cat.get_commit(core.repo_id, b).generation
    return _walk_merge_base(
        a, ga, b, gb, lambda heads, low: cat.commit_graph(core.repo_id, heads, low)
    )


# -- diff and status ---------------------------------------------------------------------------


def _root(core: RepoCore, commit: str) -> tuple[CommitRow, Root]:
    row = core.catalog.get_commit(core.repo_id, commit)
    return row, core.reader.root(row.root_hash)


def diff(core: RepoCore, a: str, b: str) -> Diff:
    """What changed from ref ``a`` to ref ``b``."""
    ca, cb = resolve_ref(core, a), resolve_ref(core, b)
    _, ra = _root(core, ca)
    _, rb = _root(core, cb)
    return diff_roots(ra, rb, core.reader, labels=(ca, cb))


# -- merge and revert --------------------------------------------------------------------------


def _branch_head(core: RepoCore, branch: str) -> str:
    found = core.catalog.get_ref(core.repo_id, branch)
    if found is None or found[0] != "branch":
        branches = sorted(core.catalog.list_refs(core.repo_id, "branch"))
        raise NotFoundError(f"no branch {branch!r}; branches: {branches}")
    return found[1]


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
    head: CommitRow,
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
    )
    return None if built is None else built.id


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
) -> str:
    """Merge ref ``source`` into ``branch``; returns the branch's new head."""
    strategy = check_solver(solver)
    if message is not None:
        validate_text(message, "merge message")
    metadata = validate_metadata(metadata)
    into = validate_name(branch, "branch name")
    src = resolve_ref(core, source)
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        head = _branch_head(core, into)
        base = merge_base(core, head, src)
        if base is None:
            raise ConflictError(
                f"cannot merge {source!r} into {into!r}: they share no history "
                "(or the common history was expired)",
                [Conflict(ConflictKind.HISTORY, "", None, src, "no common ancestor")],
            )
        if base == src:
            return head  # already merged: nothing to do
        if base == head and fast_forward:
            note = message or f"fast-forward {into} to {source}"
            if core.catalog.move_branch(core.repo_id, into, head, src, author, "merge", note):
                return src
        else:
            head_row, head_root = _root(core, head)
            src_row, src_root = _root(core, src)
            _, base_root = _root(core, base)
            plan = plan_merge(
                base_root, head_root, src_root, core.reader, target_id=head, solver=strategy
            )
            if plan.conflicts and strategy == "fail":
                raise ConflictError(
                    f"cannot merge {source!r} into {into!r}: both changed the same data since "
                    f"their common ancestor {base[:10]}. Merge with solver='ours' (keep "
                    f"{into!r}) or 'theirs' (take {source!r}), or change one side first",
                    plan.conflicts,
                )
            done = _apply(
                core,
                branch=into,
                head=head_row,
                head_root=head_root,
                plan_blobs=plan.blobs,
                staged=plan.staged,
                parents=(head, src),
                generation=max(head_row.generation, src_row.generation) + 1,
                author=author,
                message=message or f"Merge {source} into {into}",
                metadata=dict(metadata or {}),
                require=(head, src, base),
                action="merge",
                allow_empty=True,
            )
            if done is not None:
                return done
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
    target_row, target_root = _root(core, target)
    if target_row.parent_id is None:
        raise InvalidInputError(f"commit {target[:10]} is the first of the repo; nothing to revert")
    parent = target_row.parent_id
    try:
        _, parent_root = _root(core, parent)
    except NotFoundError:
        raise NotFoundError(
            f"cannot revert {target[:10]}: its parent {parent[:10]} was expired"
        ) from None
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        head = _branch_head(core, branch)
        head_row, head_root = _root(core, head)
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
