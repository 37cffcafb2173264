"""Version URLs: one string that names a lake, a repo in it, and optionally a ref and a group.

::

    zarrlake+file:///data/lake                                  the embedded lake in /data/lake
    zarrlake+file:///data/lake?repo=other#ref=v1&group=ocean    repo "other", tag v1, group ocean
    zarrlake+sqlite:////data/catalog.db?repo=climate#ref=main~2
    zarrlake+postgresql://user@host:5432/db?repo=climate#ref=v1&group=ocean/deep

The part before ``#`` says where the lake is (``repo=`` picks a repo of the catalog, default
``default``); the fragment says which version (``ref=``, any ref expression ``repo.resolve``
accepts) and which group (``group=``). Values are percent-encoded. Anything else is refused:
another scheme, an unknown or repeated parameter, a relative path, a host on a ``file`` URL.
Credentials never go in a version URL that zarrlake writes (:func:`version_url`): a PostgreSQL
password comes from ``~/.pgpass`` or ``PGPASSWORD``, storage credentials from the environment
or ``storage_options=``.

This module is the only parser of version URLs; ``zarrlake.open_dataset``, the xarray engine,
the command line, the gateway and the dashboard all call :func:`parse_url`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from zarrlake.errors import InvalidInputError
from zarrlake.types import safe_url, validate_key, validate_name

if TYPE_CHECKING:
    from zarrlake.repo import Repo

__all__ = ["PREFIX", "VersionURL", "is_version_url", "open_version", "parse_url", "version_url"]

PREFIX = "zarrlake+"
MAX_LENGTH = 4096
CATALOG_FILE = "catalog.db"  # the embedded lake's catalog, as ``Repo.create(location)`` names it
_SCHEMES = ("file", "sqlite", "postgresql", "postgresql+psycopg")
# libpq connection parameters a PostgreSQL version URL may carry to the catalog
_PG_PARAMS = frozenset(
    {
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "connect_timeout",
        "application_name",
        "target_session_attrs",
    }
)
_FRAGMENT_KEYS = ("ref", "group")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FORM = (
    "a version URL looks like zarrlake+file:///data/lake#ref=v1&group=ocean or "
    "zarrlake+postgresql://host/db?repo=climate#ref=v1 (see docs/reach.md)"
)


def _refuse(text: str, why: str) -> InvalidInputError:
    return InvalidInputError(f"{why} in version URL {_shown(text)!r}: {_FORM}")


def _shown(text: str) -> str:
    """The URL as an error message may show it: no password."""
    return re.sub(r"(://[^:@/?#]*:)[^@/?#]*@", r"\1***@", text)


@dataclass(frozen=True, slots=True)
class VersionURL:
    """A parsed version URL: where the lake is, which repo, and optionally which version.

    Attributes
    ----------
    catalog
        The catalog's SQLAlchemy URL (for ``file`` URLs: the lake's ``catalog.db``).
    repo
        The repo's name in the catalog.
    ref
        The ref expression of the version, if the URL names one.
    group
        The group path, if the URL names one.
    location
        The lake directory, for an embedded lake (``file`` URLs); else ``None``.
    """

    catalog: str
    repo: str = "default"
    ref: str | None = None
    group: str | None = None
    location: str | None = None

    def open(self, *, storage_options: dict[str, Any] | None = None, **kwargs: Any) -> Repo:
        """Open the repo the URL names (``kwargs`` as :meth:`Repo.open` takes them)."""
        from zarrlake.repo import Repo

        if self.location is not None:
            return Repo.open(
                self.location, name=self.repo, storage_options=storage_options, **kwargs
            )
        return Repo.open(
            catalog=self.catalog, name=self.repo, storage_options=storage_options, **kwargs
        )

    def lake(self) -> VersionURL:
        """The same lake and repo, without a version."""
        return replace(self, ref=None, group=None)

    def with_version(self, ref: str | None = None, group: str | None = None) -> VersionURL:
        """The same repo at ``ref`` and ``group`` (each checked as :func:`parse_url` does)."""
        return replace(self, ref=_check_ref(ref), group=_check_group(group))

    def __str__(self) -> str:
        if self.location is not None:
            base = PREFIX + "file://" + quote(self.location, safe="/")
        else:
            base = PREFIX + _catalog_part(self.catalog)
        return _assemble(base, self.repo, self.ref, self.group)

    def __repr__(self) -> str:
        return f"VersionURL({_shown(str(self))!r})"


def is_version_url(value: object) -> bool:
    """Whether ``value`` is a string written as a version URL (not whether it is valid)."""
    return isinstance(value, str) and value.strip().lower().startswith(PREFIX)


def parse_url(text: str) -> VersionURL:
    """Parse a version URL; :class:`InvalidInputError` (saying what is wrong) if it is not one."""
    if not isinstance(text, str):
        raise InvalidInputError(f"a version URL is a string, got {type(text).__name__}")
    text = text.strip()
    if len(text) > MAX_LENGTH:
        raise InvalidInputError(
            f"version URL is {len(text)} characters long; the limit is {MAX_LENGTH}"
        )
    if _CONTROL.search(text):
        raise _refuse(text, "control characters")
    if not text.lower().startswith(PREFIX):
        raise _refuse(text, f"no {PREFIX!r} prefix")
    parts = urlsplit(text[len(PREFIX) :], allow_fragments=True)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise _refuse(text, f"unknown scheme {scheme!r} (use one of {', '.join(_SCHEMES)})")
    query = _pairs(text, parts.query, "query")
    fragment = _pairs(text, parts.fragment, "fragment")
    for key in fragment:
        if key not in _FRAGMENT_KEYS:
            raise _refuse(text, f"unknown fragment parameter {key!r} (use ref= and group=)")
    repo = query.pop("repo", "default")
    try:
        validate_name(repo, "repo name")
        ref = _check_ref(fragment.get("ref"))
        group = _check_group(fragment.get("group"))
    except InvalidInputError as exc:
        raise _refuse(text, str(exc)) from None
    if scheme == "file":
        location = _local_path(text, parts.netloc, parts.path, "file")
        if query:
            raise _refuse(text, f"unknown query parameter {next(iter(query))!r} (only repo=)")
        catalog = "sqlite:///" + os.path.join(location, CATALOG_FILE)
        return VersionURL(catalog, repo, ref, group, location)
    if scheme == "sqlite":
        # sqlite:////abs/path.db: the path after the third slash, which must be absolute
        path = _local_path(text, parts.netloc, parts.path[1:], "sqlite")
        if query:
            raise _refuse(text, f"unknown query parameter {next(iter(query))!r} (only repo=)")
        return VersionURL("sqlite:///" + path, repo, ref, group)
    if not parts.netloc or not parts.hostname:
        raise _refuse(text, "no host")
    if parts.path in ("", "/") or "/" in parts.path[1:]:
        raise _refuse(text, "the path must be one database name")
    extra = sorted(k for k in query if k not in _PG_PARAMS)
    if extra:
        raise _refuse(
            text,
            f"unknown query parameter {extra[0]!r} (repo= and the connection parameters "
            f"{', '.join(sorted(_PG_PARAMS))})",
        )
    catalog = f"postgresql+psycopg://{parts.netloc}{parts.path}"
    if query:
        catalog += "?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in sorted(query.items()))
    return VersionURL(catalog, repo, ref, group)


def version_url(repo: Repo, ref: str | None = None, group: str | None = None) -> str:
    """The version URL of ``repo`` at ``ref`` and ``group``, without any password.

    An embedded lake gets a ``file`` URL; a SQLite or PostgreSQL catalog a URL of its own
    scheme. A catalog of another kind has no version URL (:class:`InvalidInputError`).
    """
    catalog = repo.config.catalog
    url: VersionURL
    if catalog.startswith("sqlite:///"):
        path = catalog[len("sqlite:///") :]
        if os.path.basename(path) == CATALOG_FILE and repo.storage == ".":
            location = os.path.dirname(path)
            url = VersionURL(catalog, repo.name, location=location)
        else:
            if not os.path.isabs(path):
                path = os.path.abspath(path)
            url = VersionURL("sqlite:///" + path, repo.name)
    elif catalog.startswith(("postgresql://", "postgresql+psycopg://")):
        import sqlalchemy as sa

        parsed = sa.make_url(catalog)
        query = {k: v for k, v in parsed.query.items() if k in _PG_PARAMS and k != "sslkey"}
        bare = parsed.set(password=None, query=query)
        url = VersionURL(bare.render_as_string(hide_password=False), repo.name)
    else:
        raise InvalidInputError(
            f"catalog {safe_url(catalog)} has no version URL form (SQLite and PostgreSQL do)"
        )
    return str(url.with_version(ref, group))


# -- pieces ------------------------------------------------------------------------------------


def _pairs(text: str, raw: str, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if not raw:
        return out
    for item in raw.split("&"):
        key, sep, value = item.partition("=")
        key, value = unquote(key), unquote(value)
        if not sep or not key:
            raise _refuse(text, f"{where} item {item!r} is not KEY=VALUE")
        if not value:
            raise _refuse(text, f"{where} parameter {key!r} is empty")
        if key in out:
            raise _refuse(text, f"{where} parameter {key!r} given twice")
        if _CONTROL.search(value):
            raise _refuse(text, f"control characters in {where} parameter {key!r}")
        out[key] = value
    return out


def _local_path(text: str, netloc: str, path: str, scheme: str) -> str:
    if netloc not in ("", "localhost"):
        raise _refuse(text, f"a {scheme} URL names no host (got {netloc!r})")
    path = unquote(path)
    if not path.startswith("/"):
        raise _refuse(text, f"the {scheme} path must be absolute")
    if len(path) > 1:
        path = path.rstrip("/")
    if "\x00" in path or any(seg in (".", "..") for seg in path.split("/")):
        raise _refuse(text, f"the {scheme} path has a '.' or '..' segment")
    return path


def _check_ref(ref: str | None) -> str | None:
    if ref is None:
        return None
    if not isinstance(ref, str) or not ref or len(ref) > 512 or _CONTROL.search(ref):
        raise InvalidInputError(f"ref {ref!r} is not a ref expression")
    return ref


def _check_group(group: str | None) -> str | None:
    if group is None:
        return None
    if not isinstance(group, str):
        raise InvalidInputError(f"group must be a string path, got {type(group).__name__}")
    stripped = group.strip("/")
    return validate_key(stripped) if stripped else None


def _catalog_part(catalog: str) -> str:
    """A catalog URL as a version URL writes it: ``postgresql://`` implies the psycopg driver."""
    if catalog.startswith("postgresql+psycopg://"):
        return "postgresql://" + catalog[len("postgresql+psycopg://") :]
    return catalog


