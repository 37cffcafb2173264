"""Pure values: manifests, snapshots, change sets, conflict detection (no SQL, no I/O)."""

from zarrlake.model.changes import (
    BuildResult,
    ChangeSet,
    NodeChange,
    SnapshotReader,
    StagedNode,
    StagedState,
    build_snapshot,
    changes_from_staged,
    iter_manifest,
)
from zarrlake.model.conflicts import (
    ReadSet,
    Solver,
    check_solver,
    detect_conflicts,
    rebase_staged,
)
from zarrlake.model.index import NODE_KIND, IndexNode, ManifestIndex
from zarrlake.model.manifest import ChunkRef, Shard, checksum, content_hash
from zarrlake.model.metadata import NodeMeta, parse_node_meta
from zarrlake.model.snapshot import NodeEntry, Root
from zarrlake.model.virtual import VirtualSource, virtual_hash

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
