"""The zarrlake exception tree.

Every error raised by zarrlake derives from :class:`ZarrlakeError` and carries a stable
``kind`` code. Classes are grouped by what a handler does about them:

* :class:`InvalidInputError` and its children: fix the call (bad name, key, metadata, ref).
* :class:`NotFoundError`, :class:`AlreadyExistsError`: look up or choose another name.
* :class:`SessionError`: open a new session (expired, closed, read-only).
* :class:`ConflictError`: rebase, choose a solver, or discard the session.
* :class:`StorageError`, :class:`CatalogError`: infrastructure; retry later, run ``fsck``.

Where a class also means what a builtin means (a bad value, a missing key), it also derives
from that builtin so that generic handlers (``except ValueError``) keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "AlreadyExistsError",
    "CatalogError",
    "CheckFailedError",
    "CheckFailure",
    "ChunkCorruptionError",
    "CommitTimeoutError",
    "Conflict",
    "ConflictError",
    "ConflictKind",
    "EmptyCommitError",
    "InvalidInputError",
    "InvalidKeyError",
    "InvalidMetadataError",
    "InvalidNameError",
    "InvalidRefError",
    "NotFoundError",
    "ObjectMissingError",
    "PermissionDeniedError",
    "ProtectedBranchError",
    "PullRequestError",
    "ReadOnlyError",
    "RefMovedError",
    "SchemaVersionError",
    "SessionClosedError",
    "SessionError",
    "SessionExpiredError",
    "SourceChangedError",
    "SourceUnavailableError",
    "StorageError",
    "UnalignedWriteError",
    "VirtualSourceError",
    "ZarrlakeError",
]


class ZarrlakeError(Exception):
    """Root of every error zarrlake raises."""

    kind: str = "zarrlake"


# -- the caller must fix the input -----------------------------------------------------------


class InvalidInputError(ZarrlakeError, ValueError):
    """A value given to zarrlake is not acceptable. Nothing was changed."""

    kind = "invalid_input"


class InvalidNameError(InvalidInputError):
    """A repo, branch or tag name is not allowed."""

    kind = "invalid_name"


class InvalidKeyError(InvalidInputError):
    """A store key is malformed (empty segment, ``..``, control characters, ...)."""

    kind = "invalid_key"


class InvalidMetadataError(InvalidInputError):
    """A ``zarr.json`` document is not valid Zarr v3 metadata."""

    kind = "invalid_metadata"


class InvalidRefError(InvalidInputError):
    """A ref expression cannot be parsed or is ambiguous."""

    kind = "invalid_ref"


class EmptyCommitError(InvalidInputError):
    """A commit with no changes was refused; pass ``allow_empty=True`` to record one anyway."""

    kind = "empty_commit"


class UnalignedWriteError(InvalidInputError):
    """A write would split a chunk between tasks or jobs that run in parallel.

    Two writers of one chunk would each write the whole chunk, and one would silently replace
    the other's part. The message names the chunk boundaries to align to.
    """

    kind = "unaligned_write"


class VirtualSourceError(InvalidInputError):
    """A virtual chunk reference names a place it may not point at: a scheme other than
    ``file``, ``s3``, ``http(s)``, a path that climbs (``..``), or a URL under none of the
    repo's allowed prefixes (``repo.allow_virtual_source``), or it spans bytes past the end of
    its source. ``url`` is the reference's URL."""

    kind = "virtual_source"

    def __init__(self, message: str, *, url: str = "") -> None:
        super().__init__(message)
        self.url = url

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_with, (type(self), self.args[0], self.__dict__))


# -- the thing is not there, or already is ---------------------------------------------------


class NotFoundError(ZarrlakeError, LookupError):
    """A repo, ref, commit or session does not exist."""

    kind = "not_found"


class AlreadyExistsError(ZarrlakeError):
    """A repo, branch or tag of that name already exists."""

    kind = "already_exists"


# -- the session can no longer do this -------------------------------------------------------


class SessionError(ZarrlakeError):
    """The session cannot perform this operation; open a new session."""

    kind = "session"


