# mypy: disallow-untyped-calls=False
"""The gateway's one request handler: ``GET``/``HEAD`` of ``/<repo>/<ref>/<zarr key>``.

Per request the ref is resolved once and everything answered comes from the store of that
commit's read-only session, so a response is one version even while the branch moves. Writes
are refused (405); errors are a status and a short text, never a trace, a path of the server
or the catalog URL.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import http
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from tornado.iostream import StreamClosedError
from tornado.web import HTTPError, RequestHandler
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype

from zarrlake.errors import CatalogError, NotFoundError, StorageError, ZarrlakeError
from zarrlake.gateway.paths import BadPath, href, parse_path
from zarrlake.gateway.versions import Lake, Missing, Version

__all__ = ["GatewayHandler", "Settings"]

log = logging.getLogger("zarrlake.gateway")

ALLOWED = "GET, HEAD, OPTIONS"
IMMUTABLE = "public, max-age=31536000, immutable"
SLICE = 1 << 20  # bytes written before waiting for the socket: a client that stops reading
# holds at most this much of a chunk in the server's buffers
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
EXPOSED = "Content-Length, Content-Range, ETag, Accept-Ranges, X-Zarrlake-Commit"


@dataclass(frozen=True)
class Settings:
    """How a gateway serves: its lake, path prefix, optional token, CORS origins, and whether
    group documents carry consolidated metadata."""

    lake: Lake
    prefix: str = ""
    token: str | None = None
    cors: tuple[str, ...] = ()
    consolidated: bool = True


class GatewayHandler(RequestHandler):
    """Read-only Zarr v3 over HTTP for every branch, tag and commit of a lake."""

    SUPPORTED_METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "DELETE", "PATCH")

    def initialize(self, settings: Settings) -> None:
        self.gw = settings
        self.cors_origin: str | None = None

    # -- the frame of every answer ---------------------------------------------------------

    def set_default_headers(self) -> None:
        self.set_header("X-Content-Type-Options", "nosniff")
        self.clear_header("Server")

    def prepare(self) -> None:
        self._apply_cors()
        if self.request.method not in ("GET", "HEAD", "OPTIONS"):
            raise HTTPError(405)
        if self.request.method != "OPTIONS" and self.gw.token is not None:
            self._check_token(self.gw.token)

    def _apply_cors(self) -> None:
        origin = self.request.headers.get("Origin")
        if not origin or not self.gw.cors:
            return
        if "*" in self.gw.cors:
            self.cors_origin = "*"
        elif origin in self.gw.cors:
            self.cors_origin = origin
            self.set_header("Vary", "Origin")
        else:
            return
        self.set_header("Access-Control-Allow-Origin", self.cors_origin)
        self.set_header("Access-Control-Expose-Headers", EXPOSED)

    def _check_token(self, token: str) -> None:
        given = self.request.headers.get("Authorization", "")
        value = given[7:].strip() if given[:7].lower() == "bearer " else ""
        value = value or self.get_query_argument("token", "")
        if not hmac.compare_digest(value.encode(), token.encode()):
            raise HTTPError(401)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        # tornado cleared the headers before calling this: set again what errors need
        self._apply_cors()
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        if status_code == 405:
            self.set_header("Allow", ALLOWED)
        if status_code == 401:
            self.set_header("WWW-Authenticate", 'Bearer realm="zarrlake"')
        text = {
            400: "bad request",
            401: "a token is required: Authorization: Bearer TOKEN (or ?token=TOKEN)",
            405: "method not allowed: this gateway is read-only (GET, HEAD)",
        }.get(status_code) or _phrase(status_code)
        if self.request.method != "HEAD":
            self.finish(text + "\n")
        else:
            self.finish()

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, HTTPError):
            return  # the access line says it
        kind = getattr(value, "kind", type(value).__name__)
        log.error(
            "%s %s failed (%s): %s",
            self.request.method,
            self.request.path,
            kind,
            self.gw.lake.redact(str(value)),
        )

    def _request_summary(self) -> str:
        # the path without its query: a ?token= must never reach a log line
        return f"{self.request.method} {self.request.path} ({self.request.remote_ip})"

    # -- methods ---------------------------------------------------------------------------

    async def options(self, *args: str) -> None:
        self.set_status(204)
        self.set_header("Allow", ALLOWED)
        if self.cors_origin is not None:
            self.set_header("Access-Control-Allow-Methods", ALLOWED)
            self.set_header(
                "Access-Control-Allow-Headers", "Range, Authorization, If-None-Match, If-Range"
            )
            self.set_header("Access-Control-Max-Age", "86400")
        self.finish()

    async def get(self, *args: str) -> None:
        await self._answer(body=True)

    async def head(self, *args: str) -> None:
        await self._answer(body=False)

    # -- answering -------------------------------------------------------------------------

    async def _answer(self, body: bool) -> None:
        try:
            target = parse_path(self.request.path[len(self.gw.prefix) :] or "/")
        except BadPath as exc:
            return self._text(exc.status, exc.text)
        try:
            if target.repo is None:
                return self._text(200, "zarrlake gateway: GET /<repo>/<ref>/<zarr key>\n")
            if target.ref is None:
                return await self._refs(target.repo, body)
            key, data = target.key, None
            if key is not None and not target.directory and self._whole(body):
                # the common path: a whole value, read with the version at once when that
                # waits on nothing, else in one worker call
                here = self.gw.lake.fetch_here(target.repo, target.ref, key)
                if here is None:
                    here = await asyncio.to_thread(self.gw.lake.fetch, target.repo, target.ref, key)
                v, data = here
            else:
                v = await asyncio.to_thread(self.gw.lake.version, target.repo, target.ref)
            self._version_headers(v)
            if key is None or target.directory:
                return await self._listing(v, _dir(key), body)
            await self._key(v, key, body, data)
        except Missing as exc:
            self._text(404, str(exc))
        except NotFoundError as exc:
            self.log_exception(type(exc), exc, None)
            self._text(404, "not found")
        except CatalogError as exc:
            self.log_exception(type(exc), exc, None)
            self._text(503, f"the catalog is unavailable ({exc.kind}); try again later")
        except StorageError as exc:
            self.log_exception(type(exc), exc, None)
            self._text(500, f"chunk data could not be read ({exc.kind}); see the server log")
        except StreamClosedError:
            pass  # the client went away mid-answer: nothing to answer
        except ZarrlakeError as exc:
            self.log_exception(type(exc), exc, None)
            self._text(500, f"internal error ({exc.kind}); see the server log")

    def _version_headers(self, v: Version) -> None:
        self.set_header("X-Zarrlake-Commit", v.commit)
        if v.pinned:
            self.set_header("Cache-Control", _private(IMMUTABLE, self.gw.token))
        else:
            self.set_header("Cache-Control", "no-cache")

    def _whole(self, body: bool) -> bool:
        """Whether the answer will be a whole value (no range, no revalidation, a body)."""
        h = self.request.headers
        return body and "Range" not in h and "If-None-Match" not in h

    async def _key(self, v: Version, key: str, body: bool, data: bytes | None) -> None:
        etag = _etag(v.commit, key, self.gw.consolidated)
        if _matches(self.request.headers.get("If-None-Match"), etag):
            self.set_header("ETag", etag)
            self.set_status(304)
            self.finish()
            return
        proto = default_buffer_prototype()
        wanted = self._range(etag)
        document = key.rsplit("/", 1)[-1] == "zarr.json"
        if data is None and (document or (body and wanted is None)):
            got = await v.store.get(key, proto)
            data = None if got is None else got.to_bytes()
            if data is None:
                return await self._listing(v, key + "/", body)
        if data is not None:
            if document and self.gw.consolidated and _is_group(data):
                group = key[: -len("zarr.json")].rstrip("/")
                data = await asyncio.to_thread(self.gw.lake.consolidated, v, group, data)
            size = len(data)
        else:
            found = await _size(v, key)
            if found is None:
                return await self._listing(v, key + "/", body)
            size = found
        status, length = 200, size
        if wanted is not None:
            first, last = _window(wanted, size)
            if first is None:
                self.set_header("Content-Range", f"bytes */{size}")
                return self._text(416, "range not satisfiable")
            status, length = 206, last - first + 1
            self.set_header("Content-Range", f"bytes {first}-{last}/{size}")
            if body and data is not None:
                data = data[first : last + 1]
            elif body:
                got = await v.store.get(key, proto, RangeByteRequest(first, last + 1))
                data = b"" if got is None else got.to_bytes()
        self.set_status(status)
        self.set_header("ETag", etag)
        self.set_header("Accept-Ranges", "bytes")
        self.set_header("Content-Type", _content_type(key))
        self.set_header("Content-Length", str(length))
        if body and data:
            await self._send(data)
        self.finish()

    def _range(self, etag: str) -> tuple[str, str] | None:
        """The single byte range asked for, if it is to be honoured (a malformed or multiple
        range is ignored, as HTTP allows, and answered whole)."""
        raw = self.request.headers.get("Range")
        if raw is None:
            return None
        if_range = self.request.headers.get("If-Range")
        if if_range is not None and if_range.strip() != etag:
            return None
        m = _RANGE.match(raw.strip())
        if m is None or (not m.group(1) and not m.group(2)):
            return None
        return m.group(1), m.group(2)

    async def _send(self, data: bytes) -> None:
        # The headers go out on their own: tornado copies the first piece written after them
        # into one buffer with them (a whole chunk, a memcpy per request); later pieces are
        # sent from the bytes as they are.
        await self.flush()
        for start in range(0, len(data), SLICE):
            self.write(data[start : start + SLICE])
            await self.flush()

    async def _listing(self, v: Version, prefix: str, body: bool) -> None:
        """The children of a directory as HTML links (how fsspec's HTTP filesystem, and so
        zarr's ``list_dir``, lists); 404 when there is no such key or directory."""
        children = await asyncio.to_thread(self.gw.lake.listing, v, prefix)
        if not children and prefix:
            return self._text(404, f"no key {prefix.rstrip('/')!r} at commit {v.commit}")
        where = "/".join(p for p in (v.repo, v.ref, prefix.rstrip("/")) if p)
        up = href(self.gw.prefix, v.repo, v.ref, prefix.rstrip("/").rpartition("/")[0])
        items = [f'<li><a href="{html.escape(up)}">../</a></li>'] if prefix else []
        for name, is_dir in sorted(children.items()):
            link = href(self.gw.prefix, v.repo, v.ref, prefix + name, slash=is_dir)
            shown = name + ("/" if is_dir else "")
            items.append(f'<li><a href="{html.escape(link)}">{html.escape(shown)}</a></li>')
        self._html(f"{where}/", f"<p>commit {v.commit}</p><ul>{''.join(items)}</ul>", body)

    async def _refs(self, repo: str, body: bool) -> None:
        branches, tags = await asyncio.to_thread(self.gw.lake.refs, repo)
        self.set_header("Cache-Control", "no-cache")
        parts = []
        for title, refs in (("branches", branches), ("tags", tags)):
            items = "".join(
                f'<li><a href="{html.escape(href(self.gw.prefix, repo, name))}">'
                f"{html.escape(name)}/</a> {commit}</li>"
                for name, commit in sorted(refs.items())
            )
            parts.append(f"<h2>{title}</h2><ul>{items}</ul>")
        self._html(f"{repo}/", "".join(parts), body)

    def _html(self, title: str, content: str, body: bool) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Security-Policy", "default-src 'none'")
        page = (
            '<!doctype html><html><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title></head>"
            f"<body><h1>{html.escape(title)}</h1>{content}</body></html>\n"
        ).encode()
        self.set_header("Content-Length", str(len(page)))
        if body:
            self.write(page)
        self.finish()

    def _text(self, status: int, text: str) -> None:
        self.set_status(status)
        if status >= 400:
            self.set_header("Cache-Control", "no-store")
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        if self.request.method != "HEAD":
            self.write(text if text.endswith("\n") else text + "\n")
        self.finish()


# -- pieces ------------------------------------------------------------------------------------


async def _size(v: Version, key: str) -> int | None:
    try:
        return await v.store.getsize(key)
    except FileNotFoundError:
        return None


def _window(wanted: tuple[str, str], size: int) -> tuple[int | None, int]:
    """(first, last) byte of ``bytes=a-b`` against ``size``; first ``None`` if unsatisfiable."""
    a, b = wanted
    if not a:  # the last b bytes
        n = int(b)
        return (None, 0) if n == 0 or size == 0 else (max(0, size - n), size - 1)
    first = int(a)
    if first >= size:
        return None, 0
    last = size - 1 if not b else min(int(b), size - 1)
    return (None, 0) if last < first else (first, last)


def _etag(commit: str, key: str, consolidated: bool) -> str:
    """Strong: a key's bytes at a commit never change (``c`` marks consolidated documents)."""
    digest = hashlib.sha256(f"{commit}\0{key}".encode()).hexdigest()[:32]
    return f'"{digest}{"c" if consolidated and key.endswith("zarr.json") else ""}"'


def _matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    return header.strip() == "*" or etag in [t.strip() for t in header.split(",")]


def _private(cache: str, token: str | None) -> str:
    return cache.replace("public", "private") if token else cache


def _content_type(key: str) -> str:
    return (
        "application/json" if key.rsplit("/", 1)[-1] == "zarr.json" else "application/octet-stream"
    )


def _is_group(document: bytes) -> bool:
    try:
        return bool(json.loads(document).get("node_type") == "group")
    except (ValueError, AttributeError):
        return False


def _dir(key: str | None) -> str:
    return f"{key.strip('/')}/" if key and key.strip("/") else ""


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase.lower()
    except ValueError:
        return "error"
