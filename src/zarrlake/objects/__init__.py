"""Content-addressed chunk objects (local directory, memory, S3 through s3fs)."""

from zarrlake.objects.base import ObjectInfo, ObjectStore
from zarrlake.objects.local import LocalObjectStore
from zarrlake.objects.packs import PACK_CHUNK_LIMIT
from zarrlake.objects.remote import FsspecObjectStore
from zarrlake.objects.store import open_object_store

__all__ = [
    "PACK_CHUNK_LIMIT",
    "FsspecObjectStore",
    "LocalObjectStore",
    "ObjectInfo",
    "ObjectStore",
    "open_object_store",
]
