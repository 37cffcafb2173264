"""Idempotency keys: a commit may carry a key, and a later commit on the same branch with that
key returns the recorded commit instead of committing again.

A key counts only while its commit is on the branch: reachable from the branch's head. After
the branch was reset to before it, deleted and created again elsewhere, or the commit expired,
the key is stale, and a retry with it commits (and records the key anew): otherwise the retry
would be told its data is committed when the branch does not hold it.
"""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.catalog.driver import DriverTx
from zarrlake.catalog.schema import commit_keys, commits, refs

__all__ = ["recorded_key"]


def _reachable(conn: DriverTx, repo_id: int, head: str, target: str, low: int) -> bool:
    """Whether ``target`` (of generation ``low``) is ``head`` or one of its ancestors; walks
    only the commits of generation ``low`` and above."""
    cols = [commits.c.id, commits.c.parent_id, commits.c.merge_parent_id]
    walk = (
        sa.select(*cols)
        .where(commits.c.repo_id == repo_id, commits.c.id == head)
        .cte("zl_walk", recursive=True)
    )
    step = sa.select(*cols).join(
        walk,
        sa.and_(
            commits.c.repo_id == repo_id,
            sa.or_(commits.c.id == walk.c.parent_id, commits.c.id == walk.c.merge_parent_id),
            commits.c.generation >= low,
        ),
    )
    walk = walk.union(step)
    found = conn.execute(sa.select(walk.c.id).where(walk.c.id == target).limit(1)).first()
    return found is not None


def recorded_key(
    conn: DriverTx, repo_id: int, branch: str, key: str | None, head: str | None
) -> str | None:
    """The commit recorded on ``branch`` with ``key``, if it is still on the branch: the
    branch's ``head`` (read here if ``None``) is it or descends from it."""
    if key is None:
        return None
    row = conn.execute(
        sa.select(commit_keys.c.commit_id, commits.c.generation)
        .select_from(commit_keys)
        .outerjoin(
            commits,
            sa.and_(commits.c.repo_id == repo_id, commits.c.id == commit_keys.c.commit_id),
        )
        .where(
            commit_keys.c.repo_id == repo_id,
            commit_keys.c.branch == branch,
            commit_keys.c.key == key,
        )
    ).first()
    if row is None or row.generation is None:  # no key, or its commit was expired
        return None
    if head is None:
        head = conn.execute(
            sa.select(refs.c.commit_id).where(
                refs.c.repo_id == repo_id, refs.c.name == branch, refs.c.kind == "branch"
            )
        ).scalar()
        if head is None:
            return None
    target = str(row.commit_id)
    if head == target or _reachable(conn, repo_id, head, target, int(row.generation)):
        return target
    return None
