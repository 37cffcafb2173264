"""``zarrlake merge | revert``: a conflict exits with status 3 and lists every conflict."""

from __future__ import annotations

import argparse

from zarrlake.cli import EXIT_CONFLICT, _engine
from zarrlake.cli._common import Operand, add_lake_args, open_repo
from zarrlake.cli._output import conflict_json, diff_json, emit_json
from zarrlake.errors import ConflictError

__all__ = ["register"]


def _cmd_preview(args: argparse.Namespace) -> int:
    from zarrlake.display import conflict_text, diff_text

    repo = open_repo(args)
    p = repo.merge(
        args.source, args.into, solver=args.solver, fast_forward=not args.no_ff, dry_run=True
    )
    if args.json:
        emit_json(
            {
                "result": p.outcome,
                "refused": p.refused,
                "branch": p.into,
                "source": p.source_commit,
                "head": p.head,
                "base": p.base,
                "solver": p.solver,
                "conflicts": [conflict_json(c) for c in p.conflicts],
                "changes": None if p.changes is None else diff_json(p.changes),
            }
        )
    else:
        print(f"dry run: {p.summary()}")
        for c in p.conflicts:
            print(f"  - {conflict_text(c)}")
        if p.changes is not None and p.outcome != "up-to-date":
            print(f"{p.into} would change:")
            print(diff_text(p.changes))
    return EXIT_CONFLICT if p.refused else 0


def _cmd_merge(args: argparse.Namespace) -> int:
    if args.dry_run:
        return _cmd_preview(args)
    repo = open_repo(args)
    before = repo.branches().get(args.into)
    source = repo.resolve(args.source)
    try:
        head = _engine.merge(
            repo,
            args.source,
            args.into,
            solver=args.solver,
            message=args.message,
            fast_forward=not args.no_ff,
        )
    except ConflictError as exc:
        if type(exc) is not ConflictError or "solver=" not in str(exc):
            raise
        # the engine's hint names its Python keyword; here it is a flag
        raise ConflictError(
            f"cannot merge {args.source!r} into {args.into!r}: both changed the same data. "
            f"Add --solver ours (keep {args.into!r}) or --solver theirs (take "
            f"{args.source!r}), or change one side first",
            exc.conflicts,
        ) from exc
    result = "up-to-date" if head == before else ("fast-forward" if head == source else "merge")
    if args.json:
        emit_json(
            {
                "result": result,
                "branch": args.into,
                "source": source,
                "before": before,
                "head": head,
            }
        )
    elif result == "up-to-date":
        print(f"{args.into} already contains {args.source}")
    elif result == "fast-forward":
        print(f"fast-forward {args.into}: {(before or '?')[:10]} -> {head[:10]}")
    else:
        print(f"merged {args.source} into {args.into}: commit {head[:10]}")
    return 0


def _cmd_revert(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    commit = repo.resolve(args.commit)
    new = _engine.revert(repo, commit, args.branch, message=args.message)
    if args.json:
        emit_json({"branch": args.branch, "reverted": commit, "commit": new})
    else:
        print(f"reverted {commit[:10]} on {args.branch}: commit {new[:10]}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "merge",
        help="merge a ref into a branch (exit 3 on conflict)",
        description="Merge SOURCE into --into (default main): a fast-forward when possible, "
        "else a three-way merge at chunk level. Conflicts exit with status 3 and are listed, "
        "unless --solver ours|theirs resolves them.",
    )
    add_lake_args(sp, Operand("SOURCE", "the ref to merge"))
    sp.add_argument("--into", default="main", metavar="BRANCH", help="target branch (main)")
    sp.add_argument(
        "--solver",
        choices=("fail", "ours", "theirs"),
        default="fail",
        help="on conflict: fail (default), keep ours (the target's) or take theirs",
    )
    sp.add_argument("-m", "--message", help="the merge commit's message")
    sp.add_argument(
        "--no-ff", action="store_true", help="record a merge commit even if a fast-forward would do"
    )
    sp.add_argument(
        "--dry-run",
        action="store_true",
        help="say what the merge would do (conflicts, changes) and write nothing; exit 3 if it "
        "would be refused",
    )
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_merge)

    sp = sub.add_parser(
        "revert",
        help="commit the inverse of one commit (exit 3 on conflict)",
        description="Commit on --branch the inverse of COMMIT's changes against its first "
        "parent. Refused (status 3) when later commits changed the same data.",
    )
    add_lake_args(sp, Operand("COMMIT", "the commit to undo"))
    sp.add_argument("--branch", default="main", help="the branch to commit on (main)")
    sp.add_argument("-m", "--message", help="the revert commit's message")
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    sp.set_defaults(func=_cmd_revert)
