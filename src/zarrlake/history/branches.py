"""Branches and tags: create, delete, reset (by compare-and-swap), the ref log, and where a
branch was at a time."""

from __future__ import annotations

from datetime import datetime

from zarrlake.core import RepoCore
from zarrlake.errors import NotFoundError, RefMovedError
from zarrlake.history.refs import resolve_ref
from zarrlake.types import (
    RefLogEntry,
    check_limit,
    did_you_mean,
    in_words,
    to_timestamp,
    validate_name,
)

__all__ = [
    "commit_at",
    "create_ref",
    "delete_ref",
    "list_refs",
    "ref_commit",
    "reflog",
    "reset_branch",
]


def list_refs(core: RepoCore, kind: str) -> dict[str, str]:
    """Branch (or tag) name -> commit id."""
    return core.catalog.refs.all(kind)


def _missing(core: RepoCore, name: str, kind: str) -> NotFoundError:
    """No branch (or tag) ``name``: the error names the close ones and lists the others."""
    names = list_refs(core, kind)
    plural = "branches" if kind == "branch" else "tags"
    return NotFoundError(
        f"no {kind} {name!r}{did_you_mean(name, names)} ({plural}: {in_words(names)})"
    )


def ref_commit(core: RepoCore, name: str, kind: str) -> str:
    """The commit a branch or tag points to now; :class:`NotFoundError` naming the others."""
    validate_name(name, f"{kind} name")
    found = core.catalog.refs.get(name)
    if found is None or found[0] != kind:
        raise _missing(core, name, kind)
    return found[1]


def create_ref(core: RepoCore, name: str, kind: str, ref: str, author: str) -> str:
    """Create a branch or tag at ``ref``; returns its commit id."""
    validate_name(name, f"{kind} name")
    commit = resolve_ref(core, ref)
    core.catalog.refs.create(name, kind, commit, author)
    return commit


def _refuse_protected(core: RepoCore, branch: str, what: str) -> None:
    """Refuse ``what`` on a protected branch. The gate is loaded here, when a branch is
    deleted or reset, with the checks it runs: reading history needs neither."""
    from zarrlake.core.gate import refuse_protected

    refuse_protected(core, branch, what)


def delete_ref(core: RepoCore, name: str, kind: str, author: str) -> str:
    """Delete a branch or tag; returns the commit it pointed to."""
    validate_name(name, f"{kind} name")
    found = core.catalog.refs.get(name)
    if found is None or found[0] != kind:
        raise _missing(core, name, kind)
    if kind == "branch":
        _refuse_protected(core, name, "deleting it")
    return core.catalog.refs.delete(name, kind, author)


def reset_branch(
    core: RepoCore, name: str, to: str, expected: str | None, author: str, message: str
) -> str:
    """Point a branch at another commit by compare-and-swap; returns the commit."""
    validate_name(name, "branch name")
    _refuse_protected(core, name, "a reset")
    target = resolve_ref(core, to)
    current = core.catalog.refs.get(name)
    if current is None or current[0] != "branch":
        raise _missing(core, name, "branch")
    old = resolve_ref(core, expected) if expected is not None else current[1]
    if not core.catalog.refs.move(name, old, target, author, "reset", message):
        now = core.catalog.refs.get(name)
        raise RefMovedError(
            f"branch {name!r} is not at {old[:10]} any more (someone moved it); "
            "read its head again and retry",
            ref=name,
            expected=old,
            actual=None if now is None else now[1],
        )
    return target


def reflog(core: RepoCore, name: str, limit: int | None) -> list[RefLogEntry]:
    """Every move of a branch or tag, newest first."""
    validate_name(name, "ref name")
    return core.catalog.refs.log(name, check_limit(limit))


def commit_at(core: RepoCore, branch: str, when: datetime) -> str:
    """The commit that was the head of ``branch`` at time ``when`` (naive times are UTC)."""
    validate_name(branch, "branch name")
    ts = to_timestamp(when, "as_of")
    found = core.catalog.refs.at(branch, ts)
    if found is None:
        raise NotFoundError(
            f"branch {branch!r} did not exist (or was deleted) at {when.isoformat()}"
        )
    return found