def _assemble(base: str, repo: str, ref: str | None, group: str | None) -> str:
    query = base.partition("?")[2] if "?" in base else ""
    base = base.partition("?")[0]
    items = [f"repo={quote(repo, safe='/')}"] if repo != "default" else []
    if query:
        items += query.split("&")
    out = base + ("?" + "&".join(items) if items else "")
    fragment = []
    if ref is not None:
        fragment.append(f"ref={quote(ref, safe='/:@~')}")
    if group is not None:
        fragment.append(f"group={quote(group, safe='/')}")
    return out + ("#" + "&".join(fragment) if fragment else "")


def open_version(
    target: object,
    *,
    ref: str | None = None,
    group: str | None = None,
    catalog: str | None = None,
    name: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> tuple[Repo, str | None, str | None]:
    """The repo, ref and group that a "lake" argument names, with explicit ``ref`` and ``group``.

    ``target`` is a :class:`Repo`; a version URL (a string or a :class:`VersionURL`); a lake
    directory (``name=`` picks a repo in it); or, with ``catalog=`` (a SQLAlchemy URL), the
    repo's name in that catalog. A ref or group given both in the URL and as an argument must
    agree.
    """
    from zarrlake.repo import Repo

    if isinstance(target, Repo):
        if catalog is not None or name is not None or storage_options is not None:
            raise InvalidInputError(
                "catalog=, name= and storage_options= describe a repo to open; "
                "they do not go with a Repo"
            )
        return target, ref, group
    if isinstance(target, VersionURL) or is_version_url(target):
        url = target if isinstance(target, VersionURL) else parse_url(str(target))
        if catalog is not None or name is not None:
            raise InvalidInputError(
                f"the version URL {url!r} names its lake and repo (?repo=); drop catalog= and name="
            )
        repo = url.open(storage_options=storage_options)
        return (
            repo,
            _agree("ref", url.ref, _check_ref(ref)),
            _agree("group", url.group, _check_group(group)),
        )
    if catalog is not None:
        if target is not None and name is not None and target != name:
            raise InvalidInputError("with catalog=, name the repo once (first argument or name=)")
        repo_name = name or target or "default"
        if not isinstance(repo_name, str):
            raise InvalidInputError(
                f"with catalog=, the first argument is the repo's name, got {type(target).__name__}"
            )
        return (
            Repo.open(catalog=catalog, name=repo_name, storage_options=storage_options),
            ref,
            group,
        )
    if isinstance(target, str | os.PathLike):
        repo = Repo.open(target, name=name or "default", storage_options=storage_options)
        return repo, ref, group
    raise InvalidInputError(
        f"expected a zarrlake.Repo, a version URL or a lake directory, got {type(target).__name__}"
    )


def _agree(what: str, in_url: str | None, given: str | None) -> str | None:
    if in_url is not None and given is not None and in_url != given:
        raise InvalidInputError(
            f"the version URL names {what} {in_url!r} and {what}= says {given!r}: give it once"
        )
    return in_url if in_url is not None else given
