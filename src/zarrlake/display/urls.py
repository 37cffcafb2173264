"""URLs fit to print: the one redaction of catalog and storage URLs, for every output.

One parser for every URL that may be printed (catalog URLs, storage URLs, URLs quoted inside
error messages): the CLI's text and JSON, the reprs, error messages, the dashboard and the
widgets all show URLs through :func:`safe_url` or :func:`redact_urls`. It does not ask
SQLAlchemy: a URL it cannot parse (a bad port, a password with an unencoded "@" or "/") is
exactly the one that ends up in an error message. (``zarrlake.types`` re-exports these.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MASK", "redact_urls", "safe_url", "url_secrets"]

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):/*")
# a query parameter (or a libpq ``key=value`` word) whose value is a credential
_SECRET_NAME = re.compile(
    r"pass|pwd|secret|token|key|credential|auth|signature|(?:^|[^a-z])sig(?:$|[^a-z])", re.I
)
_PARAM = re.compile(r"(?P<sep>^|[&;\s])(?P<name>[^=&;\s#]+)=(?P<value>[^&;\s#]*)")
# schemes where a userinfo without a password is a token (``https://TOKEN@host/...``);
# elsewhere it names an account or a container
_TOKEN_SCHEMES = frozenset({"http", "https", "ftp", "ftps", "webdav", "webdavs"})
# a URL in a message: whole between quotes (as ``{url!r}`` quotes it, white space and all),
# else up to white space or a quote
_URL_IN_TEXT = re.compile(
    r"(?<=')[A-Za-z][A-Za-z0-9+.\-]*://[^'\n]+(?=')"
    r'|(?<=")[A-Za-z][A-Za-z0-9+.\-]*://[^"\n]+(?=")'
    r"|[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+"
)
MASK = "***"


@dataclass(frozen=True, slots=True)
class _UrlParts:
    head: str  # scheme, colon and slashes ("" when the text is not a URL)
    user: str | None  # the user name of a ``user:password@`` userinfo
    password: str | None  # everything between the user's colon and the host's "@"
    token: str | None  # an https URL's userinfo without a colon (a token)
    rest: str  # host, path, query and fragment (the whole text when not a URL)


def _url_parts(url: str) -> _UrlParts:
    m = _SCHEME.match(url)
    if m is None:
        return _UrlParts("", None, None, None, url)
    head, rest = url[: m.end()], url[m.end() :]
    # A password may hold "@", "/", "?" or "#" unencoded, so the host follows the last "@".
    # (An "@" in the path or query then hides more than the password: never less.)
    at = rest.rfind("@")
    user, colon, password = rest[: max(at, 0)].partition(":")
    if at >= 0 and colon and not any(c in user for c in "/?#"):
        return _UrlParts(head, user, password, None, rest[at + 1 :])
    first = rest.find("@")
    token = rest[: max(first, 0)]
    scheme = m["scheme"].lower().rsplit("+", 1)[-1]
    if token and scheme in _TOKEN_SCHEMES and not any(c in token for c in ":/?#"):
        return _UrlParts(head, None, None, token, rest[first + 1 :])
    return _UrlParts(head, None, None, None, rest)


def _is_secret_name(name: str) -> bool:
    from urllib.parse import unquote

    return bool(_SECRET_NAME.search(unquote(name)))


def _mask_params(text: str) -> str:
    return _PARAM.sub(
        lambda m: f"{m['sep']}{m['name']}={MASK}" if _is_secret_name(m["name"]) else m[0], text
    )


def safe_url(url: str) -> str:
    """``url`` fit to print: the one redaction of a catalog or storage URL.

    The password of ``user:password@`` becomes ``***`` (the user name stays), an https URL's
    ``token@`` userinfo becomes ``***@``, and so does the value of every query parameter named
    like a credential (``password``, ``secret``, ``token``, ``key``, ``sig``...). Text that is
    not a URL (a path, a libpq ``key=value`` string) keeps everything but such values. Never
    raises, whatever the text.
    """
    parts = _url_parts(str(url))
    if parts.user is not None:
        userinfo = f"{parts.user}:{MASK}@"
    elif parts.token is not None:
        userinfo = f"{MASK}@"
    else:
        userinfo = ""
    if parts.head:
        path, q, query = parts.rest.partition("?")
        query, hashmark, fragment = query.partition("#")
        rest = path + q + _mask_params(query) + hashmark + fragment
    else:
        rest = _mask_params(parts.rest)
    return parts.head + userinfo + rest


def redact_urls(text: str) -> str:
    """``text`` (an error message, a log line) with every URL in it through :func:`safe_url`.

    A URL ends at white space unless it is quoted: a password with a space in it is masked
    whole only in a quoted URL (how ``repr`` and our messages quote URLs).
    """
    return _URL_IN_TEXT.sub(lambda m: safe_url(m[0]), str(text))


def url_secrets(url: str) -> list[str]:
    """The credentials :func:`safe_url` masks in ``url`` (to blank them anywhere else too)."""
    parts = _url_parts(str(url))
    found = [s for s in (parts.password, parts.token) if s]
    query = parts.rest.partition("?")[2] if parts.head else parts.rest
    found += [m["value"] for m in _PARAM.finditer(query) if _is_secret_name(m["name"])]
    return [s for s in found if s]
