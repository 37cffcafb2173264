"""Listing a Zarr store's files as a stream, so that importing a store of any size holds one
page of the listing at a time, never the whole of it: a local directory walked with
``os.scandir``, an S3 prefix read page by page (``ListObjectsV2``)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from zarrlake.errors import InvalidInputError

__all__ = ["StoreFile", "StoreLister"]


@dataclass(frozen=True, slots=True)
class StoreFile:
    """One file of a store: its key relative to the store's root, its size, and what
    identifies its version (a local file's ``st_mtime_ns``; an S3 object's ETag), as a
    virtual source records them."""

    key: str
    size: int
    modified: str | None = None
    etag: str | None = None


class StoreLister:
    """The files of the store at ``url`` (``file:///abs/dir`` or ``s3://bucket/prefix``),
    listed again on every call of :meth:`files` (an import lists twice: metadata first,
    then chunks), and read one by one with :meth:`read`."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        import fsspec

        self.url = url.rstrip("/")
        self.fs, root = fsspec.core.url_to_fs(self.url, **(storage_options or {}))
        self.root = str(root).rstrip("/")
        self.local = self.url.startswith("file://")

    def files(self) -> Iterator[StoreFile]:
        """Every file under the store's root, in no particular order."""
        return self._local() if self.local else self._s3()

    def _local(self) -> Iterator[StoreFile]:
        if not os.path.isdir(self.root):
            raise InvalidInputError(f"there is no Zarr store at {self.url!r} (not a directory)")
        cut = len(self.root) + 1
        pending = [self.root]
        while pending:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        yield StoreFile(entry.path[cut:], st.st_size, str(st.st_mtime_ns))

    def _s3(self) -> Iterator[StoreFile]:
        from fsspec.asyn import sync

        bucket, _, prefix = self.root.partition("/")
        prefix = f"{prefix}/" if prefix else ""
        pages = self._s3_pages(bucket, prefix)
        while True:
            try:
                page = sync(self.fs.loop, pages.__anext__)
            except StopAsyncIteration:
                return
            for obj in page:
                key = str(obj["Key"])[len(prefix) :]
                yield StoreFile(key, int(obj["Size"]), etag=obj.get("ETag"))

    async def _s3_pages(self, bucket: str, prefix: str) -> AsyncIterator[list[dict[str, Any]]]:
        client = await self.fs.set_session()
        paginator = client.get_paginator("list_objects_v2")
        async for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            yield list(page.get("Contents", []))

    def read(self, key: str) -> bytes:
        """The bytes of one file of the store."""
        data: bytes = self.fs.cat_file(f"{self.root}/{key}")
        return data
