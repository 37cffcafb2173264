"""``zarrlake log | branches | sessions``."""

from __future__ import annotations

import argparse

from zarrlake.cli._common import add_repo_args, open_repo

__all__ = ["register"]


def _cmd_log(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    for info in repo.log(args.ref, limit=args.n):
        meta = f"  {info.metadata}" if info.metadata else ""
        print(
            f"{info.id}  {info.created_at:%Y-%m-%d %H:%M:%S}  {info.author}  {info.message}{meta}"
        )
    return 0


def _cmd_branches(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    for name, commit in repo.branches().items():
        print(f"{name}\t{commit}")
    for name, commit in repo.tags().items():
        print(f"{name}\t{commit}\t(tag)")
    return 0


def _cmd_sessions(args: argparse.Namespace) -> int:
    repo = open_repo(args)
    for info in repo.sessions():
        print(
            f"{info.id}  {info.branch}  {info.author}  expires {info.expires_at:%Y-%m-%d %H:%M:%S}"
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, func, help_ in (
        ("log", _cmd_log, "list commits, newest first"),
        ("branches", _cmd_branches, "list branches and tags"),
        ("sessions", _cmd_sessions, "list open sessions and their expiry"),
    ):
        sp = sub.add_parser(name, help=help_)
        add_repo_args(sp)
        if name == "log":
            sp.add_argument("--ref", default="main")
            sp.add_argument("-n", type=int, default=None, help="at most N commits")
        sp.set_defaults(func=func)
