"""Commits seen from history operations: their snapshots, merge bases and diffs (the diff and
the graph walk load with the first diff or merge base: reading a commit needs neither)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from zarrlake.core import RepoCore
from zarrlake.errors import NotFoundError
from zarrlake.history.refs import resolve_with_commits
from zarrlake.model import Root
from zarrlake.model.records import CommitRecord
from zarrlake.types import CommitInfo, check_limit, did_you_mean, in_words

if TYPE_CHECKING:
    from zarrlake.model.changes import ChangeSet
    from zarrlake.model.diff import Diff

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
    from zarrlake.model.graph import merge_base as walk

    cat = core.catalog
    ga = cat.commits.get(a).generation
    gb = cat.commits.get(b).generation
    return walk(a, ga, b, gb, lambda heads, low: cat.commits.window(heads, low))


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
    return _with_roots(core, ids, core.catalog.commits.with_roots(ids))


def _with_roots(
    core: RepoCore,
    ids: Sequence[str],
    rows: Mapping[str, tuple[CommitRecord, bytes | None]],
    *,
    manifests: bool = True,
) -> list[tuple[CommitRecord, Root]]:
    for c in ids:
        if c not in rows:
            raise NotFoundError(f"no commit {c!r} in this repo")
    core.reader.prime_roots(
        [(row.root_hash, data) for row, data in rows.values() if data is not None],
        manifests=manifests,
    )
    return [(rows[c][0], core.reader.root(rows[c][0].root_hash)) for c in ids]


def diff(core: RepoCore, a: str, b: str) -> Diff:
    """What changed from ref ``a`` to ref ``b``.

    When one is a first-parent ancestor of the other (at most :data:`DIFF_CHAIN` commits
    apart), the chunks come from the change sets of the commits between (no manifest is
    read), except for a node they cannot answer for; otherwise the manifests are compared,
    skipping what they share.
    """
    from zarrlake.model.changes import all_exact
    from zarrlake.model.diff import diff_roots

    (ca, cb), found = resolve_with_commits(core, a, b)
    rows = {}
    for c, (row, root, changes_data) in found.items():
        rows[c] = (row, root)
        if changes_data is not None and row.changes_hash is not None:
            core.reader.prime(row.changes_hash, "changes", changes_data)
    if ca not in rows or cb not in rows:
        _with_roots(core, (ca, cb), rows)  # raises NotFoundError naming the missing one
    chain, reverse = _first_parent_path(core, rows[ca][0], rows[cb][0])
    changes: list[ChangeSet] = []
    if chain:
        hashes = [c.changes_hash for c in chain if c.changes_hash is not None]
        if len(hashes) == len(chain):
            core.reader.prefetch_changes(hashes)
            changes = [core.reader.changes(h) for h in hashes]
    (_, ra), (_, rb) = _with_roots(core, (ca, cb), rows, manifests=not all_exact(changes))
    return diff_roots(ra, rb, core.reader, labels=(ca, cb), changes=changes, reverse=reverse)


# How far apart (in commits along first parents) two commits may be for a diff to read their
# change sets instead of comparing manifests.
DIFF_CHAIN = 64


def _first_parent_path(
    core: RepoCore, a: CommitRecord, b: CommitRecord
) -> tuple[list[CommitRecord], bool]:
    """The commits from the older of ``a`` and ``b`` to the other along first parents,
    oldest first, and whether ``a`` is the newer; ``[]`` if neither is a first-parent
    ancestor of the other within :data:`DIFF_CHAIN` commits."""
    if b.parent_id == a.id:
        return [b], False
    if a.parent_id == b.id:
        return [a], True
    older, newer, reverse = (a, b, False) if a.generation < b.generation else (b, a, True)
    steps = newer.generation - older.generation
    if a.id == b.id or not 2 <= steps <= DIFF_CHAIN:
        return [], False
    chain = core.catalog.commits.ancestry(newer.id, steps + 1)
    ids = [c.id for c in chain]
    if older.id not in ids:
        return [], False  # not along first parents (a merge in between, or other lines)
    return chain[: ids.index(older.id)][::-1], reverse
