"""An in-memory fake of the catalog interface (:class:`zarrlake.catalog.interface.CatalogApi`),
so that session and history logic can be tested without a database, and a repo over it
(:func:`memory_repo`). One lock stands for the database's transactions."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from zarrlake.catalog.interface import Nodes, Read, Reads, StagedAsk
from zarrlake.core import CatalogReader, RepoCore
from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    NotFoundError,
    RefMovedError,
    SessionClosedError,
    SessionExpiredError,
)
from zarrlake.model import Root, content_hash
from zarrlake.model.batches import stage_batch
from zarrlake.model.graph import reach
from zarrlake.model.hashing import DEFAULT_CONTENT_HASH, chunk_hasher
from zarrlake.model.records import CommitRecord, RefUpdate, SessionRecord, StagedEntry, StagedKind
from zarrlake.model.virtual import DEFAULT_VIRTUAL_IDENTITY as DEFAULT_IDENTITY
from zarrlake.objects import open_object_store
from zarrlake.repo import Repo
from zarrlake.testing.memory_rules import MemoryPulls, MemoryRules
from zarrlake.types import ChunkCoords, RefLogEntry, RepoConfig, SessionInfo, from_epoch

__all__ = ["MemoryCatalog", "memory_repo"]


class _Db:
    """The fake database: every table as a Python structure, one lock for transactions."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.commits: dict[str, CommitRecord] = {}
        self.refs: dict[str, tuple[str, str]] = {}  # name -> (kind, commit)
        self.reflog: list[RefLogEntry] = []
        self.keys: dict[tuple[str, str], str] = {}  # (branch, key) -> commit
        self.sessions: dict[str, SessionRecord] = {}
        self.staged: dict[str, dict[tuple[str, str, ChunkCoords, str], StagedEntry]] = {}
        self.reads: dict[str, set[Read]] = {}
        self.nodes: Nodes = {}
        self.sources: dict[str, dict[str, Any]] = {}
        self.t0 = time.time()

    def now(self) -> float:
        return time.time()

    def log(self, name: str, action: str, old: str | None, new: str | None, author: str) -> None:
        self.reflog.append(RefLogEntry(name, action, old, new, author, from_epoch(self.now()), ""))

    def ancestors(self, head: str) -> set[str]:
        graph = {c: (r.parent_id, r.merge_parent_id, r.generation) for c, r in self.commits.items()}
        return reach(graph, head)


class _Nodes:
    def __init__(self, db: _Db) -> None:
        self.db = db

    def put(self, items: Nodes) -> None:
        with self.db.lock:
            self.db.nodes.update(items)

    def get(self, h: bytes) -> bytes:
        found = self.db.nodes.get(h)
        if found is None:
            raise CatalogError(f"catalog node {h.hex()} is missing")
        return found[1]

    def get_many(self, hashes: Sequence[bytes]) -> Nodes:
        return {h: self.db.nodes[h] for h in hashes if h in self.db.nodes}


class _Refs:
    def __init__(self, db: _Db) -> None:
        self.db = db

    def get(self, name: str) -> tuple[str, str] | None:
        return self.db.refs.get(name)

    def head(self, branch: str) -> CommitRecord | None:
        found = self.db.refs.get(branch)
        return None if found is None or found[0] != "branch" else self.db.commits[found[1]]

    def all(self, kind: str) -> dict[str, str]:
        return {n: c for n, (k, c) in sorted(self.db.refs.items()) if k == kind}

    def create(self, name: str, kind: str, commit_id: str, author: str) -> None:
        with self.db.lock:
            if name in self.db.refs:
                raise AlreadyExistsError(f"a {self.db.refs[name][0]} named {name!r} already exists")
            if commit_id not in self.db.commits:
                raise NotFoundError(f"no commit {commit_id!r} in this repo")
            self.db.refs[name] = (kind, commit_id)
            self.db.log(name, "create", None, commit_id, author)

    def delete(self, name: str, kind: str, author: str) -> str:
        with self.db.lock:
            found = self.db.refs.get(name)
            if found is None or found[0] != kind:
                raise NotFoundError(f"no {kind} named {name!r}")
            del self.db.refs[name]
            self.db.log(name, "delete", found[1], None, author)
            return found[1]

    def move(
        self, name: str, expected: str, new: str, author: str, action: str, message: str = ""
    ) -> bool:
        with self.db.lock:
            if new not in self.db.commits:
                raise NotFoundError(f"no commit {new!r} in this repo")
            if self.db.refs.get(name) != ("branch", expected):
                return False
            self.db.refs[name] = ("branch", new)
            self.db.log(name, action, expected, new, author)
            return True

    def log(self, name: str, limit: int | None = None) -> list[RefLogEntry]:
        found = [e for e in reversed(self.db.reflog) if e.ref == name]
        return found if limit is None else found[:limit]

    def log_position(self, name: str, n: int) -> RefLogEntry | None:
        found = self.log(name)
        return found[n] if n < len(found) else None

    def at(self, name: str, at: float) -> str | None:
        found = [e for e in self.db.reflog if e.ref == name and e.at.timestamp() <= at + 1e-6]
        return found[-1].new_commit if found else None