class SessionExpiredError(SessionError):
    """The session passed its ``expires_at``; its staged writes can no longer be committed."""

    kind = "session_expired"


class SessionClosedError(SessionError):
    """The session was committed or abandoned and accepts no more writes."""

    kind = "session_closed"


class ReadOnlyError(SessionError, ValueError):
    """A write was attempted through a read-only session or store."""

    kind = "read_only"


# -- a rule of the repo refuses the change --------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckFailure:
    """One check that did not pass: its ``name``, a ``message``, and what it concerns
    (``arrays``; ``chunks``: array path -> chunk coordinates, the first ones found)."""

    name: str
    message: str
    arrays: tuple[str, ...] = ()
    chunks: dict[str, tuple[tuple[int, ...], ...]] | None = None

    def __str__(self) -> str:
        where = ""
        if self.chunks:
            parts = [f"{p} chunks {', '.join(map(str, c[:5]))}" for p, c in self.chunks.items()]
            where = f" ({'; '.join(parts)})"
        elif self.arrays:
            where = f" ({', '.join(self.arrays)})"
        return f"{self.name}: {self.message}{where}"


class CheckFailedError(ZarrlakeError):
    """Checks of the branch refused the commit or merge: nothing was changed.

    ``failures`` lists each failed check (:class:`CheckFailure`). Fix the data in the session
    (it stays open) or ask who owns the checks."""

    kind = "check_failed"

    def __init__(self, message: str, failures: list[CheckFailure] | None = None) -> None:
        self.failures: list[CheckFailure] = list(failures or [])
        if self.failures:
            message = message + "\n" + "\n".join(f"  - {f}" for f in self.failures)
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_plain, (type(self), self.args[0], self.__dict__))


class ProtectedBranchError(ZarrlakeError):
    """The branch is protected: direct commits, resets and deletes are refused. Open a pull
    request instead (``repo.open_pull_request(source, branch, ...)``). ``branch`` names it."""

    kind = "protected_branch"

    def __init__(self, message: str, *, branch: str = "") -> None:
        super().__init__(message)
        self.branch = branch

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_plain, (type(self), self.args[0], self.__dict__))


class PullRequestError(ZarrlakeError):
    """A pull request cannot do this now (closed or merged, not approved, its source branch
    moved or gone, its target moved: update it). The message says what to do."""

    kind = "pull_request"


def _rebuild_plain(cls: type[ZarrlakeError], message: str, attrs: dict[str, Any]) -> Any:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(attrs)
    return err


# -- concurrent work collided ----------------------------------------------------------------


class ConflictKind(StrEnum):
    """Why two changes collide. A string enum: ``ConflictKind.CHUNK == "chunk"``."""

    CHUNK = "chunk"
    METADATA = "metadata"
    ATTRIBUTES = "attributes"
    DELETE = "delete"
    CREATE = "create"
    RAW = "raw"
    READ = "read"
    HISTORY = "history"


@dataclass(frozen=True, slots=True)
class Conflict:
    """One reason a commit, rebase or merge cannot proceed automatically.

    Attributes
    ----------
    kind
        ``chunk`` (same chunk written on both sides), ``metadata`` (array structure changed on
        one side, data or metadata on the other), ``attributes`` (same attribute keys changed on
        both sides), ``delete`` (deleted on one side, changed on the other), ``create`` (same new
        node on both sides), ``raw`` (same non-Zarr key on both sides), ``read`` (a serializable
        session read something a later commit wrote), ``history`` (the branch was reset under the
        session).
    path
        Node path inside the hierarchy (``""`` is the root group).
    chunk
        Chunk coordinates for chunk and read conflicts, else ``None``.
    commit
        Id of the other commit involved.
    detail
        Human-readable explanation.
    """

    kind: ConflictKind
    path: str
    chunk: tuple[int, ...] | None
    commit: str | None
    detail: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ConflictKind(self.kind))

    def __str__(self) -> str:
        where = f"{self.path or '/'}" + (f" chunk {self.chunk}" if self.chunk is not None else "")
        other = f" (commit {self.commit})" if self.commit else ""
        return f"{self.kind} conflict at {where}{other}" + (
            f": {self.detail}" if self.detail else ""
        )

    def _repr_html_(self) -> str:
        from zarrlake.display import conflict_html

        return conflict_html(self)


