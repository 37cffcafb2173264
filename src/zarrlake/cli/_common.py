"""What every subcommand shares: the arguments that name a lake, opening it, operands,
confirmation of destructive commands, and durations."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import zarrlake
    from zarrlake.errors import NotFoundError
    from zarrlake.urls import VersionURL

__all__ = [
    "Aborted",
    "Operand",
    "add_lake_args",
    "add_repo_args",
    "confirm",
    "default_lake",
    "is_lake_dir",
    "lake_url",
    "looks_like_lake",
    "open_repo",
    "parse_duration",
    "parse_options",
    "parse_when",
    "redact",
    "remember_secret",
    "remember_url_secrets",
]

DEFAULT_LAKE = "my-lake"
LAKE_ENV = "ZARRLAKE_LAKE"


def default_lake() -> str:
    """The lake a command uses when none is named: ``$ZARRLAKE_LAKE``, else ``./my-lake``."""
    return os.environ.get(LAKE_ENV) or DEFAULT_LAKE


# Values that must never reach the terminal: storage option secrets and catalog passwords.
_SECRETS: set[str] = set()
_SECRET_KEY = re.compile(r"secret|password|passwd|token|key|credential|session|auth", re.I)


class Aborted(Exception):
    """A destructive command was not confirmed."""


def remember_secret(value: str) -> None:
    """Register a value to be blanked out of every message the command prints."""
    if len(value) >= 3:
        _SECRETS.add(value)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``, and every URL in it made
    fit to print (:func:`zarrlake.types.redact_urls`)."""
    from zarrlake.types import MASK, redact_urls

    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return redact_urls(text)