class _Commits:
    def __init__(self, db: _Db) -> None:
        self.db = db

    def get(self, commit_id: str) -> CommitRecord:
        found = self.db.commits.get(commit_id)
        if found is None:
            raise NotFoundError(f"no commit {commit_id!r} in this repo")
        return found

    def get_with_root(self, commit_id: str) -> tuple[CommitRecord, bytes | None]:
        c = self.get(commit_id)
        found = self.db.nodes.get(c.root_hash)
        return c, None if found is None else found[1]

    def with_roots(self, ids: Sequence[str]) -> dict[str, tuple[CommitRecord, bytes | None]]:
        return {c: self.get_with_root(c) for c in ids if c in self.db.commits}

    def with_roots_and_changes(
        self, ids: Sequence[str]
    ) -> dict[str, tuple[CommitRecord, bytes | None, bytes | None]]:
        out: dict[str, tuple[CommitRecord, bytes | None, bytes | None]] = {}
        for c, (rec, root) in self.with_roots(ids).items():
            h = rec.changes_hash if rec.parent_id in ids else None
            changes = self.db.nodes.get(h) if h is not None else None
            out[c] = (rec, root, None if changes is None else changes[1])
        return out

    def by_id(self, ids: Sequence[str]) -> dict[str, CommitRecord]:
        return {c: self.db.commits[c] for c in ids if c in self.db.commits}

    def all(self) -> list[CommitRecord]:
        return list(self.db.commits.values())

    def lookup(self, name: str, *, prefix: bool) -> list[tuple[str, str]]:
        out = [("ref", self.db.refs[name][1])] if name in self.db.refs else []
        if prefix:
            out += [("commit", c) for c in sorted(self.db.commits) if c.startswith(name)][:2]
        return out

    def lookup_with_commits(
        self, names: Mapping[str, bool]
    ) -> tuple[
        dict[str, list[tuple[str, str]]],
        dict[str, tuple[CommitRecord, bytes | None, bytes | None]],
    ]:
        found = self.lookup_many(names)
        ids = list(dict.fromkeys(c for hits in found.values() for _, c in hits))
        return found, self.with_roots_and_changes(ids)

    def lookup_many(self, names: Mapping[str, bool]) -> dict[str, list[tuple[str, str]]]:
        return {name: self.lookup(name, prefix=prefix) for name, prefix in names.items()}

    def ancestry(self, head: str, limit: int | None = None) -> list[CommitRecord]:
        out: list[CommitRecord] = []
        cursor: str | None = head
        while (
            cursor is not None and cursor in self.db.commits and (limit is None or len(out) < limit)
        ):
            out.append(self.db.commits[cursor])
            cursor = self.db.commits[cursor].parent_id
        return out

    def between(self, base: str, head: str) -> list[CommitRecord] | None:
        chain = self.ancestry(head)
        ids = [c.id for c in chain]
        if base not in ids:
            return None
        return list(reversed(chain[: ids.index(base)]))

    def nth_ancestor(self, commit_id: str, n: int) -> str | None:
        chain = self.ancestry(commit_id, n + 1)
        return chain[n].id if len(chain) > n else None

    def window(
        self, heads: Sequence[str], min_generation: int
    ) -> dict[str, tuple[str | None, str | None, int]]:
        found: set[str] = set()
        for h in heads:
            found |= self.db.ancestors(h)
        return {
            c: (r.parent_id, r.merge_parent_id, r.generation)
            for c, r in self.db.commits.items()
            if c in found and r.generation >= min_generation
        }

    def graph(self, heads: Sequence[str]) -> dict[str, tuple[tuple[str, ...], float]]:
        found: set[str] = set()
        for h in heads:
            found |= self.db.ancestors(h)
        return {c: (self.db.commits[c].parents, self.db.commits[c].created_at) for c in found}

    def recorded_key(self, branch: str, key: str) -> str | None:
        with self.db.lock:
            found = self.db.keys.get((branch, key))
            ref = self.db.refs.get(branch)
            if found is None or ref is None or found not in self.db.commits:
                return None
            return found if found in self.db.ancestors(ref[1]) else None


