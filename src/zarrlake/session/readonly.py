"""The read-only session: a fixed view of one commit, forever."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from zarrlake.core import RepoCore
from zarrlake.errors import ReadOnlyError
from zarrlake.model.records import CommitRecord
from zarrlake.session.base import Session
from zarrlake.session.opener import SessionOpener

if TYPE_CHECKING:
    from zarrlake.store import StoreSession

__all__ = ["ReadonlySession"]

_REFUSED = (
    "a read-only session cannot be {what}: it is a fixed view of one commit. Open a writable "
    "one with repo.writable_session(branch)"
)


class ReadonlySession(Session):
    """A read-only view of one commit. Create with :meth:`Repo.readonly_session`."""

    id = None
    isolation = "snapshot"
    expires_at = None
    created_at = None
    author = None

    def __init__(
        self,
        core: RepoCore,
        commit: str,
        *,
        branch: str | None = None,
        base: CommitRecord | None = None,
    ) -> None:
        self.branch = branch
        super().__init__(core, commit, base)

    @property
    def read_only(self) -> bool:
        return True

    @property
    def state(self) -> str:
        return "read-only"

    def opener(self) -> Callable[[], StoreSession]:
        return SessionOpener(self.config, commit=self.base_commit)

    # A read-only session has nothing to commit, rebase, extend or abandon: say so clearly.

    def commit(self, message: str, **kwargs: Any) -> str:
        """Refused: :class:`ReadOnlyError`."""
        raise ReadOnlyError(_REFUSED.format(what="committed"))

    def rebase(self, solver: str = "fail") -> str:
        """Refused: :class:`ReadOnlyError`."""
        raise ReadOnlyError(_REFUSED.format(what="rebased"))

    def extend(self, by: Any = None) -> Any:
        """Refused: :class:`ReadOnlyError`."""
        raise ReadOnlyError(_REFUSED.format(what="extended"))

    def abandon(self) -> None:
        """Refused: :class:`ReadOnlyError`."""
        raise ReadOnlyError(_REFUSED.format(what="abandoned"))

    def flush(self) -> None:
        """Nothing to flush."""

    def __repr__(self) -> str:
        on = f" of branch {self.branch!r}" if self.branch else ""
        return f"<ReadonlySession commit={self.base_commit[:10]}{on}>"
