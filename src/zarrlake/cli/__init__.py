"""The ``zarrlake`` command.

Each subcommand group is a module with a ``register(subparsers)`` function; this module
assembles them, and turns errors into a message and an exit status that tells what kind of
failure it was (see :data:`EXIT_CODES`). Subcommands import the engine's heavy parts inside
their functions, so that ``zarrlake --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence

import zarrlake
from zarrlake.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    ZarrlakeError,
)

__all__ = ["EXIT_CODES", "main"]

# Subcommand modules, in the order their commands appear in ``zarrlake --help``.
COMMAND_MODULES = (
    "zarrlake.cli.repo",
    "zarrlake.cli.history",
    "zarrlake.cli.refs",
    "zarrlake.cli.merging",
    "zarrlake.cli.maintenance",
    "zarrlake.cli.dashboard",
    "zarrlake.cli.serve",
    "zarrlake.cli.catalog",
    "zarrlake.cli.review",
    "zarrlake.cli.pulls",
)

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_CONFLICT = 3
EXIT_FAILURE = 4
EXIT_NOT_CONFIRMED = 5
EXIT_FSCK_ISSUES = 6
EXIT_INTERRUPTED = 130

EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_NOT_FOUND: "not found: no such repo, branch, tag, commit or session",
    EXIT_BAD_INPUT: "bad input: usage error, invalid name, ref or value, or already exists",
    EXIT_CONFLICT: "conflict: merge, revert or reset collided with other changes",
    EXIT_FAILURE: "other failure: storage, catalog, session state, or an internal error",
    EXIT_NOT_CONFIRMED: "not confirmed: a destructive command without --yes off a terminal",
    EXIT_FSCK_ISSUES: "fsck found missing, corrupt or unreadable data",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}

_EPILOG = (
    "The lake is a directory (the first argument), or --catalog URL --name NAME with\n"
    "--storage-option KEY=VALUE for the chunk storage's credentials (never printed).\n"
    "Every command takes --json (shapes in docs/cli.md).\n\nexit status:\n"
    + "\n".join(f"  {code:>3}  {text}" for code, text in EXIT_CODES.items())
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="zarrlake",
        description="Versioned, transactional Zarr v3 repos.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"zarrlake {zarrlake.__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


def exit_code(exc: BaseException) -> int:
    """The exit status for an error raised by a command."""
    if isinstance(exc, NotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(exc, InvalidInputError | AlreadyExistsError | argparse.ArgumentTypeError):
        return EXIT_BAD_INPUT
    if isinstance(exc, ConflictError):
        return EXIT_CONFLICT
    from zarrlake.cli._common import Aborted

    if isinstance(exc, Aborted):
        return EXIT_NOT_CONFIRMED
    return EXIT_FAILURE


def _report(exc: BaseException, code: int, as_json: bool) -> None:
    from zarrlake.cli._common import redact

    kind = getattr(exc, "kind", None) or (
        "not_confirmed" if code == EXIT_NOT_CONFIRMED else "invalid_input"
    )
    if not isinstance(exc, ZarrlakeError | argparse.ArgumentTypeError) and code == EXIT_FAILURE:
        kind = "internal"
    message = redact(str(exc))
    if as_json:
        from zarrlake.cli._output import conflict_json

        doc = {"kind": kind, "message": message, "exit_code": code}
        if isinstance(exc, ConflictError):
            conflicts = [conflict_json(c) for c in exc.conflicts]
            doc["conflicts"] = json.loads(redact(json.dumps(conflicts)))
        print(json.dumps({"error": doc}, indent=2), file=sys.stderr)
    elif kind == "internal":
        print(f"zarrlake: internal error ({type(exc).__name__}): {message}", file=sys.stderr)
    else:
        print(f"zarrlake: error [{kind}]: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "operand_spec", None) is None and extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    as_json = bool(getattr(args, "json", False))
    try:
        if getattr(args, "operand_spec", None) is not None:
            from zarrlake.cli._common import bind_operands

            if any(e.startswith("-") and e != "-" for e in extra):
                args.subparser.error(f"unrecognized arguments: {' '.join(extra)}")
            bind_operands(args, extra)
        return int(args.func(args))
    except KeyboardInterrupt:
        print("zarrlake: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # every failure gets a status that says which kind it was
        code = exit_code(exc)
        _report(exc, code, as_json)
        return code


if __name__ == "__main__":
    sys.exit(main())
