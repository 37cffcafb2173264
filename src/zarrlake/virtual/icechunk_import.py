"""Importing an Icechunk repository with its history.

Every snapshot reachable from the repository's branches and tags becomes a commit of the lake
with the snapshot's message, time, parent and metadata (plus one key,
:data:`SNAPSHOT_KEY`, naming the snapshot it came from); Icechunk's first snapshot
("Repository initialized", empty) is the lake's own first commit. Each snapshot is built from
its parent's commit and the changes Icechunk's diff lists between them, so the cost follows
the changes, not the history's size: virtual chunks become virtual references (their
locations must be allowed, as for any reference), native and inline chunks are copied into
the lake (content-addressed: the same bytes are stored once).

Nothing is visible until the end: the commits are built in memory over the catalog's nodes,
and one transaction of the one commit writer (:meth:`CommitWriter.publish_history`) inserts
them all and creates or moves the branches and tags. A failure or a crash before it leaves the
lake as it was (chunk objects already written are garbage for ``gc``). Run again, an import
skips the snapshots already imported and brings only what is new.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zarrlake.core import RepoCore
from zarrlake.core.reader import CatalogReader
from zarrlake.errors import InvalidInputError, InvalidMetadataError, NotFoundError
from zarrlake.model import ChunkRef, Root, StagedState, build_snapshot, content_hash
from zarrlake.model.manifest import INLINE_LIMIT, checksum
from zarrlake.model.metadata import NodeMeta, format_chunk_key, parse_node_meta
from zarrlake.model.records import CommitRecord, RefUpdate
from zarrlake.session.virtual import plan_chunks
from zarrlake.types import new_commit_id, validate_name
from zarrlake.virtual.zarr_import import check_codecs

if TYPE_CHECKING:
    import icechunk

__all__ = ["SNAPSHOT_KEY", "SPEC_VERSIONS", "IcechunkImport", "import_history"]

SNAPSHOT_KEY = "icechunk_snapshot"
"""The commit metadata key naming the Icechunk snapshot a commit was imported from."""

SPEC_VERSIONS = (1, 2)
"""The Icechunk format versions this zarrlake imports."""

_NATIVE, _VIRTUAL, _INLINE = 1, 2, 3  # icechunk.ChunkType values in array_chunk_iterator


@dataclass(frozen=True, slots=True)
class IcechunkImport:
    """What an import brought: the commits it made (Icechunk snapshot id -> lake commit id;
    empty when there was nothing new), the branches and tags it created or moved (name ->
    commit id), and how many chunks it copied and referenced."""

    commits: dict[str, str] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    copied: int = 0
    referenced: int = 0


class _Pending:
    """The catalog's nodes, plus the nodes of commits built but not yet published."""

    def __init__(self, core: RepoCore) -> None:
        self.nodes = core.catalog.nodes
        self.blobs: dict[bytes, tuple[str, bytes]] = {}

    def put(self, items: dict[bytes, tuple[str, bytes]]) -> None:
        self.blobs.update(items)

    def get(self, h: bytes) -> bytes:
        found = self.blobs.get(h)
        return found[1] if found is not None else self.nodes.get(h)

    def get_many(self, hashes: Sequence[bytes]) -> dict[bytes, tuple[str, bytes]]:
        out = {h: self.blobs[h] for h in hashes if h in self.blobs}
        rest = [h for h in hashes if h not in self.blobs]
        if rest:
            out.update(self.nodes.get_many(rest))
        return out


