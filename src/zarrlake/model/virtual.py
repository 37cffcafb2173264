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
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import numpy as np

from zarrlake.errors import InvalidInputError, VirtualSourceError

_json_str = json.encoder.encode_basestring_ascii  # json.dumps's own encoder of a str

__all__ = [
    "DEFAULT_VIRTUAL_IDENTITY",
    "SCHEMES",
    "SHA256_IDENTITY",
    "SPAN_IDENTITY",
    "VIRTUAL_IDENTITIES",
    "VirtualSource",
    "allowed_prefix",
    "check_identity",
    "normalize_prefix",
    "normalize_url",
    "virtual_hash",
    "virtual_identities",
]

SCHEMES = ("file", "s3", "http", "https")
"""Where a virtual reference may point: local files, S3 objects, HTTP(S) resources."""

SHA256_IDENTITY = "sha256"
"""A virtual chunk named by the SHA-256 of its source's record, offset and length: every
repo made before catalog schema 11."""

SPAN_IDENTITY = "span"
"""A virtual chunk named by its span: the first 16 bytes of the SHA-256 of its source's
record, then its offset and its length (8 bytes each, big-endian). Computed for many
references at once, with one hash per source rather than one per reference."""

VIRTUAL_IDENTITIES = (SHA256_IDENTITY, SPAN_IDENTITY)
"""The names a repo's virtual identity may have."""

DEFAULT_VIRTUAL_IDENTITY = SPAN_IDENTITY
"""The virtual identity of a new repo."""

_SPAN = np.dtype(">u8")
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
        """The record: the JSON object ``{"e": etag, "m": modified, "s": size, "u": url}``
        (keys sorted, no spaces, ``e`` and ``m`` only when known), exactly as
        ``json.dumps(..., separators=(",", ":"), sort_keys=True)`` writes it. Records are
        compared as text, so this form never changes; it is put together here without a
        dict per source (an imported store has a source per chunk)."""
        size = json.dumps(self.size) if type(self.size) is not int else str(self.size)
        head = "" if self.etag is None else f'"e":{_json_str(self.etag)},'
        if self.modified is not None:
            head += f'"m":{_json_str(self.modified)},'
        return f'{{{head}"s":{size},"u":{_json_str(self.url)}}}'

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


def check_identity(identity: str) -> str:
    """``identity`` if it names a virtual identity (:data:`VIRTUAL_IDENTITIES`)."""
    if identity not in VIRTUAL_IDENTITIES:
        raise InvalidInputError(
            f"unknown virtual identity {identity!r}; known: {', '.join(VIRTUAL_IDENTITIES)}"
        )
    return identity


def virtual_hash(
    source: VirtualSource, offset: int, length: int, identity: str = DEFAULT_VIRTUAL_IDENTITY
) -> bytes:
    """The identity of a virtual chunk: equal exactly when the source (URL and version),
    offset and length are equal. It stands where a stored chunk's content hash stands, so
    diffs and merges compare references as they compare chunks; it is never an object's
    name, so garbage collection never deletes anything for it. A repo records which
    function it uses (``identity``, one of :data:`VIRTUAL_IDENTITIES`) for its life, so a
    reference staged again is named as it was when first committed."""
    one = np.zeros(1, np.int64)
    ids = virtual_identities(identity, [source], one, one + offset, one + length)
    return bytes(ids[0].tobytes())


def virtual_identities(
    identity: str,
    sources: Sequence[VirtualSource],
    source_ids: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
) -> np.ndarray:
    """:func:`virtual_hash` of many references at once, as an ``(n, 32)`` array of bytes:
    reference ``i`` is ``lengths[i]`` bytes at ``offsets[i]`` of ``sources[source_ids[i]]``.
    Each source's record is hashed once."""
    check_identity(identity)
    n = len(source_ids)
    tag = b"zarrlake-virtual\0" if identity == SHA256_IDENTITY else b"zarrlake-virtual-span\0"
    heads = [hashlib.sha256(tag + s.encode().encode()) for s in sources]
    offs = np.asarray(offsets, np.int64).astype(_SPAN)
    lens = np.asarray(lengths, np.int64).astype(_SPAN)
    if identity == SPAN_IDENTITY:
        out = np.empty((n, 32), np.uint8)
        prefixes = np.frombuffer(b"".join(h.digest()[:16] for h in heads), np.uint8)
        out[:, :16] = prefixes.reshape(len(heads), 16)[np.asarray(source_ids, np.intp)]
        out[:, 16:24] = offs.view(np.uint8).reshape(n, 8)
        out[:, 24:] = lens.view(np.uint8).reshape(n, 8)
        return out
    # SHA-256 of the source's record and the span (offset and length, little-endian)
    spans = np.empty((n, 2), "<u8")
    spans[:, 0] = offs
    spans[:, 1] = lens
    raw = spans.tobytes()

    def one(i: int, k: int) -> bytes:
        h = heads[i].copy()
        h.update(raw[16 * k : 16 * k + 16])
        return h.digest()

    digests = b"".join(map(one, np.asarray(source_ids).tolist(), range(n)))
    return np.frombuffer(digests, np.uint8).reshape(n, 32)


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
