"""Integrity checks: every object and catalog node a commit or open session references."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from zarrlake.core import RepoCore
from zarrlake.errors import (
    CatalogError,
    ChunkCorruptionError,
    ObjectMissingError,
    StorageError,
    VirtualSourceError,
    ZarrlakeError,
)
from zarrlake.maintenance.progress import progress_bar
from zarrlake.maintenance.reach import reachable_from
from zarrlake.maintenance.reports import FsckIssue, FsckReport
from zarrlake.model.hashing import ChunkHasher
from zarrlake.model.manifest import join_coords
from zarrlake.model.records import CommitRecord
from zarrlake.model.virtual import VirtualSource
from zarrlake.objects import ObjectStore
from zarrlake.objects.packs import parse_pack
from zarrlake.types import ChunkCoords

__all__ = ["fsck"]


def _verify(objects: ObjectStore, hasher: ChunkHasher, h: bytes, pack: bool) -> str | None:
    """``None`` if the object reads back with its hash (a pack: if its index is sound and
    every chunk in it matches its own hash), else the problem. ``hasher``: the repo's."""
    try:
        data = objects.read_range(h)
        if not pack:
            return None if hasher.matches(data, h) else "corrupt_object"
        entries = parse_pack(h, data)
    except ChunkCorruptionError:
        return "corrupt_object"
    except ObjectMissingError:
        return "missing_object"
    except StorageError:  # there, but it cannot be read (permissions, I/O error)
        return "unreadable_object"
    for e in entries:
        if not hasher.matches(data[e.offset : e.offset + e.length], e.hash):
            return "corrupt_object"
    return None


def _locate(
    core: RepoCore, commits: Sequence[CommitRecord], wanted: set[bytes]
) -> dict[bytes, tuple[str, str, ChunkCoords | None]]:
    """Where (commit, node path, chunk) each wanted object is referenced, newest first."""
    found: dict[bytes, tuple[str, str, ChunkCoords | None]] = {}
    seen_shards: set[bytes] = set()
    reader = core.reader
    for c in sorted(commits, key=lambda r: -r.generation):
        if len(found) == len(wanted):
            break
        try:
            root = reader.root(c.root_hash)
        except CatalogError:
            continue
        for key, ref in root.raw.items():
            if ref.hash in wanted and ref.hash not in found:
                found[ref.hash] = (c.id, key, None)
        for path, node in root.nodes.items():
            if node.manifest is None:
                continue
            try:
                index = reader.index(node.manifest)
                shards = list(index.shard_items(reader))
            except CatalogError:
                continue  # a missing index node is reported by the reach walk
            for pos, sh in shards:
                if sh in seen_shards:
                    continue
                seen_shards.add(sh)
                try:
                    shard = reader.shard(sh)
                except CatalogError:
                    continue
                for i in range(len(shard)):
                    h = shard.object_id_at(i)
                    if h is not None and h in wanted and h not in found:
                        flat = int(shard.flat[i])
                        found[h] = (c.id, path, join_coords(pos, flat, index.shard_shape))
    return found


def _check_sources(core: RepoCore, sources: set[VirtualSource]) -> list[FsckIssue]:
    """Every source of a virtual chunk still allowed, readable and at its recorded version."""
    issues = []
    current: dict[str, VirtualSource | ZarrlakeError] = {}
    for url in sorted({s.url for s in sources}):
        try:
            current[url] = core.sources.stat_many([url])[url]
        except ZarrlakeError as exc:
            current[url] = exc
    for src in sorted(sources, key=lambda s: (s.url, s.encode())):
        now = current[src.url]
        if isinstance(now, VirtualSourceError):
            issues.append(FsckIssue("refused_source", "", source=src.url, detail=str(now)))
        elif isinstance(now, ZarrlakeError):
            issues.append(FsckIssue("missing_source", "", source=src.url, detail=str(now)))
        elif (now.size, now.etag, now.modified) != (src.size, src.etag, src.modified):
            detail = f"recorded {src.version()}; now {now.version()}"
            issues.append(FsckIssue("changed_source", "", source=src.url, detail=detail))
    return issues


def fsck(core: RepoCore, *, verify: bool, progress: bool | None) -> FsckReport:
    """Check that every object and catalog node that a commit or open session references
    exists (and, with ``verify``, that every object's bytes match its hash)."""
    cat, objects = core.catalog, core.objects
    staged_objects, staged_packed, staged_metas = cat.gc.live_staged()
    commits = cat.commits.all()
    reach = reachable_from(core, commits, progress)
    staged_packs: set[bytes] = set()
    reach.add_packed(staged_packed, staged_packs)
    nodes = cat.gc.blob_index()
    wanted_nodes = reach.nodes | staged_metas
    issues = [
        FsckIssue("missing_node", h.hex())
        for h in sorted(wanted_nodes)
        if h not in nodes or h in reach.missing
    ]
    with progress_bar(progress, None, "listing objects") as bar:
        present: set[bytes] = set()
        for info in objects.iter_objects():
            present.add(info.hash)
            bar.update(1)
    reachable = reach.committed | staged_objects | staged_packs
    packs = reach.packed.keys()  # the objects that are packs
    problems = {h: "missing_object" for h in reachable if h not in present}
    if verify:
        todo = sorted(reachable & present)
        with (
            progress_bar(progress, len(todo), "verifying objects") as bar,
            ThreadPoolExecutor(8) as pool,
        ):
            for h, problem in zip(
                todo,
                pool.map(lambda x: _verify(objects, core.hasher, x, x in packs), todo),
                strict=True,
            ):
                if problem is not None:
                    problems[h] = problem
                bar.update(1)
    where = _locate(core, commits, set(problems)) if problems else {}
    for h, kind in sorted(problems.items(), key=lambda kv: (kv[1], kv[0])):
        commit, path, chunk = where.get(h, (None, None, None))
        issues.append(FsckIssue(kind, h.hex(), commit, path, chunk))
    issues += _check_sources(core, reach.sources)
    return FsckReport(
        len(commits),
        len(reachable),
        len(wanted_nodes),
        verify,
        tuple(issues),
        len({s.url for s in reach.sources}),
    )