def open_icechunk(storage_or_path: Any) -> icechunk.Repository:
    """The Icechunk repository in ``storage_or_path`` (an ``icechunk.Storage`` or a local
    directory), refused unless its format version is one this zarrlake reads."""
    try:
        import icechunk as ic
    except ImportError as exc:
        raise InvalidInputError(
            "importing an Icechunk repository needs the icechunk package (pip install icechunk)"
        ) from exc
    storage = storage_or_path
    if isinstance(storage_or_path, str | os.PathLike):
        path = os.path.abspath(os.fspath(storage_or_path))
        if not os.path.isdir(path):
            raise NotFoundError(f"there is no Icechunk repository at {path} (no directory)")
        storage = ic.local_filesystem_storage(path)
    try:
        version = ic.Repository.fetch_spec_version(storage)
    except ic.IcechunkError as exc:
        raise InvalidInputError(
            f"the Icechunk repository cannot be imported: {str(exc).splitlines()[0]}. This "
            f"zarrlake imports Icechunk format versions {', '.join(map(str, SPEC_VERSIONS))}; "
            "nothing was imported"
        ) from None
    if version is None:
        raise NotFoundError(f"there is no Icechunk repository at {storage_or_path}")
    if int(version) not in SPEC_VERSIONS:
        raise InvalidInputError(
            f"the Icechunk repository has format version {int(version)}; this zarrlake imports "
            f"versions {', '.join(map(str, SPEC_VERSIONS))}. Nothing was imported"
        )
    return ic.Repository.open(storage)


def _node_path(p: str) -> str:
    return p.strip("/")


