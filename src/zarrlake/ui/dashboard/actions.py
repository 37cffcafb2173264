"""The dashboard's write actions: the only place it calls repo methods that change the lake.

Keyword names follow the engine's vocabulary; a rename there is a change here only.
"""

from __future__ import annotations

from typing import Literal, cast

from zarrlake import Repo
from zarrlake.ui.dashboard.common import Writes

__all__ = ["create_branch", "create_tag", "merge", "revert"]

AUTHOR = "dashboard"


def create_branch(repo: Repo, writes: Writes, token: str, name: str, at: str) -> str:
    writes.check(token)
    return repo.create_branch(name, at, author=AUTHOR)


def create_tag(repo: Repo, writes: Writes, token: str, name: str, at: str) -> str:
    writes.check(token)
    return repo.create_tag(name, at, author=AUTHOR)


def revert(repo: Repo, writes: Writes, token: str, commit: str, branch: str) -> str:
    writes.check(token)
    return repo.revert(commit, branch=branch, author=AUTHOR)


def merge(repo: Repo, writes: Writes, token: str, source: str, into: str, solver: str) -> str:
    writes.check(token)
    # the engine checks the solver's value; the page only passes the one the user picked
    choice = cast(Literal["fail", "ours", "theirs"], solver)
    return repo.merge(source, branch=into, solver=choice, author=AUTHOR)