class ConflictError(ZarrlakeError):
    """Changes collide with changes committed meanwhile.

    The session stays open and readable: rebase it with a solver (``session.rebase("ours")``),
    or abandon it.
    """

    kind = "conflict"

    def __init__(self, message: str, conflicts: list[Conflict] | None = None) -> None:
        self.conflicts: list[Conflict] = list(conflicts or [])
        if self.conflicts:
            shown = "\n".join(f"  - {c}" for c in self.conflicts[:20])
            more = len(self.conflicts) - 20
            message = f"{message}\n{shown}" + (f"\n  ... and {more} more" if more > 0 else "")
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_conflict_error, (type(self), self.args[0], self.conflicts))

    def _repr_html_(self) -> str:
        from zarrlake.display import conflict_error_html

        return conflict_error_html(self)


def _rebuild_conflict_error(
    cls: type[ConflictError], message: str, conflicts: list[Conflict]
) -> ConflictError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.conflicts = conflicts
    return err


class RefMovedError(ConflictError):
    """A branch was not where the caller expected it (compare-and-swap failed).

    Attributes: ``ref`` (the branch), ``expected`` (the commit the caller named), ``actual``
    (where the branch is now, ``None`` if it no longer exists).
    """

    kind = "ref_moved"

    def __init__(
        self, message: str, *, ref: str = "", expected: str = "", actual: str | None = None
    ) -> None:
        super().__init__(message)
        self.ref, self.expected, self.actual = ref, expected, actual

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_with, (type(self), self.args[0], self.__dict__))


class CommitTimeoutError(ConflictError):
    """A commit kept losing the race for the branch until its timeout passed.

    Attributes: ``branch``, ``attempts`` (how many times it lost), ``timeout`` (seconds).
    """

    kind = "commit_timeout"

    def __init__(
        self, message: str, *, branch: str = "", attempts: int = 0, timeout: float = 0.0
    ) -> None:
        super().__init__(message)
        self.branch, self.attempts, self.timeout = branch, attempts, timeout

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_with, (type(self), self.args[0], self.__dict__))


def _rebuild_with(cls: type[ConflictError], message: str, attrs: dict[str, Any]) -> ConflictError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(attrs)
    return err


# -- infrastructure --------------------------------------------------------------------------


class StorageError(ZarrlakeError):
    """The object store failed or holds bad data."""

    kind = "storage"


class ChunkCorruptionError(StorageError):
    """A chunk's bytes do not match their content hash. Run ``repo.fsck(verify=True)``."""

    kind = "chunk_corruption"


class ObjectMissingError(StorageError, FileNotFoundError):
    """A chunk object referenced by a commit or session is missing from the object store."""

    kind = "object_missing"


class SourceUnavailableError(StorageError):
    """The source of a virtual chunk is missing or cannot be read. ``url`` names it."""

    kind = "source_unavailable"

    def __init__(self, message: str, *, url: str = "") -> None:
        super().__init__(message)
        self.url = url

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_with, (type(self), self.args[0], self.__dict__))


class SourceChangedError(StorageError):
    """The source of a virtual chunk is not the version it was when the reference was
    committed (another size, ETag or modification time): its bytes are refused rather than
    returned. ``url`` names the source, ``commit`` the commit being read (when known)."""

    kind = "source_changed"

    def __init__(self, message: str, *, url: str = "", commit: str | None = None) -> None:
        super().__init__(message)
        self.url, self.commit = url, commit

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_with, (type(self), self.args[0], self.__dict__))


class CatalogError(ZarrlakeError):
    """The catalog database failed or is not usable."""

    kind = "catalog"


class PermissionDeniedError(CatalogError):
    """The catalog refused a write for lack of rights (a read-only database role or file):
    nothing was changed. Browsing and reading still work."""

    kind = "permission_denied"


class SchemaVersionError(CatalogError):
    """The catalog was written by a newer zarrlake than this one."""

    kind = "schema_version"
