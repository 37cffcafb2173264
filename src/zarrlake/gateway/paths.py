"""What a gateway path names: ``/<repo>/<ref>/<zarr key>``, checked before anything is opened.

The raw (still percent-encoded) path is split on ``/`` first and each segment decoded after,
so an encoded slash can never make a new segment. The repo name and every key segment must
decode to a plain segment: no ``/`` (``%2F``), ``\\``, ``.`` or ``..``, no control character,
valid UTF-8. The ref segment may hold an encoded ``/`` (branch names such as ``feature/x``),
but none of its parts may be empty, ``.`` or ``..``; ``repo.resolve`` checks the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from zarrlake.errors import InvalidKeyError
from zarrlake.types import validate_key

__all__ = ["MAX_PATH", "BadPath", "Target", "href", "parse_path"]

MAX_PATH = 1024  # bytes of the raw path; Zarr keys are far shorter
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class BadPath(Exception):
    """A path the gateway refuses, with the HTTP status and the short text to answer."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


@dataclass(frozen=True, slots=True)
class Target:
    """What a request names. ``repo`` and ``ref`` are ``None`` above them; ``key`` is
    ``None`` for the root of a version, and ``directory`` says the path ended in ``/``."""

    repo: str | None = None
    ref: str | None = None
    key: str | None = None
    directory: bool = False


def parse_path(raw: str) -> Target:
    """The :class:`Target` of a raw request path (below the gateway's own prefix)."""
    if len(raw.encode("utf-8", "surrogateescape")) > MAX_PATH:
        raise BadPath(414, f"path longer than {MAX_PATH} bytes")
    if not raw.startswith("/"):
        raise BadPath(400, "bad path: not an absolute path on this server")
    if "\\" in raw or _CONTROL.search(raw):
        raise BadPath(400, "bad path: backslash or control character")
    segments = raw[1:].split("/")
    directory = len(segments) > 1 and segments[-1] == ""
    if directory or segments == [""]:
        segments.pop()
    if any(s == "" for s in segments):
        raise BadPath(400, "bad path: empty segment ('//')")
    decoded = [_decode(s) for s in segments]
    if not decoded:
        return Target(directory=True)
    _plain(decoded[0], "repo name")
    if len(decoded) == 1:
        return Target(decoded[0], directory=True)
    ref = decoded[1]
    if any(p in ("", ".", "..") for p in ref.split("/")):
        raise BadPath(400, "bad path: the ref has an empty, '.' or '..' part")
    if len(decoded) == 2:
        return Target(decoded[0], ref, None, True)
    for s in decoded[2:]:
        _plain(s, "key segment")
    key = "/".join(decoded[2:])
    try:
        validate_key(key)
    except InvalidKeyError:
        raise BadPath(400, "bad path: not a Zarr key") from None
    return Target(decoded[0], ref, key, directory)


def _decode(segment: str) -> str:
    try:
        text = unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise BadPath(400, "bad path: percent-encoding that is not UTF-8") from None
    if _CONTROL.search(text) or "\\" in text:
        raise BadPath(400, "bad path: backslash or control character")
    return text


def _plain(segment: str, what: str) -> None:
    if "/" in segment:
        raise BadPath(400, f"bad path: encoded '/' in a {what}")
    if segment in (".", ".."):
        raise BadPath(400, f"bad path: '{segment}' as a {what}")


def href(prefix: str, repo: str, ref: str | None = None, key: str = "", slash: bool = True) -> str:
    """The absolute path of a listing's link (each segment encoded as :func:`parse_path`
    decodes it)."""
    parts = [prefix, quote(repo, safe="")]
    if ref is not None:
        parts.append(quote(ref, safe=""))
    parts += [quote(s, safe="") for s in key.split("/") if s]
    return "/".join(parts) + ("/" if slash else "")