def _set_path(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for p in parents:
        target = target.setdefault(p, {})
        if not isinstance(target, dict):
            raise argparse.ArgumentTypeError(f"option {dotted!r} nests under a non-dict value")
    target[last] = value


def _scan_secrets(key: str, value: Any) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _scan_secrets(str(k), v)
    elif _SECRET_KEY.search(key) and value is not None:
        remember_secret(str(value))


def parse_options(items: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` strings to a dict: values are JSON when they parse (``true``, ``3``,
    ``{...}``), else strings; ``a.b=c`` nests (``{"a": {"b": "c"}}``)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {key or item!r}")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        _scan_secrets(key, value)
        _set_path(out, key, value)
    return out


def add_repo_args(sp: argparse.ArgumentParser) -> None:
    """Add ``[LAKE]`` (one optional word), ``--lake/-C``, or ``--catalog URL --name NAME``,
    and storage options; for commands that take no other operand."""
    sp.add_argument(
        "path",
        nargs="?",
        default=None,
        metavar="LAKE",
        help=f"the lake: a directory or a version URL (default: --lake, ${LAKE_ENV}, or "
        f"./{DEFAULT_LAKE})",
    )
    _add_location_options(sp)
    sp.set_defaults(resolve_lake=True)


def _add_location_options(sp: argparse.ArgumentParser) -> None:
    g = sp.add_argument_group("lake")
    g.add_argument(
        "-C",
        "--lake",
        metavar="PATH",
        help=f"the lake: a directory or a version URL (zarrlake+...); default ${LAKE_ENV}, "
        f"else ./{DEFAULT_LAKE}",
    )
    g.add_argument(
        "--catalog", metavar="URL", help="catalog URL (SQLAlchemy) instead of a directory"
    )
    g.add_argument("--name", default="default", help="repo name in the catalog (default: default)")
    g.add_argument(
        "--storage-option",
        "-o",
        action="append",
        metavar="KEY=VALUE",
        dest="storage_options",
        help="fsspec option for the chunk storage (repeatable; a.b=c nests; values are JSON "
        "when they parse). Secret values are never printed",
    )


def add_progress_option(sp: argparse.ArgumentParser, what: str = "progress bars") -> None:
    """``--progress/--no-progress``: ``what`` on stderr, by default when it is a terminal."""
    sp.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"{what} on stderr (default: when stderr is a terminal)",
    )


def resolve_lake(args: argparse.Namespace) -> None:
    """Settle ``args.path`` for ``add_repo_args``: the LAKE word, ``--lake``, or the
    default; refuse two names for one lake."""
    word = getattr(args, "path", None)
    given = [x for x in (word, args.lake, args.catalog and "--catalog") if x]
    if len(given) > 1:
        raise argparse.ArgumentTypeError(
            "the lake is named twice (LAKE, --lake, --catalog): name it once"
        )
    args.path = None if args.catalog else word or args.lake or default_lake()


def _no_lake(path: str) -> NotFoundError:
    from zarrlake.errors import NotFoundError

    where = "" if path == default_lake() else f" {path}"
    return NotFoundError(
        f"no lake at {path}: create one with `zarrlake init{where}`, or name another with "
        f"--lake PATH (or ${LAKE_ENV})"
    )


def open_repo(args: argparse.Namespace, *, version: bool = False) -> zarrlake.Repo:
    """Open the lake that ``add_repo_args`` (or ``add_lake_args``) named: a directory, a
    version URL, or ``--catalog`` and ``--name``.

    A version URL's ``#ref=`` is the default of the command's ref when ``version`` (it is
    left in ``args.url_ref``); any other command refuses a URL that names a version.
    """
    import zarrlake

    args.url_ref = None
    options = parse_options(getattr(args, "storage_options", None))
    if args.catalog:
        remember_url_secrets(args.catalog)
        return zarrlake.Repo.open(catalog=args.catalog, name=args.name, storage_options=options)
    url = lake_url(args)
    if url is None:
        if not is_lake_dir(args.path):
            raise _no_lake(args.path)
        return zarrlake.Repo.open(os.path.expanduser(args.path), storage_options=options)
    if url.group is not None or (url.ref is not None and not version):
        raise zarrlake.InvalidInputError(
            f"this command takes no {'#group=' if url.group is not None else '#ref='} in the "
            "lake's URL: give the lake as zarrlake+...?repo=NAME and the ref as an argument"
        )
    args.url_ref = url.ref
    return url.open(storage_options=options)


def lake_url(args: argparse.Namespace) -> VersionURL | None:
    """The version URL the lake argument is written as, if it is one (``--name`` must not
    name another repo than its ``?repo=``)."""
    import zarrlake
    from zarrlake.urls import is_version_url, parse_url

    path = getattr(args, "path", None)
    if args.catalog or not is_version_url(path):
        return None
    url = parse_url(str(path))
    remember_url_secrets(url.catalog)
    if getattr(args, "name", "default") not in ("default", url.repo):
        raise zarrlake.InvalidInputError(
            f"the URL names repo {url.repo!r} and --name says {args.name!r}: name it once"
        )
    return url


def remember_url_secrets(url: str) -> None:
    """Register the credentials of a URL (what ``safe_url`` masks in it) as secrets, so they
    are blanked wherever they appear, in a URL or not."""
    from zarrlake.types import url_secrets

    for secret in url_secrets(url):
        remember_secret(secret)


# -- operands: LAKE first unless --catalog --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Operand:
    """A positional argument after the lake directory."""

    name: str
    help: str
    required: bool = True
    dest: str | None = None


def add_lake_args(sp: argparse.ArgumentParser, *operands: Operand) -> None:
    """Operands after the options; the lake is ``--lake/-C`` (or ``--catalog``), else
    ``$ZARRLAKE_LAKE``, else ``./my-lake``. A lake written as the first word (the older
    form) is still understood where that is unambiguous (see :func:`bind_operands`)."""
    spec = " ".join(o.name if o.required else f"[{o.name}]" for o in operands)
    sp.usage = f"%(prog)s [-C PATH] [options] {spec}".rstrip()
    sp.add_argument("words_", nargs="*", metavar="ARG", help=argparse.SUPPRESS)
    g = sp.add_argument_group("positional arguments")
    g.description = "\n".join(f"{o.name}: {o.help}" for o in operands) or None
    sp.formatter_class = argparse.RawDescriptionHelpFormatter
    _add_location_options(sp)
    sp.set_defaults(operand_spec=operands, subparser=sp)


def looks_like_lake(word: str) -> bool:
    """A version URL, a directory that holds a lake's catalog, or a path that no ref can be
    (``/...``, ``./...``, ``../...``, ``~...``: ref names start with a letter, digit or _)."""
    from zarrlake.urls import CATALOG_FILE, is_version_url

    return (
        is_version_url(word)
        or word.startswith(("/", "./", "../", "~"))
        or os.path.isfile(os.path.join(word, CATALOG_FILE))
    )


def is_lake_dir(path: str) -> bool:
    """Whether ``path`` is a directory holding a lake's catalog."""
    from zarrlake.urls import CATALOG_FILE

    return os.path.isfile(os.path.join(os.path.expanduser(path), CATALOG_FILE))


def bind_operands(args: argparse.Namespace, extra: list[str]) -> None:
    """Split the words of ``add_lake_args`` into ``args.path`` and one attribute per operand.

    Without ``--lake`` or ``--catalog`` the first word is the lake (the older form) when it
    cannot be an operand: there is one word more than the operands, or the word is a
    version URL or a directory holding a lake. Anything else is an operand, so
    ``zarrlake diff v1.0 main`` compares two refs of the default lake.
    """
    operands: tuple[Operand, ...] | None = getattr(args, "operand_spec", None)
    parser: argparse.ArgumentParser = args.subparser
    assert operands is not None
    words = list(args.words_) + extra
    if args.lake and args.catalog:
        parser.error("--lake and --catalog both name the lake: give one of them")
    if args.catalog:
        args.path = getattr(args, "path", None)
    elif args.lake:
        args.path = args.lake
    elif words and (len(words) > len(operands) or looks_like_lake(words[0])):
        args.path = words.pop(0)
    else:
        args.path = default_lake()
    required = [o for o in operands if o.required]
    if len(words) < len(required):
        missing = [o.name for o in required[len(words) :]]
        parser.error(f"missing {', '.join(missing)}")
    if len(words) > len(operands):
        parser.error(f"unexpected arguments: {' '.join(words[len(operands) :])}")
    for i, o in enumerate(operands):
        dest = o.dest or o.name.lower().replace("-", "_")
        # An operand must not overwrite an option (``branch NAME`` vs ``--name``).
        assert not hasattr(args, dest), f"operand {o.name} collides with an option"
        setattr(args, dest, words[i] if i < len(words) else None)


# -- confirmation, durations ---------------------------------------------------------------


def confirm(args: argparse.Namespace, question: str) -> None:
    """Go on if ``--yes``, or if the user says yes on a terminal; else raise :class:`Aborted`."""
    if getattr(args, "yes", False):
        return
    if not sys.stdin.isatty():
        raise Aborted(f"{question}: refused without --yes (stdin is not a terminal)")
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Aborted(f"{question}: not confirmed")


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)?\s*$")
_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``15m``, ``24h``, ``7d``, ``2w`` or ``0``."""
    m = _DURATION.match(text)
    if not m or (m.group(2) is None and float(m.group(1)) != 0):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give a number and a unit, e.g. 90s, 15m, 24h, 7d"
        )
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2) or "s"])


def parse_when(text: str) -> datetime | timedelta:
    """A duration before now (``30d``) or an ISO 8601 time (naive times are UTC)."""
    try:
        return parse_duration(text)
    except argparse.ArgumentTypeError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a duration (30d) nor an ISO time of a year from 0001 to 9999 "
            "(2026-11-01T12:00)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
