"""What a merge would do, as the merge itself computed it before publishing anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zarrlake.errors import Conflict, ConflictKind
from zarrlake.model.diff import Diff

__all__ = ["MergeOutcome", "MergePreview"]

MergeOutcome = Literal["up-to-date", "fast-forward", "merge"]


@dataclass(frozen=True)
class MergePreview:
    """The result of ``repo.merge(source, branch, dry_run=True)``.

    ``conflicts`` are exactly those the merge would report (a :class:`ConflictError` carries
    the same list); with solver ``ours`` or ``theirs`` they are resolved rather than raised.
    ``changes`` is what the branch would gain (its head to the merge result); ``ours`` and
    ``theirs`` are what each side changed since the common ancestor ``base``.
    """

    source: str  # the ref as given
    into: str  # the target branch
    source_commit: str
    head: str  # the target branch's head the preview was computed against
    base: str | None  # the merge base (None: no common history)
    outcome: MergeOutcome
    solver: str
    conflicts: tuple[Conflict, ...] = ()
    changes: Diff | None = None  # None when the merge would be refused
    ours: Diff | None = None  # base -> head
    theirs: Diff | None = None  # base -> source

    @property
    def refused(self) -> bool:
        """Whether the merge would raise :class:`ConflictError` with this solver."""
        return bool(self.conflicts) and (
            self.solver == "fail" or any(c.kind == ConflictKind.HISTORY for c in self.conflicts)
        )

    def summary(self) -> str:
        """One line: what merging would do."""
        what = f"{self.source} into {self.into}"
        if self.outcome == "up-to-date":
            return f"{self.into} already contains {self.source}: nothing to merge"
        if self.outcome == "fast-forward":
            return f"{what}: fast-forward {self.head[:10]} -> {self.source_commit[:10]}"
        n = len(self.conflicts)
        words = f"{n} conflict{'' if n == 1 else 's'}"
        if self.refused:
            return f"{what}: refused, {words} (solver {self.solver!r})"
        if n:
            return f"{what}: three-way merge, {words} resolved by solver {self.solver!r}"
        return f"{what}: three-way merge, no conflicts"

    def __repr__(self) -> str:
        return f"<MergePreview {self.summary()}>"
