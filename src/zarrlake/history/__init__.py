"""History operations on a repo core: ref expressions, diff, the commit graph, merge (and its
dry run) and revert.

``Repo`` exposes these as methods; the pure parts (diffing snapshots, planning a three-way
merge, the commit graph walk and its lanes, the ref expression grammar) live in
:mod:`zarrlake.model`.
"""

from typing import TYPE_CHECKING

from zarrlake._loading import lazy_names

if TYPE_CHECKING:
    from zarrlake.history.branches import commit_at as commit_at
    from zarrlake.history.branches import create_ref as create_ref
    from zarrlake.history.branches import delete_ref as delete_ref
    from zarrlake.history.branches import list_refs as list_refs
    from zarrlake.history.branches import ref_commit as ref_commit
    from zarrlake.history.branches import reflog as reflog
    from zarrlake.history.branches import reset_branch as reset_branch
    from zarrlake.history.commits import branch_head as branch_head
    from zarrlake.history.commits import commit_info as commit_info
    from zarrlake.history.commits import diff as diff
    from zarrlake.history.commits import log as log
    from zarrlake.history.commits import merge_base as merge_base
    from zarrlake.history.graph_pages import graph as graph
    from zarrlake.history.merging import merge as merge
    from zarrlake.history.merging import preview_merge as preview_merge
    from zarrlake.history.merging import revert as revert
    from zarrlake.history.refs import resolve_ref as resolve_ref

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

# Each name loads its module on first use, so importing one submodule loads none of the others
# (reading a commit needs neither merging nor the graph).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "zarrlake.history.branches": (
            "commit_at",
            "create_ref",
            "delete_ref",
            "list_refs",
            "ref_commit",
            "reflog",
            "reset_branch",
        ),
        "zarrlake.history.commits": ("branch_head", "commit_info", "diff", "log", "merge_base"),
        "zarrlake.history.graph_pages": ("graph",),
        "zarrlake.history.merging": ("merge", "preview_merge", "revert"),
        "zarrlake.history.refs": ("resolve_ref",),
    },
)
