"""Pure values: manifests, snapshots, change sets, conflict detection (no SQL, no I/O)."""

from typing import TYPE_CHECKING

from zarrlake._loading import lazy_names

if TYPE_CHECKING:
    from zarrlake.model.changes import BuildResult as BuildResult
    from zarrlake.model.changes import ChangeSet as ChangeSet
    from zarrlake.model.changes import NodeChange as NodeChange
    from zarrlake.model.changes import SnapshotReader as SnapshotReader
    from zarrlake.model.changes import StagedNode as StagedNode
    from zarrlake.model.changes import StagedState as StagedState
    from zarrlake.model.changes import build_snapshot as build_snapshot
    from zarrlake.model.changes import changes_from_staged as changes_from_staged
    from zarrlake.model.changes import iter_manifest as iter_manifest
    from zarrlake.model.conflicts import ReadSet as ReadSet
    from zarrlake.model.conflicts import Solver as Solver
    from zarrlake.model.conflicts import check_solver as check_solver
    from zarrlake.model.conflicts import detect_conflicts as detect_conflicts
    from zarrlake.model.conflicts import rebase_staged as rebase_staged
    from zarrlake.model.index import NODE_KIND as NODE_KIND
    from zarrlake.model.index import IndexNode as IndexNode
    from zarrlake.model.index import ManifestIndex as ManifestIndex
    from zarrlake.model.manifest import ChunkRef as ChunkRef
    from zarrlake.model.manifest import Shard as Shard
    from zarrlake.model.manifest import checksum as checksum
    from zarrlake.model.manifest import content_hash as content_hash
    from zarrlake.model.metadata import NodeMeta as NodeMeta
    from zarrlake.model.metadata import parse_node_meta as parse_node_meta
    from zarrlake.model.snapshot import NodeEntry as NodeEntry
    from zarrlake.model.snapshot import Root as Root
    from zarrlake.model.virtual import VirtualSource as VirtualSource
    from zarrlake.model.virtual import virtual_hash as virtual_hash

__all__ = [
    "NODE_KIND",
    "BuildResult",
    "ChangeSet",
    "ChunkRef",
    "IndexNode",
    "ManifestIndex",
    "NodeChange",
    "NodeEntry",
    "NodeMeta",
    "ReadSet",
    "Root",
    "Shard",
    "SnapshotReader",
    "Solver",
    "StagedNode",
    "StagedState",
    "VirtualSource",
    "build_snapshot",
    "changes_from_staged",
    "check_solver",
    "checksum",
    "content_hash",
    "detect_conflicts",
    "iter_manifest",
    "parse_node_meta",
    "rebase_staged",
    "virtual_hash",
]

# Each name loads its module on first use, so importing one submodule loads none of the others
# (reading a commit needs no conflict detection).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "zarrlake.model.changes": (
            "BuildResult",
            "ChangeSet",
            "NodeChange",
            "SnapshotReader",
            "StagedNode",
            "StagedState",
            "build_snapshot",
            "changes_from_staged",
            "iter_manifest",
        ),
        "zarrlake.model.conflicts": (
            "ReadSet",
            "Solver",
            "check_solver",
            "detect_conflicts",
            "rebase_staged",
        ),
        "zarrlake.model.index": ("NODE_KIND", "IndexNode", "ManifestIndex"),
        "zarrlake.model.manifest": ("ChunkRef", "Shard", "checksum", "content_hash"),
        "zarrlake.model.metadata": ("NodeMeta", "parse_node_meta"),
        "zarrlake.model.snapshot": ("NodeEntry", "Root"),
        "zarrlake.model.virtual": ("VirtualSource", "virtual_hash"),
    },
)
