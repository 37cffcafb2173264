"""What the gateway serves from: the repos of one catalog, a ref resolved once per request,
and one read-only session per commit (sessions of a commit never change, so they are kept).

Everything here blocks on the catalog; the handler calls it in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from zarr.core.buffer import Buffer, default_buffer_prototype

from zarrlake import LakeStore, Repo, VersionURL
from zarrlake.errors import InvalidInputError, NotFoundError
from zarrlake.types import safe_url

__all__ = ["PIN_TTL", "Lake", "Missing", "Version"]

PIN_TTL = 10.0  # seconds a commit id, once resolved, is served without asking the catalog
_COMMIT_ID = re.compile(r"[0-9a-f]{20}")


class Missing(NotFoundError):
    """An unknown repo, ref or key, in words of the gateway's own: the engine's messages may
    name the catalog, and are never passed on."""


@dataclass(frozen=True, slots=True)
class Version:
    """One request's version: the ref as asked, the commit it resolved to, and the store of
    that commit's read-only session. ``pinned`` when the ref was the commit id itself."""

    repo: str
    ref: str
    commit: str
    pinned: bool
    store: LakeStore


class _LRU:
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key: Hashable, value: Any) -> Any:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


class Lake:
    """The repos of one catalog, opened by name on first use.

    Build it with :meth:`for_url` (a version URL without a version, as ``zarrlake serve``
    does) or :meth:`for_repo` (the repo a dashboard shows, or a function opening it).
    """

    def __init__(
        self,
        opener: Callable[[str], Repo],
        secrets: Callable[[], Iterable[str]],
        *,
        sessions: int = 64,
    ) -> None:
        self._opener = opener
        self._secrets = secrets
        self._repos: dict[str, Repo] = {}
        self._lock = threading.Lock()
        self._sessions = _LRU(sessions)
        self._pinned = _LRU(sessions)  # (repo, commit id) -> time it was last resolved
        self._listings = _LRU(256)
        self._consolidated = _LRU(64)

    @classmethod
    def for_url(cls, url: VersionURL, storage_options: dict[str, Any] | None = None) -> Lake:
        """The lake of a version URL (its ``repo=`` does not limit which repos are served)."""
        if url.ref is not None or url.group is not None:
            raise InvalidInputError(
                f"the gateway serves a lake, not one version: drop the #ref= and group= of {url!r}"
            )

        def open_repo(name: str) -> Repo:
            return replace(url, repo=name).open(storage_options=storage_options)

        def secrets() -> list[str]:
            return _secrets_of(url.catalog, url.location, storage_options or {})

        return cls(open_repo, secrets)

    @classmethod
    def for_repo(cls, source: Repo | Callable[[], Repo]) -> Lake:
        """The catalog of a repo: that repo and every other repo of its catalog."""
        home: list[Repo] = [source] if isinstance(source, Repo) else []
        lock = threading.Lock()

        def the_home() -> Repo:
            with lock:
                if not home:
                    home.append(source())  # type: ignore[operator]  # a function here
                return home[0]

        def open_repo(name: str) -> Repo:
            repo = the_home()
            if name == repo.name:
                return repo
            c = repo.config
            return Repo.open(
                catalog=c.catalog,
                name=name,
                storage_options=c.storage_options,
                verify_reads=c.verify_reads,
            )

        def secrets() -> list[str]:
            if not home:
                return []
            c = home[0].config
            return _secrets_of(c.catalog, None, c.storage_options)

        return cls(open_repo, secrets)

    # -- resolving -----------------------------------------------------------------------------

    def repo(self, name: str) -> Repo:
        """The repo ``name`` (:class:`NotFoundError` if the catalog has none)."""
        with self._lock:
            found = self._repos.get(name)
        if found is not None:
            return found
        try:
            repo = self._opener(name)
        except (NotFoundError, InvalidInputError) as exc:  # an invalid name names no repo
            raise Missing(f"no repo {name!r}") from exc
        with self._lock:
            return self._repos.setdefault(name, repo)

    def version(self, repo_name: str, ref: str) -> Version:
        """Resolve ``ref`` once, and the store of its commit.

        A commit id resolved in the last :data:`PIN_TTL` seconds is not asked about again:
        its data never changes, and the catalog is asked only whether it still exists
        (``expire`` may have dropped it).
        """
        recent = self._recent(repo_name, ref)
        if recent is not None:
            return recent
        repo = self.repo(repo_name)
        try:
            commit = repo.resolve(ref)
        except (NotFoundError, InvalidInputError) as exc:
            raise Missing(f"no ref {ref!r} in repo {repo_name!r}") from exc
        store = self._sessions.get((repo_name, commit))
        if store is None:
            store = self._sessions.put(
                (repo_name, commit), repo.readonly_session(commit=commit).store
            )
        if commit == ref:
            self._pinned.put((repo_name, commit), time.monotonic())
        return Version(repo_name, ref, commit, commit == ref, store)

    def fetch_here(self, repo_name: str, ref: str, key: str) -> tuple[Version, bytes | None] | None:
        """What :meth:`fetch` answers, when that needs no wait on the catalog or the network:
        the ref is a commit id served in the last :data:`PIN_TTL` seconds and the value is
        inline or in the lake's local object store. ``None`` otherwise (ask :meth:`fetch` in a
        worker thread). Local objects are read where the request is handled, as a static file
        server reads its files; a manifest shard not yet loaded is read from the catalog."""
        v = self._recent(repo_name, ref)
        if v is None or v.store.session.async_reads:
            return None
        session = v.store.session
        found = session.locate(key)
        if found is None or isinstance(found, bytes):
            return v, found
        if found.virtual:
            return None  # its source may be on the network
        return v, session.read_ref(found)

    def _recent(self, repo_name: str, ref: str) -> Version | None:
        """The version of ``ref`` if it is a commit id resolved in the last :data:`PIN_TTL`
        seconds (its store kept), without asking the catalog; else ``None``."""
        if not _COMMIT_ID.fullmatch(ref):
            return None
        checked = self._pinned.get((repo_name, ref))
        store = self._sessions.get((repo_name, ref))
        if checked is None or store is None or time.monotonic() - checked >= PIN_TTL:
            return None
        return Version(repo_name, ref, ref, True, store)

    def fetch(self, repo_name: str, ref: str, key: str) -> tuple[Version, bytes | None]:
        """The version and the whole value of ``key`` in it, in one call (one worker thread
        per request, when :meth:`fetch_here` cannot answer at once)."""
        v = self.version(repo_name, ref)
        got = v.store.get_sync(key)
        return v, None if got is None else _as_bytes(got)

    def refs(self, repo_name: str) -> tuple[dict[str, str], dict[str, str]]:
        """(branches, tags) of a repo."""
        repo = self.repo(repo_name)
        return repo.branches(), repo.tags()

    # -- what a version holds beyond its keys --------------------------------------------------

    def listing(self, v: Version, prefix: str) -> dict[str, bool]:
        """The children of a directory (``prefix`` ends in ``/`` or is empty), each with
        whether it is itself a directory; empty when there is no such directory."""
        cache_key = (v.repo, v.commit, prefix)
        found = self._listings.get(cache_key)
        if found is not None:
            return dict(found)
        children = v.store.session.children(prefix)
        return dict(self._listings.put(cache_key, children))

    def consolidated(self, v: Version, group: str, document: bytes) -> bytes:
        """The group's ``zarr.json`` with the metadata of every node below it inlined, as
        zarr-python's ``consolidate_metadata`` writes it (sub-groups with an empty
        ``consolidated_metadata``)."""
        cache_key = (v.repo, v.commit, group)
        found = self._consolidated.get(cache_key)
        if found is not None:
            return bytes(found)
        prefix = f"{group}/" if group else ""
        doc = json.loads(document)
        members: dict[str, Any] = {}
        proto = default_buffer_prototype()
        for key in _run(_keys(v.store, prefix)):
            if not key.endswith("/zarr.json") or key == prefix + "zarr.json":
                continue
            raw = v.store.get_sync(key, prototype=proto)
            if raw is None:
                continue
            meta = json.loads(raw.to_bytes())
            if meta.get("node_type") == "group":
                meta["consolidated_metadata"] = {
                    "kind": "inline",
                    "must_understand": False,
                    "metadata": {},
                }
            members[key[len(prefix) : -len("/zarr.json")]] = meta
        doc["consolidated_metadata"] = {
            "kind": "inline",
            "must_understand": False,
            "metadata": members,
        }
        return bytes(self._consolidated.put(cache_key, json.dumps(doc).encode()))

    # -- never show a secret -------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` without the catalog URL, its password or a storage option value."""
        for secret in sorted(set(self._secrets()), key=len, reverse=True):
            if len(secret) >= 4:
                text = text.replace(secret, "<redacted>")
        return re.sub(r"(://[^:@/\s]*:)[^@/\s]*@", r"\1<redacted>@", text)


