"""A repo: one versioned Zarr hierarchy, with its branches, tags, history and sessions."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import zarrlake.history as history
from zarrlake._optional import load
from zarrlake.catalog import CatalogUpgrade
from zarrlake.catalog import upgrade_catalog as catalog_upgrade
from zarrlake.core import RepoCore, create_core, open_core
from zarrlake.errors import (
    InvalidInputError,
    NotFoundError,
)
from zarrlake.model.hashing import DEFAULT_CONTENT_HASH, chunk_hasher
from zarrlake.model.lifecycle import DEFAULT_EXPIRY, MAX_EXPIRY
from zarrlake.model.virtual import normalize_prefix
from zarrlake.objects.local import make_directory
from zarrlake.objects.sources import split_secrets
from zarrlake.review import ReviewMixin
from zarrlake.session.readonly import ReadonlySession
from zarrlake.types import (
    CommitInfo,
    Isolation,
    RefLogEntry,
    RepoConfig,
    SessionInfo,
    default_author,
    safe_url,
    validate_name,
    validate_text,
)
from zarrlake.virtual import VirtualSourcesMixin, allow_sources

if TYPE_CHECKING:
    from zarrlake.maintenance import ExpireReport, ExportReport, FsckReport, GCReport
    from zarrlake.model.conflicts import Solver
    from zarrlake.model.diff import Diff
    from zarrlake.model.graph import CommitGraph
    from zarrlake.model.preview import MergePreview
    from zarrlake.session import Session, WritableSession

__all__ = ["Repo", "RepoConfig", "upgrade_catalog"]

CATALOG_FILE = "catalog.db"


def _author(author: object) -> str:
    return default_author() if author is None else validate_text(author, "author")


def _local_catalog(location: str | os.PathLike[str]) -> tuple[Path, str]:
    path = Path(location).expanduser().absolute()
    return path, f"sqlite:///{path / CATALOG_FILE}"


def upgrade_catalog(
    location: str | os.PathLike[str] | None = None, *, catalog: str | None = None
) -> CatalogUpgrade:
    """Upgrade a catalog's schema to this release's version, in one transaction.

    Give the lake's directory (embedded default) or ``catalog=`` (a SQLAlchemy URL). Opening
    a catalog never changes its schema: one made by an earlier zarrlake is refused until it
    is upgraded, and once upgraded, earlier releases refuse it. Upgrade when every client of
    a shared catalog runs this release. ``zarrlake catalog upgrade`` does the same.
    """
    if (location is None) == (catalog is None):
        raise InvalidInputError("give the lake's directory or catalog= (a SQLAlchemy URL)")
    if location is not None:
        path, catalog = _local_catalog(location)
        if not (path / CATALOG_FILE).exists():
            raise NotFoundError(f"no zarrlake repo at {path} (create one with zarrlake init)")
    assert catalog is not None
    return catalog_upgrade(catalog)


class Repo(VirtualSourcesMixin, ReviewMixin):
    """One versioned Zarr hierarchy in a catalog.

    Use :meth:`create` or :meth:`open`::

        repo = Repo.create("my-lake")                      # SQLite + local directory
        repo = Repo.open(catalog="postgresql+psycopg://...", name="climate",
                         storage_options={"anon": False})
    """

    def __init__(self, core: RepoCore) -> None:
        self._core = core
        self.config = core.config
        self.name = core.name
        self.storage = core.storage
        self.content_hash = core.hasher.name
        """The hash naming the repo's chunk objects, as recorded when it was created:
        ``"blake3"``, or ``"sha256"`` (repos made before schema 9, and those asked for it)."""
        self.virtual_identity = core.virtual_identity
        """What names the repo's virtual chunks, as recorded when it was created: ``"span"``,
        or ``"sha256"`` (repos made before schema 11)."""

    # -- opening -------------------------------------------------------------------------------

    @staticmethod
    def _config(
        location: str | os.PathLike[str] | None,
        catalog: str | None,
        name: str,
        storage_options: dict[str, Any] | None,
        verify_reads: bool,
        strict_metadata: bool,
        source_options: dict[str, dict[str, Any]] | None = None,
    ) -> tuple[RepoConfig, Path | None]:
        validate_name(name, "repo name")
        if location is not None:
            if catalog is not None:
                raise InvalidInputError(
                    "give either a location (embedded default) or catalog=, not both"
                )
            path, catalog = _local_catalog(location)
        elif catalog is None:
            raise InvalidInputError(
                "give a location (a local directory) or catalog= (a SQLAlchemy URL) and storage="
            )
        else:
            path = None
        sources = {normalize_prefix(p): dict(o) for p, o in (source_options or {}).items()}
        return RepoConfig(
            catalog, name, dict(storage_options or {}), verify_reads, strict_metadata, sources
        ), path

    @classmethod
    def create(
        cls,
        location: str | os.PathLike[str] | None = None,
        *,
        catalog: str | None = None,
        storage: str | None = None,
        name: str = "default",
        storage_options: dict[str, Any] | None = None,
        author: str | None = None,
        verify_reads: bool = True,
        strict_metadata: bool = True,
        virtual_sources: dict[str, dict[str, Any]] | None = None,
        content_hash: str = DEFAULT_CONTENT_HASH,
    ) -> Repo:
        """Create a repo.

        Parameters
        ----------
        location
            A local directory for the embedded default: the catalog is ``catalog.db`` (SQLite)
            and chunks go under ``chunks/`` inside it.
        catalog, storage
            Instead of ``location``: a SQLAlchemy URL (``sqlite:///...``,
            ``postgresql+psycopg://...``) and an object storage URL (a local path,
            ``s3://bucket/prefix``, ``memory://...``). One catalog may hold many repos.
        name
            The repo's name in its catalog.
        storage_options
            Passed to fsspec (credentials, endpoint); never stored in the catalog.
        verify_reads
            Check every chunk read against the CRC32C recorded in its ref, or its content
            hash for a chunk written before checksums (:class:`ChunkCorruptionError`).
        strict_metadata
            Refuse ``zarr.json`` documents that are not Zarr v3 metadata.
        virtual_sources
            Prefixes virtual chunk references may point under, each with its options (see
            :meth:`allow_virtual_source`; credentials among them are never stored).
        content_hash
            The hash naming the repo's chunk objects (its content address), recorded in the
            catalog for the repo's life: ``"blake3"`` (the default) or ``"sha256"``.
        """
        hasher = chunk_hasher(content_hash)
        secrets = {p: split_secrets(o)[1] for p, o in (virtual_sources or {}).items()}
        config, path = cls._config(
            location, catalog, name, storage_options, verify_reads, strict_metadata, secrets
        )
        if path is not None:
            make_directory(path)
            # relative to the catalog file's directory: the lake can be moved or copied whole
            storage_url = "."
        elif storage is None:
            raise InvalidInputError(
                "storage= is required with catalog= (e.g. 's3://bucket/prefix')"
            )
        else:
            storage_url = storage
            if "://" not in storage_url:
                storage_url = str(Path(storage_url).expanduser().absolute())
        core = create_core(config, storage_url, _author(author), hasher)
        allow_sources(core, virtual_sources or {})
        return cls(core)

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str] | None = None,
        *,
        catalog: str | None = None,
        name: str = "default",
        storage_options: dict[str, Any] | None = None,
        verify_reads: bool = True,
        strict_metadata: bool = True,
        source_options: dict[str, dict[str, Any]] | None = None,
    ) -> Repo:
        """Open an existing repo (see :meth:`create` for the parameters); ``source_options``
        gives, per allowed virtual-source prefix, the options never stored (credentials)."""
        config, path = cls._config(
            location, catalog, name, storage_options, verify_reads, strict_metadata, source_options
        )
        if path is not None and not (path / CATALOG_FILE).exists():
            raise NotFoundError(
                f"no zarrlake repo at {path} (create one with Repo.create({str(path)!r}))"
            )
        return cls(open_core(config))

    @classmethod
    def open_or_create(cls, location: str | os.PathLike[str] | None = None, **kwargs: Any) -> Repo:
        """Open the repo if it exists, else create it."""
        open_kwargs = {k: v for k, v in kwargs.items() if k not in ("storage", "author")}
        try:
            return cls.open(location, **open_kwargs)
        except NotFoundError:
            return cls.create(location, **kwargs)

    @classmethod
    def from_config(cls, config: RepoConfig) -> Repo:
        """Open the repo a :class:`RepoConfig` describes (as ``repo.config`` gives it)."""
        if not isinstance(config, RepoConfig):
            raise InvalidInputError(f"expected a RepoConfig, got {type(config).__name__}")
        return cls(open_core(config))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Repo.from_config, (self.config,))

    def __repr__(self) -> str:
        from zarrlake.display.commits import storage_words

        return (
            f"<zarrlake.Repo {self.name!r} catalog={safe_url(self.config.catalog)} "
            f"chunks {storage_words(self.storage)}>"
        )

    def _repr_html_(self) -> str:
        from zarrlake.display import repo_html

        return repo_html(self)

    def widget(self, ref: str | None = None) -> Any:
        """A Jupyter widget to browse branches and commits, with each commit's details and
        diff (chunk map included); ``widget.selected_dataset()`` opens the selected commit.
        Needs the ``ui`` extra."""
        return load("zarrlake.ui.widgets", "RepoBrowser", "ui")(self, ref)

    def dashboard(self, *, allow_writes: bool = False, token: str | None = None) -> Any:
        """The commit browser as a Panel viewer, shown inline in a notebook (``zarrlake ui``
        serves the same app). Needs the ``ui`` extra."""
        dashboard = load("zarrlake.ui.dashboard", "Dashboard", "ui")
        return dashboard(self, allow_writes=allow_writes, token=token)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Repo) and other.config == self.config

    def __hash__(self) -> int:
        return hash(self.config.key())

    # -- refs ----------------------------------------------------------------------------------

    def resolve(self, ref: str) -> str:
        """The commit id a ref expression names.

        A branch, tag, commit id or unique prefix, optionally followed by ``@{N}`` (the Nth
        earlier position of the ref, from the ref log), ``@{2026-11-01T12:00}`` (its position
        at that time), ``~N`` (Nth first-parent ancestor) and ``^N`` (Nth parent). Every
        method that takes a ref accepts these. See ``docs/history.md``.
        """
        return history.resolve_ref(self._core, ref)

    def branches(self) -> dict[str, str]:
        """Branch name -> head commit id."""
        return history.list_refs(self._core, "branch")

    def tags(self) -> dict[str, str]:
        """Tag name -> commit id."""
        return history.list_refs(self._core, "tag")

    def create_branch(self, name: str, ref: str = "main", *, author: str | None = None) -> str:
        """Create a branch at ``ref`` (branch, tag, commit or ref expression); returns its
        commit id."""
        return history.create_ref(self._core, name, "branch", ref, _author(author))

    def delete_branch(self, name: str, *, author: str | None = None) -> str:
        """Delete a branch (its commits stay reachable from other refs); returns its last head."""
        return history.delete_ref(self._core, name, "branch", _author(author))

    def reset_branch(
        self,
        name: str,
        to: str,
        *,
        expected: str | None = None,
        author: str | None = None,
        message: str = "",
    ) -> str:
        """Point a branch at another commit, by compare-and-swap; recorded in the ref log.

        ``expected`` is the commit the caller believes the branch is at (default: its current
        head, read now). Raises :class:`RefMovedError` if the branch is elsewhere.
        """
        return history.reset_branch(self._core, name, to, expected, _author(author), message)

    def create_tag(self, name: str, ref: str = "main", *, author: str | None = None) -> str:
        """Create an immutable tag at ``ref``; returns its commit id."""
        return history.create_ref(self._core, name, "tag", ref, _author(author))

    def delete_tag(self, name: str, *, author: str | None = None) -> str:
        """Delete a tag (recorded in the ref log); returns the commit it pointed to."""
        return history.delete_ref(self._core, name, "tag", _author(author))

    def reflog(self, name: str, limit: int | None = None) -> list[RefLogEntry]:
        """Every move of a branch or tag, newest first."""
        return history.reflog(self._core, name, limit)

    # -- history -------------------------------------------------------------------------------

    def commit_info(self, ref: str) -> CommitInfo:
        """One commit, by ref expression."""
        return history.commit_info(self._core, self.resolve(ref))

    def log(self, ref: str = "main", limit: int | None = None) -> list[CommitInfo]:
        """Commits reachable from ``ref`` by first parents, newest first."""
        return history.log(self._core, self.resolve(ref), limit)

    def graph(
        self,
        refs: Sequence[str] | None = None,
        *,
        offset: int = 0,
        limit: int | None = 100,
    ) -> CommitGraph:
        """The commit graph, a page at a time: the commits reachable from ``refs`` (default:
        every branch and tag) in drawing order (children before parents, newest first), each
        with its lane, the segments to the next row, and the refs pointing at it.

        Rows ``offset`` to ``offset + limit`` are loaded in full; ``total`` counts them all
        and ``width`` is the number of lanes of the whole graph, so pages line up.
        """
        return history.graph(self._core, refs, offset, limit)

    def diff(self, a: str, b: str) -> Diff:
        """What changed from ref ``a`` to ref ``b``: nodes added, removed and modified,
        metadata field by field, and per array the chunk coordinates added, changed and
        removed. Unchanged manifest shards are never loaded."""
        return history.diff(self._core, a, b)

    @overload
    def merge(
        self,
        source: str,
        branch: str = ...,
        *,
        solver: Solver = ...,
        message: str | None = ...,
        author: str | None = ...,
        metadata: dict[str, Any] | None = ...,
        fast_forward: bool = ...,
        timeout: float = ...,
        dry_run: Literal[False] = ...,
    ) -> str: ...

    @overload
    def merge(
        self,
        source: str,
        branch: str = ...,
        *,
        solver: Solver = ...,
        message: str | None = ...,
        author: str | None = ...,
        metadata: dict[str, Any] | None = ...,
        fast_forward: bool = ...,
        timeout: float = ...,
        dry_run: Literal[True],
    ) -> MergePreview: ...

    def merge(
        self,
        source: str,
        branch: str = "main",
        *,
        solver: Solver = "fail",
        message: str | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        fast_forward: bool = True,
        timeout: float = 120.0,
        dry_run: bool = False,
    ) -> str | MergePreview:
        """Merge ref ``source`` into ``branch``; returns the branch's new head.

        A fast-forward when ``branch`` is an ancestor of ``source`` (unless
        ``fast_forward=False``); nothing when ``source`` is already merged; otherwise a
        three-way merge at chunk level against the common ancestor, recorded as a commit with
        two parents. Conflicts (the same rules as commits) raise :class:`ConflictError`, or
        are resolved by ``solver="ours"`` (``branch`` keeps its version) or ``"theirs"``
        (``source``'s version wins).

        With ``dry_run=True`` nothing is written: the merge is computed against the branch's
        head as it is now and stopped before publishing, and a :class:`MergePreview` says
        what it would do (its outcome, the conflicts it would report, and the changes the
        branch would gain).
        """
        if not isinstance(dry_run, bool):
            raise InvalidInputError(f"dry_run must be True or False, got {dry_run!r}")
        if dry_run:
            return history.preview_merge(
                self._core, source, branch, solver=solver, fast_forward=fast_forward
            )
        return history.merge(
            self._core,
            source,
            branch,
            solver=solver,
            message=message,
            author=_author(author),
            metadata=metadata,
            fast_forward=fast_forward,
            timeout=timeout,
        )

    def revert(
        self,
        commit: str,
        *,
        branch: str = "main",
        message: str | None = None,
        author: str | None = None,
        metadata: dict[str, Any] | None = None,
        timeout: float = 120.0,
    ) -> str:
        """Commit on ``branch`` the inverse of one commit's changes (against its first
        parent); returns the new commit. Refused with :class:`ConflictError` when later
        commits changed the same data."""
        return history.revert(
            self._core,
            commit,
            branch,
            message=message,
            author=_author(author),
            metadata=metadata,
            timeout=timeout,
        )

    # -- sessions ------------------------------------------------------------------------------

    def writable_session(
        self,
        branch: str = "main",
        *,
        expires_in: timedelta = DEFAULT_EXPIRY,
        author: str | None = None,
        isolation: Isolation = "snapshot",
    ) -> WritableSession:
        """Start a unit of work on ``branch``.

        ``expires_in`` (default 24 h, at most 7 days) bounds how long it may stage writes;
        ``isolation="serializable"`` also refuses a commit if anything the session read was
        overwritten by a commit it did not see.
        """
        validate_name(branch, "branch name")
        if not isinstance(expires_in, timedelta) or expires_in.total_seconds() <= 0:
            raise InvalidInputError("expires_in must be a positive timedelta")
        if expires_in > MAX_EXPIRY:
            raise InvalidInputError(
                f"expires_in may be at most {MAX_EXPIRY.days} days; extend() later if needed"
            )
        if isolation not in ("snapshot", "serializable"):
            raise InvalidInputError("isolation must be 'snapshot' or 'serializable'")
        from zarrlake.session.registry import start_session

        return start_session(self._core, branch, _author(author), isolation, expires_in)

    def session(self, session_id: str) -> Session:
        """Join an existing writable session (from any process) by id. A session that was
        committed meanwhile opens read-only at its commit."""
        from zarrlake.session.registry import join_session

        return join_session(self._core, session_id)

    def readonly_session(
        self,
        ref: str | None = None,
        *,
        branch: str | None = None,
        tag: str | None = None,
        commit: str | None = None,
        as_of: datetime | None = None,
    ) -> ReadonlySession:
        """A read-only view of one commit: by ref, branch (its head now), tag, commit id, or the
        head a branch had at time ``as_of``."""
        given = [x for x in (ref, branch, tag, commit) if x is not None]
        if len(given) > 1:
            raise InvalidInputError("give at most one of ref, branch, tag, commit")
        if as_of is not None:
            if ref is not None or tag is not None or commit is not None:
                raise InvalidInputError("as_of goes with a branch name only")
            b = branch or "main"
            return ReadonlySession(self._core, self.commit_at(b, as_of), branch=b)
        if tag is not None:
            return ReadonlySession(self._core, history.ref_commit(self._core, tag, "tag"))
        if branch is not None or (ref is None and commit is None):
            b = validate_name(branch or "main", "branch name")
            head = history.branch_head(self._core, b)
            return ReadonlySession(self._core, head.id, branch=b, base=head)
        return ReadonlySession(self._core, self.resolve(commit or ref or ""))

    def commit_at(self, branch: str, when: datetime) -> str:
        """The commit that was the head of ``branch`` at time ``when`` (naive times are UTC)."""
        return history.commit_at(self._core, branch, when)

    def sessions(self, include_closed: bool = False) -> list[SessionInfo]:
        """Sessions not yet committed or abandoned, oldest first, each with its status by the
        catalog's clock: ``open`` (it can stage and commit) or ``expired`` (it can do neither,
        and no longer protects its objects from gc). ``include_closed`` adds ``committed`` and
        ``abandoned`` ones."""
        from zarrlake.session.registry import list_sessions

        return list_sessions(self._core, include_closed)

    # -- maintenance ---------------------------------------------------------------------------

    def gc(
        self,
        grace: timedelta = timedelta(hours=24),
        *,
        dry_run: bool = False,
        progress: bool | None = None,
    ) -> GCReport:
        """Delete chunk objects and catalog nodes that no commit, ref or open session reaches.

        Two-phase: a run marks what is unreachable now and deletes what was marked at least
        ``grace`` ago and is still unreachable, so run it periodically (``grace=0`` marks and
        deletes in one run). Safe while sessions write and deduplicate against the same
        objects, and safe to rerun after a crash. ``progress`` shows progress bars (default:
        when stderr is a terminal).
        """
        import zarrlake.maintenance as maintenance

        return maintenance.gc(self._core, grace, dry_run=dry_run, progress=progress)

    def expire(
        self,
        older_than: datetime | timedelta,
        *,
        keep_tags: bool = True,
        dry_run: bool = False,
    ) -> ExpireReport:
        """Drop commits older than a time (or a delay before now, by the catalog's clock) that
        no branch, tag or open session needs, so that ``gc`` can free their data.

        Branch heads and tagged commits are always kept; with ``keep_tags`` so is the whole
        history of every tag. The history of what is kept ends where expired commits begin.
        """
        import zarrlake.maintenance as maintenance

        return maintenance.expire(self._core, older_than, keep_tags=keep_tags, dry_run=dry_run)

    def fsck(self, *, verify: bool = False, progress: bool | None = None) -> FsckReport:
        """Check that every chunk object and catalog node a commit or open session references
        exists; with ``verify=True`` also read every object and check its hash."""
        import zarrlake.maintenance as maintenance

        return maintenance.fsck(self._core, verify=verify, progress=progress)

    def export(
        self,
        ref: str,
        target: Any,
        *,
        storage_options: dict[str, Any] | None = None,
        overwrite: bool = False,
        progress: bool | None = None,
    ) -> ExportReport:
        """Write a plain Zarr v3 copy of a commit to ``target``: a zarr store, a local path
        or an fsspec URL (``storage_options`` for the latter). The target must be empty unless
        ``overwrite`` (which clears it first)."""
        import zarrlake.maintenance as maintenance

        return maintenance.export(
            self._core,
            self.resolve(ref),
            target,
            storage_options=storage_options,
            overwrite=overwrite,
            progress=progress,
        )
