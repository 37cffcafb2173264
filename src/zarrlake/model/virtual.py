"""Virtual chunk references: a chunk whose bytes stay where they already live, a byte range
``[offset, offset + length)`` of a source file or object, named by URL, together with what
identified the source's version when the reference was committed.

Pure values and rules: which URLs a reference may name (:func:`normalize_url`,
:func:`allowed_prefix`) and what makes two references the same chunk (:func:`virtual_hash`).
Reading a source is :mod:`zarrlake.objects.sources`'s business.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from zarrlake.errors import VirtualSourceError

__all__ = [
    "SCHEMES",
    "VirtualSource",
    "allowed_prefix",
    "normalize_prefix",
    "normalize_url",
    "virtual_hash",
    "virtual_hasher",
]

SCHEMES = ("file", "s3", "http", "https")
"""Where a virtual reference may point: local files, S3 objects, HTTP(S) resources."""

_SPAN = struct.Struct("<QQ")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")  # control characters and backslashes


@dataclass(frozen=True, slots=True)
class VirtualSource:
    """One source file or object at one version: its URL (normalized, see
    :func:`normalize_url`), its size in bytes, and its ETag or last-modification stamp (a
    local file's ``st_mtime_ns``), as zarrlake saw them when a reference to it was committed.
    A read that finds another size, ETag or stamp refuses to return bytes."""

    url: str
    size: int
    etag: str | None = None
    modified: str | None = None

    def encode(self) -> str:
        doc: dict[str, Any] = {"u": self.url, "s": self.size}
        if self.etag is not None:
            doc["e"] = self.etag
        if self.modified is not None:
            doc["m"] = self.modified
        return json.dumps(doc, separators=(",", ":"), sort_keys=True)

    @classmethod
    def decode(cls, text: str | bytes) -> VirtualSource:
        try:
            doc = json.loads(text)
            return cls(
                str(doc["u"]),
                int(doc["s"]),
                None if doc.get("e") is None else str(doc["e"]),
                None if doc.get("m") is None else str(doc["m"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise VirtualSourceError(f"a virtual source record is corrupt: {exc}") from exc

    def version(self) -> str:
        """What identifies this version, for messages."""
        stamp = f"ETag {self.etag}" if self.etag is not None else f"modified {self.modified}"
        return f"{stamp}, {self.size} bytes"


def virtual_hash(source: VirtualSource, offset: int, length: int) -> bytes:
    """The identity of a virtual chunk: equal exactly when the source (URL and version),
    offset and length are equal. It stands where a stored chunk's content hash stands, so
    diffs and merges compare references as they compare chunks; it is never an object's
    name, so garbage collection never deletes anything for it."""
    return virtual_hasher(source)(offset, length)


def virtual_hasher(source: VirtualSource) -> Callable[[int, int], bytes]:
    """:func:`virtual_hash` of ``source`` as a function of (offset, length): the source's
    part of the hash is computed once, however many references name it."""
    h = hashlib.sha256(b"zarrlake-virtual\0")
    h.update(source.encode().encode())
    pack = _SPAN.pack

    def hash_span(offset: int, length: int) -> bytes:
        one = h.copy()
        one.update(pack(offset, length))
        return one.digest()

    return hash_span


def _refuse(url: str, why: str) -> VirtualSourceError:
    return VirtualSourceError(
        f"virtual reference {url!r} is refused: {why}. A reference must be an absolute "
        f"{', '.join(s + '://' for s in SCHEMES)} URL (or an absolute local path) under a "
        "prefix allowed with repo.allow_virtual_source(prefix)",
        url=url,
    )


def normalize_url(url: str) -> str:
    """The canonical form of a reference URL: ``file:///abs/path`` for a local path,
    ``scheme://host/path`` otherwise. Refused (:class:`VirtualSourceError`): other schemes,
    relative paths, any ``.``/``..`` segment or empty segment (percent-encoded too), control
    characters, user info, queries and fragments. Nothing is resolved on disk: a URL that
    passes names exactly the place it spells."""
    if not isinstance(url, str) or not url:
        raise _refuse(str(url), "it is not a non-empty string")
    if _CONTROL.search(url):
        raise _refuse(url, "it holds control characters or backslashes")
    given = url
    parts = urlsplit("file://" + url if url.startswith("/") else url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise _refuse(given, f"scheme {parts.scheme or '(none)'!r} is not one of {SCHEMES}")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise _refuse(given, "it has a query or a fragment")
    if "@" in parts.netloc:
        raise _refuse(given, "it names a user")
    if scheme == "file" and parts.netloc not in ("", "localhost"):
        raise _refuse(given, "a file URL must name no host")
    if scheme != "file" and not parts.netloc:
        raise _refuse(given, "it names no host or bucket")
    path = parts.path
    decoded = unquote(path)
    if "%" in decoded and unquote(decoded) != decoded:
        raise _refuse(given, "it is percent-encoded twice")
    if not decoded.startswith("/"):
        raise _refuse(given, "its path is not absolute")
    segments = decoded.split("/")[1:]
    if any(s in (".", "..") for s in segments) or "" in segments[:-1]:
        raise _refuse(given, "its path has '.', '..' or empty segments")
    if posixpath.normpath(decoded) != decoded.rstrip("/") and decoded != "/":
        raise _refuse(given, "its path is not in normal form")
    host = parts.netloc.lower() if scheme != "file" else ""
    return f"{scheme}://{host}{decoded}"


def normalize_prefix(prefix: str) -> str:
    """The canonical form of an allowed prefix: a normalized URL ending with ``/`` (a prefix
    always ends at a directory boundary, so ``s3://bucket/data`` never allows
    ``s3://bucket/data-secret/...``)."""
    norm = normalize_url(prefix)
    return norm if norm.endswith("/") else norm + "/"


def allowed_prefix(url: str, prefixes: list[str] | tuple[str, ...]) -> str | None:
    """The longest allowed prefix a normalized URL is under, if any."""
    found = [p for p in prefixes if url.startswith(p) and len(url) > len(p)]
    return max(found, key=len) if found else None
