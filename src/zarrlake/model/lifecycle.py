"""A session's status, derived from what the catalog records and the catalog's clock, and how
long a session may live.

The one rule every front end shows: a session recorded ``open`` whose expiry has passed by the
catalog's clock is ``expired``; ``committed`` and ``abandoned`` are final.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, get_args

__all__ = ["DEFAULT_EXPIRY", "MAX_EXPIRY", "SESSION_STATUSES", "SessionStatus", "session_status"]

MAX_EXPIRY = timedelta(days=7)
"""The longest a writable session may stay open without being extended."""
DEFAULT_EXPIRY = timedelta(hours=24)
"""How long a writable session stays open unless asked otherwise."""

SessionStatus = Literal["open", "expired", "committed", "abandoned"]
SESSION_STATUSES: tuple[SessionStatus, ...] = get_args(SessionStatus)


def session_status(recorded: str, expires_at: float, now: float) -> SessionStatus:
    """The status of a session the catalog records as ``recorded``, at catalog time ``now``."""
    if recorded == "open":
        return "expired" if now >= expires_at else "open"
    if recorded == "committed":
        return "committed"
    return "abandoned"
