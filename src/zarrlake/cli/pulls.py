"""``zarrlake pr open|list|show|comment|approve|merge|close`` and ``zarrlake watch``: pull
requests, and the change feed as commits land."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from zarrlake.cli._common import Operand, add_lake_args, open_repo
from zarrlake.cli._output import emit_json, print_table, time_json

__all__ = ["register"]


def _pr_json(pr: Any) -> dict[str, Any]:
    return {
        "number": pr.number,
        "state": pr.state,
        "source": pr.source,
        "target": pr.target,
        "title": pr.title,
        "description": pr.description,
        "author": pr.author,
        "merge_commit": pr.merge_commit,
        "created_at": time_json(pr.created_at),
        "updated_at": time_json(pr.updated_at),
    }


def _number(text: str) -> int:
    try:
        return int(text.lstrip("#"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a pull request number, like 3 or #3; got {text!r}"
        ) from None


def _pr(args: argparse.Namespace) -> Any:
    return open_repo(args).pull_request(_number(args.number))


def _cmd_open(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    pr = repo.open_pull_request(
        args.source, args.into, title=args.title, description=args.description, author=args.author
    )
    if args.json:
        emit_json(_pr_json(pr))
    else:
        print(f"opened pull request #{pr.number}: {pr.source} -> {pr.target}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    state = None if args.state == "all" else args.state
    found = open_repo(args).pull_requests(state=state)
    if args.json:
        emit_json({"pull_requests": [_pr_json(p) for p in found]})
    else:
        rows = [(f"#{p.number}", p.state, f"{p.source} -> {p.target}", p.author, p.title)
                for p in found]  # fmt: skip
        print_table(["#", "state", "merges", "author", "title"], rows)
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from zarrlake.display.pulls import pull_text

    pr = _pr(args)
    events, approvals, head = pr.events(), pr.approvals() if pr.head() else [], pr.head()
    results = pr.checks() if pr.state == "open" and head else []
    if args.json:
        doc = _pr_json(pr)
        doc["head"] = head
        doc["approvals"] = approvals
        doc["checks"] = {r.name: r.to_json() for r in results}
        doc["events"] = [
            {"kind": e.kind, "author": e.author, "body": e.body, "commit": e.commit,
             "at": time_json(e.at)}
            for e in events
        ]  # fmt: skip
        emit_json(doc)
        return 0
    print(pull_text(pr, events, approvals, head))
    for r in results:
        print(f"check {r.name}: {'passed' if r.passed else 'FAILED'} {r.message}")
    return 0


def _cmd_comment(args: argparse.Namespace) -> int:
    _pr(args).comment(args.text, author=args.author or _default())
    if not args.json:
        print(f"commented on #{_number(args.number)}")
    else:
        emit_json({"number": _number(args.number), "commented": True})
    return 0


def _default() -> str:
    from zarrlake.types import default_author

    return default_author()


def _cmd_approve(args: argparse.Namespace) -> int:
    pr = _pr(args)
    pr.approve(by=args.by or _default())
    if args.json:
        emit_json({"number": pr.number, "approvals": pr.approvals()})
    else:
        print(f"approved #{pr.number} (approvals: {', '.join(pr.approvals())})")
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    pr = _pr(args)
    commit = pr.merge(author=args.author or _default(), message=args.message)
    if args.json:
        emit_json({"number": pr.number, "state": pr.state, "merge_commit": commit})
    else:
        print(f"merged #{pr.number} into {pr.target}: commit {commit[:10]}")
    return 0


def _cmd_close(args: argparse.Namespace) -> int:
    pr = _pr(args)
    pr.close(by=args.by or _default())
    if args.json:
        emit_json({"number": pr.number, "state": pr.state})
    else:
        print(f"closed #{pr.number}")
    return 0


def _cmd_watch(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    since: Any = args.since or repo.branches().get(args.branch) or None
    if args.since is None:
        repo.resolve(args.branch)  # an unknown branch is refused before waiting
    shown = 0
    while True:
        for ev in repo.changes(since, branch=args.branch):
            since = ev.commit.id
            if args.json:
                print(json.dumps(ev.to_json()), flush=True)
            else:
                arrays = ", ".join(f"{p} ({n} chunks)" for p, n in ev.arrays.items())
                print(f"{ev.commit.id[:10]} {ev.branch} {ev.commit.author}: "
                      f"{ev.commit.message} [{arrays or 'no arrays'}]", flush=True)  # fmt: skip
            shown += 1
            if args.count is not None and shown >= args.count:
                return 0
        if args.once:
            return 0
        sys.stdout.flush()
        time.sleep(args.interval)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "pr",
        help="data pull requests: open, list, show, comment, approve, merge, close",
        description="Pull requests propose merging a branch into another (a protected one, "
        "typically); see docs/checks.md.",
    )
    words = sp.add_subparsers(dest="pr_command", required=True, metavar="ACTION")

    def action(name: str, help: str, *operands: Operand) -> argparse.ArgumentParser:
        p = words.add_parser(name, help=help)
        add_lake_args(p, *operands)
        p.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
        return p

    number = Operand("NUMBER", "the pull request's number")
    p = action("open", "open a pull request", Operand("SOURCE", "the branch to merge"))
    p.add_argument("--into", default="main", metavar="BRANCH", help="target branch (main)")
    p.add_argument("--title", required=True)
    p.add_argument("--description", default="")
    p.add_argument("--author", help="who opens it (default: this user)")
    p.set_defaults(func=_cmd_open)
    p = action("list", "pull requests")
    p.add_argument("--state", choices=("open", "merged", "closed", "all"), default="open")
    p.set_defaults(func=_cmd_list)
    action("show", "a pull request, its activity and its checks", number).set_defaults(
        func=_cmd_show
    )
    p = action("comment", "comment on a pull request", number, Operand("TEXT", "the comment"))
    p.add_argument("--author", help="who comments (default: this user)")
    p.set_defaults(func=_cmd_comment)
    p = action("approve", "approve the source's current head", number)
    p.add_argument("--by", help="who approves (default: this user)")
    p.set_defaults(func=_cmd_approve)
    p = action("merge", "merge it (checks re-run against the target's head)", number)
    p.add_argument("--author", help="who merges (default: this user)")
    p.add_argument("-m", "--message", help="the merge commit's message")
    p.set_defaults(func=_cmd_merge)
    p = action("close", "close without merging", number)
    p.add_argument("--by", help="who closes it (default: this user)")
    p.set_defaults(func=_cmd_close)

    sp = sub.add_parser(
        "watch",
        help="print commits as they land on a branch",
        description="Print each commit that lands on --branch, with the arrays it changed "
        "and their changed chunk counts, until interrupted. --json prints one JSON document "
        "per line.",
    )
    add_lake_args(sp)
    sp.add_argument("--branch", default="main")
    sp.add_argument("--since", metavar="REF", help="start after this commit (default: the head)")
    sp.add_argument("--interval", type=float, default=1.0, help="seconds between polls (1)")
    sp.add_argument("--count", type=int, help="exit after printing this many commits")
    sp.add_argument("--once", action="store_true", help="print what is there and exit")
    sp.add_argument("--json", action="store_true", help="one JSON document per line")
    sp.set_defaults(func=_cmd_watch)