class _Builder:
    """Builds the lake commits of Icechunk snapshots, parents first, in memory."""

    def __init__(self, core: RepoCore, ic_repo: icechunk.Repository, author: str) -> None:
        self.core, self.ic, self.author = core, ic_repo, author
        self.pending = _Pending(core)
        self.reader = CatalogReader(self.pending)
        self.built: list[tuple[CommitRecord, dict[bytes, tuple[str, bytes]]]] = []
        self.records: dict[str, CommitRecord] = {}  # lake commit id -> record (built ones)
        self.copied = self.referenced = 0
        # Icechunk's async calls run on a loop of their own, in a thread of its own, so an
        # import also runs where a loop is already running (a notebook's)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()

    def run[T](self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def record(self, commit_id: str) -> CommitRecord:
        found = self.records.get(commit_id)
        return found if found is not None else self.core.catalog.commits.get(commit_id)

    def build(self, info: Any, parent_snapshot: str, parent_commit: str) -> str:
        """The commit of snapshot ``info`` on top of ``parent_commit`` (the commit of
        ``parent_snapshot``); returns its id."""
        parent = self.record(parent_commit)
        base = self.reader.root(parent.root_hash)
        store = self.ic.readonly_session(snapshot_id=info.id).store
        diff = self.ic.diff(from_snapshot_id=parent_snapshot, to_snapshot_id=info.id)
        state, metas = StagedState(), {}
        for p in [*diff.deleted_groups, *diff.deleted_arrays]:
            state.node(_node_path(p)).dropped = True
        changed = [*diff.new_groups, *diff.new_arrays, *diff.updated_groups, *diff.updated_arrays]
        for p in sorted({_node_path(p) for p in changed}):
            doc = self._get(store, f"{p}/zarr.json" if p else "zarr.json")
            if doc is None:
                raise InvalidMetadataError(f"snapshot {info.id} has no zarr.json at {p or '/'!r}")
            nm = parse_node_meta(doc)
            if nm.is_array:
                check_codecs(p, json.loads(doc))
            h = content_hash(doc)
            metas[h] = ("meta", doc)
            state.node(p).meta = h
        self.pending.put(metas)
        new_arrays = {_node_path(p) for p in diff.new_arrays}
        chunks = {_node_path(p): {tuple(c) for c in cs} for p, cs in diff.updated_chunks.items()}
        for p in sorted(new_arrays | set(chunks)):
            staged = state.nodes[p].meta if p in state.nodes else None
            nm = self.reader.node_meta(staged) if staged is not None else self._meta_of(base, p)
            only = None if p in new_arrays else chunks[p]
            self._stage_chunks(store, state, p, nm, only)
        result = build_snapshot(base, state, self.reader)
        changes = result.changes.encode()
        ch = content_hash(changes)
        blobs = {**metas, **result.blobs, ch: ("changes", changes)}
        self.pending.put(blobs)
        record = CommitRecord(
            new_commit_id(),
            parent_commit,
            None,
            result.root_hash,
            ch,
            self.author,
            str(info.message),
            {**dict(info.metadata), SNAPSHOT_KEY: info.id},
            info.written_at.timestamp(),
            parent.generation + 1,
        )
        self.records[record.id] = record
        self.built.append((record, blobs))
        return record.id

    def _meta_of(self, base: Root, path: str) -> NodeMeta:
        node = base.nodes.get(path)
        if node is None:
            raise InvalidMetadataError(f"chunks changed at {path!r}, where there is no array")
        return self.reader.node_meta(node.meta)

    def _get(self, store: Any, key: str) -> bytes | None:
        from zarr.core.buffer import default_buffer_prototype

        async def get() -> Any:
            return await store.get(key, default_buffer_prototype())

        buf = self.run(get())
        return None if buf is None else bytes(buf.to_bytes())

    def _batches(self, store: Any, path: str) -> Iterator[tuple[Any, ...]]:
        batches = store.array_chunk_iterator(path)

        async def step() -> Any:
            return await batches.__anext__()

        while True:
            try:
                yield self.run(step())
            except StopAsyncIteration:
                return

    def _stage_chunks(
        self,
        store: Any,
        state: StagedState,
        path: str,
        nm: NodeMeta,
        only: set[tuple[int, ...]] | None,
    ) -> None:
        """Stage the chunks of array ``path`` (``only`` those coordinates, the ones the diff
        names: any of them no longer present is staged as deleted)."""
        sn = state.node(path)
        seen: set[tuple[int, ...]] = set()
        prefix = f"{path}/" if path else ""
        for coords_arr, kinds, paths, offsets, lengths, inlined in self._batches(store, path):
            virtual: list[tuple[tuple[int, ...], str, int, int]] = []
            native: list[tuple[int, ...]] = []
            for i, kind in enumerate(kinds):
                coords = tuple(int(c) for c in coords_arr[i])
                if only is not None and coords not in only:
                    continue
                seen.add(coords)
                if kind == _VIRTUAL:
                    virtual.append((coords, paths[i], int(offsets[i]), int(lengths[i])))
                elif kind == _INLINE:
                    sn.chunks[coords] = self._copy(bytes(inlined[i]))
                elif kind == _NATIVE:
                    native.append(coords)
            if virtual:
                sn.chunks.update(plan_chunks(self.core.sources, path, nm, virtual))
                self.referenced += len(virtual)
            keys = [prefix + format_chunk_key(c, nm.encoding) for c in native]
            datas = self.run(self._get_many(store, keys))
            for c, data in zip(native, datas, strict=True):
                sn.chunks[c] = self._copy(data)
        for coords in (only or set()) - seen:
            sn.chunks[coords] = None

    @staticmethod
    async def _get_many(store: Any, keys: list[str]) -> list[bytes]:
        from zarr.core.buffer import default_buffer_prototype

        proto = default_buffer_prototype()
        bufs = await asyncio.gather(*(store.get(k, proto) for k in keys))
        return [bytes(b.to_bytes()) for b in bufs]

    def _copy(self, data: bytes) -> ChunkRef:
        self.copied += 1
        h = self.core.hasher(data)
        if len(data) <= INLINE_LIMIT:
            return ChunkRef(h, len(data), data)
        self.core.objects.write(h, data)  # named by its content: the same bytes stored once
        return ChunkRef(h, len(data), crc=checksum(data))


def _snapshots(ic_repo: Any, heads: Sequence[str]) -> dict[str, Any]:
    """Every snapshot reachable from ``heads``: id -> its info, parents before children."""
    infos: dict[str, Any] = {}
    for head in heads:
        for info in ic_repo.ancestry(snapshot_id=head):
            if info.id in infos:
                break
            infos[info.id] = info
    depth: dict[str, int] = {}

    def level(sid: str) -> int:
        chain = []
        while sid not in depth:
            chain.append(sid)
            parent = infos[sid].parent_id
            if parent is None:
                depth[sid] = 0
                chain.pop()
                break
            sid = parent
        for s in reversed(chain):
            depth[s] = depth[infos[s].parent_id] + 1
        return depth[chain[0]] if chain else depth[sid]

    return {sid: infos[sid] for sid in sorted(infos, key=lambda s: (level(s), s))}


def _plan_refs(
    core: RepoCore,
    names: dict[str, str],
    kind: str,
    prefix: str,
    target: dict[str, str],
    ancestors: dict[str, set[str]],
) -> list[tuple[str, str, str | None]]:
    """(lake ref name, snapshot, expected current commit or None) of each ref to set;
    refuses a ref whose lake counterpart went elsewhere."""
    branches, tags = core.catalog.refs.all("branch"), core.catalog.refs.all("tag")
    plan: list[tuple[str, str, str | None]] = []
    for name, sid in sorted(names.items()):
        lake_name = validate_name(prefix + name, f"{kind} name")
        other = tags if kind == "branch" else branches
        if lake_name in other:
            raise InvalidInputError(
                f"Icechunk {kind} {name!r} would be {lake_name!r}, which is a "
                f"{'tag' if kind == 'branch' else 'branch'} of the lake; import with a "
                "ref_prefix. Nothing was imported"
            )
        current = (branches if kind == "branch" else tags).get(lake_name)
        if current is None:
            plan.append((lake_name, sid, None))
        elif current == target.get(sid):
            continue
        elif kind == "branch" and current in ancestors[sid]:
            plan.append((lake_name, sid, current))
        else:
            raise InvalidInputError(
                f"the lake's {kind} {lake_name!r} is at a commit that Icechunk's {kind} "
                f"{name!r} does not contain; import with ref_prefix='icechunk/' (or move "
                f"the lake's {kind}). Nothing was imported"
            )
    return plan


def import_history(
    core: RepoCore,
    storage_or_path: Any,
    *,
    author: str,
    ref_prefix: str = "",
) -> IcechunkImport:
    """Import an Icechunk repository's history into the repo of ``core`` (see the module's
    docstring); return what it brought."""
    ic_repo = open_icechunk(storage_or_path)
    branches = {b: ic_repo.lookup_branch(b) for b in ic_repo.list_branches()}
    tags = {t: ic_repo.lookup_tag(t) for t in ic_repo.list_tags()}
    infos = _snapshots(ic_repo, [*branches.values(), *tags.values()])
    known: dict[str, str] = {}
    lake_root = None
    for c in core.catalog.commits.all():
        sid = c.meta.get(SNAPSHOT_KEY)
        if isinstance(sid, str):
            known[sid] = c.id
        if c.parent_id is None and (lake_root is None or c.generation < lake_root.generation):
            lake_root = c
    assert lake_root is not None, "a repo always has its first commit"
    for sid, info in infos.items():
        if info.parent_id is None:
            known.setdefault(sid, lake_root.id)
    # every commit a snapshot's history holds, for the fast-forward check of branches
    ancestry: dict[str, set[str]] = {}
    for sid, info in infos.items():
        up = ancestry.get(info.parent_id, set()) if info.parent_id else set()
        ancestry[sid] = up | {sid}
    lake_ancestors = {
        sid: {known[s] for s in ancestry[sid] if s in known} | {lake_root.id} for sid in infos
    }
    plan = [
        (kind, name, sid, expected)
        for kind, names in (("branch", branches), ("tag", tags))
        for name, sid, expected in _plan_refs(core, names, kind, ref_prefix, known, lake_ancestors)
    ]
    builder = _Builder(core, ic_repo, author)
    try:
        commit_of = dict(known)
        for sid, info in infos.items():
            if sid not in commit_of:
                commit_of[sid] = builder.build(info, info.parent_id, commit_of[info.parent_id])
    finally:
        builder.close()
    updates = [
        RefUpdate(name, kind, commit_of[sid], expected) for kind, name, sid, expected in plan
    ]
    if builder.built or updates:
        core.objects.sync()
        core.catalog.writer.publish_history(builder.built, updates, author=author)
    return IcechunkImport(
        {c.meta[SNAPSHOT_KEY]: c.id for c, _ in builder.built},
        {u.name: u.new for u in updates if u.kind == "branch"},
        {u.name: u.new for u in updates if u.kind == "tag"},
        builder.copied,
        builder.referenced,
    )
