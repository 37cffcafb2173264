"""zarrlake: a transactional, version-controlled store for Zarr v3 data.

>>> import zarr, zarrlake
>>> repo = zarrlake.Repo.create("my-lake")                # doctest: +SKIP
>>> s = repo.writable_session("main")                      # doctest: +SKIP
>>> zarr.open_group(s.store, mode="w").create_array("t", shape=(4,), dtype="f4")  # doctest: +SKIP
>>> s.commit("create t")                                   # doctest: +SKIP

``ds.lake`` is available whenever xarray is importable, in either import order;
``import zarrlake`` alone does not import xarray (the accessor is registered when xarray is).
"""

from typing import TYPE_CHECKING

from zarrlake import _xarray_hook
from zarrlake._loading import lazy_names as _lazy_names
from zarrlake._optional import MissingExtraError
from zarrlake.errors import (
    AlreadyExistsError,
    CatalogError,
    CheckFailedError,
    CheckFailure,
    ChunkCorruptionError,
    CommitTimeoutError,
    Conflict,
    ConflictError,
    ConflictKind,
    EmptyCommitError,
    InvalidInputError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidNameError,
    InvalidRefError,
    NotFoundError,
    ObjectMissingError,
    PermissionDeniedError,
    ProtectedBranchError,
    PullRequestError,
    ReadOnlyError,
    RefMovedError,
    SchemaVersionError,
    SessionClosedError,
    SessionError,
    SessionExpiredError,
    SourceChangedError,
    SourceUnavailableError,
    StorageError,
    UnalignedWriteError,
    VirtualSourceError,
    ZarrlakeError,
)
from zarrlake.types import CommitInfo, RefLogEntry, RepoConfig, SessionInfo
from zarrlake.urls import VersionURL, parse_url, version_url

if TYPE_CHECKING:
    from zarrlake.catalog import CatalogUpgrade as CatalogUpgrade
    from zarrlake.maintenance import ExpireReport as ExpireReport
    from zarrlake.maintenance import ExportReport as ExportReport
    from zarrlake.maintenance import FsckIssue as FsckIssue
    from zarrlake.maintenance import FsckReport as FsckReport
    from zarrlake.maintenance import GCReport as GCReport
    from zarrlake.model.diff import Diff as Diff
    from zarrlake.model.diff import DiffSummary as DiffSummary
    from zarrlake.model.diff import FieldChange as FieldChange
    from zarrlake.model.diff import NodeDiff as NodeDiff
    from zarrlake.model.graph import CommitGraph as CommitGraph
    from zarrlake.model.graph import GraphRow as GraphRow
    from zarrlake.model.preview import MergePreview as MergePreview
    from zarrlake.repo import Repo as Repo
    from zarrlake.repo import upgrade_catalog as upgrade_catalog
    from zarrlake.session import ReadonlySession as ReadonlySession
    from zarrlake.session import Session as Session
    from zarrlake.session import WritableSession as WritableSession
    from zarrlake.store import LakeStore as LakeStore
    from zarrlake.virtual import import_icechunk as import_icechunk
    from zarrlake.virtual import import_zarr as import_zarr
    from zarrlake.xarray import open_dataset as open_dataset

__version__ = "0.1.0"

__all__ = [
    "AlreadyExistsError",
    "CatalogError",
    "CatalogUpgrade",
    "CheckFailedError",
    "CheckFailure",
    "ChunkCorruptionError",
    "CommitGraph",
    "CommitInfo",
    "CommitTimeoutError",
    "Conflict",
    "ConflictError",
    "ConflictKind",
    "Diff",
    "DiffSummary",
    "EmptyCommitError",
    "ExpireReport",
    "ExportReport",
    "FieldChange",
    "FsckIssue",
    "FsckReport",
    "GCReport",
    "GraphRow",
    "InvalidInputError",
    "InvalidKeyError",
    "InvalidMetadataError",
    "InvalidNameError",
    "InvalidRefError",
    "LakeStore",
    "MergePreview",
    "MissingExtraError",
    "NodeDiff",
    "NotFoundError",
    "ObjectMissingError",
    "PermissionDeniedError",
    "ProtectedBranchError",
    "PullRequestError",
    "ReadOnlyError",
    "ReadonlySession",
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
    "SourceChangedError",
    "SourceUnavailableError",
    "StorageError",
    "UnalignedWriteError",
    "VersionURL",
    "VirtualSourceError",
    "WritableSession",
    "ZarrlakeError",
    "__version__",
    "import_icechunk",
    "import_zarr",
    "parse_url",
    "upgrade_catalog",
    "version_url",
]

_xarray_hook.install()

# Loaded on first use, so that ``import zarrlake`` stays fast (the catalog's SQLAlchemy is
# loaded by the first ``zarrlake.Repo``, zarr by the first session store or ``LakeStore``;
# ``zarrlake --help`` loads neither) and works without xarray.
_LAZY = {
    "zarrlake.repo": ("Repo", "upgrade_catalog"),
    "zarrlake.store": ("LakeStore",),
    "zarrlake.catalog": ("CatalogUpgrade",),
    "zarrlake.maintenance": ("ExpireReport", "ExportReport", "FsckIssue", "FsckReport", "GCReport"),
    "zarrlake.session": ("ReadonlySession", "Session", "WritableSession"),
    "zarrlake.xarray": ("open_dataset",),
    "zarrlake.virtual": ("import_zarr", "import_icechunk"),
    "zarrlake.model.diff": ("Diff", "DiffSummary", "FieldChange", "NodeDiff"),
    "zarrlake.model.graph": ("CommitGraph", "GraphRow"),
    "zarrlake.model.preview": ("MergePreview",),
}


__getattr__, __dir__ = _lazy_names(__name__, _LAZY)
