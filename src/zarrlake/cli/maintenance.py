"""``zarrlake gc | expire | export | fsck``: progress bars on a terminal only (stderr)."""

from __future__ import annotations

import argparse

from zarrlake.cli import EXIT_FSCK_ISSUES
from zarrlake.cli._common import (
    Operand,
    add_lake_args,
    add_progress_option,
    confirm,
    open_repo,
    parse_duration,
    parse_options,
    parse_when,
)
from zarrlake.cli._output import emit_json

__all__ = ["register"]


def _show(args: argparse.Namespace, kind: str, report: object) -> None:
    from zarrlake.cli._output import report_json
    from zarrlake.display import report_text

    if args.json:
        emit_json(report_json(kind, report))
    else:
        print(report_text(report))


def _cmd_gc(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    if not args.dry_run:
        confirm(args, f"delete unreachable data of repo {repo.name!r} (grace {args.grace})")
    report = repo.gc(args.grace, dry_run=args.dry_run, progress=args.progress)
    _show(args, "gc", report)
    return 0


def _cmd_expire(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    if not args.dry_run:
        confirm(args, f"drop commits older than {args.older_than} that no ref needs")
    report = repo.expire(args.older_than, keep_tags=not args.no_keep_tags, dry_run=args.dry_run)
    _show(args, "expire", report)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    import zarrlake

    repo = open_repo(args)
    options = parse_options(args.target_options)
    try:
        report = repo.export(
            args.ref,
            args.target,
            storage_options=options or None,
            overwrite=args.overwrite,
            progress=args.progress,
        )
    except zarrlake.AlreadyExistsError as exc:  # the engine's hint names its Python keyword
        raise zarrlake.AlreadyExistsError(
            f"export target {args.target} is not empty: choose another target, or add "
            "--overwrite to clear it first"
        ) from exc
    _show(args, "export", report)
    return 0


def _cmd_fsck(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    report = repo.fsck(verify=args.verify, progress=args.progress)
    _show(args, "fsck", report)
    return 0 if report.ok else EXIT_FSCK_ISSUES


def _common(sp: argparse.ArgumentParser) -> None:
    add_progress_option(sp)
    sp.add_argument("--json", action="store_true", help="print the report as JSON")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "gc",
        help="delete unreachable chunk objects and catalog nodes (asks first unless --dry-run)",
        description="Two-phase garbage collection: marks what nothing reaches now and deletes "
        "what was marked at least --grace ago. Run it periodically; --grace 0 marks and "
        "deletes in one run.",
    )
    add_lake_args(sp)
    sp.add_argument(
        "--grace",
        type=parse_duration,
        default="24h",
        help="grace period (default 24h; 0, 90s, 15m, 7d)",
    )
    sp.add_argument("--dry-run", action="store_true", help="report only; delete nothing")
    sp.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    _common(sp)
    sp.set_defaults(func=_cmd_gc)

    sp = sub.add_parser(
        "expire",
        help="drop old commits no branch, tag or session needs (asks first unless --dry-run)",
        description="Drop commits older than --older-than (a duration before now, by the "
        "catalog's clock, or an ISO time) that no branch head, tag or open session needs; "
        "then gc frees their data.",
    )
    add_lake_args(sp)
    sp.add_argument(
        "--older-than",
        type=parse_when,
        required=True,
        metavar="WHEN",
        help="30d, 12h, or 2026-11-01T12:00 (UTC unless an offset is given)",
    )
    sp.add_argument(
        "--no-keep-tags", action="store_true", help="keep tagged commits but not their history"
    )
    sp.add_argument("--dry-run", action="store_true", help="report only; drop nothing")
    sp.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.set_defaults(func=_cmd_expire)

    sp = sub.add_parser(
        "export",
        help="write a plain Zarr v3 copy of a commit to a path or URL",
        description="Write a plain Zarr v3 copy of REF to TARGET (a local path or an fsspec "
        "URL; options with --target-option). TARGET must be empty unless --overwrite.",
    )
    add_lake_args(sp, Operand("REF", "the commit to export"), Operand("TARGET", "path or URL"))
    sp.add_argument(
        "--target-option",
        action="append",
        metavar="KEY=VALUE",
        dest="target_options",
        help="fsspec option for TARGET (repeatable; never printed)",
    )
    sp.add_argument("--overwrite", action="store_true", help="clear TARGET first")
    _common(sp)
    sp.set_defaults(func=_cmd_export)

    sp = sub.add_parser(
        "fsck",
        help="check every referenced object and catalog node exists (exit 6 on problems)",
        description="Check that every chunk object and catalog node a commit or open session "
        "references exists; with --verify also read every object and check its hash. Exits "
        "with status 6 when it finds problems.",
    )
    add_lake_args(sp)
    sp.add_argument("--verify", action="store_true", help="read every object and check its hash")
    _common(sp)
    sp.set_defaults(func=_cmd_fsck)
