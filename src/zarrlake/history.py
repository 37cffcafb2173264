"""History operations: ref expressions, diff, status, merge and revert.

``Repo`` and ``Session`` expose these as methods; the pure parts (diffing snapshots, planning a
three-way merge, the ref expression grammar) live in :mod:`zarrlake.model`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args

from zarrlake.catalog import CommitRow
from zarrlake.errors import (
    CommitTimeoutError,
    Conflict,
    ConflictError,
    EmptyCommitError,
    InvalidInputError,
    InvalidRefError,
    NotFoundError,
)
from zarrlake.model import (
    ManifestIndex,
    NodeMeta,
    Root,
    Shard,
    StagedState,
    build_snapshot,
    content_hash,
)
from zarrlake.model.changes import SnapshotReader
from zarrlake.model.diff import Diff, diff_roots
from zarrlake.model.merge import MergeStrategy, plan_merge
from zarrlake.model.refexpr import RefExpr, parse_ref_expr
from zarrlake.types import new_commit_id, validate_name

if TYPE_CHECKING:
    from zarrlake.repo import Repo
    from zarrlake.session import Session

__all__ = ["diff", "merge", "merge_base", "resolve_ref", "revert", "session_status"]

_COMMIT_PREFIX_MIN = 4


# -- ref expressions ---------------------------------------------------------------------------


def _lookup_base(repo: Repo, name: str) -> str:
    """A branch, tag, commit id or unique commit id prefix."""
    hexlike = _COMMIT_PREFIX_MIN <= len(name) <= 40 and all(c in "0123456789abcdef" for c in name)
    found = repo._catalog.lookup(repo._id, name, prefix=hexlike)
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
        f"no branch, tag or commit {name!r} in repo {repo.name!r}; "
        f"branches: {sorted(repo.branches())}, tags: {sorted(repo.tags())}"
    )


def _from_reflog(repo: Repo, expr: RefExpr, text: str) -> str:
    cat = repo._catalog
    if expr.position is not None:
        row = cat.reflog_position(repo._id, expr.base, expr.position)
        if row is None:
            total = len(cat.reflog(repo._id, expr.base))
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
    found = cat.ref_at(repo._id, expr.base, expr.at.timestamp())  # slack: see ref_at
    if found is None:
        raise NotFoundError(
            f"{text!r}: {expr.base!r} did not exist (or was deleted) at {expr.at.isoformat()}"
        )
    return found


def _parent(repo: Repo, commit: str, n: int, text: str) -> str:
    if n == 0:
        return commit
    row = repo._catalog.get_commit(repo._id, commit)
    parents = [p for p in (row.parent_id, row.merge_parent_id) if p]
    if n > len(parents):
        raise NotFoundError(f"{text!r}: commit {commit[:10]} has {len(parents)} parent(s)")
    return parents[n - 1]


def resolve_ref(repo: Repo, text: object) -> str:
    """The commit id a ref expression names (see :mod:`zarrlake.model.refexpr`).

    Raises :class:`InvalidRefError` when the expression is malformed or a prefix ambiguous,
    :class:`NotFoundError` when it names nothing.
    """
    expr = parse_ref_expr(text)
    assert isinstance(text, str)
    if not expr.steps and not expr.uses_reflog:
        return _lookup_base(repo, expr.base)  # the common case: one query
    commit = _from_reflog(repo, expr, text) if expr.uses_reflog else _lookup_base(repo, expr.base)
    for step in expr.steps:
        if step.kind == "^":
            commit = _parent(repo, commit, step.n, text)
            continue
        found = repo._catalog.nth_ancestor(repo._id, commit, step.n)
        if found is None:
            raise NotFoundError(
                f"{text!r}: the first-parent history of {commit[:10]} is less than {step.n} "
                "commits deep (or was expired)"
            )
        commit = found
    return commit


# -- merge base --------------------------------------------------------------------------------


def _reach(graph: Mapping[str, tuple[str | None, str | None, int]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        c = todo.pop()
        if c in seen or c not in graph:
            continue
        seen.add(c)
        p, q, _ = graph[c]
        todo.extend(x for x in (p, q) if x)
    return seen


def merge_base(repo: Repo, a: str, b: str) -> str | None:
    """The best common ancestor of two commits (``None`` if they share no history).

    Walks back from both in widening windows of generations, so the cost follows the distance
    to the common ancestor, not the length of the history. With several best common ancestors
    (criss-cross merges), the one of highest generation is chosen.
    """
    if a == b:
        return a
    cat = repo._catalog
    ga = cat.get_commit(repo._id, a).generation
    gb = cat.get_commit(repo._id, b).generation
    window = 64
    low = min(ga, gb) - window
    while True:
        graph = cat.commit_graph(repo._id, [a, b], max(low, 0))
        common = _reach(graph, a) & _reach(graph, b)
        if common:
            # Generations strictly decrease along parents, so the common ancestor of highest
            # generation is not an ancestor of another one: it is a best common ancestor.
            return max(common, key=lambda c: (graph[c][2], c))
        if low <= 0:
            return None
        low -= window
        window *= 4


# -- diff and status ---------------------------------------------------------------------------


class _Overlay:
    """A snapshot reader that also knows nodes not yet stored (a session's would-be commit)."""

    def __init__(self, reader: SnapshotReader, blobs: Mapping[bytes, tuple[str, bytes]]) -> None:
        self.reader = reader
        self.blobs = blobs

    def meta_bytes(self, h: bytes) -> bytes:
        found = self.blobs.get(h)
        return found[1] if found is not None else self.reader.meta_bytes(h)

    def node_meta(self, h: bytes) -> NodeMeta:
        return self.reader.node_meta(h)

    def index(self, h: bytes) -> ManifestIndex:
        found = self.blobs.get(h)
        return ManifestIndex.decode(found[1]) if found is not None else self.reader.index(h)

    def shard(self, h: bytes) -> Shard:
        found = self.blobs.get(h)
        return Shard.decode(found[1]) if found is not None else self.reader.shard(h)

    def prefetch_shards(self, hashes: Sequence[bytes]) -> None:
        self.reader.prefetch_shards([h for h in hashes if h not in self.blobs])


def _root(repo: Repo, commit: str) -> tuple[CommitRow, Root]:
    row = repo._catalog.get_commit(repo._id, commit)
    return row, repo._reader.root(row.root_hash)


def diff(repo: Repo, a: str, b: str) -> Diff:
    """What changed from ref ``a`` to ref ``b``."""
    ca, cb = repo.resolve(a), repo.resolve(b)
    _, ra = _root(repo, ca)
    _, rb = _root(repo, cb)
    return diff_roots(ra, rb, repo._reader, labels=(ca, cb))


def session_status(session: Session) -> Diff:
    """A session's uncommitted changes against its base commit."""
    base = session.base_commit
    if session.read_only:
        return Diff(before=base, after=base)
    state = session._staged_state()
    reader = session.repo._reader
    built = build_snapshot(session._base_root, state, reader)
    return diff_roots(
        session._base_root, built.root, _Overlay(reader, built.blobs), labels=(base, "staged")
    )


# -- merge and revert --------------------------------------------------------------------------


def _branch_head(repo: Repo, branch: str) -> str:
    found = repo._catalog.get_ref(repo._id, branch)
    if found is None or found[0] != "branch":
        raise NotFoundError(f"no branch {branch!r}; branches: {sorted(repo.branches())}")
    return found[1]


def _backoff(attempt: int, deadline: float, what: str, timeout: float) -> None:
    if time.monotonic() >= deadline:
        raise CommitTimeoutError(
            f"{what} lost the race for the branch {attempt} times in {timeout:.0f} s; "
            "try again or raise the timeout"
        )
    time.sleep(random.uniform(0, min(0.25, 0.002 * 2 ** min(attempt, 8))))


def _apply(
    repo: Repo,
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
    reader = repo._reader
    for h, (kind, data) in plan_blobs.items():
        reader.prime(h, kind, data)
    result = build_snapshot(head_root, staged, reader)
    if result.changes.is_empty() and not allow_empty:
        raise EmptyCommitError(f"this {action} changes nothing on branch {branch!r}")
    changes = result.changes.encode()
    ch = content_hash(changes)
    row = CommitRow(
        new_commit_id(),
        parents[0],
        parents[1],
        result.root_hash,
        ch,
        author,
        message,
        metadata,
        0.0,
        generation,
    )
    blobs = {**plan_blobs, **result.blobs, ch: ("changes", changes)}
    done = repo._catalog.insert_commit_checked(
        repo._id, branch, head.id, row, blobs, require=require, action=action
    )
    return None if done is None else row.id


def merge(
    repo: Repo,
    source: str,
    into: str,
    *,
    strategy: MergeStrategy,
    message: str | None,
    author: str,
    metadata: dict[str, Any] | None,
    fast_forward: bool,
    timeout: float,
) -> str:
    """Merge ref ``source`` into branch ``into``; returns the branch's new head."""
    if strategy not in get_args(MergeStrategy):
        raise InvalidInputError(f"strategy must be 'fail', 'ours' or 'theirs', got {strategy!r}")
    validate_name(into, "branch name")
    src = repo.resolve(source)
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        head = _branch_head(repo, into)
        base = merge_base(repo, head, src)
        if base is None:
            raise ConflictError(
                f"cannot merge {source!r} into {into!r}: they share no history "
                "(or the common history was expired)",
                [Conflict("history", "", None, src, "no common ancestor")],
            )
        if base == src:
            return head  # already merged: nothing to do
        if base == head and fast_forward:
            note = message or f"fast-forward {into} to {source}"
            if repo._catalog.move_branch(repo._id, into, head, src, author, "merge", note):
                return src
        else:
            head_row, head_root = _root(repo, head)
            src_row, src_root = _root(repo, src)
            _, base_root = _root(repo, base)
            plan = plan_merge(
                base_root, head_root, src_root, repo._reader, target_id=head, strategy=strategy
            )
            if plan.conflicts and strategy == "fail":
                raise ConflictError(
                    f"cannot merge {source!r} into {into!r}: both changed the same data since "
                    f"their common ancestor {base[:10]}. Merge with strategy='ours' (keep "
                    f"{into!r}) or 'theirs' (take {source!r}), or change one side first",
                    plan.conflicts,
                )
            done = _apply(
                repo,
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
        _backoff(attempt, deadline, f"merge of {source!r} into {into!r}", timeout)


def revert(
    repo: Repo,
    commit: str,
    branch: str,
    *,
    message: str | None,
    author: str,
    metadata: dict[str, Any] | None,
    timeout: float,
) -> str:
    """Commit on ``branch`` the inverse of one commit's changes; returns the new commit."""
    validate_name(branch, "branch name")
    target = repo.resolve(commit)
    target_row, target_root = _root(repo, target)
    if target_row.parent_id is None:
        raise InvalidInputError(f"commit {target[:10]} is the first of the repo; nothing to revert")
    parent = target_row.parent_id
    try:
        _, parent_root = _root(repo, parent)
    except NotFoundError:
        raise NotFoundError(
            f"cannot revert {target[:10]}: its parent {parent[:10]} was expired"
        ) from None
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        head = _branch_head(repo, branch)
        head_row, head_root = _root(repo, head)
        # The inverse of target's changes is "parent, seen from target": a three-way merge of
        # the parent into the head with the reverted commit as the common ancestor.
        plan = plan_merge(
            target_root, head_root, parent_root, repo._reader, target_id=head, strategy="fail"
        )
        if plan.conflicts:
            raise ConflictError(
                f"cannot revert {target[:10]} on {branch!r}: later commits changed the same "
                "data; revert those first or edit the data in a session",
                plan.conflicts,
            )
        done = _apply(
            repo,
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
        _backoff(attempt, deadline, f"revert of {target[:10]}", timeout)
