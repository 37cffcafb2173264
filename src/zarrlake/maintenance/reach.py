"""What every commit, ref and open session reaches: the live set of gc and fsck."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from zarrlake.core import RepoCore
from zarrlake.errors import CatalogError
from zarrlake.maintenance.progress import progress_bar
from zarrlake.model import NODE_KIND, IndexNode, ManifestIndex, Root, Shard
from zarrlake.model.manifest import OBJECT
from zarrlake.model.records import CommitRecord
from zarrlake.model.virtual import VirtualSource

__all__ = ["Reach", "hash_rows", "live_set", "reachable_from"]


def hash_rows(hashes: np.ndarray) -> list[bytes]:
    """The rows of an ``n x 32`` uint8 array as ``bytes`` (a void view keeps trailing zeros)."""
    rows = np.ascontiguousarray(hashes).view(np.dtype((np.void, 32))).ravel().tolist()
    return cast(list[bytes], rows)


@dataclass
class Reach:
    """Everything reachable from some commits and the open sessions."""

    committed: set[bytes] = field(default_factory=set)  # objects referenced by commits
    staged: set[bytes] = field(default_factory=set)  # objects staged by open sessions
    # where the live packed chunks are, moves followed: pack -> offset -> (length, hash)
    packed: dict[bytes, dict[int, tuple[int, bytes]]] = field(default_factory=dict)
    named_packs: set[bytes] = field(default_factory=set)  # packs refs name, moves' hops too
    moves: dict[tuple[bytes, int], tuple[bytes, int]] = field(default_factory=dict)
    nodes: set[bytes] = field(default_factory=set)  # catalog nodes referenced
    missing: dict[bytes, str] = field(default_factory=dict)  # referenced nodes not found
    sources: set[VirtualSource] = field(default_factory=set)  # sources of virtual chunks

    @property
    def objects(self) -> set[bytes]:
        return self.committed | self.staged

    def add_packed(
        self, entries: Iterable[tuple[bytes, int, int, bytes]], into: set[bytes]
    ) -> None:
        """Packed chunks (pack, offset, length, hash) that refs name: live where gc moved
        them (``moves``), and their packs into ``into``."""
        for pack, offset, length, h in entries:
            for _ in range(64):  # a chain of moves: each gc run may move a chunk once
                self.named_packs.add(pack)
                nxt = self.moves.get((pack, offset))
                if nxt is None:
                    break
                pack, offset = nxt
            else:
                raise CatalogError(f"the moves of pack {pack.hex()} do not end")
            self.packed.setdefault(pack, {})[offset] = (length, h)
            into.add(pack)


def _load(core: RepoCore, hashes: Iterable[bytes], kind: str, reach: Reach) -> Iterator[bytes]:
    want = sorted(set(hashes))
    found = core.catalog.nodes.get_many(want) if want else {}
    for h in want:
        item = found.get(h)
        if item is None:
            reach.missing[h] = kind
            continue
        yield item[1]


def reachable_from(core: RepoCore, commits: Sequence[CommitRecord], show: bool | None) -> Reach:
    """Walk roots, manifest indexes and shards of ``commits`` (each distinct node once)."""
    reach = Reach(moves=core.catalog.gc.moves())
    roots = {c.root_hash for c in commits}
    reach.nodes |= roots | {c.changes_hash for c in commits if c.changes_hash is not None}
    indexes: set[bytes] = set()
    for data in _load(core, roots, "root", reach):
        root = Root.decode(data)
        for node in root.nodes.values():
            reach.nodes.add(node.meta)
            if node.manifest is not None:
                indexes.add(node.manifest)
        reach.committed.update(r.hash for r in root.raw.values() if r.inline is None)
    reach.nodes |= indexes
    shards: set[bytes] = set()
    inner: set[bytes] = set()
    for data in _load(core, indexes, "index", reach):
        index = ManifestIndex.decode(data)
        (shards if index.depth <= 1 else inner).update(index.top_children())
    while inner:  # the index trees, one level per step
        reach.nodes |= inner
        ordered_nodes, inner = sorted(inner), set()
        for i in range(0, len(ordered_nodes), 256):
            for data in _load(core, ordered_nodes[i : i + 256], NODE_KIND, reach):
                inode = IndexNode.decode(data)
                (shards if inode.level == 1 else inner).update(inode.child_hashes())
        inner -= reach.nodes
    reach.nodes |= shards
    ordered = sorted(shards)
    with progress_bar(show, len(ordered), "scanning manifests") as bar:
        for i in range(0, len(ordered), 64):  # shards are large: a few at a time
            for data in _load(core, ordered[i : i + 64], "shard", reach):
                shard = Shard.decode(data)
                reach.committed.update(hash_rows(shard.hashes[shard.kinds == OBJECT]))
                reach.add_packed(shard.packed_entries(), reach.committed)
                reach.sources.update(shard.sources)
                bar.update(1)
    return reach


def live_set(core: RepoCore, show: bool | None) -> Reach:
    """What gc must keep: everything reachable from every commit or an open session.

    Staged rows are read before commits: a write staged after the first read is committed
    (so seen by the second) or still staged (and then protected by the commit-side check).
    """
    staged_objects, staged_packed, staged_metas = core.catalog.gc.live_staged()
    reach = reachable_from(core, core.catalog.commits.all(), show)
    if reach.missing:
        some = ", ".join(f"{k} {h.hex()[:12]}" for h, k in list(reach.missing.items())[:5])
        raise CatalogError(
            f"gc stopped before deleting anything: catalog nodes referenced by commits are "
            f"missing ({some}); the live set cannot be known. Run repo.fsck()"
        )
    reach.staged |= staged_objects
    reach.add_packed(staged_packed, reach.staged)
    reach.nodes |= staged_metas
    return reach
