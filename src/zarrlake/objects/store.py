"""Open the object store a URL names: a local directory, or any fsspec filesystem."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from zarrlake.model.hashing import ChunkHasher
from zarrlake.objects.base import ObjectStore
from zarrlake.objects.local import LocalObjectStore
from zarrlake.objects.remote import FsspecObjectStore

__all__ = ["open_object_store"]


def open_object_store(
    url: str,
    storage_options: dict[str, Any] | None = None,
    *,
    verify: bool = True,
    hasher: ChunkHasher,
) -> ObjectStore:
    """An object store for a URL or local path, its objects named by ``hasher`` (the repo's
    content hash)."""
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else url
        return LocalObjectStore(path, verify=verify, hasher=hasher)
    return FsspecObjectStore(url, storage_options, verify=verify, hasher=hasher)