def _refuse_session(s: SessionRecord | None, session_id: str, now: float) -> SessionRecord:
    if s is None:
        raise NotFoundError(f"no session {session_id!r} in this repo")
    if s.status != "open":
        raise SessionClosedError(f"session {session_id} is {s.status}")
    if now >= s.expires_at:
        raise SessionExpiredError(f"session {session_id} expired")
    return s


class _Writer:
    def __init__(self, db: _Db, commits: _Commits) -> None:
        self.db = db
        self.commits = commits

    def publish(
        self,
        branch: str,
        base: str,
        commit: CommitRecord,
        nodes: Nodes,
        *,
        session_id: str | None = None,
        staging: Sequence[StagedEntry] = (),  # no gc here: the rows go with the session
        staged_shards: Sequence[bytes] = (),
        require: Sequence[str] = (),
        action: str = "commit",
        idempotency_key: str | None = None,
        pull: int | None = None,
    ) -> str | None:
        if pull is not None:
            raise CatalogError("the memory catalog keeps no pull requests")
        db = self.db
        with db.lock:
            now = db.now()
            if session_id is not None:
                _refuse_session(db.sessions.get(session_id), session_id, now)
            missing = [c for c in require if c not in db.commits]
            if missing:
                raise NotFoundError(f"commit(s) {', '.join(missing)} no longer exist")
            ref = db.refs.get(branch)
            if ref is None or ref[0] != "branch":
                raise NotFoundError(f"branch {branch!r} no longer exists")
            done = None
            if idempotency_key is not None:
                done = self.commits.recorded_key(branch, idempotency_key)
            if done is None:
                if ref[1] != base:
                    return None
                db.nodes.update(nodes)
                rows = db.staged.get(session_id or "", {}).values()
                held = {e.ref.hash: e.ref.inline for e in rows if e.kind == "vrefs" and e.ref}
                db.nodes.update((h, ("shard", held[h] or b"")) for h in staged_shards)
                db.commits[commit.id] = replace(commit, created_at=now)
                db.refs[branch] = ("branch", commit.id)
                db.log(branch, action, base, commit.id, commit.author)
                if idempotency_key is not None:
                    db.keys[(branch, idempotency_key)] = commit.id
                done = commit.id
            if session_id is not None:
                s = db.sessions[session_id]
                db.sessions[session_id] = replace(s, status="committed", commit_id=done)
                db.staged.pop(session_id, None)
                db.reads.pop(session_id, None)
            return done

    def publish_history(
        self,
        commits: Sequence[tuple[CommitRecord, Nodes]],
        updates: Sequence[RefUpdate],
        *,
        author: str,
        action: str = "import",
    ) -> None:
        db = self.db
        with db.lock:
            for u in updates:
                ref = db.refs.get(u.name)
                if u.expected is None and ref is not None:
                    raise AlreadyExistsError(f"a {ref[0]} named {u.name!r} already exists")
                if u.expected is not None and ref != ("branch", u.expected):
                    raise RefMovedError(f"branch {u.name!r} moved", ref=u.name)
            for commit, nodes in commits:
                db.nodes.update(nodes)
                db.commits[commit.id] = commit
            for u in updates:
                db.refs[u.name] = (u.kind, u.new)
                db.log(u.name, action, u.expected, u.new, author)


