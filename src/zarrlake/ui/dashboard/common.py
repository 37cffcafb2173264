# mypy: disallow-untyped-calls=False
"""Small helpers every page shares: short ids, times, the write guard (text and errors are
shown through ``markup``)."""

from __future__ import annotations

import hmac
from datetime import datetime
from typing import Any

import panel as pn

from zarrlake import InvalidInputError, ReadOnlyError

__all__ = ["Writes", "fmt_time", "short"]


def short(commit: str | None) -> str:
    return (commit or "")[:10]


def fmt_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


class Writes:
    """Whether write actions exist on the page, and the token each of them requires."""

    def __init__(self, allowed: bool = False, token: str | None = None) -> None:
        if allowed and not token:
            raise InvalidInputError("writes need a token (zarrlake ui --allow-writes prints one)")
        self.allowed = allowed
        self._token = token or ""

    def check(self, given: Any) -> None:
        """Raise unless writes are allowed and ``given`` is the token."""
        if not self.allowed:
            raise ReadOnlyError("this dashboard is read-only (start it with --allow-writes)")
        # as UTF-8 bytes: compare_digest refuses str that is not ASCII with a TypeError
        if not isinstance(given, str) or not hmac.compare_digest(
            given.strip().encode("utf-8", "surrogatepass"),
            self._token.encode("utf-8", "surrogatepass"),
        ):
            raise ReadOnlyError("refused: the write token is missing or wrong")

    def token_input(self) -> pn.widgets.PasswordInput:
        return pn.widgets.PasswordInput(
            label="Write token", placeholder="token printed by --allow-writes", width=260
        )
