"""Export: a plain Zarr v3 copy of one commit."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from zarrlake.core import RepoCore
from zarrlake.errors import AlreadyExistsError, InvalidInputError, StorageError, ZarrlakeError
from zarrlake.maintenance.progress import progress_bar
from zarrlake.maintenance.reports import ExportReport
from zarrlake.model import StagedState
from zarrlake.model.view import view_entries

if TYPE_CHECKING:
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]
    from zarr.abc.store import Store

__all__ = ["export"]


# -- export ------------------------------------------------------------------------------------


def _target_store(target: Any, storage_options: dict[str, Any] | None) -> tuple[Store, str]:
    from zarr.abc.store import Store
    from zarr.storage import FsspecStore, LocalStore

    if isinstance(target, Store):
        if target.read_only:
            raise InvalidInputError("export target store is read-only")
        return target, str(target)
    if isinstance(target, (os.PathLike, str)):
        text = os.fspath(target)
        if "://" in text and not text.startswith("file://"):
            return FsspecStore.from_url(text, storage_options=storage_options), text
        path = text[len("file://") :] if text.startswith("file://") else text
        full = os.path.abspath(os.path.expanduser(path))
        _refuse_file(full)
        return LocalStore(full), path
    raise InvalidInputError(
        f"export target must be a zarr store, a path or a URL, got {type(target).__name__}"
    )


def _refuse_file(path: str) -> None:
    """Refuse a local target that is a file or lies under one (before anything is created)."""
    probe = path
    while not os.path.isdir(probe):
        if os.path.lexists(probe):
            what = "is a file" if probe == path else f"lies under {probe}, which is a file"
            raise InvalidInputError(
                f"export target {path} {what}; export to a directory (a new or empty one, or "
                "any with overwrite=True)"
            )
        parent = os.path.dirname(probe)
        if parent == probe:
            return
        probe = parent


def _refuse_own_files(core: RepoCore, store: Store) -> None:
    """Refuse a local target that holds the repo's own catalog or objects (or lies inside
    them): clearing or writing it would destroy the repo being exported."""
    from zarr.storage import LocalStore

    if not isinstance(store, LocalStore):
        return
    target = os.path.realpath(store.root)
    for own in core.own_paths():
        own = os.path.realpath(own)
        if own == target or own.startswith(target + os.sep) or target.startswith(own + os.sep):
            raise InvalidInputError(
                f"export target {target} holds this repo's own files ({own}); export to a "
                "directory outside the repo"
            )


def _depth(key: str) -> int:
    return key.count("/")


async def _write_copy(
    store: Store,
    chunks: list[tuple[str, Any]],
    metas: list[tuple[str, bytes]],
    core: RepoCore,
    overwrite: bool,
    bar: tqdm[Any],
) -> int:
    from zarr.core.buffer import default_buffer_prototype

    empty = await store.is_empty("")
    if overwrite and not empty:
        await store.clear()
    elif not empty:
        raise AlreadyExistsError(
            f"export target {store} is not empty; choose another target or pass overwrite=True"
        )
    proto = default_buffer_prototype()
    limit = asyncio.Semaphore(32)
    written = 0

    async def one(key: str, ref: Any) -> None:
        nonlocal written
        async with limit:
            data = (
                ref.inline
                if ref.inline is not None
                else await asyncio.to_thread(core.read_chunk, ref)
            )
            await store.set(key, proto.buffer.from_bytes(data))
            written += len(data)
            bar.update(1)

    for i in range(0, len(chunks), 1024):
        await asyncio.gather(*(one(k, r) for k, r in chunks[i : i + 1024]))
    # Metadata last, the root group last of all: a reader that finds the hierarchy finds it
    # whole.
    for key, doc in sorted(metas, key=lambda kv: -_depth(kv[0])):
        await store.set(key, proto.buffer.from_bytes(doc))
        written += len(doc)
    return written


def export(
    core: RepoCore,
    commit: str,
    target: Any,
    *,
    storage_options: dict[str, Any] | None,
    overwrite: bool,
    progress: bool | None,
) -> ExportReport:
    """Write a plain Zarr v3 copy of one commit to a zarr store, path or URL."""
    from zarr.core.sync import sync

    reader = core.reader
    root = reader.root(core.catalog.commits.get(commit).root_hash)
    store, label = _target_store(target, storage_options)
    _refuse_own_files(core, store)
    # the keys a read-only session of the commit shows, each once
    metas: list[tuple[str, bytes]] = []
    chunks: list[tuple[str, Any]] = []
    for entry in view_entries(root, StagedState(), reader):
        if entry.meta is not None:
            metas.append((entry.key, reader.meta_bytes(entry.meta)))
        else:
            chunks.append((entry.key, entry.ref))
    try:
        with progress_bar(progress, len(chunks), f"export {commit[:10]}") as bar:
            size = sync(_write_copy(store, chunks, metas, core, overwrite, bar))
    except ZarrlakeError:
        raise
    except OSError as exc:
        raise StorageError(
            f"cannot write the export to {label}: {exc}; choose a target you can write to"
        ) from exc
    return ExportReport(commit, label, len(metas), len(chunks), size)