def _secrets_of(catalog: str, location: str | None, options: dict[str, Any]) -> list[str]:
    out = [catalog, safe_url(catalog)]
    m = re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^:@/]*:([^@/]*)@", catalog)
    if m:
        out.append(m.group(1))
    if catalog.startswith("sqlite:///"):
        path = catalog[len("sqlite:///") :]
        out += [path, path.rsplit("/", 1)[0]]
    if location is not None:
        out.append(location)

    def values(x: Any) -> Iterable[str]:
        if isinstance(x, dict):
            for v in x.values():
                yield from values(v)
        elif isinstance(x, str | int | float) and not isinstance(x, bool):
            yield str(x)

    return out + [v for v in values(options) if len(v) >= 4]


def _as_bytes(buffer: Buffer) -> bytes:
    """A buffer's bytes, without copying them when it wraps a whole ``bytes`` object (as the
    buffers the store makes of what it read do): a megabyte copy per chunk shows in
    throughput."""
    array = buffer.as_numpy_array()
    base: object = array.base  # typed as an array; for np.frombuffer, the bytes it wraps
    if isinstance(base, bytes) and len(base) == array.nbytes:
        return base
    return buffer.to_bytes()


async def _keys(store: LakeStore, prefix: str) -> list[str]:
    return [k async for k in store.list_prefix(prefix)]


def _run(coro: Any) -> Any:
    """Run a store coroutine from a worker thread (the store's own methods hop to threads)."""
    return asyncio.run(coro)
