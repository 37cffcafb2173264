"""zarrlake: a transactional, version-controlled store for Zarr v3 data.

>>> import zarr, zarrlake
>>> repo = zarrlake.Repo.create("my-lake")                # doctest: +SKIP
>>> s = repo.writable_session("main")                      # doctest: +SKIP
>>> zarr.open_group(s.store, mode="w").create_array("t", shape=(4,), dtype="f4")  # doctest: +SKIP
>>> s.commit("create t")                                   # doctest: +SKIP
"""

from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    ChunkCorruptionError,
    CommitTimeoutError,
    Conflict,
    ConflictError,
    EmptyCommitError,
    InvalidInputError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidNameError,
    InvalidRefError,
    NotFoundError,
    ObjectMissingError,
    ReadOnlyError,
    RefMovedError,
    SchemaVersionError,
    SessionClosedError,
    SessionError,
    SessionExpiredError,
    StorageError,
    ZarrlakeError,
)
from zarrlake.repo import Repo, RepoConfig
from zarrlake.session import Session
from zarrlake.store import LakeStore
from zarrlake.types import CommitInfo, RefLogEntry, SessionInfo

__version__ = "0.1.0"

__all__ = [
    "AlreadyExistsError",
    "CatalogError",
    "ChunkCorruptionError",
    "CommitInfo",
    "CommitTimeoutError",
    "Conflict",
    "ConflictError",
    "EmptyCommitError",
    "InvalidInputError",
    "InvalidKeyError",
    "InvalidMetadataError",
    "InvalidNameError",
    "InvalidRefError",
    "LakeStore",
    "NotFoundError",
    "ObjectMissingError",
    "ReadOnlyError",
    "RefLogEntry",
    "RefMovedError",
    "Repo",
    "RepoConfig",
    "SchemaVersionError",
    "Session",
    "SessionClosedError",
    "SessionError",
    "SessionExpiredError",
    "SessionInfo",
    "StorageError",
    "ZarrlakeError",
    "__version__",
]
