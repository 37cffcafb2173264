"""Importing an existing Zarr store (v3, or v2 with its metadata converted to v3; local or
on S3) in one commit: its chunks as virtual references to the existing chunk objects
(``copy=False``) or copied into the lake (``copy=True``). Nothing of the lake changes until
that commit lands: a failure (or a crash) leaves the lake exactly as it was.

The store is listed twice as a stream (:mod:`zarrlake.virtual.listing`): first for its
metadata documents (a local store's walk leaves out what lies below each array's folder),
then for its chunks, which are put in the order of the manifest shards they fall in
(:mod:`zarrlake.virtual.ordering`) and staged in batches, each shard position once. Listing
and staging hold one batch at a time; the one commit at the end loads the staged shards."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from zarrlake.errors import InvalidInputError, InvalidMetadataError, VirtualSourceError
from zarrlake.maintenance.progress import progress_bar
from zarrlake.model.metadata import NodeMeta, parse_chunk_key, parse_node_meta
from zarrlake.model.virtual import VirtualSource, normalize_url
from zarrlake.virtual.listing import DOCS, StoreFile, StoreLister
from zarrlake.virtual.ordering import PositionOrder
from zarrlake.virtual.zarr_v2 import convert_v2_array, convert_v2_group

if TYPE_CHECKING:
    from zarrlake.repo import Repo
    from zarrlake.session import WritableSession

__all__ = ["BATCH", "check_codecs", "import_zarr", "store_url"]

BATCH = 20_000
"""Chunks staged at a time (references, or copies read concurrently)."""

_SUPPORTED_CODECS = frozenset(
    {"bytes", "blosc", "gzip", "zstd", "crc32c", "transpose", "sharding_indexed", "vlen-utf8",
     "vlen-bytes"}
)  # fmt: skip


def check_codecs(path: str, doc: dict[str, Any]) -> None:
    """Refuse an array whose codecs zarr cannot decode here (the lake could not read it)."""
    pending = list(doc.get("codecs", []))
    while pending:
        codec = pending.pop()
        name = codec.get("name") if isinstance(codec, dict) else codec
        if name not in _SUPPORTED_CODECS:
            raise InvalidMetadataError(
                f"array {path or '/'!r} of the store uses codec {name!r}, which this zarrlake "
                f"cannot read (it reads {', '.join(sorted(_SUPPORTED_CODECS))}); nothing was "
                "imported"
            )
        if isinstance(codec, dict):
            config = codec.get("configuration", {}) or {}
            pending += list(config.get("codecs", [])) + list(config.get("index_codecs", []))


def _split(key: str) -> tuple[str, str]:
    """(directory, file name) of a store key."""
    cut = key.rfind("/")
    return (key[:cut], key[cut + 1 :]) if cut >= 0 else ("", key)


def _json(lister: StoreLister, key: str) -> dict[str, Any]:
    try:
        doc = json.loads(lister.read(key))
    except ValueError as exc:
        raise InvalidMetadataError(f"{key} of the store is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidMetadataError(f"{key} of the store must hold a JSON object")
    return doc


def _holds_array(lister: StoreLister, folder: str, docs: set[str]) -> bool:
    """Whether ``folder`` of the store is an array's (holding its metadata document):
    what lies below it are its chunks, never other nodes."""
    if ".zarray" in docs:
        return True
    if "zarr.json" not in docs:
        return False
    try:
        doc = json.loads(lister.read(f"{folder}/zarr.json" if folder else "zarr.json"))
    except ValueError:
        return False  # reported when the documents are read
    return isinstance(doc, dict) and doc.get("node_type") == "array"


def _metadata(lister: StoreLister, source: str) -> tuple[dict[str, bytes], int]:
    """The store's nodes as Zarr v3 documents (path -> ``zarr.json``) and the store's Zarr
    format. The walk of a local store leaves out what lies below each array's folder."""
    docs: dict[str, set[str]] = {}
    others = 0
    for key in lister.file_keys(lambda folder, names: _holds_array(lister, folder, names)):
        folder, name = _split(key)
        if name in DOCS:
            docs.setdefault(folder, set()).add(name)
        else:
            others += 1
    if not docs and not others:
        raise InvalidInputError(f"there is no Zarr store at {source!r} (no files found)")
    root = docs.get("", set())
    if "zarr.json" in root:
        out = {
            p: lister.read(f"{p}/zarr.json" if p else "zarr.json")
            for p, names in sorted(docs.items())
            if "zarr.json" in names
        }
        return out, 3
    if not root & {".zarray", ".zgroup"}:
        raise InvalidInputError(
            f"{source!r} has no zarr.json, .zgroup or .zarray at its root: not a Zarr store"
        )
    out = {}
    for p, names in sorted(docs.items()):
        prefix = f"{p}/" if p else ""
        attrs = _json(lister, prefix + ".zattrs") if ".zattrs" in names else {}
        if ".zarray" in names:
            out[p] = convert_v2_array(p, _json(lister, prefix + ".zarray"), attrs)
        elif ".zgroup" in names:
            out[p] = convert_v2_group(attrs)
    for p in list(out):  # v2 stores may leave out the .zgroup of an intermediate group
        while p:
            p = _split(p)[0]
            out.setdefault(p, convert_v2_group({}))
    return dict(sorted(out.items())), 2


