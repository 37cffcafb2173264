"""History expiry: drop old commits that no branch, tag or open session needs."""

from __future__ import annotations

from datetime import datetime, timedelta

from zarrlake.core import RepoCore
from zarrlake.errors import InvalidInputError
from zarrlake.maintenance.reports import ExpireReport
from zarrlake.types import from_epoch, to_timestamp

__all__ = ["expire"]


def _cutoff(core: RepoCore, older_than: datetime | timedelta) -> tuple[float, datetime]:
    """The cutoff in epoch seconds, and as the report shows it (UTC)."""
    if isinstance(older_than, timedelta):
        if older_than < timedelta(0):
            raise InvalidInputError("older_than must not be a negative timedelta")
        shown = cutoff = core.catalog.clock() - older_than.total_seconds()
    elif isinstance(older_than, datetime):
        shown = to_timestamp(older_than, "older_than")
        # commit times show rounded to the microsecond: one copied from commit_info() must
        # count as "not older"
        cutoff = shown - 1e-6
    else:
        raise InvalidInputError("older_than must be a datetime or a timedelta")
    try:
        return cutoff, from_epoch(shown)
    except (ValueError, OverflowError, OSError):
        raise InvalidInputError(
            f"older_than={older_than} is outside the calendar (years 0001 to 9999, UTC); "
            "give a time or a delay that stays within it"
        ) from None


def expire(
    core: RepoCore, older_than: datetime | timedelta, *, keep_tags: bool, dry_run: bool
) -> ExpireReport:
    """Drop commits created before ``older_than`` that no ref or open session needs."""
    cutoff, cutoff_at = _cutoff(core, older_than)
    rows = {r.id: r for r in core.catalog.commits.all()}
    keep = {c for c, r in rows.items() if r.created_at >= cutoff}
    branches, tags = (
        core.catalog.refs.all("branch"),
        core.catalog.refs.all("tag"),
    )
    keep |= set(branches.values()) | set(tags.values())
    if keep_tags:
        todo = list(tags.values())
        while todo:
            c = todo.pop()
            r = rows.get(c)
            if r is None:
                continue
            keep.add(c)
            todo += [p for p in (r.parent_id, r.merge_parent_id) if p and p not in keep]
    for s in core.catalog.sessions.infos():
        # An open session needs its base and the first-parent path from the branch head to
        # it: its commit checks the commits in between for conflicts.
        keep.add(s.base_commit)
        cursor = branches.get(s.branch)
        while cursor is not None and cursor != s.base_commit and cursor in rows:
            keep.add(cursor)
            cursor = rows[cursor].parent_id
    drop = sorted(set(rows) - keep)
    expired = drop if dry_run else core.catalog.gc.delete_commits(drop)
    return ExpireReport(cutoff_at, tuple(sorted(expired)), dry_run)


# -- fsck --------------------------------------------------------------------------------------
