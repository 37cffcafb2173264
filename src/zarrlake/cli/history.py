"""``zarrlake log | show | diff``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from zarrlake.cli._common import Operand, add_lake_args, open_repo
from zarrlake.cli._output import (
    commit_json,
    diff_json,
    emit_json,
    print_table,
    stdout_is_tty,
)
from zarrlake.display import review_lines

if TYPE_CHECKING:
    from zarrlake import CommitInfo

__all__ = ["register"]


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _log_message(c: CommitInfo) -> str:
    text = _first_line(c.message) + (" (merge)" if len(c.parents) > 1 else "")
    review = review_lines(c)
    return text + (f"  [{', '.join(review)}]" if review else "")


def _cmd_log(args: argparse.Namespace) -> int:
    from zarrlake.cli._graph import graph_lines
    from zarrlake.display._base import fmt_time

    repo = open_repo(args, version=True)
    ref = args.ref_operand or args.url_ref or args.ref
    if args.graph:
        graph = repo.graph([ref], limit=args.n)
        commits = [r.commit for r in graph.rows]
    else:
        commits = repo.log(ref, limit=args.n)
    if args.json:
        emit_json({"ref": ref, "commits": [commit_json(c) for c in commits]})
        return 0
    if args.graph:
        tty = stdout_is_tty()

        def describe(c: CommitInfo) -> str:
            cid = c.id[:10] if tty else c.id
            review = review_lines(c)
            tail = f"  [{', '.join(review)}]" if review else ""
            return f"{cid}  {fmt_time(c.created_at)}  {c.author}  {_first_line(c.message)}{tail}"

        for line in graph_lines(graph.rows, graph.incoming, graph.width, describe):
            print(line)
        return 0
    tty = stdout_is_tty()
    print_table(
        ["commit", "time", "author", "message"],
        [
            (
                c.id[:10] if tty else c.id,
                fmt_time(c.created_at),
                c.author,
                _log_message(c),
            )
            for c in commits
        ],
    )
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from zarrlake.display import chunk_axes, commit_text, diff_text

    repo = open_repo(args, version=True)
    info = repo.commit_info(args.ref_operand or args.url_ref or "main")
    d = repo.diff(info.parents[0], info.id) if info.parents else None
    if args.json:
        emit_json({"commit": commit_json(info), "diff": diff_json(d) if d is not None else None})
        return 0
    print(commit_text(info))
    if d is not None:
        print()
        print(diff_text(d, maps=args.map, grids=chunk_axes(repo, d) if args.map else None))
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    from zarrlake.display import chunk_axes, diff_text

    repo = open_repo(args)
    if args.b is None:
        info = repo.commit_info(args.a)
        if not info.parents:
            d = repo.diff(info.id, info.id)
        else:
            d = repo.diff(info.parents[0], info.id)
    else:
        d = repo.diff(args.a, args.b)
    if args.json:
        emit_json(diff_json(d, chunks=args.chunks))
        return 0
    print(diff_text(d, maps=args.map, grids=chunk_axes(repo, d) if args.map else None))
    if args.chunks:
        for n in d.nodes:
            for change, coords in (
                ("added", n.chunks_added),
                ("changed", n.chunks_changed),
                ("removed", n.chunks_removed),
            ):
                for c in sorted(coords):
                    print(f"{n.path}\t{change}\t{','.join(map(str, c))}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "log",
        help="list commits, newest first (--graph draws merges)",
        description="List the commits of a ref, newest first: by first parents, or with "
        "--graph every parent, merges drawn as lanes.",
    )
    add_lake_args(
        sp,
        Operand(
            "REF", "branch, tag, commit or ref expression (default main)", False, "ref_operand"
        ),
    )
    sp.add_argument("--ref", default="main", help=argparse.SUPPRESS)  # the REF operand's old name
    sp.add_argument("-n", type=int, default=None, metavar="N", help="at most N commits")
    sp.add_argument("--graph", action="store_true", help="draw the commit graph, merges included")
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_log)

    sp = sub.add_parser(
        "show",
        help="a commit: id, parents, author, message, metadata, and what it changed",
        description="Show one commit and its diff against its first parent.",
    )
    add_lake_args(sp, Operand("REF", "the commit (default main)", False, "ref_operand"))
    sp.add_argument("--map", action="store_true", help="draw each changed array's chunk map")
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_show)

    sp = sub.add_parser(
        "diff",
        help="what changed between two refs (or one commit and its parent)",
        description="What changed from ref A to ref B: nodes, metadata fields, attributes, "
        "chunk counts. With only A: A's changes against its first parent.",
    )
    add_lake_args(sp, Operand("A", "the ref before"), Operand("B", "the ref after", False))
    sp.add_argument("--chunks", action="store_true", help="list every changed chunk's coordinates")
    sp.add_argument("--map", action="store_true", help="draw each changed array's chunk map")
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_diff)
