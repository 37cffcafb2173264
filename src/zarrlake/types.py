"""Identifiers, names and small value types shared by every layer."""

from __future__ import annotations

import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from zarrlake.errors import InvalidKeyError, InvalidNameError

__all__ = [
    "MAX_NAME_LENGTH",
    "ChunkCoords",
    "CommitInfo",
    "Isolation",
    "RefLogEntry",
    "SessionInfo",
    "from_epoch",
    "new_commit_id",
    "new_session_id",
    "validate_key",
    "validate_name",
]

ChunkCoords = tuple[int, ...]
Isolation = Literal["snapshot", "serializable"]

MAX_NAME_LENGTH = 128
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._\-/]*$")
_COMMIT_ID_BYTES = 10


def new_commit_id() -> str:
    """A random commit id (20 lowercase hex characters)."""
    return secrets.token_hex(_COMMIT_ID_BYTES)


def new_session_id() -> str:
    """A random session id."""
    return "s" + secrets.token_hex(12)


def validate_name(name: object, what: str = "name") -> str:
    """Return ``name`` if it is a valid repo, branch or tag name, else raise.

    Names are 1-128 characters of letters, digits, ``_ . - /``; they may not start with a
    punctuation character, contain ``..``, ``//``, ``@{``, ``~``, end in ``/`` or ``.lock``.
    These rules keep names safe as URL parts, file names and ref expressions.
    """
    if not isinstance(name, str):
        raise InvalidNameError(f"{what} must be a string, got {type(name).__name__}")
    if not name:
        raise InvalidNameError(f"{what} must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidNameError(
            f"{what} is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
        )
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise InvalidNameError(f"{what} {name!r} contains control characters")
    if (
        not _NAME_RE.match(name)
        or ".." in name
        or "//" in name
        or name.endswith(("/", ".lock", "."))
    ):
        raise InvalidNameError(
            f"{what} {name!r} is not allowed: use letters, digits and _ . - / "
            "(not leading, no '..' or '//', not ending in '/', '.' or '.lock')"
        )
    return name


def validate_key(key: object) -> str:
    """Return ``key`` if it is a valid store key, else raise :class:`InvalidKeyError`.

    Keys are ``/``-separated paths with no empty, ``.`` or ``..`` segment, no leading slash,
    no backslash and no control characters.
    """
    if not isinstance(key, str):
        raise InvalidKeyError(f"store keys are strings, got {type(key).__name__}")
    if not key:
        raise InvalidKeyError("store key must not be empty")
    if key.startswith("/") or "\\" in key:
        raise InvalidKeyError(f"store key {key!r} must be relative and use '/' separators")
    for seg in key.split("/"):
        if seg in ("", ".", ".."):
            raise InvalidKeyError(f"store key {key!r} has an empty, '.' or '..' segment")
    if any(unicodedata.category(ch) == "Cc" for ch in key):
        raise InvalidKeyError(f"store key {key!r} contains control characters")
    return key


def from_epoch(ts: float) -> datetime:
    """Catalog timestamps are epoch seconds (UTC); this makes them aware datetimes."""
    return datetime.fromtimestamp(ts, tz=UTC)


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit as the log shows it."""

    id: str
    parents: tuple[str, ...]
    author: str
    message: str
    metadata: dict[str, Any]
    created_at: datetime

    @property
    def parent(self) -> str | None:
        return self.parents[0] if self.parents else None

    def __repr__(self) -> str:
        when = self.created_at.isoformat(timespec="seconds")
        return f"<Commit {self.id[:10]} {when} {self.author}: {self.message!r}>"

    def _repr_html_(self) -> str:
        from zarrlake.display import commit_html

        return commit_html(self)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One row of ``repo.sessions()``."""

    id: str
    branch: str
    base_commit: str
    author: str
    isolation: str
    status: str
    created_at: datetime
    expires_at: datetime
    commit_id: str | None

    def _repr_html_(self) -> str:
        from zarrlake.display import session_info_html

        return session_info_html(self)


@dataclass(frozen=True, slots=True)
class RefLogEntry:
    """One move of a branch or tag."""

    ref: str
    action: str
    old_commit: str | None
    new_commit: str | None
    author: str
    at: datetime
    message: str
