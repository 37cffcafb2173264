"""``zarrlake init | sessions``."""

from __future__ import annotations

import argparse

from zarrlake.cli._common import (
    add_lake_args,
    is_lake_dir,
    open_repo,
    parse_options,
    remember_url_secrets,
)
from zarrlake.cli._output import emit_json, print_table, session_json, stdout_is_tty

__all__ = ["register"]


def _cmd_init(args: argparse.Namespace) -> int:
    import zarrlake
    from zarrlake.types import safe_url

    options = parse_options(args.storage_options)
    chosen = {} if args.content_hash is None else {"content_hash": args.content_hash}
    if args.catalog:
        remember_url_secrets(args.catalog)
        if args.storage:
            remember_url_secrets(args.storage)
        repo = zarrlake.Repo.create(
            catalog=args.catalog,
            storage=args.storage,
            name=args.name,
            storage_options=options,
            author=args.author,
            **chosen,
        )
        catalog = safe_url(args.catalog)
    else:
        if args.storage:
            args.subparser.error(
                "--storage goes with --catalog (a LAKE directory keeps its chunks)"
            )
        if is_lake_dir(args.path):
            raise zarrlake.AlreadyExistsError(
                f"{args.path} already holds a lake: use it (zarrlake log --lake {args.path}), "
                "or pick another directory"
            )
        repo = zarrlake.Repo.create(
            args.path, storage_options=options, author=args.author, **chosen
        )
        catalog = f"sqlite:///{args.path}/catalog.db"
    storage = safe_url(repo.storage)
    if args.json:
        emit_json({"name": repo.name, "catalog": catalog, "storage": storage})
    elif args.catalog:
        print(f"created repo {repo.name!r} in catalog {catalog}, chunks at {storage}")
    else:
        print(f"created a lake in {args.path} (catalog and chunks inside it)")
        print(f"next: open it from Python with zarrlake.Repo.open({args.path!r})")
    return 0


def _cmd_sessions(args: argparse.Namespace) -> int:
    from zarrlake.display import expiry_text
    from zarrlake.display._base import fmt_time

    repo = open_repo(args)
    if args.abandon:
        import zarrlake

        session = repo.session(args.abandon)
        if not isinstance(session, zarrlake.WritableSession):
            raise zarrlake.SessionClosedError(f"session {args.abandon} was already committed")
        try:
            session.abandon()
        except zarrlake.SessionError as exc:  # the engine's hint is a Python call
            status = session.info().status
            raise type(exc)(
                f"session {args.abandon} is {status}: there is nothing to abandon"
                + (" (gc drops its staged writes)" if status == "expired" else "")
            ) from exc
        if args.json:
            emit_json({"action": "abandoned", "session": args.abandon})
        else:
            print(f"abandoned session {args.abandon}")
        return 0
    infos = repo.sessions(include_closed=args.all)
    if args.json:
        emit_json({"sessions": [session_json(s) for s in infos]})
        return 0
    tty = stdout_is_tty()
    print_table(
        ["session", "branch", "base", "author", "status", "expires"],
        [
            (
                s.id,
                s.branch,
                s.base_commit[:10] if tty else s.base_commit,
                s.author,
                s.status,
                f"{fmt_time(s.expires_at)} ({expiry_text(s.expires_at)})"
                if s.status == "open"
                else fmt_time(s.expires_at),
            )
            for s in infos
        ],
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "init",
        help="create a repo (a directory, or --catalog URL --name NAME --storage URL)",
        description="Create a repo: in a directory (SQLite catalog and chunks inside it), or "
        "in a catalog database with its chunks at --storage (a path or s3://bucket/prefix).",
    )
    add_lake_args(sp)
    sp.add_argument("--storage", metavar="URL", help="chunk storage, with --catalog")
    sp.add_argument("--author", help="author of the first commit (default: the login name)")
    sp.add_argument(
        "--content-hash",
        metavar="NAME",
        help="the hash naming the repo's chunk objects: blake3 (default) or sha256",
    )
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_init)

    sp = sub.add_parser(
        "sessions",
        help="list sessions not yet committed or abandoned, with their status and expiry "
        "(--abandon ID discards one)",
        description="List writable sessions not yet committed or abandoned, each open or "
        "expired by the catalog's clock, with their expiry (--all: committed and abandoned "
        "ones too).",
    )
    add_lake_args(sp)
    sp.add_argument("--all", action="store_true", help="include committed and abandoned ones")
    sp.add_argument("--abandon", metavar="ID", help="abandon session ID (its staged writes go)")
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_sessions)
