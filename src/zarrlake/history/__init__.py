"""History operations on a repo core: ref expressions, diff, the commit graph, merge (and its
dry run) and revert.

``Repo`` exposes these as methods; the pure parts (diffing snapshots, planning a three-way
merge, the commit graph walk and its lanes, the ref expression grammar) live in
:mod:`zarrlake.model`.
"""

from zarrlake.history.branches import (
    commit_at,
    create_ref,
    delete_ref,
    list_refs,
    ref_commit,
    reflog,
    reset_branch,
)
from zarrlake.history.commits import branch_head, commit_info, diff, log, merge_base
from zarrlake.history.graph import graph
from zarrlake.history.merging import merge, preview_merge, revert
from zarrlake.history.refs import resolve_ref

__all__ = [
    "branch_head",
    "commit_at",
    "commit_info",
    "create_ref",
    "delete_ref",
    "diff",
    "graph",
    "list_refs",
    "log",
    "merge",
    "merge_base",
    "preview_merge",
    "ref_commit",
    "reflog",
    "reset_branch",
    "resolve_ref",
    "revert",
]
