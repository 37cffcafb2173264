"""``SessionWidget``: a writable session's expiry counting down in the browser, its staged
changes, and buttons to extend or abandon it."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import ipywidgets as w  # type: ignore[import-untyped]

from zarrlake.display import staged_counts, staged_words
from zarrlake.display._base import esc
from zarrlake.errors import InvalidInputError, ZarrlakeError
from zarrlake.types import redact_urls
from zarrlake.ui.widgets.countdown import Countdown

if TYPE_CHECKING:
    from zarrlake import WritableSession

__all__ = ["SessionWidget"]

EXTEND_CHOICES = [("1 hour", 1), ("4 hours", 4), ("24 hours", 24), ("3 days", 72)]


class SessionWidget(w.VBox):  # type: ignore[misc]
    """A writable session in a notebook.

    ``countdown`` (:class:`Countdown`) ticks in the browser; the kernel updates it only when
    the expiry or status changes. ``extend_button`` extends by ``extend_by`` (a Dropdown of
    hours), ``abandon_button`` abandons, ``refresh_button`` re-reads the staged count and the
    status (a commit from elsewhere closes the session).
    """

    def __init__(self, session: WritableSession) -> None:
        if session.id is None:
            raise InvalidInputError("a read-only session has no expiry; pass a writable session")
        self.session = session
        self.countdown = Countdown()
        self.summary = w.HTML()
        self.staged = w.HTML()
        self.message = w.HTML()
        self.extend_by = w.Dropdown(
            options=EXTEND_CHOICES, value=24, layout=w.Layout(width="110px")
        )
        self.extend_button = w.Button(description="extend", icon="clock-o", button_style="info")
        self.abandon_button = w.Button(description="abandon", icon="trash", button_style="danger")
        self.refresh_button = w.Button(description="refresh", icon="refresh")
        super().__init__(
            [
                w.HBox([self.summary, self.countdown]),
                self.staged,
                w.HBox(
                    [self.extend_by, self.extend_button, self.abandon_button, self.refresh_button]
                ),
                self.message,
            ]
        )
        self.extend_button.on_click(lambda _: self.extend())
        self.abandon_button.on_click(lambda _: self.abandon())
        self.refresh_button.on_click(lambda _: self.refresh())
        self.refresh()

    @property
    def status(self) -> str:
        """``open``, ``committed``, ``abandoned`` or ``expired``."""
        return str(self.countdown.status)

    def _status_now(self) -> str:
        return str(self.session.info().status)

    def refresh(self) -> None:
        """Re-read the session's status, expiry and staged changes."""
        s = self.session
        try:
            status = self._status_now()
        except ZarrlakeError as exc:
            self._error(exc)
            return
        expires = s.expires_at
        self.countdown.expires_at = expires.timestamp() if expires else 0.0
        self.countdown.status = status
        self.summary.value = (
            f"Session <code>{esc(s.id)}</code> on <code>{esc(s.branch)}</code>, base "
            f"<code>{esc(s.base_commit[:10])}</code> &middot; "
        )
        counts = staged_counts(s) if status == "open" else {"nodes": 0, "chunks": 0, "keys": 0}
        self.staged.value = "staged: " + ("unknown" if counts is None else staged_words(counts))
        closed = status != "open"
        self.extend_button.disabled = self.abandon_button.disabled = closed
        self.extend_by.disabled = closed

    def _error(self, exc: ZarrlakeError) -> None:
        # the message as text, and never a credential of a URL it quotes
        text = esc(redact_urls(str(exc)))
        self.message.value = f'<span style="color:var(--jp-error-color1,#c62828)">{text}</span>'

    def extend(self) -> None:
        """Extend the session by ``extend_by`` hours (capped at 7 days after its creation)."""
        self.message.value = ""
        try:
            new = self.session.extend(timedelta(hours=int(self.extend_by.value)))
        except ZarrlakeError as exc:
            self._error(exc)
            self.refresh()
            return
        self.countdown.expires_at = new.timestamp()

    def abandon(self) -> None:
        """Abandon the session: its staged writes are discarded."""
        self.message.value = ""
        try:
            self.session.abandon()
        except ZarrlakeError as exc:
            self._error(exc)
        self.refresh()
