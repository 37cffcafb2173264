"""Maintenance: garbage collection, history expiry, integrity checks and export.

Garbage collection is two-phase and safe against sessions that write, or deduplicate against,
the objects it is about to delete; the argument is written down in ``docs/history.md``
("Garbage collection") and each step below names the part of it that it implements.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from zarrlake.catalog import CommitRow
from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    ChunkCorruptionError,
    InvalidInputError,
    ObjectMissingError,
)
from zarrlake.model import ManifestIndex, Root, Shard, iter_manifest
from zarrlake.model.manifest import join_coords
from zarrlake.model.metadata import format_chunk_key
from zarrlake.objects import LocalObjectStore, ObjectStore
from zarrlake.types import ChunkCoords, from_epoch

if TYPE_CHECKING:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]
    from zarr.abc.store import Store

    from zarrlake.repo import Repo

__all__ = [
    "ExpireReport",
    "ExportReport",
    "FsckIssue",
    "FsckReport",
    "GCReport",
    "expire",
    "export",
    "fsck",
    "gc",
]

_FAULT_ENV = "ZARRLAKE_GC_FAULT"
_faults: dict[str, int] = {}


def _fault(point: str) -> None:
    """Fault injection for the crash tests: ``ZARRLAKE_GC_FAULT=point[:n]`` kills this process
    (SIGKILL, no cleanup) the ``n``-th time gc reaches ``point``."""
    want = os.environ.get(_FAULT_ENV)
    if not want:
        return
    name, _, n = want.partition(":")
    if name != point:
        return
    _faults[point] = _faults.get(point, 0) + 1
    if _faults[point] >= int(n or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def _bar(show: bool | None, total: int | None, desc: str) -> tqdm[Any]:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    visible = sys.stderr.isatty() if show is None else show
    return tqdm(total=total, desc=desc, disable=not visible, file=sys.stderr, leave=False)


# -- reports -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GCReport:
    """What a garbage collection freed, and what waits for the grace period."""

    objects_deleted: int = 0
    object_bytes_freed: int = 0
    nodes_deleted: int = 0
    node_bytes_freed: int = 0
    objects_pending: int = 0
    nodes_pending: int = 0
    dry_run: bool = False

    @property
    def deleted(self) -> int:
        """Chunk objects and catalog nodes deleted (or, for a dry run, deletable now)."""
        return self.objects_deleted + self.nodes_deleted

    @property
    def bytes_freed(self) -> int:
        return self.object_bytes_freed + self.node_bytes_freed

    def __repr__(self) -> str:
        verb = "would free" if self.dry_run else "freed"
        return (
            f"<GCReport {verb} {self.objects_deleted} objects ({self.object_bytes_freed} B) and "
            f"{self.nodes_deleted} catalog nodes ({self.node_bytes_freed} B); pending: "
            f"{self.objects_pending} objects, {self.nodes_pending} nodes>"
        )


@dataclass(frozen=True, slots=True)
class ExpireReport:
    """The commits an ``expire`` dropped (or, for a dry run, would drop)."""

    cutoff: datetime
    expired: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def commits_expired(self) -> int:
        return len(self.expired)

    def __repr__(self) -> str:
        verb = "would expire" if self.dry_run else "expired"
        return f"<ExpireReport {verb} {len(self.expired)} commits older than {self.cutoff.isoformat()}>"


@dataclass(frozen=True, slots=True)
class FsckIssue:
    """One problem ``fsck`` found.

    ``kind`` is ``missing_object``, ``corrupt_object`` or ``missing_node`` (a catalog node);
    ``commit``, ``path`` and ``chunk`` say where it is referenced (``commit`` is ``None`` for
    an open session's staged write).
    """

    kind: str
    hash: str
    commit: str | None = None
    path: str | None = None
    chunk: ChunkCoords | None = None

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f" at /{self.path}" + (f" chunk {self.chunk}" if self.chunk is not None else "")
        if self.commit is not None:
            where += f" (commit {self.commit[:10]})"
        return f"{self.kind} {self.hash[:16]}{where}"


@dataclass(frozen=True, slots=True)
class FsckReport:
    """The result of ``repo.fsck()``: ``ok`` unless ``issues`` lists something."""

    commits_checked: int
    objects_checked: int
    nodes_checked: int
    verified: bool
    issues: tuple[FsckIssue, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.issues

    @property
    def missing(self) -> tuple[FsckIssue, ...]:
        return tuple(i for i in self.issues if i.kind == "missing_object")

    @property
    def corrupt(self) -> tuple[FsckIssue, ...]:
        return tuple(i for i in self.issues if i.kind == "corrupt_object")

    def __repr__(self) -> str:
        head = (
            f"<FsckReport {'ok' if self.ok else f'{len(self.issues)} issue(s)'}: "
            f"{self.commits_checked} commits, {self.objects_checked} objects"
            f"{' verified' if self.verified else ''}, {self.nodes_checked} catalog nodes>"
        )
        return "\n".join([head, *(f"  {i}" for i in self.issues[:50])])


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What ``repo.export`` wrote."""

    commit: str
    target: str
    nodes: int
    chunks: int
    bytes: int

    def __repr__(self) -> str:
        return (
            f"<ExportReport commit {self.commit[:10]} -> {self.target}: {self.nodes} nodes, "
            f"{self.chunks} chunks, {self.bytes} B>"
        )


# -- reachability ------------------------------------------------------------------------------


def _hash_rows(hashes: np.ndarray) -> list[bytes]:
    """The rows of an ``n x 32`` uint8 array as ``bytes`` (a void view keeps trailing zeros)."""
    rows = np.ascontiguousarray(hashes).view(np.dtype((np.void, 32))).ravel().tolist()
    return cast(list[bytes], rows)


def _object_hashes(shard: Shard) -> list[bytes]:
    return _hash_rows(shard.hashes[shard.kinds == 0])


@dataclass
class _Reach:
    """Everything reachable from some commits and the open sessions."""

    committed: set[bytes] = field(default_factory=set)  # chunk objects referenced by commits
    staged: set[bytes] = field(default_factory=set)  # chunk objects staged by open sessions
    nodes: set[bytes] = field(default_factory=set)  # catalog nodes referenced
    missing: dict[bytes, str] = field(default_factory=dict)  # referenced nodes not found

    @property
    def objects(self) -> set[bytes]:
        return self.committed | self.staged


def _load(repo: Repo, hashes: Iterable[bytes], kind: str, reach: _Reach) -> Iterator[bytes]:
    want = sorted(set(hashes))
    found = repo._catalog.get_blobs(repo._id, want) if want else {}
    for h in want:
        item = found.get(h)
        if item is None:
            reach.missing[h] = kind
            continue
        yield item[1]


def _reachable(repo: Repo, commits: Sequence[CommitRow], show: bool | None) -> _Reach:
    """Walk roots, manifests and shards of ``commits`` (each distinct node once)."""
    reach = _Reach()
    roots = {c.root_hash for c in commits}
    reach.nodes |= roots | {c.changes_hash for c in commits if c.changes_hash is not None}
    indexes: set[bytes] = set()
    for data in _load(repo, roots, "root", reach):
        root = Root.decode(data)
        for node in root.nodes.values():
            reach.nodes.add(node.meta)
            if node.manifest is not None:
                indexes.add(node.manifest)
        reach.committed.update(r.hash for r in root.raw.values() if r.inline is None)
    reach.nodes |= indexes
    shards: set[bytes] = set()
    for data in _load(repo, indexes, "index", reach):
        shards.update(ManifestIndex.decode(data).shards.values())
    reach.nodes |= shards
    ordered = sorted(shards)
    with _bar(show, len(ordered), "scanning manifests") as bar:
        for i in range(0, len(ordered), 64):  # shards are large: a few at a time
            for data in _load(repo, ordered[i : i + 64], "shard", reach):
                reach.committed.update(_object_hashes(Shard.decode(data)))
                bar.update(1)
    return reach


def _live(repo: Repo, show: bool | None) -> _Reach:
    """What gc must keep: everything reachable from every commit or an open session.

    Staged rows are read before commits: a write staged after the first read is committed
    (so seen by the second) or still staged (and then protected by the commit-side check).
    """
    staged_objects, staged_metas = repo._catalog.live_staged(repo._id)
    reach = _reachable(repo, repo._catalog.all_commits(repo._id), show)
    if reach.missing:
        some = ", ".join(f"{k} {h.hex()[:12]}" for h, k in list(reach.missing.items())[:5])
        raise CatalogError(
            f"gc stopped before deleting anything: catalog nodes referenced by commits are "
            f"missing ({some}); the live set cannot be known. Run repo.fsck()"
        )
    reach.staged |= staged_objects
    reach.nodes |= staged_metas
    return reach


def _recently_touched(objects: ObjectStore, h: bytes, grace: float) -> bool:
    """On local disk a write of an existing object refreshes its mtime: such an object was
    just deduplicated against, and is kept (S3 skips the write and leaves no such trace)."""
    if not isinstance(objects, LocalObjectStore) or grace <= 0:
        return False
    try:
        return os.stat(objects._path(h)).st_mtime > time.time() - grace
    except FileNotFoundError:
        return False


# -- gc ----------------------------------------------------------------------------------------


_TEMP_FILE_AGE = 3600.0


def gc(repo: Repo, grace: timedelta, *, dry_run: bool, progress: bool | None) -> GCReport:
    """Delete chunk objects and catalog nodes that no commit or open session reaches and that
    were found unreachable at least ``grace`` ago (see ``Repo.gc``)."""
    if not isinstance(grace, timedelta) or grace < timedelta(0):
        raise InvalidInputError("grace must be a timedelta >= 0")
    g = grace.total_seconds()
    cat, objects, rid = repo._catalog, repo._objects, repo._id

    # Phase 1, mark: record what is unreachable now, with the catalog's clock.
    live = _live(repo, progress)
    with _bar(progress, None, "listing objects") as bar:
        listing: dict[bytes, int] = {}
        for info in objects.iter_objects():
            listing[info.hash] = info.size
            bar.update(1)
    nodes = cat.blob_index(rid)
    dead_objects = {h: n for h, n in listing.items() if h not in live.objects}
    dead_nodes = {h: n for h, (_, n) in nodes.items() if h not in live.nodes}
    marks = {h: (state, at) for h, state, _, at in cat.gc_marks(rid, "object")}
    node_marks = {h: at for h, _, _, at in cat.gc_marks(rid, "blob")}
    if dry_run:
        return _dry_run(repo, g, dead_objects, dead_nodes, marks, node_marks)
    cat.gc_mark(
        rid,
        [("object", h, n) for h, n in dead_objects.items() if h not in marks]
        + [("blob", h, n) for h, n in dead_nodes.items() if h not in node_marks],
    )
    cat.gc_unmark(
        rid,
        "object",
        [
            h
            for h, (s, _) in marks.items()
            if s == "marked" and (h in live.objects or h not in listing)
        ],
    )
    cat.gc_unmark(rid, "blob", [h for h in node_marks if h in live.nodes or h not in nodes])
    _fault("marked")

    # Phase 2, sweep objects: claim ripe marks (fenced against commits), then check liveness
    # again, release what is in use, delete the rest and leave tombstones.
    ripe = [h for h, _ in cat.gc_eligible(rid, "object", g) if not _recently_touched(objects, h, g)]
    ripe_nodes = [h for h, _ in cat.gc_eligible(rid, "blob", g)]
    run_id = "gc-" + secrets.token_hex(8)
    claimed, taken = cat.gc_claim(rid, run_id, ripe, g)
    _fault("claimed")
    freed_objects = freed_object_bytes = 0
    deleted_nodes: list[bytes] = []
    if claimed or taken or ripe_nodes:
        now_live = _live(repo, progress)
        # Our own claims were made before now_live was read: anything in use shows in it. A
        # claim taken over from another run may have been deleted by that run already, unless
        # a commit uses it (commits after a claim are refused, so that commit predates it).
        in_use = {h for h, _ in claimed if h in now_live.objects}
        in_use |= {h for h, _ in taken if h in now_live.committed}
        cat.gc_release(rid, run_id, sorted(in_use))
        doomed = [(h, n) for h, n in claimed + taken if h not in in_use]
        with _bar(progress, len(doomed), "gc: deleting objects") as bar:
            for i in range(0, len(doomed), 256):
                batch = doomed[i : i + 256]
                for h, n in batch:
                    objects.delete(h)
                    if h in listing:
                        freed_objects += 1
                        freed_object_bytes += n
                    _fault("delete")
                    bar.update(1)
                cat.gc_tombstone(rid, [h for h, _ in batch])
        _fault("deleted")
        # Catalog nodes: deleted only if not written again since marked (one statement).
        cat.gc_unmark(rid, "blob", [h for h in ripe_nodes if h in now_live.nodes])
        deleted_nodes = cat.gc_delete_blobs(
            rid, [h for h in ripe_nodes if h not in now_live.nodes], g
        )
    cat.gc_purge_tombstones(rid)
    # A writer writes a temporary file and renames it in milliseconds: one that is an hour old
    # (or older than the grace) was left by a killed process.
    objects.remove_stale_temporaries(time.time() - max(g, _TEMP_FILE_AGE))
    node_bytes = sum(nodes.get(h, ("", 0))[1] for h in deleted_nodes)
    return GCReport(
        objects_deleted=freed_objects,
        object_bytes_freed=freed_object_bytes,
        nodes_deleted=len(deleted_nodes),
        node_bytes_freed=node_bytes,
        objects_pending=max(0, len(dead_objects) - freed_objects),
        nodes_pending=max(0, len(dead_nodes) - len(deleted_nodes)),
    )


def _dry_run(
    repo: Repo,
    g: float,
    dead_objects: dict[bytes, int],
    dead_nodes: dict[bytes, int],
    marks: dict[bytes, tuple[str, float]],
    node_marks: dict[bytes, float],
) -> GCReport:
    cutoff = repo._catalog.clock() - g

    def ripe(at: float | None) -> bool:
        return g == 0 or (at is not None and at <= cutoff)

    objs = {
        h: n
        for h, n in dead_objects.items()
        if ripe(marks[h][1] if h in marks and marks[h][0] == "marked" else None)
        and not _recently_touched(repo._objects, h, g)
    }
    nodes = {h: n for h, n in dead_nodes.items() if ripe(node_marks.get(h))}
    return GCReport(
        objects_deleted=len(objs),
        object_bytes_freed=sum(objs.values()),
        nodes_deleted=len(nodes),
        node_bytes_freed=sum(nodes.values()),
        objects_pending=len(dead_objects) - len(objs),
        nodes_pending=len(dead_nodes) - len(nodes),
        dry_run=True,
    )


# -- expire ------------------------------------------------------------------------------------


def _cutoff(repo: Repo, older_than: datetime | timedelta) -> float:
    if isinstance(older_than, timedelta):
        if older_than < timedelta(0):
            raise InvalidInputError("older_than must not be a negative timedelta")
        return repo._catalog.clock() - older_than.total_seconds()
    if isinstance(older_than, datetime):
        when = older_than if older_than.tzinfo else older_than.replace(tzinfo=UTC)
        # commit times show rounded to the microsecond: one copied from commit_info() must
        # count as "not older"
        return when.timestamp() - 1e-6
    raise InvalidInputError("older_than must be a datetime or a timedelta")


def expire(
    repo: Repo, older_than: datetime | timedelta, *, keep_tags: bool, dry_run: bool
) -> ExpireReport:
    """Drop commits created before ``older_than`` that no ref or open session needs."""
    cutoff = _cutoff(repo, older_than)
    rows = {r.id: r for r in repo._catalog.all_commits(repo._id)}
    keep = {c for c, r in rows.items() if r.created_at >= cutoff}
    branches, tags = repo.branches(), repo.tags()
    keep |= set(branches.values()) | set(tags.values())
    if keep_tags:
        todo = list(tags.values())
        while todo:
            c = todo.pop()
            r = rows.get(c)
            if r is None:
                continue
            keep.add(c)
            todo += [p for p in (r.parent_id, r.merge_parent_id) if p and p not in keep]
    for s in repo._catalog.list_sessions(repo._id):
        # An open session needs its base and the first-parent path from the branch head to
        # it: its commit checks the commits in between for conflicts.
        keep.add(s.base_commit)
        cursor = branches.get(s.branch)
        while cursor is not None and cursor != s.base_commit and cursor in rows:
            keep.add(cursor)
            cursor = rows[cursor].parent_id
    drop = sorted(set(rows) - keep)
    expired = drop if dry_run else repo._catalog.delete_commits(repo._id, drop)
    return ExpireReport(from_epoch(cutoff), tuple(sorted(expired)), dry_run)


# -- fsck --------------------------------------------------------------------------------------


def _verify(objects: ObjectStore, h: bytes) -> str | None:
    """``None`` if the object reads back with its hash, else the problem."""
    try:
        data = objects.read(h)
    except ChunkCorruptionError:
        return "corrupt_object"
    except ObjectMissingError:
        return "missing_object"
    return None if hashlib.sha256(data).digest() == h else "corrupt_object"


def _locate(
    repo: Repo, commits: Sequence[CommitRow], wanted: set[bytes]
) -> dict[bytes, tuple[str, str, ChunkCoords | None]]:
    """Where (commit, node path, chunk) each wanted object is referenced, newest first."""
    found: dict[bytes, tuple[str, str, ChunkCoords | None]] = {}
    seen_shards: set[bytes] = set()
    reader = repo._reader
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
            except CatalogError:
                continue
            for pos, sh in index.shards.items():
                if sh in seen_shards:
                    continue
                seen_shards.add(sh)
                try:
                    shard = reader.shard(sh)
                except CatalogError:
                    continue
                for i, h in enumerate(_object_hashes_with_rows(shard)):
                    if h in wanted and h not in found:
                        flat = int(shard.flat[i])
                        found[h] = (c.id, path, join_coords(pos, flat, index.shard_shape))
    return found


def _object_hashes_with_rows(shard: Shard) -> list[bytes | None]:
    """Per row of a shard: its object hash, or ``None`` for inline chunks."""
    kinds = shard.kinds.tolist()
    return [h if k == 0 else None for h, k in zip(_hash_rows(shard.hashes), kinds, strict=True)]


def fsck(repo: Repo, *, verify: bool, progress: bool | None) -> FsckReport:
    """Check that every object and catalog node that a commit or open session references
    exists (and, with ``verify``, that every object's bytes match its hash)."""
    cat, objects = repo._catalog, repo._objects
    staged_objects, staged_metas = cat.live_staged(repo._id)
    commits = cat.all_commits(repo._id)
    reach = _reachable(repo, commits, progress)
    nodes = cat.blob_index(repo._id)
    wanted_nodes = reach.nodes | staged_metas
    issues = [
        FsckIssue("missing_node", h.hex())
        for h in sorted(wanted_nodes)
        if h not in nodes or h in reach.missing
    ]
    with _bar(progress, None, "listing objects") as bar:
        present: set[bytes] = set()
        for info in objects.iter_objects():
            present.add(info.hash)
            bar.update(1)
    reachable = reach.committed | staged_objects
    problems = {h: "missing_object" for h in reachable if h not in present}
    if verify:
        todo = sorted(reachable & present)
        with _bar(progress, len(todo), "verifying objects") as bar, ThreadPoolExecutor(8) as pool:
            for h, problem in zip(todo, pool.map(lambda x: _verify(objects, x), todo), strict=True):
                if problem is not None:
                    problems[h] = problem
                bar.update(1)
    where = _locate(repo, commits, set(problems)) if problems else {}
    for h, kind in sorted(problems.items(), key=lambda kv: (kv[1], kv[0])):
        commit, path, chunk = where.get(h, (None, None, None))
        issues.append(FsckIssue(kind, h.hex(), commit, path, chunk))
    return FsckReport(len(commits), len(reachable), len(wanted_nodes), verify, tuple(issues))


# -- export ------------------------------------------------------------------------------------


def _target_store(target: Any, storage_options: dict[str, Any] | None) -> tuple[Store, str]:
    from zarr.abc.store import Store
    from zarr.storage import FsspecStore, LocalStore

    if isinstance(target, Store):
        if target.read_only:
            raise InvalidInputError("export target store is read-only")
        return target, str(target)
    if isinstance(target, (os.PathLike, str)):
        text = os.fspath(target)
        if "://" in text and not text.startswith("file://"):
            return FsspecStore.from_url(text, storage_options=storage_options), text
        path = text[len("file://") :] if text.startswith("file://") else text
        return LocalStore(os.path.abspath(os.path.expanduser(path))), path
    raise InvalidInputError(
        f"export target must be a zarr store, a path or a URL, got {type(target).__name__}"
    )


def _depth(key: str) -> int:
    return key.count("/")


async def _write_copy(
    store: Store,
    chunks: list[tuple[str, Any]],
    metas: list[tuple[str, bytes]],
    objects: ObjectStore,
    overwrite: bool,
    bar: tqdm[Any],
) -> int:
    from zarr.core.buffer import default_buffer_prototype

    if overwrite:
        await store.clear()
    elif not await store.is_empty(""):
        raise AlreadyExistsError(
            f"export target {store} is not empty; choose another target or pass overwrite=True"
        )
    proto = default_buffer_prototype()
    limit = asyncio.Semaphore(32)
    written = 0

    async def one(key: str, ref: Any) -> None:
        nonlocal written
        async with limit:
            data = (
                ref.inline
                if ref.inline is not None
                else await asyncio.to_thread(objects.read, ref.hash)
            )
            await store.set(key, proto.buffer.from_bytes(data))
            written += len(data)
            bar.update(1)

    for i in range(0, len(chunks), 1024):
        await asyncio.gather(*(one(k, r) for k, r in chunks[i : i + 1024]))
    # Metadata last, the root group last of all: a reader that finds the hierarchy finds it
    # whole.
    for key, doc in sorted(metas, key=lambda kv: -_depth(kv[0])):
        await store.set(key, proto.buffer.from_bytes(doc))
        written += len(doc)
    return written


def export(
    repo: Repo,
    ref: str,
    target: Any,
    *,
    storage_options: dict[str, Any] | None,
    overwrite: bool,
    progress: bool | None,
) -> ExportReport:
    """Write a plain Zarr v3 copy of one commit to a zarr store, path or URL."""
    from zarr.core.sync import sync

    commit = repo.resolve(ref)
    reader = repo._reader
    root = reader.root(repo._catalog.get_commit(repo._id, commit).root_hash)
    store, label = _target_store(target, storage_options)
    metas: list[tuple[str, bytes]] = []
    chunks: list[tuple[str, Any]] = []
    for path, node in sorted(root.nodes.items()):
        prefix = f"{path}/" if path else ""
        metas.append((prefix + "zarr.json", reader.meta_bytes(node.meta)))
        nm = reader.node_meta(node.meta)
        if nm.is_array and node.manifest is not None:
            for coords, cref in iter_manifest(reader.index(node.manifest), reader):
                chunks.append((prefix + format_chunk_key(coords, nm.encoding), cref))
    chunks += sorted(root.raw.items())
    with _bar(progress, len(chunks), f"export {commit[:10]}") as bar:
        size = sync(_write_copy(store, chunks, metas, repo._objects, overwrite, bar))
    return ExportReport(commit, label, len(metas), len(chunks), size)
