"""Committing and rebasing a session's staged changes: conflict detection against what landed
since the session's base, automatic rebase, and the retry loop around the commit transaction.

Functions of explicit values (the core and a :class:`Staged` description), so the session
object keeps its own state and this module needs none of it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from zarrlake.core import BuiltCommit, RepoCore, publish_commit
from zarrlake.errors import (
    CommitTimeoutError,
    Conflict,
    ConflictError,
    ConflictKind,
    EmptyCommitError,
    InvalidInputError,
    NotFoundError,
    SessionClosedError,
)
from zarrlake.model import (
    ChangeSet,
    ChunkRef,
    ReadSet,
    Root,
    Solver,
    StagedState,
    changes_from_staged,
    detect_conflicts,
    rebase_staged,
)
from zarrlake.model.records import CommitRecord, StagedEntry

__all__ = ["Staged", "check_idempotency_key", "commit_staged", "rebase_onto"]

_MAX_KEY = 256

ReadSetLoader = Callable[[], tuple[ReadSet | None, frozenset[str] | None]]


@dataclass(frozen=True, slots=True)
class Staged:
    """What a session is committing: its identity, base, and staged changes."""

    session_id: str
    branch: str
    author: str
    base_commit: str
    base_root: Root
    state: StagedState
    read_set: ReadSetLoader  # (nodes, raw keys) a serializable session read; else (None, None)
    base_row: CommitRecord | None = None  # the base commit's record, when the session has it
    unsent: tuple[StagedEntry, ...] = ()  # rows of ``state`` the commit transaction stages


def check_idempotency_key(key: object) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > _MAX_KEY:
        raise InvalidInputError(
            f"idempotency_key must be a non-empty string of at most {_MAX_KEY} characters"
        )
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in key):
        raise InvalidInputError("idempotency_key must not contain control characters or surrogates")
    return key


def load_read_set(core: RepoCore, session_id: str) -> tuple[ReadSet, frozenset[str]]:
    """What a serializable session recorded as read (durable reads only)."""
    return core.catalog.sessions.load_reads(session_id)


def _head_row(core: RepoCore, s: Staged) -> CommitRecord:
    row = core.catalog.refs.head(s.branch)
    if row is None:
        raise SessionClosedError(f"branch {s.branch!r} of session {s.session_id} no longer exists")
    return row


def _their_changes(core: RepoCore, base: str, head: str) -> list[tuple[str, ChangeSet]] | None:
    between = core.catalog.commits.between(base, head)
    if between is None:
        return None
    reader = core.reader
    return [
        (c.id, reader.changes(c.changes_hash) if c.changes_hash else ChangeSet()) for c in between
    ]


def conflicts_with(core: RepoCore, s: Staged, head: str) -> list[Conflict]:
    """Every conflict between the staged changes and the commits since the session's base."""
    theirs = _their_changes(core, s.base_commit, head)
    if theirs is None:
        return [
            Conflict(
                ConflictKind.HISTORY,
                "",
                None,
                head,
                f"branch {s.branch!r} was reset and no longer contains base commit {s.base_commit}",
            )
        ]
    ours = changes_from_staged(s.base_root, s.state, core.reader)
    return detect_conflicts(ours, theirs, *s.read_set())


def _refuse(solver: Solver, conflicts: list[Conflict]) -> bool:
    return bool(conflicts) and (
        solver == "fail" or any(c.kind == ConflictKind.HISTORY for c in conflicts)
    )


def _advice(conflicts: list[Conflict]) -> str:
    if any(c.kind == ConflictKind.READ for c in conflicts):
        return (
            "Data this session read has changed since: abandon the session and redo its work "
            "on the new head (a solver would commit writes computed from stale reads)"
        )
    return "Resolve with session.rebase('ours'|'theirs'), or abandon the session"


def recorded_commit(core: RepoCore, s: Staged, key: str) -> str | None:
    """If a commit with idempotency ``key`` is on the branch, close the session as committed
    by it (in the catalog) and return its id."""
    found = core.catalog.commits.recorded_key(s.branch, key)
    if found is not None:
        core.catalog.sessions.close_as(s.session_id, found)
    return found


