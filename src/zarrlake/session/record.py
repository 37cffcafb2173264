"""A writable session's catalog record as this process last read it, and the catalog's clock
as last measured against this machine's: enough to tell the session's status without a query."""

from __future__ import annotations

import time

from zarrlake.model.lifecycle import SessionStatus, session_status
from zarrlake.model.records import SessionRecord

__all__ = ["SessionMirror"]


class SessionMirror:
    """The session's row and the catalog's clock offset (catalog minus this machine)."""

    def __init__(self, row: SessionRecord, *, created_now: bool) -> None:
        self.row = row
        # a session created by this call was created at the catalog's "now"
        self.skew = row.created_at - time.time() if created_now else 0.0

    def now(self) -> float:
        """The catalog's time, estimated from this machine's clock."""
        return time.time() + self.skew

    def saw(self, row: SessionRecord, catalog_now: float | None = None) -> None:
        """A fresh read of the row (and, with it, of the catalog's clock)."""
        self.row = row
        if catalog_now is not None:
            self.skew = catalog_now - time.time()

    def may_have_expired(self) -> bool:
        """Whether the expiry may have passed (only the catalog's clock can say it has)."""
        return self.now() >= self.row.expires_at

    def status(self, closed: str | None) -> SessionStatus:
        """The status by the estimated catalog time; ``closed`` is what this process did."""
        return session_status(closed or self.row.status, self.row.expires_at, self.now())
