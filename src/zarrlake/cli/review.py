"""``zarrlake checks list|add|remove`` and ``zarrlake protect``: the rules a branch enforces
before commits and merges land on it."""

from __future__ import annotations

import argparse
from typing import Any

from zarrlake.cli._common import Operand, add_lake_args, open_repo
from zarrlake.cli._output import emit_json, print_table

__all__ = ["register"]

KINDS = ("no-nan", "value-range", "required-attributes", "frozen-schema", "max-chunks", "custom")


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


def _check_json(c: Any) -> dict[str, Any]:
    return {
        "name": c.name,
        "kind": c.kind,
        "params": c.params,
        "on": list(c.on),
        "branches": list(c.branches),
        "timeout": c.timeout,
        "description": c.describe(),
    }


def _cmd_list(args: argparse.Namespace) -> int:
    found = open_repo(args).checks()
    if args.json:
        emit_json({"checks": [_check_json(c) for c in found]})
    else:
        rows = [(c.name, ",".join(c.on), ",".join(c.branches), c.describe()) for c in found]
        print_table(["name", "on", "branches", "checks"], rows)
    return 0


def _spec(args: argparse.Namespace) -> Any:
    from zarrlake import checks

    arrays = _names(args.arrays)
    kind = args.kind
    if kind not in KINDS:
        raise argparse.ArgumentTypeError(f"unknown check kind {kind!r}; kinds: {', '.join(KINDS)}")
    if kind == "no-nan":
        return checks.no_nan(*arrays)
    if kind == "value-range":
        return checks.value_range(*arrays, min=args.min, max=args.max)
    if kind == "required-attributes":
        return checks.required_attributes(*_names(args.attributes), arrays=arrays)
    if kind == "frozen-schema":
        return checks.frozen_schema(*arrays)
    if kind == "max-chunks":
        if args.limit is None:
            raise argparse.ArgumentTypeError("max-chunks needs --limit N")
        return checks.max_chunks(args.limit, arrays=arrays)
    if not args.entry_point:
        raise argparse.ArgumentTypeError("custom needs --entry-point NAME")
    return checks.custom(args.entry_point)


def _cmd_add(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    spec = repo.add_check(
        args.check_name,
        _spec(args),
        on=_names(args.on),
        branches=_names(args.branches),
        timeout=args.timeout,
        replace=args.replace,
    )
    if args.json:
        emit_json({"added": _check_json(spec)})
    else:
        print(f"check {spec.name}: {spec.describe()} (on {', '.join(spec.on)} to "
              f"{', '.join(spec.branches)})")  # fmt: skip
    return 0


def _cmd_remove(args: argparse.Namespace) -> int:
    open_repo(args).remove_check(args.check_name)
    if args.json:
        emit_json({"removed": args.check_name})
    else:
        print(f"removed check {args.check_name}")
    return 0


def _rule_json(r: Any) -> dict[str, Any]:
    return {
        "branch": r.branch,
        "required_checks": list(r.required_checks),
        "required_approvals": r.required_approvals,
        "allow_direct_commits": r.allow_direct_commits,
    }


def _cmd_protect(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    if args.branch is None:
        rules = repo.protected_branches()
        if args.json:
            emit_json({"protected": [_rule_json(r) for r in rules]})
        else:
            rows = [
                (r.branch, ",".join(r.required_checks) or "-", str(r.required_approvals),
                 "yes" if r.allow_direct_commits else "no")
                for r in rules
            ]  # fmt: skip
            print_table(["branch", "required checks", "approvals", "direct commits"], rows)
        return 0
    if args.remove:
        repo.unprotect_branch(args.branch)
        if args.json:
            emit_json({"unprotected": args.branch})
        else:
            print(f"branch {args.branch} is no longer protected")
        return 0
    rule = repo.protect_branch(
        args.branch,
        required_checks=_names(args.require_checks),
        required_approvals=args.approvals,
        allow_direct_commits=args.allow_direct_commits,
    )
    if args.json:
        emit_json({"protected": _rule_json(rule)})
    else:
        print(
            f"branch {rule.branch} is protected: {rule.required_approvals} "
            f"approval{'' if rule.required_approvals == 1 else 's'} required, checks "
            f"{', '.join(rule.required_checks) or 'none'}, direct commits "
            f"{'allowed' if rule.allow_direct_commits else 'refused'}"
        )
    return 0


def _json_flag(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "checks",
        help="list, add or remove the checks that gate commits and merges",
        description="Checks run before a commit or merge lands on a branch; a failed check "
        "refuses it and changes nothing. See docs/checks.md.",
    )
    words = sp.add_subparsers(dest="checks_command", required=True, metavar="ACTION")
    ls = words.add_parser("list", help="the repo's checks")
    add_lake_args(ls)
    _json_flag(ls)
    ls.set_defaults(func=_cmd_list)

    add = words.add_parser("add", help="add a check")
    add_lake_args(
        add,
        Operand("NAME", "the check's name", dest="check_name"),
        Operand("KIND", f"one of {', '.join(KINDS)}"),
    )
    add.add_argument("--arrays", metavar="A,B", help="array paths or glob patterns (all)")
    add.add_argument("--min", type=float, help="value-range: the lowest value allowed")
    add.add_argument("--max", type=float, help="value-range: the highest value allowed")
    add.add_argument("--attributes", metavar="A,B", help="required-attributes: their names")
    add.add_argument("--limit", type=int, help="max-chunks: changed chunks allowed per array")
    add.add_argument("--entry-point", help="custom: the name in the zarrlake.checks group")
    add.add_argument("--on", default="commit,merge", help="events: commit,merge (both)")
    add.add_argument("--branches", default="main", help="branches or patterns (main)")
    add.add_argument("--timeout", type=float, help="seconds before the check fails (60)")
    add.add_argument("--replace", action="store_true", help="replace a check of that name")
    _json_flag(add)
    add.set_defaults(func=_cmd_add)

    rm = words.add_parser("remove", help="remove a check")
    add_lake_args(rm, Operand("NAME", "the check's name", dest="check_name"))
    _json_flag(rm)
    rm.set_defaults(func=_cmd_remove)

    sp = sub.add_parser(
        "protect",
        help="protect a branch (or list protected branches)",
        description="Protect BRANCH: direct commits, merges, resets and deletes are refused; "
        "changes arrive by pull request (zarrlake pr). Without BRANCH, list the protected "
        "branches.",
    )
    add_lake_args(sp, Operand("BRANCH", "the branch to protect", required=False))
    sp.add_argument(
        "--require-checks", metavar="A,B", help="checks a pull request must pass to merge"
    )
    sp.add_argument("--approvals", type=int, default=0, help="approvals a merge needs (0)")
    sp.add_argument(
        "--allow-direct-commits", action="store_true", help="still allow direct commits"
    )
    sp.add_argument("--remove", action="store_true", help="remove the protection")
    _json_flag(sp)
    sp.set_defaults(func=_cmd_protect)
