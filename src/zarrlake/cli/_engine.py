"""The engine calls whose keywords are being renamed (``create_branch(ref=)``,
``merge(branch=, solver=)``): kept here so that the rename is a change in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import zarrlake

__all__ = ["create_branch", "merge", "revert"]


def create_branch(repo: zarrlake.Repo, name: str, ref: str) -> str:
    return repo.create_branch(name, ref)


def merge(
    repo: zarrlake.Repo,
    source: str,
    branch: str,
    *,
    solver: Any,
    message: str | None,
    fast_forward: bool,
) -> str:
    return repo.merge(
        source, branch=branch, solver=solver, message=message, fast_forward=fast_forward
    )


def revert(repo: zarrlake.Repo, commit: str, branch: str, *, message: str | None) -> str:
    return repo.revert(commit, branch=branch, message=message)