def _chunks(
    lister: StoreLister, metas: dict[str, NodeMeta]
) -> Iterator[tuple[str, tuple[int, ...], StoreFile]]:
    """(array path, chunk coordinates, file) of every chunk file of the store."""
    for f in lister.files():
        if _split(f.key)[1] in DOCS:
            continue
        parent = f.key
        while parent:
            parent = _split(parent)[0]
            owner = metas.get(parent)
            if owner is not None:
                if owner.is_array:
                    rel = f.key[len(parent) + 1 :] if parent else f.key
                    coords = parse_chunk_key(rel, owner.encoding, owner.ndim)
                    if coords is not None:
                        yield parent, coords, f
                break


Batch = dict[str, list[tuple[tuple[int, ...], StoreFile]]]


def _stage(
    session: WritableSession,
    lister: StoreLister,
    url: str,
    batch: Batch,
    pool: ThreadPoolExecutor | None,
) -> None:
    for path, items in batch.items():
        if pool is not None:
            list(pool.map(lambda item: session.write_sync(item[1].key, lister.read(item[1].key)),
                          items))  # fmt: skip
            continue
        refs, seen = [], {}
        for c, f in items:
            ref_url = f"{url}/{f.key}"
            refs.append((c, ref_url, 0, f.size))
            # the listing's version, as a lookup of the source would record it
            seen[ref_url] = VirtualSource(ref_url, f.size, f.etag, f.modified)
        session.put_virtual_refs(path, refs, seen=seen)
    batch.clear()


def store_url(source: str) -> str:
    """The normalized URL of a store given as a path (relative ones too) or a URL."""
    if "://" not in source:
        source = os.path.abspath(source)
    return normalize_url(source.rstrip("/") or "/").rstrip("/")


def import_zarr(
    repo: Repo,
    source: str,
    *,
    branch: str = "main",
    message: str | None = None,
    copy: bool = False,
    storage_options: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> str:
    """Import the Zarr store at ``source`` (a local directory or ``s3://`` URL; Zarr v3, or
    v2 with its metadata converted to v3) into ``branch`` in one commit; return its id.

    With ``copy=False`` (the default) every chunk is a virtual reference to the store's own
    chunk object, so ``source`` must be under a prefix the repo allows
    (``repo.allow_virtual_source``); with ``copy=True`` the chunks are copied into the lake.
    A store with an array this zarrlake cannot read (a codec it does not know, a v2 object
    dtype), a location that is not allowed, or anything else refused leaves the lake
    unchanged. ``progress`` shows a bar on stderr (by default when it is a terminal).
    """
    url = store_url(source)
    lister = StoreLister(url, storage_options)
    docs, zarr_format = _metadata(lister, source)
    metas: dict[str, NodeMeta] = {}
    for path, raw in docs.items():
        metas[path] = parse_node_meta(raw)
        if metas[path].is_array:
            check_codecs(path, json.loads(raw))
    if not copy:
        prefixes = repo.virtual_sources()
        if not any(url + "/" == p or url.startswith(p) for p in prefixes):
            raise VirtualSourceError(
                f"importing {source!r} by reference needs its location allowed: call "
                f"repo.allow_virtual_source({url + '/'!r}) first (or import with "
                "copy=True). Nothing was imported",
                url=url,
            )
    session = repo.writable_session(branch)
    try:
        for path, raw in docs.items():
            session.write_sync(f"{path}/zarr.json" if path else "zarr.json", raw)
        shapes = {p: session.virtual_shard_shape(p) or () for p, m in metas.items() if m.is_array}
        batch: Batch = {}
        pending = staged = 0
        with PositionOrder(shapes) as order:
            with progress_bar(progress, None, f"listing {source}") as bar:
                for path, coords, f in _chunks(lister, metas):
                    order.add(path, coords, f)
                    bar.update()
            with (
                progress_bar(progress, len(order), f"importing {source}") as bar,
                ThreadPoolExecutor(8) as pool,
            ):
                for path, coords, f in order.sorted():
                    batch.setdefault(path, []).append((coords, f))
                    pending += 1
                    if pending >= BATCH:
                        _stage(session, lister, url, batch, pool if copy else None)
                        bar.update(pending)
                        staged, pending = staged + pending, 0
                _stage(session, lister, url, batch, pool if copy else None)
                bar.update(pending)
        meta = {
            "imported_from": url,
            "copied": copy,
            "zarr_format": zarr_format,
            "chunks": staged + pending,
        }
        return session.commit(message or f"Import {source}", metadata=meta)
    except BaseException:
        session.abandon()
        raise
