"""Identifiers, names and small value types shared by every layer."""

from __future__ import annotations

import difflib
import functools
import getpass
import os
import re
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from zarrlake.display.urls import MASK, redact_urls, safe_url, url_secrets
from zarrlake.errors import InvalidInputError, InvalidKeyError, InvalidNameError

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = [
    "MASK",
    "MAX_NAME_LENGTH",
    "ChunkCoords",
    "CommitInfo",
    "Isolation",
    "RefLogEntry",
    "RepoConfig",
    "SessionInfo",
    "check_limit",
    "default_author",
    "did_you_mean",
    "from_epoch",
    "in_words",
    "new_commit_id",
    "new_session_id",
    "parse_catalog_url",
    "redact_urls",
    "safe_url",
    "to_timestamp",
    "url_secrets",
    "validate_key",
    "validate_metadata",
    "validate_name",
    "validate_text",
]

ChunkCoords = tuple[int, ...]
Isolation = Literal["snapshot", "serializable"]

MAX_NAME_LENGTH = 128
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._\-/]*$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode's control characters (Cc)
_COMMIT_ID_BYTES = 10


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'main'?"`` (up to three close names), or ``""`` when none is close."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


def in_words(names: Iterable[str], *, limit: int = 10) -> str:
    """Names for a sentence: ``main, dev`` (sorted), ``none``, or the first ``limit`` and
    how many more."""
    items = sorted(names)
    if not items:
        return "none"
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def new_commit_id() -> str:
    """A random commit id (20 lowercase hex characters)."""
    return secrets.token_hex(_COMMIT_ID_BYTES)


def new_session_id() -> str:
    """A random session id."""
    return "s" + secrets.token_hex(12)


def default_author() -> str:
    """Who makes a commit when no author is given: the user running the process (the
    environment's ``LOGNAME``, ``USER``, ``LNAME`` or ``USERNAME``, as :func:`getpass.getuser`
    reads them, else the account's name)."""
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if found := os.environ.get(var):
            return found
    return _account()


@functools.cache
def _account() -> str:
    """The account's name, looked up once per process (a read of the password database,
    which every session would otherwise pay)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


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
    if _CONTROL_RE.search(key):
        raise InvalidKeyError(f"store key {key!r} contains control characters")
    return key


def validate_text(value: object, what: str) -> str:
    """``value`` if it is a string both catalogs can store: no NUL, no lone surrogates."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInputError(f"{what} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} contains characters that are not valid text") from None
    return value


def validate_metadata(metadata: object) -> dict[str, Any]:
    """A commit's metadata: a dict of strings to JSON values that both catalogs can store."""
    import json

    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"commit metadata must be a dict, got {type(metadata).__name__}")
    for k in metadata:
        validate_text(k, "a commit metadata key")
    try:
        text = json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"commit metadata must be JSON (strings, numbers, lists, dicts): {exc}"
        ) from None
    validate_text(text, "commit metadata")
    return dict(metadata)


def to_timestamp(when: object, what: str = "time") -> float:
    """Epoch seconds of a datetime (naive means UTC), refusing what no catalog can hold."""
    if not isinstance(when, datetime):
        raise InvalidInputError(f"{what} must be a datetime, got {type(when).__name__}")
    try:
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    except (OverflowError, ValueError, OSError) as exc:
        raise InvalidInputError(f"{what} {when!r} is out of range: {exc}") from None


def check_limit(limit: object) -> int | None:
    """A ``limit=`` argument: ``None`` or an int >= 0."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit must be None or an integer >= 0, got {limit!r}")
    return limit


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

    @property
    def checks(self) -> dict[str, dict[str, Any]]:
        """The checks that judged this commit before it landed: name -> ``passed``,
        ``message`` (and the arrays and chunks concerned)."""
        found = self.metadata.get("checks")
        return dict(found) if isinstance(found, dict) else {}

    @property
    def pull_request(self) -> int | None:
        """The pull request this commit merged, if it is such a merge."""
        found = self.metadata.get("pull_request")
        return found if isinstance(found, int) and not isinstance(found, bool) else None

    def checks_summary(self) -> str:
        """The checks that judged this commit on one line: ``2 passed``, or each failure with
        its message first (``no-nan failed: NaN in 1 changed chunk(s); 1 passed``); ``""``
        if none ran."""
        checks = self.checks
        failed = [
            f"{name} failed: {r.get('message', '')}" if isinstance(r, dict) else f"{name} failed"
            for name, r in checks.items()
            if not (isinstance(r, dict) and r.get("passed") is True)
        ]
        passed = len(checks) - len(failed)
        return "; ".join([*failed, *([f"{passed} passed"] if passed else [])])

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


_URL_EXAMPLES = "sqlite:///path/to/catalog.db or postgresql+psycopg://user@host:5432/db"


def parse_catalog_url(url: object) -> sa.URL:
    """A catalog URL, parsed; :class:`InvalidInputError` saying how to write one if it cannot
    be (a port that is not a number from 1 to 65535, no scheme, not a string)."""
    import sqlalchemy as sa

    if not isinstance(url, str) or not url:
        raise InvalidInputError(f"the catalog must be a URL string such as {_URL_EXAMPLES}")
    try:
        parsed = sa.make_url(url)
    except ValueError:  # SQLAlchemy reads the port with int()
        parsed = None
    except sa.exc.ArgumentError:
        raise InvalidInputError(
            f"cannot read the catalog URL {safe_url(url)!r}; write it as {_URL_EXAMPLES}"
        ) from None
    if parsed is None or (parsed.port is not None and not 1 <= parsed.port <= 65535):
        raise InvalidInputError(
            f"the port of the catalog URL {safe_url(url)!r} is not a number from 1 to 65535; "
            f"write it as {_URL_EXAMPLES}"
        )
    return parsed


_SECRET_WORDS = ("password", "passwd", "secret", "token", "key", "credential", "session")


def _mask(options: dict[str, Any]) -> dict[str, Any]:
    return {
        k: "***" if any(w in str(k).lower() for w in _SECRET_WORDS) else v
        for k, v in options.items()
    }


@dataclass(frozen=True, slots=True)
class RepoConfig:
    """Everything needed to reopen a repo in another process (no open handles).

    Its ``repr`` never shows a password or a storage credential.
    """

    catalog: str
    name: str = "default"
    storage_options: dict[str, Any] = field(default_factory=dict)
    verify_reads: bool = True
    strict_metadata: bool = True
    # allowed virtual-source prefix -> options for it that are never stored (credentials)
    source_options: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parse_catalog_url(self.catalog)  # refused before anything is created or opened

    def key(self) -> tuple[Any, ...]:
        return (
            self.catalog,
            self.name,
            repr(sorted(self.storage_options.items())),
            self.verify_reads,
            self.strict_metadata,
            repr(sorted((p, sorted(o.items())) for p, o in self.source_options.items())),
        )

    def __repr__(self) -> str:
        return (
            f"RepoConfig(catalog={safe_url(self.catalog)!r}, name={self.name!r}, "
            f"storage_options={_mask(self.storage_options)!r}, verify_reads={self.verify_reads}, "
            f"strict_metadata={self.strict_metadata}"
            + (
                f", source_options={ {p: dict.fromkeys(o, '***') for p, o in self.source_options.items()}!r}"
                if self.source_options
                else ""
            )
            + ")"
        )
