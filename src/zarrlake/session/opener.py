"""The picklable opener a shipped store carries: it finds the session again in any process.

It holds configuration only. How a session is found (this process's object for it, or a new one
that joins it) is the registry's business, which installs itself here on import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zarrlake.errors import InvalidInputError
from zarrlake.types import RepoConfig

if TYPE_CHECKING:
    from zarrlake.store import StoreSession

__all__ = ["SessionOpener", "install"]

Finder = Callable[["SessionOpener"], "StoreSession"]
_finder: list[Finder] = []


def install(finder: Finder) -> None:
    """Called once by the session registry."""
    _finder[:] = [finder]


@dataclass(frozen=True, slots=True)
class SessionOpener:
    """Opens a session (by id) or a commit's read-only view, in whatever process calls it.
    Pickles as configuration: this is what a shipped store carries."""

    config: RepoConfig
    session_id: str | None = None
    commit: str | None = None

    def __call__(self) -> StoreSession:
        if (self.session_id is None) == (self.commit is None):
            raise InvalidInputError("a session opener needs a session id or a commit")
        # the registry installed itself: importing this module imported zarrlake.session first
        return _finder[0](self)
