"""Listing a Zarr store's files as a stream, so that importing a store of any size holds one
page of the listing at a time, never the whole of it: a local directory walked with
``os.scandir``, an S3 prefix read page by page (``ListObjectsV2``)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from zarrlake.errors import InvalidInputError
from zarrlake.virtual.zarr_v2 import V2_DOCS

__all__ = ["DOCS", "StoreFile", "StoreLister"]

DOCS = frozenset(("zarr.json", *V2_DOCS))
"""The names of a Zarr store's metadata documents (v3, and v2)."""


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
        if not self.local:
            return self._s3()
        return (
            StoreFile(key, st.st_size, str(st.st_mtime_ns))
            for key, entry in self._local()
            for st in (entry.stat(follow_symlinks=False),)
        )

    def file_keys(self, leaf: Callable[[str, set[str]], bool] | None = None) -> Iterator[str]:
        """The key of every file under the store's root, in no particular order: the
        listing of :meth:`files` without looking up each file's size and version. ``leaf``
        (folder key, the metadata documents in it) -> whether nothing below that folder is
        needed: a local store's walk then leaves its subfolders out (an array's chunks, when
        only the metadata documents are wanted); an S3 listing has no folders to leave out."""
        if not self.local:
            return (f.key for f in self._s3())
        return (key for key, _ in self._local(leaf))

    def _local(
        self, leaf: Callable[[str, set[str]], bool] | None = None
    ) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Depth first, holding one iterator over subfolders per level, never a whole
        folder's listing (a store's ``c/`` can hold a subfolder per chunk)."""
        if not os.path.isdir(self.root):
            raise InvalidInputError(f"there is no Zarr store at {self.url!r} (not a directory)")
        cut = len(self.root) + 1
        stack: list[Iterator[str]] = [iter([self.root])]
        while stack:
            folder = next(stack[-1], None)
            if folder is None:
                stack.pop()
                continue
            docs: set[str] = set()
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_file(follow_symlinks=False):
                        if entry.name in DOCS:
                            docs.add(entry.name)
                        yield entry.path[cut:], entry
            if leaf is None or not leaf(folder[cut:], docs):
                stack.append(_subfolders(folder))

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


def _subfolders(folder: str) -> Iterator[str]:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                yield entry.path
