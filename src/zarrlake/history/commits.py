"""Commits seen from history operations: their snapshots, merge bases and diffs."""

from __future__ import annotations

from zarrlake.core import RepoCore
from zarrlake.errors import NotFoundError
from zarrlake.history.refs import resolve_refs
from zarrlake.model import Root
from zarrlake.model.diff import Diff, diff_roots
from zarrlake.model.graph import merge_base as _walk_merge_base
from zarrlake.model.records import CommitRecord
from zarrlake.types import CommitInfo, check_limit, did_you_mean, in_words

__all__ = [
    "branch_head",
    "commit_info",
    "commit_root",
    "commit_roots",
    "diff",
    "log",
    "merge_base",
]


def merge_base(core: RepoCore, a: str, b: str) -> str | None:
    """The best common ancestor of two commits (``None`` if they share no history)."""
    if a == b:
        return a
    cat = core.catalog
    ga = cat.commits.get(a).generation
    gb = cat.commits.get(b).generation
    return _walk_merge_base(a, ga, b, gb, lambda heads, low: cat.commits.window(heads, low))


def branch_head(core: RepoCore, branch: str) -> CommitRecord:
    """The head commit of a branch; :class:`NotFoundError` naming the branches there are."""
    head = core.catalog.refs.head(branch)
    if head is None:
        branches = core.catalog.refs.all("branch")
        raise NotFoundError(
            f"no branch {branch!r}{did_you_mean(branch, branches)} (branches: {in_words(branches)})"
        )
    return head


def commit_info(core: RepoCore, commit: str) -> CommitInfo:
    """One commit as the log shows it."""
    return core.catalog.commits.get(commit).info()


def log(core: RepoCore, head: str, limit: object) -> list[CommitInfo]:
    """``head`` and its first-parent ancestors, newest first."""
    return [r.info() for r in core.catalog.commits.ancestry(head, check_limit(limit))]


def commit_root(core: RepoCore, commit: str) -> tuple[CommitRecord, Root]:
    return commit_roots(core, commit)[0]


def commit_roots(core: RepoCore, *ids: str) -> list[tuple[CommitRecord, Root]]:
    """Commits with their snapshot roots: the commits and the roots not cached yet come in
    one query, their top documents in one more."""
    found = core.catalog.commits.with_roots(ids)
    for c in ids:
        if c not in found:
            raise NotFoundError(f"no commit {c!r} in this repo")
    core.reader.prime_roots(
        [(row.root_hash, data) for row, data in found.values() if data is not None]
    )
    return [(found[c][0], core.reader.root(found[c][0].root_hash)) for c in ids]


def diff(core: RepoCore, a: str, b: str) -> Diff:
    """What changed from ref ``a`` to ref ``b``."""
    ca, cb = resolve_refs(core, a, b)
    (_, ra), (_, rb) = commit_roots(core, ca, cb)
    return diff_roots(ra, rb, core.reader, labels=(ca, cb))