def commit_staged(
    core: RepoCore,
    s: Staged,
    message: str,
    *,
    metadata: dict[str, Any],
    allow_empty: bool,
    solver: Solver,
    timeout: float,
    idempotency_key: str | None,
) -> BuiltCommit:
    """Commit ``s`` on its branch, rebasing over non-conflicting commits until ``timeout``."""
    deadline = time.monotonic() + timeout
    attempt = 0
    # The first attempt assumes the branch is still at the session's base (the common case)
    # and reads no head: the compare-and-swap of the commit transaction checks it anyway. If
    # the branch moved (or is gone), the head is read and the usual way taken, at once.
    hopeful = s.base_row is not None and s.base_row.id == s.base_commit
    while True:
        if hopeful:
            assert s.base_row is not None
            head_row, head_root = s.base_row, s.base_root
        else:
            head_row = _head_row(core, s)
            head_root = core.reader.root(head_row.root_hash)
        head = head_row.id
        staged = s.state
        extra: dict[bytes, tuple[str, bytes]] = {}
        if head != s.base_commit:
            conflicts = conflicts_with(core, s, head)
            if _refuse(solver, conflicts):
                # a retry of the same job that committed meanwhile conflicts with its own
                # data: its key, not the conflict, decides
                if idempotency_key is not None:
                    found = recorded_commit(core, s, idempotency_key)
                    if found is not None:
                        return BuiltCommit(found, None)
                raise ConflictError(
                    f"cannot commit session {s.session_id} to {s.branch!r}: it conflicts with "
                    f"commits made since its base {s.base_commit[:10]}. {_advice(conflicts)}",
                    conflicts,
                )
            staged, extra = rebase_staged(
                s.state, s.base_root, head_root, conflicts, solver, core.reader
            )
        try:
            built = publish_commit(
                core,
                branch=s.branch,
                head=head_row,
                head_root=head_root,
                staged=staged,
                extra_blobs=extra,
                parents=(head, None),
                generation=head_row.generation + 1,
                author=s.author,
                message=message,
                metadata=metadata,
                allow_empty=allow_empty,
                empty_message=f"session {s.session_id} changes nothing against {s.branch!r} "
                "(allow_empty=True records it anyway)",
                session_id=s.session_id,
                staging=s.unsent,
                idempotency_key=idempotency_key,
            )
        except EmptyCommitError:
            if hopeful:  # empty against the base: what counts is the head
                hopeful = False
                continue
            # a retry of a commit that landed meanwhile changes nothing: its key decides
            if idempotency_key is not None:
                found = recorded_commit(core, s, idempotency_key)
                if found is not None:
                    return BuiltCommit(found, None)
            raise
        except NotFoundError:
            if not hopeful:
                raise
            hopeful = False  # the branch is gone: reading its head says so
            continue
        if built is not None:
            return built
        if hopeful:  # the branch moved since the base: no wait, nothing lost
            hopeful = False
            continue
        attempt += 1
        if idempotency_key is not None:
            found = recorded_commit(core, s, idempotency_key)
            if found is not None:  # a racing commit with the same key won
                return BuiltCommit(found, None)
        if time.monotonic() >= deadline:
            raise CommitTimeoutError(
                f"commit of session {s.session_id} lost the race for {s.branch!r} {attempt} "
                f"times in {timeout:.0f} s; try again or raise the timeout",
                branch=s.branch,
                attempts=attempt,
                timeout=timeout,
            )
        time.sleep(random.uniform(0, min(0.25, 0.002 * 2 ** min(attempt, 8))))


def rebase_onto(core: RepoCore, s: Staged, solver: Solver) -> str:
    """Record in the catalog ``s``'s staged changes rebased onto its branch's head; returns
    the new base commit (the session then reloads its view)."""
    head_row = _head_row(core, s)
    head = head_row.id
    if head == s.base_commit:
        return head
    conflicts = conflicts_with(core, s, head)
    if _refuse(solver, conflicts):
        raise ConflictError(f"cannot rebase session {s.session_id} onto {head[:10]}", conflicts)
    head_root = core.reader.root(head_row.root_hash)
    new_state, extra = rebase_staged(
        s.state, s.base_root, head_root, conflicts, solver, core.reader
    )
    if extra:
        core.catalog.nodes.put(extra)
    core.catalog.sessions.replace_staged(s.session_id, list(state_entries(new_state)), head)
    return head


def state_entries(state: StagedState) -> Iterable[StagedEntry]:
    """The staged entries that stage ``state`` (batches as the chunks they hold)."""
    for path, sn in state.expanded().nodes.items():
        if sn.dropped:
            yield StagedEntry(path, "drop")
        if sn.meta is not None:
            yield StagedEntry(path, "meta", ref=ChunkRef(sn.meta, 0))
        for coords, ref in sn.chunks.items():
            yield StagedEntry(path, "chunk", coords, ref=ref)
    for key, ref in state.raw.items():
        yield StagedEntry("", "raw", key=key, ref=ref)


def has_objects(state: StagedState) -> bool:
    """Whether any staged ref names an object in the object store (not inline bytes, nor a
    virtual reference)."""
    refs = [r for sn in state.nodes.values() for r in sn.chunks.values()]
    refs.extend(state.raw.values())
    return any(r is not None and r.inline is None and r.source is None for r in refs)
