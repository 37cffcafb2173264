"""``zarrlake branch | tag | reset``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from zarrlake.cli import _engine
from zarrlake.cli._common import Operand, add_lake_args, confirm, open_repo
from zarrlake.cli._output import emit_json, print_table, stdout_is_tty

if TYPE_CHECKING:
    import zarrlake

__all__ = ["register"]


def _list(repo: zarrlake.Repo, refs: dict[str, str], what: str, as_json: bool) -> int:
    from zarrlake.display._base import fmt_time

    infos = {name: repo.commit_info(commit) for name, commit in refs.items()}
    if as_json:
        emit_json(
            {
                what: [
                    {
                        "name": name,
                        "commit": refs[name],
                        "created_at": infos[name].created_at.isoformat(),
                        "message": infos[name].message,
                    }
                    for name in sorted(refs)
                ]
            }
        )
        return 0
    tty = stdout_is_tty()
    print_table(
        ["name", "commit", "time", "message"],
        [
            (
                name,
                refs[name][:10] if tty else refs[name],
                fmt_time(infos[name].created_at),
                (infos[name].message or "").splitlines()[0] if infos[name].message else "",
            )
            for name in sorted(refs)
        ],
    )
    return 0


def _done(args: argparse.Namespace, doc: dict[str, str], text: str) -> int:
    if args.json:
        emit_json(doc)
    else:
        print(text)
    return 0


def _cmd_branch(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    if args.delete:
        name = args.delete
        head = repo.branches().get(name)
        confirm(args, f"delete branch {name!r}" + (f" (at {head[:10]})" if head else ""))
        commit = repo.delete_branch(name)
        return _done(
            args,
            {"action": "deleted", "branch": name, "commit": commit},
            f"deleted branch {name} (was {commit[:10]})",
        )
    if args.ref_name is None:
        return _list(repo, repo.branches(), "branches", args.json)
    commit = _engine.create_branch(repo, args.ref_name, args.start or "main")
    return _done(
        args,
        {"action": "created", "branch": args.ref_name, "commit": commit},
        f"created branch {args.ref_name} at {commit[:10]}",
    )


def _cmd_tag(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    if args.delete:
        name = args.delete
        at = repo.tags().get(name)
        confirm(args, f"delete tag {name!r}" + (f" (at {at[:10]})" if at else ""))
        commit = repo.delete_tag(name)
        return _done(
            args,
            {"action": "deleted", "tag": name, "commit": commit},
            f"deleted tag {name} (was {commit[:10]})",
        )
    if args.ref_name is None:
        return _list(repo, repo.tags(), "tags", args.json)
    commit = repo.create_tag(args.ref_name, args.ref or "main")
    return _done(
        args,
        {"action": "created", "tag": args.ref_name, "commit": commit},
        f"created tag {args.ref_name} at {commit[:10]}",
    )


def _cmd_reset(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    before = repo.branches().get(args.branch)
    target = repo.resolve(args.to)
    if before is not None:
        confirm(
            args,
            f"move branch {args.branch!r} from {before[:10]} to {target[:10]} "
            "(commits only it reached become unreachable)",
        )
    new = repo.reset_branch(
        args.branch, target, expected=args.expected or before, message=args.message or ""
    )
    return _done(
        args,
        {"action": "reset", "branch": args.branch, "from": before or "", "to": new},
        f"reset {args.branch}: {(before or '?')[:10]} -> {new[:10]}",
    )


def _yes(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "branch",
        aliases=["branches"],
        help="list, create (NAME [START]) or delete (-d NAME) branches",
        description="Without NAME: list branches with their head commits. With NAME: create "
        "a branch at START (default main). With -d NAME: delete a branch (asks first).",
    )
    add_lake_args(
        sp,
        Operand("NAME", "the branch to create", False, "ref_name"),
        Operand("START", "where it starts: a ref (default main)", False),
    )
    sp.add_argument("-d", "--delete", metavar="NAME", help="delete branch NAME")
    _yes(sp)
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_branch)

    sp = sub.add_parser(
        "tag",
        help="list, create (NAME [REF]) or delete (-d NAME) tags",
        description="Without NAME: list tags. With NAME: tag REF (default main), for ever. "
        "With -d NAME: delete a tag (asks first).",
    )
    add_lake_args(
        sp,
        Operand("NAME", "the tag to create", False, "ref_name"),
        Operand("REF", "what to tag (default main)", False),
    )
    sp.add_argument("-d", "--delete", metavar="NAME", help="delete tag NAME")
    _yes(sp)
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_tag)

    sp = sub.add_parser(
        "reset",
        help="point a branch at another commit (asks first; recorded in the ref log)",
        description="Move BRANCH to TO by compare-and-swap. Commits only BRANCH reached "
        "become unreachable (gc frees them after expire); the ref log keeps the old head.",
    )
    add_lake_args(sp, Operand("BRANCH", "the branch to move"), Operand("TO", "the target ref"))
    sp.add_argument(
        "--expected", metavar="COMMIT", help="fail unless the branch is at COMMIT (default: now)"
    )
    sp.add_argument("-m", "--message", help="reason, kept in the ref log")
    _yes(sp)
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_reset)
