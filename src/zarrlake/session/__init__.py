"""Sessions: the unit of work, and what a store sees through one.

A :class:`WritableSession` reads its base commit plus its staged changes (its own and those of
the other processes cooperating on it), stages writes in the catalog, and commits them
atomically with compare-and-swap on its branch, rebasing automatically when commits landed
meanwhile and nothing conflicts. A :class:`ReadonlySession` reads one commit, forever.
"""

from zarrlake.session.base import Session
from zarrlake.session.opener import SessionOpener
from zarrlake.session.readonly import ReadonlySession
from zarrlake.session.registry import join_session, list_sessions, start_session
from zarrlake.session.writable import DEFAULT_EXPIRY, MAX_EXPIRY, WritableSession

__all__ = [
    "DEFAULT_EXPIRY",
    "MAX_EXPIRY",
    "ReadonlySession",
    "Session",
    "SessionOpener",
    "WritableSession",
    "join_session",
    "list_sessions",
    "start_session",
]