class _Sessions:
    def __init__(self, db: _Db) -> None:
        self.db = db

    def create(
        self, session_id: str, branch: str, author: str, isolation: str, expires_in: float
    ) -> tuple[SessionRecord, CommitRecord]:
        with self.db.lock:
            ref = self.db.refs.get(branch)
            if ref is None or ref[0] != "branch":
                raise NotFoundError(f"no branch {branch!r}")
            now = self.db.now()
            s = SessionRecord(
                session_id, branch, ref[1], author, isolation, "open", now, now + expires_in, None
            )
            self.db.sessions[session_id] = s
            return s, self.db.commits[ref[1]]

    def get(self, session_id: str) -> SessionRecord:
        return self.get_with_clock(session_id)[0]

    def get_with_clock(self, session_id: str) -> tuple[SessionRecord, float]:
        found = self.db.sessions.get(session_id)
        if found is None:
            raise NotFoundError(f"no session {session_id!r} in this repo")
        return found, self.db.now()

    def infos(self, include_closed: bool = False) -> list[SessionInfo]:
        now = self.db.now()
        return [
            s.info(now)
            for s in sorted(self.db.sessions.values(), key=lambda s: (s.created_at, s.id))
            if include_closed or s.status == "open"
        ]

    def update(self, session_id: str, **values: Any) -> SessionRecord:
        with self.db.lock:
            now = self.db.now()
            s = _refuse_session(self.db.sessions.get(session_id), session_id, now)
            extend_by, max_life = values.pop("extend_by", None), values.pop("max_life", None)
            if extend_by is not None:
                exp = now + extend_by
                if max_life is not None:
                    exp = min(exp, s.created_at + max_life)
                values["expires_at"] = max(exp, s.expires_at)
            s = self.db.sessions[session_id] = replace(s, **values)
            if values.get("status") == "abandoned":
                self.db.staged.pop(session_id, None)
                self.db.reads.pop(session_id, None)
            return s

    def close_as(self, session_id: str, commit_id: str) -> None:
        self.update(session_id, status="committed", commit_id=commit_id)

    def stage(
        self,
        session_id: str,
        entries: Sequence[StagedEntry],
        drops: Iterable[str] = (),
        *,
        blobs: Nodes | None = None,
        reads_: Sequence[Read] = (),
    ) -> None:
        with self.db.lock:
            _refuse_session(self.db.sessions.get(session_id), session_id, self.db.now())
            self.db.nodes.update(blobs or {})
            self.db.reads.setdefault(session_id, set()).update(reads_)
            staged = self.db.staged.setdefault(session_id, {})
            for path in drops:
                prefix = f"{path}/" if path else ""
                for slot, e in list(staged.items()):
                    if (e.path == path and e.kind in ("meta", "chunk", "vrefs", "vshape")) or (
                        e.kind == "raw" and e.key.startswith(prefix)
                    ):
                        del staged[slot]
                staged[(path, "drop", (), "")] = StagedEntry(path, "drop")
            for e in entries:
                if e.kind == "vrefs":
                    stage_batch(staged, e)
                else:
                    staged[e.slot] = e

    def replace_staged(self, session_id: str, entries: Sequence[StagedEntry], base: str) -> None:
        with self.db.lock:
            s = _refuse_session(self.db.sessions.get(session_id), session_id, self.db.now())
            self.db.staged[session_id] = {e.slot: e for e in entries}
            self.db.reads.pop(session_id, None)
            self.db.sessions[session_id] = replace(s, base_commit=base)

    def load_staged(
        self, session_id: str, kinds: Sequence[StagedKind] | None = None
    ) -> list[StagedEntry]:
        found = list(self.db.staged.get(session_id, {}).values())
        return found if kinds is None else [e for e in found if e.kind in kinds]

    def iter_staged(
        self, session_id: str, kinds: Sequence[StagedKind] | None = None
    ) -> Iterator[StagedEntry]:
        return iter(self.load_staged(session_id, kinds))

    def get_staged(
        self,
        session_id: str,
        path: str,
        kind: StagedKind,
        coords: ChunkCoords = (),
        key: str = "",
        raw_key: str | None = None,
        batch: ChunkCoords | None = None,
    ) -> dict[str, StagedEntry]:
        staged = self.db.staged.get(session_id, {})
        out: dict[str, StagedEntry] = {}
        if kind == "vrefs":  # a batch asked for by its position's text
            batch = tuple(int(x) for x in key.split(",")) if key else ()
        for slot, e in staged.items():  # a batch's slot also holds its shape
            if batch is not None and slot[:3] == (path, "vrefs", batch):
                out["vrefs"] = e
        for slot in ((path, kind, coords, key), (path, "drop", (), ""), (path, "vshape", (), "")):
            if slot in staged:
                out[slot[1]] = staged[slot]
        if raw_key is not None and ("", "raw", (), raw_key) in staged:
            out["raw"] = staged[("", "raw", (), raw_key)]
        return out

    def get_staged_many(
        self, session_id: str, asks: Sequence[StagedAsk]
    ) -> list[dict[str, StagedEntry]]:
        return [self.get_staged(session_id, *a) for a in asks]

    def record_reads(self, session_id: str, items: Iterable[Read]) -> None:
        with self.db.lock:
            self.db.reads.setdefault(session_id, set()).update(items)

    def load_reads(self, session_id: str) -> Reads:
        found = self.db.reads.get(session_id, set())
        return (
            frozenset(r for r in found if not isinstance(r, str)),
            frozenset(r for r in found if isinstance(r, str)),
        )


