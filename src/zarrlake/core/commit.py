"""The commit transaction: build a snapshot from a head and staged changes, insert it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zarrlake.core.gate import CHECKS_KEY, PULL_KEY, judge, load_gate
from zarrlake.core.proposal import Proposal
from zarrlake.core.repo_core import RepoCore
from zarrlake.core.webhooks import deliver
from zarrlake.errors import EmptyCommitError
from zarrlake.model import ChangeSet, Root, StagedState, build_snapshot, content_hash
from zarrlake.model.overlay import Overlay
from zarrlake.model.records import CommitRecord, StagedEntry
from zarrlake.types import new_commit_id

__all__ = ["BuiltCommit", "publish_commit"]


@dataclass(frozen=True, slots=True)
class BuiltCommit:
    """A commit that landed: its id, and the snapshot root it made (``None`` when an
    idempotency key returned a commit recorded earlier)."""

    id: str
    root: Root | None


def publish_commit(
    core: RepoCore,
    *,
    branch: str,
    head: CommitRecord,
    head_root: Root,
    staged: StagedState,
    extra_blobs: Mapping[bytes, tuple[str, bytes]],
    parents: tuple[str, str | None],
    generation: int,
    author: str,
    message: str,
    metadata: dict[str, Any],
    allow_empty: bool,
    empty_message: str,
    session_id: str | None = None,
    staging: Sequence[StagedEntry] = (),
    require: Sequence[str] = (),
    action: str = "commit",
    idempotency_key: str | None = None,
    event: str = "commit",
    pull: int | None = None,
) -> BuiltCommit | None:
    """Apply ``staged`` to ``head_root`` and commit it on ``branch`` if the branch is still
    at ``head``; ``None`` if it moved (the caller rebases and retries).

    ``extra_blobs`` are nodes the staged changes reference that are not stored yet (merged
    metadata documents of a rebase or merge); ``staging``, rows of session ``session_id``
    in ``staged`` that the session has not staged yet (the commit's transaction does).

    Before the branch moves, the branch's gate runs (:mod:`.gate`): a protected branch
    refuses a direct ``event`` (``"commit"`` or ``"merge"``) unless it merges pull request
    ``pull``, and the checks that apply judge the would-be commit; their results are
    recorded in its metadata. A refusal raises and changes nothing.
    """
    gate = load_gate(core, branch, event, pull=pull is not None)
    reader = core.reader
    for h, (kind, data) in extra_blobs.items():
        reader.prime(h, kind, data)  # the snapshot builder reads them before they are stored
    result = build_snapshot(head_root, staged, reader)
    if result.changes.is_empty() and not allow_empty:
        raise EmptyCommitError(empty_message)
    if gate.checks:
        proposal = Proposal(
            core,
            branch=branch,
            event=event,
            before=head_root,
            after=result.root,
            reader=Overlay(reader, {**extra_blobs, **result.blobs}, result.staged),
            changes=result.changes,
        )
        metadata = {**metadata, **judge(gate, proposal)[1]}
    if pull is not None:
        metadata = {**metadata, PULL_KEY: pull}
    changes = result.changes.encode()
    ch = content_hash(changes)
    row = CommitRecord(
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
    blobs = {**extra_blobs, **result.blobs, ch: ("changes", changes)}
    done = core.catalog.writer.publish(
        branch,
        head.id,
        row,
        blobs,
        session_id=session_id,
        staging=staging,
        staged_shards=list(result.staged),
        require=require,
        action=action,
        idempotency_key=idempotency_key,
        pull=pull,
    )
    if done is None:
        return None
    if done != row.id:
        return BuiltCommit(done, None)
    if gate.hooks:
        deliver(gate.hooks, event, _event_payload(core, branch, row, result.changes))
    for h, (kind, data) in blobs.items():
        if kind not in ("root", "changes"):
            reader.prime(h, kind, data)
    reader.prime_root(result.root_hash, result.root)
    reader.prime_changes(ch, result.changes)
    return BuiltCommit(row.id, result.root)


def _event_payload(
    core: RepoCore, branch: str, row: CommitRecord, changes: ChangeSet
) -> dict[str, Any]:
    """What a webhook is told of a commit that landed."""
    return {
        "repo": core.name,
        "branch": branch,
        "commit": row.id,
        "parents": [p for p in (row.parent_id, row.merge_parent_id) if p],
        "author": row.author,
        "message": row.message,
        "checks": row.meta.get(CHECKS_KEY, {}),
        "pull_request": row.meta.get(PULL_KEY),
        "arrays": {
            p: len(c.chunks) for p, c in sorted(changes.nodes.items()) if c.node_type == "array"
        },
    }
