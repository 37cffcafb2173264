"""Content-addressed chunk objects (local directory, memory, S3 through s3fs)."""

from zarrlake.objects.store import (
    FsspecObjectStore,
    LocalObjectStore,
    ObjectInfo,
    ObjectStore,
    open_object_store,
)

__all__ = [
    "FsspecObjectStore",
    "LocalObjectStore",
    "ObjectInfo",
    "ObjectStore",
    "open_object_store",
]