class _Sources:
    def __init__(self, db: _Db) -> None:
        self.db = db

    def all(self) -> dict[str, dict[str, Any]]:
        with self.db.lock:
            return {p: dict(o) for p, o in sorted(self.db.sources.items())}

    def allow(self, prefix: str, options: dict[str, Any]) -> None:
        with self.db.lock:
            self.db.sources[prefix] = dict(options)


class _Gc:
    """What gc and expiry ask, over the fake's structures (no marks: nothing is deleted)."""

    def __init__(self, db: _Db) -> None:
        self.db = db

    def delete_commits(self, ids: Sequence[str]) -> list[str]:
        with self.db.lock:
            keep = {c for _, c in self.db.refs.values()}
            keep |= {s.base_commit for s in self.db.sessions.values() if s.status == "open"}
            gone = [c for c in ids if c in self.db.commits and c not in keep]
            for c in gone:
                del self.db.commits[c]
            return gone

    def live_staged(self) -> tuple[set[bytes], list[tuple[bytes, int, int, bytes]], set[bytes]]:
        return set(), [], set()

    def moves(self) -> dict[tuple[bytes, int], tuple[bytes, int]]:
        return {}

    def moved_to(self, pack: bytes, offset: int) -> tuple[bytes, int] | None:
        return None

    def record_moves(self, rows: Sequence[tuple[bytes, int, bytes, int]]) -> None:
        raise CatalogError("the in-memory catalog does not repack")

    def forget_moves(self, packs: Sequence[bytes]) -> None:
        return None

    def blob_index(self) -> dict[bytes, tuple[str, int]]:
        return {h: (k, len(d)) for h, (k, d) in self.db.nodes.items()}

    def mark(self, items: Sequence[tuple[str, bytes, int]]) -> None:
        return None

    def marks(self, kind: str) -> list[tuple[bytes, str, int, float]]:
        return []

    def unmark(self, kind: str, hashes: Sequence[bytes]) -> None:
        return None

    def eligible(self, kind: str, grace: float) -> list[tuple[bytes, int]]:
        return []

    def claim(
        self, run_id: str, hashes: Sequence[bytes], grace: float
    ) -> tuple[list[tuple[bytes, int]], list[tuple[bytes, int]]]:
        return [], []

    def release(self, run_id: str, hashes: Sequence[bytes]) -> list[bytes]:
        return []

    def tombstone(self, hashes: Sequence[bytes]) -> None:
        return None

    def delete_nodes(self, hashes: Sequence[bytes], grace: float) -> list[bytes]:
        return []

    def purge_tombstones(self) -> int:
        return 0


class MemoryCatalog:
    """One repo's catalog, in memory: the interface the engine runs on, without SQL."""

    def __init__(self) -> None:
        self._db = _Db()
        self.repo_id = 1
        self.refs = _Refs(self._db)
        self.commits = _Commits(self._db)
        self.writer = _Writer(self._db, self.commits)
        self.sessions = _Sessions(self._db)
        self.nodes = _Nodes(self._db)
        self.gc = _Gc(self._db)
        self.sources = _Sources(self._db)
        self.rules = MemoryRules()
        self.pulls = MemoryPulls()
        self.catalog_id = uuid.uuid4().hex
        root = Root().encode()
        first = CommitRecord(
            uuid.uuid4().hex[:20],
            None,
            None,
            content_hash(root),
            None,
            "memory",
            "Repository initialized",
            {},
            self._db.now(),
            0,
        )
        self._db.nodes[first.root_hash] = ("root", root)
        self._db.commits[first.id] = first
        self._db.refs["main"] = ("branch", first.id)
        self._db.log("main", "create", None, first.id, "memory")

    def clock(self) -> float:
        return self._db.now()

    def safe_url(self) -> str:
        return "memory://catalog"


def memory_repo(chunks: Path, name: str = "memory") -> Repo:
    """A repo whose catalog is a :class:`MemoryCatalog` (its chunks in the directory
    ``chunks``): the engine's session and history logic, with no database under it."""
    config = RepoConfig(f"memory://{uuid.uuid4().hex}", name)
    catalog = MemoryCatalog()
    hasher = chunk_hasher(DEFAULT_CONTENT_HASH)
    objects = open_object_store(str(chunks), {}, verify=True, hasher=hasher)
    reader = CatalogReader(catalog.nodes)
    core = RepoCore(config, catalog, str(chunks), objects, reader, hasher, DEFAULT_IDENTITY)
    return Repo(core)
