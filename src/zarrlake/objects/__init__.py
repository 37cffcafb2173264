"""Content-addressed chunk objects (local directory, memory, S3 through s3fs)."""

from zarrlake.objects.base import ObjectInfo, ObjectStore
from zarrlake.objects.local import LocalObjectStore
from zarrlake.objects.remote import FsspecObjectStore
from zarrlake.objects.store import open_object_store

__all__ = [
    "FsspecObjectStore",
    "LocalObjectStore",
    "ObjectInfo",
    "ObjectStore",
    "open_object_store",
]
