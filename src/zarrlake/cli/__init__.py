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
import os
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
    "zarrlake.cli.importing",
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
    "The lake is --lake/-C PATH (a directory or a version URL; default $ZARRLAKE_LAKE, else\n"
    "./my-lake), or --catalog URL --name NAME, with --storage-option KEY=VALUE for the chunk\n"
    "storage's credentials (never printed). Every command takes --json (shapes in\n"
    "docs/cli.md).\n\nexit status:\n"
    + "\n".join(f"  {code:>3}  {text}" for code, text in EXIT_CODES.items())
)


def _build() -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser, and the names of its commands (aliases included)."""
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
    return p, list(sub.choices)


def _parser() -> argparse.ArgumentParser:
    return _build()[0]


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


def _unknown_command(commands: list[str], argv: Sequence[str]) -> str | None:
    """The error for a first word that is no command, with the commands it is close to."""
    from zarrlake.types import did_you_mean

    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or argv[0] != first:
        return None
    if first in commands:
        return None
    return f"unknown command {first!r}{did_you_mean(first, commands)} (zarrlake --help lists them)"


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
        print(f"zarrlake: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = _build()
    argv = list(sys.argv[1:] if argv is None else argv)
    unknown = _unknown_command(commands, argv)
    if unknown is not None:
        parser.print_usage(sys.stderr)
        print(f"zarrlake: {unknown}", file=sys.stderr)
        return EXIT_BAD_INPUT
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
        if getattr(args, "resolve_lake", False):
            from zarrlake.cli._common import resolve_lake

            resolve_lake(args)
        return int(args.func(args))
    except KeyboardInterrupt:
        print("zarrlake: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:  # every failure gets a status that says which kind it was
        code = exit_code(exc)
        _report(exc, code, as_json)
        return code


def _reader_gone() -> int:
    """The reader of stdout stopped reading (``zarrlake log | head``): what it did not read
    was not wanted, so the command ends quietly with success, as its work is done or was only
    output. stdout now goes nowhere, so the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
